"""Who may read what: the database itself refuses raw reads outside the pipeline.

The analyzer is one wall; this is the second. sqlanon holds two kinds of connections:

- the pipeline's, under a **reader role** (PostgreSQL, MariaDB: ``SET ROLE`` when the connection
  is made) that may read the protected tables and keep the catalog. Only statements sqlanon
  generated for the anonymization run there;
- everything else — pass-through, the finish query over released rows (RunContext gives up the
  role before it), whatever a proxy relays — runs under the **login's own identity**, which the
  administrator's grants (``sqlanon db grants``) keep from every protected table and from the
  catalog. On SQLite, which has no users, the connection's authorizer plays that part.

A query the analyzer wrongly takes for one over unprotected tables then fails with the
database's permission error instead of returning raw rows. ``enforce`` proves at connect time,
by reading each protected table and the catalog with the login's identity, that the database
refuses; a login that can read one is refused unless the caller opts out, loudly, for
development (``unrestricted=True``: every report then says so).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

import sqlalchemy as sa
from sqlglot import exp

from sqlanon.backends.connect import Database
from sqlanon.errors import BackendError
from sqlanon.policy.model import Policy

#: the reader role's name where the caller names none
DEFAULT_READER = "sqlanon_reader"
T = TypeVar("T")

#: the note every report of an unenforced session carries
UNENFORCED = ("the database does not refuse raw reads outside the pipeline (unrestricted=True, for development "
              "only): a fault of the analyzer would return raw rows")


def _ref(name: str, schema: str | None = None) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True),
                     db=exp.to_identifier(schema, quoted=True) if schema else None)


def protected_tables(db: Database, policy: Policy) -> list[str]:
    """The policy's tables as the database spells them (those it has)."""
    return [db.spelling[t.table.lower()] for t in policy.tables.values() if t.table.lower() in db.spelling]


def catalog_tables(db: Database) -> list[tuple[str, str | None]]:
    """sqlanon's own tables in the database: (name, schema)."""
    schema = db.backend.catalog_schema
    with db.engine.connect() as conn:  # one checkout (and liveness ping) for both questions
        insp = sa.inspect(conn)
        if schema is not None:
            return [(t, schema) for t in insp.get_table_names(schema=schema)] if insp.has_schema(schema) else []
        return [(t, None) for t in insp.get_table_names() if t.lower().startswith(db.backend.catalog_prefix)]


def _reads(db: Database, conn: Any, name: str, schema: str | None) -> bool:
    """Whether ``conn`` may read the table: True, False on the database's permission error; any
    other failure is no answer and raises."""
    cur = conn.cursor()
    try:
        cur.execute(db.backend.render(exp.select("1").from_(_ref(name, schema)).where(exp.false())))
        cur.fetchall()
        return True
    except Exception as e:  # noqa: BLE001 - every driver has its own error tree
        if db.backend.is_permission_error(e):
            return False
        raise BackendError(f"cannot tell whether {name} is readable: {e}") from None
    finally:
        cur.close()


def readable(db: Database, tables: list[tuple[str, str | None]], *, restricted: bool) -> list[str]:
    """Those of ``tables`` the given identity can read."""
    conn = db.restricted_connection() if restricted else db.raw_connection()
    try:
        return [n for n, s in tables if _reads(db, conn, n, s)]
    finally:
        conn.close()


def _alongside(work: Callable[[], T], meanwhile: Callable[[], None]) -> T:
    """``work`` in a thread while ``meanwhile`` runs in this one; ``meanwhile``'s failure comes
    first, as if it had run before."""
    out: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            out.append((True, work()))
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            out.append((False, e))

    thread = threading.Thread(target=run, name="sqlanon-login-check", daemon=True)
    thread.start()
    try:
        meanwhile()
    finally:
        thread.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value


def enforce(db: Database, policy: Policy, *, unrestricted: bool = False,
            meanwhile: Callable[[], None] = lambda: None) -> None:
    """Check that the database refuses the login's raw reads of ``policy``'s tables and of the
    catalog, and that the pipeline's identity reads the tables; raise naming the fault and the
    remedy otherwise. ``unrestricted``: a login that reads them serves anyway (development).

    ``meanwhile``: the caller's other checks, on the pipeline's connection; where the login's
    own connection is a new server session (a database with roles: the server starts a process
    and authenticates, SQLAlchemy asks the server what it is, ~20 ms on PostgreSQL), it is
    opened and asked in a thread meanwhile. Both finish before anything is judged."""
    tables = protected_tables(db, policy)
    db.denied.update(t.lower() for t in tables)
    guarded = [(t, None) for t in tables] + catalog_tables(db)
    if db.backend.roles:
        leaky = _alongside(lambda: readable(db, guarded, restricted=True), meanwhile)
    else:
        meanwhile()
        leaky = readable(db, guarded, restricted=True)
    if leaky:
        if unrestricted:
            db.enforced = False  # said in every report, and logged once a session answers a query
            return
        role = f" or the reader role {db.reader} is inherited" if db.reader else ""
        raise BackendError(
            f"the database lets this login read {', '.join(leaky)} outside the anonymization pipeline{role}: a "
            "fault of the analyzer would return raw rows. Give it only the grants of 'sqlanon db grants' (run by an "
            "administrator), or pass unrestricted=True (--unrestricted) for development only")
    blind = readable(db, [(t, None) for t in tables], restricted=False)
    missing = sorted(set(tables) - set(blind))
    if missing:
        role = f"the reader role {db.reader}" if db.reader else "this login, which could take on no reader role,"
        raise BackendError(f"{role} cannot read {', '.join(missing)}: run 'sqlanon db grants' as an administrator")


def grant_statements(db: Database, policy: Policy, login: str, reader: str = DEFAULT_READER, *,
                     unprotected: bool = True) -> list[str]:
    """The administrator's statements (``sqlanon db grants``): ``reader`` reads the protected
    tables and keeps the catalog, ``login`` may take it on and reads by itself only the other
    tables (with ``unprotected``; else their grants stay the administrator's)."""
    tables = protected_tables(db, policy)
    catalog = [n for n, _ in catalog_tables(db)]
    others = [db.spelling[t] for t in db.tables if db.spelling[t] not in tables] if unprotected else []
    return db.backend.grants(db.engine.url.database or "", login, reader, tables, others, catalog)


def apply_grants(db: Database, statements: list[str]) -> None:
    """Run the grants in one connection (as the administrator ``db`` connected as)."""
    conn = db.engine.raw_connection()
    try:
        cur = conn.cursor()
        for statement in statements:
            cur.execute(statement)  # no parameters: a MySQL host '%' is no placeholder
        cur.close()
    finally:
        conn.close()
