"""Categorical taxonomies from a CSV in the ARX format.

One row per value: the value first, then its ancestor at each level, the root last
(ARX's, as in ``data/adult/hierarchies/``). Values are matched against the column's text form.
"""
from __future__ import annotations

import csv
from pathlib import Path

from sqlglot import exp

from sqlanon.hierarchy.base import Hierarchy, as_text


class TaxonomyError(ValueError):
    pass


class TaxonomyHierarchy(Hierarchy):
    kind = "taxonomy"

    def __init__(self, rows: list[list[str]], source: str = ""):
        if not rows:
            raise TaxonomyError("the taxonomy file has no rows")
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            raise TaxonomyError(f"rows have different numbers of levels: {sorted(widths)}")
        width = widths.pop()
        if width < 2:
            raise TaxonomyError("each row needs the value and at least its root")
        roots = {r[-1] for r in rows}
        if len(roots) != 1:
            raise TaxonomyError(f"the last column must be one root, found {sorted(roots)[:5]}")
        leaves = [r[0] for r in rows]
        if len(set(leaves)) != len(leaves):
            dup = sorted({v for v in leaves if leaves.count(v) > 1})
            raise TaxonomyError(f"values listed twice: {dup[:5]}")
        for lv in range(1, width - 1):
            parent: dict[str, str] = {}
            for r in rows:
                if parent.setdefault(r[lv], r[lv + 1]) != r[lv + 1]:
                    raise TaxonomyError(
                        f"not a tree: {r[lv]!r} at level {lv} has two parents "
                        f"({parent[r[lv]]!r} and {r[lv + 1]!r})")
        self.rows = rows
        self.source = source
        self.height = width - 1
        self._root = rows[0][-1]

    @classmethod
    def from_csv(cls, path: Path, sep: str = ";") -> "TaxonomyHierarchy":
        with open(path, newline="", encoding="utf-8") as f:
            rows = [[c.strip() for c in r] for r in csv.reader(f, delimiter=sep) if any(c.strip() for c in r)]
        return cls(rows, source=str(path))

    @property
    def leaves(self) -> list[str]:
        return [r[0] for r in self.rows]

    @property
    def top_label(self) -> str:
        return self._root

    def _level(self, col: exp.Expression, level: int) -> exp.Expression:
        # Uncovered values cannot occur: coverage is checked before any release.
        return exp.Case(
            this=as_text(col),
            ifs=[exp.If(this=exp.Literal.string(r[0]), true=exp.Literal.string(r[level])) for r in self.rows],
            default=exp.Literal.string(self._root),
        )

    def _describe(self, level: int) -> str:
        return f"taxonomy level {level}"
