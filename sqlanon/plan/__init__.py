"""Stage 3: choose the method for a query (the decision algorithm grows here) and say why."""
from __future__ import annotations

from dataclasses import dataclass

from sqlanon.analyze import Analysis
from sqlanon.anonymize import REGISTRY
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement


@dataclass(frozen=True)
class Plan:
    method: str
    rule: str
    requirement: Requirement


def plan(analysis: Analysis, requirement: Requirement) -> Plan:
    if requirement.method == "auto":
        # Seed 001 Abbildung 23: row-oriented query over one table → (α,k); the other branches
        # (slicing, SABRE, V-MDAV, DP) arrive with their methods. (α,k) does not search for
        # l-diversity or t-closeness, Mondrian does: a requirement with l or t goes to Mondrian.
        if requirement.l is not None or requirement.t is not None:
            return Plan("mondrian", "auto: the requirement asks for l-diversity or t-closeness → Mondrian "
                                    "partitioning (its cuts keep every part within them)", requirement)
        return Plan("alpha_k", "auto: single-table row query → (α,k) local recoding", requirement)
    if requirement.method not in REGISTRY:
        raise PolicyError(f"method {requirement.method!r} is not available", table=analysis.policy.table)
    return Plan(requirement.method, f"policy names method {requirement.method}", requirement)
