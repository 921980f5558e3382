"""SQLite: the embedded default. Needs SQLite >= 3.35 for math functions (LN, FLOOR)."""
from __future__ import annotations

from typing import Any

from sqlanon.backends.base import Backend


class SQLiteBackend(Backend):
    name = "sqlite"
    dialect = "sqlite"

    def session_setup(self, cursor: Any) -> None:
        cursor.execute("PRAGMA temp_store = MEMORY")

    def list_temp_tables(self, cursor: Any) -> list[str]:
        cursor.execute("SELECT name FROM sqlite_temp_master WHERE type = 'table'")
        return [r[0] for r in cursor.fetchall()]
