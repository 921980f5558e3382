"""A differentially private aggregate query as the bounded aggregate the database computes.

Accepted: ``SELECT keys…, COUNT(*), COUNT(col), SUM(col), AVG(col) FROM protected [WHERE …]
[GROUP BY keys] [ORDER BY outputs] [LIMIT n]``, keys and aggregated values plain columns of
the table. Anything else that reads the protected table is refused by name: MIN, MAX, MEDIAN
and percentiles (each one person's value), other statistics, DISTINCT aggregates, HAVING,
window functions, expressions over aggregates, joins, subqueries.

Contribution bounding is SQL (the statement below), so that only the bounded aggregates cross
the wire: with ``person``, a window function keeps at most ``rows_per_person`` rows of each
person, at random (``ROW_NUMBER() OVER (PARTITION BY person ORDER BY <random>)``); every value
of SUM and AVG is clamped into the policy's ``bounds`` by a CASE. The sensitivity of every
aggregate then follows from the policy alone (mechanisms.py), never from the client.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlanon.analyze import Analysis
from sqlanon.backends.connect import Database
from sqlanon.errors import QueryRejected
from sqlanon.policy.model import Differential

#: the inner query's columns
RANK = "_dp_rank"


@dataclass(frozen=True)
class Measure:
    """One exact aggregate the database computes: COUNT(*) (``column`` None), COUNT(column) or
    SUM(clamped column)."""

    kind: str  # count | sum
    column: str | None = None

    @property
    def name(self) -> str:
        return f"_dp_{self.kind}_{self.column or 'all'}"


@dataclass(frozen=True)
class Output:
    """One column of the answer: a group key, or an aggregate read from the measures."""

    name: str
    kind: str  # key | count | sum | avg
    #: key: the key's position; count, sum: the measure's; avg: (sum, count)
    of: tuple[int, ...]


@dataclass(frozen=True)
class Bounded:
    keys: tuple[str, ...]
    measures: tuple[Measure, ...]
    outputs: tuple[Output, ...]
    #: the statement: one row per group, the keys then the measures
    statement: exp.Select
    #: every key has a public domain (``groups.public``): the groups are enumerated, not thresholded
    public: bool
    #: (output position, descending) of ORDER BY, then LIMIT and OFFSET: applied to the noisy answer
    order: tuple[tuple[int, bool], ...] = ()
    limit: int | None = None
    offset: int = 0
    #: aggregated columns whose values are integers (their sums get integer noise)
    integers: frozenset[str] = frozenset()


def _refuse(construct: str, why: str, node: exp.Expression | None = None) -> QueryRejected:
    return QueryRejected(f"{construct} under differential privacy", why,
                         fragment=node.sql()[:200] if node is not None else None)


def _name(node: exp.Expression) -> str:
    return node.sql_name() if isinstance(node, exp.Func) else node.key.upper()


def bounded(analysis: Analysis, dp: Differential, db: Database) -> Bounded:
    """The bounded aggregate of ``analysis``'s query, or QueryRejected naming what is refused."""
    tp = analysis.policy
    assert tp is not None
    tree = analysis.tree
    if analysis.link is not None or analysis.joined:
        raise _refuse("join", f"{tp.table}: the sensitivity of a joined aggregate depends on how many joined rows one "
                      "person makes; only aggregates of one protected table are answered")
    for key in ("having", "distinct", "qualify", "windows"):
        if tree.args.get(key):
            raise _refuse(key.upper(), f"{tp.table}: a condition or operation over noisy aggregates is not answered",
                          tree.args[key])
    where = tree.args.get("where")
    if where is not None and where.find(exp.Subquery):
        raise _refuse("subquery", f"{tp.table}: an exact aggregate inside the WHERE clause would select rows by "
                      "a value computed without noise", where.find(exp.Subquery))
    for node in tree.find_all(exp.Window):
        raise _refuse("window function", f"over protected table {tp.table}", node)
    alias = analysis.alias

    def own_column(node: exp.Expression, what: str) -> str:
        if not isinstance(node, exp.Column) or node.table != alias or node.name not in tp.releasable:
            raise _refuse(what, f"{tp.table}: keys and aggregated values must be columns of the table", node)
        return node.name

    group = tree.args.get("group")
    keys = tuple(own_column(g, "GROUP BY over an expression") for g in (group.expressions if group else ()))
    measures: list[Measure] = []

    def measure(m: Measure) -> int:
        if m not in measures:
            measures.append(m)
        return measures.index(m)

    outputs: list[Output] = []
    for e in tree.expressions:
        node = e.unalias()
        name = _label(e, node)
        if isinstance(node, exp.Column):
            column = own_column(node, "column")
            if column not in keys:
                raise _refuse("column outside GROUP BY", f"{tp.table}.{column}: only group keys and aggregates "
                              "are answered", node)
            outputs.append(Output(name, "key", (keys.index(column),)))
            continue
        if isinstance(node, exp.Count):
            arg = node.this
            if isinstance(arg, exp.Distinct):
                raise _refuse("COUNT(DISTINCT)", f"{tp.table}: a distinct count's sensitivity is not bounded by "
                              "rows_per_person", node)
            counted = None if isinstance(arg, exp.Star) else own_column(arg, "COUNT over an expression")
            outputs.append(Output(name, "count", (measure(Measure("count", counted)),)))
            continue
        if isinstance(node, (exp.Sum, exp.Avg)):
            if isinstance(node.this, exp.Distinct):
                raise _refuse(f"{_name(node)}(DISTINCT)", f"over protected table {tp.table}", node)
            column = own_column(node.this, f"{_name(node)} over an expression")
            if dp.bound(column) is None:
                raise _refuse(f"{_name(node)} without bounds", f"{tp.table}.{column}: privacy.bounds must give "
                              "[lowest, highest] for every column that is summed or averaged", node)
            total = measure(Measure("sum", column))
            if isinstance(node, exp.Sum):
                outputs.append(Output(name, "sum", (total,)))
            else:
                outputs.append(Output(name, "avg", (total, measure(Measure("count", column)))))
            continue
        if isinstance(node, exp.Func) and isinstance(node, exp.AggFunc):
            raise _refuse(node.sql_name(), f"over protected table {tp.table}: answered are COUNT, SUM and AVG "
                          "(MIN, MAX, medians and percentiles are one person's value)", e)
        if node.find(exp.AggFunc):
            raise _refuse("expression over aggregates", f"{tp.table}: each aggregate is answered as it is", node)
        raise _refuse(_name(node), f"{tp.table}: only group keys and aggregates are answered", node)
    if not measures and not keys:
        raise _refuse("row query", f"{tp.table}: differential privacy answers aggregates")

    public = all(dp.domain(k) is not None for k in keys)
    if not public and dp.delta is None:
        private = ", ".join(k for k in keys if dp.domain(k) is None)
        raise _refuse("GROUP BY without a public domain", f"{tp.table}: keys of {private} are released only when "
                      "their noisy count passes a threshold, which needs privacy.delta; or list the domain under "
                      "privacy.groups.public")
    if not public:
        # the threshold reads the groups' COUNT(*), asked for or not (release.py)
        measure(Measure("count"))
    conditions = [where.this.copy()] if where is not None else []
    if public and tp.person is not None:
        # rows outside the public domain form no released group: with persons they are left out
        # before bounding, lest they take a person's places (without persons, the groups are
        # left out after the aggregate, which spares the database a comparison per row)
        conditions += [exp.column(k, table=alias, quoted=True).isin(*[_literal(v) for v in dp.domain(k) or ()])
                       for k in keys]
    info = db.columns(tp.table)
    integers = frozenset(m.column for m in measures if m.column is not None and "INT" in info[m.column].type.upper()
                         and all(float(b).is_integer() for b in dp.bound(m.column) or (0.5,)))
    assert isinstance(tree, exp.Select)
    order, limit, offset = _ordering(tree, outputs, tp.table)
    return Bounded(keys, tuple(measures), tuple(outputs), _statement(analysis, dp, keys, measures, conditions),
                   public, order, limit, offset, integers)


