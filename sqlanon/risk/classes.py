"""The class-size frequency table, built in the database or from released rows.

In the database: GROUP BY the quasi-identifiers, then GROUP BY class size (``risk/class_sizes``):
only (size, number of classes) pairs come back. From rows that have already been released (a
query's anonymized answer): the same count in Python.
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


def class_sizes(db: Database, name: str, qis: Sequence[str], *, skip_suppressed: bool = False,
                reading: Reading | None = None) -> dict[int, int]:
    """{class size: classes} over ``qis`` of table ``name``. ``skip_suppressed``: leave out rows
    whose quasi-identifiers are all '*' (suppressed records, which ARX ignores as well)."""
    spelled = db.spelling.get(name.lower())
    if spelled is None:
        raise PolicyError(f"no table {name!r} in the database")
    columns = db.columns(spelled)
    missing = [q for q in qis if q not in columns]
    if missing:
        raise PolicyError(f"table {spelled} has no column {', '.join(missing)}")
    if not qis:
        raise PolicyError("no quasi-identifiers to form classes over")
    rows: exp.Expression | str = spelled
    text = [q for q in qis if columns[q].family == "text"]
    if skip_suppressed and len(text) == len(qis):
        kept = exp.not_(exp.and_(*[exp.EQ(this=col(q), expression=exp.Literal.string(SUPPRESSED)) for q in qis]))
        rows = exp.select("*").from_(table(spelled)).where(kept).subquery()

    def run(r: Reading) -> dict[int, int]:
        keys = [r.key(q, columns[q].family) for q in qis]
        return {int(size): int(n) for size, n in r.rows(render("risk/class_sizes", rows=rows, qis=keys))}

    if reading is not None:
        return run(reading)
    with Reading(db) as r:
        return run(r)


def class_sizes_of_rows(rows: Sequence[Sequence[Any]], positions: Sequence[int], *,
                        skip_suppressed: bool = False) -> dict[int, int]:
    """The same table from released rows (``positions``: the quasi-identifiers' columns)."""
    counts = Counter(tuple(r[i] for i in positions) for r in rows
                     if not (skip_suppressed and all(r[i] == SUPPRESSED for i in positions)))
    return dict(Counter(counts.values()))
