"""k-anonymity (Sweeney 2002): every class of released QI values has at least k rows."""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.criteria.base import Verdict


@dataclass(frozen=True)
class KAnonymity:
    k: int
    name: str = "k-anonymity"
    attribute: None = None

    def statement(self, counts: str, whole: str) -> None:
        return None

    def aggregates(self) -> dict[str, exp.Expression]:
        size = exp.column("size")
        return {
            "k_min": exp.Min(this=size),
            "k_violations": exp.Sum(this=exp.Case(ifs=[exp.If(
                this=exp.LT(this=size.copy(), expression=exp.Literal.number(self.k)), true=exp.Literal.number(1))],
                default=exp.Literal.number(0))),
        }

    def judge(self, values: dict[str, object]) -> Verdict:
        k_min = values.get("k_min")
        bad = int(values.get("k_violations") or 0)
        return Verdict(self.name, bad == 0, f"smallest class {k_min} (k={self.k})")
