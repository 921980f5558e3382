"""Privacy criteria: what must hold for a release, judged on per-class statistics.

A criterion declares aggregate expressions over the class statistics of the released rows
(one row per equivalence class: ``size`` and ``maxp``, the largest count of one protected
value) and then judges the aggregated values. It never looks at how the release was made.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp


@dataclass(frozen=True)
class Verdict:
    criterion: str
    ok: bool
    measured: str


class Criterion(Protocol):
    name: str

    def aggregates(self) -> dict[str, exp.Expression]:
        """Aggregates over the class statistics (columns ``size``, ``maxp``)."""

    def judge(self, values: dict[str, object]) -> Verdict: ...
