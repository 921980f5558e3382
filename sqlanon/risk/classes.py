"""The class-size frequency table, built in the database or from released rows.

In the database: GROUP BY the quasi-identifiers, then GROUP BY class size (``risk/class_sizes``):
only (size, number of classes) pairs come back. Against a population table (``risk/journalist``):
each class beside its size in the population, only (size, population size, classes) triples. From
rows that have already been released (a query's anonymized answer): the same count in Python.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from sqlglot import exp

from sqlanon.backends.connect import Database
from sqlanon.errors import PolicyError
from sqlanon.sql.reading import Reading
from sqlanon.sql.templates import col, render, table

#: the value of a suppressed quasi-identifier in a release
SUPPRESSED = "*"


def _table(db: Database, name: str, qis: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The table as the database spells it and its columns, every quasi-identifier among them."""
    spelled = db.spelling.get(name.lower())
    if spelled is None:
        raise PolicyError(f"no table {name!r} in the database")
    columns = db.columns(spelled)
    missing = [q for q in qis if q not in columns]
    if missing:
        raise PolicyError(f"table {spelled} has no column {', '.join(missing)}")
    if not qis:
        raise PolicyError("no quasi-identifiers to form classes over")
    return spelled, columns


def _rows(spelled: str, columns: dict[str, Any], qis: Sequence[str], skip_suppressed: bool) -> exp.Expression | str:
    """The table, or its rows without the suppressed ones (every quasi-identifier '*'). A column
    without a declared type (SQLite's CREATE TABLE … AS SELECT of labels) holds labels too."""
    labels = [q for q in qis if columns[q].family in ("text", "other")]
    if skip_suppressed and len(labels) == len(qis):
        suppressed = exp.and_(*[exp.EQ(this=exp.cast(col(q), "TEXT") if columns[q].family == "other" else col(q),
                                       expression=exp.Literal.string(SUPPRESSED)) for q in qis])
        # a NULL among the values is no suppressed record
        kept = exp.EQ(this=exp.Case(ifs=[exp.If(this=suppressed, true=exp.Literal.number(1))],
                                    default=exp.Literal.number(0)), expression=exp.Literal.number(0))
        return exp.select("*").from_(table(spelled)).where(kept).subquery()
    return spelled


def class_sizes(db: Database, name: str, qis: Sequence[str], *, skip_suppressed: bool = False,
                reading: Reading | None = None) -> dict[int, int]:
    """{class size: classes} over ``qis`` of table ``name``. ``skip_suppressed``: leave out rows
    whose quasi-identifiers are all '*' (suppressed records, which ARX ignores as well)."""
    spelled, columns = _table(db, name, qis)
    rows = _rows(spelled, columns, qis, skip_suppressed)

    def run(r: Reading) -> dict[int, int]:
        keys = [r.key(q, columns[q].family) for q in qis]
        return {int(size): int(n) for size, n in r.rows(render("risk/class_sizes", rows=rows, qis=keys))}

    if reading is not None:
        return run(reading)
    with Reading(db) as r:
        return run(r)


def population_class_sizes(db: Database, name: str, population: str, qis: Sequence[str], *,
                           skip_suppressed: bool = False) -> tuple[dict[tuple[int, int], int], int]:
    """{(class size in ``name``, its size in ``population``): classes} over ``qis``, and the
    population table's rows; a class ``population`` lacks has population size 0."""
    spelled, columns = _table(db, name, qis)
    whole, every = _table(db, population, qis)
    names = [f"_k{i}" for i in range(len(qis))]
    equal = [exp.NullSafeEQ(this=exp.column(n, table="s"), expression=exp.column(n, table="p")) for n in names]
    matched: exp.Expression = equal[0]
    for e in equal[1:]:
        matched = exp.And(this=matched, expression=e)
    with Reading(db) as r:
        sample_keys = [r.key(q, columns[q].family) for q in qis]
        population_keys = [r.key(q, every[q].family) for q in qis]
        found = r.rows(render(
            "risk/journalist", sample=_rows(spelled, columns, qis, skip_suppressed),
            sample_keys=[exp.alias_(k, n) for k, n in zip(sample_keys, names)], sample_group=sample_keys,
            population=whole, population_keys=[exp.alias_(k, n) for k, n in zip(population_keys, names)],
            population_group=population_keys, matched=matched))
        rows = r.one(exp.select(exp.Count(this=exp.Star())).from_(table(whole)))[0]
    return {(int(size), int(p or 0)): int(n) for size, p, n in found}, int(rows or 0)


def class_sizes_of_rows(rows: Sequence[Sequence[Any]], positions: Sequence[int], *,
                        skip_suppressed: bool = False) -> dict[int, int]:
    """The same table from released rows (``positions``: the quasi-identifiers' columns)."""
    counts = Counter(tuple(r[i] for i in positions) for r in rows
                     if not (skip_suppressed and all(r[i] == SUPPRESSED for i in positions)))
    return dict(Counter(counts.values()))
