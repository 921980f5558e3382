"""The library surface: ``connect(url, policy)`` → ``Session.execute`` / ``plan`` / ``explain`` / ``check``.

The CLI and the proxy call this module and nothing below it.
"""
from __future__ import annotations

import logging
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, overload

from sqlanon.access import DEFAULT_READER, UNENFORCED, enforce
from sqlanon.audit import Audit, AuditEvent
from sqlanon.backends.connect import Database, open_database
from sqlanon.backends.faults import translated
from sqlanon.backends.spark_session import handed_in
from sqlanon.catalog import Catalog, open_apart, open_catalog
from sqlanon.catalog.budget import reserve, spent
from sqlanon.catalog.consistency import Consistency
from sqlanon.catalog.differencing import check_differencing
from sqlanon.catalog.ledger import Ledger
from sqlanon.catalog.policies import stored_policy
from sqlanon.dp import Spend, Spent, no_ledger, spent_note
from sqlanon.errors import BackendError, PolicyError, QueryRejected, ReleaseRefused, SqlanonError
from sqlanon.finish.report import Report
from sqlanon.finish.stream import BATCH, Rows, Streamed
from sqlanon.flow import Admission, Guard, Result, Target, admit, check, choose, materialize, run, stream
from sqlanon.plan import Plan
from sqlanon.plan.explain import Explanation
from sqlanon.policy import Policy, load_policy
from sqlanon.policy.check import check_against_database
from sqlanon.policy.model import Differential, Overrides
from sqlanon.risk import RiskReport
from sqlanon.risk.measure import policy_quasi_identifiers, rows_risk, table_risk
from sqlanon.verify import Measurement

if TYPE_CHECKING:
    from sqlanon.backends.base import Backend
    from sqlanon.discover import Discovery
    from sqlanon.distributed import Federation
    from sqlanon.dp.synthesize import Synthesized

log = logging.getLogger("sqlanon.access")

#: the note of every answer given without a catalog
NO_CATALOG = ("no catalog: nothing defends across queries (differencing, repeated or complementary releases); "
              "see 'sqlanon db upgrade'")


def no_catalog(backend: Backend) -> str:
    """The note of an answer given without a catalog: where the database cannot keep one (Spark
    SQL), advice to make one would not work, and a catalog apart keeps only the ε ledger."""
    if backend.keeps_catalog:
        return NO_CATALOG
    return ("no catalog: nothing defends across queries (differencing, repeated or complementary releases); "
            f"{backend.title} cannot keep one")


