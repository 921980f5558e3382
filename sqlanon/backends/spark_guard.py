"""The second wall on Spark, which has no privileges: a restricted connection runs a statement
only after Spark's own analyzer has resolved it, and only when the analysis is a query that reads
nothing but allowed tables.

What the analyzer resolved is walked node by node — subqueries in expressions included — and
checked against an allowlist: relational operators, literal rows, the computed tables the
pipeline handed over (``LogicalRDD`` under the temp view of a release, by name: the selection's
copy and every other pipeline table are the connection's too, and stay unreadable), and catalog
tables whose name is not denied. A
command (DDL, INSERT, SET, CACHE …), a read of files by path (``parquet.`/path```), a table of a
source sqlanon does not know and calls into the JVM (``reflect``, ``java_method``) are refused.
Views are resolved by the analyzer into what they read, so a view over a protected table is
refused like the table itself. Nothing runs before the check: the analysis does not execute.
"""
from __future__ import annotations

from typing import Any

#: logical operators that compute from their children and read nothing themselves
OPERATORS = frozenset({
    "Project", "Filter", "Aggregate", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail", "Join", "Union",
    "Intersect", "Except", "Distinct", "Deduplicate", "SubqueryAlias", "View", "Window", "Generate", "Expand",
    "Sample", "WithCTE", "CTERelationDef", "CTERelationRef", "ResolvedHint", "Subquery", "LateralJoin",
    "Repartition", "RepartitionByExpression", "RebalancePartitions", "WithWindowDefinition", "Pivot",
    "OneRowRelation", "LocalRelation", "Range", "ReturnAnswer"})
#: leaves that read a catalog table (checked by name)
RELATIONS = frozenset({"LogicalRelation", "HiveTableRelation", "DataSourceV2Relation"})
#: expressions that leave SQL (JVM calls)
CALLS = frozenset({"CallMethodViaReflection", "ScalaUDF", "HiveSimpleUDF", "HiveGenericUDF", "PythonUDF"})


class Refused(Exception):
    """A statement the restricted connection does not run (a permission error)."""


def check(session: Any, sql: str, denied: frozenset[str], readable: frozenset[str] = frozenset()) -> None:
    """Raise ``Refused`` unless ``sql`` is a query that reads no ``denied`` table and, of the
    connection's computed tables, only the ``readable`` ones."""
    jss = session._jsparkSession
    jvm = session._jvm
    parsed = jss.sessionState().sqlParser().parsePlan(sql)
    skip = getattr(getattr(jvm.org.apache.spark.sql.execution, "CommandExecutionMode$"), "MODULE$").SKIP()
    _walk(jss.sessionState().executePlan(parsed, skip).analyzed(), denied, readable)


def _seq(s: Any) -> list[Any]:
    return [s.apply(i) for i in range(s.size())]


def _walk(node: Any, denied: frozenset[str], readable: frozenset[str]) -> None:
    kind = node.getClass().getSimpleName()
    if kind == "View" and node.child().getClass().getSimpleName() == "LogicalRDD":
        # a temp view of computed rows: the analyzer puts the view's own name right above them
        name = node.desc().identifier().table()
        if name.lower() not in readable:
            raise Refused(f"permission denied for table {name}")
        return
    if kind in RELATIONS:
        name = _table(node, kind)
        if name is None:
            raise Refused("permission denied: a read of files by path")
        if name.lower() in denied:
            raise Refused(f"permission denied for table {name}")
        return
    if kind not in OPERATORS:
        raise Refused(f"permission denied: {kind} is not a query this connection runs")
    for e in _seq(node.expressions()):
        _expression(e, denied)
    for child in _seq(node.children()):
        _walk(child, denied, readable)
    for sub in _seq(node.subqueries()):
        _walk(sub, denied, readable)


def _expression(e: Any, denied: frozenset[str]) -> None:
    kind = e.getClass().getSimpleName()
    if kind in CALLS:
        raise Refused(f"permission denied: {kind}")
    for child in _seq(e.children()):
        _expression(child, denied)


def _table(node: Any, kind: str) -> str | None:
    """The catalog name a relation reads, or None (files by path, a source without a name)."""
    if kind == "LogicalRelation":
        found = node.catalogTable()
        return found.get().identifier().table() if found.isDefined() else None
    if kind == "HiveTableRelation":
        return node.tableMeta().identifier().table()
    found = node.identifier()
    return found.get().name() if found.isDefined() else None
