"""(α,k)-anonymity by progressive local recoding, inside the database.

Wong, Li, Fu, Wang: (α,k)-anonymous data publishing, J. Intell. Inf. Syst. 33(2), 2009;
Bodo John, Vergleichende Analyse von Datenschutzalgorithmen und -konzepten (Universität
Rostock, 2016), §3.2, Figure 13, and its prototype of §6.2.

The search runs on the frequency table of the selection (one row per QI tuple and sensitive
value, with its count), because every recoding decision depends only on those counts. It reads
blocks, not cells: the rows still in the search that share the sensitive value and every
quasi-identifier's code at the current levels. Levels only rise and hierarchies nest (the
policy refuses interval widths that do not), so a block never splits, and the blocks shrink
from thousands to a handful as the rounds generalize (Adult: 9,726 cells in the first round,
283 blocks in the ninth). The current levels are the last row of a table of every round's
levels, so every round is the same few statements, written once and run as one server-side loop
(SQLite repeats them in-process):

1. one statement finds the parts of the classes that may be released at these levels and
   writes every block with the rows taken from it: whole classes that satisfy k and α (line 6),
   and — the q_max step, lines 9–13 — the largest α-compliant part of each class that violates
   α; under a budget applied to every part: parts leave, those with the highest protected share
   first, only while the rows left behind can still form one α-compliant class of at least k
   rows at the root (line 3's test), so the remainder never strands protected rows without
   enough others to hide among, and fewer rows end up suppressed. When the selection cannot
   meet that even at the root, suppression is unavoidable and the budget is skipped;
2. the attribute with the highest entropy over the remaining rows is generalized one level
   (lines 15–16): the next round's levels are added to the table;
3. the round's blocks go to the history with their block of the next round, and what they
   left is grouped into the next round's blocks.

At the root, what remains is one class; its α-compliant part is released if it has k rows, the
rest is suppressed. Which rows of a block a round releases does not matter (from that round on
they look alike), so the history is resolved into row ranges per cell at the end, from the last
round down: one recursive statement (lists.sql), or a loop of one pass per round where recursion
is slow (descend.sql). The full rows are read twice: by
the pushdown, which adds an injective cell key, and by the release, which joins each row to its
cell's ranges by that key (rows of cells released in parts are first numbered in random order)
and copies the ranges' labels. Where the release holds nothing but the quasi-identifiers and the
α attribute, a cell's rows are alike in all of it, and a database that can repeat a row
(Backend.bounded_series) writes each range as copies of one row instead: the rows are read once.
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
from sqlanon.sql.templates import Owned, col, lit, render, table

#: larger than any rank: no budget applies
NO_LIMIT = 2**31 - 1
#: class ids are packed into one integer below this bound, else written as text
PACKED = 2**62
#: the release plan's name as a CTE of the release (Backend.ctes_in_pipelines)
PLAN = "_sa_plan"


class AlphaK:
    name: ClassVar[str] = "alpha_k"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "alpha-deassociation")
    suppresses: ClassVar[bool] = True

    def __init__(self, requirement: Requirement):
        self.req = requirement
        frac = alpha_fraction(requirement.alpha.value if requirement.alpha else None)
        self.num, self.den = frac.numerator, frac.denominator

    # -- pushdown ---------------------------------------------------------------------------
    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        """The α attribute, its protected flag and the cell key (anonymize/frequency.py)."""
        alpha = self.req.alpha
        return frequency.pushdown_columns(frag, ctx, alpha.attribute if alpha else None, alpha,
                                          keyed=self._keyed(frag, ctx))

    # -- search -----------------------------------------------------------------------------
    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        hs = [q.hierarchy for q in frag.qis]
        m = len(hs)
        lnames = [f"l_{i}" for i in range(m)]
        k, num, den = lit(self.req.k), lit(self.num), lit(self.den)

        freq = frequency.build(frag, src, ctx, keyed=self._keyed(frag, ctx))
        # the cells' search columns, read where they are (a derived table), not copied
        cells, codes, radix = freq.cells, freq.search_columns().subquery(), freq.radix
        carried = [f"c_{i}_{lv_}" for i, lv_ in freq.coded]
        # The levels of every round, one row per step: each round's choice adds the next round's
        # (choice.sql), the current levels are the last row's. One statement a round, where an
        # UPDATE of one row and a copy of it to the history took two more.
        lvh = ctx.create_temp("lvh", exp.select(exp.alias_(lit(1), "step"), exp.alias_(lit(0), "done"),
                                                *[exp.alias_(lit(0), n) for n in lnames]))

        def now_at(name: str) -> exp.Expression:
            """The current levels' column ``name``: a scalar subquery of the last row (one subquery,
            not two: every statement of the loop runs its own again at every round)."""
            return exp.select(col(name)).from_(table(lvh)).order_by(
                exp.Ordered(this=col("step"), desc=True)).limit(1).subquery()

        # the current levels as a derived table (choice.sql reads its row), and as a derived table
        # of scalar subqueries, read once per statement: joined as a table, PostgreSQL rescans the
        # one row for every block (choice: 11.2 ms -> 7.8 ms). Where a scalar subquery is a job
        # of its own (Spark), the row joined: one job, not one per level
        lv = exp.select("*").from_(table(lvh)).order_by(exp.Ordered(this=col("step"), desc=True)).limit(1).subquery()
        levels = lv.copy() if ctx.backend.subqueries_are_jobs else \
            exp.select(*[exp.alias_(now_at(n), n) for n in ["step", *lnames]]).subquery()
        # the first round's levels as constants, which the planner folds into the codes
        first = exp.select(*[exp.alias_(lit(0), n) for n in lnames] or [exp.alias_(lit(0), "l")]).subquery()

        def code(i: int) -> exp.Expression:
            """Attribute i's code at the levels of ``lv`` (0 at the root: one value)."""
            if not hs[i].height:
                return lit(0)
            return exp.Case(ifs=[exp.If(this=col(lnames[i], "lv").eq(lit(lv_)), true=col(f"c_{i}_{lv_}", "c"))
                                 for lv_ in range(hs[i].height)], default=lit(0))

        def class_id() -> exp.Expression:
            """The class of the codes ``c`` at the levels ``lv``, the same value in every statement:
            the codes in mixed radix when they fit in 62 bits, else their text."""
            if not m:
                return lit(1)
            total, terms = 1, []
            for i in range(m):
                terms.append(exp.Mul(this=exp.Paren(this=code(i)), expression=lit(total)) if total > 1 else code(i))
                total *= max([radix[(i, lv_)] for lv_ in range(hs[i].height)], default=1)
            if total < PACKED:
                out = terms[0]
                for t in terms[1:]:
                    out = exp.Add(this=out, expression=t)
                return out
            parts: list[exp.Expression] = []
            for i in range(m):
                parts += [exp.Literal.string(",")] if parts else []
                parts.append(exp.cast(code(i), "TEXT"))
            return exp.Concat(expressions=parts) if len(parts) > 1 else parts[0]

        def blocks(rows: str, n: exp.Expression, left: exp.Expression, at: exp.Expression) -> exp.Expression:
            return render("alpha_k/blocks", rows=rows, lv=at, cls=Owned(class_id()), n=n, left=left,
                          codes=[exp.alias_(exp.Min(this=col(c)), c, quoted=True) for c in carried],
                          carried=[col(c, "c") for c in carried])

        top = exp.and_(*[col(n, "lv").eq(lit(h.height)) for n, h in zip(lnames, hs)]) if m else exp.true()
        blk = ctx.create_temp("blk", blocks(codes, col("n", "c"), exp.true(), first))
        # the blocks of the current round: r rows, t of them released at the round's levels
        now = ctx.create_temp("now", exp.select(
            exp.alias_(lit(0), "step"), col("cls"), col("sv"), col("p"), exp.alias_(col("n"), "r"),
            exp.alias_(col("n"), "t"), *[col(c) for c in carried]).from_(table(blk)).where(exp.false()))
        # every block of every round, with its parent: its block in the next round
        rounds = ctx.create_temp("rounds", exp.select(
            col("step"), col("cls"), col("sv"), col("r"), col("t"), exp.alias_(col("cls"), "parent"),
            exp.alias_(col("r"), "before")).from_(table(now)).where(exp.false()))

        def round_() -> exp.Expression:
            return render("alpha_k/round", blk=blk, now=now, lv=levels, k=k, num=num, den=den,
                          unbounded=lit(NO_LIMIT), top=top.copy(), codes=[col(c, "s") for c in carried])

        def candidate(i: int) -> exp.Expression:
            """Attribute i is below its root at the current levels."""
            return exp.LT(this=now_at(lnames[i]), expression=lit(hs[i].height))

        def choose() -> exp.Expression:
            below = [i for i in range(m) if hs[i].height]
            if ctx.backend.grouping_sets and below:
                gens = [f"g_{i}" for i in below]
                codes_ = [exp.alias_(code(i), g) for i, g in zip(below, gens)]
                grouped: list[exp.Condition] = [exp.EQ(this=exp.Grouping(expressions=[col(g)]), expression=lit(0))
                                                for g in gens]
                if not ctx.backend.subqueries_are_jobs:
                    keep = exp.or_(*[exp.and_(col("attr").eq(lit(i)), candidate(i)) for i in below])
                else:
                    # an attribute below its root read from the levels' row joined (b_i), not
                    # from a scalar subquery each: its grouping set names it, the others none
                    codes_ += [exp.alias_(exp.Case(ifs=[exp.If(this=exp.LT(this=col(lnames[i], "lv"), expression=lit(
                        hs[i].height)), true=lit(1))], default=lit(0)), f"b_{i}") for i in below]
                    grouped = [exp.and_(e, exp.EQ(this=exp.Max(this=col(f"b_{i}")), expression=lit(1)))
                               for e, i in zip(grouped, below)]
                    keep = exp.Not(this=exp.Is(this=col("attr"), expression=exp.null()))
                entropies = render(
                    "alpha_k/entropies", now=now, lv=levels, codes=codes_, sets=[exp.Paren(this=col(g)) for g in gens],
                    which=exp.Case(ifs=[exp.If(this=e, true=lit(i)) for e, i in zip(grouped, below)]), candidate=keep)
            else:
                parts = [render("alpha_k/entropy", attr=lit(i), gen=code(i), now=now, lv=levels, candidate=candidate(i))
                         for i in range(m)]
                entropies = exp.union(*parts, distinct=False) if len(parts) > 1 else (
                    parts[0] if parts else exp.select(exp.alias_(lit(0), "attr"), exp.alias_(exp.null(), "h"))
                    .where(exp.false()))
            # the next round's levels: the chosen attribute one level up
            following = [exp.alias_(exp.Add(this=col(n, "lv"), expression=exp.Case(
                ifs=[exp.If(this=col("attr", "b").eq(lit(i)), true=lit(1))], default=lit(0))), n)
                for i, n in enumerate(lnames)]
            pick = render("alpha_k/choice", lv=lv, top=top.copy(), levels=following).with_("entropies", as_=entropies)
            return exp.insert(pick, table(lvh))

        def record() -> exp.Expression:
            """The round's blocks into the history, each with its block of the next round."""
            return exp.insert(render("alpha_k/record", now=now, lv=levels, parent=Owned(class_id())), table(rounds))

        def merge() -> exp.Expression:
            """The blocks of the next round: what this round left, grouped at the new levels."""
            left = exp.GT(this=col("r", "c"), expression=col("t", "c"))
            return blocks(now, exp.Sub(this=col("r", "c"), expression=col("t", "c")), left, levels)

        staged, kept = ctx.staged("round", round_())
        picks, kept_too = ctx.staged("choice", choose())
        if ctx.backend.memory_tables and ctx.live:  # the work tables hold at most a row per cell
            cells_n = int(ctx.scalar(exp.select(exp.Count(this=exp.Star())).from_(table(cells))) or 0)
            for work in (blk, now, *kept, *kept_too):
                moved = ctx.backend.in_memory(work, cells_n)
                if moved is not None:
                    ctx.run_text(moved)
        ctx.repeat(lambda: exp.select(exp.EQ(this=now_at("done"), expression=lit(0))),
                   [*staged, *picks, record, *ctx.backend.refill(blk, merge()), ctx.backend.empty(now)],
                   key="alpha_k", hash_joins=True)
        step = int(ctx.scalar(exp.select(exp.Max(this=col("step"))).from_(table(lvh))) or 2) - 1
        ctx.drop(blk, now, *kept, *kept_too)

        # Each round's released rows, placed from the last round down to the first (lists.sql),
        # then shared out to the cells in the release plan: row ranges per cell, with each
        # range's released QI values computed here on the small table, so the full rows are
        # only joined and copied.
        pos = _resolve(ctx, rounds, lvh, lnames, step)
        labels = [exp.alias_(
            exp.Case(ifs=[exp.If(this=col(lnames[i], "x").eq(lv_), true=col(f"g_{i}_{lv_}", "c"))
                          for lv_ in range(hs[i].height)], default=exp.Literal.string(hs[i].top_label)),
            f"label_{i}") for i in range(m)]
        planned = render("alpha_k/plan", codes=codes, cells=cells, pos=pos, first=first,
                         cls=Owned(class_id()), levels=[col(n, "p") for n in lnames],
                         labels=[Owned(e) for e in labels])
        # Where intermediates may stay in a statement (PostgreSQL), the plan is a CTE of the release
        # and the split cells' numbered rows a derived table of it (Adult: plan 36 + numbering 11 +
        # release 37 ms -> 67 ms), else both are tables.
        inline = ctx.backend.ctes_in_pipelines
        plan = PLAN if inline else ctx.create_temp("plan", planned)
        temps = [] if inline else [plan]
        series = self._series(frag, ctx)
        if series is not None:
            release = render("alpha_k/release_cells", columns=self._labelled(frag, "p", col("sv", "p")), plan=plan,
                             series=series[0], within=series[1])
        else:
            qi_columns = {q.column for q in frag.qis}
            numbered = render("alpha_k/ranked", src=src, plan=plan,
                              kept=[col(c, "s") for c in frag.columns if c not in qi_columns])
            if inline:
                ranked: exp.Expression | str = numbered.subquery()
            else:
                ranked = ctx.create_temp("ranked", numbered)
                temps.append(ranked)
            release = render("alpha_k/release", whole_columns=self._labelled(frag, "s"),
                             split_columns=self._labelled(frag, "r"), src=src, ranked=ranked, plan=plan)
        if inline:
            release = exp.select("*").from_(release.subquery("r", copy=False), copy=False) \
                .with_(PLAN, as_=planned, copy=False)
        released = ctx.create_temp("released", release)

        # the rows released at each round's levels: the intervals placed, not the whole history
        histogram = level_histogram(ctx.query(
            exp.select(*[col(n) for n in lnames], exp.Sum(this=exp.Sub(this=col("hi"), expression=col("lo"))))
            .from_(table(pos)).group_by(*[col(n) for n in lnames])), [q.column for q in frag.qis]) if m else {
            q.column: {} for q in frag.qis}
        ctx.drop(*temps, pos, rounds, lvh, cells)
        return Release(table=released, columns=frag.columns, levels=histogram, counts=freq.counted,
                       notes=[f"{step} search round(s) on the frequency table"])

    def _series(self, frag: Fragment, ctx: RunContext) -> tuple[exp.Expression, exp.Expression] | None:
        """Where the release may be written from the plan alone (release_cells.sql), the rows
        each range becomes (Backend.bounded_series); else None. Only when every column released as it
        is is the α attribute: a cell is one QI tuple and one value of it, and the pushdown copies
        that value into the cells (frequency.pushdown_columns) by the very expression it copies
        into the column (Fragment.select), so a cell's stored rows are alike in every column the
        release holds, and n copies of one are those n rows. Any other column (an insensitive one,
        the persons') differs between a cell's rows: the release then reads them."""
        attribute = self.req.alpha.attribute if self.req.alpha else None
        qis = {q.column for q in frag.qis}
        if any(c not in qis and c != attribute for c in frag.columns):
            return None
        return ctx.backend.bounded_series(col("lo", "p"), col("hi", "p"))

    def reads_rows_once(self, frag: Fragment, ctx: RunContext) -> bool:
        """Whether the run reads the pushed-down rows in one statement alone (Method): where the
        release is written from the plan, the frequency table is the only one."""
        return self._series(frag, ctx) is not None

    def _keyed(self, frag: Fragment, ctx: RunContext) -> bool:
        """Whether the rows carry the cell key: not where the release is written from the plan
        alone (_series) and the frequency table is grouped on the values anyway
        (Backend.hashed_cell_key): the key would be computed for nothing (1 M rows: 0.14 s of
        the pushdown's 0.52 s of server CPU)."""
        return self._series(frag, ctx) is None or not ctx.backend.hashed_cell_key

    @staticmethod
    def _labelled(frag: Fragment, rows: str, value: exp.Expression | None = None) -> list[exp.Expr]:
        """The release's columns: each quasi-identifier's label from the plan (p), every other
        column from ``rows``, or where given ``value`` (the cell's sensitive value)."""
        out: list[exp.Expr] = []
        for c in frag.columns:
            i = next((j for j, q in enumerate(frag.qis) if q.column == c), None)
            e = col(f"label_{i}", "p") if i is not None else value.copy() if value is not None else col(c, rows)
            out.append(exp.alias_(e, c, quoted=True))
        return out


