"""Normalized Kullback-Leibler divergence of the quasi-identifiers (John's thesis §6.1, Def. 6.1/6.2).

D(A'||A'') = Σ_v p(v)·log2(p(v)/q(v)) over the original values v of the selection, normalized
by the entropy H(A'). q spreads each released label's rows evenly over the original values it
covers (a label covers a value when the value generalizes to it at some level); suppressed
rows carry no mass, so suppression raises D. The thesis's worked example (Li, Liu, Baig & Wong 2011: one of eight
tuples suppressed) gives D = D_N = 0.21. When every row of some value is suppressed and no
released label covers it, D is infinite.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.context import RunContext, Written
from sqlanon.policy.model import QuasiIdentifier
from sqlanon.sql.templates import Owned, col, lit, render, table

#: the CTE of every quasi-identifier's value distribution (Backend.grouping_sets)
_SHARED = "_sa_values"
#: the CTE of every quasi-identifier's released label distribution (Backend.grouping_sets)
_RELEASED = "_sa_released"


@dataclass(frozen=True)
class Selection:
    """The selection's frequency table: ``table`` with one column of original values per
    quasi-identifier (``values``, in their order) and the rows of each row in ``count``."""
    table: str
    values: list[str]
    count: str


def kl_divergences(statement: Written | None, count: int, ctx: RunContext) -> list[float]:
    """D_N of each of ``count`` quasi-identifiers, measured by ``statement`` (kl_statement)."""
    return divergences(ctx.query(statement) if statement is not None else [], count)


def divergences(rows: list[tuple], count: int) -> list[float]:
    """D_N of each of ``count`` quasi-identifiers from the rows (qi, d, h, lost) of kl_union."""
    out = [0.0] * count
    for i, d, entropy, lost in rows:
        if d is None:
            continue
        if lost:
            out[int(i)] = math.inf
            continue
        d, entropy = max(float(d), 0.0), float(entropy)
        out[int(i)] = d / entropy if entropy > 0 else d
    return out


def kl_statement(qis: list[QuasiIdentifier], selection: Selection, released_cells: str,
                 released_names: list[str], rows_in: int, ctx: RunContext) -> Written | None:
    """The one statement that measures D_N of every quasi-identifier, from the frequency tables
    of the selection and of the release (released values in the columns ``released_names``),
    written at once (RunContext.write_ahead): while the database still counts the release."""
    if not qis:
        return None
    be = ctx.backend
    shared, distributions = distributions_of(selection, be)
    released_shared, released = released_of(released_cells, released_names, be)
    return ctx.write_ahead(with_shared(kl_union(qis, distributions, released, rows_in, be), shared, released_shared))


def kl_union(qis: list[QuasiIdentifier], distributions: list[exp.Select], released: list[exp.Select],
             rows_in: int, be: Backend) -> exp.Expression:
    """One row (qi, d, h, lost) per quasi-identifier (verify/kl.sql), from each one's original
    values (distributions_of) and released labels (released_of)."""
    parts = [render("verify/kl", qi=lit(i), labels=Owned(_labels(q, values.copy(), be)),
                    released=Owned(labels.copy().subquery(copy=False)), n=lit(rows_in))
             for i, (q, values, labels) in enumerate(zip(qis, distributions, released))]
    return exp.union(*parts, distinct=False, copy=False) if len(parts) > 1 else parts[0]


def distributions_of(selection: Selection, be: Backend) -> tuple[exp.Select | None, list[exp.Select]]:
    """Each quasi-identifier's original values v with their rows cnt (_distribution). Where the
    database has GROUPING SETS and there are several, every one from one scan of the selection:
    the CTE ``_SHARED`` (returned first, for with_shared) that they read, instead of a scan each."""
    if not (be.grouping_sets and len(selection.values) > 1):
        return None, [_distribution(v, selection) for v in selection.values]
    shared = exp.select(*[col(v) for v in selection.values], exp.alias_(exp.Sum(this=col(selection.count)), "cnt"),
                        exp.alias_(exp.Case(ifs=[exp.If(this=exp.Grouping(expressions=[col(v)]).eq(lit(0)),
                                                        true=lit(i)) for i, v in enumerate(selection.values)]),
                                   "_sa_qi")) \
        .from_(table(selection.table)).group_by(exp.GroupingSets(expressions=[
            exp.Tuple(expressions=[col(v)]) for v in selection.values]))
    return shared, [exp.select(exp.alias_(col(v), "v"), col("cnt")).from_(table(_SHARED))
                    .where(col("_sa_qi").eq(lit(i))) for i, v in enumerate(selection.values)]


def released_of(released_cells: str, names: list[str], be: Backend) -> tuple[exp.Select | None, list[exp.Select]]:
    """Each quasi-identifier's released labels lbl with their rows cnt, from the release's
    classes (``released_cells``, the labels in the columns ``names``): as distributions_of, from
    one GROUPING SETS scan where the database has it (the CTE ``_RELEASED``, returned first)
    instead of a scan and GROUP BY per quasi-identifier and statement."""
    if not (be.grouping_sets and len(names) > 1):
        return None, [exp.select(exp.alias_(col(n), "lbl"), exp.alias_(exp.Sum(this=col("cnt")), "cnt"))
                      .from_(table(released_cells)).group_by(col(n)) for n in names]
    shared = exp.select(*[col(n) for n in names], exp.alias_(exp.Sum(this=col("cnt")), "cnt"),
                        exp.alias_(exp.Case(ifs=[exp.If(this=exp.Grouping(expressions=[col(n)]).eq(lit(0)),
                                                        true=lit(i)) for i, n in enumerate(names)]), "_sa_qi")) \
        .from_(table(released_cells)).group_by(exp.GroupingSets(expressions=[
            exp.Tuple(expressions=[col(n)]) for n in names]))
    return shared, [exp.select(exp.alias_(col(n), "lbl"), col("cnt")).from_(table(_RELEASED))
                    .where(col("_sa_qi").eq(lit(i))) for i, n in enumerate(names)]


def with_shared(statement: exp.Expression, shared: exp.Select | None,
                released: exp.Select | None = None) -> exp.Expression:
    """``statement`` with the CTEs of distributions_of and released_of where there are some."""
    if shared is None and released is None:
        return statement
    out = exp.select("*").from_(statement.subquery("k", copy=False), copy=False)
    for name, cte in ((_SHARED, shared), (_RELEASED, released)):
        if cte is not None:
            out = out.with_(name, as_=cte, copy=False)
    return out


def _distribution(value: str, selection: Selection) -> exp.Select:
    """One quasi-identifier's original values v with their rows cnt: the selection grouped by
    the value (a few dozen rows)."""
    return exp.select(exp.alias_(col(value), "v"), exp.alias_(exp.Sum(this=col(selection.count)), "cnt")) \
        .from_(table(selection.table)).group_by(col(value))


def _labels(q: QuasiIdentifier, values: exp.Select, be: Backend) -> exp.Subquery:
    """Each original value v with its rows cnt (``values``) and every label lbl it takes at some
    level: the values paired with the levels, a CASE picking each level's label; a label that two
    levels share counts once."""
    h = q.hierarchy
    v = col("v", "p")
    numbers = [exp.select(exp.alias_(lit(lv), "n")) for lv in range(h.height + 1)]
    levels = exp.union(*numbers, distinct=False, copy=False) if len(numbers) > 1 else numbers[0]
    label = exp.Case(this=col("n", "lv"), ifs=[exp.If(this=lit(lv), true=be.binary_text(h.expr(v.copy(), lv)))
                                               for lv in range(h.height + 1)])
    # built in place (copy=False): every builder step would copy the CASE over every leaf
    return exp.select(v, col("cnt", "p"), exp.alias_(label, "lbl", copy=False)).distinct(copy=False) \
        .from_(values.subquery("p", copy=False), copy=False) \
        .join(levels.subquery("lv", copy=False), join_type="cross", copy=False).subquery(copy=False)
