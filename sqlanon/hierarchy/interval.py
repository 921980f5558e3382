"""Numeric intervals of growing width: 34 → [30,35) → [30,40) → [20,40) → *."""
from __future__ import annotations

from fractions import Fraction
from itertools import pairwise

from sqlglot import exp

from sqlanon.hierarchy.base import Hierarchy, as_text


class IntervalError(ValueError):
    """Widths that do not nest."""


class IntervalHierarchy(Hierarchy):
    kind = "interval"

    def __init__(self, widths: list[float]):
        # every interval must lie in one interval of the level above: the searches group rows by
        # their labels and generalize those groups as wholes
        for a, b in pairwise(widths):
            if (Fraction(str(b)) / Fraction(str(a))).denominator != 1:
                raise IntervalError(f"interval widths must nest, each a whole multiple of the one below it: "
                                    f"{b:g} is not a multiple of {a:g}, so an interval of width {a:g} would "
                                    f"straddle two of width {b:g}")
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

    def midpoint(self, label: exp.Expression) -> exp.Expression:
        """The number a released label stands for in arithmetic and aggregates: an interval's
        midpoint ``(lo + hi) / 2``, a raw value itself, NULL for the root (nothing is known)."""
        comma = exp.StrPosition(this=label.copy(), substr=exp.Literal.string(","))

        def number(e: exp.Expression) -> exp.Expression:
            return exp.cast(e, "DOUBLE")

        lo = number(exp.Substring(this=label.copy(), start=exp.Literal.number(2),
                                  length=exp.Sub(this=comma.copy(), expression=exp.Literal.number(2))))
        hi = number(exp.Substring(this=label.copy(), start=exp.Add(this=comma.copy(), expression=exp.Literal.number(1)),
                                  length=exp.Sub(this=exp.Sub(this=exp.Length(this=label.copy()), expression=comma),
                                                 expression=exp.Literal.number(1))))
        return exp.Case(ifs=[
            exp.If(this=exp.EQ(this=label.copy(), expression=exp.Literal.string(self.top_label)), true=exp.Null()),
            exp.If(this=exp.EQ(this=exp.Substring(this=label.copy(), start=exp.Literal.number(1),
                                                  length=exp.Literal.number(1)), expression=exp.Literal.string("[")),
                   true=exp.Div(this=exp.Paren(this=exp.Add(this=lo, expression=hi)), expression=exp.Literal.number(2))),
        ], default=number(label.copy()))

    def _describe(self, level: int) -> str:
        return f"width {self.widths[level - 1]:g}"
