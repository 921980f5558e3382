"""The frequency table of a selection, shared by the methods that search on it.

Every recoding decision of (α,k) and of Mondrian depends only on how many rows share each QI
tuple and sensitive value (a cell), so the methods search on that table — thousands of rows
instead of millions — and touch the full rows once more, to release them. The pushdown adds a
cell key to every row (Backend.cell_key); here the cells are counted by one hash aggregate on
the key, and where the key is a hash on the values too, so a key that two cells share shows as
two rows with one key (refused).
Each quasi-identifier's distinct values among the cells (a few dozen) are then generalized to
every level below the root (labels g_<qi>_<level>) and the labels coded as dense integers
(c_<qi>_<level>) for the search to group and sort, and both are joined to the cells.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.context import Later, RunContext
from sqlanon.criteria.alpha import protected_flag
from sqlanon.errors import BackendError
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.hierarchy.base import Hierarchy
from sqlanon.policy.model import Alpha
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import Owned, col, lit, render, table


def pushdown_columns(frag: Fragment, ctx: RunContext, attribute: str | None,
                     alpha: Alpha | None, keyed: bool = True) -> list[exp.Expression]:
    """The sensitive value, its α-protected flag, and the cell key of the QI values and the
    sensitive value; ``keyed=False``: no key, for a method whose release reads nothing but the
    frequency table (``build``'s ``keyed``). Without a sensitive value, or without α, the value
    or the flag is the constant 0: it is not stored with every row (1 M rows: the copy 0.02-0.03 s
    and the frequency table ~0.02 s of server CPU less), and ``build`` reads a column the rows'
    table does not have (RunContext.columns) as that 0."""
    be = ctx.backend
    sv = frag.source(attribute, be) if attribute else lit(0)
    # the key sees the stored values: each backend encodes them byte for byte itself
    raw = frag.source(attribute) if attribute else lit(0)
    key = be.cell_key([frag.source(q.column) for q in frag.qis] + [raw])
    columns: list[exp.Expression] = [exp.alias_(sv, "_sa_sv"), exp.alias_(protected_flag(alpha, sv), "_sa_p"),
                                     exp.alias_(key, "_sa_key")]
    # the value kept where the selection has no quasi-identifier: the cells are grouped on something
    stored = [bool(attribute) or not frag.qis, alpha is not None, keyed]
    return [c for c, keep in zip(columns, stored) if keep]


@dataclass(frozen=True)
class Frequency:
    #: one row per cell: cell, k (the key), raw_<qi>, sv, p, n: the selection's frequency table as
    #: counted, narrow, for verification to read (Release.counts)
    counted: str
    #: one row per cell: cell, k, sv, p and n of ``counted`` (not the stored QI values: nothing
    #: reads them after the labels), g_<qi>_<level> (labels), c_<qi>_<level> (their dense
    #: integer codes, NULL → 0), svc (the sensitive value's dense integer code, NULL → 0),
    #: where asked for o_<qi> (the cell's position along the attribute: a dense rank of its
    #: value), and x_<j>: the stored value of ``build``'s j-th carried column
    cells: str
    #: (qi, level) of every coded label, in order
    coded: list[tuple[int, int]]
    #: the largest codes (and where the key is a hash, its check), read when a method asks
    #: (``radix``): Mondrian does not, and writes its loop while the database builds the cells
    first: Later

    @property
    def radix(self) -> dict[tuple[int, int], int]:
        """(qi, level) → largest code + 1."""
        rows = self.first.rows()
        row = rows[0] if rows else (0,) + (1,) * len(self.coded)
        return {ic: int(v or 0) + 1 for ic, v in zip(self.coded, row[1:])}

    def search_columns(self) -> exp.Select:
        """The cells' search columns (cell, n, p, c_<qi>_<level>, and sv: the sensitive value's
        code), as a query over the cells."""
        return exp.select(col("cell"), col("n"), col("p"), *[col(f"c_{i}_{lv}") for i, lv in self.coded],
                          exp.alias_(col("svc"), "sv")).from_(table(self.cells))


def build(frag: Fragment, src: str, ctx: RunContext, positions: bool = False, keyed: bool = True,
          carried: tuple[str, ...] = ()) -> Frequency:
    """``positions``: the cells get o_<qi> (Mondrian cuts along them, SABRE sorts by them).
    ``keyed=False``: the rows carry no cell key (pushdown_columns), so the cells are grouped on
    the values alone and their k is NULL: nothing joins the rows to them. ``carried``: columns
    of the rows the cells are grouped on as well and keep (x_<j>), so that a release of them can
    be written from the cells (Mondrian k alone); only without a key, which does not encode them."""
    assert not (carried and keyed), "a cell key does not encode the carried columns"
    be = ctx.backend
    hs = [q.hierarchy for q in frag.qis]
    stored = ctx.columns(src)

    def pushed(name: str) -> exp.Expression | None:
        """A column of pushdown_columns, or None where the rows do not store it (the constant 0)."""
        return col(name) if stored is None or name in stored else None

    sv, flag = pushed("_sa_sv"), pushed("_sa_p")
    values = [col(q.column) for q in frag.qis] + ([sv] if sv is not None else [])
    on_values = be.hashed_cell_key or not keyed
    grouped = values if on_values else []
    picked = values if on_values else [be.fixed_value(v) for v in values]
    key = col("_sa_key") if keyed else exp.cast(exp.null(), "BIGINT")
    p = lit(0) if flag is None else exp.Min(this=flag) if on_values else be.fixed_value(flag)
    counted = ctx.create_temp("counted", render(
        "anonymize/cells", src=src, qis=[exp.alias_(v, f"raw_{i}") for i, v in enumerate(picked[:len(frag.qis)])],
        carried=[exp.alias_(col(c), f"x_{j}") for j, c in enumerate(carried)],
        sv=picked[-1] if sv is not None else lit(0), p=p, key=key,
        keys=[col("_sa_key")] if keyed else [], grouped=grouped + [col(c) for c in carried]))
    coded = [(i, lv) for i, h in enumerate(hs) for lv in range(h.height)]
    domains = {i: ctx.create_temp(f"domain_{i}", _domain(i, h, counted, be, positions)) for i, h in enumerate(hs)}
    cells = ctx.create_temp("cells", _labelled(counted, domains, hs, positions, len(carried)))
    if not carried:  # joined to the full rows by the release (not where it is written from the cells)
        ctx.analyze(cells, "cell", "k")
    # the largest codes from the few domain rows, and where the key is a hash its check: grouped
    # on the key alone, the cells cannot show a key twice
    shared = exp.select(exp.Sub(this=exp.Count(this=exp.Star()), expression=exp.Count(
        this=exp.Distinct(expressions=[col("k")])))).from_(table(counted)).subquery() if be.hashed_cell_key and keyed \
        else lit(0)
    first = ctx.later(exp.select(
        shared, *[exp.select(exp.Max(this=col(f"c_{lv}"))).from_(table(domains[i])).subquery() for i, lv in coded]),
        check=_distinct_keys)
    ctx.drop(*domains.values())
    return Frequency(counted, cells, coded, first)


def _distinct_keys(rows: list[tuple]) -> None:
    """Refuse cells that share a hash key: checked as soon as the answer has come, at the latest
    when the stage ends, before anything is verified or released."""
    if rows and int(rows[0][0] or 0):
        raise BackendError("two cells of the selection share a hash key (a chance of about 2^-64 "
                           "per pair or less): nothing was released; run the query again")


def codes(freq: Frequency, ctx: RunContext) -> str:
    """The cells' search columns as a table of their own (Frequency.search_columns)."""
    return ctx.create_temp("codes", freq.search_columns())


