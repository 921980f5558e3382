"""t-closeness (Li et al. 2007): the Earth Mover's Distance between a class's
distribution of a sensitive attribute and the whole release's is at most t in every class.
The ground distance is ordered (|i−j|/(m−1), numeric attributes), equal (every two values 1
apart: the variational distance), or hierarchical (the level of the lowest common ancestor in
the attribute's taxonomy over its height). A value the taxonomy does not list sits right
under the root: as far as can be from every other value."""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.criteria.base import DistributionCriterion, Verdict
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.policy.model import Closeness
from sqlanon.sql.templates import col, render

#: EMD is computed in floating point; a class exactly at t must pass
TOLERANCE = 1e-9


@dataclass(frozen=True)
class TCloseness(DistributionCriterion):
    spec: Closeness

    @property
    def name(self) -> str:
        return f"t-closeness ({self.spec.distance} distance)"

    def per_class(self, counts: str, whole: str) -> exp.Select:
        """Each class's distance (columns cls, d) from the whole distribution, from the per-class
        counts (cls, vr, cnt) and the whole distribution (vr, v, c)."""
        if self.spec.distance != "hierarchical":
            return render(f"criteria/t_{self.spec.distance}", counts=counts, whole=whole)
        h = self.spec.hierarchy
        assert isinstance(h, TaxonomyHierarchy)

        def ancestor(level: int) -> exp.Expression:
            return col("vr") if level == 0 else h.expr(col("v"), level)

        levels = [render("criteria/t_hierarchical_level", parent=ancestor(lv), child=ancestor(lv - 1),
                         weight=exp.Literal.number(f"{lv / h.height!r}"))
                  for lv in range(1, h.height + 1)]
        union = exp.union(*levels, distinct=False, copy=False) if len(levels) > 1 else levels[0]
        return render("criteria/t_hierarchical", counts=counts, whole=whole, levels=union)

    def within(self, d: exp.Expression) -> exp.Expression:
        """A class at distance ``d`` satisfies t."""
        return exp.LTE(this=d, expression=exp.Literal.number(repr(self.spec.value + TOLERANCE)))

    def statement(self, counts: str, whole: str) -> exp.Expression:
        per_class = self.per_class(counts, whole)
        ctes = per_class.args.get("with_")
        per_class.set("with_", None)
        out = exp.select(exp.alias_(exp.Max(this=col("d")), "t_max")).from_(per_class.subquery("per_class"))
        if ctes is not None:
            out.set("with_", ctes)
        return out

    def judge(self, values: dict[str, object]) -> Verdict:
        d = float(values.get("t_max") or 0.0)
        return Verdict(self.name, d <= self.spec.value + TOLERANCE,
                       f"largest distance {d:.4f} of a class from the whole release (t={self.spec.value:g})")
