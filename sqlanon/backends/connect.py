"""Open a database by SQLAlchemy URL: engine, backend, and the schema the analyzer resolves against."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from sqlanon.backends import REGISTRY, Backend
from sqlanon.errors import BackendError

VERSION_SQL = {"sqlite": "SELECT sqlite_version()", "postgresql": "SELECT version()", "mysql": "SELECT VERSION()",
               "spark": "SELECT version()"}


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
    #: the role every connection of ``engine`` has taken on: the pipeline's identity, which may
    #: read protected tables (None: the login's own, on SQLite or without a reader role)
    reader: str | None = None
    #: lower-cased names of the tables the restricted identity may not read (SQLite's
    #: authorizer reads it; on the others the grants decide and sqlanon.access checks them)
    denied: set[str] = field(default_factory=set)
    #: the database itself refuses raw reads outside the pipeline (sqlanon.access); False only
    #: under the development opt-out ``unrestricted=True``
    enforced: bool = True
    #: connections under the login's own identity, for statements sqlanon did not generate
    #: for the pipeline (pass-through); made on first use
    _restricted: sa.Engine | None = None

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
        """A connection with the pipeline's identity (the reader role)."""
        return self.engine.raw_connection()

    def restricted_connection(self) -> Any:
        """A connection with the login's own identity, which cannot read protected tables."""
        if self._restricted is None:
            engine = sa.create_engine(self.engine.url, **_engine_options(self.engine.url))
            backend, denied = self.backend, self.denied

            @sa.event.listens_for(engine, "connect")
            def _setup(dbapi_conn: Any, _record: Any) -> None:
                _session_setup(backend, dbapi_conn)
                backend.restrict(dbapi_conn, denied)  # type: ignore[arg-type]

            self._restricted = engine
        return self._restricted.raw_connection()

    def refresh_schema(self) -> None:
        """Every table's columns, through one connection: the columns of all tables in one
        statement where the dialect can (PostgreSQL), not one statement and one checkout (each a
        liveness ping) per table."""
        tables: dict[str, list[Column]] = {}
        # the catalog's own tables (schema sqlanon, or prefixed beside the user's) are no table
        # a query may name: the release and audit logs are not data to read through sqlanon
        prefix = self.backend.catalog_prefix if self.backend.catalog_schema is None else None
        with self.engine.connect() as conn:
            insp = sa.inspect(conn)
            names = [n for n in insp.get_table_names() if not (prefix and n.lower().startswith(prefix))]
            found = insp.get_multi_columns(filter_names=names) if names else {}
            views = insp.get_view_names()
        for name in names:
            if (None, name) not in found:
                continue  # dropped meanwhile: no table to read
            tables[name.lower()] = [Column(c["name"], _type_name(c["type"]), _family(c["type"]))
                                    for c in found[(None, name)]]
            self.spelling[name.lower()] = name
        self.tables = tables
        self.views = {v.lower() for v in views}
        self.keys = {}

    def dispose(self) -> None:
        self.engine.dispose()
        if self._restricted is not None:
            self._restricted.dispose()


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


def _engine_options(u: sa.URL) -> dict[str, Any]:
    # pre_ping: a pooled connection the database has closed (a restart, an idle timeout, an
    # administrator's kill) is replaced before use, never handed to a run that would fail on it
    kwargs: dict[str, Any] = {"isolation_level": "AUTOCOMMIT", "pool_pre_ping": True}
    if u.get_backend_name() in ("mysql", "mariadb"):
        kwargs["connect_args"] = {"charset": "utf8mb4"}
    if u.get_backend_name() == "postgresql" and u.get_driver_name() in ("psycopg", "psycopg2"):
        # hstore values come as the server writes them, not as dicts: looking the type up took a
        # transaction of three round trips at each engine's first connection, for a type no
        # pipeline statement reads
        kwargs["use_native_hstore"] = False
    return kwargs


def _session_setup(backend: Backend, dbapi_conn: Any, role: str | None = None) -> None:
    cur = dbapi_conn.cursor()
    try:
        backend.session_setup(cur)
        for statement in backend.assume(dbapi_conn, role) if role is not None else ():
            cur.execute(statement)
    finally:
        cur.close()


def open_database(url: str, reader: str | None = None, *, new: bool = False) -> Database:
    """``reader``: the role the pipeline takes on, where the database has roles; when the login
    cannot take it on, connections keep the login's identity (sqlanon.access decides whether
    that may serve). ``new``: a SQLite file that does not exist yet is made (a database that
    keeps only sqlanon's catalog, ``sqlanon db upgrade --catalog``)."""
    try:
        u = make_url(url)
    except sa.exc.ArgumentError as e:
        raise BackendError(f"not a database URL: {e}") from None
    family = u.get_backend_name()
    cls = REGISTRY.get(family)
    if cls is None:
        raise BackendError(f"unsupported database {family!r} (sqlite, postgresql, mysql/mariadb, spark)")
    if family == "sqlite" and u.database not in (None, "", ":memory:") and not new and not Path(u.database).is_file():
        # SQLite would create an empty file: a mistyped path is no database to anonymize
        raise BackendError(f"no SQLite database at {u.database}: sqlanon opens existing databases only")
    backend = cls()
    u = backend.take_options(u)
    engine = sa.create_engine(u, **_engine_options(u))
    role = reader if backend.roles else None
    probed = False

    @sa.event.listens_for(engine, "connect")
    def _setup(dbapi_conn: Any, _record: Any) -> None:
        # The first connection (SQLAlchemy makes it alone) learns what the server is, on which
        # the session settings depend (MariaDB or MySQL), and whether the login may take on the
        # reader role; then it serves as every later one does: no probe connection of its own
        # (a connection costs the server a process and an authentication: 7-20 ms on PostgreSQL)
        nonlocal role, probed
        if probed:
            _session_setup(backend, dbapi_conn, role)
            return
        cur = dbapi_conn.cursor()
        try:
            cur.execute(VERSION_SQL[cls.name])
            backend.server_version = str(cur.fetchone()[0])
        finally:
            cur.close()
        if backend.unsupported() is not None:
            return  # refused below, before any setting
        _session_setup(backend, dbapi_conn)
        if role is not None:
            cur = dbapi_conn.cursor()
            try:
                for statement in backend.assume(dbapi_conn, role):
                    cur.execute(statement)
            except engine.dialect.loaded_dbapi.Error:
                role = None  # not a role this login may take on: sqlanon.access says so
            finally:
                cur.close()
        probed = True

    try:
        with engine.connect():
            pass
    except sa.exc.DBAPIError as e:
        engine.dispose()
        raise BackendError(f"cannot connect to {u.render_as_string(hide_password=True)}: {e.orig}") from None
    why = backend.unsupported()
    if why is not None:
        engine.dispose()
        raise BackendError(f"{u.render_as_string(hide_password=True)}: {why}")

    db = Database(url=u.render_as_string(hide_password=True), engine=engine, backend=backend, reader=role)
    db.refresh_schema()
    return db
