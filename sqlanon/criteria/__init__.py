"""Privacy criteria. Never imports anonymize/: any method can be checked by any criterion."""
from __future__ import annotations

from fractions import Fraction

from sqlanon.criteria.alpha import AlphaDeassociation
from sqlanon.criteria.base import Criterion, Verdict
from sqlanon.criteria.k_anonymity import KAnonymity
from sqlanon.policy.model import Requirement


def for_requirement(req: Requirement, alpha: Fraction) -> list[Criterion]:
    """The criteria a requirement asks for; k-anonymity is one of them like any other."""
    out: list[Criterion] = [KAnonymity(req.k)]
    if req.alpha is not None:
        out.append(AlphaDeassociation(alpha))
    return out


__all__ = ["AlphaDeassociation", "Criterion", "KAnonymity", "Verdict", "for_requirement"]
