"""Privacy criteria: what must hold for a release, judged on per-class statistics.

A criterion declares aggregate expressions over the class statistics of the released rows
(one row per equivalence class: ``size`` and ``maxp``, the largest count of one protected
value), or — when it judges the distribution of a sensitive attribute in each class — a
statement over that attribute's per-class counts and its whole distribution, and then
judges the values measured. It never looks at how the release was made.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot import exp


@dataclass(frozen=True)
class Verdict:
    criterion: str
    ok: bool
    measured: str


class Criterion(Protocol):
    name: str
    #: the sensitive attribute whose per-class distribution is judged; None: class sizes suffice
    attribute: str | None

    def aggregates(self) -> dict[str, exp.Expression]:
        """Aggregates over the class statistics (columns ``size``, ``maxp``)."""

    def statement(self, counts: str, whole: str) -> exp.Expression | None:
        """One row of measurements from the per-class counts of ``attribute`` in ``counts``
        (cls, vr, v, cnt) and its whole distribution in ``whole`` (vr, v, c)."""

    def judge(self, values: dict[str, object]) -> Verdict: ...


class DistributionCriterion:
    """A criterion judged on one sensitive attribute's per-class distribution (named by its
    ``spec``): it adds no aggregate to the class statistics."""

    spec: Any

    @property
    def attribute(self) -> str:
        return self.spec.attribute

    def aggregates(self) -> dict[str, exp.Expression]:
        return {}
