"""Dates: 2016-06-21 → 2016-06 → 2016 → 2010s → *; levels are a rising subset of these."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.hierarchy.base import Hierarchy

STEPS = ("month", "year", "decade")


def _year(col: exp.Expression) -> exp.Expression:
    return exp.TimeToStr(this=col.copy(), format=exp.Literal.string("%Y"))


class DateHierarchy(Hierarchy):
    kind = "date"

    def __init__(self, steps: list[str]):
        self.steps = steps
        self.height = len(steps) + 1

    def _level(self, col: exp.Expression, level: int) -> exp.Expression:
        step = self.steps[level - 1]
        if step == "month":
            return exp.TimeToStr(this=col.copy(), format=exp.Literal.string("%Y-%m"))
        if step == "year":
            return _year(col)
        decade = exp.Substring(this=_year(col), start=exp.Literal.number(1), length=exp.Literal.number(3))
        return exp.Concat(expressions=[decade, exp.Literal.string("0s")], safe=True)

    def _describe(self, level: int) -> str:
        return self.steps[level - 1]
