"""Microaggregation: MDAV+ (Stoldt 2019, after Domingo-Ferrer & Torra 2005) and V-MDAV for
l-diversity (Han, Cen & Yu 2008; John's Rostock thesis, Figure 18).

Numeric quasi-identifiers are replaced by their group's mean, so that sums and averages over the
release stay those of the selection. Groups are formed on standardized values (z-scores) around
the centroid of the whole selection, computed once (MDAV+ step 1): the unassigned row farthest
from it and its nearest unassigned rows form a group, until fewer than k rows (V-MDAV: fewer
than l sensitive values) are left; those join the group with the nearest centroid.

MDAV is sequential: each group depends on the ones before it. One group is one UPDATE over the
unassigned rows, and the loop over groups runs inside the server (a PL/pgSQL block, a MariaDB
compound statement), one round trip for all groups. SQLite, which has no server-side loop,
repeats the same two statements from here; it runs in-process, so no network is crossed.
The work per group is a scan of the unassigned rows: O(n²/k) in all, as for MDAV itself.

``refine: kmeans`` (kAnonyMeans after Stoldt 2019) then refines MDAV's groups by k-means rounds
inside the database, each a few set-based statements: a row of a group above k rows moves to
another group (mdav/transfer.sql: the only step that changes the groups' sizes freely), two
neighbouring groups exchange a row (mdav/swap.sql) or trade rows under the size bound
(mdav/refine.sql), and, once a round moved nothing, a group whose rows lie closer to other
centroids is dissolved into them (mdav/dissolve.sql). Each step is taken only where its exact SSE
gain is positive, so the release never loses more than MDAV's.
"""
from __future__ import annotations

from typing import Callable, ClassVar

from sqlglot import exp

from sqlanon.anonymize.base import Release
from sqlanon.context import Build, RunContext
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: the pushed-down row number that links a released row to its group
ROW_ID = "sqlanon_rid"
#: a group's partners in a refinement round: its nearest centroids (more found no better
#: pairs on the CASC data, and the work grows with them)
NEIGHBOURS = 3
#: the least gain (squared standardized distance) a refinement round acts on: below it the
#: difference is the sums' rounding, not a better partition
EPSILON = 1e-9


