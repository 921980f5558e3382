"""Classes made of frequency cells (Mondrian's parts, SABRE's classes; anonymize/frequency.py):
one order of the cells along each quasi-identifier, and each class's released values — per
attribute, its cells' common value at the lowest level of the hierarchy where they all share
one, compared by the cells' integer codes."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.hierarchy.base import Hierarchy
from sqlanon.sql.templates import col, lit


def order(hs: list[Hierarchy], i: int) -> list[exp.Expression]:
    """The sort key of the cells (``o`` codes, ``f`` cells) along attribute ``i``: a taxonomy
    along its ancestor path, so that siblings stay together; else the stored value."""
    h = hs[i]
    if isinstance(h, TaxonomyHierarchy):
        return [col(f"c_{i}_{lv}", "o") for lv in range(h.height - 1, 0, -1)] + [col(f"raw_{i}", "f")]
    return [col(f"raw_{i}", "f")]


def class_labels(hs: list[Hierarchy], be: Backend) -> tuple[list[exp.Expression], list[exp.Expression]]:
    """Aggregates label_<i> (the text) and level_<i> (its level) over one class's cells, joined
    as ``o`` (codes) and ``f`` (cells); one placeholder column each when there is no QI."""

    def same(i: int, lv: int) -> exp.Expression:
        c = col(f"c_{i}_{lv}", "o")
        return exp.EQ(this=exp.Min(this=c.copy()), expression=exp.Max(this=c))

    labels, levels = [], []
    for i, h in enumerate(hs):
        labels.append(exp.alias_(exp.Case(
            ifs=[exp.If(this=same(i, lv), true=exp.Min(this=col(f"g_{i}_{lv}", "f"))) for lv in range(h.height)],
            default=be.binary_text(exp.Literal.string(h.top_label))), f"label_{i}"))
        levels.append(exp.alias_(exp.Case(
            ifs=[exp.If(this=same(i, lv), true=lit(lv)) for lv in range(h.height)], default=lit(h.height)),
            f"level_{i}"))
    return labels or [exp.alias_(lit(0), "label_none")], levels or [exp.alias_(lit(0), "level_none")]


def level_histogram(rows: list[tuple], qis: list[str]) -> dict[str, dict[int, int]]:
    """Rows released per level of each quasi-identifier, from rows (level_0, …, n)."""
    out: dict[str, dict[int, int]] = {q: {} for q in qis}
    for row in rows:
        for i, q in enumerate(qis):
            out[q][int(row[i])] = out[q].get(int(row[i]), 0) + int(row[-1])
    return out
