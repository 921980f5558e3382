"""Run context of one query: connection, statement log, temp tables, timings.

Every statement goes through ``execute`` so that the report can say how many statements ran
and how long each stage took, and so that every temp table is dropped after success and failure.
Where the backend has a pipeline mode (Backend.pipeline), a statement whose answer nobody reads
is sent without waiting for it: the database runs it while the next one is written. The answers
are waited for when a result is read and at the end of every stage, so the stage timings hold;
the statements between two such waits run as one transaction (a refusal undoes them all, and
the temp tables are dropped as after any failure).
"""
from __future__ import annotations

import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator, Union

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.backends.connect import Database
from sqlanon.errors import BackendError
from sqlanon.sql.templates import table


@dataclass(frozen=True)
class Written:
    """A statement written ahead (RunContext.write_ahead): its text, sent as it is."""
    sql: str


#: a statement, a function that builds it (called only when its text is not known yet), or its
#: text written ahead
Build = Union[exp.Expression, Callable[[], exp.Expression], Written]


@dataclass
class Statement:
    stage: str
    sql: str
    seconds: float | None = None


@dataclass
class RunContext:
    db: Database
    #: False for a static explain: statements are recorded, never sent
    live: bool = True
    #: every statement waits for its answer and is timed (explain --analyze), never pipelined
    timed: bool = False
    statements: list[Statement] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    temp_tables: list[str] = field(default_factory=list)
    #: every temp table this run created, dropped or not (for hygiene checks)
    created: list[str] = field(default_factory=list)
    stage: str = "init"
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    #: told the stage and the number of statements sent, before each statement (a terminal's
    #: progress line); None: quiet
    progress: Callable[[str], None] | None = None
    _conn: Any = None
    _rendered: dict[Hashable, str] = field(default_factory=dict)
    #: the backend's pipeline mode (its context manager, and what it yields) while the run is in it
    _pipeline: Any = None
    _pipe: Any = None
    #: cursors of the statements sent in pipeline mode since the last sync
    _queued: list[Any] = field(default_factory=list)
    #: the run sends no statement of the pipeline (a pass-through): its connection has the
    #: login's own identity from the start (sqlanon.access)
    restricted: bool = False
    #: the connection has given up the pipeline's identity (``relinquish``) and must take it on
    #: again before its temp tables are dropped and it goes back to the pool
    _relinquished: bool = False

    @property
    def backend(self) -> Backend:
        return self.db.backend

    def __enter__(self) -> "RunContext":
        if self.live:
            self._conn = self.db.restricted_connection() if self.restricted else self.db.raw_connection()
            if not self.timed:
                try:
                    pipeline = self.backend.pipeline(self._conn)
                    self._pipe = pipeline.__enter__() if pipeline is not None else None
                except BaseException:
                    # no __exit__ follows a failed __enter__: the connection goes back here
                    self._conn.close()
                    self._conn = None
                    raise
                self._pipeline = pipeline
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            try:
                self._leave_pipeline(failing=exc[0] is not None)
            finally:
                self._resume()
                self.drop_temp_tables()
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def relinquish(self, readable: list[str]) -> None:
        """Give up the pipeline's identity: what runs from here on (the finish query, over the
        ``readable`` temp tables) runs as the login, which cannot read a protected table — a
        fault of the analyzer then meets the database's permission error (sqlanon.access)."""
        if not self.live or self._relinquished or self.restricted or (self.backend.roles and self.db.reader is None):
            return
        self._relinquished = True
        for statement in self.backend.relinquish(self._conn, frozenset(self.db.denied), readable):
            self._send(statement, wait=False)

    def _resume(self) -> None:
        """Take the pipeline's identity on again (to drop the temp tables, and because the pool's
        connections have it); a connection that cannot is never used again."""
        if not self._relinquished or self._conn is None:
            return
        self._relinquished = False
        try:
            cur = self._conn.cursor()
            try:
                for statement in self.backend.assume(self._conn, self.db.reader or ""):
                    cur.execute(statement)
            finally:
                cur.close()
        except Exception:
            self._conn.invalidate()
            self._conn = None
            self.temp_tables.clear()  # they go with the session
            raise

    def _leave_pipeline(self, failing: bool) -> None:
        """Wait for what is still queued, then leave pipeline mode (the temp tables are dropped
        outside it). While an error is on its way out, a refusal found here is not raised over it."""
        if self._pipeline is None:
            return
        try:
            self.sync()
        except BackendError:
            if not failing:
                raise
        finally:
            cm, self._pipeline, self._pipe = self._pipeline, None, None
            cm.__exit__(None, None, None)

    def sync(self) -> None:
        """Wait for the answers to every statement sent so far (in pipeline mode; else each
        statement has waited for its own)."""
        if self._pipe is None:
            return
        try:
            self._pipe.sync()
        except Exception as e:  # every driver has its own error tree
            raise self._refused(e) from e
        finally:
            self._release_queued()

    def _release_queued(self) -> None:
        for cur in self._queued:
            cur.close()
        self._queued.clear()

    def _refused(self, error: Exception) -> BackendError:
        """The error of a refused statement. In pipeline mode it shows when a later answer is
        read, in the same stage (every stage ends with a sync); the statements queued after it
        did not run, and the pipeline is made ready for the next."""
        if self._pipe is not None:
            self._release_queued()
            try:
                self._pipe.sync()
            except Exception:  # noqa: BLE001, S110 - the error itself is what is reported
                pass
        return BackendError(f"the database refused a statement of stage {self.stage}: {error}")

    @contextmanager
    def in_stage(self, name: str) -> Iterator[None]:
        previous, self.stage = self.stage, name
        t0 = time.perf_counter()
        try:
            yield
            self.sync()
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0
            self.stage = previous

    def temp_name(self, hint: str) -> str:
        return f"sqlanon_{self.run_id}_{hint}"

    def _sql(self, statement: Build, key: Hashable | None) -> str:
        """The statement's text; with a key, built and written once per run (a loop that sends
        the same statement every pass skips sqlglot's copy and generation after the first)."""
        if isinstance(statement, Written):
            return statement.sql
        if key is not None and key in self._rendered:
            return self._rendered[key]
        sql = self.backend.render(statement() if callable(statement) else statement)
        if key is not None:
            self._rendered[key] = sql
        return sql

    def execute(self, statement: Build, key: Hashable | None = None) -> Any:
        """Run one generated statement; returns the cursor (None in a static explain)."""
        return self._send(self._sql(statement, key))

    def repeat(self, condition: Build, body: list[Build], key: Hashable, hash_joins: bool = False) -> None:
        """Run ``body`` while the scalar query ``condition`` is true: as one server-side loop
        where the database has one, else statement by statement from here (SQLite, in-process).
        ``hash_joins``: see Backend.loop."""
        cond = self._sql(condition, (key, "condition"))
        texts = [self._sql(b, (key, i)) for i, b in enumerate(body)]
        loop = self.backend.loop(cond, texts, hash_joins)
        if loop is not None:
            self._send(loop, wait=False)
            return
        while True:
            cur = self._send(cond)
            if cur is None:  # static explain: the statements of one pass
                for text in texts:
                    self._send(text, wait=False)
                return
            row = cur.fetchone()
            cur.close()
            if not row or not row[0]:
                return
            for text in texts:
                self._send(text, wait=False)

    def _send(self, sql: str, wait: bool = True) -> Any:
        """Send one statement; the cursor to read its answer from, or None with ``wait=False``:
        nobody reads it, and in pipeline mode the statement is queued instead of waited for."""
        rec = Statement(self.stage, sql)
        self.statements.append(rec)
        if self.progress is not None:
            self.progress(f"{self.stage}: statement {len(self.statements)}")
        if not self.live:
            return None
        cur = self._conn.cursor()
        t0 = time.perf_counter()
        try:
            cur.execute(sql)
        except Exception as e:  # every driver has its own error tree
            cur.close()
            raise self._refused(e) from e
        if self._pipe is not None:
            # not timed: a pipelined answer also waits for the statements queued before it
            if not wait:
                self._queued.append(cur)
                return None
            try:
                self.sync()
            except BackendError:
                cur.close()
                raise
            return cur
        rec.seconds = time.perf_counter() - t0
        if not wait:
            cur.close()
            return None
        return cur

    def write_ahead(self, statement: exp.Expression) -> Written:
        """The statement's text now, to be sent later by ``execute`` or ``query``: in pipeline
        mode, writing it then overlaps the statements still running."""
        return Written(self._sql(statement, None))

    def query(self, statement: Build, key: Hashable | None = None) -> list[tuple]:
        cur = self.execute(statement, key)
        if cur is None:
            return []
        try:
            return list(cur.fetchall())
        finally:
            cur.close()

    def scalar(self, statement: Build, key: Hashable | None = None) -> Any:
        rows = self.query(statement, key)
        return rows[0][0] if rows else None

    def create_temp(self, hint: str, select: Build, key: Hashable | None = None, hash_joins: bool = False) -> str:
        """``hash_joins``: see Backend.hash_joined."""
        name = self.temp_name(hint)
        self.temp_tables.append(name)
        self.created.append(name)
        sql = self._sql(lambda: self.backend.create_temp_table(name, select() if callable(select) else select),
                        None if key is None else (key, name))
        self._send(self.backend.hash_joined(sql) if hash_joins else sql, wait=False)
        return name

    def staged(self, hint: str, statement: exp.Expression) -> tuple[list[exp.Expression], list[str]]:
        """``statement`` as statements for a loop body, and the temp tables they use: itself
        where CTEs serve (Backend.ctes_in_pipelines); else each CTE kept in a temp table
        (created here, empty), refilled in order by the statements that come first, and read
        by the rest in place of the CTE."""
        query = statement if isinstance(statement, exp.Query) else statement.expression
        if self.backend.ctes_in_pipelines or not isinstance(query, exp.Select) or not query.args.get("with_"):
            return [statement], []
        statement = statement.copy()
        query = statement if isinstance(statement, exp.Query) else statement.expression
        ctes = query.args["with_"].expressions
        query.set("with_", None)
        hints = {c.alias_or_name: f"{hint}_{c.alias_or_name}" for c in ctes}

        def renamed(tree: exp.Expression) -> exp.Expression:
            for t in tree.find_all(exp.Table):
                if not t.args.get("db") and t.name in hints:
                    if not t.alias:
                        t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
                    t.set("this", exp.to_identifier(self.temp_name(hints[t.name]), quoted=True))
            return tree

        out: list[exp.Expression] = []
        tables = []
        for c in ctes:
            select = renamed(c.this)
            tables.append(self.create_temp(hints[c.alias_or_name], exp.select("*").from_(
                select.subquery("x", copy=True)).where(exp.false())))
            out += [self.backend.empty(tables[-1]), exp.insert(select, table(tables[-1]))]
        return out + [renamed(statement)], tables

    def run(self, statement: exp.Expression) -> None:
        """Run a statement whose answer nobody reads."""
        self._send(self._sql(statement, None), wait=False)

    def run_text(self, statement: str) -> None:
        """Run a statement the backend wrote (a role or grant statement sqlglot does not model)."""
        self._send(statement, wait=False)

    def commit(self) -> None:
        """Make what the run created outside its temp tables permanent (a materialized release)."""
        if self._conn is not None:
            self.sync()
            self._conn.commit()

    def drop(self, *names: str) -> None:
        """Drop pipeline tables as soon as the next stage no longer needs them."""
        for name in names:
            self.temp_tables.remove(name)
        for statement in self.backend.drop_temp_tables(list(names)):
            self.run(statement)

    def drop_temp_tables(self) -> None:
        if self._conn is None:
            self.temp_tables.clear()
            return
        errors = []
        names, self.temp_tables = list(reversed(self.temp_tables)), []
        for statement in self.backend.drop_temp_tables(names):
            try:
                cur = self._conn.cursor()
                cur.execute(self.backend.render(statement))
                cur.close()
            except Exception as e:  # noqa: BLE001 - keep dropping the others, then report
                errors.append(e)
        if errors:
            # A connection that may still hold a temp table must not go back to the pool.
            self._conn.invalidate()
            raise errors[0]
