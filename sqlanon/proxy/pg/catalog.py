"""Catalog queries that clients send on their own (psql's ``\\dt`` and ``\\d``, SQLAlchemy's
reflection, drivers' type lookups), as an allowlist.

A catalog query may read only the relations listed here, call only the functions listed here
and use only the syntax listed here; everything else is refused by name. The lists leave out
whatever exposes data or statistics of tables (``pg_statistic``, ``pg_stats``, every
``pg_stat*`` view, ``reltuples``/``relpages``, size functions), secrets (``pg_authid``,
``pg_user_mapping``), large objects, settings, and every function that reads files or runs
SQL held in a string (``query_to_xml``, ``dblink``, ``pg_read_file``, …): a query cannot be
anonymized if it is not about rows, so it must be about names and types only.
"""
from __future__ import annotations

from sqlglot import exp

from sqlanon.analyze.allowlist import FUNCTIONS as QUERY_FUNCTIONS
from sqlanon.analyze.allowlist import NODES as QUERY_NODES
from sqlanon.analyze.allowlist import construct_name
from sqlanon.errors import QueryRejected

SCHEMAS = ("pg_catalog", "information_schema")

#: pg_catalog relations that describe names, types, constraints and dependencies only (not
#: pg_sequences: its last_value counts inserted rows)
RELATIONS = frozenset({
    "pg_am", "pg_auth_members", "pg_attrdef", "pg_attribute", "pg_class", "pg_collation", "pg_constraint", "pg_database",
    "pg_depend", "pg_description", "pg_enum", "pg_extension", "pg_foreign_table", "pg_index", "pg_indexes",
    "pg_inherits", "pg_language", "pg_matviews", "pg_namespace", "pg_opclass", "pg_operator",
    "pg_partitioned_table", "pg_policy", "pg_proc", "pg_publication", "pg_publication_namespace",
    "pg_publication_rel", "pg_range", "pg_rewrite", "pg_roles", "pg_sequence", "pg_statistic_ext",
    "pg_tables", "pg_tablespace", "pg_trigger", "pg_type", "pg_views", "pg_shdescription",
})

#: information_schema views over the same
INFORMATION_SCHEMA = frozenset({
    "schemata", "tables", "columns", "views", "table_constraints", "key_column_usage",
    "referential_constraints", "constraint_column_usage", "check_constraints", "sequences",
    "element_types", "domains", "character_sets",
})

#: columns that are statistics (row and page estimates)
STATISTIC_COLUMNS = frozenset({"reltuples", "relpages", "relallvisible"})

#: relations refused with a reason of their own (the rest: "not on the catalog allowlist")
STATISTICS = ("pg_stat", "pg_statistic", "pg_stats")

#: functions of names, types and definitions (called as ``pg_catalog.f`` or ``f``)
CALLS = frozenset({
    "pg_get_userbyid", "pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible", "format_type",
    "pg_get_expr", "pg_get_indexdef", "pg_get_constraintdef", "pg_get_triggerdef", "pg_get_viewdef",
    "pg_get_ruledef", "pg_get_partkeydef", "pg_get_statisticsobjdef_columns", "pg_get_serial_sequence",
    "pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_get_function_result",
    "pg_relation_is_publishable", "pg_encoding_to_char", "array_to_string", "array_upper", "array_lower",
    "array_length", "obj_description", "col_description", "shobj_description", "quote_ident", "to_regclass",
    "to_regtype", "to_regnamespace", "current_schemas", "version", "current_database", "current_schema",
    "pg_is_in_recovery", "unnest", "generate_series", "string_agg", "array_agg", "pg_get_keywords",
    "json_build_object", "pg_collation_is_visible", "pg_opclass_is_visible", "pg_get_functiondef",
    "generate_subscripts", "bool_and", "bool_or",
})

#: sqlglot's own classes for some of the same functions
FUNC_CLASSES: tuple[type[exp.Func], ...] = (
    exp.CurrentVersion, exp.CurrentSchema, exp.CurrentDatabase, exp.CurrentUser, exp.SessionUser,
    exp.ArrayToString, exp.GroupConcat, exp.ExplodingGenerateSeries, exp.GenerateSeries, exp.Explode,
    exp.ArrayAgg, exp.Unnest, exp.ArraySize, exp.JSONObject, exp.LogicalAnd, exp.LogicalOr,
    # syntax that sqlglot models as functions
    exp.Any, exp.All, exp.Array, exp.Bracket, exp.RegexpLike, exp.RegexpILike, exp.Collate, exp.Exists,
)

