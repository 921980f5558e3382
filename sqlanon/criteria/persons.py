"""k-anonymity over persons: every class of a release whose persons may have several rows (a join
of protected tables, or a table whose policy names its ``person``) holds rows of at least k
distinct persons. Counting rows is not enough — one person with many rows would fill a class
alone — so the persons are counted by the column that recognises them, which the release carries
inside the database and never returns. Rows without a person value count as one person together,
as pushdown/persons.py counts them: the cautious reading."""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.criteria.base import DistributionCriterion, Verdict
from sqlanon.policy.model import Persons
from sqlanon.sql.templates import render


@dataclass(frozen=True)
class DistinctPersons(DistributionCriterion):
    spec: Persons
    name: str = "k-anonymity over persons"

    def statement(self, counts: str, whole: str) -> exp.Expression:
        return render("criteria/persons", counts=counts, k=exp.Literal.number(self.spec.value))

    def judge(self, values: dict[str, object]) -> Verdict:
        bad = int(values.get("persons_violations") or 0)
        return Verdict(self.name, bad == 0, f"fewest persons in a class {int(values.get('persons_min') or 0)} "
                                            f"(k={self.spec.value})")
