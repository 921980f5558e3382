"""Stage 6: measure the released temp table, in the database, independently of the method.

Never imports anonymize/. The class statistics are computed once from the released values
(one GROUP BY), every requested criterion judges them, and the information-loss metrics are
computed against the pushed-down selection (its frequency table, when the method counted one:
only the metrics read it). A release that fails is never returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.criteria import Verdict, for_requirement
from sqlanon.criteria.alpha import protected_flag
from sqlanon.errors import ReleaseRefused, SelectionChanged, SuppressionExceeded
from sqlanon.metrics.arx import arx_measures, measures_statement
from sqlanon.metrics.kl_divergence import Selection, divergences
from sqlanon.metrics.sse import information_loss
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, render, table
from sqlanon.verify.noise import noise, noisy
from sqlanon.verify.reading import Reader, reader
from sqlanon.verify.slicing import Buckets, slice_verdicts


@dataclass
class Measurement:
    rows_in: int = 0
    rows_released: int = 0
    #: released rows whose every quasi-identifier is its hierarchy's root: released, but they
    #: tell nothing of their quasi-identifiers, so the field counts them as suppressed
    rows_generalized: int = 0
    classes: int = 0
    verdicts: list[Verdict] = field(default_factory=list)
    kl: dict[str, float] = field(default_factory=dict)
    discernibility: int = 0
    #: IL = SSE/SST in percent, for microaggregated quasi-identifiers
    information_loss: float | None = None
    #: ARX's loss (granularity) and the non-uniform entropy of the generalized quasi-identifiers
    #: (metrics/arx.py); None without such quasi-identifiers
    arx_loss: float | None = None
    nu_entropy: float | None = None
    #: a sliced release's buckets
    buckets: Buckets | None = None
    #: the released classes' sizes, {size: classes}, fully suppressed rows left out (measured
    #: when the report shows re-identification risk: risk/headline.py)
    class_sizes: dict[int, int] | None = None
    #: the re-identification risk headline computed from them (risk/headline.py; set by the flow)
    risk: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def rows_withheld(self) -> int:
        return self.rows_in - self.rows_released

    @property
    def rows_suppressed(self) -> int:
        """Withheld and fully generalized, as ARX and sdcMicro count suppression: what the
        policy's ``max_suppression`` limits."""
        return self.rows_withheld + self.rows_generalized

    @property
    def kl_sum(self) -> float:
        return sum(self.kl.values())

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def verify(frag: Fragment, src: str, released: str, req: Requirement, ctx: RunContext,
           aggregated: tuple[str, ...] = (), slices: tuple[tuple[str, ...], ...] = (),
           bucket: str | None = None, counts: str | None = None, risk: bool = False) -> Measurement:
    """``aggregated``: quasi-identifiers released as group means, measured by IL = SSE/SST
    instead of KL (a mean is no label of a hierarchy). ``slices``: the column groups of a sliced
    release (each row's bucket in column ``bucket``), judged by verify/slicing.py instead of by
    classes of whole rows. ``counts``: the selection's frequency table as the method counted it
    (Release.counts); it only spares a GROUP BY over the rows for the information-loss metrics,
    and its total must equal the rows of ``src``, counted here. ``risk``: also count the released
    classes' sizes (``Measurement.class_sizes``) from the same frequency table."""
    m = Measurement()
    read = _reader(frag, released, aggregated, ctx)
    selection, m.rows_in = _selection(frag, src, counts, ctx)
    released_cells, names, stats = _classes(frag, released, req, ctx, aggregated, read)
    names_of_stats = [e.alias_or_name for e in stats.selects]  # before writing it changes the tree
    counted = ctx.later(stats)
    # the KL and ARX statement is written while the database counts the released rows
    measured = [i for i, q in enumerate(frag.qis) if q.column not in aggregated]
    measured_selection = Selection(selection.table, [selection.values[i] for i in measured], selection.count)
    measures = measures_statement([frag.qis[i] for i in measured], measured_selection, released_cells,
                                  [names[i] for i in measured], m.rows_in, ctx)
    sizes = _class_sizes(frag, released_cells, names, aggregated, ctx) if risk else None
    if not ctx.live:
        return m
    m.class_sizes = sizes
    # sent whatever the selection (a run's statements never depend on its data) before the
    # statistics are waited for: the database measures while the verdicts are judged here
    measuring = ctx.later(measures) if measures is not None else None
    statistics = counted.rows()
    values = dict(zip(names_of_stats, statistics[0])) if statistics else {}
    judge(frag, released, req, ctx, values, m, read, aggregated, slices, bucket, released_cells)
    m.discernibility += m.rows_withheld * m.rows_in
    rows = measuring.rows() if measuring is not None else None
    m.kl = {frag.qis[i].column: d for i, d in zip(measured, divergences([r[:4] for r in rows or []], len(measured)))}
    m.information_loss = information_loss(list(aggregated), src, released, ctx)
    if not slices:  # a sliced release keeps values exact; its loss is in the links, not the labels
        arx = [(r[0], *r[4:]) for r in rows] if rows is not None else None
        found = arx_measures(arx, [frag.qis[i] for i in measured], m.rows_in, m.rows_withheld)
        if found is not None:
            m.arx_loss, m.nu_entropy = found.loss, found.entropy
    ctx.drop(released_cells, *([selection.table] if selection.table != counts else []))
    return m


