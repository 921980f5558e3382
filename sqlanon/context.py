"""Run context of one query: connection, statement log, temp tables, timings.

Every statement goes through ``execute`` so that the report can say how many statements ran
and how long each stage took, and so that every temp table is dropped after success and failure.
Where the backend has a pipeline mode (Backend.pipeline), a statement whose answer nobody reads
is sent without waiting for it: the database runs it while the next one is written. The answers
are waited for when a result is read and at the end of every stage, so the stage timings hold;
the statements between two such waits run as one transaction (a refusal undoes them all, and
the temp tables are dropped as after any failure).

Whatever ends a run — success, a refusal, an interrupt, a lost connection — its temp tables and
locks are gone afterwards, and the error that ended it is the one raised: a failure of the
cleanup itself is logged, never raised over it. A connection that cannot be cleaned (the driver
closed it at an interrupt, the server is gone) is never reused: its server session is ended
from another connection, and the server drops the session's temp tables and locks with it.
"""
from __future__ import annotations

import logging
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator, Union

import sqlalchemy as sa
from sqlglot import exp

from sqlanon import interrupts
from sqlanon.backends.base import Backend, WholeAnswer
from sqlanon.backends.connect import Database
from sqlanon.backends.faults import fault
from sqlanon.errors import BackendError, ConnectionLost, Interrupted

log = logging.getLogger("sqlanon.context")

#: what a run that lost its connection tells (the server ends the session, and its temp tables)
SESSION_GONE = "nothing was released; the server drops the run's temp tables with the session"


@dataclass(frozen=True)
class Written:
    """A statement written ahead (RunContext.write_ahead): its text, sent as it is."""
    sql: str