class MDAV:
    name: ClassVar[str] = "mdav"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity",)
    suppresses: ClassVar[bool] = False
    #: the groups may be refined by k-means rounds (``refine: kmeans``): they need k rows alone
    refines: ClassVar[bool] = True

    def __init__(self, requirement: Requirement):
        self.req = requirement
        unmet = [m for m, v in (("alpha", requirement.alpha), ("t", requirement.t)) if v is not None]
        if requirement.l is not None and not self._diverse():
            unmet.append("l")
        if unmet:
            raise PolicyError(f"method {self.name} does not build groups for {', '.join(unmet)} "
                              f"(vmdav: distinct l-diversity; mondrian: l, t and alpha)")

    @staticmethod
    def _diverse() -> bool:
        return False

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        info = ctx.db.columns(frag.policy.table)
        wrong = [q.column for q in frag.qis if info[q.column].family != "numeric"]
        if wrong:
            raise PolicyError(f"method {self.name} replaces quasi-identifiers by their group's mean and needs "
                              f"numeric columns; {', '.join(wrong)} is not (use mondrian or alpha_k)",
                              table=frag.policy.table, column=wrong[0])
        return [exp.alias_(exp.Window(this=exp.RowNumber()), ROW_ID)]

    def _sensitive_code(self, frag: Fragment, ctx: RunContext) -> exp.Expression:
        return lit(0)

    def _take(self, work: str, dist: exp.Expression) -> exp.Expression:
        return render("mdav/take", work=work, dist=dist, k=lit(self.req.k))

    def _more(self, work: str) -> exp.Expression:
        """Whether another group can be formed from the unassigned rows."""
        return (exp.select(exp.GTE(this=exp.Count(this=exp.Star()), expression=lit(self.req.k)))
                .from_(table(work)).where(exp.EQ(this=col("g"), expression=lit(0))))

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        m = len(frag.qis)
        if not m:
            raise PolicyError(f"method {self.name} needs at least one quasi-identifier in the release",
                              table=frag.policy.table)

        def x(i: int) -> exp.Expression:
            return exp.cast(col(frag.qis[i].column, "s"), "DOUBLE")

        means = [exp.alias_(exp.Avg(this=x(i)), f"m_{i}") for i in range(m)]
        stats = []
        for i in range(m):
            mean = col(f"m_{i}", "m")
            dev = exp.Paren(this=exp.Sub(this=x(i), expression=mean.copy()))
            stats += [exp.alias_(exp.Max(this=mean), f"m_{i}"),
                      exp.alias_(exp.Sqrt(this=exp.Avg(this=exp.Mul(this=dev, expression=dev.copy()))), f"s_{i}")]
        st = ctx.create_temp("mstats", render("mdav/stats", stats=stats, means=means, src=src))
        zs = [exp.alias_(exp.func("COALESCE", exp.Div(
            this=exp.Paren(this=exp.Sub(this=x(i), expression=col(f"m_{i}", "st"))),
            expression=exp.Nullif(this=col(f"s_{i}", "st"), expression=lit(0))), lit(0)), f"z_{i}")
            for i in range(m)]
        d0 = _sum([exp.Mul(this=col(f"z_{i}"), expression=col(f"z_{i}")) for i in range(m)])
        work = ctx.create_temp("mwork", render(
            "mdav/work", z=[col(f"z_{i}") for i in range(m)], d0=d0, sv=self._sensitive_code(frag, ctx),
            zs=zs, src=src, stats=st))
        ctx.repeat(lambda: self._more(work), [lambda: self._take(work, _dist("w", "x", m))], key="mdav")
        centroids = ctx.create_temp("mcent", render(
            "mdav/centroids", work=work,
            z=[exp.alias_(exp.Avg(this=col(f"z_{i}")), f"z_{i}") for i in range(m)]))
        ctx.run(render("mdav/rest", work=work, centroids=centroids, dist=_dist("w", "c", m)))
        refined = self._refine(work, m, ctx) if self.req.refine and self.refines else []
        # with no group at all (fewer than k rows), the selection is one group: verification judges it
        ctx.run(exp.update(table(work), {"g": lit(-1)}, where=exp.EQ(this=col("g"), expression=lit(0))))
        aggregated = {q.column for q in frag.qis}
        columns = [exp.alias_(
            exp.Window(this=exp.Avg(this=exp.cast(col(c, "s"), "DOUBLE")), partition_by=[col("g", "w")])
            if c in aggregated else col(c, "s"), c, quoted=True) for c in frag.columns]
        released = ctx.create_temp("released", render("mdav/release", columns=columns, src=src, work=work))
        groups = int(ctx.scalar(exp.select(exp.Count(this=exp.Distinct(expressions=[col("g")])))
                                .from_(table(work))) or 0) if ctx.live else 0
        ctx.drop(st, work, centroids)
        return Release(table=released, columns=frag.columns, aggregated=tuple(q.column for q in frag.qis),
                       notes=[f"{self.name}: {groups} group(s); numeric quasi-identifiers released as group means",
                              *refined])

    def _refine(self, work: str, m: int, ctx: RunContext) -> list[str]:
        """kAnonyMeans (Stoldt 2019) as a refinement of MDAV's groups: rounds of transfers,
        exchanges and k-means steps over pairs of neighbouring groups, each group keeping k
        rows, with a dissolution step after a round that moved nothing, until two rounds in a
        row move nothing or ``refine`` rounds have run. Every step lowers the SSE (each move's
        gain is exact, or reckoned for the old centroids, which new ones only improve on), and
        no two moves of a step touch one group, so the gains add up and the release never
        loses more than MDAV's."""
        z = [exp.alias_(exp.Avg(this=col(f"z_{i}")), f"z_{i}") for i in range(m)] + \
            [exp.alias_(exp.Count(this=exp.Star()), "n")]
        cent = ctx.create_temp("kcent", render("mdav/centroids", work=work, z=z))
        # |c_S - c_b|²: the rows a group sends to group b, their centroid's from b's
        shift = _sum([exp.Pow(this=exp.Sub(this=exp.Avg(this=col(f"z_{i}", "w")),
                                           expression=exp.Max(this=col(f"z_{i}", "c"))), expression=lit(2))
                      for i in range(m)])

        def moves_of() -> exp.Expression:
            return render("mdav/refine", cent=cent, work=work, close=close, da=_dist("w", "ca", m),
                          db=_dist("w", "cb", m), k=lit(self.req.k), eps=exp.Literal.number(repr(EPSILON)))

        def transfers() -> exp.Expression:
            return render("mdav/transfer", work=work, cent=cent, own=exp.Paren(this=_dist("w", "o", m)),
                          dist=exp.Paren(this=_dist("w", "c", m)), k=lit(self.req.k), eps=exp.Literal.number(repr(EPSILON)))

        def swaps() -> exp.Expression:
            offsets = [exp.alias_(exp.Sub(this=col(f"z_{i}", "w"), expression=col(f"z_{i}", c)), f"{c}_{i}")
                       for c in ("ca", "cb") for i in range(m)]
            offsets += [exp.alias_(_dist("w", "ca", m), "da"), exp.alias_(_dist("w", "cb", m), "db"),
                        exp.alias_(col("n", "ca"), "na"), exp.alias_(col("n", "cb"), "nb")]
            return render("mdav/swap", close=close, cent=cent, work=work, offsets=offsets, gain=_swap_gain(m),
                          eps=exp.Literal.number(repr(EPSILON)))

        def closest() -> exp.Expression:
            return render("mdav/close", cent=cent, cdist=_dist("a", "b", m), neighbours=lit(NEIGHBOURS))

        def nearest(gate: exp.Expression) -> exp.Expression:
            return render("mdav/nearest", work=work, cent=cent, dist=_dist("w", "c", m), own=_dist("w", "o", m),
                          gate=gate)

        close = ctx.create_temp("kclose", closest())
        moves = ctx.create_temp("kmoves", moves_of())
        # a step's candidate moves, kept: MariaDB would compute a CTE again for each reference
        cand = ctx.create_temp("kcand", swaps())

        near = ctx.create_temp("knear", nearest(exp.false()))
        moved = exp.select(exp.Count(this=exp.Star())).from_(table(moves)).subquery()
        # quiet: how many rounds in a row moved nothing. A round after a quiet one also tries to
        # dissolve groups (the costliest step); a second quiet round ends the refinement
        state = ctx.create_temp("kstate", exp.select(
            exp.alias_(lit(0), "rounds"), exp.alias_(lit(0), "moved"), exp.alias_(lit(0), "total"),
            exp.alias_(lit(0), "quiet")))
        more = exp.and_(exp.LT(this=col("quiet"), expression=lit(2)),
                        exp.LT(this=col("rounds"), expression=lit(self.req.refine)))
        dissolving = exp.EQ(this=exp.select(col("quiet")).from_(table(state)).subquery(), expression=lit(1))
        be = ctx.backend

        def count(into: str) -> exp.Expression:
            return exp.update(table(state), {into: exp.Add(this=col(into if into == "total" else "moved"),
                                                           expression=moved.copy())})

        def apply(neighbours: bool = False) -> list[Build]:
            """Move the rows, recompute the centroids and, with ``neighbours``, each group's
            nearest ones: those only choose the pairs an exchange may join, whose gain is
            reckoned on the current centroids, so once a round is enough."""
            return [lambda: render("mdav/move", work=work, moves=moves), lambda: count("total"), lambda: be.empty(cent),
                    lambda: exp.insert(render("mdav/centroids", work=work, z=z), table(cent)), lambda: be.empty(moves),
                    *([lambda: be.empty(close), lambda: exp.insert(closest(), table(close))] if neighbours else [])]

        def pick(candidates: Callable[[], exp.Expression]) -> list[Build]:
            return [lambda: be.empty(cand), lambda: exp.insert(candidates(), table(cand)),
                    lambda: exp.insert(render("mdav/pick", cand=cand), table(moves)), lambda: count("moved")]

        ctx.repeat(lambda: exp.select(more).from_(table(state)), [
            *apply(),
            lambda: exp.update(table(state), {"rounds": exp.Add(this=col("rounds"), expression=lit(1)),
                                              "moved": lit(0)}),
            lambda: be.empty(near),
            lambda: exp.insert(nearest(dissolving), table(near)),
            lambda: exp.insert(render("mdav/dissolve", work=work, near=near, cent=cent, shift=shift, eps=exp.Literal.number(repr(EPSILON))),
                               table(moves)),
            lambda: count("moved"),
            *apply(),
            *pick(transfers),
            *apply(neighbours=True),
            *pick(swaps),
            *apply(),
            lambda: exp.insert(moves_of(), table(moves)),
            lambda: count("moved"),
            lambda: exp.update(table(state), {"quiet": exp.Case(ifs=[exp.If(
                this=exp.EQ(this=col("moved"), expression=lit(0)),
                true=exp.Add(this=col("quiet"), expression=lit(1)))], default=lit(0))})], key="mdav_refine")
        row = ctx.query(exp.select(col("rounds"), col("total")).from_(table(state))) if ctx.live else []
        ctx.drop(cent, close, moves, cand, near, state)
        rounds, total = (int(row[0][0] or 0), int(row[0][1] or 0)) if row else (0, 0)
        return [f"kAnonyMeans refinement: {rounds} round(s) of k-means steps over neighbouring groups moved "
                f"{total} row(s) (at most {self.req.refine} rounds)"]


