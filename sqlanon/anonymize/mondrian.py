"""Mondrian partitioning (LeFevre, DeWitt, Ramakrishnan 2006; issue 3), inside the database.

Greedy top-down cuts on the frequency table: every open partition is cut at the median row
along the quasi-identifier with the widest extent whose two halves both satisfy every model
(k, α, l-diversity, t-closeness — the last two by the criteria's own SQL; k alone by the
halves' sizes, which the candidates carry, so that only the widest attribute's cut is measured
where it holds); a partition with no such cut is final. One pass cuts every open partition at
once, and its cells move on to a table of open cells or to the final ones: the same statements
over the same tables every pass, so the passes run as one server-side loop where the database
has one, and the number of statements grows with the depth of the cuts (about log2(n/k)), not
with the rows. For k alone, a partition whose cells all hold k rows is closed at once as its
cells (its distinct position tuples): every cut of it would be valid, so the passes would only
cut it down to them (1 M Adult-like rows: 25 passes → 1, the same release). A taxonomy attribute is cut along its ancestor path, so that a part keeps whole
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
from sqlanon.anonymize.cells import class_labels, level_counts, level_histogram
from sqlanon.context import RunContext
from sqlanon.criteria.alpha import alpha_fraction
from sqlanon.criteria.l_diversity import LDiversity
from sqlanon.criteria.t_closeness import TCloseness
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table


class Mondrian:
    name: ClassVar[str] = "mondrian"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "alpha-deassociation", "l-diversity", "t-closeness")
    suppresses: ClassVar[bool] = False

    def __init__(self, requirement: Requirement):
        self.req = requirement
        frac = alpha_fraction(requirement.alpha.value if requirement.alpha else None)
        self.num, self.den = frac.numerator, frac.denominator
        attributes = {m.attribute for m in (requirement.alpha, requirement.l, requirement.t) if m is not None}
        if len(attributes) > 1:
            raise PolicyError(f"method mondrian judges one sensitive attribute per release; the requirement "
                              f"names {sorted(attributes)}")
        self.attribute = attributes.pop() if attributes else None

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        return frequency.pushdown_columns(frag, ctx, self.attribute, self.req.alpha, keyed=self._keyed(frag, ctx))

    def _series(self, frag: Fragment, ctx: RunContext) -> exp.Expression | None:
        """Where the release may be written from the cells (mondrian/release_cells.sql), the
        rows each cell becomes (Backend.row_series); else None. Only when every column released
        as it is is in the cells: the criteria's attribute (sv), or for k alone the columns the
        cells carry (_carried). A cell is then one QI tuple and one value of each, copied by the
        pushdown into the cells (frequency.pushdown_columns) by the very expression it copies
        into the column (Fragment.select), so n copies of a cell's one row are its n stored rows."""
        qis = {q.column for q in frag.qis}
        if self.attribute is None and self._carried(frag, ctx) is None \
                or self.attribute is not None and any(c not in qis and c != self.attribute for c in frag.columns):
            return None
        return ctx.backend.row_series(lit(1), col("n", "f"))

    def _carried(self, frag: Fragment, ctx: RunContext) -> tuple[str, ...] | None:
        """k alone: the released columns besides the quasi-identifiers, which the cells carry so
        that the release is written from them (frequency.build's ``carried``); None where it
        reads the rows instead. Only sensitive text columns, compared byte for byte (a row key,
        a person's column or an insensitive column may hold a value per row: as many cells as
        rows; a number's equality is not its text, 1.0 = 1.00), and only where the selection is
        then a view (Backend.views_selection): with a copy, wider cells cost what the second
        read of the rows saves (1 M Adult-like rows, occupation: 50,251 cells instead of 23,736,
        server CPU 2.28 against 2.21 s). The rows then carry no cell key (_keyed), which would
        not encode the carried columns: only where the cells are grouped on the values."""
        be = ctx.backend
        if not self._sizes_only or not frag.qis or frag.link is not None or not be.hashed_cell_key \
                or be.row_series(lit(1), lit(1)) is None or not be.views_selection:
            return None
        qis = {q.column for q in frag.qis}
        sensitive = {s.column for s in frag.policy.sensitive}
        rest = tuple(c for c in frag.columns if c not in qis)
        if any(c not in sensitive or c not in frag.text_columns or c in frag.key or c in frag.persons for c in rest):
            return None
        return rest

    def reads_rows_once(self, frag: Fragment, ctx: RunContext) -> bool:
        """Whether the run reads the pushed-down rows in one statement alone (Method): where the
        release is written from the cells, the frequency table is the only one."""
        return self._series(frag, ctx) is not None

    def _keyed(self, frag: Fragment, ctx: RunContext) -> bool:
        """Whether the rows carry the cell key: not where the release is written from the cells
        and the frequency table is grouped on the values anyway (Backend.hashed_cell_key)."""
        return self._series(frag, ctx) is None or not ctx.backend.hashed_cell_key

    @property
    def _sizes_only(self) -> bool:
        """k alone: a cut is judged by its halves' sizes, which the candidates carry."""
        return self.req.alpha is None and self.req.l is None and self.req.t is None

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

    def _distances(self, halves: str, whole: str, m: int) -> list[tuple[str, exp.Expression]]:
        """CTEs that give the halves (``halves_raw``) each half's t-closeness distance from the
        whole selection (column d, in ``halves``), measured by the criterion's own SQL on the
        halves as classes."""
        assert self.req.t is not None
        mul = lit(2 * max(m, 1))
        dist = TCloseness(self.req.t).per_class("hcounts", whole)
        inner = dist.args.get("with_")
        dist.set("with_", None)
        return [("hcounts", render("mondrian/half_counts", halves=halves, mul=mul)),
                *[(c.alias_or_name, c.this) for c in (inner.expressions if inner else [])],
                ("hdist", dist), ("halves", render("mondrian/halves_d", halves=halves, dist="hdist", mul=mul))]

    @staticmethod
    def _side(m: int, cut: str) -> exp.Expression:
        """0 or 1: the side of a cut (alias ``cut``: qi, s) a cell (``c``) falls on."""
        return exp.Case(this=col("qi", cut), ifs=[exp.If(this=lit(i), true=exp.Case(
            ifs=[exp.If(this=exp.LTE(this=col(f"pos_{i}", "c"), expression=col("s", cut)), true=lit(0))],
            default=lit(1))) for i in range(m)], default=lit(0))

    def _extents(self, cur: str, m: int) -> exp.Select:
        """Every open partition's lowest and highest position along each attribute and its rows
        (the medians' totals): measured once a pass (into a table both choice queries read), not
        once a query; k alone, also its smallest cell (least: see mondrian/close_cells.sql)."""
        least = [exp.alias_(exp.Min(this=col("n")), "least")] if self._sizes_only else []
        return exp.select(col("pid"), *[exp.alias_(f(this=col(f"pos_{i}")), f"{b}_{i}") for i in range(m)
                                        for f, b in ((exp.Min, "lo"), (exp.Max, "hi"))],
                          exp.alias_(exp.Sum(this=col("n")), "total"), *least) \
            .from_(table(cur)).group_by(col("pid"))

    def _widths(self, i: int, extents: str, domains: str) -> exp.Expression:
        """Attribute i's normalized extent in the open partitions it can cut: not in those of
        fewer than 2k rows, whose halves cannot both hold k (no histogram is counted for them,
        along any attribute: on Adult at k=5, a pass's choice 11 -> 8.5 ms at its busiest); k
        alone, nor in those whose cells all hold k rows (closed as their cells:
        mondrian/close_cells.sql)."""
        widths = render("mondrian/widths", qi=lit(i), lo=col(f"lo_{i}"), hi=col(f"hi_{i}"), extents=extents,
                        domain=exp.select(col(f"d_{i}")).from_(table(domains)).subquery())
        assert isinstance(widths, exp.Select)
        widths = widths.where(exp.GTE(this=col("total"), expression=lit(2 * self.req.k)), copy=False)
        return widths.where(exp.LT(this=col("least"), expression=lit(self.req.k)), copy=False) \
            if self._sizes_only else widths

    def _close(self, cur: str, extents: str, choice: str, m: int) -> exp.Expression:
        """The open partitions that pass ``choice`` leaves uncut, into the final ones."""
        positions = [col(f"pos_{i}", "c") for i in range(m)]
        if not self._sizes_only:
            return render("mondrian/close", cur=cur, extents=extents, choice=choice, positions=positions)
        return render("mondrian/close_cells", cur=cur, extents=extents, choice=choice, k=lit(self.req.k),
                      positions=positions)

    def _choice(self, cur: str, extents: str, m: int, domains: str, whole: str | None, choice: str,
                widest: bool) -> exp.Select:
        """One pass's cuts of the open partitions in ``cur``, as one query: the attributes each
        partition may be cut along, widest first; their candidate cuts; the halves where a model
        needs their sensitive values; and the cut each partition takes. Where a model needs the
        halves' values, the pass is two such queries: ``widest``, every partition's widest
        attribute alone; then the other attributes of the partitions it left without a cut
        (none in ``choice`` yet). The cuts are those of one query over all attributes: the
        widest cut whose halves hold. The medians and the halves are both counted on one
        histogram of the open cells (mondrian/histogram.sql). ``extents``: the partitions'
        extents (_extents), measured for this pass."""
        widths = _union([self._widths(i, extents, domains) for i in range(m)])
        rank = exp.Window(this=exp.RowNumber(), partition_by=[col("pid")], order=exp.Order(
            expressions=[exp.Ordered(this=col("width"), desc=True), exp.Ordered(this=col("qi"))]))
        ranked = exp.select(col("pid"), col("qi"), col("width"), col("hi"), col("total"), exp.alias_(rank, "rk")) \
            .from_(widths.subquery("w", copy=False), copy=False)
        pos = exp.Case(this=col("qi", "r"), ifs=[exp.If(this=lit(i), true=col(f"pos_{i}", "c")) for i in range(m)])

        def histogram(which: exp.Expression, values: bool) -> exp.Expression:
            sv = [col("sv", "c")] if values else []
            return render("mondrian/histogram", cur=cur, ranked="ranked", pos=pos, which=which,
                          sv=[exp.alias_(v, "sv") for v in sv], sv_group=sv)

        def candidates(which: exp.Expression) -> exp.Expression:
            """k alone: the candidates over their own histogram of positions."""
            return render("mondrian/candidates", histogram=histogram(which, False).subquery("h"))

        # new partition ids follow the largest in use: all of them open, made by the last pass
        in_use = exp.select(exp.Max(this=col("pid"))).from_(table(extents)).subquery()
        ctes: list[tuple[str, exp.Expression]] = [("ranked", ranked)]
        if self._sizes_only:
            # k alone: a candidate is judged by its halves' sizes, so the widest attribute's
            # cut is tried first, and the others only where it fails (the cuts stay the same)
            k = lit(self.req.k)
            cut_ok = exp.and_(exp.GTE(this=col("lo"), expression=k),
                              exp.GTE(this=exp.Sub(this=col("total"), expression=col("lo")), expression=k.copy()))
            done = exp.select(col("pid")).from_(table("widest")).where(cut_ok)
            rest = candidates(exp.and_(exp.GT(this=col("rk", "r"), expression=lit(1)),
                                       exp.Not(this=exp.In(this=col("pid", "r"), query=done.subquery()))))
            ctes += [("widest", candidates(exp.EQ(this=col("rk", "r"), expression=lit(1)))),
                     ("cand", exp.union(exp.select("*").from_(table("widest")), rest, distinct=False))]
            pick = render("mondrian/choice_sizes", candidates="cand", k=k, parts=in_use)
        else:
            if widest:
                which: exp.Expression = exp.EQ(this=col("rk", "r"), expression=lit(1))
            else:
                which = exp.and_(exp.GT(this=col("rk", "r"), expression=lit(1)), exp.Not(this=exp.In(
                    this=col("pid", "r"), query=exp.select(col("pid")).from_(table(choice)).subquery())))
                # new ids follow those the first query gave
                in_use = exp.Add(this=in_use, expression=exp.select(exp.Count(this=exp.Star())).from_(
                    table(choice)).subquery())
            # the candidates count rows per position, the histogram per position and value
            keys = [col(c) for c in ("pid", "qi", "width", "hi", "total", "pos")]
            per_position = exp.select(*keys, exp.alias_(exp.Sum(this=col("rows_at")), "rows_at")) \
                .from_(table("hist")).group_by(*[k.copy() for k in keys])
            ctes += [("hist", histogram(which, True)),
                     ("cand", render("mondrian/candidates", histogram=per_position.subquery("h")))]
            halves = render("mondrian/halves", histogram="hist", candidates="cand")
            if whole is not None:
                ctes += [("halves_raw", halves), *self._distances("halves_raw", whole, m)]
            else:
                ctes.append(("halves", halves))
            pick = render("mondrian/choice", halves="halves", candidates="cand", half_ok=self._half_ok(),
                          l=lit(self.req.l.value if self.req.l else 1), parts=in_use)
        for name, q in ctes:
            pick = pick.with_(name, as_=q, copy=False)
        return pick

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        # the open cells and the labels read the cells themselves: a copy of their search
        # columns (frequency.codes) wrote every cell once more and was joined back to them
        carried = self._carried(frag, ctx) or ()
        freq = frequency.build(frag, src, ctx, positions=True, keyed=self._keyed(frag, ctx), carried=carried)
        hs = [q.hierarchy for q in frag.qis]
        m = len(hs)
        be = ctx.backend

        positions = [exp.alias_(col(f"o_{i}", "f"), f"pos_{i}") for i in range(m)]
        cur = ctx.create_temp("open_a", render("mondrian/tuples", cells=freq.cells, positions=positions,
                                               grouped=[col(f"o_{i}", "f") for i in range(m)]) if carried else
            render("mondrian/positions", cells=freq.cells, positions=positions or [exp.alias_(lit(1), "pos_none")]))
        whole = ctx.create_temp("whole", render("anonymize/whole", codes=freq.search_columns().subquery(),
                                                cells=freq.cells)) \
            if self.req.t is not None and m else None
        parts, deepest, kept = cur, None, []
        if m:
            # per attribute, the denominator of a partition's normalized width: its positions − 1
            # (at least 1), kept in the database, not read here: a query would wait for every
            # statement before it, and the loop's statements are written meanwhile
            domains = ctx.create_temp("domains", exp.select(*[exp.alias_(exp.Case(
                ifs=[exp.If(this=exp.GT(this=exp.Max(this=col(f"pos_{i}")), expression=lit(2)),
                            true=exp.Sub(this=exp.Max(this=col(f"pos_{i}")), expression=lit(1)))],
                default=lit(1)), f"d_{i}") for i in range(m)]).from_(table(cur)))
            empty = exp.select("*").from_(table(cur)).where(exp.false())
            nxt = ctx.create_temp("open_b", empty)
            # the final partitions' cells, with their rows and positions (where the cells are QI
            # tuples: mondrian/labels.sql, mondrian/members.sql)
            parts = ctx.create_temp("closed", exp.select(col("cell"), col("pid"), col("depth"), col("n"), *[
                col(f"pos_{i}") for i in range(m)]).from_(table(cur)).where(exp.false()))
            # the cuts' columns (mondrian/choice*): partition, attribute, position, new partition
            choice = ctx.create_temp("choice", exp.select(col("pid"), exp.alias_(lit(0), "qi"), exp.alias_(
                col("pos_0"), "s"), exp.alias_(col("pid"), "upper_pid")).from_(table(cur)).where(exp.false()))
            names = ["cell", "n", "p", "sv", "pid", "depth", *[f"pos_{i}" for i in range(m)]]
            closed = ["cell", "pid", "depth", "n", *names[6:]]
            extents = ctx.create_temp("extents", self._extents(cur, m).where(exp.false()))

            def one_pass(src_: str, dst: str) -> list[exp.Expression]:
                """Cut the open partitions of src_ into dst; the others close. Every pass sends
                the same statements over the same tables, so a loop runs them inside the server."""
                # k alone needs one query a pass (see _choice), the other models two
                stages = [True] if self._sizes_only else [True, False]
                choose = []
                for widest in stages:
                    statements, staged = ctx.staged(f"cut_{src_[-1]}{int(widest)}", exp.insert(
                        self._choice(src_, extents, m, domains, whole, choice, widest), table(choice), copy=False))
                    choose += statements
                    kept.extend(staged)
                # the pass's extents anew: one statement where a refill is one (Spark)
                return [be.empty(choice), *be.refill(extents, self._extents(src_, m)), *choose,
                        exp.insert(self._close(src_, extents, choice, m), table(parts),
                                   columns=[exp.to_identifier(c, quoted=True) for c in closed]),
                        exp.insert(render("mondrian/cut", cur=src_, choice=choice, side=self._side(m, "ch"),
                                          positions=[col(f"pos_{i}", "c") for i in range(m)]),
                                   table(dst), columns=[exp.to_identifier(c, quoted=True) for c in names]),
                        be.empty(src_)]

            # A pass cuts every open partition in two non-empty parts or closes it, so the
            # loop ends: two passes per turn, from one table of open cells to the other and back.
            ctx.repeat(lambda: exp.select(exp.Exists(this=exp.select(lit(1)).from_(table(cur)))),
                       [*one_pass(cur, nxt), *one_pass(nxt, cur)], key="mondrian", hash_joins=True)
            # read with the level counts below: the labels and the release are written meanwhile
            deepest = ctx.later(exp.select(exp.Max(this=col("depth"))).from_(table(parts)))
            ctx.drop(cur, nxt, choice, extents, domains, *kept)

        members = parts
        if carried:
            # where the search ran on QI tuples, the release's cells: every cell with its tuple's
            # partition, by their positions (hashed: without statistics, a merge join sorted both)
            same = exp.and_(*[col(f"o_{i}", "f").eq(col(f"pos_{i}", "c")) for i in range(m)]).assert_is(exp.Expression)
            members = ctx.create_temp("members", render("mondrian/members", cur=parts, cells=freq.cells, same=same),
                                      hash_joins=True)
        shared, labels, levels = class_labels(hs, be)
        labelled = ctx.create_temp("labels", render("mondrian/labels", cur=parts, codes=freq.cells,
                                                    cells=freq.cells, shared=shared, labels=labels, levels=levels,
                                                    rows=col("n", "c" if carried else "o")))
        ctx.analyze(members, "cell", "pid")  # joined to the full rows or the cells by the release
        ctx.analyze(labelled, "pid")
        series = self._series(frag, ctx)
        columns = []
        for c in frag.columns:
            i = next((j for j, q in enumerate(frag.qis) if q.column == c), None)
            value = col(c, "s") if series is None else col(f"x_{carried.index(c)}", "f") if c in carried \
                else col("sv", "f")
            columns.append(exp.alias_(value if i is None else col(f"label_{i}", "p"), c, quoted=True))
        released = ctx.create_temp("released", render(
            "mondrian/release", columns=columns, src=src, cur=parts, cells=freq.cells, labels=labelled)
            if series is None else render("mondrian/release_cells", columns=columns, cur=members, cells=freq.cells,
                                          labels=labelled, series=series))
        histogram = level_histogram(ctx.query(level_counts(labelled, m)), [q.column for q in frag.qis]) \
            if m and ctx.live else {q.column: {} for q in frag.qis}
        ctx.drop(*dict.fromkeys([parts, members]), labelled, freq.cells, *([whole] if whole else []))
        # the last pass cuts nothing, and follows the deepest cut
        depth = deepest.rows() if deepest is not None else None
        passes = 0 if depth is None else int((depth[0][0] if depth else 0) or 0) + 1
        return Release(table=released, columns=frag.columns, levels=histogram, counts=freq.counted,
                       notes=[f"{passes} cutting pass(es) over the frequency table"])


def _union(selects: list[exp.Expression]) -> exp.Expression:
    return exp.union(*selects, distinct=False, copy=False) if len(selects) > 1 else selects[0]
