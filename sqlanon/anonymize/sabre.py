"""SABRE for t-closeness (Cao, Karras, Kalnis, Tan 2011; John's thesis, Figure 17), inside
the database, on the frequency table (anonymize/frequency.py).

1. Bucketization: the sensitive attribute's values are split into buckets. With the equal or
   hierarchical distance every value is a bucket of its own (a class then holds each value in
   its share, up to rounding). With the ordered distance, adjacent values share a bucket, cut
   at multiples of 1/B of the rows with B = ⌈2/t⌉: a row may be replaced by one of its bucket,
   which moves at most its bucket's span of the order.
2. ECSize: m classes each take, from every bucket, its share 1/m of the bucket's rows (rounded
   down or up). The number of classes is the largest m for which every candidate class
   satisfies every model (k, t, and l and α when asked), measured by the criteria's own SQL on
   the candidate classes (with a value per bucket, one class per set of buckets that round up:
   the others count alike): a search in log space, four statements per candidate m, guided by
   the distance measured (a class's distance grows about linearly with m: it is rounding).
   (The released classes are unions of candidates with equal labels; t, α, distinct and
   entropy l hold for a union when they hold for its parts, and verification measures the
   union.)
3. Redistribution (SABRE-AK, approximate neighbours): the cells of every bucket are sorted by
   one order of the quasi-identifiers and class j takes the j-th slice of every bucket, rows at
   the same place of that order. A candidate m is judged on the pieces of the buckets, a cell's
   rows that fall in one class (about m·B + cells of them, by arithmetic from each cell's first
   class and equi-joins, sabre/pieces), not on the rows themselves.
Each class releases, per quasi-identifier, its cells' common value at the lowest level of the
hierarchy that has one. Nothing is suppressed; verification measures every model again.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp

from sqlanon.anonymize import frequency
from sqlanon.anonymize.base import Release
from sqlanon.anonymize.cells import class_labels, level_counts, level_histogram
from sqlanon.context import RunContext
from sqlanon.criteria import for_requirement
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: the search for the number of classes stops when its bounds are this close
SEARCH_RATIO = 1.05
#: buckets per word of a class's bit set (SQL integers have 64 bits, one of them the sign)
BITS = 62
#: the phase of bucket b is the fractional part of b · φ (golden ratio): well spread in [0, 1)
PHASE_STEP = "0.6180339887498949"


class Sabre:
    name: ClassVar[str] = "sabre"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "t-closeness", "l-diversity", "alpha-deassociation")
    suppresses: ClassVar[bool] = False

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
        return frequency.pushdown_columns(frag, ctx, self.attribute, self.req.alpha)

    def _bucket(self) -> exp.Expression:
        assert self.req.t is not None
        if self.req.t.distance != "ordered":
            return col("vr")
        buckets = math.ceil(2 / self.req.t.value)
        return exp.Floor(this=exp.Div(this=exp.Mul(this=exp.cast(col("cum"), "DOUBLE"), expression=lit(buckets)),
                                      expression=col("n")))

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        freq = frequency.build(frag, src, ctx, positions=True)
        codes = frequency.codes(freq, ctx)
        hs = [q.hierarchy for q in frag.qis]
        whole = ctx.create_temp("swhole", render("anonymize/whole", codes=codes, cells=freq.cells))
        phase = exp.Sub(this=exp.Mul(this=exp.cast(col("bucket"), "DOUBLE"), expression=lit(PHASE_STEP)),
                        expression=exp.Floor(this=exp.Mul(this=exp.cast(col("bucket"), "DOUBLE"),
                                                          expression=lit(PHASE_STEP))))
        buckets = ctx.create_temp("sbuckets", render("sabre/buckets", whole=whole, bucket=self._bucket(), phase=phase))
        # attributes with fewer distinct values first: a run of the order keeps them constant longest
        key = [col(f"o_{i}", "f") for i in sorted(range(len(hs)), key=lambda i: (freq.radix.get((i, 0), 0), i))]
        ranked = ctx.create_temp("ranked", render("sabre/ranked", codes=codes, cells=freq.cells, buckets=buckets,
                                                  key=key + [col("cell", "o")]))
        row = ctx.query(exp.select(exp.select(exp.Sum(this=col("c"))).from_(table(whole)).subquery(),
                                   exp.select(exp.Max(this=col("bucket"))).from_(table(buckets)).subquery()))
        n, top_bucket = (int(row[0][0] or 0), int(row[0][1] or 0)) if row else (0, 0)
        top = max(n // self.req.k, 1)
        numbers = ctx.create_temp("snumbers", render("sabre/numbers", src=src, count=lit(top)))

        def start(j: exp.Expression, m: int, b: str = "b") -> exp.Expression:
            """The first rank of class j of m in bucket b: CEIL((j·nb - FLOOR(u·m)) / m)."""
            o = exp.Floor(this=exp.Mul(this=col("u", b), expression=lit(m)))
            return exp.cast(exp.Ceil(this=exp.Div(this=exp.cast(exp.Sub(
                this=exp.Mul(this=j, expression=col("nb", b)), expression=o), "DOUBLE"),
                expression=lit(m))), "BIGINT")

        def class_of(rank: exp.Expression, m: int, b: str) -> exp.Expression:
            """The class of rank r of bucket b: FLOOR((r·m + FLOOR(u·m)) / nb)."""
            o = exp.Floor(this=exp.Mul(this=col("u", b), expression=lit(m)))
            return exp.cast(exp.Floor(this=exp.Div(this=exp.cast(exp.Add(
                this=exp.Mul(this=exp.Paren(this=rank), expression=lit(m)), expression=o), "DOUBLE"),
                expression=col("nb", b))), "BIGINT")

        def from_pieces(hint: str, m: int, template: str, **values: object) -> str:
            """A table made by ``template`` from the pieces of m classes (sabre/pieces)."""
            first = class_of(col("a", "r"), m, "r")
            end = exp.Sub(this=exp.Add(this=col("a", "r"), expression=col("n", "r")), expression=lit(1))
            last = class_of(end, m, "r")
            count = exp.Case(ifs=[exp.If(this=exp.GT(this=col("nb", "r"), expression=lit(m)),
                                         true=exp.Add(this=exp.Sub(this=last, expression=first), expression=lit(1)))],
                             default=col("n", "r"))
            after = exp.Paren(this=exp.Add(this=col("cls", "x"), expression=lit(1)))
            spans = ctx.create_temp("sspans", render("sabre/spans", ranked=ranked, first=first, count=count))
            steps = ctx.create_temp("ssteps", render("sabre/steps", spans=spans, numbers=numbers))
            out = ctx.create_temp(hint, render(template, pieces=render(
                "sabre/pieces", spans=spans, steps=steps, m=lit(m),
                rank=class_of(exp.Add(this=col("a", "c"), expression=col("j", "t")), m, "c"),
                start=start(col("cls", "x"), m, "x"), next=start(after, m, "x")), **values))
            ctx.drop(spans, steps)
            return out

        def counts(m: int) -> str:
            if self.req.t.distance == "ordered":  # a bucket of several values: count them in the cells
                return from_pieces("scounts", m, "sabre/counts")
            first = start(col("j", "n"), m)
            after = start(exp.Paren(this=exp.Add(this=col("j", "n"), expression=lit(1))), m)
            # bit b of word w: bucket 62·w + b rounds up, its count times m exceeds its rows
            up = exp.GT(this=exp.Mul(this=exp.Paren(this=exp.Sub(this=after, expression=first)), expression=lit(m)),
                        expression=col("nb", "b"))
            words = range(top_bucket // BITS + 1)
            vector = [exp.alias_(exp.Sum(this=exp.Case(ifs=[exp.If(
                this=exp.and_(exp.Between(this=col("bucket", "b"), low=lit(BITS * w), high=lit(BITS * w + BITS - 1)),
                              up),
                true=exp.BitwiseLeftShift(this=exp.cast(lit(1), "BIGINT"), expression=exp.cast(exp.Sub(
                    this=col("bucket", "b"), expression=lit(BITS * w)), "INT")))], default=lit(0))), f"w{w}")
                for w in words]
            return ctx.create_temp("scounts", render("sabre/slices", buckets=buckets, numbers=numbers, m=lit(m),
                                                     start=first, next=after, vector=vector,
                                                     keys=[col(f"w{w}") for w in words]))

        m, probes = self._search(ctx, top, lambda mid: self._passes(ctx, counts(mid), whole))
        shared, labels, levels = class_labels(hs, ctx.backend)
        parts = from_pieces("slabels", m, "sabre/labels", cells=freq.cells, shared=shared, labels=labels,
                            levels=levels)
        ctx.analyze(parts, "cls")  # joined to the full rows by the release
        at = {q.column: i for i, q in enumerate(frag.qis)}
        columns = [exp.alias_(col(f"label_{at[c]}", "l") if c in at else col(c, "s"), c, quoted=True)
                   for c in frag.columns]
        kept = [col(c, "s") for c in frag.columns if c not in at]
        released = ctx.create_temp("released", render("sabre/release", columns=columns, src=src, ranked=ranked,
                                                      labels=parts, m=lit(m), kept=kept))
        histogram = level_histogram(ctx.query(level_counts(parts, len(hs))), [q.column for q in frag.qis]) \
            if hs and ctx.live else {q.column: {} for q in frag.qis}
        ctx.drop(whole, buckets, ranked, numbers, parts, codes, freq.cells)
        return Release(table=released, columns=frag.columns, levels=histogram, counts=freq.counted,
                       notes=[f"sabre: {m} class(es) of about {n // max(m, 1)} rows, found in {probes} probe(s)"])

    def _search(self, ctx: RunContext, top: int, passes: Callable[[int], tuple[bool, float]]) -> tuple[int, int]:
        """Nearly the largest number of classes whose candidate classes all pass, and the probes
        it took: a bisection in log space that stops within SEARCH_RATIO of the boundary
        (classes 5 % larger cost little; every probe measures every class). The next probe goes
        where the largest distance measured, taken as growing linearly with m, reaches t, or,
        when that is within two ratios of the bound just found, one ratio from it: a probe that
        closes the bounds when the guess is right; a bisection when it was not. One class is the whole
        selection, released as it is judged."""
        assert self.req.t is not None
        t = self.req.t.value
        lo, hi, probes, guess = 1, top, 0, None
        while hi > lo * SEARCH_RATIO and ctx.live:
            mid = min(max(round(math.sqrt(lo * hi)) if guess is None else guess, lo + 1), hi)
            probes += 1
            ok, d = passes(mid)
            closing = guess is not None and mid <= math.ceil(lo * SEARCH_RATIO)
            if ok:
                lo = mid
                guess = None if closing or d <= 0 else _aim(mid * t / d, math.ceil(lo * SEARCH_RATIO), above=True)
            else:
                hi = mid - 1
                guess = _aim(mid * t / d, math.ceil(hi / SEARCH_RATIO), above=False) if d > t else None
        if not ctx.live:  # a static explain shows one probe
            passes(hi)
        return lo, probes

    def _passes(self, ctx: RunContext, counts: str, whole: str) -> tuple[bool, float]:
        """Whether every candidate class (their counts, dropped here) satisfies every model, as
        the criteria measure it, and the largest t-closeness distance of a class (0 when not
        measured)."""
        try:
            criteria = for_requirement(self.req)
            aggs: dict[str, exp.Expression] = {}
            for c in criteria:
                aggs.update(c.aggregates())
            row = ctx.query(render("sabre/class_stats", counts=counts,
                                   aggregates=[exp.alias_(e, k) for k, e in aggs.items()]))
            values = dict(zip(aggs, row[0])) if row else {}
            ok = True
            for c in criteria:
                statement = c.statement(counts, whole)
                if ok and statement is not None:
                    measured = ctx.query(statement)
                    values.update(zip([e.alias_or_name for e in statement.selects], measured[0] if measured else ()))
                ok = ok and c.judge(values).ok
            return ok, float(values.get("t_max") or 0.0)
        finally:
            ctx.drop(counts)


def _aim(estimate: float, closing: int, above: bool) -> int:
    """The next probe: the estimated boundary when it lies beyond ``closing`` (one ratio from the
    bound just found) by another ratio, else ``closing`` itself."""
    far = estimate > closing * SEARCH_RATIO if above else estimate < closing / SEARCH_RATIO
    return round(estimate) if far else closing