def _label(e: exp.Expression, node: exp.Expression) -> str:
    """The answer's name of a column: its alias, or the expression as written (``COUNT(*)``,
    ``AVG(age)``) where the query gives none (qualify names those ``_col_<n>``)."""
    if isinstance(e, exp.Alias) and not re.fullmatch(r"_col_\d+", e.alias):
        return e.alias
    if isinstance(node, exp.Column):
        return node.name
    plain = node.copy()
    for c in plain.find_all(exp.Column):
        c.replace(exp.column(c.name))
    return plain.sql()


def _literal(v: Any) -> exp.Expression:
    return exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)


def _clamped(column: exp.Expression, lo: float, hi: float) -> exp.Expression:
    """``column`` clamped into [lo, hi]; NULL stays NULL (COUNT and SUM leave it out)."""
    return exp.Case(ifs=[exp.If(this=exp.LT(this=column.copy(), expression=_literal(lo)), true=_literal(lo)),
                         exp.If(this=exp.GT(this=column.copy(), expression=_literal(hi)), true=_literal(hi))],
                    default=column.copy())


def _statement(analysis: Analysis, dp: Differential, keys: tuple[str, ...], measures: list[Measure],
               conditions: list[exp.Expression]) -> exp.Select:
    tp = analysis.policy
    assert tp is not None
    alias = analysis.alias
    source = exp.Table(this=exp.to_identifier(analysis.table, quoted=True),
                       alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))

    def col(name: str, table: str = alias) -> exp.Column:
        return exp.column(name, table=table, quoted=True)

    def value(name: str, table: str) -> exp.Expression:
        bound = dp.bound(name)
        return _clamped(col(name, table), *bound) if bound is not None else col(name, table)

    def aggregate(m: Measure, table: str, clamp: bool) -> exp.Expression:
        # the inner query of the bounded path carries each value clamped, as _dp_v_<column>
        arg = exp.Star() if m.column is None else (value(m.column, table) if clamp else col(f"_dp_v_{m.column}", table))
        agg: exp.Expression = exp.Count(this=arg) if m.kind == "count" else exp.Sum(this=arg)
        return exp.Alias(this=agg, alias=exp.to_identifier(m.name, quoted=True))

    where = exp.and_(*conditions) if conditions else None
    if tp.person is None:
        # one row is one person: no bounding but the clamp
        select = exp.select(*[exp.alias_(col(k), k, quoted=True) for k in keys],
                            *[aggregate(m, alias, clamp=True) for m in measures]).from_(source)
        if where is not None:
            select = select.where(where)
        return select.group_by(*[col(k) for k in keys]) if keys else select
    # at most rows_per_person rows of each person, chosen at random, each value clamped
    # a key may be aggregated too (GROUP BY age, SUM(age)): the key as stored, the value clamped
    values = sorted({m.column for m in measures if m.column is not None})
    rank = exp.Window(this=exp.RowNumber(), partition_by=[col(tp.person)],
                      order=exp.Order(expressions=[exp.Ordered(this=exp.Rand())]))
    inner = exp.select(*[exp.alias_(col(k), k, quoted=True) for k in keys],
                       *[exp.alias_(value(v, alias), f"_dp_v_{v}", quoted=True) for v in values],
                       exp.alias_(rank, RANK, quoted=True)).from_(source)
    if where is not None:
        inner = inner.where(where)
    rows = "_dp_rows"
    select = exp.select(*[exp.alias_(col(k, rows), k, quoted=True) for k in keys],
                        *[aggregate(m, rows, clamp=False) for m in measures]).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(rows, quoted=True))))
    select = select.where(exp.LTE(this=col(RANK, rows), expression=exp.Literal.number(dp.rows_per_person)))
    return select.group_by(*[col(k, rows) for k in keys]) if keys else select


def _ordering(tree: exp.Select, outputs: list[Output],
              table: str) -> tuple[tuple[tuple[int, bool], ...], int | None, int]:
    """ORDER BY over the answer's columns, LIMIT and OFFSET: post-processing of noisy figures."""
    order: list[tuple[int, bool]] = []
    for o in tree.args["order"].expressions if tree.args.get("order") else ():
        target = o.this
        found = None
        for i, e in enumerate(tree.expressions):
            if target == e.unalias() or (isinstance(target, exp.Column) and not target.table
                                         and target.name == outputs[i].name):
                found = i
                break
        if found is None:
            raise _refuse("ORDER BY over an expression", f"{table}: the answer is ordered by its own columns only", o)
        order.append((found, bool(o.args.get("desc"))))

    def number(key: str) -> int | None:
        node = tree.args.get(key)
        if node is None:
            return None
        value = node.expression if isinstance(node, exp.Limit) else node.expression
        if not isinstance(value, exp.Literal) or value.is_string:
            raise _refuse(f"{key.upper()} other than a number", table, node)
        return int(value.this)

    return tuple(order), number("limit"), number("offset") or 0
