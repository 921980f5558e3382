"""Privacy criteria. Never imports anonymize/: any method can be checked by any criterion."""
from __future__ import annotations

from sqlanon.criteria.alpha import AlphaDeassociation, alpha_fraction
from sqlanon.criteria.base import Criterion, Verdict
from sqlanon.criteria.k_anonymity import KAnonymity
from sqlanon.criteria.l_diversity import LDiversity
from sqlanon.criteria.persons import DistinctPersons
from sqlanon.criteria.t_closeness import TCloseness
from sqlanon.policy.model import Requirement


def for_requirement(req: Requirement) -> list[Criterion]:
    """The criteria a requirement asks for; k-anonymity is one of them like any other."""
    out: list[Criterion] = [KAnonymity(req.k)]
    if req.alpha is not None:
        out.append(AlphaDeassociation(alpha_fraction(req.alpha.value)))
    if req.l is not None:
        out.append(LDiversity(req.l))
    if req.t is not None:
        out.append(TCloseness(req.t))
    out.extend(DistinctPersons(p) for p in req.persons)
    return out


__all__ = ["AlphaDeassociation", "Criterion", "DistinctPersons", "KAnonymity", "LDiversity", "TCloseness", "Verdict",
           "for_requirement"]
