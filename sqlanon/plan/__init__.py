"""Stage 3: classify the query and choose the method (John's thesis, §4–§5)."""
from __future__ import annotations

from sqlanon.plan.classify import Classification, classify, count_statement
from sqlanon.plan.decide import Plan, plan

__all__ = ["Classification", "Plan", "classify", "count_statement", "plan"]
