"""The library surface: ``connect(url, policy)`` → ``Session.execute`` / ``plan`` / ``explain`` / ``check``.

The CLI and the proxy call this module and nothing below it.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from sqlanon.audit import Audit, AuditEvent
from sqlanon.backends.connect import Database, open_database
from sqlanon.errors import PolicyError, QueryRejected, ReleaseRefused, SqlanonError
from sqlanon.finish.report import Report
from sqlanon.flow import Admission, Result, Target, admit, check, choose, materialize, run
from sqlanon.plan import Plan
from sqlanon.policy import Policy, load_policy
from sqlanon.policy.check import check_against_database
from sqlanon.verify import Measurement


class Session:
    def __init__(self, db: Database, policy: Policy, *, client: str = "library", front_end: str = "library",
                 audit: Audit | None = None):
        self.db = db
        self.policy = policy
        #: who sends the statements (the proxy's client name), for the audit trail
        self.client = client
        self.front_end = front_end
        self.audit = Audit() if audit is None else audit
        #: temp tables the last ``execute`` created (all dropped when it returned or raised)
        self.last_temp_tables: list[str] = []

    @property
    def backend(self) -> str:
        return self.db.backend.name

    def execute(self, sql: str, *, k: int | None = None, alpha: float | None = None,
                progress: Callable[[str], None] | None = None) -> Result:
        """Run ``sql``; protected tables are anonymized inside the database before the rest runs.
        ``progress`` is told the stage and the statements sent so far, before each statement."""
        self.last_temp_tables = []
        t0 = time.perf_counter()
        try:
            result, _ctx, _plan = run(self.db, self.policy, sql, k=k, alpha=alpha, created=self.last_temp_tables,
                                      progress=progress)
        except SqlanonError as e:
            self._record(sql, e, time.perf_counter() - t0)
            raise
        r = result.report
        self.record(sql, "passed" if r.table is None else "anonymized", table=r.table,
                    method=None if r.table is None else r.method, seconds=time.perf_counter() - t0,
                    rows=len(result.rows))
        return result

    def record(self, sql: str, decision: str, **fields: Any) -> None:
        """One audit event for ``sql`` under this session's client (front-ends that relay
        pass-through statements themselves report them here)."""
        self.audit.record(AuditEvent(self.client, self.front_end, sql, decision, **fields))

    def _record(self, sql: str, e: SqlanonError, seconds: float) -> None:
        if isinstance(e, QueryRejected):
            self.record(sql, "rejected", construct=e.construct, message=e.message, seconds=seconds)
        elif isinstance(e, ReleaseRefused):
            self.record(sql, "refused", message=e.message, seconds=seconds)
        else:
            self.record(sql, "error", message=e.message, seconds=seconds)

    def as_client(self, client: str, front_end: str, policy: Policy | None = None) -> "Session":
        """A session over the same database and audit sinks for another caller (one client of
        the proxy), under its own identity and, when given, its own policy. Closing it would
        close the shared database: front-ends close only the session they connected."""
        return Session(self.db, self.policy if policy is None else policy, client=client, front_end=front_end,
                       audit=self.audit)

    def admit(self, sql: str) -> Admission:
        """Whether ``sql`` passes through unchanged (and the text to send) or reads a protected
        table (run it with ``execute``); raises QueryRejected where ``execute`` would. Runs
        nothing: a front-end that relays pass-through statements itself (the proxy) asks here."""
        try:
            return admit(self.db, self.policy, sql)
        except QueryRejected as e:
            self._record(sql, e, 0.0)
            raise

    def plan(self, sql: str, *, k: int | None = None, alpha: float | None = None) -> Plan | None:
        """The method ``sql`` would be anonymized with, the query's class and the rule that fired
        (seed 001 §5); None when it reads no protected table. Sends only a COUNT(*)."""
        return choose(self.db, self.policy, sql, k=k, alpha=alpha)

    def materialize(self, table: str, into: str, *, view: str | None = None, where: str | None = None,
                    k: int | None = None, alpha: float | None = None,
                    progress: Callable[[str], None] | None = None) -> Report:
        """Anonymize ``table`` (the rows ``where`` selects) once, inside the database, into the new
        table ``into`` — rows in random order — and a view ``view`` over it; grants are the
        administrator's. Refuses to replace an existing table or view."""
        return materialize(self.db, self.policy, table, Target(into, view), where=where, k=k, alpha=alpha,
                           progress=progress)

    def check(self, table: str) -> Measurement:
        """Measure ``table`` as it is stored — a release made by anyone — against the policy's
        models for it: the classes over its quasi-identifiers and every model's verdict."""
        return check(self.db, self.policy, table)

    def explain(self, sql: str, *, k: int | None = None, alpha: float | None = None,
                analyze: bool = False) -> str:
        """The plan and every SQL statement in the target dialect.

        Without ``analyze`` nothing runs: the statements of the first search round are shown as
        they would be sent. With ``analyze`` the query runs (no rows are returned) and every
        statement that ran is listed with its time, followed by the report.
        """
        result, ctx, chosen = run(self.db, self.policy, sql, k=k, alpha=alpha, live=analyze)
        lines = [f"backend: {self.db.backend.name} ({self.db.backend.server_version})"]
        if chosen is None:
            lines.append("plan: pass-through (the query reads no protected table)")
        else:
            lines.append(f"plan: {chosen.method}; rule: {chosen.rule}")
            if not analyze:
                lines.append("note: the search repeats its round of statements (per generalization level for "
                             "alpha_k, per cutting pass for mondrian, per probe of the number of classes for "
                             "sabre, per group for mdav and vmdav, inside one server-side loop where the "
                             "database has one); explain --analyze runs it and lists every statement")
        stage = None
        for i, s in enumerate(ctx.statements, 1):
            if s.stage != stage:
                stage = s.stage
                lines.append(f"-- stage {stage}")
            t = f"  -- {s.seconds * 1000:.1f} ms" if s.seconds is not None else ""
            lines.append(f"[{i}] {s.sql};{t}")
        if analyze:
            lines.append(str(result.report))
        return "\n".join(lines)

    def close(self) -> None:
        self.db.dispose()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(url: str, policy: str | Path | dict | Policy) -> Session:
    """Open ``url`` (SQLAlchemy form) and check ``policy`` against the database's tables."""
    pol = load_policy(policy)
    db = open_database(url)
    try:
        check_against_database(pol, db)
    except PolicyError:
        db.dispose()
        raise
    return Session(db, pol)
