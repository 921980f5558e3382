"""The report of one query: what was asked, what was measured, what it cost."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

#: the text form lists buckets one by one up to this many (to_dict: all that were measured)
SHOWN_BUCKETS = 30


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
    rows_suppressed: int = 0
    classes: int = 0
    checks: list[dict[str, Any]] = field(default_factory=list)
    kl_divergence: dict[str, float] = field(default_factory=dict)
    kl_sum: float = 0.0
    discernibility: int = 0
    #: IL = SSE/SST in percent (microaggregation, Domingo-Ferrer & Mateo-Sanz 2002)
    information_loss: float | None = None
    avg_class_size: float | None = None
    levels: dict[str, dict[str, int]] = field(default_factory=dict)
    #: a sliced release: every bucket (bucket, rows, l of its link to the sensitive value)
    buckets: list[dict[str, Any]] = field(default_factory=list)
    statements: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # JSON has no infinity: a value that lost all its mass is reported as a string
        d["kl_divergence"] = {k: ("inf" if math.isinf(v) else v) for k, v in self.kl_divergence.items()}
        d["kl_sum"] = "inf" if math.isinf(self.kl_sum) else self.kl_sum
        return d

    def __str__(self) -> str:
        if self.table is None:
            return f"pass-through ({self.rule}); {self.statements} statement(s), {sum(self.seconds.values()):.3f} s"
        req = ", ".join(f"{k}={v}" for k, v in self.requirement.items())
        lines = [
            f"table {self.table}: method {self.method} ({self.rule}); requirement {req}",
            f"rows: {self.rows_in} selected, {self.rows_released} released, {self.rows_suppressed} suppressed"
            f" ({self.rows_suppressed / self.rows_in:.2%})" if self.rows_in else "rows: none selected",
        ]
        for c in self.checks:
            lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['criterion']}: {c['measured']}")
        if self.kl_divergence:
            per = ", ".join(f"{k}={v:.4f}" for k, v in self.kl_divergence.items())
            lines.append(f"information loss: KL {per}; sum {self.kl_sum:.4f}")
        if self.information_loss is not None:
            lines.append(f"information loss: IL (SSE/SST) {self.information_loss:.2f} %")
        acs = f"{self.avg_class_size:.2f}" if self.avg_class_size is not None else "n/a"
        lines.append(f"classes {self.classes}; discernibility {self.discernibility}; C_avg {acs}")
        for qi, hist in self.levels.items():
            lines.append(f"  levels of {qi}: " + ", ".join(f"{lv}: {n}" for lv, n in hist.items()))
        if 0 < len(self.buckets) <= SHOWN_BUCKETS:
            lines.append("  buckets (rows, l): " + ", ".join(
                f"{b['rows']}" + (f"/{b['l']:.2f}" if b["l"] is not None else "") for b in self.buckets))
        times = ", ".join(f"{k} {v:.3f}s" for k, v in self.seconds.items())
        lines.append(f"{self.statements} SQL statements; {times}")
        lines.extend(self.notes)
        return "\n".join(lines)
