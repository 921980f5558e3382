"""Slicing (Li, Li, Zhang, Molloy, TKDE 2012; Grunert & Heuer's SQL, John's thesis, Figures 3–4).

The selection is split vertically into column groups and horizontally into buckets; inside each
bucket every column group but one is permuted on its own (the one left keeps its rows' order:
independent permutations of all the others already make every link between groups uniformly
random) and the groups are joined again on (bucket, position) — on PostgreSQL, without a join
and without storing the rows, by unnesting each group's arrays side by side. Values are
released exactly — only the links between column groups are broken — except that a group whose
combinations of quasi-identifier values would be shared by fewer than k rows is generalized
(greedily, one attribute one level at a time, until they are not).

- Column groups: the policy's, or quasi-identifiers whose association (Cramér's V, measured in
  SQL on the selection's frequency table) reaches a threshold, merged greedily, strongest pair
  first, into groups of at most half of them; each sensitive and each insensitive column is a
  group of its own.
- Buckets: the distinct values of a policy-named attribute, or runs of one order of the
  quasi-identifiers (anonymize/order.py). With l, runs are as short as keeps every link below
  1/l (ℓ-diverse slicing): inside a bucket, rows that share the sensitive group's
  quasi-identifier values hold no sensitive value more often than 1/l of them; the number of
  buckets is found by bisection, one statement per candidate, which counts on the lines of rows
  alike along the order (slicing/runs.sql), not on the rows. Without l, buckets hold k rows.
"""
from __future__ import annotations

import math
from typing import ClassVar, cast

from sqlglot import exp

from sqlanon.anonymize.base import Release
from sqlanon.anonymize.order import join_codes, qi_order
from sqlanon.backends.base import Backend
from sqlanon.context import RunContext
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, ident, lit, render, table

#: the search for the number of buckets stops when its bounds are this close
SEARCH_RATIO = 1.05
#: the released table's bucket column
BUCKET = "_sa_bucket"
#: a fixed seed orders each group by (rank · A_group + seed) mod P: a permutation, reproducible
SHUFFLE_A, SHUFFLE_P = 2654435761, 4294967291


def _as_stored(frag: Fragment, c: str, be: Backend) -> exp.Expression:
    """Column ``c`` of ``src AS s`` as slicing compares it: text byte for byte."""
    return be.binary_text(col(c, "s")) if c in frag.text_columns else col(c, "s")


def _sized(text: exp.Expression, c: str, widths: dict[str, int], be: Backend) -> exp.Expression:
    """Column ``c``'s released text, compared byte for byte, declared as wide as its widest
    value where that was measured (Slicing._widths)."""
    return be.sized_text(text, widths[c]) if c in widths else be.binary_text(text)


def _multiplier(seed: int, group: int) -> int:
    """A seeded group's multiplier modulo SHUFFLE_P: a power of SHUFFLE_A, never 0 (P is prime),
    so that rank · it is a permutation; two groups' differ by a large factor, so that their
    orders are unrelated (multipliers close together order small ranks alike)."""
    return pow(SHUFFLE_A, 1 + group + seed % 1000003, SHUFFLE_P)


def _widest(groups: list[tuple[str, ...]]) -> int:
    """The column group left unshuffled: the one with most columns (the first of those)."""
    return max(range(len(groups)), key=lambda i: (len(groups[i]), -i))


def _bucket_of(place: exp.Expression, buckets: int, n: int) -> exp.Expression:
    """The bucket of a place along the order (from 0): ``buckets`` runs of n/buckets places.
    In doubles, exact while place · buckets < 2^52 (PostgreSQL's integer DIV is numeric: 0.7 s
    more per 1 M rows)."""
    return exp.cast(exp.Floor(this=exp.Div(this=exp.Mul(this=exp.cast(place, "DOUBLE"), expression=lit(buckets)),
                                           expression=lit(max(n, 1)))), "BIGINT")


def _bucket_start(bucket: exp.Expression, buckets: int, n: int) -> exp.Expression:
    """The first place of a bucket: ceil(bucket · n / buckets), the inverse of ``_bucket_of``."""
    return exp.cast(exp.Floor(this=exp.Div(this=exp.Paren(this=exp.Add(
        this=exp.Mul(this=exp.cast(bucket, "DOUBLE"), expression=lit(max(n, 1))), expression=lit(buckets - 1))),
        expression=lit(buckets))), "BIGINT")