def _domain(i: int, h: Hierarchy, counted: str, be: Backend, positions: bool) -> exp.Expression:
    """Quasi-identifier i's distinct stored values in the cells, with their labels and codes at
    every level below the root, and their position along the attribute: the hierarchy is
    evaluated, and the values sorted, once per value, not once per cell."""
    # built here for this statement alone: aliased in place, not copied (a taxonomy's CASE has a
    # branch per leaf; the copies were a fifth of a query's Python on Adult)
    labels = [exp.alias_(be.binary_text(h.expr(col("v"), lv)), f"g_{lv}", copy=False) for lv in range(h.height)]
    codes = []
    for lv in range(h.height):
        g = col(f"g_{lv}")
        missing = exp.Is(this=g, expression=exp.null())
        rank = exp.Window(this=exp.DenseRank(), partition_by=[exp.Case(ifs=[exp.If(this=missing, true=lit(1))],
                                                                       default=lit(0))],
                          order=exp.Order(expressions=[exp.Ordered(this=g.copy())]))
        codes.append(exp.alias_(exp.Case(ifs=[exp.If(this=missing.copy(), true=lit(0))], default=rank), f"c_{lv}"))
    # a taxonomy is ordered along its ancestor paths, so that siblings are neighbours
    path = [col(f"c_{lv}") for lv in range(h.height - 1, 0, -1)] if isinstance(h, TaxonomyHierarchy) else []
    position = exp.Window(this=exp.DenseRank(), order=exp.Order(
        expressions=[exp.Ordered(this=e) for e in [*path, col("v")]])) if positions else lit(0)
    return render("anonymize/domain", raw=col(f"raw_{i}"), cells=counted, labels=[Owned(e) for e in labels],
                  codes=[Owned(e) for e in codes],
                  position=position)