class Session:
    def __init__(self, db: Database, policy: Policy, *, client: str = "library", front_end: str = "library",
                 audit: Audit | None = None, catalog: Catalog | None = None, ledger: Catalog | None = None):
        self.db = db
        self.policy = policy
        #: the catalog in the database (release log, audit log, policies), or None
        self.catalog = catalog
        #: the catalog that keeps the ε ledger and the audit log: the database's own, or, where
        #: that cannot keep one (Spark SQL), a database of its own (``connect(catalog=URL)``)
        self.ledger = ledger if ledger is not None else catalog
        #: who sends the statements (the proxy's client name), for the audit trail
        self.client = client
        self.front_end = front_end
        if audit is None:
            audit = Audit()
            if self.ledger is not None:
                audit.sinks.append(self.ledger.sink)
        self.audit = audit
        #: temp tables the last ``execute`` created (all dropped when it returned or raised)
        self.last_temp_tables: list[str] = []
        #: the unrestricted account has been warned of in the log (once per session)
        self._warned = False
        #: answers still being streamed: closing the session ends their runs
        self._streams: weakref.WeakSet[Rows] = weakref.WeakSet()

    @property
    def backend(self) -> str:
        return self.db.backend.name

    def execute(self, sql: str, *, k: int | None = None, alpha: float | None = None, l: int | None = None,  # noqa: E741
                t: float | None = None, method: str | None = None,
                progress: Callable[[str], None] | None = None, risk: bool = False,
                population: int | str | None = None) -> Result:
        """Run ``sql``; protected tables are anonymized inside the database before the rest runs.
        ``progress`` is told the stage and the statements sent so far, before each statement.
        ``k``, ``alpha``, ``l``, ``t`` may only tighten the policy; ``method`` names another one.
        ``risk`` (or ``population``, its size or an ARX region): the report carries the released
        rows' re-identification risk (``Report.risk``), as the policy's ``report.risk`` asks."""
        self.last_temp_tables = []
        t0 = time.perf_counter()
        try:
            with translated(self.db.backend):
                result, _ctx, _plan = run(self.db, self.policy, sql,
                                          overrides=Overrides(k, alpha, l, t, method, risk, population),
                                          created=self.last_temp_tables, progress=progress, guard=self._guard(),
                                          spend=self._spend())
        except SqlanonError as e:
            self._record(sql, e, time.perf_counter() - t0)
            raise
        self._answered(result.report)
        self._recorded(sql, result.report, t0, len(result.rows))
        return result

    def stream(self, sql: str, *, size: int = BATCH, k: int | None = None, alpha: float | None = None,
               l: int | None = None, t: float | None = None, method: str | None = None,  # noqa: E741
               progress: Callable[[str], None] | None = None, risk: bool = False,
               population: int | str | None = None) -> Streamed:
        """``execute``, but the answer's rows are read from the database as they are iterated or
        fetched (``fetchmany``), ``size`` at a time — a named cursor on PostgreSQL, an unbuffered
        one on MariaDB, SQLite's own — so that the client holds one batch, never the whole answer.
        Everything before the first row is as in ``execute``: the release is verified in the
        database, and a refusal raised, before this returns. The run's connection and temp tables
        are held until the last row is read or the answer is closed (``with``, ``close()``, or
        dropping it), then dropped; the audit log counts the rows read."""
        self.last_temp_tables = []
        t0 = time.perf_counter()
        try:
            with translated(self.db.backend):
                result = stream(self.db, self.policy, sql, size,
                                overrides=Overrides(k, alpha, l, t, method, risk, population),
                                created=self.last_temp_tables, progress=progress, guard=self._guard(),
                                spend=self._spend(), answered=self._answered)
        except SqlanonError as e:
            self._record(sql, e, time.perf_counter() - t0)
            raise
        report = result.report  # not the answer itself: a reader that drops it ends the run at once
        result.rows.on_close = lambda n, _complete: self._recorded(sql, report, t0, n)
        self._streams.add(result.rows)
        return result

    def _answered(self, r: Report) -> None:
        """An answer's notes and its entry in the release log, before its rows are handed over
        (a streamed answer's before its statement runs)."""
        if not self.db.enforced:
            r.notes.append(UNENFORCED)
            if not self._warned:
                self._warned = True
                log.warning("sqlanon: %s", UNENFORCED)
        if self.catalog is None and r.table is not None:
            r.notes.append(no_catalog(self.db.backend))
        with translated(self.db.backend):
            self._log_release(r)

    def _recorded(self, sql: str, r: Report, t0: float, rows: int) -> None:
        self.record(sql, "passed" if r.table is None else "anonymized", table=r.table,
                    method=None if r.table is None else r.method, seconds=time.perf_counter() - t0,
                    rows=rows, message=spent_note(r))

    def record(self, sql: str, decision: str, *, failing: bool = False, **fields: Any) -> None:
        """One audit event for ``sql`` under this session's client (front-ends that relay
        pass-through statements themselves report them here). ``failing``: see Audit.record."""
        self.audit.record(AuditEvent(self.client, self.front_end, sql, decision, **fields), failing=failing)

    def _record(self, sql: str, e: SqlanonError, seconds: float) -> None:
        # the error on its way out is the one to tell: a catalog that cannot take its event
        # (the same lost connection, the same lock) is logged below warnings
        if isinstance(e, QueryRejected):
            self.record(sql, "rejected", construct=e.construct, message=e.message, seconds=seconds, failing=True)
        elif isinstance(e, ReleaseRefused):
            self.record(sql, "refused", message=e.message, seconds=seconds, failing=True)
        else:
            self.record(sql, "error", message=e.message, seconds=seconds, failing=True)

    def as_client(self, client: str, front_end: str, policy: Policy | None = None) -> "Session":
        """A session over the same database and audit sinks for another caller (one client of
        the proxy), under its own identity and, when given, its own policy. Closing it would
        close the shared database: front-ends close only the session they connected."""
        if policy is not None and policy is not self.policy:
            enforce(self.db, policy, unrestricted=not self.db.enforced)
        return Session(self.db, self.policy if policy is None else policy, client=client, front_end=front_end,
                       audit=self.audit, catalog=self.catalog, ledger=self.ledger)

    def admit(self, sql: str) -> Admission:
        """Whether ``sql`` passes through unchanged (and the text to send) or reads a protected
        table (run it with ``execute``); raises QueryRejected where ``execute`` would. Runs
        nothing: a front-end that relays pass-through statements itself (the proxy) asks here."""
        try:
            with translated(self.db.backend):
                return admit(self.db, self.policy, sql)
        except QueryRejected as e:
            self._record(sql, e, 0.0)
            raise

    def plan(self, sql: str, *, k: int | None = None, alpha: float | None = None, l: int | None = None,  # noqa: E741
             t: float | None = None, method: str | None = None) -> Plan | None:
        """The method ``sql`` would be anonymized with, the query's class and the rule that fired
        (John's thesis, §5); None when it reads no protected table. Sends only a COUNT(*)."""
        with translated(self.db.backend):
            return choose(self.db, self.policy, sql, overrides=Overrides(k, alpha, l, t, method))

    def materialize(self, table: str, into: str, *, view: str | None = None, where: str | None = None,
                    k: int | None = None, alpha: float | None = None, l: int | None = None,  # noqa: E741
                    t: float | None = None, method: str | None = None, refresh: bool = False,
                    progress: Callable[[str], None] | None = None, risk: bool = False,
                    population: int | str | None = None) -> Report:
        """Anonymize ``table`` (the rows ``where`` selects) once, inside the database, into the new
        table ``into`` — rows in random order — and a view ``view`` over it; grants are the
        administrator's. Refuses to replace an existing table or view.

        With a catalog, the release is logged and kept consistent with every earlier stored
        release of ``table`` (``privacy.across_releases``); ``refresh`` rewrites the earlier
        release ``into`` from the table's current rows, keeping each remaining row's class and
        refusing when old and new release together would break the policy.

        The table, the view and the release log's row are made together or not at all, and the
        materializations of one table one after the other (finish/store.py): a run killed half
        way leaves nothing, or what the next materialize or refresh of the table removes."""
        t0 = time.perf_counter()
        what = f"materialize {table} into {into}" + (f" where {where}" if where else "") + (" refresh" * refresh)
        try:
            with translated(self.db.backend):
                report = materialize(self.db, self.policy, table, self._target(table, into, view, refresh),
                                     where=where, overrides=Overrides(k, alpha, l, t, method, risk, population),
                                     progress=progress,
                                     guard=self._guard(rows=False))
        except SqlanonError as e:
            self._record(what, e, time.perf_counter() - t0)
            raise
        self.record(what, "anonymized", table=report.table, method=report.method, seconds=time.perf_counter() - t0,
                    rows=report.rows_released)
        return report

    def releases(self, table: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The release log, newest first (needs a catalog)."""
        with translated(self.db.backend):
            return self._catalog().releases(table, limit)

    def _target(self, table: str, into: str, view: str | None, refresh: bool) -> Target:
        tp = self.policy.for_table(table)
        if self.catalog is None or tp is None:
            if refresh:
                raise BackendError("a refresh keeps the earlier release consistent through the catalog's memory of "
                                   "it: this database has no catalog")
            return Target(into, view)
        # whether a refresh's table is a stored release is read under the table's lock
        return Target(into, view, refresh, Consistency(self.catalog, tp.table, into, tp.requirement.across_releases),
                      Ledger(self.catalog, self.client, self.front_end))

    def _catalog(self) -> Catalog:
        if self.catalog is None:
            raise BackendError("this database has no sqlanon catalog: run 'sqlanon db upgrade' or connect with "
                               "catalog=True")
        return self.catalog

    def _ledger(self) -> Catalog:
        """The catalog that keeps the ε ledger, or an error that says how to have one."""
        if self.ledger is not None:
            return self.ledger
        if self.db.backend.keeps_catalog:
            return self._catalog()
        raise BackendError(no_ledger(self.db.backend))

    def _guard(self, rows: bool = True) -> Guard | None:
        """The catalog's differencing check; ``rows``: also against the rows earlier answers
        selected (a stored release keeps its own memory of rows instead)."""
        if self.catalog is None:
            return None
        catalog = self.catalog
        return lambda frag, req, ctx: check_differencing(catalog, frag, req, ctx, rows=rows)

    def _spend(self) -> Spend | None:
        """The catalog's ε ledger for this session's client (sqlanon.dp); None without a catalog,
        where differentially private answers are refused."""
        if self.ledger is None:
            return None
        ledger, client = self.ledger, self.client

        def spend(table: str, dp: Differential, epsilon: float, delta: float) -> Spent:
            with translated(ledger.db.backend):  # the ledger's database may be another than the table's
                return reserve(ledger, client, table, dp, epsilon, delta)
        return spend

    def budget(self, client: str | None = None) -> list[dict[str, Any]]:
        """What each client has spent of each table's ε budget (differential privacy), within
        the window the policy gives (needs a catalog)."""
        windows = {t: tp.requirement.dp.epsilon.window for t, tp in self.policy.tables.items()
                   if tp.requirement.dp is not None}
        budgets = {t: tp.requirement.dp.epsilon for t, tp in self.policy.tables.items() if tp.requirement.dp is not None}
        ledger = self._ledger()
        with translated(ledger.db.backend):
            rows = spent(ledger, windows, client)
        for r in rows:
            b = budgets.get(r["table"])
            r["budget"] = b.budget if b is not None else None
            r["per"] = b.per if b is not None else None
        return rows

    def synthesize(self, table: str, into: str, *, epsilon: float, workload: list[list[str]] | None = None,
                   rounds: int | None = None, bins: int = 10) -> Synthesized:
        """A synthetic table ``into`` drawn by MWEM from ``table`` (sqlanon/dp/mwem.py): it answers the
        workload's marginals (default: every 1- and 2-way marginal of the quasi-identifiers with a
        known domain); ``epsilon`` is reserved in the catalog's ledger first."""
        # imported where used, as discovery is: not part of every query's start-up
        from sqlanon.dp.synthesize import synthesize

        t0 = time.perf_counter()
        what = f"synthesize {table} into {into} epsilon {epsilon:g}"
        try:
            with translated(self.db.backend):
                made = synthesize(self.db, self.policy, table, into, epsilon=epsilon, workload=workload,
                                  rounds=rounds, bins=bins, spend=self._spend())
        except SqlanonError as e:
            self._record(what, e, time.perf_counter() - t0)
            raise
        with translated(self.db.backend):
            self.record(what, "anonymized", table=made.table, method="mwem", seconds=time.perf_counter() - t0,
                        rows=made.rows)
        return made

    def _log_release(self, report: Report, target: str | None = None) -> None:
        # a differentially private answer releases no rows: the ledger and the audit log keep it
        if self.catalog is not None and report.table is not None and report.method != "dp":
            self.catalog.record_release(report, client=self.client, front_end=self.front_end, target=target)

    def check(self, table: str, *, risk: bool = False, population: int | str | None = None) -> Measurement:
        """Measure ``table`` as it is stored — a release made by anyone — against the policy's
        models for it: the classes over its quasi-identifiers and every model's verdict; with
        ``risk`` (or ``population``) its re-identification risk (``Measurement.risk``)."""
        with translated(self.db.backend):
            return check(self.db, self.policy, table, overrides=Overrides(risk=risk, population=population))

    def discover(self, table: str, *, max_size: int = 4, threshold: float = 0.95,
                 qi: list[str] | None = None, workers: int = 2) -> Discovery:
        """The minimal column combinations of ``table`` that single out rows, its identifier-like
        columns and a policy proposal (``sqlanon discover``); reads the raw table under the
        pipeline's identity, and only counts, lengths and numeric ranges come back. ``workers``:
        whole-table measurements sent at a time, each on a connection of its own."""
        from sqlanon.discover import discover as discover_table

        return discover_table(self.db, table, max_size=max_size, threshold=threshold, qi=qi, workers=workers)

    def risk(self, table: str | None = None, *, query: str | None = None, release_of: str | None = None,
             qi: list[str] | None = None, population: int | str | None = None,
             threshold: float | None = None, population_table: str | None = None) -> RiskReport:
        """Re-identification risk (ARX's prosecutor, journalist and marketer risk, sample and
        population uniqueness) of ``table`` — a protected table or a stored release of
        ``release_of`` — over the policy's quasi-identifiers, from a class-size frequency table
        built in the database; or of ``query``'s anonymized answer, on the rows it released.
        ``population``: its size, an ARX region ('usa', …), or None (a hundred times the rows;
        the rows of ``population_table``, a table ``table`` is a sample of, in which the
        journalist's classes are counted)."""
        if query is not None:
            _no_population_table(population_table)
            result = self.execute(query)
            source = result.report.table
            qis = qi or (policy_quasi_identifiers(self.policy, source)[0] if source else [])
            return rows_risk(f"answer of {query}", result.columns, result.rows, qis, population=population,
                             threshold=threshold)
        if table is None:
            raise PolicyError("risk of what: name a table or give a query")
        if qi is None:
            qi, release_of = policy_quasi_identifiers(self.policy, table, release_of)
        return table_risk(self.db, table, qi, release_of=release_of, population=population, threshold=threshold,
                          population_table=population_table)

    def explain(self, sql: str, *, k: int | None = None, alpha: float | None = None, l: int | None = None,  # noqa: E741
                t: float | None = None, method: str | None = None, analyze: bool = False,
                summary: bool = False, risk: bool = False) -> str:
        """The plan and every SQL statement in the target dialect; ``summary``: the plan and the
        number of statements per stage, without the SQL.

        Without ``analyze`` nothing runs: the statements of the first search round are shown as
        they would be sent. With ``analyze`` the query runs (no rows are returned) and every
        statement that ran is listed with its time, followed by the report.
        """
        return self.explanation(sql, k=k, alpha=alpha, l=l, t=t, method=method, analyze=analyze,
                                risk=risk).text(summary)

    def explanation(self, sql: str, *, k: int | None = None, alpha: float | None = None, l: int | None = None,  # noqa: E741
                    t: float | None = None, method: str | None = None, analyze: bool = False,
                    risk: bool = False) -> Explanation:
        """What ``explain`` shows, as data (``Explanation.to_dict`` for JSON); ``risk``: with the
        statement that counts the released classes' sizes (and, analyzed, the risk figures)."""
        with translated(self.db.backend):
            result, ctx, chosen = run(self.db, self.policy, sql, overrides=Overrides(k, alpha, l, t, method, risk),
                                      live=analyze, timed=analyze, spend=self._spend() if analyze else None)
        return Explanation(f"{self.db.backend.name} ({self.db.backend.server_version})",
                           chosen.method if chosen else None, chosen.rule if chosen else None, result.report,
                           tuple(ctx.statements), analyze)

    def close(self) -> None:
        for rows in list(self._streams):  # a reader that leaves the session mid-answer
            try:
                rows.close()
            except SqlanonError as e:  # its run ended anyway; the session closes
                log.debug("sqlanon: closing an answer with its session: %s", e)
        self.db.dispose()
        if self.ledger is not None and self.ledger is not self.catalog:
            self.ledger.db.dispose()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            self.close()
        except Exception as e:  # noqa: BLE001 - the error on its way out is the one to tell
            if kind is None:
                raise
            log.debug("sqlanon: closing a session after a failure: %s", e)