def _selection(frag: Fragment, src: str, counts: str | None, ctx: RunContext) -> tuple[Selection, int]:
    """The selection's frequency table over the quasi-identifiers' original values, and its rows:
    the method's own (``counts``: raw_<qi>, n), its total checked against the rows of ``src``
    (as the database counted them writing the copy, else counted here), or else grouped from ``src``."""
    if counts is None or not frag.qis:
        raw = [col(q.column) for q in frag.qis]
        cells = ctx.create_temp("selection_cells", render(
            "verify/selection_cells", qis=raw or [exp.alias_(exp.Literal.number(0), "_none")], qis_group=raw, source=src))
        total = exp.select(exp.func("COALESCE", exp.Sum(this=col("cnt")), exp.Literal.number(0)))
        return Selection(cells, [q.column for q in frag.qis], "cnt"), int(ctx.scalar(total.from_(table(cells))) or 0)
    total = exp.select(exp.func("COALESCE", exp.Sum(this=col("n")), exp.Literal.number(0))).from_(table(counts))
    written = ctx.created_rows(src)  # the database's count of the copy's rows, where it told
    selection = Selection(counts, [f"raw_{i}" for i in range(len(frag.qis))], "n")
    if written is not None:
        # checked when the answer comes, before the stage ends: the release is measured meanwhile
        ctx.later(total, check=lambda found: _agree(written, int((found[0][0] if found else 0) or 0)))
        return selection, written
    row = ctx.query(exp.select(exp.select(exp.Count(this=exp.Star())).from_(table(src)).subquery(),
                               total.subquery()))
    rows, counted = (int(v or 0) for v in row[0]) if row else (0, 0)
    _agree(rows, counted)
    return selection, rows


def _agree(rows: int, counted: int) -> None:
    """Refuse a release whose method counted other rows than the selection holds."""
    if rows != counted:
        # no counts in the message: a suppressing method's answer tells the selection's size
        # only with noise (the selection read through a view can change between its reads when
        # another connection writes to the table meanwhile)
        raise SelectionChanged("the method's count of the selection differs from the selection's own (rows written "
                               "to the table while it was anonymized?): nothing was released; run it again")


def _reader(frag: Fragment, released: str, aggregated: tuple[str, ...], ctx: RunContext) -> Reader:
    """How the released text columns are read byte for byte (verify/reading.py)."""
    qis = {q.column for q in frag.qis} - set(aggregated)
    return reader(released, [c for c in frag.columns if c in qis or c in frag.text_columns], ctx)


def _classes(frag: Fragment, released: str, req: Requirement, ctx: RunContext,
             aggregated: tuple[str, ...], read: Reader) -> tuple[str, list[str], exp.Select]:
    """The released rows' frequency table (its QI columns named ``names``), and the query of
    the class statistics every criterion's aggregates read, measured in one GROUP BY
    (``verify`` sends it)."""
    aggs: dict[str, exp.Expression] = {
        "classes": exp.Count(this=exp.Star()),
        "rows": exp.Sum(this=exp.column("size")),
        "dm": exp.Sum(this=exp.Mul(this=exp.column("size"), expression=exp.column("size"))),
    }
    for c in for_requirement(req):
        aggs.update(c.aggregates())
    qis = _released_qis(frag, aggregated, read)
    names = [f"_q{i}" for i in range(len(qis))]
    sv: exp.Expression = exp.Literal.number(0)
    if req.alpha:
        a = req.alpha.attribute
        sv = read.text(a) if a in frag.text_columns else col(a)
    flags: list[exp.Expression] = []
    # without a sensitive value among its columns, the released frequency table is grouped on the
    # quasi-identifiers alone: its rows are the classes, read as they are (Mondrian k=5 at 1 M
    # rows, 23,736 classes: 13.5 -> 2.8 ms of server CPU), not grouped a second time
    one_per_class = bool(qis) and not req.alpha
    if frag.qis and not aggregated:
        # a released row is fully generalized when every quasi-identifier reads as its root
        # label (the columns of released_cells compare byte for byte)
        at_root = _at_root(frag, names)
        flag = exp.Case(ifs=[exp.If(this=at_root, true=exp.Literal.number(1))], default=exp.Literal.number(0))
        flags.append(exp.alias_(flag if one_per_class else exp.Max(this=flag), "at_root"))
        aggs["generalized"] = exp.Sum(this=exp.Case(
            ifs=[exp.If(this=exp.EQ(this=exp.column("at_root"), expression=exp.Literal.number(1)),
                        true=exp.column("size"))], default=exp.Literal.number(0)))
    selected, grouped = _grouped([*qis, *([sv] if req.alpha else [])], [*names, *(["sv"] if req.alpha else [])], ctx)
    released_cells = ctx.create_temp("released_cells", render(
        "verify/released_cells", columns=selected, grouped=grouped, p=protected_flag(req.alpha, sv), released=released))
    stats = "verify/class_stats_cells" if one_per_class else "verify/class_stats"
    return released_cells, names, render(stats, aggregates=[exp.alias_(e, n) for n, e in aggs.items()],
                                         qis=[col(n) for n in names], released_cells=released_cells, flags=flags)


