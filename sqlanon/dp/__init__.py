"""Differentially private answers to aggregate queries (``privacy.epsilon``; John's thesis,
§2.5; Dwork, McSherry, Nissim & Smith 2006), as the flow's path beside anonymization.

rewrite.py turns the query into one bounded aggregate that runs in the database, mechanisms.py
draws the noise from OpenDP, release.py makes the answer, its intervals and its report. The
query's ε is reserved in the catalog's ledger (catalog/budget.py) before anything is read: a
query that would exceed the budget runs nothing, and without a catalog nothing is answered. On
Spark SQL the ledger is a catalog in a database of its own (``connect(catalog=URL)``).
Imports: analyze, policy, backends, errors, finish.report; never anonymize/ nor verify/.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from sqlanon.analyze import Analysis
from sqlanon.backends.base import Backend
from sqlanon.context import RunContext
from sqlanon.errors import QueryRejected
from sqlanon.finish.report import Report
from sqlanon.policy.model import Differential

if TYPE_CHECKING:
    from sqlanon.dp.rewrite import Bounded


@dataclass(frozen=True)
class Spent:
    """The ledger after a reservation: ε spent within the window (this query included), of the budget."""

    spent: float
    budget: float

    @property
    def left(self) -> float:
        return max(0.0, self.budget - self.spent)


#: reserves (table, settings, ε, δ) in the ledger, or raises ReleaseRefused when it would
#: exceed the budget (catalog/budget.py; the api binds the client)
Spend = Callable[[str, Differential, float, float], Spent]

def no_ledger(backend: Backend) -> str:
    """Why a noisy answer is refused without the catalog, and what to do about it there."""
    why = ("differential privacy needs the catalog's budget ledger: without one, answers could be asked again "
           "and averaged; ")
    if not backend.keeps_catalog:
        return why + (f"{backend.title} cannot keep the catalog: name a database of its own for it (connect with "
                      "catalog=URL, the CLI's --catalog URL), made by 'sqlanon db upgrade --catalog URL'")
    return why + "run 'sqlanon db upgrade'"


def respond(analysis: Analysis, dp: Differential, rule: str, ctx: RunContext,
            spend: Spend | None) -> tuple[list[str], list[tuple], Report]:
    """The noisy answer of an aggregate query and its report; in a static explain (``ctx.live``
    false) the bounded statement is recorded, nothing is spent and no figure is drawn."""
    # imported where used: an anonymized query, the CLI's usual one, needs none of it (rewrite
    # and release are ~15 ms of its start-up's imports)
    from sqlanon.dp.release import answer
    from sqlanon.dp.rewrite import bounded

    assert analysis.policy is not None
    table = analysis.policy.table
    with ctx.in_stage("plan"):
        b = bounded(analysis, dp, ctx.db)
    epsilon = dp.epsilon.per_query
    delta = 0.0 if b.public else (dp.delta or 0.0)
    spent = None
    if ctx.live:
        if spend is None:
            raise QueryRejected("differential privacy without a catalog", no_ledger(ctx.db.backend))
        with ctx.in_stage("budget"):
            spent = spend(table, dp, epsilon, delta)
    with ctx.in_stage("aggregate"):
        found = ctx.query(b.statement)
    report = Report(table=table, method="dp", rule=rule, requirement=_requirement(dp, b))
    if not ctx.live:
        report.statements = len(ctx.statements)
        report.seconds = dict(ctx.timings)
        return [o.name for o in b.outputs], [], report
    assert spent is not None
    with ctx.in_stage("noise"):
        out = answer(b, found, dp, epsilon)
    report.rows_released = len(out.rows)
    report.dp = {
        "epsilon_spent": epsilon, "delta_spent": delta, "budget": dp.epsilon.budget,
        "budget_spent": spent.spent, "budget_left": spent.left, "per": dp.epsilon.per,
        "window_seconds": dp.epsilon.window, "measurements": out.measurements,
        "epsilon_each": epsilon / out.measurements, "threshold": out.threshold, "noise": out.noise,
        "columns": out.columns, "intervals": out.intervals,
    }
    report.notes.append("figures are noisy (differential privacy): each interval holds the bounded aggregate "
                        f"(values clamped into privacy.bounds, at most {dp.rows_per_person} row(s) per person) "
                        "with 95 % probability")
    if out.threshold is not None:
        report.notes.append(f"groups without a public domain are released when their noisy COUNT(*) reaches "
                            f"{out.threshold} (δ = {delta:g}); a released group's count is conditioned on that")
    report.statements = len(ctx.statements)
    report.seconds = dict(ctx.timings)
    return out.columns, out.rows, report


def _requirement(dp: Differential, b: Bounded) -> dict:
    from sqlanon.dp.release import measurements

    d: dict = {"epsilon": {"per_query": dp.epsilon.per_query, "budget": dp.epsilon.budget, "per": dp.epsilon.per,
                           "window_seconds": dp.epsilon.window},
               "rows_per_person": dp.rows_per_person, "measurements": measurements(b)}
    if dp.delta is not None:
        d["delta"] = dp.delta
    used = {m.column for m in b.measures if m.kind == "sum"}
    if used:
        d["bounds"] = {c: list(dp.bound(c) or ()) for c in sorted(c for c in used if c is not None)}
    return d


def summary(report: Report) -> str | None:
    """One line on a differentially private answer for a front-end that cannot show the report
    (the PostgreSQL proxy's notice): ε spent, budget left, each figure's 95 % interval (first
    rows); None for any other answer."""
    d = report.dp
    if report.method != "dp" or not d:
        return None
    spans = []
    for i, row in enumerate(d["intervals"][:5], 1):
        parts = [f"{c} [{s[0]:.6g}, {s[1]:.6g}]" for c, s in zip(d["columns"], row) if s is not None]
        spans.append(f"row {i}: " + ", ".join(parts))
    more = f"; … {len(d['intervals']) - 5} more rows" if len(d["intervals"]) > 5 else ""
    return (f"differential privacy: ε {d['epsilon_spent']:g} spent, {d['budget_left']:g} of {d['budget']:g} left "
            f"(per {d['per']}); noisy figures, 95 % intervals: " + "; ".join(spans) + more)


def spent_note(report: Report) -> str | None:
    """What a differentially private answer spent, for the audit log; None for any other answer."""
    d = report.dp
    if report.method != "dp" or not d:
        return None
    return (f"differential privacy: ε {d['epsilon_spent']:g}" + (f", δ {d['delta_spent']:g}" if d["delta_spent"] else "")
            + f" spent; {d['budget_left']:g} of {d['budget']:g} left (per {d['per']})")
