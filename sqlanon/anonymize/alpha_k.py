"""(α,k)-anonymity by progressive local recoding, inside the database.

Wong, Li, Fu, Wang: (α,k)-anonymous data publishing, J. Intell. Inf. Syst. 33(2), 2009;
seed 001 §3.2, Abbildung 13, and the prototype of §6.2.

The search runs on the frequency table of the selection (one row per QI tuple and sensitive
value, with its count), because every recoding decision depends only on those counts. The
current generalization levels live in a one-row table, so every round is the same few
statements, written once and run as one server-side loop (SQLite repeats them in-process):

1. the classes of the remaining cells at the current levels (``stat``, window functions);
2. one statement that finds the parts that may be released at these levels and adds their rows
   to the release plan: whole classes that satisfy k and α (line 6), and — the q_max step, lines
   9–13 — the largest α-compliant part of each class that violates α; under a budget applied
   to every part: parts leave, those with the highest protected share first, only while the
   rows left behind can still form one α-compliant class of at least k rows at the root (line
   3's test), so the remainder never strands protected rows without enough others to hide
   among, and fewer rows end up suppressed. When the selection cannot meet that even at the
   root, suppression is unavoidable and the budget is skipped;
3. the attribute with the highest entropy over the remaining rows is generalized one level
   (lines 15–16).

At the root, what remains is one class; its α-compliant part is released if it has k rows, the
rest is suppressed. The full rows are read twice: by the pushdown, which adds an injective
cell key, and by the release, which joins each row to its cell's plan by that key (rows of
cells released in parts are first numbered in random order) and copies the plan's labels.
"""
from __future__ import annotations

from typing import ClassVar

from sqlglot import exp

from sqlanon.anonymize import frequency
from sqlanon.anonymize.base import Release
from sqlanon.anonymize.cells import level_histogram
from sqlanon.context import RunContext
from sqlanon.criteria.alpha import alpha_fraction
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: larger than any rank: no budget applies
NO_LIMIT = 2**31 - 1