@overload
def connect(url: str = "", policy: str | Path | dict | Policy | None = None, *, catalog: bool | str | None = None,
            client: str = "library", front_end: str = "library", reader_role: str = DEFAULT_READER,
            unrestricted: bool = False, spark: Any = None) -> Session: ...


@overload
def connect(url: dict[str, str], policy: str | Path | dict | Policy | None = None, *,
            catalog: bool | str | None = None,
            client: str = "library", front_end: str = "library", reader_role: str | dict[str, str] = DEFAULT_READER,
            unrestricted: bool = False, spark: Any = None) -> Federation: ...


def connect(url: str | dict[str, str] = "", policy: str | Path | dict | Policy | None = None, *,
            catalog: bool | str | None = None, client: str = "library", front_end: str = "library",
            reader_role: str | dict[str, str] = DEFAULT_READER, unrestricted: bool = False,
            spark: Any = None) -> Session | Federation:
    """Open ``url`` (SQLAlchemy form) and check ``policy`` against the database's tables.

    Several databases, each under a name (``{"clinic": url1, "lab": url2}``), give a
    Federation (sqlanon.distributed): the policy names their tables as ``clinic.patients``, and
    a join of two databases' tables is anonymized with D2Pt.

    ``catalog``: True creates or upgrades sqlanon's catalog in the database (never dropping
    anything); None uses it where it exists; False ignores it. With a catalog, every release is
    logged, every statement audited, and selections are checked against earlier releases.
    Without ``policy``, the policies applied to the catalog are used. A URL (``catalog=
    "sqlite:///ledger.db"``) names a database of its own for the catalog where the tables'
    database cannot keep one (Spark SQL): it keeps the ε ledger of differentially private
    answers and the audit log (``sqlanon db upgrade --catalog URL`` makes it).

    The database must refuse the login's raw reads of protected tables and of the catalog,
    which only the pipeline reads, under ``reader_role`` (sqlanon.access; ``sqlanon db grants``
    sets it up). ``unrestricted=True`` serves a login that can read them, for development only:
    every report then says that a fault of the analyzer would return raw rows.

    ``spark``: an application's own SparkSession instead of a URL; its current database's tables
    are served (sqlanon.backends.spark)."""
    if spark is not None:
        url = handed_in(spark)
    if isinstance(url, dict):
        from sqlanon.distributed import connect as federate

        if isinstance(catalog, str):
            raise BackendError("a catalog database of its own serves one database that cannot keep the catalog "
                               "(Spark SQL), not several")
        if policy is None:
            raise PolicyError("several databases need a policy that names their tables (clinic.patients, …)")
        return federate(url, policy, reader_role=reader_role, catalog=catalog, client=client, front_end=front_end,
                        unrestricted=unrestricted)
    assert isinstance(reader_role, str), "one reader role per database is for several databases"
    db = open_database(url, reader=reader_role)
    ledger = None
    try:
        with translated(db.backend):
            if isinstance(catalog, str):
                ledger, cat = _apart(db, catalog), None
            else:
                cat = None if catalog is False else open_catalog(db, create=bool(catalog))
            if policy is None:
                if cat is None:
                    raise PolicyError("no policy given and the database has no sqlanon catalog to take one from")
                pol = stored_policy(cat)
            else:
                pol = load_policy(policy)
            # the policy's checks run while the login's own connection is opened and asked
            enforce(db, pol, unrestricted=unrestricted, meanwhile=lambda: check_against_database(pol, db))
    except BaseException:
        db.dispose()
        if ledger is not None:
            ledger.db.dispose()
        raise
    return Session(db, pol, client=client, front_end=front_end, catalog=cat, ledger=ledger)