class Later:
    """The answer of a query sent without waiting for it (RunContext.later), read when the run
    next waits for its statements; ``check`` judges it as soon as it has come, so that a
    refusal it finds is raised by that wait, in the stage that sent it."""

    def __init__(self, ctx: "RunContext", check: Callable[[list[tuple]], None] | None = None):
        self._ctx = ctx
        self._check = check
        self._rows: list[tuple] | None = None

    def _arrived(self, rows: list[tuple]) -> None:
        self._rows = rows
        if self._check is not None:
            self._check(rows)

    def rows(self) -> list[tuple]:
        """The answer's rows, waited for now if they have not come yet."""
        if self._rows is None:
            self._ctx.sync()
        if self._rows is None:
            raise BackendError("the answer of a statement sent earlier did not come")
        return self._rows


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
    #: cursors of the statements sent in pipeline mode since the last sync, each with the temp
    #: table its statement creates (None: another statement)
    _queued: list[tuple[Any, str | None]] = field(default_factory=list)
    #: cursors of the queries sent in pipeline mode since the last sync whose answers are read
    #: then (``later``)
    _later: list[tuple[Any, Later]] = field(default_factory=list)
    #: rows the database wrote into each temp table as it created it, where its driver tells
    #: (Backend.counts_created_rows; ``created_rows``)
    _created_rows: dict[str, int] = field(default_factory=dict)
    #: the columns of each temp table created from a select whose columns are known (``columns``)
    _columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the temp tables among ``temp_tables`` that are views of the selection (``selection_view``)
    _views: set[str] = field(default_factory=set)
    #: the names among ``temp_tables`` of a selection never written (Backend.inline_selection):
    #: each statement that reads one reads its select, as a derived table under the name
    _inline: dict[str, exp.Select] = field(default_factory=dict)
    #: the run sends no statement of the pipeline (a pass-through): its connection has the
    #: login's own identity from the start (sqlanon.access)
    restricted: bool = False
    #: the connection has given up the pipeline's identity (``relinquish``) and must take it on
    #: again before its temp tables are dropped and it goes back to the pool
    _relinquished: bool = False
    #: the session locks this run holds (``lock``), released at its end
    locks: list[str] = field(default_factory=list)
    #: the run's connection as SQLAlchemy's (``connection``), None for a restricted run
    _sa: sa.Connection | None = None
    #: the server's id of the run's session (Backend.session_id), to end it from elsewhere
    _session: int | None = None
    #: what became of the temp tables when the run ended: dropped, or ended with the session
    ended_session: bool = False
    #: the table of the release this run committed (finish/store.py): from then on an
    #: interrupt no longer undoes it, and says so
    stored: str | None = None
    #: signals are held back (``hold_signals``) until the run has ended
    _holding: bool = False
    #: the answer being streamed (``stream``): the backend's cursor context, left first when
    #: the run ends
    _stream: Any = None

    @property
    def backend(self) -> Backend:
        return self.db.backend

    def __enter__(self) -> "RunContext":
        if self.live:
            try:
                if self.restricted:
                    self._conn = self.db.restricted_connection()
                else:
                    self._sa = self.db.engine.connect()
                    self._conn = self._sa.connection
            except Exception as e:  # noqa: BLE001 - every driver has its own error tree
                raise (fault(e, self.backend) or e) from e
            try:
                self._session = self.backend.session_id(self._conn)
                if not self.timed:
                    pipeline = self.backend.pipeline(self._conn)
                    self._pipe = pipeline.__enter__() if pipeline is not None else None
                    self._pipeline = pipeline
            except BaseException:
                # no __exit__ follows a failed __enter__: the connection goes back here
                self._release(invalidate=False)
                raise
        return self

    def __exit__(self, kind: Any, error: Any, _tb: Any) -> None:
        failing = kind is not None
        try:
            self._tidy(failing)
        except Exception as e:  # noqa: BLE001 - every driver has its own error tree
            if not failing:
                raise (fault(e, self.backend, " while dropping the run's temp tables") or e) from e
            # the error that ended the run is the one to tell; this one is a consequence
            log.debug("sqlanon: cleanup after a failed run: %s", e)
        finally:
            self._release(invalidate=False)
            if self._holding:
                self._holding = False
                try:
                    interrupts.release()
                except KeyboardInterrupt as e:  # the signal that came while it was held
                    error = error if isinstance(error, KeyboardInterrupt) else e
        if isinstance(error, KeyboardInterrupt) and not isinstance(error, Interrupted):
            interrupts.take()  # told here: no later refusal is taken for it
            raise Interrupted(self.interrupted()) from None

    def hold_signals(self) -> None:
        """Hold Ctrl-C and SIGTERM back until the run ends (a stored release's commit: a signal
        must not cut it off from the run that tells it exists); then it is delivered, and told
        as interrupting a run whose release was stored."""
        self._holding = self._holding or interrupts.hold()

    def interrupted(self) -> str:
        """What an interrupted run tells: whether anything was released (nothing, or all of a
        stored release that was committed before the signal came), and where its temp tables went."""
        what = "nothing was released" if self.stored is None else f"after the release {self.stored} was stored"
        if self.ended_session:
            return f"interrupted; {what}; the run's database session was ended, its temp tables with it"
        return f"interrupted; {what}" + ("; temp tables dropped" if self.created else "")

    def _tidy(self, failing: bool) -> None:
        """Leave the connection as the pool hands it out: no pipeline, no transaction, the
        pipeline's identity, no temp table, no lock; where it cannot be, end its session."""
        if self._conn is None:
            return
        if not self.backend.connection_open(self._conn):
            self.end_session()
            return
        try:
            try:
                self._close_stream()
                self._leave_pipeline(failing)
            finally:
                if failing:
                    self.rollback()
            self._resume()
            self.drop_temp_tables()
            self._unlock()
        except BaseException:
            # it may still hold a temp table or a lock: it must not go back to the pool
            self.end_session()
            raise

    def alive(self) -> bool:
        """The run's connection can still carry a statement."""
        return self._conn is not None and self.backend.connection_open(self._conn)

    def rollback(self) -> None:
        """Undo a transaction a failure left open (a stored release half-written)."""
        try:
            self._conn.rollback()
        except Exception as e:  # noqa: BLE001 - the connection is dropped below if it is broken
            log.debug("sqlanon: rollback after a failed run: %s", e)

    def end_session(self) -> None:
        """Give up the run's connection: the server ends its session (its running statement,
        temp tables and locks) at once, asked from another connection; the pool forgets it."""
        if self.ended_session:
            return
        self.ended_session = True
        self.temp_tables.clear()
        self.locks.clear()
        statement = self.backend.end_session(self._session) if self._session is not None else None
        self._release(invalidate=True)
        if statement is None:
            return
        try:
            # as the login itself: a session may end its own login's other sessions
            other = self.db.restricted_connection()
            try:
                cur = other.cursor()
                cur.execute(self.backend.render(statement))
                cur.close()
            finally:
                other.close()
        except Exception as e:  # noqa: BLE001 - the server ends the session when it notices the socket closed
            log.debug("sqlanon: ending the session of a broken connection: %s", e)

    def _release(self, invalidate: bool) -> None:
        """Hand the connection back to the pool (``invalidate``: closed, never reused)."""
        conn, sa_conn, self._conn, self._sa = self._conn, self._sa, None, None
        self._stream = None  # left above, or given up with the connection
        if conn is None:
            return
        if self._pipeline is not None:
            # left on a broken connection: closed here, where its error is expected (a pipeline
            # collected unclosed logs one)
            cm, self._pipeline, self._pipe, self._queued = self._pipeline, None, None, []
            for cur, _ in self._later:
                cur.close()
            self._later = []
            try:
                cm.__exit__(None, None, None)
            except Exception as e:  # noqa: BLE001 - the connection is given up anyway
                log.debug("sqlanon: leaving pipeline mode on a broken connection: %s", e)
        try:
            if invalidate:
                (sa_conn or conn).invalidate()
            if sa_conn is not None:
                sa_conn.close()
            else:
                conn.close()
        except Exception as e:  # noqa: BLE001 - a connection that cannot even close is gone
            log.debug("sqlanon: closing a run's connection: %s", e)

    def connection(self) -> sa.Connection:
        """The run's connection as SQLAlchemy's, for statements SQLAlchemy builds (the catalog's
        rows) in the run's own transaction; the run leaves pipeline mode for it."""
        if self._sa is None:
            raise BackendError("a restricted run has no connection for the catalog")
        self._leave_pipeline(failing=False)
        return self._sa

    def lock(self, key: str, wait: bool = True) -> bool:
        """Take the session lock ``key`` (Backend.lock), held until the run ends — or its session:
        a killed client leaves it free. False where another session holds it and ``wait`` is
        off; True where the database has no such locks."""
        statement = self.backend.lock(key, wait)
        if statement is None or not self.live:
            return True
        if not self.scalar(statement):
            return False
        self.locks.append(key)
        return True

    def unlock(self, key: str) -> None:
        statement = self.backend.unlock(key)
        if key in self.locks and statement is not None:
            self.locks.remove(key)
            self.scalar(statement)

    def _unlock(self) -> None:
        keys, self.locks = list(reversed(self.locks)), []
        for key in keys:
            statement = self.backend.unlock(key)
            if statement is None:
                continue
            cur = self._conn.cursor()
            try:
                cur.execute(self.backend.render(statement))
                cur.fetchall()
            finally:
                cur.close()

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
            self.end_session()  # the temp tables go with the session
            raise

    def _leave_pipeline(self, failing: bool) -> None:
        """Wait for what is still queued, then leave pipeline mode (the temp tables are dropped
        outside it). While an error is on its way out, a refusal found here is not raised over it."""
        if self._pipeline is None:
            return
        try:
            if failing:  # what is still queued is not needed: an interrupt may have come outside any wait
                self.backend.cancel(self._conn)
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
        answered = False
        try:
            self._pipe.sync()
            answered = True
        except Exception as e:  # every driver has its own error tree
            raise self._refused(e) from e
        finally:  # an interrupt in the wait too: no answer of a later query is read then
            self._release_queued(answered)

    def _release_queued(self, answered: bool = True) -> None:
        """Close the cursors of what was queued; ``answered``: the sync succeeded, and the
        answers of the queries sent ``later`` are read (and checked) from theirs."""
        for cur, created in self._queued:
            self._count_created(cur, created)
            cur.close()
        self._queued.clear()
        later, self._later = self._later, []
        try:
            arrived = [(answer, list(cur.fetchall())) for cur, answer in later] if answered else []
        finally:
            for cur, _ in later:
                cur.close()
        for answer, rows in arrived:
            answer._arrived(rows)

    def _count_created(self, cur: Any, created: str | None) -> None:
        """Remember the rows the statement of ``cur`` wrote into the table it created (a
        statement that failed, or did not run after a failure, tells none: -1)."""
        if created is not None and self.backend.counts_created_rows and cur.rowcount is not None and cur.rowcount >= 0:
            self._created_rows[created] = int(cur.rowcount)

    def columns(self, name: str) -> tuple[str, ...] | None:
        """The columns of temp table ``name`` as this run created it, where its select names
        them (or is ``*`` of one such table alone); None where they are not known here."""
        return self._columns.get(name)

    def _known_columns(self, select: exp.Select) -> tuple[str, ...] | None:
        if not select.is_star:
            return tuple(select.named_selects)
        source = select.args.get("from_")
        only = source.this if source is not None else None
        if len(select.expressions) == 1 and not select.args.get("joins") and isinstance(only, exp.Table):
            return self._columns.get(only.name)
        return None

    def created_rows(self, name: str) -> int | None:
        """The rows the database reported writing into temp table ``name`` when this run created
        it: its own count of the statement's rows (PostgreSQL's command tag), which spares a
        scan that counts them again; None where the driver does not tell or nothing ran."""
        if any(queued == name for _, queued in self._queued):
            self.sync()
        return self._created_rows.get(name)

    def _refused(self, error: Exception) -> BackendError:
        """The error of a refused statement. In pipeline mode it shows when a later answer is
        read, in the same stage (every stage ends with a sync); the statements queued after it
        did not run, and the pipeline is made ready for the next."""
        if self._pipe is not None:
            self._release_queued(answered=False)
            try:
                self._pipe.sync()
            except Exception:  # noqa: BLE001, S110 - the error itself is what is reported
                pass
        mapped = fault(error, self.backend, f" in stage {self.stage}") or BackendError(
            f"the database refused a statement in stage {self.stage}: {self.backend.error_text(error)}")
        if isinstance(mapped, ConnectionLost):
            return ConnectionLost(f"{mapped.message}; {SESSION_GONE}")
        return mapped if isinstance(mapped, BackendError) else BackendError(mapped.message)

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
        tree = statement() if callable(statement) else statement
        sql = self.backend.render(self._inlined(tree) if self._inline else tree)
        if key is not None:
            self._rendered[key] = sql
        return sql

    def _inlined(self, tree: exp.Expression) -> exp.Expression:
        """``tree`` with every table it reads of the selections never written (``_inline``)
        replaced by their select, a derived table under the table's name or alias."""
        if not any(t.name in self._inline and not t.args.get("db") for t in tree.find_all(exp.Table)):
            return tree

        def swap(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Table) and node.name in self._inline and not node.args.get("db"):
                return self._inline[node.name].subquery(node.alias_or_name)
            return node

        return tree.transform(swap)

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

    def _record(self, sql: str) -> Statement:
        """``sql`` entered in the run's statements (the report's count, explain --analyze), its
        number shown as progress."""
        rec = Statement(self.stage, sql)
        self.statements.append(rec)
        if self.progress is not None:
            self.progress(f"{self.stage}: statement {len(self.statements)}")
        return rec

    def _send(self, sql: str, wait: bool = True, created: str | None = None) -> Any:
        """Send one statement; the cursor to read its answer from, or None with ``wait=False``:
        nobody reads it, and in pipeline mode the statement is queued instead of waited for.
        ``created``: the temp table the statement creates, whose rows are counted as written."""
        rec = self._record(sql)
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
                self._queued.append((cur, created))
                return None
            try:
                self.sync()
            except BackendError:
                cur.close()
                raise
            return cur
        rec.seconds = time.perf_counter() - t0
        if not wait:
            self._count_created(cur, created)
            cur.close()
            return None
        return cur

    def stream(self, statement: Build, size: int) -> Any:
        """Run the answer's statement; returns a cursor that fetches its rows from the database as
        they are read, ``size`` at a time (Backend.stream), open until the run ends — which
        closes it before the temp tables it reads are dropped. None in a static explain."""
        sql = self._sql(statement, None)
        self.statements.append(Statement(self.stage, sql))
        if self.progress is not None:
            self.progress(f"{self.stage}: statement {len(self.statements)}")
        if not self.live:
            return None
        self._leave_pipeline(failing=False)  # the answer is read as it comes, not as a pipeline's
        stream = self.backend.stream(self._conn, sql, size)
        try:
            cur = stream.__enter__()
        except Exception as e:  # every driver has its own error tree
            raise self._refused(e) from e
        self._stream = stream
        return cur

    def read_whole(self, statement: exp.Expression, rows: int) -> WholeAnswer | None:
        """Run the answer's statement, of about ``rows`` rows, and read every row, each converted
        while the database still sends the rest (Backend.answer_reader), out of pipeline mode;
        a failure, before or amid the rows, returns none. None where the backend cannot, or in a
        static explain: the caller sends it as any other (``execute``)."""
        reader = self.backend.answer_reader(self._conn, rows) if self.live else None
        if reader is None:
            return None
        sql = self._sql(statement, None)
        rec = self._record(sql)
        self._leave_pipeline(failing=False)  # what is queued runs first, as before any answer
        t0 = time.perf_counter()
        try:
            answer = reader(sql)
        except Exception as e:  # every driver has its own error tree
            raise self._refused(e) from e
        rec.seconds = time.perf_counter() - t0
        return answer

    def abandon_stream(self) -> None:
        """The reader stopped before the last row. Where closing the cursor would read the rest
        of the answer (Backend.closes_answers), the session is ended instead: the server stops
        sending, and drops the run's temp tables with the session."""
        if self._stream is not None and not self.backend.closes_answers:
            self.end_session()

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.__exit__(None, None, None)

    def write_ahead(self, statement: exp.Expression) -> Written:
        """The statement's text now, to be sent later by ``execute`` or ``query``: in pipeline
        mode, writing it then overlaps the statements still running."""
        return Written(self._sql(statement, None))

    def later(self, statement: Build, check: Callable[[list[tuple]], None] | None = None) -> Later:
        """Send a query whose rows are read later (Later.rows): in pipeline mode it is not waited
        for, so the statements written meanwhile overlap its run and those before it; elsewhere
        it is answered now. ``check`` is called with the rows as soon as they have come."""
        answer = Later(self, check)
        if self._pipe is None:
            answer._arrived(self.query(statement))
            return answer
        sql = self._sql(statement, None)
        self._record(sql)
        cur = self._conn.cursor()
        try:
            cur.execute(sql)
        except Exception as e:  # every driver has its own error tree
            cur.close()
            raise self._refused(e) from e
        self._later.append((cur, answer))
        return answer

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
        self._created_rows.pop(name, None)  # a table made again under its name counts anew
        self._columns.pop(name, None)
        if isinstance(select, exp.Select):
            self._remember_columns(name, select)
        # a view of the selection is planned on the protected table's statistics (Backend.hash_grouped)
        grouped = bool(self._views) and isinstance(select, exp.Expression) and \
            any(t.name in self._views for t in select.find_all(exp.Table))
        if grouped:
            sql = self.backend.hash_grouped(sql)
        # (a statement wrapped in a block for its joins tells the block's tag, not its rows)
        self._send(self.backend.hash_joined(sql) if hash_joins else sql, wait=False,
                   created=None if hash_joins or grouped else name)
        return name

    def staged(self, hint: str, statement: exp.Expression) -> tuple[list[exp.Expression], list[str]]:
        """``statement`` as statements for a loop body, and the temp tables they use: itself
        where CTEs serve (Backend.ctes_in_pipelines); else each CTE kept in a temp table
        (created here, empty), refilled in order by the statements that come first, and read
        by the rest in place of the CTE; a CTE read once is a view where the database has
        them (Backend.view)."""
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
        for i, c in enumerate(ctes):
            readers = [*[d.this for d in ctes[i + 1:]], statement]
            reads = sum(1 for r in readers for t in r.find_all(exp.Table) if not t.args.get("db")
                        and t.name == c.alias_or_name)
            select = renamed(c.this)
            view = self.view(hints[c.alias_or_name], select) if reads == 1 else None
            if view is not None:  # read once: computed where it is read, each pass
                tables.append(view)
                continue
            tables.append(self.create_temp(hints[c.alias_or_name], exp.select("*").from_(
                select.subquery("x", copy=True)).where(exp.false())))
            out += self.backend.refill(tables[-1], select)
        return out + [renamed(statement)], tables

    def view(self, hint: str, select: exp.Expression) -> str | None:
        """``select`` named as a temp view, computed wherever a statement reads it (an
        intermediate a loop's pass reads once), where the database has such views
        (Backend.view); None elsewhere: the caller keeps it in a table."""
        named = self._named(hint, lambda name: self.backend.view(name, select))
        if named is None:
            return None
        self.run(named[1])
        return named[0]

    def selection_view(self, hint: str, select: exp.Select) -> str | None:
        """The pushed-down selection ``select`` named as a temp view (Backend.selection_view),
        or as a select each statement reads in its place (Backend.inline_selection), or None
        where the backend has neither: the caller copies it (``create_temp``)."""
        named = self._named(hint, lambda name: self.backend.selection_view(name, select))
        if named is None:
            return self._inline_selection(hint, select) if self.backend.inline_selection else None
        name, statement = named
        self._views.add(name)
        self._created_rows.pop(name, None)  # a view writes no rows: counted where it is read
        self._remember_columns(name, select)
        self.run(statement)
        return name

    def _inline_selection(self, hint: str, select: exp.Select) -> str:
        """The selection named by no statement (Backend.inline_selection): each statement that
        reads the name reads ``select`` in its place (``_inlined``); none drops it (``_drops``)."""
        name = self.temp_name(hint)
        self.temp_tables.append(name)
        self._inline[name] = select
        self._remember_columns(name, select)
        return name

    def _remember_columns(self, name: str, select: exp.Select) -> None:
        """Keep the columns of ``name`` where its select tells them (``_known_columns``)."""
        known = self._known_columns(select)
        if known is not None:
            self._columns[name] = known

    def _named(self, hint: str, make: Callable[[str], exp.Expression | None]) -> tuple[str, exp.Expression] | None:
        """A new temp name and the statement ``make`` writes for it, the name kept to be dropped
        with the run's tables; None where the backend writes none."""
        name = self.temp_name(hint)
        statement = make(name)
        if statement is None:
            return None
        self.temp_tables.append(name)
        self.created.append(name)
        return name, statement

    def _drops(self, names: list[str]) -> list[exp.Expression]:
        """The statements that drop the temp tables ``names``, views among them."""
        inlined = [n for n in names if n in self._inline]
        for name in inlined:
            del self._inline[name]
        names = [n for n in names if n not in inlined]
        views = [n for n in names if n in self._views]
        self._views.difference_update(views)
        return [*self.backend.drop_temp_tables([n for n in names if n not in views]),
                *[exp.Drop(tables=[exp.Table(this=exp.to_identifier(n, quoted=True))], kind="VIEW", exists=True)
                  for n in views]]

    def run(self, statement: exp.Expression) -> None:
        """Run a statement whose answer nobody reads."""
        self._send(self._sql(statement, None), wait=False)

    def analyze(self, name: str, *columns: str) -> None:
        """Give the planner the statistics of the join columns of a small pipeline table that
        later statements join to the full rows, where the database needs them (Backend.analyze)."""
        statement = self.backend.analyze(name, list(columns))
        if statement is not None:
            self.run_text(statement)

    def run_text(self, statement: str) -> None:
        """Run a statement the backend wrote (a role or grant statement sqlglot does not model)."""
        self._send(statement, wait=False)

    def insert_many(self, statement: exp.Insert, rows: list[tuple[Any, ...]]) -> None:
        """Send ``rows`` (values the client holds, e.g. a cross-database join's row filter) with
        ``statement``, an INSERT of one row of placeholders, in one bulk call of the driver:
        never a round trip per row."""
        sql = self._sql(statement, None)
        if self.db.engine.dialect.paramstyle != "qmark":  # sqlglot writes '?' for MySQL; PyMySQL reads %s
            sql = sql.replace("?", "%s")
        self.statements.append(Statement(self.stage, f"{sql} -- {len(rows)} row(s)"))
        if not self.live or not rows:
            return
        self.sync()
        cur = self._conn.cursor()
        try:
            cur.executemany(sql, rows)
        except Exception as e:  # every driver has its own error tree
            raise self._refused(e) from e
        finally:
            cur.close()

    def commit(self) -> None:
        """Make what the run created outside its temp tables permanent (a materialized release)."""
        if self._conn is not None:
            self.sync()
            self._conn.commit()

    def drop(self, *names: str) -> None:
        """Drop pipeline tables as soon as the next stage no longer needs them."""
        for name in names:
            self.temp_tables.remove(name)
        for statement in self._drops(list(names)):
            self.run(statement)

    def drop_temp_tables(self) -> None:
        if self._conn is None:
            self.temp_tables.clear()
            return
        errors = []
        names, self.temp_tables = list(reversed(self.temp_tables)), []
        for statement in self._drops(names):
            try:
                cur = self._conn.cursor()
                cur.execute(self.backend.render(statement))
                cur.close()
            except Exception as e:  # noqa: BLE001 - keep dropping the others, then report
                errors.append(e)
        if errors:
            # A connection that may still hold a temp table must not go back to the pool.
            self.end_session()
            raise errors[0]
