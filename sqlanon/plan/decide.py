"""Stage 3: choose the method for a query by the decision algorithm of John's thesis
(Figure 23), and say why, over the methods that exist and the models the policy asks for:
1. column-oriented (simple or complex) → slicing, which releases every column's values exactly
   and breaks the links between column groups; it bounds links by 1/l and keeps k per column
   group, so a policy with t, α or recursive (c,l) goes on to the row rules;
2. t → SABRE; α without l → (α,k), the one method here that meets α by suppressing rows where
   no generalization can;
3. row-oriented with few rows (``privacy.few_rows``, default 10,000) → (α,k) local recoding,
   when neither l nor t is asked ((α,k) builds neither); distinct l over numeric
   quasi-identifiers with many rows → V-MDAV; Mondrian for the rest (it keeps k, α and l).
The rows are counted (a pushed-down COUNT(*)) only when the rule depends on them.
``privacy.consistent: true`` → global recoding (one generalization per column), before all of these.
Joins over several databases (D2Pt) and DP do not exist here; such queries are rejected earlier.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from sqlanon.analyze import Analysis, column_families
from sqlanon.anonymize import REGISTRY
from sqlanon.backends.connect import Database
from sqlanon.errors import PolicyError, QueryRejected
from sqlanon.plan.classify import Classification, classify
from sqlanon.policy.model import Requirement


@dataclass(frozen=True)
class Plan:
    method: str
    rule: str
    requirement: Requirement
    classification: Classification | None = None
    #: methods to try in turn when a release meets every model but suppresses more than
    #: ``max_suppression`` allows (withheld or fully generalized rows)
    fallback: tuple[str, ...] = ()


def plan(analysis: Analysis, requirement: Requirement, db: Database,
         count: Callable[[], int | None] = lambda: None) -> Plan:
    """``count`` returns the rows the query selects; it is called only when a rule depends on
    it (a pushed-down COUNT(*) costs a scan of the selection)."""
    assert analysis.policy is not None
    if analysis.link is not None and requirement.method == "slicing":
        raise QueryRejected("slicing of a join of protected tables", f"{analysis.policy.table}: slicing breaks "
                            "rows apart, and the persons behind a joined release are counted in classes of whole rows")
    if analysis.policy.person is not None and requirement.method == "slicing":
        raise QueryRejected("slicing of a table with several rows per person", f"{analysis.policy.table}: slicing "
                            "breaks rows apart, and persons (person: "
                            f"{analysis.policy.person}) are counted in classes of whole rows")
    differential = _differential(analysis, requirement)
    if differential is not None:
        return differential
    if requirement.method != "auto":
        if requirement.method not in REGISTRY:
            raise PolicyError(f"method {requirement.method!r} is not available", table=analysis.policy.table)
        return Plan(requirement.method, f"policy names method {requirement.method}", requirement)
    req = requirement
    cls = classify(analysis, None)

    def chosen(method: str, rule: str) -> Plan:
        # (α,k), SABRE and slicing can leave rows with every quasi-identifier at the root, which
        # count as suppressed; Mondrian's cuts keep every model they build and seldom end at the
        # root: it is tried next
        if method in ("alpha_k", "sabre", "slicing") and _one_attribute(req):
            return Plan(method, f"auto: {cls} → {rule}; Mondrian if it suppresses more than max_suppression "
                                "allows", req, cls, ("mondrian",))
        return Plan(method, f"auto: {cls} → {rule}", req, cls)

    if req.consistent:
        return _consistent(analysis.policy.table, req, cls)
    unsliceable = [m for m, v in (("t", req.t), ("alpha", req.alpha)) if v is not None]
    if req.l is not None and req.l.variant == "recursive":
        unsliceable.append("recursive (c,l)")
    if cls.column_oriented and not unsliceable:
        return chosen("slicing", "slicing (column-oriented queries)")
    detour = f"; slicing does not build {', '.join(unsliceable)}" if cls.column_oriented else ""
    if req.t is not None:
        return chosen("sabre", f"SABRE (t-closeness asked{detour})")
    if req.alpha is not None and req.l is None:
        return chosen("alpha_k", f"(α,k) local recoding (α is asked, and only (α,k) suppresses rows where no "
                                 f"generalization meets it{detour})")
    families = column_families(analysis, db)
    numeric = all(families[q.column] == "numeric" for q in analysis.policy.quasi_identifiers)
    diverse = req.l is not None and req.alpha is None and req.l.variant == "distinct" and numeric
    if req.l is None or diverse:  # the choice depends on the number of rows
        cls = replace(cls, rows=count())
    few = cls.rows is None or cls.rows <= req.few_rows
    size = f"{'few' if few else 'many'} rows (few: at most {req.few_rows})"
    if few and req.l is None:
        return chosen("alpha_k", f"(α,k) local recoding ({size}{detour})")
    if diverse and not few:
        return chosen("vmdav", f"V-MDAV (distinct l over numeric quasi-identifiers, {size}{detour})")
    asked = ", ".join(["k"] + [name for name, v in (("α", req.alpha), ("l-diversity", req.l)) if v is not None])
    return chosen("mondrian", f"Mondrian partitioning (its cuts keep {asked}; {size}{detour})")


def _consistent(table: str, req: Requirement, cls: Classification) -> Plan:
    """``consistent: true``: one generalization per column for the whole release, so that a
    label means the same in every row and two extracts join — what global (full-domain)
    recoding gives, and the local methods do not."""
    missing = [f"t-closeness with the {req.t.distance} distance"] if req.t is not None and req.t.distance != "equal" \
        else []
    if req.l is not None and req.l.variant != "distinct":
        missing.append(f"{req.l.variant} l-diversity")
    if missing:
        raise PolicyError(f"privacy.consistent asks for global recoding, which builds k-anonymity, α, distinct "
                          f"l-diversity and t-closeness with the equal distance, not {', '.join(missing)}", table=table)
    return Plan("global", f"auto: {cls} → global recoding (consistent: true asks for one generalization per "
                          f"column; the optimum under privacy.metric {req.metric})", req, cls)


def _differential(analysis: Analysis, req: Requirement) -> Plan | None:
    """With ``privacy.epsilon``, a query that groups or aggregates is answered with differential
    privacy (John's thesis, Figure 23: aggregates → DP where the policy allows it), whatever
    method the policy names for row queries; ``method: dp`` refuses row queries."""
    if req.dp is None:
        return None
    assert analysis.policy is not None
    cls = classify(analysis, None)
    if cls.aggregating:
        why = "method dp" if req.method == "dp" else "privacy.epsilon"
        return Plan("dp", f"{why}: {cls} → differential privacy (noisy aggregates; aggregate queries are answered "
                          "with DP)", req, cls)
    if req.method == "dp":
        raise QueryRejected("row query under method dp", f"{analysis.policy.table}: differential privacy answers "
                            "aggregates (COUNT, SUM, AVG, GROUP BY); this query releases rows")
    return None


def _one_attribute(req: Requirement) -> bool:
    """Mondrian judges one sensitive attribute per release."""
    return len({m.attribute for m in (req.alpha, req.l, req.t) if m is not None}) <= 1