class Slicing:
    name: ClassVar[str] = "slicing"
    guarantees: ClassVar[tuple[str, ...]] = ("k-anonymity of every column group", "l-diverse slicing")
    suppresses: ClassVar[bool] = False

    def __init__(self, requirement: Requirement):
        unmet = [m for m, v in (("alpha", requirement.alpha), ("t", requirement.t)) if v is not None]
        if requirement.l is not None and requirement.l.variant == "recursive":
            unmet.append("recursive (c,l)-diversity")
        if unmet:
            raise PolicyError(f"method slicing does not build buckets for {', '.join(unmet)} (it bounds the "
                              f"probability of a link by 1/l: use mondrian or sabre)")
        self.req = requirement

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        return []

    # -- column groups ----------------------------------------------------------------------
    def _groups(self, frag: Fragment, freq: str, attributes: list[str], ctx: RunContext) -> list[tuple[str, ...]]:
        insensitive = [(c,) for c in frag.columns if c not in attributes]
        fixed = self.req.slicing.columns
        if fixed is not None:
            groups = [tuple(c for c in g if c in attributes) for g in fixed]
            return [g for g in groups if g] + insensitive
        # A sensitive attribute forms a group of its own: a link to it is then as likely as its
        # value's share of the bucket. (Joined to quasi-identifiers it would keep their
        # association, but every combination of them would need l values in each bucket.)
        sensitive = [(c,) for c in attributes if frag.policy.qi(c) is None]
        attributes = [c for c in attributes if frag.policy.qi(c) is not None]
        pairs = []
        for i in range(len(attributes)):
            for j in range(i + 1, len(attributes)):
                row = ctx.query(render("slicing/association", a=col(f"a_{i}"), b=col(f"a_{j}"), freq=freq))
                if row and row[0][0] is not None:
                    s, da, db = float(row[0][0]), int(row[0][1]), int(row[0][2])
                    v2 = (s - 1) / (min(da, db) - 1) if min(da, db) > 1 else 0.0
                    pairs.append((v2, i, j))
        # union of the strongest pairs, no group above half the attributes (slicing needs two)
        cap = max(1, math.ceil(len(attributes) / 2))
        group = list(range(len(attributes)))
        for v2, i, j in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
            if v2 < self.req.slicing.threshold ** 2:
                break
            gi, gj = group[i], group[j]
            if gi != gj and group.count(gi) + group.count(gj) <= cap:
                group = [gi if g == gj else g for g in group]
        out: dict[int, list[str]] = {}
        for a, g in zip(attributes, group):
            out.setdefault(g, []).append(a)
        return [tuple(g) for g in out.values()] + sensitive + insensitive

    # -- k for every column group -------------------------------------------------------------
    def _levels(self, frag: Fragment, freq: str, attributes: list[str], groups: list[tuple[str, ...]],
                ctx: RunContext) -> dict[str, int]:
        """The generalization level of each quasi-identifier: per group, from the raw values, one
        attribute at a time is raised one level — the one whose raise leaves the largest
        smallest combination — until every combination of the group's values has k rows."""
        be = ctx.backend
        qis = {q.column: q for q in frag.qis}
        levels: dict[str, int] = {}

        def k_min(members: list[str], at: dict[str, int]) -> int | None:
            labels = [be.binary_text(qis[c].hierarchy.expr(col(f"a_{attributes.index(c)}"), at[c])) for c in members]
            found = ctx.scalar(render("slicing/group_k", labels=[exp.alias_(e, f"g_{i}") for i, e in enumerate(labels)],
                                      grouped=labels, freq=freq))
            return None if found is None else int(found)

        for g in groups:
            members = [c for c in g if c in qis]
            at = {c: 0 for c in members}
            smallest = k_min(members, at) if members and ctx.live else None
            while smallest is not None and smallest < self.req.k:
                tries = []
                for c in members:
                    if at[c] < qis[c].hierarchy.height:
                        raised = {**at, c: at[c] + 1}
                        tries.append((k_min(members, raised) or 0, -members.index(c), raised))
                if not tries:
                    break
                smallest, _, at = max(tries, key=lambda t: (t[0], t[1]))
            levels.update(at)
        return levels

    # -- buckets ----------------------------------------------------------------------------
    def _sensitive_qis(self, frag: Fragment, groups: list[tuple[str, ...]]) -> list[str]:
        """The quasi-identifiers in the l attribute's column group: what a link to it goes through."""
        attr = self.req.l.attribute
        return [c for g in groups if attr in g for c in g if c != attr and frag.policy.qi(c) is not None]

    def _tail(self, frag: Fragment, groups: list[tuple[str, ...]], levels: dict[str, int], widths: dict[str, int],
              ctx: RunContext) -> list[exp.Expression]:
        """The last keys of the rows' order (over ``s``) when buckets are searched: the sensitive
        group's quasi-identifiers as released, then the sensitive value, so that rows alike for
        a probe are neighbours (one run of slicing/runs.sql); text as wide as ``widths`` says
        (a sort key holds it at its declared width)."""
        be = ctx.backend
        attr = self.req.l.attribute
        labels = [_sized(frag.policy.qi(c).hierarchy.expr(col(c, "s"), levels.get(c, 0)), c, widths, be)
                  for c in self._sensitive_qis(frag, groups)]
        return labels + [_sized(col(attr, "s"), attr, widths, be) if attr in widths else _as_stored(frag, attr, be)]

    def _runs(self, frag: Fragment, freq: str, attributes: list[str], key: list[exp.Expression],
              tail: list[exp.Expression], codes: dict[int, str], ctx: RunContext) -> str:
        """The order's runs (slicing/runs.sql): what probes read instead of the rows (Adult at
        1 M rows: 50 k lines)."""
        attr = self.req.l.attribute
        named = [exp.alias_(col(f"raw_{i}"), q.column, quoted=True) for i, q in enumerate(frag.qis)] + \
                [exp.alias_(col(f"a_{attributes.index(attr)}"), attr, quoted=True)]
        return ctx.create_temp("sruns", join_codes(render(
            "slicing/runs", gq=[exp.alias_(e, f"q_{i}") for i, e in enumerate(tail[:-1])], sv=tail[-1],
            order=key + tail, grouped=key + tail, named=named, freq=freq), frag, codes))

    def _buckets(self, frag: Fragment, src: str, runs: str | None, n: int, groups: list[tuple[str, ...]],
                 ctx: RunContext) -> tuple[exp.Expression, int, int]:
        """The bucket of a row (of slicing/rows.sql), the number of buckets, and the probes it took."""
        by = self.req.slicing.buckets_by
        if by in frag.columns:
            values = exp.select(_as_stored(frag, by, ctx.backend)).distinct().from_(table(src, "s")).subquery("d")
            count = int(ctx.scalar(exp.select(exp.Count(this=exp.Star())).from_(values)) or 0) if ctx.live else 1
            return col("_sa_by"), count, 0

        hi = max(n // self.req.k, 1)
        if runs is None:
            return _bucket_of(col("_sa_rank"), hi, n), hi, 0
        labels = [f"q_{i}" for i in range(len(self._sensitive_qis(frag, groups)))]

        def passes(b: int) -> bool:
            f, t = col("f", "r"), col("t", "r")
            # fenced: f and t once per line, not again wherever the pieces read them
            lines = ctx.backend.fenced(render(
                "slicing/probe_lines", runs=runs, first=_bucket_of(col("_sa_start"), b, n),
                last=_bucket_of(exp.Sub(this=exp.Add(this=col("_sa_start"), expression=col("_sa_cnt")),
                                        expression=lit(1)), b, n)))
            bad = ctx.scalar(render(
                "slicing/probe", lines=lines.subquery(), l=lit(self.req.l.value), gq_names=[col(c) for c in labels],
                gq_runs=[exp.alias_(col(c, "r"), c) for c in labels],
                first_next=_bucket_start(exp.Add(this=f, expression=lit(1)), b, n),
                second_next=_bucket_start(exp.Add(this=f, expression=lit(2)), b, n),
                last_start=_bucket_start(t, b, n)))
            return not bad

        lo, probes = 1, 0
        while hi > lo * SEARCH_RATIO and ctx.live:
            mid = min(max(round(math.sqrt(lo * hi)), lo + 1), hi)
            probes += 1
            if passes(mid):
                lo = mid
            else:
                hi = mid - 1
        if not ctx.live:  # a static explain shows one probe
            passes(hi)
        return _bucket_of(col("_sa_rank"), lo, n), lo, probes

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        be = ctx.backend
        sensitive = {s.column for s in frag.policy.sensitive}
        attributes = [q.column for q in frag.qis] + [c for c in frag.columns if c in sensitive]
        stored = [_as_stored(frag, c, be) for c in attributes]
        raw: list[exp.Expression] = [col(q.column, "s") for q in frag.qis]
        grouped = [e for i, e in enumerate(stored + raw) if e not in stored[:i]]
        picked = stored
        line_key: exp.Expression | None = None  # where the rows read their place from the lines (_lines)
        if be.fewer_group_keys and stored and not be.hashed_cell_key:
            # one injective key of the stored values fixes every value, read as the key fixes it
            # (Backend.fixed_value; MariaDB at 1 M rows: 2.0 -> 1.6 s of server CPU with MIN); of
            # the copy's columns, whose text the pushdown holds byte for byte already (binary_text
            # leaves it as it is)
            grouped = [be.cell_key([col(c, "s") for c in attributes])]
            picked, raw = [be.fixed_value(e.copy()) for e in stored], [be.fixed_value(e) for e in raw]
            line_key = grouped[0] if be.line_join and frag.qis else None
        elif be.fewer_group_keys:  # a stored text value (byte for byte) fixes the value it was converted from
            raw = [e if e in stored else exp.Min(this=e) for e in raw]
            grouped = stored
        freq = ctx.create_temp("sfreq", render(
            "slicing/freq", attributes=[exp.alias_(e, f"a_{i}") for i, e in enumerate(picked)] or [lit(0)],
            raw=[exp.alias_(e, f"raw_{i}") for i, e in enumerate(raw)]
            + ([exp.alias_(line_key.copy(), "_sa_key")] if line_key is not None else []), grouped=grouped, src=src))
        # the quasi-identifiers' combinations without the sensitive values (Adult at 1 M rows:
        # 24 k lines instead of 50 k): what the pairs' association and the groups' k read
        a_qis = [col(f"a_{i}") for i in range(len(frag.qis))]
        combos = ctx.create_temp("sqis", exp.select(*a_qis, exp.alias_(exp.Sum(this=col("n")), "n"))
                                 .from_(table(freq)).group_by(*a_qis)) if a_qis else freq
        groups = self._groups(frag, combos, attributes, ctx)
        levels = self._levels(frag, combos, attributes, groups, ctx)
        if combos != freq:
            ctx.drop(combos)
        key, codes, n = qi_order(frag, freq, ctx)
        searched = self.req.l is not None and self.req.slicing.buckets_by not in frag.columns
        widths = self._widths(frag, freq, attributes, levels, ctx) if be.text_at_declared_width else {}
        tail = self._tail(frag, groups, levels, widths, ctx) if searched else []
        runs = self._runs(frag, freq, attributes, key, tail, codes, ctx) if searched else None

        columns = {}
        for c in frag.columns:
            q = frag.policy.qi(c)
            value = _sized(q.hierarchy.expr(col(c, "s"), levels.get(c, 0)), c, widths, be) if q in frag.qis \
                else _sized(col(c, "s"), c, widths, be) if c in widths else col(c, "s")
            columns[c] = exp.alias_(value, c, quoted=True)
        by = self.req.slicing.buckets_by
        by_rank: exp.Expression = lit(0)
        if by in frag.columns:
            by_rank = exp.Sub(this=exp.Window(this=exp.DenseRank(), order=exp.Order(
                expressions=[exp.Ordered(this=_as_stored(frag, by, be))])), expression=lit(1))
        lines = None
        if line_key is None:
            rows = join_codes(render("slicing/rows", columns=list(columns.values()), key=key + tail or [lit(1)],
                                     by=by_rank, src=src), frag, codes)
        else:  # joined on the very key freq was grouped on
            lines = self._lines(frag, freq, attributes, key + tail, codes, ctx)
            rows = cast(exp.Select, render("slicing/rows", columns=list(columns.values()), key=[col("_sa_line", "l")],
                                           by=by_rank, src=src)).join(table(lines, "l"), join_type=be.line_join,
                                                                      on=exp.EQ(this=col("_sa_key", "l"),
                                                                                expression=line_key.copy()))
        bucket, buckets, probes = self._buckets(frag, src, runs, n, groups, ctx)
        if runs is not None:
            ctx.drop(runs)

        seed = self.req.slicing.seed
        # each group its own multiplier: offsets alone would rotate one order, which pairs groups
        # in line again; parenthesized, as sqlglot writes Mod(Add(…)) `a * A + c % P`, which the
        # databases read as a * A + (c % P), the rank's own order
        keys = [exp.Rand() if seed is None else exp.Mod(
            this=exp.Paren(this=exp.Add(this=exp.Mul(this=col("_sa_rank"), expression=lit(_multiplier(seed, i))),
                                        expression=lit(seed))), expression=lit(SHUFFLE_P))
                for i in range(len(groups))]
        if be.zips_arrays:
            released = self._zipped(frag, src, rows, bucket, groups, columns, keys, ctx)
        else:
            released = self._joined(frag, rows, bucket, buckets, n, groups, keys, ctx)
        ctx.drop(*codes.values(), *([lines] if lines else []))
        histogram = {q.column: {levels.get(q.column, 0): n} for q in frag.qis}
        shown = " | ".join(", ".join(g) for g in groups)
        return Release(table=released, columns=frag.columns, levels=histogram, slices=tuple(groups), bucket=BUCKET,
                       counts=freq, notes=[f"slicing: column groups [{shown}]; {buckets} bucket(s)"
                                           + (f", found in {probes} probe(s)" if probes else "")])

    def _lines(self, frag: Fragment, freq: str, attributes: list[str], order: list[exp.Expression],
               codes: dict[int, str], ctx: RunContext) -> str:
        """The frequency table's lines with their place along the rows' order (``_sa_line``; ties
        broken by the cell key, ``_sa_key``), for the rows to read with one join each
        (Backend.line_join) instead of looking up every quasi-identifier's code: the order's keys
        (over ``s``) read the lines' stored values under the columns' own names."""
        named = [exp.alias_(col(f"raw_{i}"), q.column, quoted=True) for i, q in enumerate(frag.qis)] + \
                [exp.alias_(col(f"a_{i}"), c, quoted=True) for i, c in enumerate(attributes) if i >= len(frag.qis)]
        line = exp.Window(this=exp.RowNumber(), order=exp.Order(
            expressions=[exp.Ordered(this=e.copy()) for e in [*order, col("_sa_key", "s")]]))
        values = exp.select(*named, col("_sa_key")).from_(table(freq)).subquery("s")
        return ctx.create_temp("slines", join_codes(exp.select(
            col("_sa_key", "s"), exp.alias_(exp.Sub(this=line, expression=lit(1)), "_sa_line")).from_(values), frag, codes))

    def _widths(self, frag: Fragment, freq: str, attributes: list[str], levels: dict[str, int],
                ctx: RunContext) -> dict[str, int]:
        """The widest released value, in characters, of each text column the frequency table
        holds (Backend.text_at_declared_width): the quasi-identifiers' labels at their levels
        and the sensitive values, measured on the table that holds every distinct stored value
        of the selection, so that no value is cut. Other columns keep their declared width."""
        be = ctx.backend
        measured = {q.column: be.binary_text(q.hierarchy.expr(col(f"raw_{i}"), levels.get(q.column, 0)))
                    for i, q in enumerate(frag.qis)}
        measured.update({c: col(f"a_{attributes.index(c)}") for c in attributes[len(frag.qis):]
                         if c in frag.text_columns})
        if not measured or not ctx.live:
            return {}
        row = ctx.query(exp.select(*[exp.Max(this=exp.Length(this=e)) for e in measured.values()]).from_(table(freq)))
        return {c: int(w) for c, w in zip(measured, row[0] if row else []) if w is not None}

    def _joined(self, frag: Fragment, rows: exp.Select, bucket: exp.Expression, buckets: int, n: int,
                groups: list[tuple[str, ...]], keys: list[exp.Expression], ctx: RunContext) -> str:
        """The release as Grunert & Heuer's SQL builds it: each column group numbered in its own
        random order inside each bucket (slicing/permuted.sql), the groups joined again on their
        place. The widest group keeps the order of the rows (``srows``): the other groups'
        shuffles make the links random, and it spares a sort.

        A place is one integer, unique over all buckets: the bucket's origin plus the number
        inside it. Where buckets are runs of the order, the origin is the place before the
        bucket's first, so that the kept group's place is its rank, and ``srows`` is the rows
        themselves (MariaDB at 1 M rows: a pass less, 0.5 s, and a join on one integer
        instead of two, 0.5 s)."""
        kept = _widest(groups)
        if self.req.slicing.buckets_by in frag.columns:
            def origin(b: exp.Expression) -> exp.Expression:
                return exp.Mul(this=b, expression=lit(n + 1))  # no bucket holds more than n rows

            place = exp.Add(this=origin(col("_sa_by")), expression=exp.Window(
                this=exp.RowNumber(), partition_by=[col("_sa_by")],
                order=exp.Order(expressions=[exp.Ordered(this=col("_sa_rank"))])))
            numbered = ctx.create_temp("srows", exp.select(exp.Star(), exp.alias_(place, "_sa_pos"))
                                       .from_(rows.subquery("r")))
            kept_place = "_sa_pos"
        else:
            def origin(b: exp.Expression) -> exp.Expression:
                return exp.Sub(this=_bucket_start(b, buckets, n), expression=lit(1))

            numbered, kept_place = ctx.create_temp("srows", rows), "_sa_rank"
        owner = {c: i for i, g in enumerate(groups) for c in g}
        parts = {i: ctx.create_temp(f"sperm_{i}", render(
            "slicing/permuted", origin=origin(bucket.copy()), bucket=bucket.copy(), shuffle=key,
            columns=[col(c) for c in g], rows=numbered))
            for i, (g, key) in enumerate(zip(groups, keys)) if i != kept}
        parts[kept] = numbered
        own_bucket = bucket.transform(lambda e: col(e.name, f"p{kept}") if isinstance(e, exp.Column) else e)
        release = exp.select(*[exp.alias_(col(c, f"p{owner[c]}"), c, quoted=True) for c in frag.columns],
                             exp.alias_(own_bucket, BUCKET)).from_(table(numbered, f"p{kept}"))
        for i, part in parts.items():
            if i != kept:
                release = release.join(table(part, f"p{i}"), on=exp.EQ(
                    this=col("_sa_pos", f"p{i}"), expression=col(kept_place, f"p{kept}")))
        released = ctx.create_temp("released", release)
        ctx.drop(*parts.values())
        return released

    def _zipped(self, frag: Fragment, src: str, rows: exp.Select, bucket: exp.Expression,
                groups: list[tuple[str, ...]], columns: dict[str, exp.Expression], keys: list[exp.Expression],
                ctx: RunContext) -> str:
        """The release in one statement over the rows (slicing/zipped.sql): each bucket's column
        groups aggregated into arrays, each in its own random order, and unnested side by side.

        Without a seed the widest group keeps the order its rows come in: the links between
        groups are as random when all but one group are shuffled, and it spares the largest
        sort; its columns are aggregated one by one, in that same order. Where the planner may
        feed the aggregates presorted by one group's random key (Backend.presorts_aggregates),
        that order would be the group's own and pair the two again: there the kept group is
        ordered by rank, which the planner may then presort for free. Every other group of
        several columns is aggregated as one value of a row type (an empty temp table's): one
        sort per group, not per column, and no tie-break to keep it together."""
        kept = None if self.req.slicing.seed is not None else _widest(groups)
        kept_order = [col("_sa_rank")] if ctx.backend.presorts_aggregates else []
        types = {i: ctx.create_temp(f"stype_{i}", exp.select(*[columns[c] for c in g]).from_(table(src, "s"))
                                    .where(exp.false())) for i, g in enumerate(groups) if len(g) > 1 and i != kept}
        zipped, taken = [], {}
        for i, g in enumerate(groups):
            if i in types:
                x = exp.cast(exp.Anonymous(this="ROW", expressions=[col(c) for c in g]), exp.DataType(
                    this=exp.DataType.Type.USERDEFINED, kind=table(types[i])))
                zipped.append(exp.alias_(render("slicing/zip_column", x=x, r=[col(f"_sa_r{i}")]).expressions[0],
                                         f"_sa_g{i}"))
                taken.update({c: exp.Dot(this=exp.Paren(this=col(f"_sa_g{i}")), expression=ident(c)) for c in g})
                continue
            for j, c in enumerate(g):
                order = kept_order if i == kept else [col(f"_sa_r{i}")]
                zipped.append(exp.alias_(render("slicing/zip_column", x=col(c), r=order).expressions[0],
                                         f"_sa_g{i}_{j}"))
                taken[c] = col(f"_sa_g{i}_{j}")
        # the aggregates sort 64-bit integers ~20 % faster than doubles (1 M rows); random()
        # times 2^62 is the same order exactly (a double of 52 bits scaled by a power of two)
        ints = [k if self.req.slicing.seed is not None else exp.cast(exp.Mul(this=k, expression=lit(2 ** 62)), "BIGINT")
                for k in keys]
        released = ctx.create_temp("released", render(
            "slicing/zipped", rows=rows.subquery(), bucket=bucket, zipped=zipped,
            columns=[exp.alias_(taken[c], c, quoted=True) for c in frag.columns],
            keys=[exp.alias_(k, f"_sa_r{i}") for i, k in enumerate(ints) if i != kept]))
        ctx.drop(*types.values())
        return released
