"""A synthetic table by MWEM (Hardt, Ligett & McSherry 2012; John's thesis, §2.5): the
Multiplicative Weights Exponential Mechanism fits a distribution over the columns' domain to a
workload of marginals, and the table released is drawn from it.

The histogram MWEM needs is computed in the database (one GROUP BY over the bounded rows: at
most ``rows_per_person`` rows of a person, numeric values clamped into their bounds and put into
equal-width bins by a CASE); only the histogram crosses the wire, and it is never released.
Every column needs a domain known without the data: a public one (``groups.public``) or bounds
(``bounds``, cut into ``bins`` bins, released as the bins' midpoints).

The ε of a synthesis is split: a tenth for the noisy number of rows, the rest over ``rounds``
rounds (default: 30, or five per marginal where there are fewer than six), each half to choose the marginal the current distribution answers worst (OpenDP's
report-noisy-max, the exponential mechanism's role) and half to measure it (Laplace on the
marginal's counts); a person changes a marginal's counts, and so its error, by at most
``rows_per_person`` (sequential composition over everything). Each round's measurements then
update the distribution multiplicatively, all measurements so far, a few passes each.
"""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlglot import exp

from sqlanon.dp import mechanisms
from sqlanon.errors import QueryRejected
from sqlanon.policy.model import Differential, TablePolicy

#: passes over the measurements after each round (Hardt et al. use several)
PASSES = 5
#: the most cells a domain may have (every one is a weight updated in Python each round)
MAX_CELLS = 200_000


@dataclass(frozen=True)
class Axis:
    """One column of the synthetic table and its domain."""

    column: str
    #: the released values, one per cell of the domain
    values: tuple[Any, ...]
    #: numeric bins: the lower edges (the first is the lowest bound); None: the public values
    edges: tuple[float, ...] | None = None


def axes(tp: TablePolicy, dp: Differential, columns: list[str], bins: int) -> list[Axis]:
    out = []
    for c in columns:
        domain, bound = dp.domain(c), dp.bound(c)
        if domain is not None:
            out.append(Axis(c, domain))
        elif bound is not None:
            lo, hi = bound
            width = (hi - lo) / bins
            edges = tuple(lo + i * width for i in range(bins))
            out.append(Axis(c, tuple(round(e + width / 2, 6) for e in edges), edges))
        elif c not in tp.releasable:
            raise QueryRejected("column not named in the policy", f"{tp.table}.{c}")
        else:
            raise QueryRejected("column without a known domain", f"{tp.table}.{c}: a synthetic table's columns need "
                                "privacy.groups.public (the values) or privacy.bounds (cut into bins)")
    size = math.prod(len(a.values) for a in out)
    if size > MAX_CELLS:
        raise QueryRejected("domain too large for MWEM", f"{size} cells (at most {MAX_CELLS}): fewer columns or bins")
    return out


def default_columns(tp: TablePolicy, dp: Differential) -> list[str]:
    """The quasi-identifiers with a known domain (the workload's default: their 1- and 2-way marginals)."""
    return [q.column for q in tp.quasi_identifiers if dp.domain(q.column) is not None or dp.bound(q.column) is not None]


def histogram_statement(tp: TablePolicy, table: str, dp: Differential, cols: list[Axis]) -> exp.Select:
    """Cell indices per column and COUNT(*), over at most rows_per_person rows of each person."""
    def col(name: str, t: str = "_dp_src") -> exp.Column:
        return exp.column(name, table=t, quoted=True)

    def cell(a: Axis) -> exp.Expression:
        value = col(a.column)
        if a.edges is None:
            return value
        # equal-width bins of the clamped value: the highest index for everything above the last edge
        ifs = [exp.If(this=exp.LT(this=value.copy(), expression=exp.Literal.number(e)), true=exp.Literal.number(i))
               for i, e in enumerate(a.edges[1:])]
        return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null()), *ifs],
                        default=exp.Literal.number(len(a.edges) - 1))

    source = exp.Table(this=exp.to_identifier(table, quoted=True),
                       alias=exp.TableAlias(this=exp.to_identifier("_dp_src", quoted=True)))
    names = [f"_dp_c{i}" for i in range(len(cols))]
    inner = exp.select(*[exp.alias_(cell(a), n, quoted=True) for a, n in zip(cols, names)]).from_(source)
    if tp.person is not None:
        rank = exp.Window(this=exp.RowNumber(), partition_by=[col(tp.person)],
                          order=exp.Order(expressions=[exp.Ordered(this=exp.Rand())]))
        inner = inner.select(exp.alias_(rank, "_dp_rank", quoted=True))
    rows = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("_dp_rows", quoted=True)))
    select = exp.select(*[col(n, "_dp_rows") for n in names], exp.Count(this=exp.Star())).from_(rows)
    if tp.person is not None:
        select = select.where(exp.LTE(this=col("_dp_rank", "_dp_rows"), expression=exp.Literal.number(dp.rows_per_person)))
    return select.group_by(*[col(n, "_dp_rows") for n in names])


