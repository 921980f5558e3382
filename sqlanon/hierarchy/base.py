"""Generalization hierarchies: every level of every kind compiles to one SQL expression.

Level 0 is the value itself, as text; level ``height`` is the root (``*`` unless a taxonomy
names its own root). Released quasi-identifiers are always text, whatever their level, so that
one released column can hold values of several levels (local recoding); a method picks the
level per row with ``CASE`` over these expressions.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from sqlglot import exp

TOP = "*"


def as_text(col: exp.Expression) -> exp.Expression:
    return exp.cast(col.copy(), "TEXT")


class Hierarchy(ABC):
    kind: ClassVar[str]
    #: number of levels above the raw value; level ``height`` is the root
    height: int

    @property
    def top_label(self) -> str:
        return TOP

    def expr(self, col: exp.Expression, level: int) -> exp.Expression:
        """The released text of ``col`` generalized to ``level``."""
        if not 0 <= level <= self.height:
            raise ValueError(f"level {level} outside 0..{self.height}")
        if level == 0:
            return as_text(col)
        if level == self.height:
            return exp.Literal.string(self.top_label)
        return self._level(col, level)

    @abstractmethod
    def _level(self, col: exp.Expression, level: int) -> exp.Expression:
        """Levels strictly between the raw value and the root."""

    def describe(self, level: int) -> str:
        return "raw" if level == 0 else ("root" if level == self.height else self._describe(level))

    def _describe(self, level: int) -> str:
        return f"level {level}"
