"""PostgreSQL >= 13 through psycopg 3."""
from __future__ import annotations

import re
import secrets
from typing import Any

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.errors import BackendError

#: dollar quote of a server-side loop's body
_TAG = "$sqlanon_loop$"


def _hash(values: list[exp.Expression]) -> exp.Expression:
    """XOR of seeded 64-bit hashes of the values' text (NULL hashes to a seeded constant)."""
    out: exp.Expression | None = None
    for v in values:
        h = exp.func("COALESCE", exp.Anonymous(this="HASHTEXTEXTENDED", expressions=[
            _bytes_text(v), exp.Literal.number(secrets.randbits(62))]),
            exp.Literal.number(secrets.randbits(62)))
        out = h if out is None else exp.BitwiseXor(this=out, expression=h)
    return out if out is not None else exp.Literal.number(0)


def _bytes_text(v: exp.Expression) -> exp.Expression:
    # hashed under "C": a nondeterministic collation would hash 'a' and 'A' alike
    return exp.Collate(this=exp.cast(v.copy(), "TEXT"), expression=exp.to_identifier("C", quoted=True))


class PostgresBackend(Backend):
    name = "postgresql"
    dialect = "postgres"
    catalog_schema = "sqlanon"
    catalog_prefix = ""
    truncate = True
    zips_arrays = True
    grouping_sets = True
    ctes_in_pipelines = True
    title = "PostgreSQL"

    @property
    def presorts_aggregates(self) -> bool:
        # added in 16; before, every aggregate ORDER BY sorts apart, and the others see the rows
        # as the GROUP BY's own sort left them
        found = re.match(r"PostgreSQL (\d+)", self.server_version)
        return found is None or int(found.group(1)) >= 16

    def binary_text(self, e: exp.Expression) -> exp.Expression:
        # Deterministic collations already compare equal only when bytes are equal, but sorting
        # (window functions over the selection) under a libc locale is several times slower
        # than under "C", which orders by bytes.
        return exp.Collate(this=e, expression=exp.to_identifier("C", quoted=True))

    def fenced(self, select: exp.Select) -> exp.Select:
        # OFFSET 0 keeps the planner from pulling the subquery up (a differencing pass over a
        # joined selection ran each selection's subquery once per reference: 4 times, not 1)
        return select.offset(0)

    def cell_key(self, values: list[exp.Expression]) -> tuple[exp.Expression, exp.Expression | None]:
        # Building a text encoding of every row costs more than the rest of the pushdown (2.7 s
        # vs 1.1 s for 1 M rows); a 64-bit hash per column, seeded at random per run and XORed,
        # costs ~0.2 s. The check is a second hash with other seeds.
        return _hash(values), _hash(values)

    def loop(self, condition: str, body: list[str], hash_joins: bool = False) -> str | None:
        # An anonymous PL/pgSQL block: one round trip for a loop of hundreds of passes.
        text = f"WHILE ({condition}) LOOP " + " ".join(f"{b};" for b in body) + " END LOOP;"
        return self._block(text, hash_joins)

    def hash_joined(self, statement: str) -> str:
        return self._block(f"{statement};", True)

    def _block(self, text: str, hash_joins: bool) -> str:
        if _TAG in text:
            raise BackendError("a generated statement contains its own quoting tag")
        if not hash_joins:
            return f"DO {_TAG}BEGIN {text} END{_TAG}"
        # Temp tables and CTEs have no statistics: the planner takes a pipeline table for a row
        # or two and joins thousands of rows in nested loops (0.5 s instead of 10 ms per pass),
        # or sorts a large table once per pass of a recursive CTE to merge-join it. The settings
        # hold for the block only, and are undone with the transaction on an error.
        return (f"DO {_TAG}DECLARE nl text := current_setting('enable_nestloop'); "
                f"mj text := current_setting('enable_mergejoin'); BEGIN "
                f"PERFORM set_config('enable_nestloop', 'off', false); "
                f"PERFORM set_config('enable_mergejoin', 'off', false); {text} "
                f"PERFORM set_config('enable_nestloop', nl, false); "
                f"PERFORM set_config('enable_mergejoin', mj, false); END{_TAG}")

    def session_setup(self, cursor: Any) -> None:
        # Standard strings are what sqlglot writes; a server default of off would change them.
        cursor.execute("SET standard_conforming_strings = on")
        # Grouping and window sorts over the selection stay in memory (NOTES: 1.28 s -> 0.49 s).
        cursor.execute("SET work_mem = '256MB'")
        # Temp tables have no statistics, so the planner overestimates every pipeline statement
        # and JIT-compiles it: ~20 ms of compilation for a few ms of work, hundreds of times.
        cursor.execute("SET jit = off")
