"""PostgreSQL >= 13 through psycopg 3."""
from __future__ import annotations

import re
import secrets
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator

import psycopg
from sqlglot import exp

from sqlanon.backends import keyed_hash
from sqlanon.backends.base import Backend, WholeAnswer
from sqlanon.errors import BackendError

#: dollar quote of a server-side loop's body
_TAG = "$sqlanon_loop$"
#: the first key of sqlanon's advisory locks ('SQAN'): other applications' locks use other keys
_LOCKS = 0x5351414E
#: SQLSTATEs of a session the server ended (admin_shutdown, crash_shutdown, cannot_connect_now)
_ENDED = {"57P01", "57P02", "57P03"}
#: SQLSTATEs of a wait for another session: deadlock, lock not available, serialization failure
_LOCKED = {"40P01", "55P03", "40001"}
#: rows a chunk of an answer read whole (answer_reader): large enough that a chunk's own cost
#: (one result from libpq, its loaders) is nothing beside its rows' conversion
ANSWER_CHUNK = 10_000


def _hash(values: list[exp.Expression]) -> exp.Expression:
    """XOR of seeded 64-bit hashes of the values' text (NULL hashes to a seeded constant)."""
    out: exp.Expression | None = None
    for v in values:
        h = exp.func("COALESCE", exp.Anonymous(this="HASHTEXTEXTENDED", expressions=[
            _bytes_text(v), exp.Literal.number(secrets.randbits(62))]),
            exp.Literal.number(secrets.randbits(62)))
        out = h if out is None else exp.BitwiseXor(this=out, expression=h)
    return out if out is not None else exp.Literal.number(0)


