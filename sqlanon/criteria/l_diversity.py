"""l-diversity (Machanavajjhala et al. 2007; seed 000): every class holds well-represented
values of a sensitive attribute: l distinct ones, an entropy of at least log l, or recursive
(c,l) — the most frequent value rarer than c times the sum of all but the l−1 most frequent."""
from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from sqlanon.criteria.base import Verdict
from sqlanon.policy.model import Diversity
from sqlanon.sql.templates import render


@dataclass(frozen=True)
class LDiversity:
    spec: Diversity

    @property
    def name(self) -> str:
        variant = "recursive (c,l)" if self.spec.variant == "recursive" else self.spec.variant
        return f"{variant} l-diversity"

    @property
    def attribute(self) -> str:
        return self.spec.attribute

    def aggregates(self) -> dict[str, exp.Expression]:
        return {}

    def statement(self, counts: str, whole: str) -> exp.Expression:
        return render("criteria/l_diversity", counts=counts, l=exp.Literal.number(self.spec.value),
                      c=exp.Literal.number(self.spec.c if self.spec.c is not None else 1))

    def holds(self) -> exp.Expression:
        """The condition on one class's statistics: d distinct values, entropy h (natural log),
        r1 the largest count and tail the sum of the counts from the l-th largest on."""
        l = self.spec.value  # noqa: E741
        if self.spec.variant == "distinct":
            return exp.GTE(this=exp.column("d"), expression=exp.Literal.number(l))
        if self.spec.variant == "entropy":
            return exp.GTE(this=exp.column("h"), expression=exp.Literal.number(repr(math.log(l) - 1e-9)))
        return exp.LT(this=exp.column("r1"), expression=exp.Mul(
            this=exp.Literal.number(repr(self.spec.c)), expression=exp.column("tail")))

    def judge(self, values: dict[str, object]) -> Verdict:
        l = self.spec.value  # noqa: E741
        if self.spec.variant == "distinct":
            d = int(values.get("l_distinct_min") or 0)
            return Verdict(self.name, d >= l, f"fewest distinct {self.attribute} values in a class {d} (l={l})")
        if self.spec.variant == "entropy":
            h = float(values.get("l_entropy_min") or 0.0)
            # exp(h) is the entropy's "effective number of values"; compared in logs
            return Verdict(self.name, h >= math.log(l) - 1e-9,
                           f"smallest entropy l {math.exp(h):.4f} (l={l})")
        bad = int(values.get("l_recursive_violations") or 0)
        return Verdict(self.name, bad == 0, f"{bad} class(es) fail r1 < {self.spec.c:g}·(r{l}+…) (l={l})")
