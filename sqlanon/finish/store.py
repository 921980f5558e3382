"""A stored release (``materialize``): its table, its view, the memory of its rows and its row
in the release log made together or not at all, and one materialize of a table at a time.

- One at a time: the run takes a session lock named after the protected table (Backend.lock:
  PostgreSQL's advisory lock, MariaDB's GET_LOCK) before it reads what earlier releases stored,
  and holds it to its end. A second materialize or refresh of the table waits for it, then reads
  what the first stored: two refreshes never both write their rows. A killed client's session
  ends, and its lock with it. SQLite has no such lock: its release's transaction opens with the
  write lock (BEGIN IMMEDIATE) and, inside, finds whether another release of the table was
  stored meanwhile; then nothing is stored (DatabaseLocked: run it again).
- Together: where DDL takes part in transactions (PostgreSQL, SQLite) everything is written in
  one transaction, undone whole by a failure, an interrupt or a dead client. Where each DDL
  statement commits (MariaDB), the release's names are claimed in the catalog first
  (``materializing``); the DDL runs, and one transaction writes the rows of a refresh, the new
  rows of the memory, the release log's row and deletes the claims. A claim found under the
  lock is a dead run's (a live one would hold the lock): what it names is dropped and the run
  goes on — a rerun, or a refresh of the release that run was making. A run that fails drops
  what it made at once (from a new connection when its own is broken).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa
from sqlglot import exp

from sqlanon.errors import BackendError, ConnectionLost, DatabaseLocked, QueryRejected
from sqlanon.finish.report import Report
from sqlanon.sql.templates import col, table

if TYPE_CHECKING:
    from sqlanon.context import RunContext
    from sqlanon.policy.model import Requirement
    from sqlanon.pushdown.fragment import Fragment

log = logging.getLogger("sqlanon.store")

#: how long a failed run waits for its own lock to come free after ending its broken session
RESCUE_SECONDS = 10.0


class Recoder(Protocol):
    """Keeps a stored release consistent with the earlier releases of its table (the catalog's
    memory of what each row was released as): complementary-release and temporal attacks."""

    def prepare(self, frag: Fragment, method: str, ctx: RunContext) -> Fragment:
        """The fragment with the row-key columns the memory needs (or as it is)."""

    def narrow(self, frag: Fragment, src: str, ctx: RunContext) -> str:
        """The selected rows the method is to anonymize (those not released before, or all)."""

    def pin(self, frag: Fragment, src: str, released: str, ctx: RunContext) -> str:
        """The release with every row released before under its earlier generalization, or a
        refusal, as the policy says."""

    def check(self, frag: Fragment, released: str, req: Requirement, ctx: RunContext,
              numbers: tuple[str, ...]) -> list[str]:
        """Refuse when this release and the earlier ones together break a model (``numbers``:
        quasi-identifiers released as numbers); notes."""

    def creates(self) -> str | None:
        """The memory table ``remember`` creates (DDL), or None where it inserts into one (or
        keeps nothing)."""

    def remember(self, frag: Fragment, released: str, ctx: RunContext) -> None:
        """Record what each row of this release was released as."""


@dataclass(frozen=True)
class Claim:
    """A name a running materialize claims: its release's table or view, or a memory table."""

    name: str
    #: table, view or memory
    kind: str
    #: the protected table the release is of
    table: str
    run: str


class Ledger(Protocol):
    """The catalog's side of a stored release (catalog/ledger.py)."""

    def released_into(self, table_name: str, target: str) -> bool:
        """Whether ``target`` holds a release of ``table_name`` logged by sqlanon."""

    def newest(self, conn: sa.Connection | None, table_name: str) -> int | None:
        """The newest stored release of ``table_name`` in the log."""

    def record(self, conn: sa.Connection, report: Report, target: str) -> None:
        """The release log's row, in ``conn``'s open transaction."""

    def claims(self, table_name: str | None = None, names: tuple[str, ...] = ()) -> list[Claim]:
        """The claims of runs of ``table_name``, or those on ``names``."""

    def claim(self, run: str, table_name: str, names: list[tuple[str, str]]) -> Claim | None:
        """Claim (name, kind) pairs, committed; another run's claim on one of them, or None."""

    def unclaim(self, conn: sa.Connection | None, run: str) -> None:
        """Delete the claims of ``run`` (in ``conn``'s transaction, or committed at once)."""

    def memory(self, name: str) -> exp.Table:
        """A claimed memory table as a table of the catalog."""


@dataclass(frozen=True)
class Target:
    """Where ``materialize`` stores a release: a new table (or, with ``refresh``, the earlier
    release's table, rewritten), and optionally a view over it; with a catalog, the memory of
    released rows (``recoder``) and the release log (``ledger``)."""

    table: str
    view: str | None = None
    refresh: bool = False
    recoder: Recoder | None = None
    ledger: Ledger | None = None


