"""SQLAlchemy's dialect for ``spark://`` URLs: engines, pools and reflection over spark_dbapi.

SQLAlchemy holds every engine sqlanon uses; this dialect lets it hold a Spark session too:
connections are child sessions (spark_dbapi), the tables and columns come from the session's
catalog, and DDL that SQLAlchemy writes (a test's CREATE TABLE) is quoted with backquotes.
There are no transactions (commit and rollback do nothing) and no keys.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import default
from sqlalchemy.sql import compiler

#: Spark's simple type names → SQLAlchemy types (what connect.Column's family needs)
TYPES: dict[str, Any] = {
    "tinyint": sa.SmallInteger, "smallint": sa.SmallInteger, "int": sa.Integer, "bigint": sa.BigInteger,
    "float": sa.Float, "double": sa.Float, "string": sa.String, "boolean": sa.Boolean, "date": sa.Date,
    "timestamp": sa.DateTime, "timestamp_ntz": sa.DateTime, "binary": sa.LargeBinary,
}


class SparkIdentifierPreparer(compiler.IdentifierPreparer):
    def __init__(self, dialect: Any):
        super().__init__(dialect, initial_quote="`", escape_quote="`")


class SparkTypeCompiler(compiler.GenericTypeCompiler):
    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:
        return "DOUBLE"

    def visit_TEXT(self, type_: Any, **kw: Any) -> str:
        return "STRING"

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        return "TIMESTAMP"


class SparkDialect(default.DefaultDialect):
    name = "spark"
    driver = "pyspark"
    supports_statement_cache = True
    supports_native_boolean = True
    supports_alter = False
    supports_sequences = False
    supports_native_decimal = True
    postfetch_lastrowid = False
    preparer = SparkIdentifierPreparer  # type: ignore[assignment]
    type_compiler_cls = SparkTypeCompiler
    default_paramstyle = "qmark"

    @classmethod
    def import_dbapi(cls) -> Any:
        from sqlanon.backends import spark_dbapi

        return spark_dbapi

    def create_connect_args(self, url: sa.URL) -> Any:
        conf = {k: str(v) for k, v in url.query.items() if k.startswith("spark.") or k in ("master", "parquet", "checkpoint")}
        return [], {"url": url.render_as_string(hide_password=True), "database": url.database or None, "conf": conf}

    # -- no transactions, nothing to ping ----------------------------------------------------
    def do_begin(self, dbapi_connection: Any) -> None:
        pass

    def do_commit(self, dbapi_connection: Any) -> None:
        pass

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass

    def do_ping(self, dbapi_connection: Any) -> bool:
        return not dbapi_connection.closed

    def get_isolation_level_values(self, dbapi_conn: Any) -> Any:
        return ["AUTOCOMMIT"]

    def get_isolation_level(self, dbapi_connection: Any) -> Any:
        return "AUTOCOMMIT"

    def set_isolation_level(self, dbapi_connection: Any, level: str) -> None:
        pass

    def _get_server_version_info(self, connection: Any) -> tuple[int, ...]:
        session = connection.connection.dbapi_connection.session
        return tuple(int(p) for p in session.version.split(".")[:3] if p.isdigit())

    def _get_default_schema_name(self, connection: Any) -> str:
        return str(connection.connection.dbapi_connection.session.catalog.currentDatabase())

    # -- reflection from the session's catalog ----------------------------------------------
    @staticmethod
    def _session(connection: Any) -> Any:
        return connection.connection.dbapi_connection.session

    def _tables(self, connection: Any, schema: str | None, kind: str) -> list[str]:
        # SHOW TABLES, not catalog.listTables, which asks the catalog again for every table
        session = self._session(connection)
        where = f" IN {_name(schema)}" if schema else ""
        views = {r.viewName for r in session.sql(f"SHOW VIEWS{where}").collect() if not r.isTemporary}
        if kind == "view":
            return sorted(views)
        return [r.tableName for r in session.sql(f"SHOW TABLES{where}").collect()
                if not r.isTemporary and r.tableName not in views]

    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return self._tables(connection, schema, "table")

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return self._tables(connection, schema, "view")

    def get_schema_names(self, connection: Any, **kw: Any) -> list[str]:
        return [d.name for d in self._session(connection).catalog.listDatabases()]

    def has_table(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        return bool(self._session(connection).catalog.tableExists(_name(table_name, schema)))

    def has_schema(self, connection: Any, schema_name: str, **kw: Any) -> bool:
        return bool(self._session(connection).catalog.databaseExists(schema_name))

    def get_columns(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> Any:
        out = []
        for f in self._session(connection).table(_name(table_name, schema)).schema.fields:
            simple = f.dataType.simpleString()
            base = simple.split("(")[0]
            if base == "decimal":
                precision, scale = f.dataType.precision, f.dataType.scale
                kind: Any = sa.Numeric(precision, scale)
            elif base in ("varchar", "char"):
                kind = sa.String()
            else:
                kind = TYPES.get(base, sa.types.NullType)()
            out.append({"name": f.name, "type": kind, "nullable": f.nullable, "default": None})
        return out

    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> Any:
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_unique_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_check_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        return []


def _name(name: str, schema: str | None = None) -> str:
    """``schema.name`` quoted for Spark."""
    quoted = "`" + name.replace("`", "``") + "`"
    return f"{_name(schema)}.{quoted}" if schema else quoted
