"""The persons behind a release whose persons may have several rows — a join of protected tables
(analyze/linked.py), or a table whose policy names its ``person`` column: one statement finds the
most rows of one person in the selection, m, and the method is asked for classes of
(k−1)·m + 1 rows: k−1 persons hold at most (k−1)·m of them, so every class holds k persons
whatever the rows of each. Verification counts the persons of every class independently
(criteria/persons.py)."""
from __future__ import annotations

from dataclasses import replace
from functools import reduce

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.policy.model import Persons, Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, table


def per_person(frag: Fragment, src: str, req: Requirement, ctx: RunContext) -> tuple[Requirement, list[str]]:
    """The requirement of a release whose persons may have several rows, and what the report
    says of it. In a static explain nothing is counted and m is taken as 1."""
    keys = frag.persons
    counts = [exp.select(exp.alias_(exp.Count(this=exp.Star()), "n", quoted=True)).from_(table(src)).group_by(col(k))
              for k in keys]
    union = reduce(lambda a, b: exp.union(a, b, distinct=False), counts)
    found = ctx.scalar(exp.select(exp.Max(this=col("n"))).from_(union.subquery("per_person", copy=False)))
    m = max(int(found or 1), 1)
    rows = (req.k - 1) * m + 1
    if frag.link is not None:
        links = ", ".join(e.sql() for e in frag.link.links)
        whose = f"joined release of {' and '.join(frag.link.tables)}, persons linked by {links}"
    else:
        whose = f"persons recognised by {frag.policy.table}.{keys[0]}"
    counted = f"one person has up to {m} row(s)" if ctx.live else "m is counted when the query runs, 1 here"
    notes = [f"{whose}: {counted}, so every class holds at least (k−1)·{m} + 1 = {rows} rows and k = {req.k} persons"]
    return replace(req, k=rows, persons=tuple(Persons(req.k, k) for k in keys)), notes
