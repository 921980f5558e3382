"""Normalized Kullback-Leibler divergence of one quasi-identifier (seed 001 §6.1, Def. 6.1/6.2).

D(A'||A'') = Σ_v p(v)·log2(p(v)/q(v)) over the original values v of the selection, normalized
by the entropy H(A'). q spreads each released label's rows evenly over the original values it
covers (a label covers a value when the value generalizes to it at some level); suppressed
rows carry no mass, so suppression raises D. The seed's worked example (LLBW11: one of eight
tuples suppressed) gives D = D_N = 0.21. When every row of some value is suppressed and no
released label covers it, D is infinite.
"""
from __future__ import annotations

import math

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.policy.model import QuasiIdentifier
from sqlanon.sql.templates import col, render, table


def kl_divergence(qi: QuasiIdentifier, selection_cells: str, released_cells: str, released_name: str,
                  rows_in: int, ctx: RunContext) -> float:
    """D_N of one QI from the frequency tables of the selection (original values, column named
    as the QI) and of the release (released values, column ``released_name``): the QI's few
    distinct values are kept once, and the labels each takes at every level are a CTE over
    them (read twice, made again from a few dozen rows)."""
    be = ctx.backend
    h = qi.hierarchy
    dom = ctx.create_temp("kl_dom", exp.select(exp.alias_(col(qi.column), "v")).distinct()
                          .from_(table(selection_cells)))
    levels = [exp.select(col("v"), exp.alias_(be.binary_text(h.expr(col("v"), lv)), "lbl")).from_(table(dom))
              for lv in range(h.height + 1)]
    union = exp.union(*levels, distinct=True, copy=False) if len(levels) > 1 else levels[0]
    row = ctx.query(render("verify/kl", v=col(qi.column), selection_cells=selection_cells, labels=union,
                           released_cells=released_cells, released_value=col(released_name),
                           n=exp.Literal.number(rows_in)))
    ctx.drop(dom)
    if not row or row[0][0] is None:
        return 0.0
    d, entropy, lost = row[0]
    if lost:
        return math.inf
    d, entropy = float(d), float(entropy)
    return max(d, 0.0) / entropy if entropy > 0 else max(d, 0.0)