def _at_root(frag: Fragment, names: list[str]) -> exp.Condition:
    """A row of the released frequency table (QI columns ``names``) whose every quasi-identifier
    reads as its hierarchy's root label (compared byte for byte)."""
    return exp.and_(*[exp.EQ(this=col(n), expression=exp.Literal.string(q.hierarchy.top_label))
                      for n, q in zip(names, frag.qis)])


def _class_sizes(frag: Fragment, released_cells: str, names: list[str], aggregated: tuple[str, ...],
                 ctx: RunContext) -> dict[int, int]:
    """{class size: classes} of the released rows, from their frequency table (no second pass
    over the rows); rows released with every quasi-identifier at the root are left out, as ARX
    leaves suppressed records out of its risk figures."""
    kept: exp.Expression = exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(1))
    if frag.qis and not aggregated:
        # as the class statistics flag them: a NULL among the labels is no root
        kept = exp.EQ(this=exp.Case(ifs=[exp.If(this=_at_root(frag, names), true=exp.Literal.number(1))],
                                    default=exp.Literal.number(0)), expression=exp.Literal.number(0))
    rows = ctx.query(render("verify/class_sizes", released_cells=released_cells, kept=kept,
                            qis=[col(n) for n in names]))
    return {int(size): int(n) for size, n in rows or []}


def _statistics(stats: exp.Select, ctx: RunContext) -> dict[str, object]:
    names = [e.alias_or_name for e in stats.selects]  # before writing it changes the tree
    rows = ctx.query(stats)
    return dict(zip(names, rows[0])) if rows else {}


def judge(frag: Fragment, released: str, req: Requirement, ctx: RunContext, values: dict[str, object],
          m: Measurement, read: Reader, aggregated: tuple[str, ...] = (), slices: tuple[tuple[str, ...], ...] = (),
          bucket: str | None = None, cells: str | None = None) -> None:
    """Every criterion's verdict on the released rows, with the classes and discernibility.
    ``cells``: the released rows' frequency table of ``_classes`` (a sliced release's column
    groups are counted on it)."""
    m.classes = int(values.get("classes") or 0)
    m.rows_released = int(values.get("rows") or 0)
    m.rows_generalized = int(values.get("generalized") or 0)
    m.discernibility = int(values.get("dm") or 0)
    criteria = for_requirement(req)
    if slices and bucket is not None:
        assert cells is not None, "a sliced release's column groups are counted on its released cells"
        m.verdicts, m.buckets = slice_verdicts(frag, released, cells, req, slices, bucket, ctx, read)
        m.classes, m.discernibility = m.buckets.count, m.buckets.dm
        m.notes.append(m.buckets.describe())
    elif m.rows_released:
        tables: dict[str, tuple[str, str]] = {}
        for c in criteria:
            if c.attribute is None:
                m.verdicts.append(c.judge(values))
                continue
            if c.attribute not in tables:
                tables[c.attribute] = _distribution_tables(c.attribute, len(tables), frag, released,
                                                           aggregated, ctx, read)
            statement = c.statement(*tables[c.attribute])
            keys = [e.alias_or_name for e in statement.selects]
            measured = ctx.query(statement)
            m.verdicts.append(c.judge(dict(zip(keys, measured[0])) if measured else {}))
        ctx.drop(*[t for pair in tables.values() for t in pair])
    else:
        m.verdicts = [Verdict(c.name, True, "no rows released") for c in criteria]


