"""The report of one query: what was asked, what was measured, what it cost."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlanon.finish.text import report_text


@dataclass
class Report:
    table: str | None
    method: str
    rule: str
    requirement: dict[str, Any] = field(default_factory=dict)
    #: the selection as pushed down, columns named by the table itself (None: the whole table)
    predicate: str | None = None
    #: a join of protected tables: per table, the rows of it the join read, as a condition over
    #: that table alone (the release log keeps one entry per table for differencing)
    selections: dict[str, str | None] = field(default_factory=dict)
    rows_in: int = 0
    rows_released: int = 0
    #: selected rows the release leaves out
    rows_withheld: int = 0
    #: released rows whose every quasi-identifier is at its hierarchy's root: they tell nothing
    #: of their quasi-identifiers, and the field (ARX, sdcMicro) counts them as suppressed
    rows_generalized: int = 0
    #: withheld + fully generalized: what ``max_suppression`` limits
    rows_suppressed: int = 0
    classes: int = 0
    checks: list[dict[str, Any]] = field(default_factory=list)
    kl_divergence: dict[str, float] = field(default_factory=dict)
    kl_sum: float = 0.0
    discernibility: int = 0
    #: IL = SSE/SST in percent (microaggregation, Domingo-Ferrer & Mateo-Sanz 2002)
    information_loss: float | None = None
    #: ARX's loss ("granularity": generalization/suppression factor 0.5, weights 1, geometric
    #: mean) and the non-uniform entropy of the generalized quasi-identifiers (metrics/arx.py)
    arx_loss: float | None = None
    nu_entropy: float | None = None
    avg_class_size: float | None = None
    levels: dict[str, dict[str, int]] = field(default_factory=dict)
    #: a sliced release: every bucket (bucket, rows, l of its link to the sensitive value)
    buckets: list[dict[str, Any]] = field(default_factory=list)
    statements: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: a differentially private answer (method dp): ε spent, budget left, the noise of each
    #: figure, and every figure's 95 % interval (sqlanon/dp/release.py)
    dp: dict[str, Any] = field(default_factory=dict)
    #: the released rows' re-identification risk, when asked (``report.risk``, ``--risk``):
    #: prosecutor, journalist, marketer, sample uniques (risk/headline.py); refusals never have it
    risk: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # JSON has no infinity: a value that lost all its mass is reported as a string
        d["kl_divergence"] = {k: ("inf" if math.isinf(v) else v) for k, v in self.kl_divergence.items()}
        d["kl_sum"] = "inf" if math.isinf(self.kl_sum) else self.kl_sum
        return d

    def __str__(self) -> str:
        return report_text(self)
