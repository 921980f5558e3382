"""Classes made of frequency cells (Mondrian's parts, SABRE's classes; anonymize/frequency.py):
each class's released values — per attribute, its cells' common value at the lowest level of the hierarchy where they all share
one, compared by the cells' integer codes."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.hierarchy.base import Hierarchy
from sqlanon.sql.templates import col, lit, table


def class_labels(hs: list[Hierarchy], be: Backend) -> tuple[list[exp.Expression], list[exp.Expression],
                                                          list[exp.Expression]]:
    """Three lists: aggregates over one class's cells joined as ``o`` (codes), s_<i>_<lv> = 1
    when they share a value at that level; and over those (``x``) and one of the cells (``f``),
    label_<i> (the text, the cell's own at the lowest shared level) and level_<i>. The wide
    labels are read once per class, not once per cell; one placeholder each without QI."""
    shared = [exp.alias_(exp.Case(ifs=[exp.If(this=exp.EQ(this=exp.Min(this=col(f"c_{i}_{lv}", "o")),
                                                          expression=exp.Max(this=col(f"c_{i}_{lv}", "o"))),
                                              true=lit(1))], default=lit(0)), f"s_{i}_{lv}")
              for i, h in enumerate(hs) for lv in range(h.height)]

    def same(i: int, lv: int) -> exp.Expression:
        return exp.EQ(this=col(f"s_{i}_{lv}", "x"), expression=lit(1))

    labels, levels = [], []
    for i, h in enumerate(hs):
        labels.append(exp.alias_(exp.Case(
            ifs=[exp.If(this=same(i, lv), true=col(f"g_{i}_{lv}", "f")) for lv in range(h.height)],
            default=be.binary_text(exp.Literal.string(h.top_label))), f"label_{i}"))
        levels.append(exp.alias_(exp.Case(
            ifs=[exp.If(this=same(i, lv), true=lit(lv)) for lv in range(h.height)], default=lit(h.height)),
            f"level_{i}"))
    return (shared or [exp.alias_(lit(0), "s_none")], labels or [exp.alias_(lit(0), "label_none")],
            levels or [exp.alias_(lit(0), "level_none")])


def level_counts(classes: str, m: int) -> exp.Select:
    """The rows level_histogram reads: the classes' rows (n) per combination of their levels
    (level_<i>), a few dozen, instead of a row per class (Adult, Mondrian: 2,317 rows fetched
    and summed in Python, a tenth of a query's Python)."""
    levels = [col(f"level_{i}") for i in range(m)]
    return exp.select(*levels, exp.alias_(exp.Sum(this=col("n")), "n")).from_(table(classes)) \
        .group_by(*[c.copy() for c in levels])


def level_histogram(rows: list[tuple], qis: list[str]) -> dict[str, dict[int, int]]:
    """Rows released per level of each quasi-identifier, from rows (level_0, …, n)."""
    out: dict[str, dict[int, int]] = {q: {} for q in qis}
    for row in rows:
        for i, q in enumerate(qis):
            out[q][int(row[i])] = out[q].get(int(row[i]), 0) + int(row[-1])
    return out
