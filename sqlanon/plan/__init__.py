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
        # Seed 001 Abbildung 23: row-oriented query over one table → (α,k); t-closeness → SABRE;
        # the other branches (slicing, DP) arrive with their methods. (α,k) does not search for
        # l-diversity or t-closeness: t goes to SABRE (on Adult, k=5 l=3 t=0.2: KL sum 2.8 vs
        # Mondrian's 5.7), l alone to Mondrian, whose cuts keep every part l-diverse.
        if requirement.t is not None:
            return Plan("sabre", "auto: the requirement asks for t-closeness → SABRE (sensitive values "
                                 "bucketized, every class drawn in proportion)", requirement)
        if requirement.l is not None:
            return Plan("mondrian", "auto: the requirement asks for l-diversity → Mondrian "
                                    "partitioning (its cuts keep every part within it)", requirement)
        return Plan("alpha_k", "auto: single-table row query → (α,k) local recoding", requirement)
    if requirement.method not in REGISTRY:
        raise PolicyError(f"method {requirement.method!r} is not available", table=analysis.policy.table)
    return Plan(requirement.method, f"policy names method {requirement.method}", requirement)
