"""Mondrian partitioning (LeFevre, DeWitt, Ramakrishnan 2006; issue 3), inside the database.

Greedy top-down cuts on the frequency table: every open partition is cut at the median row
along the quasi-identifier with the widest extent whose two halves both satisfy every model
(k, α, l-diversity, t-closeness — the last two by the criteria's own SQL); a partition with no
such cut is final. One pass cuts every open partition at once — six statements, three more for
t — so the number of statements grows with the depth of the cuts (about log2(n/k)), not with
the rows. A taxonomy attribute is cut along its ancestor path, so that a part keeps whole
subtrees where it can; each part releases, per attribute, its rows' common value at the lowest
level of the hierarchy that has one.

Mondrian suppresses nothing: a selection that fails a model as a whole is released as one part
and refused by verification, which measures every model on the released rows again.
"""
from __future__ import annotations

from typing import ClassVar

from sqlglot import exp

from sqlanon.anonymize import frequency
from sqlanon.anonymize.base import Release
from sqlanon.anonymize.cells import class_labels, level_histogram, order
from sqlanon.context import RunContext
from sqlanon.criteria.alpha import alpha_fraction
from sqlanon.criteria.l_diversity import LDiversity
from sqlanon.criteria.t_closeness import TCloseness
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: a guard against a cut that never converges; each pass closes or halves every open part
MAX_PASSES = 200


