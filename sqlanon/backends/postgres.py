"""PostgreSQL >= 13 through psycopg 3."""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlanon.backends.base import Backend


class PostgresBackend(Backend):
    name = "postgresql"
    dialect = "postgres"

    def binary_text(self, e: exp.Expression) -> exp.Expression:
        # Deterministic collations already compare equal only when bytes are equal, but sorting
        # (window functions over the selection) under a libc locale is several times slower
        # than under "C", which orders by bytes.
        return exp.Collate(this=e, expression=exp.to_identifier("C", quoted=True))

    def session_setup(self, cursor: Any) -> None:
        # Standard strings are what sqlglot writes; a server default of off would change them.
        cursor.execute("SET standard_conforming_strings = on")
        # Grouping and window sorts over the selection stay in memory (NOTES: 1.28 s -> 0.49 s).
        cursor.execute("SET work_mem = '256MB'")
        # Temp tables have no statistics, so the planner overestimates every pipeline statement
        # and JIT-compiles it: ~20 ms of compilation for a few ms of work, hundreds of times.
        cursor.execute("SET jit = off")
