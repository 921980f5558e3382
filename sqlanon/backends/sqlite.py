"""SQLite: the embedded default. Needs SQLite >= 3.35 for math functions (LN, FLOOR), >= 3.39 for
RIGHT and FULL joins; the SQL:2003 statistics aggregates are defined on each connection."""
from __future__ import annotations

import hashlib
import math
import re
import sqlite3
from typing import Any

from sqlglot import exp

from sqlanon import interrupts
from sqlanon.backends import keyed_hash, sqlite_statistics
from sqlanon.backends.base import Backend


class SQLiteBackend(Backend):
    name = "sqlite"
    dialect = "sqlite"
    drop_many = False
    title = "SQLite"

    def fenced(self, select: exp.Select) -> exp.Select:
        # the query flattener leaves a subquery with a LIMIT alone (a differencing pass over a
        # joined selection on Adult: 3.5 s flattened, 0.7 s fenced)
        return select.limit(-1).offset(0)

    # no users, no roles: the connection's authorizer decides what a statement may read
    roles = False

    def assume(self, connection: Any, role: str) -> list[str]:
        # setting an authorizer expires every prepared statement, so none prepared under the
        # other identity runs again without being checked
        _driver(connection).set_authorizer(None)
        return []

    def relinquish(self, connection: Any, denied: frozenset[str], temp_tables: list[str]) -> list[str]:
        self.restrict(connection, denied)
        return []

    def restrict(self, connection: Any, denied: frozenset[str]) -> None:
        _driver(connection).set_authorizer(_authorizer(denied, self.catalog_prefix))

    def is_permission_error(self, error: Exception) -> bool:
        return isinstance(error, sqlite3.DatabaseError) and ("prohibited" in str(error) or "not authorized" in str(error))

    def fault(self, error: BaseException) -> str | None:
        if isinstance(error, sqlite3.OperationalError) and "user-defined" in str(error) and interrupts.noted():
            return "interrupted"  # a Ctrl-C inside one of the functions below (sqlanon.interrupts)
        # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes): another connection writes
        code = getattr(error, "sqlite_errorcode", None)
        if isinstance(error, sqlite3.OperationalError) and (
                (code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED))
                or "is locked" in str(error)):
            return "locked"
        return "refused" if isinstance(error, sqlite3.Error) else None

    def pseudonym(self, value: exp.Expression, key: bytes) -> exp.Expression:
        # in-process: the key goes to a function of this process (registered in session_setup)
        return exp.Anonymous(this="sqlanon_hmac", expressions=[exp.Literal.string(key.hex()), value.copy()])

    def begin(self) -> exp.Expression:
        # the write lock at once: a transaction that reads first and writes later may find
        # another writer in between and fail half-way instead of waiting at its start
        return exp.Transaction(this="IMMEDIATE")

    def session_setup(self, cursor: Any) -> None:
        cursor.execute("PRAGMA temp_store = MEMORY")
        # SQLAlchemy's pysqlite dialect replaces SQLite's FLOOR with math.floor, which raises on
        # NULL; SQL's FLOOR(NULL) is NULL (interval hierarchies over columns with NULLs).
        cursor.connection.create_function("floor", 1, interrupts.guarded(_floor), deterministic=True)
        # SQLite has no MD5: the catalog's row digests (Backend.row_digest)
        cursor.connection.create_function("md5", 1, interrupts.guarded(_md5), deterministic=True)
        # SQLite has no VAR_POP, STDDEV_SAMP, COVAR_POP, CORR, REGR_* …: defined here
        sqlite_statistics.register(cursor.connection, interrupts.guarded)
        # SQLite has no SHA-256: the pseudonym of a cross-database join's key (Backend.pseudonym)
        cursor.connection.create_function("sqlanon_hmac", 2, interrupts.guarded(_hmac), deterministic=True)


def _md5(x: str | None) -> str | None:
    return None if x is None else hashlib.md5(x.encode("utf-8")).hexdigest()  # noqa: S324 - a digest, no secret


def _hmac(key: str, x: object) -> str | None:
    return keyed_hash.pseudonym(bytes.fromhex(key), x)


def _floor(x: float | None) -> int | None:
    return None if x is None else math.floor(x)


def _driver(connection: Any) -> sqlite3.Connection:
    """The sqlite3 connection behind a pool's connection (or the connection itself)."""
    return getattr(connection, "driver_connection", connection)


#: a pipeline's temp table (RunContext.temp_name: the prefix, 8 hex digits of the run, a hint)
_RUN_TABLE = re.compile(r"sqlanon_[0-9a-f]{8}_")

#: what a restricted statement may do: read (the tables allowed), call functions, recurse
_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE,
            sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT, sqlite3.SQLITE_PRAGMA}


def _authorizer(denied: frozenset[str] | set[str], catalog_prefix: str) -> Any:
    """SQLite's authorizer for the restricted identity: no read of a protected table or of the
    catalog (in any attached database, through any view or trigger), nothing but reading.
    ``denied`` is read at every check, so a set that grows (a proxy client's own policy)
    applies at once."""
    def check(action: int, arg1: str | None, arg2: str | None, database: str | None, _source: str | None) -> int:
        if action not in _ALLOWED:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_READ and database != "temp" and arg1 is not None:
            # (a read of no column, as COUNT(*) makes, names no database at all)
            name = arg1.lower()
            catalog = name.startswith(catalog_prefix) and not (database is None and _RUN_TABLE.match(name))
            if name in denied or catalog or name == "sqlite_dbpage":
                return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA and arg2 is not None:
            return sqlite3.SQLITE_DENY  # a pragma that sets a value
        return sqlite3.SQLITE_OK
    return check