def _apart(db: Database, url: str) -> Catalog:
    """The catalog in a database of its own, for tables in ``db``, which cannot keep one. Where
    ``db`` can, its own catalog compares selections with earlier releases inside it
    (differencing, consistency): one apart would silently lose that, so it is refused."""
    if db.backend.keeps_catalog:
        raise BackendError(f"{db.backend.title} keeps sqlanon's catalog itself (its defences compare selections "
                           "inside the tables' database): a catalog database of its own is for Spark SQL; "
                           "connect with catalog=True")
    with translated():
        return open_apart(url)


def discover(url: str, table: str, *, max_size: int = 4, threshold: float = 0.95, qi: list[str] | None = None,
             reader_role: str = DEFAULT_READER, workers: int = 2) -> Discovery:
    """``Session.discover`` before any policy exists: opens ``url`` as the pipeline does (under
    ``reader_role``, which reads the raw table) and searches ``table``."""
    # imported where used: discovery is not part of every query's start-up (0.03 s of imports)
    from sqlanon.discover import discover as discover_table

    db = open_database(url, reader=reader_role)
    try:
        return discover_table(db, table, max_size=max_size, threshold=threshold, qi=qi, workers=workers)
    finally:
        db.dispose()


def risk(url: str, table: str | None = None, policy: str | Path | dict | Policy | None = None, *,
         query: str | None = None, release_of: str | None = None, qi: list[str] | None = None,
         population: int | str | None = None, threshold: float | None = None, population_table: str | None = None,
         reader_role: str = DEFAULT_READER, unrestricted: bool = False) -> RiskReport:
    """``Session.risk`` in one call. A table is read under ``reader_role`` (``qi`` or the
    policy's quasi-identifiers); a ``query`` runs through a session of ``connect`` like any
    other, as the login of ``url``, and is measured on the rows it released."""
    if query is not None:
        _no_population_table(population_table)
        with connect(url, policy, catalog=None, reader_role=reader_role, unrestricted=unrestricted) as s:
            return s.risk(query=query, qi=qi, population=population, threshold=threshold)
    if table is None:
        raise PolicyError("risk of what: name a table or give a query")
    if qi is None:
        if policy is None:
            raise PolicyError("no quasi-identifiers: give a policy or the columns (qi)")
        qi, release_of = policy_quasi_identifiers(load_policy(policy), table, release_of)
    db = open_database(url, reader=reader_role)
    try:
        return table_risk(db, table, qi, release_of=release_of, population=population, threshold=threshold,
                          population_table=population_table)
    finally:
        db.dispose()


def _no_population_table(population_table: str | None) -> None:
    if population_table is not None:
        raise PolicyError("a population table measures a stored table (its classes are matched in the database), "
                          "not a query's answer: materialize the release and measure it")
