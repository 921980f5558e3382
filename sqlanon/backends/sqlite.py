"""SQLite: the embedded default. Needs SQLite >= 3.35 for math functions (LN, FLOOR)."""
from __future__ import annotations

import math
from typing import Any

from sqlanon.backends.base import Backend


class SQLiteBackend(Backend):
    name = "sqlite"
    dialect = "sqlite"
    drop_many = False

    def session_setup(self, cursor: Any) -> None:
        cursor.execute("PRAGMA temp_store = MEMORY")
        # SQLAlchemy's pysqlite dialect replaces SQLite's FLOOR with math.floor, which raises on
        # NULL; SQL's FLOOR(NULL) is NULL (interval hierarchies over columns with NULLs).
        cursor.connection.create_function("floor", 1, _floor, deterministic=True)


def _floor(x: float | None) -> int | None:
    return None if x is None else math.floor(x)
