"""Trailing-character masking: 22981 → 2298* → 229** → *."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.hierarchy.base import Hierarchy, as_text


class MaskHierarchy(Hierarchy):
    kind = "mask"

    def __init__(self, counts: list[int]):
        self.counts = counts
        self.height = len(counts) + 1

    def _level(self, col: exp.Expression, level: int) -> exp.Expression:
        n = self.counts[level - 1]
        text = as_text(col)
        length = exp.Length(this=text.copy())
        keep = exp.Case(
            ifs=[exp.If(
                this=exp.GT(this=length.copy(), expression=exp.Literal.number(n)),
                true=exp.Substring(this=text.copy(), start=exp.Literal.number(1),
                                   length=exp.Sub(this=length.copy(), expression=exp.Literal.number(n))),
            )],
            default=exp.Literal.string(""),
        )
        return exp.Concat(expressions=[keep, exp.Literal.string("*" * n)], safe=True)

    def _describe(self, level: int) -> str:
        return f"{self.counts[level - 1]} masked"
