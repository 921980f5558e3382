"""Differencing by overlapping selections (seed 002; Dobkin, Jones & Lipton's query-set overlap).

Each release is anonymous on its own, but two releases whose selections differ in a few rows
let their difference describe those rows: ``WHERE ward = 3`` and ``WHERE ward = 3 AND age <> 47``
answered one after the other single out the patient aged 47. Before a release, the selection
is compared with every differently written selection of the same table released within the
policy's ``difference_window``, in one pass over the table inside the database per 50 of them:
when either side of a difference holds between 1 and max(k, min_rows) − 1 rows, the query is
refused, and the refusal lands in the audit log. An attacker cannot push a selection out of the
comparison by flooding the window with others: beyond ``MAX_SELECTIONS`` distinct selections in
the window, new ones are refused (fail closed) until older ones leave it.
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

#: earlier selections compared in one pass over the table
PER_PASS = 50
#: distinct selections of one table in the window beyond which new ones are refused
MAX_SELECTIONS = 500


def check_differencing(catalog: Catalog, frag: Fragment, req: Requirement, ctx: RunContext) -> None:
    if not req.difference_window or not ctx.live:
        return
    mine = frag.canonical_where()
    text = ctx.backend.render(mine.copy()) if mine is not None else None
    since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=req.difference_window)
    earlier = catalog.earlier(frag.policy.table, since, fingerprint(text), MAX_SELECTIONS + 1)
    if len(earlier) > MAX_SELECTIONS:
        raise QueryRejected(
            "differencing", f"more than {MAX_SELECTIONS} differently written selections over {frag.policy.table} "
            f"were released within the last {req.difference_window} s, more than a new one can be compared with: "
            "ask again with a selection released before, or once older releases have left the window")
    new = mine if mine is not None else exp.true()
    floor = max(req.k, req.min_rows)
    for at in range(0, len(earlier), PER_PASS):
        batch = earlier[at:at + PER_PASS]
        counts: list[exp.Expression] = []
        for _, predicate in batch:
            old = sqlglot.parse_one(predicate, read=ctx.backend.dialect) if predicate else exp.true()
            counts.append(_only(new, old))
            counts.append(_only(old, new))
        # the predicates name the table itself (Fragment.canonical_where)
        row = ctx.query(frag.origin(frag.table).select(*counts))[0]
        for i, (release, _) in enumerate(batch):
            if any(0 < int(n or 0) < floor for n in row[2 * i:2 * i + 2]):
                # the message does not say how many rows: that number would itself describe them
                raise QueryRejected(
                    "differencing", f"the selection over {frag.policy.table} differs from release #{release} (within "
                    f"the last {req.difference_window} s) in fewer than {floor} rows: the two answers together would "
                    "describe those rows")


def _only(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """Rows where ``a`` holds and ``b`` does not (NULL counts as not holding)."""
    cond = exp.and_(exp.Paren(this=a.copy()),
                    exp.Not(this=exp.func("COALESCE", exp.Paren(this=b.copy()), exp.false())))
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=cond, true=exp.Literal.number(1))], default=exp.Literal.number(0)))