def _resolve(ctx: RunContext, rounds: str, lvh: str, lnames: list[str], step: int) -> str:
    """The history's intervals for the blocks of the first round (lists.sql): one recursive
    statement, or where recursion is slow a loop of one pass per round (descend.sql)."""
    levels = [col(n, "lv") for n in lnames]
    if ctx.backend.fast_recursion:
        return ctx.create_temp("pos", render("alpha_k/lists", rounds=rounds, lvh=lvh, levels=levels), hash_joins=True)
    pos = ctx.create_temp("pos", exp.select(
        col("cls", "h"), col("sv", "h"), *[exp.alias_(exp.cast(lit(0), "BIGINT"), n) for n in ("lo", "hi")],
        *levels).from_(table(rounds, "h")).join(table(lvh, "lv"), join_type="cross").where(exp.false()))
    be = ctx.backend
    # a pass's intervals straight into pos where a refill may read the rows it replaces (Spark),
    # else into a table of their own, then copied
    here = None if be.refill_reads_old else ctx.create_temp("here", exp.select("*").from_(table(pos)).where(exp.false()))
    cur = ctx.create_temp("cur", exp.select(exp.alias_(lit(step), "step")))
    # the pass's round's blocks: a view where the database has them (read by one statement a
    # pass), else a table refilled every pass
    of_round = exp.select("*").from_(table(rounds)).where(
        col("step").eq(exp.select(col("step")).from_(table(cur)).subquery()))
    blocks = ctx.view("blocks", of_round)
    fill: list[exp.Expression] = []
    if blocks is None:
        blocks = ctx.create_temp("blocks", exp.select("*").from_(table(rounds)).where(exp.false()))
        fill = be.refill(blocks, of_round)
    descend = render("alpha_k/descend", here=here or pos, above=pos, blocks=blocks, lvh=lvh, levels=list(lnames),
                     own_levels=levels, above_levels=[col(n, "q") for n in lnames])
    into = be.refill(pos, descend.expression) if here is None else \
        [be.empty(here), descend, *be.refill(pos, exp.select("*").from_(table(here)))]
    ctx.repeat(lambda: exp.select(exp.GTE(this=col("step"), expression=lit(1))).from_(table(cur)),
               [*fill, *into, exp.update(table(cur), {"step": exp.Sub(this=col("step"), expression=lit(1))})],
               key="alpha_k_descend", hash_joins=True)
    ctx.drop(cur, *([here] if here else []), blocks)
    return pos