#: types a catalog query may cast to (their input functions only look names up)
CAST_TYPES = frozenset({
    "regclass", "regtype", "regnamespace", "regproc", "regprocedure", "regrole", "regoper", "regoperator",
    "text", "oid", "name", "smallint", "int", "integer", "bigint", "int2", "int4", "int8", "boolean", "bool",
    '"char"', "char", "varchar", "oid[]", "smallint[]", "int2[]", "text[]", "name[]", "int2vector",
})

OPERATORS = frozenset({"~", "!~", "~*", "!~*", "=", "<>", "!=", "<", ">", "<=", ">="})

#: syntax of catalog queries, beyond what a query over a protected table may contain
NODES: tuple[type[exp.Expression], ...] = QUERY_NODES + (
    exp.Subquery, exp.Union, exp.Intersect, exp.Except, exp.With, exp.CTE, exp.Exists, exp.Any, exp.All,
    exp.Array, exp.Bracket, exp.RegexpLike, exp.RegexpILike, exp.Operator, exp.Collate, exp.Dot, exp.Tuple,
    exp.ObjectIdentifier, exp.Anonymous, exp.Func, exp.Join, exp.Boolean, exp.Null, exp.Window,
    exp.PartitionedByProperty, exp.BitwiseAnd, exp.Coalesce, exp.Filter, exp.ByteString,
)


def is_catalog(words: list[str]) -> bool:
    """Whether a statement's words name the catalog (it is then checked here, not by admit)."""
    return any(w in SCHEMAS or w.startswith("pg_") for w in words)


def _refuse(what: str, why: str, node: exp.Expression) -> None:
    raise QueryRejected(what, why, fragment=node.sql("postgres")[:200])


def check(tree: exp.Expression) -> None:
    """Refuse the first relation, function, column or construct of ``tree`` not on the lists."""
    if not isinstance(tree, exp.Query):
        _refuse(f"{tree.key.upper()} statement", "only read queries of the catalog are accepted", tree)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    tables = [t for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Identifier)]
    names = {t.alias_or_name.lower() for t in tables} | {t.name.lower() for t in tables}
    for t in tables:
        _check_relation(t, ctes)
    for node in tree.walk():
        if isinstance(node, exp.Column):
            name = node.name.lower()
            if name in STATISTIC_COLUMNS:
                _refuse(f"catalog column {name}", "it is a statistic of a table (its size)", node)
            if not node.table and name in names:
                _refuse("whole-row reference", f"{name} stands for every column of a row", node)
        elif isinstance(node, exp.Star) and any(t.name.lower() == "pg_class" for t in tables):
            _refuse("* over pg_class", "it includes statistics columns: name the columns", node)
        elif isinstance(node, exp.Cast):
            target = node.to.sql("postgres").lower().removeprefix("pg_catalog.")
            if target not in CAST_TYPES:
                _refuse(f"cast to {target}", "not on the catalog allowlist of types", node)
        elif isinstance(node, exp.Operator):
            op = node.args["operator"].sql("postgres") if isinstance(node.args.get("operator"), exp.Expression) \
                else str(node.args.get("operator"))
            if op.removeprefix("pg_catalog.").strip() not in OPERATORS:
                _refuse(f"operator {op}", "not on the catalog allowlist of operators", node)
        elif isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            if not (isinstance(node.this, exp.Identifier) and node.this.name.lower() == "pg_catalog"):
                _refuse(f"function {node.sql('postgres')[:60]}", "only pg_catalog functions are called", node)
        elif isinstance(node, exp.Anonymous):
            if str(node.this).lower() not in CALLS:
                _refuse(construct_name(node), "not on the catalog allowlist of functions (it could read data, "
                        "statistics or files, or run SQL)", node)
        elif isinstance(node, exp.Func) and not isinstance(node, QUERY_NODES + QUERY_FUNCTIONS + FUNC_CLASSES):
            _refuse(construct_name(node), "not on the catalog allowlist of functions", node)
        elif not isinstance(node, NODES):
            _refuse(construct_name(node), "not accepted in a catalog query", node)


def _check_relation(t: exp.Table, ctes: set[str]) -> None:
    name, schema = t.name.lower(), t.db.lower()
    if t.args.get("catalog"):
        _refuse("relation in another database", t.sql("postgres"), t)
    if not schema and name in ctes:
        return
    if name.startswith(STATISTICS) and name not in RELATIONS:
        _refuse(f"catalog relation {name}", "it exposes statistics or activity of tables", t)
    if schema == "information_schema":
        if name not in INFORMATION_SCHEMA:
            _refuse(f"relation information_schema.{name}", "not on the catalog allowlist", t)
        return
    if schema not in ("", "pg_catalog") or not name.startswith("pg_"):
        _refuse("user table in a catalog query", f"{t.sql('postgres')}: query tables and the catalog separately", t)
    if name not in RELATIONS:
        _refuse(f"catalog relation {name}", "not on the catalog allowlist (it could expose data, statistics or "
                "secrets)", t)
