"""Differencing by overlapping selections (Dobkin, Jones & Lipton's query-set overlap).

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
import secrets
from typing import Callable

import sqlalchemy as sa
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


def check_differencing(catalog: Catalog, frag: Fragment, req: Requirement, ctx: RunContext, *,
                       rows: bool = True) -> Callable[[RunContext], None] | None:
    """Compare the selection of every protected table the query reads with that table's
    earlier selections. A join of protected tables is compared table by table, in rows of each
    table (persons), with its earlier selections alone or in other joins: a join that filters
    one table by another's columns must not escape a comparison with that table read alone.

    With ``rows`` (answers; a stored release keeps its own memory of rows, catalog/consistency.py)
    the selection is also compared with the rows earlier answers selected, and what is returned
    remembers it once it is released (in the finish stage): its rows, by a digest of their key."""
    if not req.difference_window or not ctx.live:
        return None
    floor = max(req.persons[0].value if req.persons else req.k, req.min_rows)
    since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=req.difference_window)
    kept: list[tuple[str, str, int]] = []
    for i, (name, mine, persons) in enumerate(frag.selections()):
        _compare(catalog, name, mine, persons, floor, req.difference_window, ctx)
        if rows:
            keys, n, known = _compare_rows(catalog, i, name, mine, floor, since, ctx)
            if not known:
                kept.append((name, keys, n))
    return (lambda run: _remember(catalog, kept, since, run)) if rows else None


def _key(catalog: Catalog, name: str, ctx: RunContext) -> exp.Expression:
    """A row's key as a digest of its primary key (of the whole row where there is none)."""
    columns = list(catalog.db.primary_key(name)) or [c for c in catalog.db.columns(name)]
    return ctx.backend.row_digest([col(c, name) for c in columns])


def _catalog_table(catalog: Catalog, t: sa.Table, alias: str | None = None) -> exp.Table:
    return exp.Table(this=exp.to_identifier(t.name, quoted=True),
                     alias=exp.TableAlias(this=exp.to_identifier(alias)) if alias else None,
                     db=exp.to_identifier(catalog.names.schema, quoted=True) if catalog.names.schema else None)


def _compare_rows(catalog: Catalog, index: int, name: str, mine: exp.Expression | None, floor: int,
                  since: dt.datetime, ctx: RunContext) -> tuple[str, int, bool]:
    """The selection's rows against the rows every earlier answer in the window selected when
    it was made, the same predicate included: a re-asked query after one insert or deletion
    differs from its earlier answer in that one row (the temporal attack of Sweeney's
    k-anonymity paper). Returns the temp table of the selection's row digests, their number,
    and whether an earlier answer selected exactly these rows (then nothing new is stored:
    asking again does not grow the memory). Beyond ``MAX_SELECTIONS`` distinct selections in
    the window a new one is refused, as by the predicates' check."""
    keys = ctx.create_temp(f"selected_{index}", exp.select(exp.alias_(_key(catalog, name, ctx), "k", quoted=True))
                           .distinct().from_(table(name, name)).where(mine.copy() if mine is not None else exp.true()))
    n = int(ctx.scalar(exp.select(exp.Count(this=exp.Star())).from_(table(keys))) or 0)
    s, r = _catalog_table(catalog, catalog.t.selections, "s"), _catalog_table(catalog, catalog.t.selection_rows, "r")
    # from each of the selection's rows to the stored row of the same digest, through the index
    # on (selection_id, row_key); the outer join keeps every stored selection when this one is empty
    common = exp.Count(this=exp.column("row_key", "r"))
    rows = ctx.query(
        exp.select(exp.column("rows", "s"), common).from_(s)
        .join(exp.Table(this=exp.to_identifier(keys, quoted=True), alias=exp.TableAlias(this=exp.to_identifier("x"))),
              on=exp.true(), join_type="left")
        .join(r, on=exp.and_(exp.column("selection_id", "r").eq(exp.column("id", "s")),
                             exp.column("row_key", "r").eq(exp.column("k", "x", quoted=True))), join_type="left")
        .where(exp.and_(exp.column("table_name", "s").eq(exp.Literal.string(name)),
                        exp.column("at", "s") >= exp.Literal.string(_stamp(since))))
        .group_by(exp.column("id", "s"), exp.column("rows", "s")))
    known = any(int(old) == int(shared) == n for old, shared in rows)
    if not known and len(rows) > MAX_SELECTIONS:
        raise QueryRejected(
            "differencing", f"more than {MAX_SELECTIONS} distinct selections over {name} were answered within "
            "the window, more than a new one can be compared with: ask again with a selection answered before, "
            "or once older answers have left the window")
    for old, shared in rows:
        if any(0 < d < floor for d in (int(old) - int(shared), n - int(shared))):
            # the message does not say how many rows, nor which answer: both would describe them
            raise QueryRejected(
                "differencing", f"the selection over {name} differs from an earlier answer (rows as selected then; "
                f"a re-asked query after the table changed included) in fewer than {floor} rows: the two answers "
                "together would describe those rows")
    return keys, n, known


def _remember(catalog: Catalog, kept: list[tuple[str, str, int]], since: dt.datetime, ctx: RunContext) -> None:
    """Store the released selections row by row, and forget those that left the window."""
    for name, keys, n in kept:
        sid = secrets.randbits(62)
        catalog.remember_selection(sid, name, n, since)
        ctx.run(exp.insert(exp.select(exp.Literal.number(sid), exp.column("k", quoted=True)).from_(table(keys)),
                           _catalog_table(catalog, catalog.t.selection_rows), columns=["selection_id", "row_key"]))


def _stamp(at: dt.datetime) -> str:
    """A timestamp as every backend compares it with the catalog's (SQLite: as text)."""
    return at.isoformat(sep=" ", timespec="microseconds")


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
