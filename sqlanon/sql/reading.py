"""Measurements of a stored table (``discover``, ``risk``): statements on one connection of the
pipeline's identity, aggregates only.

A ``Reading`` sends generated statements (sqlglot trees, written by the backend) and returns
their rows, which are counts and other aggregates by construction of the callers; it may
create temp tables (a random sample) and drops them when it closes, also after an error.
"""
from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from sqlglot import exp

from sqlanon.backends.connect import Database
from sqlanon.errors import BackendError
from sqlanon.sql.templates import col

#: guards the counters of a reading that other threads' readings add to
_COUNTING = threading.Lock()


class Reading:
    def __init__(self, db: Database):
        self.db = db
        self.backend = db.backend
        self._conn: Any = None
        self._temps: list[str] = []
        #: statements sent and their total time in seconds
        self.statements = 0
        self.seconds = 0.0

    def __enter__(self) -> "Reading":
        # the pipeline's identity (the reader role): these commands read the raw table
        self._conn = self.db.raw_connection()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._temps:
                cur = self._conn.cursor()
                try:
                    for drop in self.backend.drop_temp_tables(self._temps):
                        cur.execute(self.backend.render(drop))
                finally:
                    cur.close()
        finally:
            self._conn.close()

    def rows(self, statement: exp.Expression) -> list[tuple]:
        t0 = time.perf_counter()
        cur = self._conn.cursor()
        try:
            cur.execute(self.backend.render(statement))
            found = [tuple(r) for r in cur.fetchall()] if cur.description is not None else []
        except Exception as e:
            if self.backend.is_permission_error(e):
                who = f"the reader role {self.db.reader}" if self.db.reader else "this login (it took on no reader role)"
                raise BackendError(f"{who} may not read the table: discover and risk read the raw table as the "
                                   "anonymization pipeline does (--reader-role, or an administrator's --db)") from None
            raise
        finally:
            cur.close()
        self.statements += 1
        self.seconds += time.perf_counter() - t0
        return found

    def add(self, other: "Reading") -> None:
        """Count the statements another reading sent on this one's behalf (threads: under a lock)."""
        with _COUNTING:
            self.statements += other.statements
            self.seconds += other.seconds

    def one(self, statement: exp.Expression) -> tuple:
        return self.rows(statement)[0]

    def temp_table(self, select: exp.Expression, hint: str = "sample") -> str:
        """A temp table of this connection holding ``select``'s rows; dropped on close."""
        if not isinstance(select, exp.Query):
            raise TypeError("a temp table holds a query's rows")
        name = f"_sa_{hint}_{uuid.uuid4().hex[:10]}"
        self.rows(self.backend.create_temp_table(name, select))
        self._temps.append(name)
        return name

    def key(self, column: str, family: str) -> exp.Expression:
        """A column as classes are told apart: text compared byte for byte (as an attacker reads it)."""
        return self.backend.binary_text(col(column)) if family == "text" else col(column)
