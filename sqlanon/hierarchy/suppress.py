"""Suppression of the attribute: the value or ``*``."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.hierarchy.base import Hierarchy


class SuppressHierarchy(Hierarchy):
    kind = "suppress"
    height = 1

    def _level(self, col: exp.Expression, level: int) -> exp.Expression:  # pragma: no cover
        raise AssertionError("a suppression hierarchy has no middle level")
