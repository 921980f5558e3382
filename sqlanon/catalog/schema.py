"""The catalog's tables as the running code reads and writes them.

The migrations in ``migrations/versions/`` create them; these definitions must match the
head revision (a test compares them with what the migrations built). Where the database has
schemas the tables live in schema ``sqlanon``; elsewhere beside the user's tables, with the
prefix ``sqlanon_`` — names the analyzer never resolves, so no query can read the catalog.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from sqlanon.backends.base import Backend

#: a row's digest (Backend.row_digest): text, bytes on MariaDB/MySQL (sa.VARBINARY is the class
#: sqlalchemy.dialects.mysql exports, whose import took every start 52 ms under a load of 10)
ROW_KEY = sa.String(64).with_variant(sa.VARBINARY(64), "mysql", "mariadb")

#: the newest migration; a catalog at another revision is upgraded or refused, never guessed at
HEAD = "0004"


@dataclass(frozen=True)
class Names:
    schema: str | None
    prefix: str

    @classmethod
    def of(cls, backend: Backend) -> "Names":
        return cls(backend.catalog_schema, backend.catalog_prefix)

    def __call__(self, table: str) -> str:
        return self.prefix + table

    @property
    def version_table(self) -> str:
        return self("alembic_version")


@dataclass(frozen=True)
class Tables:
    policies: sa.Table
    releases: sa.Table
    audit: sa.Table
    selections: sa.Table
    selection_rows: sa.Table
    materializing: sa.Table
    dp_scopes: sa.Table
    dp_spends: sa.Table


def tables(names: Names) -> Tables:
    md = sa.MetaData(schema=names.schema)
    policies = sa.Table(
        names("policies"), md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        #: the table's policy as JSON, self-contained (taxonomies inline)
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("applied_at", sa.DateTime, nullable=False),
        sa.Column("applied_by", sa.String(200), nullable=False),
        sa.UniqueConstraint("table_name", "version", name=names("policies_version")),
    )
    releases = sa.Table(
        names("releases"), md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("front_end", sa.String(40), nullable=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        #: the pushed-down WHERE as sqlanon generated it (None: the whole table)
        sa.Column("predicate", sa.Text),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("method", sa.String(40), nullable=False),
        sa.Column("parameters", sa.Text, nullable=False),
        sa.Column("rows_in", sa.Integer, nullable=False),
        sa.Column("rows_released", sa.Integer, nullable=False),
        sa.Column("rows_suppressed", sa.Integer, nullable=False),
        sa.Column("classes", sa.Integer, nullable=False),
        #: the report as JSON: every measurement and the generalization levels used
        sa.Column("report", sa.Text, nullable=False),
        #: the table a materialized release was stored in (None: answered to a query)
        sa.Column("target", sa.String(200)),
        sa.Index(names("releases_table_at"), "table_name", "at"),
    )
    audit = sa.Table(
        names("audit"), md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("front_end", sa.String(40), nullable=False),
        sa.Column("sql", sa.Text, nullable=False),
        sa.Column("decision", sa.String(20), nullable=False),
        sa.Column("table_name", sa.String(200)),
        sa.Column("method", sa.String(40)),
        sa.Column("construct", sa.String(200)),
        sa.Column("message", sa.Text),
        sa.Column("seconds", sa.Float),
        sa.Column("rows", sa.Integer),
        sa.Index(names("audit_at"), "at"),
    )
    #: the rows each answer selected, by a digest of their key, for as long as a new selection
    #: is compared with it (catalog/differencing.py): a re-asked query after inserts or
    #: deletes, or any other selection, is compared with what was really released then
    selections = sa.Table(
        names("selections"), md,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Index(names("selections_table_at"), "table_name", "at"),
    )
    selection_rows = sa.Table(
        names("selection_rows"), md,
        sa.Column("selection_id", sa.BigInteger, nullable=False),
        sa.Column("row_key", ROW_KEY, nullable=False),
        sa.Index(names("selection_rows_key"), "selection_id", "row_key"),
    )
    #: the names a running ``materialize`` claims (its release's table, view, memory of rows)
    #: where DDL commits by itself: what a run that died left half-made (finish/store.py)
    materializing = sa.Table(
        names("materializing"), md,
        sa.Column("name", sa.String(200), primary_key=True),
        #: table, view or memory
        sa.Column("kind", sa.String(10), nullable=False),
        #: the protected table the release is of
        sa.Column("table_name", sa.String(200), nullable=False),
        #: the run (RunContext.run_id) that claims it: a run's names go together
        sa.Column("run", sa.String(16), nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
    )
    #: one row per protected table: a reservation of ε updates it first, and its lock
    #: serializes the table's reservations (catalog/budget.py)
    dp_scopes = sa.Table(
        names("dp_scopes"), md,
        sa.Column("table_name", sa.String(200), primary_key=True),
        sa.Column("at", sa.DateTime, nullable=False),
    )
    #: every ε reserved for a differentially private answer (sqlanon/dp/)
    dp_spends = sa.Table(
        names("dp_spends"), md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("epsilon", sa.Float, nullable=False),
        sa.Column("delta", sa.Float, nullable=False),
        sa.Index(names("dp_spends_table_at"), "table_name", "at"),
    )
    return Tables(policies, releases, audit, selections, selection_rows, materializing, dp_scopes, dp_spends)
