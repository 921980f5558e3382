"""l-diversity (Machanavajjhala et al. 2007): every class holds well-represented
values of a sensitive attribute: l distinct ones, an entropy of at least log l, or recursive
(c,l) — the most frequent value rarer than c times the sum of all but the l−1 most frequent."""
from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from sqlanon.criteria.base import DistributionCriterion, Verdict
from sqlanon.policy.model import Diversity
from sqlanon.sql.templates import render


@dataclass(frozen=True)
class LDiversity(DistributionCriterion):
    spec: Diversity

    @property
    def name(self) -> str:
        variant = "recursive (c,l)" if self.spec.variant == "recursive" else self.spec.variant
        return f"{variant} l-diversity"

    def statement(self, counts: str, whole: str) -> exp.Expression:
        return render("criteria/l_diversity", counts=counts, l=exp.Literal.number(self.spec.value),
                      holds=self.holds())

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
        """Pass when no class fails ``holds``; the text shows the variant's own measure."""
        l = self.spec.value  # noqa: E741
        bad = int(values.get("l_violations") or 0)
        if self.spec.variant == "distinct":
            shown = f"fewest distinct {self.attribute} values in a class {int(values.get('l_distinct_min') or 0)}"
        elif self.spec.variant == "entropy":
            # exp(h) is the entropy's "effective number of values"
            shown = f"smallest entropy l {math.exp(float(values.get('l_entropy_min') or 0.0)):.4f}"
        else:
            shown = f"{bad} class(es) fail r1 < {self.spec.c:g}·(r{l}+…)"
        return Verdict(self.name, bad == 0, f"{shown} (l={l})")