class Mondrian:
    name: ClassVar[str] = "mondrian"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "alpha-deassociation", "l-diversity", "t-closeness")

    def __init__(self, requirement: Requirement):
        self.req = requirement
        frac = alpha_fraction(requirement.alpha.value if requirement.alpha else None)
        self.num, self.den = frac.numerator, frac.denominator
        attributes = {m.attribute for m in (requirement.alpha, requirement.l, requirement.t) if m is not None}
        if len(attributes) > 1:
            raise PolicyError(f"method mondrian judges one sensitive attribute per release; the requirement "
                              f"names {sorted(attributes)}")
        self.attribute = attributes.pop() if attributes else None
        self.checked = False

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        cols, self.checked = frequency.pushdown_columns(frag, ctx, self.attribute, self.req.alpha)
        return cols

    def _half_ok(self) -> exp.Expression:
        """Both halves of a cut must satisfy this, over the per-half statistics of choice.sql;
        the l and t conditions are the criteria's own."""
        size, maxp = col("size"), col("maxp")
        conds: list[exp.Expression] = [
            exp.GTE(this=size.copy(), expression=lit(self.req.k)),
            exp.LTE(this=exp.Mul(this=maxp, expression=lit(self.den)),
                    expression=exp.Mul(this=lit(self.num), expression=size.copy())),
        ]
        if self.req.l is not None:
            conds.append(LDiversity(self.req.l).holds())
        if self.req.t is not None:
            conds.append(TCloseness(self.req.t).within(col("dist")))
        return exp.and_(*conds)

    def _distances(self, halves: str, whole: str, m: int, ctx: RunContext) -> str:
        """The halves with each half's t-closeness distance from the whole selection (column d),
        measured by the criterion's own SQL on the halves as classes."""
        assert self.req.t is not None
        mul = lit(2 * max(m, 1))
        counts = ctx.create_temp("hcounts", lambda: render("mondrian/half_counts", halves=halves, mul=mul),
                                 key="hcounts")
        dist = ctx.create_temp("hdist", lambda: TCloseness(self.req.t).per_class(counts, whole), key="hdist")
        out = ctx.create_temp("halves_t", lambda: render("mondrian/halves_d", halves=halves, dist=dist, mul=mul),
                              key="halves_t")
        ctx.drop(counts, dist, halves)
        return out

    @staticmethod
    def _side(m: int, cut: str) -> exp.Expression:
        """0 or 1: the side of a cut (alias ``cut``: qi, s) a cell (``c``) falls on."""
        return exp.Case(this=col("qi", cut), ifs=[exp.If(this=lit(i), true=exp.Case(
            ifs=[exp.If(this=exp.LTE(this=col(f"pos_{i}", "c"), expression=col("s", cut)), true=lit(0))],
            default=lit(1))) for i in range(m)], default=lit(0))

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        freq = frequency.build(frag, src, ctx, self.checked)
        hs = [q.hierarchy for q in frag.qis]
        m = len(hs)

        positions = [exp.alias_(exp.Window(this=exp.DenseRank(), order=exp.Order(
            expressions=[exp.Ordered(this=e) for e in order(hs, i)])), f"pos_{i}") for i in range(m)]
        cur = ctx.create_temp("part_a", render("mondrian/positions", codes=freq.codes, cells=freq.cells,
                                               positions=positions or [exp.alias_(lit(1), "pos_none")]))
        # positions per attribute, the denominator of a partition's normalized width
        found = ctx.query(exp.select(*[exp.Max(this=col(f"pos_{i}")) for i in range(m)]).from_(table(cur))) if m else []
        domains = [int(v or 1) for v in found[0]] if found else [1] * m
        whole = ctx.create_temp("whole", render("anonymize/whole", codes=freq.codes, cells=freq.cells)) \
            if self.req.t is not None else None
        # Every pass sends the same statements over tables of the same names (the partitions
        # alternate between two), so their text is built once per run (RunContext keys).
        passes = 0
        while m and passes < MAX_PASSES:
            passes += 1
            nxt_hint = "part_b" if cur.endswith("part_a") else "part_a"
            candidates = ctx.create_temp("cand", lambda: _union([
                render("mondrian/candidates", qi=lit(i), pos=col(f"pos_{i}"), cur=cur,
                       domain=lit(max(domains[i] - 1, 1))) for i in range(m)]), key=("cand", cur))
            halves = ctx.create_temp("halves", lambda: render(
                "mondrian/halves", side=self._side(m, "k"), cur=cur, candidates=candidates), key=("halves", cur))
            if whole is not None:
                halves = self._distances(halves, whole, m, ctx)
            # new partition ids follow the largest in use
            in_use = exp.select(exp.Max(this=col("pid"))).from_(table(cur)).subquery()
            choice = ctx.create_temp("choice", lambda: render(
                "mondrian/choice", halves=halves, candidates=candidates, half_ok=self._half_ok(),
                l=lit(self.req.l.value if self.req.l else 1), parts=in_use), key=("choice", cur))
            cuts = int(ctx.scalar(lambda: exp.select(exp.Count(this=exp.Star())).from_(table(choice)),
                                  key="cuts") or 0) if ctx.live else 0
            nxt = ctx.create_temp(nxt_hint, lambda: render(
                "mondrian/cut", cur=cur, choice=choice, side=self._side(m, "ch"),
                positions=[col(f"pos_{i}", "c") for i in range(m)]), key=("cut", cur))
            ctx.drop(cur, candidates, halves, choice)
            cur = nxt
            if not cuts:
                break

        shared, labels, levels = class_labels(hs, ctx.backend)
        parts = ctx.create_temp("labels", render("mondrian/labels", cur=cur, codes=freq.codes, cells=freq.cells,
                                                 shared=shared, labels=labels, levels=levels))
        columns = []
        for c in frag.columns:
            i = next((j for j, q in enumerate(frag.qis) if q.column == c), None)
            columns.append(exp.alias_(col(c, "s") if i is None else col(f"label_{i}", "p"), c, quoted=True))
        released = ctx.create_temp("released", render("mondrian/release", columns=columns, src=src, cur=cur,
                                                      cells=freq.cells, labels=parts))
        histogram = level_histogram(ctx.query(exp.select(*[col(f"level_{i}") for i in range(m)], col("n"))
                                              .from_(table(parts))), [q.column for q in frag.qis]) \
            if m and ctx.live else {q.column: {} for q in frag.qis}
        ctx.drop(cur, parts, freq.codes, freq.cells, *([whole] if whole else []))
        return Release(table=released, columns=frag.columns, levels=histogram,
                       notes=[f"{passes} cutting pass(es) over the frequency table"])


def _union(selects: list[exp.Expression]) -> exp.Expression:
    return exp.union(*selects, distinct=False, copy=False) if len(selects) > 1 else selects[0]