def measure_table(frag: Fragment, req: Requirement, ctx: RunContext, numbers: tuple[str, ...] = (),
                  risk: bool = False) -> Measurement:
    """An existing table, anonymized by anyone, measured against ``req``: its classes over the
    fragment's quasi-identifiers and every criterion's verdict (``sqlanon check``). ``numbers``:
    quasi-identifiers stored as numbers (compared as numbers, not byte for byte as text).
    ``risk``: also count its classes' sizes (``Measurement.class_sizes``)."""
    m = Measurement()
    read = _reader(frag, frag.table, numbers, ctx)
    released_cells, names, stats = _classes(frag, frag.table, req, ctx, numbers, read)
    values = _statistics(stats, ctx)
    if risk:
        m.class_sizes = _class_sizes(frag, released_cells, names, numbers, ctx)
    if ctx.live:
        judge(frag, frag.table, req, ctx, values, m, read, numbers)
        m.rows_in = m.rows_released
    ctx.drop(released_cells)
    return m


def _grouped(values: list[exp.Expression], names: list[str],
             ctx: RunContext) -> tuple[list[exp.Expr], list[exp.Expression]]:
    """``values`` as a GROUP BY of them selects them (named ``names``), and what it groups on:
    where a GROUP BY key costs more than an aggregate (Backend.fewer_group_keys), one injective
    cell key of them all, which fixes each value (Backend.fixed_value; MariaDB, Mondrian k=5's
    1 M released rows on six labels: 0.86-0.95 -> 0.73-0.80 s of server CPU with MIN); else the
    values themselves."""
    be = ctx.backend
    if values and be.fewer_group_keys and not be.hashed_cell_key:
        return ([exp.alias_(be.fixed_value(v.copy()), n) for v, n in zip(values, names)],
                [be.cell_key([v.copy() for v in values])])
    return [exp.alias_(v, n) for v, n in zip(values, names)], values


def _released_qis(frag: Fragment, aggregated: tuple[str, ...], read: Reader) -> list[exp.Expression]:
    """The released quasi-identifiers as an attacker compares them: labels byte for byte,
    group means as numbers."""
    return [col(q.column) if q.column in aggregated else read.text(q.column) for q in frag.qis]


def _distribution_tables(attribute: str, index: int, frag: Fragment, released: str,
                         aggregated: tuple[str, ...], ctx: RunContext, read: Reader) -> tuple[str, str]:
    """One attribute's per-class counts in the released rows (cls, vr, v, cnt) and its whole
    distribution (vr, v, c): what l-diversity and t-closeness measure themselves on."""
    attr = read.text(attribute) if attribute in frag.text_columns else col(attribute)
    qis = _released_qis(frag, aggregated, read)  # as the class statistics read them
    names = [f"_q{i}" for i in range(len(qis))]
    selected, grouped = _grouped([*qis, attr], [*names, "v"], ctx)
    counts = ctx.create_temp(f"released_values_{index}", render(
        "verify/released_values", qis=[col(n) for n in names] or [exp.Literal.number(1)],
        columns=selected, grouped=grouped, released=released))
    whole = ctx.create_temp(f"released_whole_{index}", render("verify/released_whole", counts=counts))
    return counts, whole


def enforce(m: Measurement, req: Requirement, exact: bool = False) -> None:
    """Refuse the release when the selection is narrower than the policy allows, a criterion
    fails, or suppression exceeds the policy's limit. The counts of the selection are compared
    with noise (verify/noise.py) and no refusal says a count: the decision and its text reveal
    nothing the release would not. ``exact``: the method withholds no row, so the selection's
    size is the release's and every figure of the suppression limit can be read off the released
    rows: that comparison needs no noise."""
    if req.min_rows and noisy(m.rows_in) < req.min_rows:
        raise ReleaseRefused(f"the query selects too few rows for the policy's min_rows={req.min_rows} (compared "
                             "with noise; a narrow selection invites differencing between queries); nothing was "
                             "released")
    failed = [v for v in m.verdicts if not v.ok]
    if failed:
        raise ReleaseRefused("release failed its own verification (" + ", ".join(v.criterion for v in failed)
                             + "); nothing was released")
    # Suppressed counts the rows withheld and those released with every quasi-identifier at the
    # root, as the field does (ARX, sdcMicro). suppressed − limit·selected changes by at most 1
    # with one row more or less: one draw of the noise blurs it. A release that suppresses
    # nothing is never refused, nor one under a limit of 100 %.
    over = m.rows_suppressed - req.max_suppression * m.rows_in
    if m.rows_suppressed and req.max_suppression < 1 and over + (0 if exact and not m.rows_withheld else noise()) > 0:
        raise SuppressionExceeded(
            f"the requirement would suppress more of the selected rows (withheld, or released with every "
            f"quasi-identifier generalized to the root) than the policy's max_suppression "
            f"{req.max_suppression:.1%} allows (compared with noise); nothing was released")
