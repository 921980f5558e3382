"""MySQL 8 and MariaDB >= 10.6 through PyMySQL.

There is no MariaDB dialect in sqlglot; both use ``mysql``. Differences that matter here:
- collation: the default ``utf8mb4_general_ci`` merges 'ABC', 'abc' and 'abc  ' in GROUP BY, so
  every class is formed on text converted to a binary, NO PAD collation (NOTES.md);
- a temporary table is dropped with DROP TEMPORARY TABLE, which never touches a base table.
"""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlanon.backends.base import Backend


class MySQLBackend(Backend):
    name = "mysql"
    dialect = "mysql"
    temporary_in_drop = True

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    @property
    def binary_collation(self) -> str:
        # utf8mb4_bin is PAD SPACE on both servers ('a' = 'a '); these two are NO PAD.
        return "utf8mb4_nopad_bin" if self.is_mariadb else "utf8mb4_0900_bin"

    def binary_text(self, e: exp.Expression) -> exp.Expression:
        converted = exp.cast(e, exp.DataType.build("CHAR CHARACTER SET utf8mb4", dialect="mysql"))
        return exp.Collate(this=converted, expression=exp.Var(this=self.binary_collation))

    def cell_key(self, e: exp.Expression) -> exp.Expression:
        # MariaDB hash-joins only keys of bounded declared length (~3 KB); the encoding of six
        # text columns exceeds it and the join falls back to nested loops (46 s on Adult).
        # SHA-256 keeps the key short; a collision would merge two cells, which verification
        # of the released rows would still catch before anything is released.
        return self.binary_text(exp.SHA2(this=e, length=exp.Literal.number(256)))

    def temp_table_properties(self) -> list[exp.Expression]:
        # InnoDB temp tables cost ~7x PostgreSQL's (NOTES.md); Aria keeps TEXT columns and is faster.
        return [exp.EngineProperty(this=exp.Var(this="Aria"))] if self.is_mariadb else []

    def session_setup(self, cursor: Any) -> None:
        # sqlglot writes backticks and backslash escapes: make sure the server reads them so.
        cursor.execute(
            "SET SESSION sql_mode = REPLACE(REPLACE(@@sql_mode, 'ANSI_QUOTES', ''), "
            "'NO_BACKSLASH_ESCAPES', '')"
        )
        if self.is_mariadb:
            # Pipeline temp tables carry no indexes: allow hash joins (BNLH) instead of block
            # nested loops, which are quadratic in the frequency table's size.
            cursor.execute("SET SESSION join_cache_level = 8")
            # The hash table of a join holds the smaller side (a plan of ~30k cells); when it
            # does not fit, the large side is scanned once per refill (54 s instead of 2 s at 1 M).
            cursor.execute("SET SESSION join_buffer_space_limit = 1073741824")
            cursor.execute("SET SESSION join_buffer_size = 268435456")
        cursor.execute("SET SESSION tmp_table_size = 536870912")
        cursor.execute("SET SESSION max_heap_table_size = 536870912")
        cursor.execute("SET SESSION sort_buffer_size = 33554432")
        cursor.execute("SET NAMES utf8mb4")