def _labelled(counted: str, domains: dict[int, str], hs: list[Hierarchy], positions: bool,
              carried: int) -> exp.Select:
    """The cells with each quasi-identifier's labels (g_<qi>_<level>), codes (c_<qi>_<level>)
    and position (o_<qi>) from its domain table: one hash join per attribute on the stored
    value, and for cells without one (no equality finds NULL) the domain's NULL row, read once
    by an uncorrelated subquery (a join to it is a nested loop on MariaDB). The sensitive value's
    code (svc) comes from a small lookup, a sort of its few distinct values, not of the cells.
    The ``carried`` columns x_<j> pass through as they are."""
    lookup = render("anonymize/code_lookup", g=col("sv"), cells=counted).subquery("s", copy=False)
    q = exp.select(*[col(c, "c") for c in ("cell", "k", "sv", "p", "n", *(f"x_{j}" for j in range(carried)))],
                   exp.alias_(exp.func("COALESCE", col("code", "s"), lit(0)), "svc")) \
        .from_(table(counted, "c")).join(lookup, join_type="left", on=col("v", "s").eq(col("sv", "c")), copy=False)
    for i, name in domains.items():
        d = f"d{i}"
        raw = col(f"raw_{i}", "c")
        q = q.join(table(name, d), join_type="left", on=col("v", d).eq(raw), copy=False)
        for name_, out in [*((f"{kind}_{lv}", f"{kind}_{i}_{lv}") for kind in ("g", "c") for lv in range(hs[i].height)),
                           *([("o", f"o_{i}")] if positions else [])]:
            missing = exp.select(col(name_)).from_(table(name)).where(exp.Is(this=col("v"), expression=exp.null()))
            value = exp.Case(ifs=[exp.If(this=exp.Is(this=raw.copy(), expression=exp.null()),
                                         true=missing.subquery())], default=col(name_, d))
            # every value has its domain row: COALESCE only keeps codes NOT NULL, as the search assumes
            q = q.select(exp.alias_(value if name_.startswith("g_") else exp.func("COALESCE", value, lit(0)), out),
                         copy=False)
    return q
