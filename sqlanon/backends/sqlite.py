"""SQLite: the embedded default. Needs SQLite >= 3.35 for math functions (LN, FLOOR), >= 3.39 for
RIGHT and FULL joins; the SQL:2003 statistics aggregates are defined on each connection."""
from __future__ import annotations

import math
from typing import Any

from sqlglot import exp

from sqlanon.backends import sqlite_statistics
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

    def session_setup(self, cursor: Any) -> None:
        cursor.execute("PRAGMA temp_store = MEMORY")
        # SQLAlchemy's pysqlite dialect replaces SQLite's FLOOR with math.floor, which raises on
        # NULL; SQL's FLOOR(NULL) is NULL (interval hierarchies over columns with NULLs).
        cursor.connection.create_function("floor", 1, _floor, deterministic=True)
        # SQLite has no VAR_POP, STDDEV_SAMP, COVAR_POP, CORR, REGR_* …: defined here
        sqlite_statistics.register(cursor.connection)


def _floor(x: float | None) -> int | None:
    return None if x is None else math.floor(x)
