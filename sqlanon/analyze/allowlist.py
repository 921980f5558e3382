"""What the rewriter understands, as an allowlist of syntax nodes and functions.

Anything else inside a query over a protected table is rejected with the construct's name.
Later methods widen these sets; they never switch the check off.
"""
from __future__ import annotations

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.errors import QueryRejected

#: syntax a query over a protected table may contain
NODES: tuple[type[exp.Expression], ...] = (
    exp.Select, exp.From, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Star, exp.Alias,
    exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Offset, exp.Distinct,
    exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Neg, exp.Not, exp.And, exp.Or,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.DPipe, exp.Case, exp.If,
    exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam, exp.Var,
    exp.Join,  # joins with unprotected tables (analyze/joins.py checks the kind)
)

#: the SQL:2003 statistics aggregates (John's thesis, Tables 7–8), where the backend has them
#: (``Backend.missing_aggregates``); two-argument ones take (Y, X)
STATISTICS: tuple[type[exp.AggFunc], ...] = (
    exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance, exp.VariancePop, exp.CovarPop, exp.CovarSamp,
    exp.Corr, exp.RegrSlope, exp.RegrIntercept, exp.RegrR2, exp.RegrCount, exp.RegrAvgx, exp.RegrAvgy,
    exp.RegrSxx, exp.RegrSyy, exp.RegrSxy,
)

#: functions with a fixed meaning on every backend; unknown names may hide SQL in strings
FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, *STATISTICS, exp.Abs, exp.Round, exp.Floor, exp.Ceil,
    exp.Upper, exp.Lower, exp.Length, exp.Substring, exp.Trim, exp.Concat, exp.Coalesce, exp.Nullif,
    exp.Greatest, exp.Least, exp.Extract, exp.Sqrt, exp.Ln, exp.Exp, exp.Pow,
)

#: human names of constructs that later versions accept
NAMES: dict[type[exp.Expression], str] = {
    exp.Join: "join", exp.Subquery: "subquery", exp.With: "common table expression (WITH)",
    exp.CTE: "common table expression (WITH)", exp.Union: "set operation UNION",
    exp.Intersect: "set operation INTERSECT", exp.Except: "set operation EXCEPT",
    exp.Window: "window function", exp.Lateral: "LATERAL", exp.TableSample: "TABLESAMPLE",
    exp.Lock: "locking clause", exp.Into: "SELECT INTO", exp.Placeholder: "parameter placeholder",
    exp.Parameter: "parameter", exp.Exists: "EXISTS subquery", exp.Collate: "COLLATE",
    exp.Pivot: "PIVOT", exp.Values: "VALUES list", exp.Qualify: "QUALIFY",
}


def construct_name(node: exp.Expression) -> str:
    for cls, name in NAMES.items():
        if isinstance(node, cls):
            return name
    if isinstance(node, exp.Anonymous):
        return f"function {str(node.this).upper()}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}"
    return node.key.upper()


def check_protected(tree: exp.Expression, table: str) -> None:
    """Reject the first node of ``tree`` that the rewriter does not understand."""
    for node in tree.walk():
        if isinstance(node, exp.Select) and node is not tree:
            raise QueryRejected("subquery", f"over protected table {table}", fragment=node.sql())
        if isinstance(node, NODES + FUNCTIONS) and not isinstance(node, exp.Anonymous):
            continue
        raise QueryRejected(construct_name(node), f"not supported over protected table {table}",
                            fragment=node.sql()[:200])


def check_available(tree: exp.Expression, backend: Backend) -> None:
    """Reject a statistics aggregate the database lacks, naming it and the database, rather
    than let the statement fail after the release was made."""
    for node in tree.find_all(*backend.missing_aggregates) if backend.missing_aggregates else ():
        raise QueryRejected(construct_name(node), f"{backend.product} has no such aggregate", fragment=node.sql())


def check_passthrough(tree: exp.Expression) -> None:
    """A query over unprotected tables only: still no construct that can hide SQL."""
    for node in tree.walk():
        if isinstance(node, (exp.Anonymous, exp.Command)):
            raise QueryRejected(construct_name(node), "unknown to the parser; it could run hidden SQL")
        if isinstance(node, (exp.Placeholder, exp.Parameter, exp.Into, exp.Lock)):
            raise QueryRejected(construct_name(node), "not accepted in a pass-through query")