def cells(cols: list[Axis], found: list[tuple]) -> list[int]:
    """The exact histogram over the domain's cells (row-major), rows outside the domain left out."""
    sizes = [len(a.values) for a in cols]
    counts = [0] * math.prod(sizes)
    lookup = [{_norm(v): i for i, v in enumerate(a.values)} if a.edges is None else None for a in cols]
    for row in found:
        index = 0
        for size, look, v in zip(sizes, lookup, row):
            i = (look.get(_norm(v)) if look is not None else (int(v) if v is not None else None))
            if i is None:
                break
            index = index * size + i
        else:
            counts[index] += int(row[-1])
    return counts


def _norm(v: Any) -> Any:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


@dataclass(frozen=True)
class Marginal:
    columns: tuple[int, ...]
    #: for every cell of the domain, its cell in the marginal
    of: tuple[int, ...]
    size: int


def marginals(cols: list[Axis], workload: list[list[str]] | None) -> list[Marginal]:
    names = [a.column for a in cols]
    sets = [[names.index(c) for c in w] for w in workload] if workload else \
        [[i] for i in range(len(cols))] + [list(p) for p in itertools.combinations(range(len(cols)), 2)]
    sizes = [len(a.values) for a in cols]
    out = []
    for s in sets:
        of = []
        for cell in itertools.product(*[range(n) for n in sizes]):
            index = 0
            for i in s:
                index = index * sizes[i] + cell[i]
            of.append(index)
        out.append(Marginal(tuple(s), tuple(of), math.prod(sizes[i] for i in s)))
    return out


def _project(m: Marginal, hist: list[float]) -> list[float]:
    out = [0.0] * m.size
    for x, v in enumerate(hist):
        out[m.of[x]] += v
    return out


@lru_cache(maxsize=None)
def _select_scale(sensitivity: float) -> float:
    """ε of report-noisy-max at scale 1 for scores that move by ``sensitivity`` (OpenDP's map)."""
    dp = mechanisms._dp()
    m = dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float),
                            dp.max_divergence(), scale=1.0)
    return float(m.map(float(sensitivity)))


def _choose(scores: list[float], sensitivity: float, epsilon: float) -> int:
    dp = mechanisms._dp()
    scale = _select_scale(sensitivity) / epsilon
    m = dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float),
                            dp.max_divergence(), scale=scale)
    assert m.map(float(sensitivity)) <= epsilon * (1 + 1e-9)
    return int(m(scores))


@dataclass
class Synthesis:
    rows: list[tuple]
    rounds: int
    #: the marginals measured, by column names
    measured: list[list[str]]


def mwem(cols: list[Axis], exact: list[int], workload: list[list[str]] | None, dp: Differential, epsilon: float,
         rounds: int | None) -> Synthesis:
    ms = marginals(cols, workload)
    rounds = max(1, min(rounds or min(30, 5 * len(ms)), 200))
    n = dp.rows_per_person
    total_eps = epsilon * 0.1
    per_round = (epsilon - total_eps) / rounds
    (noisy_total,), _ = mechanisms.laplace([sum(exact)], n, total_eps, integer=True)
    size = max(1, int(noisy_total))
    cells = len(exact)
    synthetic = [size / cells] * cells
    measurements: list[tuple[Marginal, list[float]]] = []
    measured = []
    for _ in range(rounds):
        scores = [sum(abs(a - b) for a, b in zip(_project(m, synthetic), _project(m, [float(v) for v in exact])))
                  for m in ms]
        chosen = ms[_choose(scores, n, per_round / 2)]
        values, _ = mechanisms.laplace(_project(chosen, [float(v) for v in exact]), n, per_round / 2, integer=False)
        measurements.append((chosen, values))
        measured.append([cols[i].column for i in chosen.columns])
        for _ in range(PASSES):
            for m, target in measurements:
                now = _project(m, synthetic)
                synthetic = [w * math.exp((target[m.of[x]] - now[m.of[x]]) / (2 * size)) for x, w in enumerate(synthetic)]
                scale = size / sum(synthetic)
                synthetic = [w * scale for w in synthetic]
    return Synthesis(_draw(cols, synthetic, size), rounds, measured)


def _draw(cols: list[Axis], weights: list[float], size: int) -> list[tuple]:
    """``size`` rows in the proportions of ``weights`` (largest remainders), in random order."""
    total = sum(weights)
    exact = [w * size / total for w in weights]
    counts = [int(e) for e in exact]
    for x in sorted(range(len(exact)), key=lambda x: counts[x] - exact[x])[:size - sum(counts)]:
        counts[x] += 1
    rows = []
    for cell, k in zip(itertools.product(*[a.values for a in cols]), counts):
        rows.extend([cell] * k)
    random.SystemRandom().shuffle(rows)
    return rows
