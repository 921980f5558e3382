"""SABRE for t-closeness (Cao, Karras, Kalnis, Tan 2011; seed 001 §3.5, Abbildung 17), inside
the database.

1. Bucketization: the sensitive attribute's values are split into buckets. With the equal or
   hierarchical distance every value is a bucket of its own (a class then holds each value in
   its share, up to rounding). With the ordered distance, adjacent values share a bucket, cut
   at multiples of 1/B of the rows with B = ⌈2/t⌉: a row may be replaced by one of its bucket,
   which moves at most its bucket's span of the order.
2. ECSize: m classes each take, from every bucket, its share 1/m of the bucket's rows (rounded
   down or up). The number of classes is the largest m for which every candidate class
   satisfies every model (k, t, and l and α when asked), measured by the criteria's own SQL on
   the candidate classes: a bisection in log space, four statements per candidate m. (The
   released classes are unions of candidates with equal labels; t, α, distinct and entropy l
   hold for a union when they hold for its parts, and verification measures the union.)
3. Redistribution (SABRE-AK, approximate neighbours): every bucket is sorted by one order of
   the quasi-identifiers (anonymize/order.py) and class j takes the j-th slice of every
   bucket, rows at the same place of that order.
Each class releases, per quasi-identifier, its rows' common value at the lowest level of the
hierarchy that has one. Nothing is suppressed; verification measures every model again.
"""
from __future__ import annotations

import math
from typing import ClassVar

from sqlglot import exp

from sqlanon.anonymize.base import Release
from sqlanon.anonymize.order import join_codes, qi_order
from sqlanon.context import RunContext
from sqlanon.criteria import for_requirement
from sqlanon.criteria.alpha import protected_flag
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: the search for the number of classes stops when its bounds are this close
SEARCH_RATIO = 1.05
#: the phase of bucket vr is the fractional part of vr · φ (golden ratio): well spread in [0, 1)
PHASE_STEP = "0.6180339887498949"


