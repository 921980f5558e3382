"""Open a database by SQLAlchemy URL: engine, backend, and the schema the analyzer resolves against."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from sqlanon.backends import REGISTRY, Backend
from sqlanon.errors import BackendError

VERSION_SQL = {"sqlite": "SELECT sqlite_version()", "postgresql": "SELECT version()", "mysql": "SELECT VERSION()"}


@dataclass
class Column:
    name: str
    type: str
    #: text, numeric, date or other: what hierarchies and comparisons need to know
    family: str


@dataclass
class Database:
    url: str
    engine: sa.Engine
    backend: Backend
    #: lower-cased table name → columns in table order
    tables: dict[str, list[Column]] = field(default_factory=dict)
    #: lower-cased table name → the name as the database spells it
    spelling: dict[str, str] = field(default_factory=dict)
    #: lower-cased view names (never read by sqlanon; a name a new view must not take)
    views: set[str] = field(default_factory=set)
    #: lower-cased table name → its primary key columns, read when first asked
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def columns(self, table: str) -> dict[str, Column]:
        return {c.name: c for c in self.tables.get(table.lower(), [])}

    def sqlglot_schema(self) -> dict[str, dict[str, str]]:
        return {t: {c.name: c.type for c in cols} for t, cols in self.tables.items()}

    def primary_key(self, table: str) -> tuple[str, ...]:
        """The table's primary key columns (empty: it has none), read once per schema refresh."""
        name = table.lower()
        if name not in self.keys:
            spelled = self.spelling.get(name, table)
            self.keys[name] = tuple(sa.inspect(self.engine).get_pk_constraint(spelled)["constrained_columns"])
        return self.keys[name]

    def raw_connection(self) -> Any:
        return self.engine.raw_connection()

    def refresh_schema(self) -> None:
        insp = sa.inspect(self.engine)
        tables: dict[str, list[Column]] = {}
        # the catalog's own tables (schema sqlanon, or prefixed beside the user's) are no table
        # a query may name: the release and audit logs are not data to read through sqlanon
        prefix = self.backend.catalog_prefix if self.backend.catalog_schema is None else None
        for name in insp.get_table_names():
            if prefix and name.lower().startswith(prefix):
                continue
            cols = []
            for c in insp.get_columns(name):
                cols.append(Column(c["name"], _type_name(c["type"]), _family(c["type"])))
            tables[name.lower()] = cols
            self.spelling[name.lower()] = name
        self.tables = tables
        self.views = {v.lower() for v in insp.get_view_names()}
        self.keys = {}

    def dispose(self) -> None:
        self.engine.dispose()


def _type_name(t: sa.types.TypeEngine) -> str:
    try:
        return str(t.compile()).split("(")[0]
    except Exception:  # noqa: BLE001 - a type SQLAlchemy cannot print is still a column
        return "UNKNOWN"


def _family(t: sa.types.TypeEngine) -> str:
    if isinstance(t, (sa.Integer, sa.Numeric, sa.Float)):
        return "numeric"
    if isinstance(t, (sa.Date, sa.DateTime)):
        return "date"
    if isinstance(t, (sa.String, sa.Text, sa.Enum)):
        return "text"
    return "other"


def open_database(url: str) -> Database:
    try:
        u = make_url(url)
    except sa.exc.ArgumentError as e:
        raise BackendError(f"not a database URL: {e}") from None
    family = u.get_backend_name()
    cls = REGISTRY.get(family)
    if cls is None:
        raise BackendError(f"unsupported database {family!r} (sqlite, postgresql, mysql/mariadb)")
    kwargs: dict[str, Any] = {"isolation_level": "AUTOCOMMIT"}
    if family in ("mysql", "mariadb"):
        kwargs["connect_args"] = {"charset": "utf8mb4"}
    engine = sa.create_engine(u, **kwargs)
    backend = cls()

    try:
        with engine.connect() as c:
            backend.server_version = str(c.exec_driver_sql(VERSION_SQL[cls.name]).scalar())
    except sa.exc.DBAPIError as e:
        engine.dispose()
        raise BackendError(f"cannot connect to {u.render_as_string(hide_password=True)}: {e.orig}") from None
    # Session settings depend on the server (MariaDB or MySQL): every pooled connection from
    # here on gets them; the probe connection above is closed, never reused.
    engine.dispose()

    @sa.event.listens_for(engine, "connect")
    def _setup(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        try:
            backend.session_setup(cur)
        finally:
            cur.close()

    db = Database(url=u.render_as_string(hide_password=True), engine=engine, backend=backend)
    db.refresh_schema()
    return db
