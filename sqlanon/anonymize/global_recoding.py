"""Global (full-domain) recoding: the optimal node of the generalization lattice, inside the database.

Every quasi-identifier is generalized to one level for the whole release (Samarati 2001;
LeFevre, DeWitt & Ramakrishnan's full-domain recoding; ARX's default, Kohlmayer et al.'s
Flash), so a label means the same in every row and two releases of one table join: what a policy
asks for with ``consistent: true``. Classes that fail k (or α, or distinct l) at the chosen
node are withheld, within ``max_suppression``; rows released with every quasi-identifier at the root
count as suppressed too, as everywhere in sqlanon. Of the nodes that meet the models within the
limit, the one of least loss under ``privacy.metric`` is released: ARX's loss (default), the KL
divergence, discernibility or non-uniform entropy (anonymize/lattice.py).

Every node is measured from the selection's frequency table (anonymize/frequency.py), reduced
to the label codes of every level: one GROUP BY per evaluated node over that table, never a pass
over the rows. The search itself — predictive tagging, the lower bound, the order — runs in
Python over the few numbers each node returns: one statement per node keeps every node's
statement the same small query whatever the lattice, and lets the bound stop the search as soon
as no remaining node can win. The rows are read once more, to release them at the chosen node.
"""
from __future__ import annotations

from collections import Counter
from typing import ClassVar, cast

from sqlglot import exp

from sqlanon.anonymize import frequency
from sqlanon.anonymize.base import Release
from sqlanon.anonymize.lattice import Domain, Outcome, arx_loss, arx_loss_parts, entropy, kl_sum, lower_bound, search
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


def within(share: float, total: int) -> float:
    """The most rows a node may suppress and be chosen: the policy's limit less MARGIN; every
    row under a limit of 100 % (verification never refuses one), none else but by the limit."""
    return float(total) if share >= 1 else share * total - MARGIN