def _stable_hash(values: list[exp.Expression]) -> exp.Expression:
    """XOR of 64-bit hashes of the values' text under fixed seeds, one per position: the same
    row hashes the same in every run (what the catalog keeps of it must compare across runs)."""
    out: exp.Expression | None = None
    for i, v in enumerate(values):
        seed = (0x9E3779B97F4A7C15 * (i + 1)) % (1 << 62)
        h = exp.func("COALESCE", exp.Anonymous(this="HASHTEXTEXTENDED", expressions=[
            _bytes_text(v), exp.Literal.number(seed)]), exp.Literal.number(seed ^ 0x5555555555555555))
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
    hashed_cell_key = True
    counts_created_rows = True
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

    def cell_key(self, values: list[exp.Expression]) -> exp.Expression:
        # Building a text encoding of every row costs more than the rest of the pushdown (2.7 s
        # vs 1.1 s for 1 M rows); a 64-bit hash per column, seeded at random per run and XORed,
        # costs ~0.2 s.
        return _hash(values)

    def selection_view(self, name: str, select: exp.Select) -> exp.Expression | None:
        # security_invoker (15 and later): the view reads the protected table with the reader
        # role's privileges only while the pipeline holds that role. The copy it replaces cost
        # (α,k) at 1 M rows 0.34-0.37 s of server CPU, the count of the selection that verify
        # makes through the view instead 0.02-0.03 s.
        found = re.match(r"PostgreSQL (\d+)", self.server_version)
        if found is None or int(found.group(1)) < 15:
            return None
        invoker = exp.Property(this=exp.Var(this="security_invoker"), value=exp.true())
        return exp.Create(this=exp.Table(this=exp.to_identifier(name, quoted=True)), kind="VIEW", expression=select,
                          properties=exp.Properties(expressions=[exp.TemporaryProperty(), invoker]))

    def row_series(self, lo: exp.Expression, hi: exp.Expression) -> exp.Expression | None:
        # a function in FROM reads the columns of the tables before it (LATERAL implied); the
        # (α,k) release at 1 M rows: 0.80 s of server CPU joining and numbering the rows, 0.28 s
        # written from the plan's 28,535 ranges
        return exp.ExplodingGenerateSeries(start=lo, end=hi)

    def row_digest(self, values: list[exp.Expression]) -> exp.Expression:
        # 64 bits of stable hashes instead of the MD5 of the values' text (Adult, 22,851 rows of
        # 15 columns: 70 ms -> 23 ms for the selection's digests)
        return exp.cast(_stable_hash(values), "TEXT")

    def pseudonym(self, value: exp.Expression, key: bytes) -> exp.Expression:
        # no HMAC without pgcrypto; SHA256(bytea) is built in since PostgreSQL 11
        inner, outer = keyed_hash.pads(key)

        def sha(data: exp.Expression) -> exp.Expression:
            return exp.Anonymous(this="SHA256", expressions=[data])

        def raw(pad: bytes) -> exp.Expression:
            return exp.Anonymous(this="DECODE", expressions=[exp.Literal.string(pad.hex()), exp.Literal.string("hex")])

        text = exp.Anonymous(this="CONVERT_TO", expressions=[exp.cast(value.copy(), "TEXT"), exp.Literal.string("UTF8")])
        digest = sha(exp.DPipe(this=raw(outer), expression=sha(exp.DPipe(this=raw(inner), expression=text))))
        return exp.Substring(this=exp.Anonymous(this="ENCODE", expressions=[digest, exp.Literal.string("hex")]),
                             start=exp.Literal.number(1), length=exp.Literal.number(keyed_hash.DIGITS))

    def loop(self, condition: str, body: list[str], hash_joins: bool = False) -> str | None:
        # An anonymous PL/pgSQL block: one round trip for a loop of hundreds of passes. CTEs over
        # temp tables without statistics are estimated at a row or two, and nested loops over
        # thousands of rows follow (0.5 s instead of 10 ms per pass).
        text = f"WHILE ({condition}) LOOP " + " ".join(f"{b};" for b in body) + " END LOOP;"
        return self._block(text, ("enable_nestloop",) if hash_joins else ())

    def hash_joined(self, statement: str) -> str:
        # Also no merge joins: a recursive CTE's table was sorted and merge-joined at every pass
        # (the (α,k) history on Adult: 94 ms; hashed once, 54 ms).
        return self._block(f"{statement};", ("enable_nestloop", "enable_mergejoin"))

    def hash_grouped(self, statement: str) -> str:
        # 10 M Adult-like rows: 1 M groups estimated, 27,546 found; sorted (external merge, in
        # parallel) the frequency table took 10.9 s, hashed 3.1-3.3 s of server CPU
        return self._block(f"{statement};", ("enable_sort",))

    def _block(self, text: str, off: tuple[str, ...]) -> str:
        """``text`` as an anonymous block with the planner settings ``off`` turned off, for the
        block only: restored after it, and undone with the transaction on an error."""
        if _TAG in text:
            raise BackendError("a generated statement contains its own quoting tag")
        saved = [f"s{i}" for i in range(len(off))]
        declare = "".join(f"{v} text := current_setting('{o}'); " for v, o in zip(saved, off))
        before = "".join(f"PERFORM set_config('{o}', 'off', false); " for o in off)
        after = "".join(f"PERFORM set_config('{o}', {v}, false); " for v, o in zip(saved, off))
        return f"DO {_TAG}{'DECLARE ' + declare if off else ''}BEGIN {before}{text} {after}END{_TAG}"

    def analyze(self, name: str, columns: list[str]) -> str | None:
        # Autovacuum never analyzes temp tables. Without statistics the planner took Mondrian's
        # 23,736 cells joined to their labels for 1.3 M rows and merge-joined the 1 M rows after
        # two sorts (the release at 1 M rows: 0.82 s; with the join columns analyzed, hashed:
        # 0.24 s). Only the join columns: all forty of the cells took 0.15 s.
        return f"ANALYZE {self.ident(name)} ({', '.join(self.ident(c) for c in columns)})"

    def session_setup(self, cursor: Any) -> None:
        # One statement, one round trip at each new connection (set_config(…, false) is SET):
        # standard strings are what sqlglot writes, a server default of off would change them;
        # grouping and window sorts over the selection stay in memory (NOTES: 1.28 s -> 0.49 s);
        # temp tables have no statistics, so the planner overestimates every pipeline statement
        # and JIT-compiles it: ~20 ms of compilation for a few ms of work, hundreds of times.
        cursor.execute("SELECT set_config('standard_conforming_strings', 'on', false), "
                       "set_config('work_mem', '256MB', false), set_config('jit', 'off', false)")
        cursor.fetchall()

    def relinquish(self, connection: Any, denied: frozenset[str], temp_tables: list[str]) -> list[str]:
        # a temp table is owned by the role that created it; no other session can see it, so
        # granting it to PUBLIC lets exactly this session's login read it
        out = [f"GRANT SELECT ON TABLE {', '.join(self.ident(t) for t in temp_tables)} TO PUBLIC"] \
            if temp_tables else []
        return out + ["RESET ROLE"]

    def is_permission_error(self, error: Exception) -> bool:
        return getattr(error, "sqlstate", None) == "42501"

    def grants(self, database: str, login: str, reader: str, protected: list[str], unprotected: list[str],
               catalog: list[str]) -> list[str]:
        r, u = self.ident(reader), self.ident(login)
        if "$" in r:
            raise BackendError(f"role name {reader!r}: no '$' in a reader role's name")
        # NOINHERIT: the login holds the reader's privileges only while it has SET ROLE to it
        out = [f"DO $$BEGIN CREATE ROLE {r} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END$$",
               f"GRANT {r} TO {u}", f"ALTER ROLE {u} NOINHERIT",
               f"GRANT TEMPORARY, CREATE ON DATABASE {self.ident(database)} TO {r}",
               f"GRANT USAGE, CREATE ON SCHEMA public TO {r}"]
        if protected:
            names = ", ".join(self.ident(t) for t in protected)
            out += [f"REVOKE ALL ON TABLE {names} FROM PUBLIC, {u}", f"GRANT SELECT ON TABLE {names} TO {r}"]
        if catalog:
            schema = self.ident(self.catalog_schema or "public")
            out += [f"REVOKE ALL ON SCHEMA {schema} FROM PUBLIC, {u}", f"GRANT ALL ON SCHEMA {schema} TO {r}",
                    f"GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {r}",
                    f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {r}"]
        if unprotected:
            out.append(f"GRANT SELECT ON TABLE {', '.join(self.ident(t) for t in unprotected)} TO {u}")
        return out

    def share(self, name: str) -> list[str]:
        return [f"GRANT SELECT ON TABLE {self.ident(name)} TO SESSION_USER"]

    def fault(self, error: BaseException) -> str | None:
        if not isinstance(error, psycopg.Error):
            return None
        state = getattr(error, "sqlstate", None)
        if state in _LOCKED:
            return "locked"
        if state in _ENDED or (state or "").startswith("08") or \
                (state is None and isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError))):
            return "lost"
        return "refused"

    def connection_open(self, connection: Any) -> bool:
        conn = getattr(connection, "driver_connection", connection)
        return not (conn.closed or conn.broken)

    def session_id(self, connection: Any) -> int | None:
        return getattr(connection, "driver_connection", connection).info.backend_pid

    def end_session(self, session: int) -> exp.Expression | None:
        return exp.select(exp.Anonymous(this="pg_terminate_backend", expressions=[exp.Literal.number(session)]))

    def _lock_key(self, key: str) -> list[exp.Expression]:
        return [exp.Literal.number(_LOCKS), exp.Anonymous(this="hashtext", expressions=[exp.Literal.string(key)])]

    def lock(self, key: str, wait: bool = True) -> exp.Select | None:
        if wait:
            # pg_advisory_lock returns void: one row of 1 once it has the lock
            return exp.select(exp.Literal.number(1)).from_(exp.Table(
                this=exp.Anonymous(this="pg_advisory_lock", expressions=self._lock_key(key)),
                alias=exp.TableAlias(this=exp.to_identifier("l"))))
        return exp.select(exp.Case(ifs=[exp.If(this=exp.Anonymous(this="pg_try_advisory_lock",
                                                                  expressions=self._lock_key(key)),
                                               true=exp.Literal.number(1))], default=exp.Literal.number(0)))

    def unlock(self, key: str) -> exp.Select | None:
        return exp.select(exp.Anonymous(this="pg_advisory_unlock", expressions=self._lock_key(key)))

    @contextmanager
    def stream(self, connection: Any, sql: str, size: int) -> Iterator[Any]:
        # psycopg's client-side cursor holds the whole answer (1 M rows: 836 MB); a named cursor
        # (DECLARE, then FETCH ``size`` rows at a time) holds one batch. It lives in a
        # transaction; the run's temp tables are the session's and outlive it.
        conn = connection.driver_connection
        with conn.transaction():
            cur = conn.cursor(name=f"sqlanon_{secrets.token_hex(4)}")
            cur.itersize = size
            try:
                cur.execute(sql)
                yield cur
            finally:
                cur.close()

    def answer_reader(self, connection: Any, rows: int) -> Callable[[str], WholeAnswer] | None:
        # libpq 17's chunked rows mode (psycopg's stream() with a size): the rows come
        # ANSWER_CHUNK at a time, each chunk converted while the server sends the next, instead
        # of the whole answer received before its first row is converted. A smaller answer
        # comes in one result anyway. stream() tells no columns for an empty answer (its last
        # result, the one that has them, is not kept).
        conn = connection.driver_connection
        if rows < ANSWER_CHUNK or not isinstance(conn, psycopg.Connection) or psycopg.pq.version() < 170000:
            return None

        def read(sql: str) -> WholeAnswer:
            cur = conn.cursor()
            try:
                fetched = list(cur.stream(sql, size=ANSWER_CHUNK))
                return ([d.name for d in cur.description] if cur.description else None), fetched
            finally:
                cur.close()
        return read

    def cancel(self, connection: Any) -> None:
        conn = connection.driver_connection
        if isinstance(conn, psycopg.Connection) and conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.ACTIVE:
            # as psycopg does on Ctrl-C inside its own wait; a cancel that comes once the server
            # is idle is ignored
            conn.cancel_safe(timeout=5.0)

    def pipeline(self, connection: Any) -> AbstractContextManager[Any] | None:
        # psycopg's pipeline mode: writing the statements of a query on Adult takes ~40 ms of
        # Python, which now runs while the server works (0.49 s -> 0.45 s). It needs libpq 14
        # (the binary wheel brings its own); other drivers, and psycopg on an older libpq, wait.
        conn = connection.driver_connection
        if not isinstance(conn, psycopg.Connection) or not psycopg.Pipeline.is_supported():
            return None
        return conn.pipeline()
