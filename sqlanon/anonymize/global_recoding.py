"""Global (full-domain) recoding: the optimal node of the generalization lattice, inside the database.

Every quasi-identifier is generalized to one level for the whole release (Samarati 2001;
LeFevre, DeWitt & Ramakrishnan's full-domain recoding; ARX's default, Kohlmayer et al.'s
Flash), so a label means the same in every row and two releases of one table join: what a policy
asks for with ``consistent: true``. Classes that fail k (or α, or distinct l) at the chosen
node are withheld, within ``max_suppression``; rows released with every quasi-identifier at the root
count as suppressed too, as everywhere in sqlanon. Of the nodes that meet the models within the
limit, the one of least loss under ``privacy.metric`` is released: ARX's loss (default), the KL
divergence, discernibility or non-uniform entropy (anonymize/lattice.py).

t-closeness (equal distance): a class's distance is measured against the selection's
distribution of the sensitive value. Where the failing classes together, released with every
quasi-identifier at the root as ARX releases suppressed rows, form a class that meets every
model, they are so released (and counted as suppressed, as always); else they are withheld and
the kept classes must lie within t less the withheld share, which bounds how far the release's
distribution strays from the selection's (_closeness). Neither α nor t is monotone with
suppression, so failing nodes tag their predecessors by the rows that every node below must
suppress: those failing k or l, and a share of those failing t (_beyond).

Every node is measured from the selection's frequency table (anonymize/frequency.py), reduced
to the label codes of every level: one GROUP BY per evaluated node over that table, never a pass
over the rows. The search itself — predictive tagging, the lower bound, the order — runs in
Python over the few numbers each node returns: one statement per node keeps every node's
statement the same small query whatever the lattice, and lets the bound stop the search as soon
as no remaining node can win. The rows are read once more, to release them at the chosen node.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable, ClassVar, cast

from sqlglot import exp

from sqlanon.anonymize import frequency
from sqlanon.anonymize.base import Release
from sqlanon.anonymize.lattice import Domain, Outcome, arx_loss, arx_loss_parts, entropy, kl_sum, lower_bound, search
from sqlanon.backends.base import Backend
from sqlanon.context import RunContext
from sqlanon.criteria.alpha import alpha_fraction
from sqlanon.errors import PolicyError
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.hierarchy.base import Hierarchy
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: rows kept below the suppression limit: verification compares suppressed − limit with one
#: draw of discrete Laplace noise (scale 2, verify/noise.py), which exceeds 20 with probability
#: about 2·10^-5; a node closer to the limit than this would be refused now and then
MARGIN = 20
#: measurements of one node under t, each with the margin the last one's withheld rows ask for
#: (_closeness_margin); on Adult two or three suffice
MARGIN_ROUNDS = 8


def within(share: float, total: int) -> float:
    """The most rows a node may suppress and be chosen: the policy's limit less MARGIN; every
    row under a limit of 100 % (verification never refuses one), none else but by the limit."""
    return float(total) if share >= 1 else share * total - MARGIN


class GlobalRecoding:
    name: ClassVar[str] = "global"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "alpha-deassociation", "l-diversity", "t-closeness")
    suppresses: ClassVar[bool] = True

    def __init__(self, requirement: Requirement):
        self.req = requirement
        unsupported = [f"t-closeness with the {requirement.t.distance} distance"] \
            if requirement.t is not None and requirement.t.distance != "equal" else []
        if requirement.l is not None and requirement.l.variant != "distinct":
            unsupported.append(f"{requirement.l.variant} l-diversity")
        if unsupported:
            raise PolicyError(f"method global builds k-anonymity, α-deassociation, distinct l-diversity and "
                              f"t-closeness with the equal distance; the requirement asks for {', '.join(unsupported)} "
                              f"(mondrian builds it)")
        attributes = {m.attribute for m in (requirement.alpha, requirement.l, requirement.t) if m is not None}
        if len(attributes) > 1:
            raise PolicyError(f"method global judges one sensitive attribute per release; the requirement names "
                              f"{sorted(attributes)}")
        self.attribute = attributes.pop() if attributes else None
        frac = alpha_fraction(requirement.alpha.value if requirement.alpha else None)
        self.num, self.den = frac.numerator, frac.denominator
        #: node → the margin its t-closeness classes were judged with (_closeness_margin)
        self._margins: dict[tuple[int, ...], float] = {}
        #: the selection's distribution of the sensitive value (sv, q), for t, in the database and here
        self._whole = ""
        self._q: dict[int, float] = {}
        #: the nodes whose failing classes are released at the root rather than withheld (t)
        self._rooted: set[tuple[int, ...]] = set()

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        return frequency.pushdown_columns(frag, ctx, self.attribute, self.req.alpha)

    @property
    def _values(self) -> bool:
        """A model reads the classes' sensitive values (l, α, t), not their sizes alone."""
        return self.req.l is not None or self.req.alpha is not None or self.req.t is not None

    # the class conditions, over a class's size, distinct sensitive values dl, the rows of its
    # most frequent protected value maxp, and its distance td from the selection's distribution
    def _beyond(self) -> exp.Expression:
        """Per class, rows that every node below must suppress (Outcome.monotone; summed by
        global/node.sql): where the class has fewer than k rows or l values, all of them (its
        parts have fewer still). Where it fails t, with distance d from the selection's
        distribution q, at least size · (d − t) / (1 − t): the class's distribution is the
        mixture of its parts' (weights their shares of its rows), and the distance to q is
        convex, so size · d ≤ Σ over parts of rows · distance ≤ F · 1 + (size − F) · t, with F
        the rows of the parts that fail t or any other model below (a part kept is within t of
        q: within t less the node's margin, _closeness) — hence F ≥ size · (d − t) / (1 − t),
        each of them suppressed (withheld or released at the root). α is not monotone: a class
        failing α alone counts nothing."""
        size = col("size")
        monotone: exp.Expression = exp.LT(this=size, expression=lit(self.req.k))
        if self.req.l is not None:
            monotone = exp.Or(this=monotone, expression=exp.LT(this=col("dl"), expression=lit(self.req.l.value)))
        ifs = [exp.If(this=monotone, true=size.copy())]
        if self.req.t is not None and self.req.t.value < 1:
            t = self.req.t.value
            # a hair above t, so that a float's rounding of the distance never tags a node
            over = exp.Sub(this=col("td"), expression=exp.Literal.number(repr(t)))
            ifs.append(exp.If(this=exp.GT(this=col("td"), expression=exp.Literal.number(repr(t + 1e-9))),
                              true=exp.Div(this=exp.Mul(this=size.copy(), expression=exp.Paren(this=over)),
                                           expression=exp.Literal.number(repr(1 - t)))))
        return exp.Sum(this=exp.Case(ifs=ifs, default=lit(0)))

    def _fails(self, node: tuple[int, ...] | None = None) -> exp.Expression:
        """``node``: the node whose t-closeness margin applies (none: no margin)."""
        cond: exp.Expression = exp.LT(this=col("size"), expression=lit(self.req.k))
        if self.req.t is not None:
            bound = self.req.t.value - self._margins.get(node, 0.0) if node is not None else self.req.t.value
            cond = exp.Or(this=cond, expression=exp.GT(this=col("td"), expression=exp.Literal.number(repr(bound))))
        if self.req.l is not None:
            cond = exp.Or(this=cond, expression=exp.LT(this=col("dl"), expression=lit(self.req.l.value)))
        if self.req.alpha is not None:
            cond = exp.Or(this=cond, expression=exp.GT(
                this=exp.Mul(this=col("maxp"), expression=lit(self.den)),
                expression=exp.Mul(this=lit(self.num), expression=col("size"))))
        return cond

    def _diverse(self) -> list[exp.Expression]:
        """Per class, over the rows per sensitive value of _source: dl and maxp."""
        if not self._values:
            return []
        protected = exp.Case(ifs=[exp.If(this=exp.EQ(this=col("p"), expression=lit(1)), true=col("n"))],
                             default=lit(0))
        out = [cast(exp.Expression, exp.alias_(exp.Count(this=exp.Star()), "dl")),
               cast(exp.Expression, exp.alias_(exp.Max(this=protected), "maxp"))]
        if self.req.t is not None:
            # the equal distance (variational): ½ (Σ over the class's values |p − q| + the
            # selection's share of the values the class lacks)
            out.append(cast(exp.Expression, exp.alias_(exp.Mul(this=exp.Literal.number("0.5"), expression=exp.Paren(
                this=exp.Sub(this=exp.Add(this=exp.Sum(this=col("a")), expression=lit(1)),
                             expression=exp.Sum(this=col("q"))))), "td")))
        return out

    def _source(self, node: tuple[int, ...], hs: list[Hierarchy], base: str) -> str | exp.Expression:
        """What a node's classes are grouped from: the base table, or where l or α reads the
        sensitive values, its rows per class and sensitive value (one row per value, so that a
        class's rows count its distinct values and its largest protected value)."""
        if not self._values:
            return base
        levels = [col(f"c_{i}_{lv}") for i, lv in enumerate(node) if lv < hs[i].height]
        b = "b" if self.req.t is not None else None
        grouped = exp.select(*levels, col("sv", b), exp.alias_(exp.Max(this=col("p")), "p"),
                             exp.alias_(exp.Sum(this=col("n")), "n")).from_(table(base, b)) \
            .group_by(*[c.copy() for c in levels], col("sv", b))
        if self.req.t is None:
            return grouped.subquery()
        # t: each value's rows in its class beside the selection's share q of the value and
        # the class's size cs, so that the class's distance is one aggregate (_diverse)
        size = exp.Window(this=exp.Sum(this=exp.Sum(this=col("n"))), partition_by=[c.copy() for c in levels])
        grouped = grouped.select(exp.alias_(exp.Max(this=col("q", "w")), "q"), exp.alias_(size, "cs")) \
            .join(table(self._whole, "w"), on=exp.EQ(this=col("sv", "w"), expression=col("sv", "b")))
        share = exp.Abs(this=exp.Sub(this=exp.Div(this=exp.cast(col("n"), "DOUBLE"), expression=exp.cast(col("cs"), "DOUBLE")),
                                     expression=col("q")))
        return exp.select(*[c.copy() for c in levels], col("sv"), col("p"), col("n"), col("q"), exp.alias_(share, "a")) \
            .from_(grouped.subquery("t")).subquery()

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        self._margins, self._rooted = {}, set()
        freq = frequency.build(frag, src, ctx)
        hs = [q.hierarchy for q in frag.qis]
        names = [q.column for q in frag.qis]
        codes = [col(f"c_{i}_{lv}") for i, h in enumerate(hs) for lv in range(h.height)]
        sv = [col("svc")] if self._values else []
        base = ctx.create_temp("global_base", render(
            "global/base", codes=codes or [exp.alias_(lit(0), "c_none")], codes_group=codes,
            sv=[exp.alias_(c, "sv") for c in sv], sv_group=sv, cells=freq.cells,
            p=[exp.alias_(exp.Max(this=col("p")), "p")] if self._values else []))
        if self.req.t is not None:
            self._whole = ctx.create_temp("global_whole", render("global/whole", base=base))
            self._q = {int(v): float(q) for v, q in ctx.query(exp.select("sv", "q").from_(table(self._whole)))} \
                if ctx.live else {}
        domains = _domains(hs, freq.cells, ctx)
        total = sum(domains[0].values.values()) if domains else int(ctx.scalar(
            exp.select(exp.func("COALESCE", exp.Sum(this=col("n")), lit(0))).from_(table(base))) or 0)
        limit = within(self.req.max_suppression, total)
        roots = {(i, lv): d.roots[lv] for i, d in enumerate(domains) for lv in range(d.height)}
        metric = self.req.metric

        def measure(node: tuple[int, ...]) -> Outcome:
            row = ctx.query(self._node(node, hs, base, domains, roots))
            values = row[0] if row else (0, 0, 0, 0, *([0.0] * len(hs)), 0)
            return Outcome(int(values[1] or 0), int(values[2] or 0), int(values[0] or 0), int(values[3] or 0),
                           [float(v or 0) for v in values[4:4 + len(hs)]], monotone=float(values[4 + len(hs)] or 0))

        def evaluate(node: tuple[int, ...]) -> tuple[bool, float, Outcome]:
            outcome = measure(node)
            ok = outcome.suppressed == 0 or outcome.suppressed <= limit
            if ok and self.req.t is not None:
                ok, outcome = self._closeness(node, outcome, total, limit, measure,
                                              lambda: ctx.query(self._rest(node, hs, base, roots)))
            if not ok:
                return False, 0.0, outcome
            if metric in ("kl", "entropy"):
                outcome.per_label = self._per_label(node, hs, base, ctx)
            return True, self._score(node, outcome, domains, total), outcome

        chosen: tuple[int, ...] = tuple(0 for _ in hs)
        notes = []
        if ctx.live:
            # α and t are not monotone with suppression: a class above a failing one may fail as a
            # whole where only a part failed below. A failing node tags its predecessors by the
            # rows every node below must suppress (_beyond). KL's bound is loose and
            # discernibility has none: walked from the top, failing nodes tag the most
            found = search([h.height for h in hs], lower_bound(metric, domains, total), evaluate, limit,
                           down=metric in ("kl", "discernibility"))
            chosen = found.best if found.best is not None else tuple(h.height for h in hs)
            notes.append(found.describe(names) + f"; metric {metric}")
            withheld = found.outcome.withheld if found.outcome is not None else 0
        else:
            ctx.execute(self._node(chosen, hs, base, domains, {}))
            notes.append("global recoding: the lattice is searched when the query runs, one statement like the "
                         "one above per evaluated node")
            withheld = 0
        released = self._release(frag, src, freq.cells, base, chosen, hs, ctx)
        ctx.drop(base, freq.cells, *([self._whole] if self._whole else []))
        levels = {n: {lv: total - withheld} for n, lv in zip(names, chosen)}
        return Release(table=released, columns=frag.columns, levels=levels, counts=freq.counted, notes=notes)

    def _closeness(self, node: tuple[int, ...], outcome: Outcome, total: int, limit: float,
                   measure: Callable[[tuple[int, ...]], Outcome],
                   rest: Callable[[], list[tuple]]) -> tuple[bool, Outcome]:
        """Whether ``node`` meets t within the limit, and its outcome. Classes are measured
        against the selection's distribution q; verification (rightly) measures them against the
        release's. Where the failing classes, released with every quasi-identifier at the root
        (as ARX releases suppressed rows), form a class that meets every model, they are: the
        release is the whole selection and its distribution q. Else they are withheld, and the
        release's distribution differs from q by at most the withheld share ω (q = (1 − ω)
        q_released + ω q_withheld; the variational distance is at most 1); the EMD is a metric,
        so a class within t − ω of q is within t of the release's distribution. The node is then
        measured again with the margin its withheld rows ask for until the margin covers them:
        more margin only withholds more, so this ends, or the node fails."""
        if outcome.withheld == 0:
            return True, outcome
        if self._rest_passes(rest()):
            self._rooted.add(node)
            return True, replace(outcome, withheld=0, generalized=outcome.generalized + outcome.withheld,
                                 rooted=outcome.withheld)
        margin = 0.0
        for _ in range(MARGIN_ROUNDS):
            need = outcome.withheld / total if total else 0.0
            if need <= margin:
                return True, outcome
            margin = need
            self._margins[node] = margin
            outcome = measure(node)
            if not (outcome.suppressed == 0 or outcome.suppressed <= limit):
                return False, outcome
        return False, outcome

    def _rest_passes(self, rows: list[tuple]) -> bool:
        """Whether the rows released at the root (global/rest.sql: sv, n, p per value) meet
        every model of the requirement as one class, t against the selection's distribution."""
        counts = {int(v): int(n or 0) for v, n, _ in rows}
        size = sum(counts.values())
        if size < self.req.k:
            return False
        if self.req.l is not None and sum(1 for n in counts.values() if n) < self.req.l.value:
            return False
        if self.req.alpha is not None and any(int(p or 0) == 1 and int(n or 0) * self.den > self.num * size
                                              for _, n, p in rows):
            return False
        assert self.req.t is not None
        d = 0.5 * sum(abs(counts.get(v, 0) / size - q) for v, q in self._q.items())
        return d <= self.req.t.value

    def _rest(self, node: tuple[int, ...], hs: list[Hierarchy], base: str,
              roots: dict[tuple[int, int], list[int]]) -> exp.Expression:
        """global/rest.sql at ``node``: the failing classes and those at the root, per value."""
        failing = exp.Or(this=self._fails(node), expression=self._at_root(node, hs, roots))
        match: list[exp.Expression] = [exp.EQ(this=col(f"c_{i}_{lv}", "b"), expression=col(f"c_{i}_{lv}", "f"))
                 for i, lv in enumerate(node) if lv < hs[i].height]
        return render("global/rest", base=base, match=_all(match),
                      classes=exp.Subquery(this=self._classes("global/withheld", node, hs, base, failing)))

    def _score(self, node: tuple[int, ...], o: Outcome, domains: list[Domain], total: int) -> float:
        if self.req.metric == "discernibility":
            kept_root = o.generalized - o.rooted
            return float(o.dm + o.withheld * total + (kept_root + o.rooted) ** 2 - kept_root ** 2)
        if self.req.metric == "kl":
            return kl_sum(domains, node, total, o.per_label, o.rooted)
        if self.req.metric == "entropy":
            return entropy(domains, node, total, o.per_label)
        return arx_loss(arx_loss_parts(domains, node, total, o.withheld + o.rooted, o.shares))

    def _node(self, node: tuple[int, ...], hs: list[Hierarchy], base: str, domains: list[Domain],
              roots: dict[tuple[int, int], list[int]]) -> exp.Expression:
        """global/node.sql at ``node``."""
        levels = [col(f"c_{i}_{lv}") for i, lv in enumerate(node) if lv < hs[i].height]
        fails = self._fails(node)
        shares = []
        for i, lv in enumerate(node):
            share: exp.Expression = lit(1)
            if lv < hs[i].height and domains and self.req.metric == "loss":
                share = exp.Case(this=col(f"c_{i}_{lv}"), ifs=[exp.If(this=lit(c), true=exp.Literal.number(repr(s)))
                                                              for c, (_, s, _) in domains[i].labels[lv].items()],
                                 default=lit(1))
            shares.append(exp.alias_(exp.Sum(this=exp.Case(ifs=[exp.If(this=fails.copy(), true=exp.Mul(
                this=col("size"), expression=share))], default=lit(0))), f"u_{i}"))
        return render("global/node", fails=fails, beyond=self._beyond(), at_root=self._at_root(node, hs, roots), shares=shares or [exp.alias_(lit(0), "u_none")],
            levels=levels or [exp.alias_(lit(0), "c_none")], levels_group=levels, diverse=self._diverse(),
            base=self._source(node, hs, base))

    @staticmethod
    def _at_root(node: tuple[int, ...], hs: list[Hierarchy], roots: dict[tuple[int, int], list[int]]) -> exp.Expression:
        """A class whose every label at ``node`` reads as the root."""
        at_root: list[exp.Expression] = []
        for i, lv in enumerate(node):
            if lv < hs[i].height:
                found = roots.get((i, lv), [])
                at_root.append(exp.In(this=col(f"c_{i}_{lv}"), expressions=[lit(c) for c in found])
                               if found else exp.EQ(this=lit(1), expression=lit(0)))
        return _all(at_root)

    def _classes(self, name: str, node: tuple[int, ...], hs: list[Hierarchy], base: str,
                 condition: exp.Expression) -> exp.Expression:
        levels = [col(f"c_{i}_{lv}") for i, lv in enumerate(node) if lv < hs[i].height]
        return render(name, levels=levels, levels_inner=levels or [exp.alias_(lit(0), "c_none")],
                      levels_group=levels, diverse=self._diverse(), base=self._source(node, hs, base),
                      **({"fails": condition} if name == "global/withheld" else {"passes": condition}))

    def _labels(self, node: tuple[int, ...], hs: list[Hierarchy], be: Backend) -> list[exp.Expression]:
        """The released label of each quasi-identifier (label_<qi>) from a kept cell (f) of its
        class (c): at the root, the root's; where the node releases the failing classes at the
        root (c.ok = 0), theirs too."""
        out: list[exp.Expression] = []
        for i, (h, lv) in enumerate(zip(hs, node)):
            top = be.binary_text(exp.Literal.string(h.top_label))
            label: exp.Expression = top
            if lv < h.height:
                label = col(f"g_{i}_{lv}", "f")
                if node in self._rooted:
                    label = exp.Case(ifs=[exp.If(this=exp.EQ(this=col("ok", "c"), expression=lit(1)), true=label)],
                                     default=top.copy())
            out.append(cast(exp.Expression, exp.alias_(label, f"label_{i}")))
        return out

    def _per_label(self, node: tuple[int, ...], hs: list[Hierarchy], base: str, ctx: RunContext) -> list[dict[int, int]]:
        """Withheld rows per label code of each quasi-identifier at ``node``."""
        below = [i for i, lv in enumerate(node) if lv < hs[i].height]
        out: list[dict[int, int]] = [Counter() for _ in hs]
        for row in ctx.query(self._classes("global/withheld", node, hs, base, self._fails(node))):
            size = int(row[len(below)])
            for i, lv in enumerate(node):
                # a quasi-identifier at the root has one label, code 0 here
                out[i][int(row[below.index(i)]) if lv < hs[i].height else 0] += size
        return [dict(c) for c in out]

    def _release(self, frag: Fragment, src: str, cells: str, base: str, node: tuple[int, ...],
                 hs: list[Hierarchy], ctx: RunContext) -> str:
        be = ctx.backend
        keep = self._classes("global/keep_flagged" if node in self._rooted else "global/keep", node, hs, base,
                             exp.Not(this=exp.Paren(this=self._fails(node))))
        match: list[exp.Expression] = [exp.EQ(this=col(f"c_{i}_{lv}", "f"), expression=col(f"c_{i}_{lv}", "c"))
                 for i, lv in enumerate(node) if lv < hs[i].height]
        labels = self._labels(node, hs, be)
        columns = []
        for c in frag.columns:
            i = next((j for j, q in enumerate(frag.qis) if q.column == c), None)
            columns.append(exp.alias_(col(c, "s") if i is None else col(f"label_{i}", "p"), c, quoted=True))
        kept = ctx.create_temp("global_kept", render(
            "global/kept", cells=cells, keep=exp.Subquery(this=keep), labels=labels or [exp.alias_(lit(0), "label_none")],
            match=_all(match)))
        ctx.analyze(kept, "k")  # joined to the full rows by the release (PostgreSQL: hashed, not sorted)
        released = ctx.create_temp("released", render("global/release", columns=columns, src=src, kept=kept))
        ctx.drop(kept)
        return released


