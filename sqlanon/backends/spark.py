"""Apache Spark SQL (3.4 or later) through pyspark: the same pipelines, run as distributed SQL over
the tables of a Spark session's catalog (Parquet, Delta, Hive tables).

How the pieces of a database map onto Spark (spark_dbapi, spark_dialect, spark_session):

- a connection is a child session of the process's Spark session; a temp table is rows computed
  once into the executors' block stores (``localCheckpoint``) and named as a session temp view,
  dropped with the run; writes into such a table (a loop's INSERT, UPDATE, DELETE) compute its
  new rows and name them in its place;
- a server-side loop (PL/pgSQL, a MariaDB compound statement) is a loop of rounds driven from
  here, as on SQLite: each round is a handful of statements, each a Spark job over the data;
- recursive CTEs do not exist in Spark 3: the (α,k) history is resolved by a loop, as on MariaDB;
- there are no transactions: a stored release (``materialize``, a Parquet table) is made and,
  on a failure, dropped again (transactional_ddl);
- there are no privileges. What replaces the reader role and the login's grants: the Spark
  session is opened and held by sqlanon in this process; the pipeline's generated statements
  are the only ones that run on an unrestricted connection; everything else (pass-through,
  the finish query, a check of readability) runs on a restricted connection, where Spark's own
  analysis of the statement must be a query that reads no protected table and no file by path
  (spark_guard). A bug in sqlanon's analyzer then meets a permission error, as on the other
  databases. What this cannot stop: code of the same process that holds the session itself
  (``spark.table(...)``) or reads the files under the warehouse — those are the application's,
  as a DBA's superuser account is on the other databases;
- sqlanon's catalog (release log, audit, budgets, stored policies) needs transactions and row
  writes Spark does not have: it is refused by name, and with it what needs it (differencing
  against earlier releases, the budget ledger of differential privacy); the proxies refuse
  Spark too (their listeners serve PostgreSQL and MariaDB only).
"""
from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from sqlanon.backends import spark_dbapi
from sqlanon.backends.base import Backend
from sqlanon.sql.templates import table


class SparkBackend(Backend):
    name = "spark"
    title = "Spark SQL"
    dialect = "spark"
    # DROP TABLE names one table
    drop_many = False
    # Spark inlines a CTE at every reference: the Mondrian cut on Adult, CTEs within CTEs, ran
    # the driver out of memory planning it. Kept in tables, each is computed once.
    ctes_in_pipelines = False
    grouping_sets = True
    subqueries_are_jobs = True
    refill_reads_old = True
    # no recursive CTE before Spark 4
    fast_recursion = False
    transactional_ddl = False
    keeps_catalog = False
    proxied = False
    roles = False

    def unsupported(self) -> str | None:
        found = re.match(r"(\d+)\.(\d+)", self.server_version)
        if found is None or (int(found.group(1)), int(found.group(2))) < (3, 4):
            return f"Spark {self.server_version or '(version unknown)'} is not supported: Spark 3.4 or later is"
        return None

    def create_temp_table(self, name: str, select: exp.Query) -> exp.Create:
        # CACHE TABLE … AS SELECT: the connection computes the rows and names them (spark_dbapi)
        return exp.Cache(this=table(name), expression=select, lazy=False)  # type: ignore[return-value]

    def refill(self, name: str, select: exp.Expression) -> list[exp.Expression]:
        # the rows are computed anew and named in place of the old ones (spark_dbapi.keep): one
        # job, where emptying and inserting took two statements
        return [exp.Cache(this=table(name), expression=select, lazy=False)]

    def view(self, name: str, select: exp.Expression) -> exp.Expression | None:
        # read by name when a statement runs: the tables it reads as they are then
        return exp.Create(this=table(name), kind="VIEW", expression=select, replace=True,
                          properties=exp.Properties(expressions=[exp.TemporaryProperty()]))

    def render(self, e: exp.Expression) -> str:
        return super().render(e.transform(_spark_forms, copy=False))

    def stored_table_properties(self) -> list[exp.Expression]:
        return [exp.FileFormatProperty(this=exp.Var(this="PARQUET"))]

    # -- who may read what: the restricted connection's guard (spark_guard) -------------------
    def assume(self, connection: Any, role: str) -> list[str]:
        _driver(connection).denied = None
        return []

    def relinquish(self, connection: Any, denied: frozenset[str], temp_tables: list[str]) -> list[str]:
        self.restrict(connection, denied)
        # the release alone: the pipeline's other tables are the connection's too
        _driver(connection).readable = frozenset(name.lower() for name in temp_tables)
        return []

    def restrict(self, connection: Any, denied: frozenset[str]) -> None:
        # a catalog name sqlanon's own (none is made on Spark, but none is read either)
        driver = _driver(connection)
        driver.denied = frozenset(denied)
        driver.readable = frozenset()

    def is_permission_error(self, error: Exception) -> bool:
        return isinstance(getattr(error, "orig", error), spark_dbapi.PermissionDenied)

    # -- session ----------------------------------------------------------------------------
    def session_setup(self, cursor: Any) -> None:
        # what the spark dialect of sqlglot writes for: NULL, not an error, for a bad cast or a
        # division by zero (Spark 4 turns ANSI mode on by default)
        cursor.execute("SET spark.sql.ansi.enabled = false")

    def fault(self, error: BaseException) -> str | None:
        if isinstance(error, spark_dbapi.OperationalError):
            return "lost"
        return "refused" if isinstance(error, spark_dbapi.Error) else None

    def connection_open(self, connection: Any) -> bool:
        return not _driver(connection).closed


def _spark_forms(node: exp.Expression) -> exp.Expression:
    """What Spark writes differently from the SQL sqlanon builds: a row number over no order
    (any order will do, says the statement) is one over NULL, since Spark wants an ORDER BY."""
    if isinstance(node, exp.Window) and isinstance(node.this, exp.RowNumber) and not node.args.get("order"):
        node.set("order", exp.Order(expressions=[exp.Ordered(this=exp.null())]))
    return node


def _driver(connection: Any) -> spark_dbapi.Connection:
    """The spark_dbapi connection behind a pool's connection (or the connection itself)."""
    return getattr(connection, "driver_connection", connection)