class VMDAV(MDAV):
    """V-MDAV: each group takes, nearest first, rows of sensitive values it lacks until it holds
    l distinct values, then the nearest rows until it holds k. A leftover row joins the nearest
    group, which keeps it l-diverse (adding rows never removes a value). The extension step of
    the original (growing a group towards 2k-1 rows) is left out."""

    name: ClassVar[str] = "vmdav"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity", "l-diversity")
    suppresses: ClassVar[bool] = False
    #: moving rows between groups could take a sensitive value out of a group that needs it
    refines: ClassVar[bool] = False

    def __init__(self, requirement: Requirement):
        if requirement.l is None:
            raise PolicyError("method vmdav needs privacy.l (for k alone, use mdav)")
        super().__init__(requirement)

    def _diverse(self) -> bool:
        return self.req.l is not None and self.req.l.variant == "distinct"

    def _sensitive_code(self, frag: Fragment, ctx: RunContext) -> exp.Expression:
        assert self.req.l is not None
        v = col(self.req.l.attribute, "s")
        if self.req.l.attribute in frag.text_columns:
            v = ctx.backend.binary_text(v)
        return exp.Window(this=exp.DenseRank(), order=exp.Order(expressions=[exp.Ordered(this=v)]))

    def _take(self, work: str, dist: exp.Expression) -> exp.Expression:
        assert self.req.l is not None
        return render("mdav/take_diverse", work=work, dist=dist, l=lit(self.req.l.value),
                      size=lit(max(self.req.k, self.req.l.value)))

    def _more(self, work: str) -> exp.Expression:
        assert self.req.l is not None
        enough = exp.and_(
            exp.GTE(this=exp.Count(this=exp.Star()), expression=lit(self.req.k)),
            exp.GTE(this=exp.Count(this=exp.Distinct(expressions=[col("sv")])), expression=lit(self.req.l.value)))
        return exp.select(enough).from_(table(work)).where(exp.EQ(this=col("g"), expression=lit(0)))