class GlobalRecoding:
    name: ClassVar[str] = "global"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "alpha-deassociation", "l-diversity")
    suppresses: ClassVar[bool] = True

    def __init__(self, requirement: Requirement):
        self.req = requirement
        unsupported = ["t-closeness"] if requirement.t is not None else []
        if requirement.l is not None and requirement.l.variant != "distinct":
            unsupported.append(f"{requirement.l.variant} l-diversity")
        if unsupported:
            raise PolicyError(f"method global builds k-anonymity, α-deassociation and distinct l-diversity; the "
                              f"requirement asks for {', '.join(unsupported)}")
        attributes = {m.attribute for m in (requirement.alpha, requirement.l) if m is not None}
        if len(attributes) > 1:
            raise PolicyError(f"method global judges one sensitive attribute per release; the requirement names "
                              f"{sorted(attributes)}")
        self.attribute = attributes.pop() if attributes else None
        frac = alpha_fraction(requirement.alpha.value if requirement.alpha else None)
        self.num, self.den = frac.numerator, frac.denominator

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        return frequency.pushdown_columns(frag, ctx, self.attribute, self.req.alpha)

    @property
    def _values(self) -> bool:
        """A model reads the classes' sensitive values (l, α), not their sizes alone."""
        return self.req.l is not None or self.req.alpha is not None

    # the class conditions, over a class's size, distinct sensitive values dl and the rows of
    # its most frequent protected value maxp
    def _fails(self) -> exp.Expression:
        cond: exp.Expression = exp.LT(this=col("size"), expression=lit(self.req.k))
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
        return [cast(exp.Expression, exp.alias_(exp.Count(this=exp.Star()), "dl")),
                cast(exp.Expression, exp.alias_(exp.Max(this=protected), "maxp"))]

    def _source(self, node: tuple[int, ...], hs: list[Hierarchy], base: str) -> str | exp.Expression:
        """What a node's classes are grouped from: the base table, or where l or α reads the
        sensitive values, its rows per class and sensitive value (one row per value, so that a
        class's rows count its distinct values and its largest protected value)."""
        if not self._values:
            return base
        levels = [col(f"c_{i}_{lv}") for i, lv in enumerate(node) if lv < hs[i].height]
        return exp.select(*levels, col("sv"), exp.alias_(exp.Max(this=col("p")), "p"),
                          exp.alias_(exp.Sum(this=col("n")), "n")).from_(table(base)) \
            .group_by(*[c.copy() for c in levels], col("sv")).subquery()

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        freq = frequency.build(frag, src, ctx)
        hs = [q.hierarchy for q in frag.qis]
        names = [q.column for q in frag.qis]
        codes = [col(f"c_{i}_{lv}") for i, h in enumerate(hs) for lv in range(h.height)]
        sv = [col("svc")] if self._values else []
        base = ctx.create_temp("global_base", render(
            "global/base", codes=codes or [exp.alias_(lit(0), "c_none")], codes_group=codes,
            sv=[exp.alias_(c, "sv") for c in sv], sv_group=sv, cells=freq.cells,
            p=[exp.alias_(exp.Max(this=col("p")), "p")] if self._values else []))
        domains = [_domain(i, h, freq.cells, ctx) for i, h in enumerate(hs)]
        total = sum(domains[0].values.values()) if domains else int(ctx.scalar(
            exp.select(exp.func("COALESCE", exp.Sum(this=col("n")), lit(0))).from_(table(base))) or 0)
        limit = within(self.req.max_suppression, total)
        roots = {(i, lv): d.roots[lv] for i, d in enumerate(domains) for lv in range(d.height)}
        metric = self.req.metric

        def evaluate(node: tuple[int, ...]) -> tuple[bool, float, Outcome]:
            row = ctx.query(self._node(node, hs, base, domains, roots))
            values = row[0] if row else (0, 0, 0, 0, *([0.0] * len(hs)))
            withheld, generalized = int(values[1] or 0), int(values[2] or 0)
            outcome = Outcome(withheld, generalized, int(values[0] or 0), int(values[3] or 0),
                              [float(v or 0) for v in values[4:4 + len(hs)]])
            ok = outcome.suppressed == 0 or outcome.suppressed <= limit
            if not ok:
                return False, 0.0, outcome
            if metric in ("kl", "entropy"):
                outcome.per_label = self._per_label(node, hs, base, ctx)
            return True, self._score(node, outcome, domains, total), outcome

        chosen: tuple[int, ...] = tuple(0 for _ in hs)
        notes = []
        if ctx.live:
            # α is not monotone with suppression: a class above a failing one may fail as a whole
            # where only a part failed below, so a failing node tags nothing
            found = search([h.height for h in hs], lambda n: lower_bound(metric, domains, n, total), evaluate, limit,
                           tag=self.req.alpha is None)
            chosen = found.best if found.best is not None else tuple(h.height for h in hs)
            notes.append(found.describe(names) + f"; metric {metric}")
            withheld = found.outcome.withheld if found.outcome is not None else 0
        else:
            ctx.execute(self._node(chosen, hs, base, domains, {}))
            notes.append("global recoding: the lattice is searched when the query runs, one statement like the "
                         "one above per evaluated node")
            withheld = 0
        released = self._release(frag, src, freq.cells, base, chosen, hs, ctx)
        ctx.drop(base, freq.cells)
        levels = {n: {lv: total - withheld} for n, lv in zip(names, chosen)}
        return Release(table=released, columns=frag.columns, levels=levels, counts=freq.counted, notes=notes)

    def _score(self, node: tuple[int, ...], o: Outcome, domains: list[Domain], total: int) -> float:
        if self.req.metric == "discernibility":
            return float(o.dm + o.withheld * total)
        if self.req.metric == "kl":
            return kl_sum(domains, node, total, o.per_label)
        if self.req.metric == "entropy":
            return entropy(domains, node, total, o.per_label)
        return arx_loss(arx_loss_parts(domains, node, total, o.withheld, o.shares))

    def _node(self, node: tuple[int, ...], hs: list[Hierarchy], base: str, domains: list[Domain],
              roots: dict[tuple[int, int], list[int]]) -> exp.Expression:
        """global/node.sql at ``node``."""
        levels = [col(f"c_{i}_{lv}") for i, lv in enumerate(node) if lv < hs[i].height]
        fails = self._fails()
        at_root: list[exp.Expression] = []
        for i, lv in enumerate(node):
            if lv < hs[i].height:
                found = roots.get((i, lv), [])
                at_root.append(exp.In(this=col(f"c_{i}_{lv}"), expressions=[lit(c) for c in found])
                               if found else exp.EQ(this=lit(1), expression=lit(0)))
        shares = []
        for i, lv in enumerate(node):
            share: exp.Expression = lit(1)
            if lv < hs[i].height and domains:
                share = exp.Case(this=col(f"c_{i}_{lv}"), ifs=[exp.If(this=lit(c), true=exp.Literal.number(repr(s)))
                                                              for c, (_, s, _) in domains[i].labels[lv].items()],
                                 default=lit(1))
            shares.append(exp.alias_(exp.Sum(this=exp.Case(ifs=[exp.If(this=fails.copy(), true=exp.Mul(
                this=col("size"), expression=share))], default=lit(0))), f"u_{i}"))
        return render("global/node", fails=fails, at_root=_all(at_root), shares=shares or [exp.alias_(lit(0), "u_none")],
            levels=levels or [exp.alias_(lit(0), "c_none")], levels_group=levels, diverse=self._diverse(),
            base=self._source(node, hs, base))

    def _classes(self, name: str, node: tuple[int, ...], hs: list[Hierarchy], base: str,
                 condition: exp.Expression) -> exp.Expression:
        levels = [col(f"c_{i}_{lv}") for i, lv in enumerate(node) if lv < hs[i].height]
        return render(name, levels=levels, levels_inner=levels or [exp.alias_(lit(0), "c_none")],
                      levels_group=levels, diverse=self._diverse(), base=self._source(node, hs, base),
                      **({"fails": condition} if name == "global/withheld" else {"passes": condition}))

    def _per_label(self, node: tuple[int, ...], hs: list[Hierarchy], base: str, ctx: RunContext) -> list[dict[int, int]]:
        """Withheld rows per label code of each quasi-identifier at ``node``."""
        below = [i for i, lv in enumerate(node) if lv < hs[i].height]
        out: list[dict[int, int]] = [Counter() for _ in hs]
        for row in ctx.query(self._classes("global/withheld", node, hs, base, self._fails())):
            size = int(row[len(below)])
            for i, lv in enumerate(node):
                # a quasi-identifier at the root has one label, code 0 here
                out[i][int(row[below.index(i)]) if lv < hs[i].height else 0] += size
        return [dict(c) for c in out]

    def _release(self, frag: Fragment, src: str, cells: str, base: str, node: tuple[int, ...],
                 hs: list[Hierarchy], ctx: RunContext) -> str:
        be = ctx.backend
        keep = self._classes("global/keep", node, hs, base, exp.Not(this=exp.Paren(this=self._fails())))
        match: list[exp.Expression] = [exp.EQ(this=col(f"c_{i}_{lv}", "f"), expression=col(f"c_{i}_{lv}", "c"))
                 for i, lv in enumerate(node) if lv < hs[i].height]
        labels = [exp.alias_(col(f"g_{i}_{lv}", "f") if lv < h.height else be.binary_text(
            exp.Literal.string(h.top_label)), f"label_{i}") for i, (h, lv) in enumerate(zip(hs, node))]
        columns = []
        for c in frag.columns:
            i = next((j for j, q in enumerate(frag.qis) if q.column == c), None)
            columns.append(exp.alias_(col(c, "s") if i is None else col(f"label_{i}", "p"), c, quoted=True))
        kept = ctx.create_temp("global_kept", render(
            "global/kept", cells=cells, keep=exp.Subquery(this=keep), labels=labels or [exp.alias_(lit(0), "label_none")],
            match=_all(match)))
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


def _domain(i: int, h: Hierarchy, cells: str, ctx: RunContext) -> Domain:
    """Quasi-identifier i's values in the selection with their label codes and texts at every
    level below the root, and each label's domain share: for a taxonomy ARX's (the share of the
    hierarchy file's leaves below the label), else the share of the selection's values."""
    codes = [col(f"c_{i}_{lv}") for lv in range(h.height)]
    texts = [exp.alias_(exp.Min(this=col(f"g_{i}_{lv}")), f"t_{lv}") for lv in range(h.height)]
    rows = ctx.query(exp.select(*codes, *texts, exp.alias_(exp.Sum(this=col("n")), "n"))
                     .from_(table(cells)).group_by(*[c.copy() for c in codes])) if h.height else []
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
