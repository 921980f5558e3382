"""(α,k)-anonymity by progressive local recoding, inside the database.

Wong, Li, Fu, Wang: (α,k)-anonymous data publishing, J. Intell. Inf. Syst. 33(2), 2009;
seed 001 §3.2, Abbildung 13, and the prototype of §6.2.

The search runs on the frequency table of the selection (one row per QI tuple and sensitive
value, with its count), because every recoding decision depends only on those counts. Each
round is a fixed handful of statements over small temp tables:

1. classes of the remaining rows at the current levels (window functions);
2. the parts that may be released at these levels: whole classes that satisfy k and α
   (line 6), and — the q_max step, lines 9–13 — the largest α-compliant part of each class
   that violates α;
3. the budget of q_max, applied to every part: parts leave, those with the highest protected
   share first, only while the rows left behind can still form one α-compliant class of at
   least k rows at the root (line 3's test); so the remainder never strands protected rows
   without enough others to hide among, and fewer rows end up suppressed. When the selection
   cannot meet that even at the root, suppression is unavoidable and the budget is skipped;
4. the attribute with the highest entropy over the remaining rows is generalized one level
   (lines 15–16).

At the root, what remains is one class; its α-compliant part is released if it has k rows, the
rest is suppressed. The full rows are read twice: by the pushdown, which adds an injective
cell key, and by the release, which joins each row to its cell's plan by that key (rows of
cells released in parts are first numbered in random order) and copies the plan's labels.
"""
from __future__ import annotations

from typing import ClassVar

from sqlglot import exp

from sqlanon.anonymize.base import Release
from sqlanon.context import RunContext
from sqlanon.anonymize import frequency
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
        rem = ctx.create_temp("rem_0", render("alpha_k/rem_init", cells=cells))

        def code(i: int, level: int, alias: str | None = "c") -> exp.Column:
            return col(f"c_{i}_{level}", alias)

        def class_id(lam: list[int]) -> exp.Expression:
            """One integer per class: the codes in mixed radix when it fits in 62 bits, else their
            rank; 1 when every attribute is at the root."""
            moving = [i for i in range(m) if lam[i] < hs[i].height]
            if not moving:
                return lit(1)
            total, terms = 1, []
            for i in moving:
                terms.append(exp.Mul(this=code(i, lam[i]), expression=lit(total)) if total > 1 else code(i, lam[i]))
                total *= radix[(i, lam[i])]
            if total < 2**62:
                out = terms[0]
                for t in terms[1:]:
                    out = exp.Add(this=out, expression=t)
                return out
            return exp.Window(this=exp.DenseRank(), order=exp.Order(
                expressions=[exp.Ordered(this=code(i, lam[i])) for i in moving]))

        lam = [0] * m
        step = 0
        while True:
            step += 1
            top = all(lam[i] == hs[i].height for i in range(m))
            levels = [lit(v) for v in lam]
            stat = ctx.create_temp(f"stat_{step}", render("alpha_k/stat", rem=rem, codes=codes, cls=class_id(lam)))
            classes = ctx.create_temp(f"classes_{step}", render(
                "alpha_k/classes", stat=stat, k=k, num=num, den=den))
            vals = ctx.create_temp(f"vals_{step}", render("alpha_k/vals", stat=stat, classes=classes, k=k))
            cap = ctx.create_temp(f"cap_{step}", render("alpha_k/cap", vals=vals, classes=classes, num=num,
                                                        den=den, unbounded=lit(NO_LIMIT)))
            parts = ctx.create_temp(f"parts_{step}", render("alpha_k/parts", cap=cap, classes=classes, vals=vals, k=k))
            partvals = ctx.create_temp(f"partvals_{step}", render("alpha_k/partvals", cap=cap, vals=vals))
            scratch = [vals, cap, partvals]
            limit = NO_LIMIT
            if not top:
                remvals = ctx.create_temp(f"remvals_{step}", render("alpha_k/remvals", stat=stat))
                scratch.append(remvals)
                total, most = (int(v or 0) for v in ctx.query(exp.select(
                    exp.select(exp.Sum(this=col("n"))).from_(table(stat)).subquery(),
                    exp.select(exp.Max(this=col("r"))).from_(table(remvals)).subquery(),
                ))[0]) if ctx.live else (0, 0)
                # The budget only keeps a feasible remainder feasible; when the selection cannot be
                # one (α,k) class even at the root, suppression is unavoidable and it is skipped.
                if total >= self.req.k and most * self.den <= self.num * total:
                    left_total, left_most = (int(v or 0) for v in (ctx.query(render(
                        "alpha_k/full_take", total=lit(total), parts=parts, remvals=remvals,
                        partvals=partvals)) or [(0, 0)])[0])
                    full_ok = left_total == 0 or (left_total >= self.req.k
                                                  and left_most * self.den <= self.num * left_total)
                    if not full_ok:
                        bad = ctx.scalar(render("alpha_k/first_bad", parts=parts, remvals=remvals,
                                                partvals=partvals, num=num, den=den, total=lit(total), k=k))
                        limit = int(bad) if bad is not None else NO_LIMIT
            takes = ctx.create_temp(f"takes_{step}", render(
                "alpha_k/takes", stat=stat, parts=parts, partvals=partvals, limit_rank=lit(limit)))
            ctx.run(render("alpha_k/move_takes", assign=assign, takes=takes, step=lit(step), levels=levels))
            new_rem = ctx.create_temp(f"rem_{step}", render("alpha_k/rem_next", stat=stat, takes=takes))
            ctx.drop(rem, stat, classes, parts, takes, *scratch)
            rem = new_rem
            if top:
                break
            candidates = [i for i in range(m) if lam[i] < hs[i].height]
            remc = exp.select(col("n", "r"), *[code(i, lam[i]) for i in candidates]) \
                .from_(table(rem, "r")) \
                .join(table(codes, "c"), on=col("cell", "c").eq(col("cell", "r")))
            parts_h = [render("alpha_k/entropy", attr=lit(i), remc="_sa_remc", gen=code(i, lam[i], None))
                       for i in candidates]
            union = exp.union(*parts_h, distinct=False, copy=False) if len(parts_h) > 1 else parts_h[0]
            rows = ctx.query(union.with_("_sa_remc", as_=remc, copy=False))
            if not rows or rows[0][2] is None:
                break  # nothing left to generalize
            entropy = {int(i): float(h or 0.0) for i, h, _left in rows}
            lam[max(candidates, key=lambda i: (entropy[i], -i))] += 1

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

        histogram: dict[str, dict[int, int]] = {q.column: {} for q in frag.qis}
        if m:
            rows = ctx.query(exp.select(*[col(n) for n in lnames], exp.Sum(this=col("n")))
                             .from_(table(assign)).group_by(*[col(n) for n in lnames]))
            for row in rows:
                for i, q in enumerate(frag.qis):
                    histogram[q.column][int(row[i])] = histogram[q.column].get(int(row[i]), 0) + int(row[-1])
        ctx.drop(rem, ranked, plan, assign, codes, cells)
        return Release(table=released, columns=frag.columns, levels=histogram,
                       notes=[f"{step} search round(s) on the frequency table"])