class Sabre:
    name: ClassVar[str] = "sabre"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "t-closeness", "l-diversity", "alpha-deassociation")

    def __init__(self, requirement: Requirement):
        if requirement.t is None:
            raise PolicyError("method sabre builds t-close classes and needs privacy.t (for k alone, use alpha_k "
                              "or mondrian)")
        attributes = {m.attribute for m in (requirement.alpha, requirement.l, requirement.t) if m is not None}
        if len(attributes) > 1:
            raise PolicyError(f"method sabre judges one sensitive attribute per release; the requirement "
                              f"names {sorted(attributes)}")
        self.req = requirement
        self.attribute = requirement.t.attribute

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        return []

    def _bucket(self) -> exp.Expression:
        assert self.req.t is not None
        if self.req.t.distance != "ordered":
            return col("vr")
        buckets = math.ceil(2 / self.req.t.value)
        return exp.Floor(this=exp.Div(this=exp.Mul(this=exp.cast(col("cum"), "DOUBLE"), expression=lit(buckets)),
                                      expression=col("n")))

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        be = ctx.backend
        attr = col(self.attribute, "s")
        v = be.binary_text(attr) if self.attribute in frag.text_columns else attr
        vals = ctx.create_temp("svals", render(
            "sabre/values", attr=v, p=protected_flag(self.req.alpha, v), src=src, bucket=self._bucket()))
        key, codes, n = qi_order(frag, src, ctx)
        phase = exp.Sub(this=exp.Mul(this=exp.cast(col("vr", "o"), "DOUBLE"), expression=lit(PHASE_STEP)),
                        expression=exp.Floor(this=exp.Mul(this=exp.cast(col("vr", "o"), "DOUBLE"),
                                                          expression=lit(PHASE_STEP))))
        ranked = ctx.create_temp("ranked", join_codes(render(
            "sabre/ranked", src=src, vals=vals, key=key or [lit(1)], phase=phase,
            same=exp.NullSafeEQ(this=v.copy(), expression=col("v", "o"))), frag, codes))
        ctx.drop(*codes.values())
        whole = ctx.create_temp("swhole", exp.select(col("vr"), col("v"), exp.alias_(col("cnt"), "c"))
                                .from_(table(vals)))

        def cls(m: int) -> exp.Expression:
            return exp.Floor(this=exp.Div(
                this=exp.Mul(this=exp.Paren(this=exp.Add(this=exp.cast(col("_sa_r"), "DOUBLE"),
                                                         expression=col("_sa_u"))), expression=lit(m)),
                expression=col("_sa_nb")))

        # Nearly the largest number of classes whose candidate classes all pass: a bisection in
        # log space that stops within SEARCH_RATIO of the boundary (classes 5 % larger cost
        # little; every probe measures every class). One class is the whole selection,
        # released as it is judged.
        lo, hi, probes = 1, max(n // self.req.k, 1), 0
        while hi > lo * SEARCH_RATIO and ctx.live:
            mid = min(max(round(math.sqrt(lo * hi)), lo + 1), hi)
            probes += 1
            if self._passes(ctx, ranked, whole, cls(mid)):
                lo = mid
            else:
                hi = mid - 1
        if not ctx.live:  # a static explain shows one probe
            self._passes(ctx, ranked, whole, cls(hi))
        m = lo
        assigned = ctx.create_temp("assigned", render("sabre/assigned", ranked=ranked, cls=cls(m)))
        ctx.drop(ranked)
        labels, histogram = [], {}
        for i, q in enumerate(frag.qis):
            h = q.hierarchy

            # the class's values are all NULL (released as NULL), or none is and they share a label
            no_value = exp.EQ(this=exp.Count(this=col("x", "d")), expression=lit(0))
            has_null = exp.LT(this=exp.Count(this=col("x", "d")), expression=exp.Count(this=exp.Star()))

            def same(lv: int) -> exp.Expression:
                e = col(f"e_{lv}", "h")
                return exp.EQ(this=exp.Min(this=e.copy()), expression=exp.Max(this=e))

            top = exp.If(this=has_null, true=be.binary_text(exp.Literal.string(h.top_label)))
            label = exp.Case(ifs=[exp.If(this=no_value, true=exp.Null()), top] + [
                exp.If(this=same(lv), true=exp.Min(this=col(f"e_{lv}", "h"))) for lv in range(h.height)],
                default=be.binary_text(exp.Literal.string(h.top_label)))
            level = exp.Case(ifs=[exp.If(this=no_value.copy(), true=lit(0)),
                                  exp.If(this=has_null.copy(), true=lit(h.height))]
                             + [exp.If(this=same(lv), true=lit(lv)) for lv in range(h.height)], default=lit(h.height))
            lab = ctx.create_temp(f"slabels_{i}", render(
                "sabre/labels", label=label, level=level, x=col(q.column), assigned=assigned,
                levels=[exp.alias_(be.binary_text(h.expr(col("x"), lv)), f"e_{lv}") for lv in range(h.height)]))
            labels.append(lab)
            if ctx.live:
                histogram[q.column] = {int(lv): int(rows) for lv, rows in ctx.query(
                    exp.select(col("level"), exp.Sum(this=col("n"))).from_(table(lab)).group_by(col("level")))}
        at = {q.column: i for i, q in enumerate(frag.qis)}
        release = exp.select(*[exp.alias_(col("label", f"l{at[c]}") if c in at else col(c, "s"), c, quoted=True)
                               for c in frag.columns]).from_(table(assigned, "s"))
        for i, lab in enumerate(labels):
            release = release.join(table(lab, f"l{i}"),
                                   on=exp.EQ(this=col("cls", f"l{i}"), expression=col("_sa_cls", "s")))
        released = ctx.create_temp("released", release)
        ctx.drop(vals, whole, assigned, *labels)
        return Release(table=released, columns=frag.columns, levels=histogram,
                       notes=[f"sabre: {m} class(es) of about {n // max(m, 1)} rows, found in {probes} probe(s)"])

    def _passes(self, ctx: RunContext, ranked: str, whole: str, cls: exp.Expression) -> bool:
        """Whether every candidate class satisfies every model, as the criteria measure it."""
        counts = ctx.create_temp("scounts", render("sabre/counts", cls=cls, ranked=ranked))
        try:
            criteria = for_requirement(self.req)
            aggs: dict[str, exp.Expression] = {}
            for c in criteria:
                aggs.update(c.aggregates())
            row = ctx.query(render("sabre/class_stats", counts=counts,
                                   aggregates=[exp.alias_(e, k) for k, e in aggs.items()]))
            values = dict(zip(aggs, row[0])) if row else {}
            for c in criteria:
                statement = c.statement(counts, whole)
                if statement is not None:
                    measured = ctx.query(statement)
                    values.update(zip([e.alias_or_name for e in statement.selects], measured[0] if measured else ()))
                if not c.judge(values).ok:
                    return False
            return True
        finally:
            ctx.drop(counts)