class AlphaK:
    name: ClassVar[str] = "alpha_k"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "alpha-deassociation")

    def __init__(self, requirement: Requirement):
        self.req = requirement
        frac = alpha_fraction(requirement.alpha.value if requirement.alpha else None)
        self.num, self.den = frac.numerator, frac.denominator
        #: the pushdown's cell key is a hash with a check column (Backend.cell_key)
        self.checked = False

    # -- pushdown ---------------------------------------------------------------------------
    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        """The α attribute, its protected flag and the cell key (anonymize/frequency.py)."""
        alpha = self.req.alpha
        cols, self.checked = frequency.pushdown_columns(frag, ctx, alpha.attribute if alpha else None, alpha)
        return cols

    # -- search -----------------------------------------------------------------------------
    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        hs = [q.hierarchy for q in frag.qis]
        m = len(hs)
        lnames = [f"l_{i}" for i in range(m)]
        k, num, den = lit(self.req.k), lit(self.num), lit(self.den)

        freq = frequency.build(frag, src, ctx, self.checked)
        cells, codes, radix = freq.cells, freq.codes, freq.radix
        assign = ctx.create_temp("assign", render(
            "alpha_k/assign_init", cells=cells, levels=[exp.alias_(lit(0), n) for n in lnames]))
        lv = ctx.create_temp("lv", exp.select(exp.alias_(lit(1), "step"), exp.alias_(lit(0), "done"),
                                              *[exp.alias_(lit(0), n) for n in lnames]))
        choice = ctx.create_temp("choice", exp.select(exp.alias_(lit(0), "done"), exp.alias_(lit(0), "attr"))
                                 .where(exp.false()))

        def code(i: int) -> exp.Expression:
            """Attribute i's code at its current level (0 at the root: one value)."""
            if not hs[i].height:
                return lit(0)
            return exp.Case(ifs=[exp.If(this=col(lnames[i], "lv").eq(lit(lv_)), true=col(f"c_{i}_{lv_}", "c"))
                                 for lv_ in range(hs[i].height)], default=lit(0))

        def class_id() -> exp.Expression:
            """One integer per class: the codes in mixed radix when they fit in 62 bits, else
            their rank; at the root every code is 0, so every row is one class."""
            if not m:
                return lit(1)
            total, terms = 1, []
            for i in range(m):
                terms.append(exp.Mul(this=exp.Paren(this=code(i)), expression=lit(total)) if total > 1 else code(i))
                total *= max([radix[(i, lv_)] for lv_ in range(hs[i].height)], default=1)
            if total < 2**62:
                out = terms[0]
                for t in terms[1:]:
                    out = exp.Add(this=out, expression=t)
                return out
            return exp.Window(this=exp.DenseRank(), order=exp.Order(
                expressions=[exp.Ordered(this=code(i)) for i in range(m)]))

        top = exp.and_(*[col(n, "lv").eq(lit(h.height)) for n, h in zip(lnames, hs)]) if m else exp.true()
        # The codes table holds the cells still in the search: each round refills it with what
        # the round left, so no statement joins the full frequency table again.
        rem = codes
        carried = [f"c_{i}_{lv_}" for i, lv_ in freq.coded]

        def stat_select() -> exp.Expression:
            return render("alpha_k/stat", rem=rem, lv=lv, cls=class_id(), codes=[col(c, "c") for c in carried],
                          carried=[col(c) for c in carried])

        def round_() -> exp.Expression:
            return render("alpha_k/round", assign=assign, stat=stat, lv=lv, k=k, num=num, den=den,
                          unbounded=lit(NO_LIMIT), top=top.copy(), levels=[col(n, "lv") for n in lnames])

        def remaining() -> exp.Expression:
            return exp.insert(render("alpha_k/remaining", stat=stat, lv=lv, assign=assign,
                                     codes=[col(c, "s") for c in carried]),
                              table(rem), columns=[exp.to_identifier(c, quoted=True)
                                                   for c in ["cell", "n", "sv", "p", *carried]])

        def choose() -> exp.Expression:
            parts = [render("alpha_k/entropy", attr=lit(i), gen=code(i), rem=rem, lv=lv,
                            candidate=exp.LT(this=exp.select(col(lnames[i])).from_(table(lv)).subquery(),
                                             expression=lit(hs[i].height)))
                     for i in range(m)]
            entropies = exp.union(*parts, distinct=False) if len(parts) > 1 else (
                parts[0] if parts else exp.select(exp.alias_(lit(0), "attr"), exp.alias_(exp.null(), "h"))
                .where(exp.false()))
            pick = render("alpha_k/choice", lv=lv, top=top.copy()).with_("entropies", as_=entropies)
            return exp.insert(pick, table(choice))

        def advance() -> exp.Expression:
            """The next round's levels: the chosen attribute one level up; done when choose said so."""
            picked = exp.select(col("attr")).from_(table(choice)).subquery()
            values: dict = {"step": exp.Add(this=col("step"), expression=lit(1)),
                            "done": exp.select(col("done")).from_(table(choice)).subquery()}
            for i, n in enumerate(lnames):
                values[n] = exp.Add(this=col(n), expression=exp.Case(
                    ifs=[exp.If(this=exp.EQ(this=picked.copy(), expression=lit(i)), true=lit(1))], default=lit(0)))
            return exp.update(table(lv), values)

        stat = ctx.create_temp("stat", stat_select())
        rounds, kept = ctx.staged("round", round_())
        picks, kept_too = ctx.staged("choice", choose())
        ctx.repeat(lambda: exp.select(exp.EQ(this=col("done"), expression=lit(0))).from_(table(lv)),
                   [*rounds, ctx.backend.empty(rem), remaining, *picks, advance, ctx.backend.empty(choice),
                    ctx.backend.empty(stat), exp.insert(stat_select(), table(stat))],
                   key="alpha_k", hash_joins=True)
        step = int(ctx.scalar(exp.select(col("step")).from_(table(lv))) or 1) - 1
        ctx.drop(stat, choice, lv, *kept, *kept_too)

        # The release plan as row ranges per cell, with each range's released QI values
        # computed here on the small table, so the full rows are only joined and copied.
        labels = [exp.alias_(
            exp.Case(ifs=[exp.If(this=col(lnames[i], "r").eq(lv), true=col(f"g_{i}_{lv}", "c"))
                          for lv in range(hs[i].height)], default=exp.Literal.string(hs[i].top_label)),
            f"label_{i}") for i in range(m)]
        plan = ctx.create_temp("plan", render("alpha_k/plan", assign=assign, cells=cells, labels=labels,
                                              levels=list(lnames)))
        ranked = ctx.create_temp("ranked", render("alpha_k/ranked", src=src, plan=plan))
        whole_cols, split_cols = [], []
        for c in frag.columns:
            i = next((j for j, q in enumerate(frag.qis) if q.column == c), None)
            whole_cols.append(exp.alias_(col(c, "s") if i is None else col(f"label_{i}", "p"), c, quoted=True))
            split_cols.append(exp.alias_(col(c, "r") if i is None else col(f"label_{i}", "p"), c, quoted=True))
        released = ctx.create_temp("released", render(
            "alpha_k/release", whole_columns=whole_cols, split_columns=split_cols, src=src, ranked=ranked, plan=plan))

        histogram = level_histogram(ctx.query(exp.select(*[col(n) for n in lnames], exp.Sum(this=col("n")))
                                              .from_(table(assign)).group_by(*[col(n) for n in lnames])),
                                    [q.column for q in frag.qis]) if m else {q.column: {} for q in frag.qis}
        ctx.drop(ranked, plan, assign, codes)
        return Release(table=released, columns=frag.columns, levels=histogram, counts=cells,
                       notes=[f"{step} search round(s) on the frequency table"])
