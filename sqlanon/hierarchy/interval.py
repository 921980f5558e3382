"""Numeric intervals of growing width: 34 → [30,35) → [30,40) → [20,40) → *."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.hierarchy.base import Hierarchy, as_text


class IntervalHierarchy(Hierarchy):
    kind = "interval"

    def __init__(self, widths: list[float]):
        self.widths = widths
        self.height = len(widths) + 1

    def _level(self, col: exp.Expression, level: int) -> exp.Expression:
        w = self.widths[level - 1]
        width = exp.Literal.number(w)
        # Division with float semantics on every engine (PG would divide integers exactly).
        bucket = exp.Floor(this=exp.Div(this=col.copy(), expression=width.copy()))
        if float(w).is_integer():
            bucket = exp.cast(bucket, "BIGINT")
        lo = exp.Mul(this=bucket, expression=width.copy())
        hi = exp.Add(this=lo.copy(), expression=width.copy())
        return exp.Concat(expressions=[
            exp.Literal.string("["), as_text(exp.Paren(this=lo)), exp.Literal.string(","),
            as_text(exp.Paren(this=hi)), exp.Literal.string(")"),
        ], safe=True)

    def _describe(self, level: int) -> str:
        return f"width {self.widths[level - 1]:g}"
