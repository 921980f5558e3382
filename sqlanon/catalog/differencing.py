"""Differencing by overlapping selections (seed 002; Dobkin, Jones & Lipton's query-set overlap).

Each release is anonymous on its own, but two releases whose selections differ in a few rows
let their difference describe those rows: ``WHERE ward = 3`` and ``WHERE ward = 3 AND age <> 47``
answered one after the other single out the patient aged 47. Before a release, the selection
is compared with every differently written selection of the same table released within the
policy's ``difference_window``, in one pass over the table inside the database: when either
side of a difference holds between 1 and max(k, min_rows) − 1 rows, the query is refused, and
the refusal lands in the audit log.
"""
from __future__ import annotations

import datetime as dt

import sqlglot
from sqlglot import exp

from sqlanon.catalog.store import Catalog, fingerprint
from sqlanon.context import RunContext
from sqlanon.errors import QueryRejected
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import table

#: earlier selections compared per query (the newest ones)
MAX_COMPARED = 50


def check_differencing(catalog: Catalog, frag: Fragment, req: Requirement, ctx: RunContext) -> None:
    if not req.difference_window or not ctx.live:
        return
    mine = frag.canonical_where()
    text = ctx.backend.render(mine.copy()) if mine is not None else None
    since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=req.difference_window)
    earlier = catalog.earlier(frag.policy.table, since, fingerprint(text), MAX_COMPARED)
    if not earlier:
        return
    new = mine if mine is not None else exp.true()
    counts: list[exp.Expression] = []
    for _, predicate in earlier:
        old = sqlglot.parse_one(predicate, read=ctx.backend.dialect) if predicate else exp.true()
        counts.append(_only(new, old))
        counts.append(_only(old, new))
    row = ctx.query(exp.select(*counts).from_(table(frag.table, frag.table)))[0]
    floor = max(req.k, req.min_rows)
    for i, (release, _) in enumerate(earlier):
        if any(0 < int(n or 0) < floor for n in row[2 * i:2 * i + 2]):
            # the message does not say how many rows: that number would itself describe them
            raise QueryRejected(
                "differencing", f"the selection over {frag.policy.table} differs from release #{release} (within the "
                f"last {req.difference_window} s) in fewer than {floor} rows: the two answers together would "
                "describe those rows")


def _only(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """Rows where ``a`` holds and ``b`` does not (NULL counts as not holding)."""
    cond = exp.and_(exp.Paren(this=a.copy()),
                    exp.Not(this=exp.func("COALESCE", exp.Paren(this=b.copy()), exp.false())))
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=cond, true=exp.Literal.number(1))], default=exp.Literal.number(0)))
