"""Differencing by overlapping selections (seed 002; Dobkin, Jones & Lipton's query-set overlap).

Each release is anonymous on its own, but two releases whose selections differ in a few rows
let their difference describe those rows: ``WHERE ward = 3`` and ``WHERE ward = 3 AND age <> 47``
answered one after the other single out the patient aged 47. Before a release, the selection
is compared with every differently written selection of the same table released within the
policy's ``difference_window``, in one pass over the table inside the database per 50 of them:
when either side of a difference holds between 1 and max(k, min_rows) − 1 rows, or as many
distinct values of one of the table's identifier columns (persons: two visits of one patient
are one), the query is refused, and the refusal lands in the audit log. A join of protected
tables is a selection of each of its tables (Fragment.selections), compared with that table's
other selections, alone or in joins. An attacker cannot push a selection out of the
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
from sqlanon.sql.templates import col, table

#: earlier selections compared in one pass over the table
PER_PASS = 50
#: distinct selections of one table in the window beyond which new ones are refused
MAX_SELECTIONS = 500


def check_differencing(catalog: Catalog, frag: Fragment, req: Requirement, ctx: RunContext) -> None:
    """Compare the selection of every protected table the query reads with that table's
    earlier selections. A join of protected tables is compared table by table, in rows of each
    table (persons), with its earlier selections alone or in other joins: a join that filters
    one table by another's columns must not escape a comparison with that table read alone."""
    if not req.difference_window or not ctx.live:
        return
    floor = max(req.persons[0].value if req.persons else req.k, req.min_rows)
    for name, mine, persons in frag.selections():
        _compare(catalog, name, mine, persons, floor, req.difference_window, ctx)


def _compare(catalog: Catalog, name: str, mine: exp.Expression | None, persons: tuple[str, ...], floor: int,
             window: int, ctx: RunContext) -> None:
    """A difference is counted in rows and, where the table has identifier columns, in persons:
    two visits of one patient are one person (NULL identifiers count as rows only)."""
    text = ctx.backend.render(mine.copy()) if mine is not None else None
    since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=window)
    earlier = catalog.earlier(name, since, fingerprint(text), MAX_SELECTIONS + 1)
    if len(earlier) > MAX_SELECTIONS:
        raise QueryRejected(
            "differencing", f"more than {MAX_SELECTIONS} differently written selections over {name} "
            f"were released within the last {window} s, more than a new one can be compared with: "
            "ask again with a selection released before, or once older releases have left the window")
    new = mine if mine is not None else exp.true()
    for at in range(0, len(earlier), PER_PASS):
        batch = earlier[at:at + PER_PASS]
        # every selection (naming the table itself: Fragment.selections) evaluated once per row,
        # a joined one's subquery once per pass, in a derived table of flags that the counts read
        olds = [sqlglot.parse_one(predicate, read=ctx.backend.dialect) if predicate else exp.true()
                for _, predicate in batch]
        flags = exp.select(_holds(new, "_sa_n"), *[_holds(o, f"_sa_o{i}") for i, o in enumerate(olds)],
                           *[exp.alias_(col(p, name), f"_sa_p{j}", quoted=True) for j, p in enumerate(persons)]) \
            .from_(table(name, name))
        counts: list[exp.Expression] = []
        for i in range(len(batch)):
            for a, b in (("_sa_n", f"_sa_o{i}"), (f"_sa_o{i}", "_sa_n")):
                cond = exp.and_(col(a), exp.Not(this=col(b)))
                counts.append(exp.Sum(this=exp.Case(ifs=[exp.If(this=cond, true=exp.Literal.number(1))],
                                                    default=exp.Literal.number(0))))
                counts += [exp.Count(this=exp.Distinct(expressions=[exp.Case(ifs=[exp.If(
                    this=cond.copy(), true=col(f"_sa_p{j}"))])])) for j in range(len(persons))]
        row = ctx.query(exp.select(*counts).from_(ctx.backend.fenced(flags).subquery("f")))[0]
        per = 2 * (1 + len(persons))
        for i, (release, _) in enumerate(batch):
            if any(0 < int(n or 0) < floor for n in row[per * i:per * (i + 1)]):
                # the message does not say how many rows: that number would itself describe them
                raise QueryRejected(
                    "differencing", f"the selection over {name} differs from release #{release} (within "
                    f"the last {window} s) in fewer than {floor} rows: the two answers together would "
                    "describe those rows")


def _holds(condition: exp.Expression, name: str) -> exp.Expression:
    """Whether ``condition`` holds for the row (NULL counts as not holding), as a column."""
    return exp.alias_(exp.func("COALESCE", exp.Paren(this=condition.copy()), exp.false()), name, quoted=True)