@dataclass
class Store:
    """One stored release of the protected table ``source`` being made by one run."""

    source: str
    into: Target
    #: the newest stored release of ``source`` when the run began (SQLite's check at the end)
    newest: int | None = None
    #: this run has claims in the catalog to delete or, when it fails, to undo
    claimed: bool = False
    #: names of a dead run's release this refresh makes anew: the view it was to have
    revived: dict[str, str | None] = field(default_factory=dict)
    #: (name, kind) of what this run's DDL made where it commits by itself, for a failure
    #: without a catalog to claim the names in
    made: list[Claim] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"materialize {self.source.lower()}"

    # -- before the pipeline ------------------------------------------------------------------
    def open(self, ctx: RunContext) -> Target:
        """Take the table's lock, clear what dead runs left, and check the names under it; the
        target as this run makes it (a refresh of a dead run's release makes it anew)."""
        if not ctx.lock(self.key):
            raise DatabaseLocked(f"another materialize of {self.source} has held its lock for a day: nothing was "
                                 "stored")
        db, into, ledger = ctx.db, self.into, self.into.ledger
        if ledger is not None and not ctx.backend.transactional_ddl:
            self.revived = self._clear(ledger.claims(self.source), ctx)
        db.refresh_schema()
        if into.refresh and into.table in self.revived:
            # the release a dead run was making: made anew, with the view it was to have
            into = self.into = Target(into.table, self.revived[into.table], False, into.recoder, into.ledger)
        elif into.refresh and ledger is not None and not ledger.released_into(self.source, into.table):
            raise QueryRejected("refresh of a table sqlanon did not release",
                                f"{into.table} is no stored release of {self.source} in the release log")
        elif into.refresh and into.table.lower() not in db.tables:
            raise QueryRejected("refresh of a missing table", f"{into.table} does not exist: materialize it first")
        names = [] if into.refresh else [(into.table, "table")] + ([(into.view, "view")] if into.view else [])
        self._fresh(names, ctx)
        if ledger is None:
            return into
        self.newest = ledger.newest(None, self.source)
        if names and not ctx.backend.transactional_ddl:
            self._claim(names, ctx)
            self._fresh(names, ctx)  # a name made between the check and the claim is not this run's
        return into

    def _fresh(self, names: list[tuple[str, str]], ctx: RunContext) -> None:
        """Refuse a name a table or view has: sqlanon never replaces one."""
        db = ctx.db
        db.refresh_schema()
        for name, _ in names:
            if name.lower() in db.tables or name.lower() in db.views:
                if self.claimed and self.into.ledger is not None:
                    self.into.ledger.unclaim(None, ctx.run_id)
                    self.claimed = False
                raise QueryRejected("existing table", f"{name} exists; sqlanon never replaces a table or view")

    def _claim(self, names: list[tuple[str, str]], ctx: RunContext) -> None:
        ledger = self.into.ledger
        assert ledger is not None
        other = ledger.claim(ctx.run_id, self.source, names)
        if other is not None and other.table.lower() != self.source.lower() and ctx.lock(self._key(other.table),
                                                                                       wait=False):
            # claimed by a run of another table: dead if its lock was free
            try:
                self._clear(ledger.claims(other.table), ctx)
            finally:
                ctx.unlock(self._key(other.table))
            other = ledger.claim(ctx.run_id, self.source, names)
        if other is not None:
            raise DatabaseLocked(f"{other.name} is being made by another materialize (of {other.table}): nothing was "
                                 "stored")
        self.claimed = True

    @staticmethod
    def _key(source: str) -> str:
        return f"materialize {source.lower()}"

    def _clear(self, claims: list[Claim], ctx: RunContext) -> dict[str, str | None]:
        """Drop what the runs of ``claims`` made (views first) and delete their claims; the
        releases they were making, with the view each was to have."""
        ledger = self.into.ledger
        assert ledger is not None
        made: dict[str, str | None] = {}
        for c in sorted(claims, key=lambda c: c.kind != "view"):
            what = ledger.memory(c.name) if c.kind == "memory" else table(c.name)
            try:
                ctx.run(exp.Drop(tables=[what], kind="VIEW" if c.kind == "view" else "TABLE", exists=True))
            except (ConnectionLost, DatabaseLocked):
                raise  # the claims stay for the next run
            except BackendError as e:
                # a name the run claimed but did not make (another kind of object took it): not its to drop
                log.info("sqlanon: %s %s of an interrupted materialize left as it is: %s", c.kind, c.name, e.message)
            if c.kind == "table":
                made.setdefault(c.name, None)
        for c in claims:
            if c.kind == "view":
                made.update({t.name: c.name for t in claims if t.run == c.run and t.kind == "table"})
        ctx.sync()
        for run in dict.fromkeys(c.run for c in claims):
            ledger.unclaim(None, run)
        if claims:
            log.info("sqlanon: removed what an interrupted materialize of %s left: %s", self.source,
                     ", ".join(c.name for c in claims))
        return made

    # -- the release ------------------------------------------------------------------------------
    def write(self, frag: Fragment, released: str, ctx: RunContext) -> None:
        """The release as a table of its own, rows inserted in random order (no order that
        follows the source: unsorted matching), its view, its grants and the memory of its
        rows; a refresh replaces the rows of the earlier release's table, its view stays. In one
        transaction, or where DDL commits, the DDL first and the rest in one transaction."""
        into, backend = self.into, ctx.backend
        columns = [col(c) for c in frag.released_columns]
        rows = exp.select(*columns).from_(table(released)).order_by(exp.Rand())
        if backend.transactional_ddl:
            ctx.run(backend.begin())
        if not into.refresh:
            props = backend.stored_table_properties()
            ctx.run(exp.Create(this=table(into.table), kind="TABLE", expression=rows,
                               properties=exp.Properties(expressions=props) if props else None))
            self.made.append(Claim(into.table, "table", self.source, ctx.run_id))
            if into.view is not None:
                ctx.run(exp.Create(this=table(into.view), kind="VIEW",
                                   expression=exp.select(exp.Star()).from_(table(into.table))))
                self.made.append(Claim(into.view, "view", self.source, ctx.run_id))
            # the pipeline's role made the release; the login reads it (further grants are the admin's)
            for name in filter(None, (into.table, into.view)):
                for statement in backend.share(name) if ctx.db.reader is not None else ():
                    ctx.run_text(statement)
        memory = into.recoder.creates() if into.recoder is not None else None
        if memory is not None:
            if into.ledger is not None and not backend.transactional_ddl:
                self._claim([(memory, "memory")], ctx)
            into.recoder.remember(frag, released, ctx)  # type: ignore[union-attr]
        if not backend.transactional_ddl:
            ctx.run(backend.begin())
        if into.refresh:
            ctx.run(exp.Delete(this=table(into.table)))
            ctx.run(exp.Insert(this=exp.Schema(this=table(into.table), expressions=[c.this.copy() for c in columns]),
                               expression=rows))
        if memory is None and into.recoder is not None:
            into.recoder.remember(frag, released, ctx)

    def commit(self, report: Report, ctx: RunContext) -> None:
        """Log the release, delete the claims, commit: the release exists from here on."""
        ledger = self.into.ledger
        if ledger is not None and ctx.live:
            conn = ctx.connection()
            if ledger.newest(conn, self.source) != self.newest:
                raise DatabaseLocked(f"another release of {self.source} was stored while this one was made: nothing "
                                     "was stored; run it again")
            ledger.record(conn, report, self.into.table)
            if self.claimed:
                ledger.unclaim(conn, ctx.run_id)
        ctx.hold_signals()  # a signal during the commit waits until the run can tell what it made
        ctx.run(exp.Commit())
        ctx.sync()
        self.claimed = False
        ctx.stored = self.into.table

    def abandon(self, ctx: RunContext) -> None:
        """After a failure: drop what this run made where DDL committed it (elsewhere the
        transaction's rollback did), from a new connection when the run's is broken. Never
        raises: what it cannot drop, the next materialize of the table does. A committed
        release stays: what fails after its commit (an interrupt) does not undo it."""
        if ctx.stored is not None:
            return
        if self.into.ledger is None and self.made and not ctx.backend.transactional_ddl and ctx.alive():
            # no catalog to claim the names in: what this run made, dropped on its connection
            try:
                ctx.rollback()
                for c in sorted(self.made, key=lambda c: c.kind != "view"):
                    ctx.run(exp.Drop(tables=[table(c.name)], kind=c.kind.upper(), exists=True))
            except Exception as e:  # noqa: BLE001 - the error that ended the run is the one to tell
                log.info("sqlanon: a failed materialize of %s left %s: %s", self.source,
                         ", ".join(c.name for c in self.made), e)
            return
        if not self.claimed or self.into.ledger is None:
            return
        ledger = self.into.ledger
        try:
            if ctx.alive():
                ctx.rollback()
                self._clear(ledger.claims(self.source), ctx)
                return
            ctx.end_session()
            from sqlanon.context import RunContext

            with RunContext(ctx.db) as fresh:
                deadline = time.monotonic() + RESCUE_SECONDS
                while not fresh.lock(self.key, wait=False):
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.1)
                self._clear(ledger.claims(self.source), fresh)
        except Exception as e:  # noqa: BLE001 - the error that ended the run is the one to tell
            log.info("sqlanon: what a failed materialize of %s made is left to the next one: %s", self.source, e)