def _all(conditions: list[exp.Expression]) -> exp.Expression:
    """The conjunction of ``conditions``; 1 = 1 for none."""
    out: exp.Expression = exp.EQ(this=lit(1), expression=lit(1))
    for i, c in enumerate(conditions):
        out = c if i == 0 else exp.And(this=out, expression=c)
    return out


def _text(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8")
    return str(v)


def _domains(hs: list[Hierarchy], cells: str, ctx: RunContext) -> list[Domain]:
    """Every quasi-identifier's Domain (_domain) from one statement: a UNION ALL of one GROUP BY
    of the cells per quasi-identifier below its root (qi, its codes and label texts at every
    level, padded with NULL to the tallest hierarchy's levels, which comes first, and n)."""
    tall = max((h.height for h in hs), default=0)
    rows: dict[int, list[tuple]] = {i: [] for i in range(len(hs))}
    branches = []
    for i in sorted((i for i, h in enumerate(hs) if h.height), key=lambda i: -hs[i].height):
        codes = [col(f"c_{i}_{lv}") for lv in range(hs[i].height)]
        pad = [exp.null() for _ in range(tall - hs[i].height)]
        texts = [exp.Min(this=col(f"g_{i}_{lv}")) for lv in range(hs[i].height)]
        branches.append(exp.select(
            exp.alias_(lit(i), "qi"), *[exp.alias_(e, f"c_{lv}") for lv, e in enumerate([*codes, *pad])],
            *[exp.alias_(e, f"t_{lv}") for lv, e in enumerate([*texts, *[p.copy() for p in pad]])],
            exp.alias_(exp.Sum(this=col("n")), "n")).from_(table(cells)).group_by(*[c.copy() for c in codes]))
    if branches:
        for r in ctx.query(exp.union(*branches, distinct=False) if len(branches) > 1 else branches[0]):
            rows[int(r[0])].append(tuple(r))
    return [_domain(h, [(*r[1:1 + h.height], *r[1 + tall:1 + tall + h.height], r[-1]) for r in rows[i]])
            for i, h in enumerate(hs)]


def _domain(h: Hierarchy, rows: list[tuple]) -> Domain:
    """A quasi-identifier's values in the selection with their label codes and texts at every
    level below the root (``rows``: per value, its codes, its label texts and its rows), and
    each label's domain share: for a taxonomy ARX's (the share of the hierarchy file's leaves
    below the label), else the share of the selection's values."""
    values: dict[int, int] = Counter()
    value_labels: list[dict[int, int]] = [{} for _ in range(h.height)]
    labels: list[dict[int, list]] = [{} for _ in range(h.height)]
    for r in rows:
        v, n = int(r[0]), int(r[-1] or 0)
        values[v] += n
        for lv in range(h.height):
            c = int(r[lv])
            value_labels[lv][v] = c
            entry = labels[lv].setdefault(c, [0, _text(r[h.height + lv]), 0])
            entry[0] += n
            entry[2] += 1
    if isinstance(h, TaxonomyHierarchy):
        size = float(len(h.rows))
        leaves = [Counter(r[lv] for r in h.rows) for lv in range(h.height)]

        def share(lv: int, text: str | None, m: int) -> float:
            found = leaves[lv].get(text or "", 0)
            return found / size if found else 1.0
    else:
        size = float(len(values))

        def share(lv: int, text: str | None, m: int) -> float:
            return m / size

    out = [{c: (n, share(lv, t, m), m) for c, (n, t, m) in labels[lv].items()} for lv in range(h.height)]
    roots = [[c for c, (_, t, _) in labels[lv].items() if t == h.top_label] for lv in range(h.height)]
    return Domain(h.height, out, size, dict(values), value_labels, roots)