def _dist(a: str, b: str, m: int) -> exp.Expression:
    """Squared Euclidean distance between rows ``a`` and ``b`` in standardized coordinates."""
    terms = []
    for i in range(m):
        d = exp.Paren(this=exp.Sub(this=col(f"z_{i}", a), expression=col(f"z_{i}", b)))
        terms.append(exp.Mul(this=d, expression=d.copy()))
    return _sum(terms)


def _swap_gain(m: int) -> exp.Expression:
    """The SSE an exchange of row x (of group a) with row y (of group b) saves (mdav/swap.sql):
    for each group, ((n + 1) · d(out, c) − (n − 1) · d(in, c) − 2 (out − c)·(in − c)) / n, the
    exact change with both centroids moving, from each row's offsets (x.ca_i = x_i − c_a_i)."""
    def saved(c: str, out: str, into: str) -> exp.Expression:
        n = exp.cast(col(f"n{c[-1]}", "x"), "DOUBLE")
        dot = _sum([exp.Mul(this=col(f"{c}_{i}", out), expression=col(f"{c}_{i}", into)) for i in range(m)])
        d = f"d{c[-1]}"
        num = exp.Sub(this=exp.Sub(
            this=exp.Mul(this=exp.Paren(this=exp.Add(this=n.copy(), expression=lit(1))), expression=col(d, out)),
            expression=exp.Mul(this=exp.Paren(this=exp.Sub(this=n.copy(), expression=lit(1))), expression=col(d, into))),
            expression=exp.Mul(this=lit(2), expression=exp.Paren(this=dot)))
        return exp.Div(this=exp.Paren(this=num), expression=n)

    return exp.Add(this=saved("ca", "x", "y"), expression=saved("cb", "y", "x"))


def _sum(terms: list[exp.Expression]) -> exp.Expression:
    out = terms[0]
    for t in terms[1:]:
        out = exp.Add(this=out, expression=t)
    return out
