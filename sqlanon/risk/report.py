"""One risk report: what was measured (a table, a release, a query's answer) over which
quasi-identifiers, its sample risks, population uniqueness and class-size distribution."""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlanon.risk.population import PopulationUniqueness, estimate, population_size
from sqlanon.risk.sample import JournalistRisks, SampleRisks, distribution, sample_risks


@dataclass(frozen=True)
class RiskReport:
    #: what was measured: "table adult", "release adult_k5 (of adult)", "query: SELECT …"
    subject: str
    quasi_identifiers: tuple[str, ...]
    #: {class size: number of classes}: the only thing read from the database
    histogram: dict[int, int]
    sample: SampleRisks
    population: PopulationUniqueness
    #: records left out as suppressed (all quasi-identifiers '*'), in a release
    suppressed: int | None = None
    notes: tuple[str, ...] = field(default=())
    #: journalist and marketer risk against a population table; None: the data are their own
    #: population, and the journalist's figures are the prosecutor's
    journalist: JournalistRisks | None = None

    def to_dict(self) -> dict:
        sample = self.sample.to_dict()
        if self.journalist is not None:
            sample["journalist"] = self.journalist.to_dict()
            sample["marketer"] = {"average": self.journalist.marketer}
        return {"subject": self.subject, "quasi_identifiers": list(self.quasi_identifiers),
                **sample, "population_uniqueness": self.population.to_dict(),
                "class_sizes": distribution(self.histogram),
                "histogram": [[size, n] for size, n in sorted(self.histogram.items())],
                **({"suppressed_records": self.suppressed} if self.suppressed is not None else {}),
                "notes": list(self.notes)}

    def text(self) -> str:
        s, p = self.sample, self.population
        lines = [f"{self.subject}: {s.records:,} records, {s.classes:,} classes over "
                 f"{', '.join(self.quasi_identifiers)}"]
        if self.suppressed:
            lines.append(f"  ({self.suppressed:,} suppressed records left out: all their quasi-identifiers are '*')")
        j = self.journalist
        journalist = (f"  journalist risk   highest {_pct(s.highest)}, average {_pct(s.average)} "
                      "(the data are their own population table, as in ARX without a research subset)") if j is None \
            else (f"  journalist risk   highest {_pct(j.highest)}, average {_pct(j.average)} (1 / the class's size in "
                  f"the population table {j.table}, {j.rows:,} records: the attacker does not know who is in the data)")
        lines += [
            f"  prosecutor risk   highest {_pct(s.highest)}, average {_pct(s.average)} "
            "(1 / class size: the attacker knows the person is in the data)",
            journalist,
            f"  marketer risk     {_pct(s.average if j is None else j.marketer)} "
            "(share of records re-identified on average)",
            f"  sample uniques    {s.uniques:,} records ({_pct(s.unique_share)}) alone in their class",
        ]
        if s.threshold is not None:
            lines.append(f"  records at risk   {s.at_risk:,} with a risk above {_pct(s.threshold)}"
                         + (f" (journalist: {j.at_risk:,})" if j is not None and j.at_risk is not None else ""))
        lines.append(f"  population uniques  {p.uniques:,.0f} of {p.population:,} ({_pct(p.share, 4)}), "
                     f"model {p.model} (Dankar et al.; sampling fraction {p.sampling_fraction:.3g})")
        lines.append("    " + ", ".join(f"{name} {_count(v)}" for name, v in
                                         (("Pitman", p.pitman), ("Zayatz", p.zayatz), ("SNB", p.snb))))
        lines.append("  class sizes       size: classes, records")
        lines += [f"    {b['sizes']:>8}: {b['classes']:,}, {b['records']:,} ({_pct(b['records'] / s.records, 1)})"
                  for b in distribution(self.histogram)]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _pct(v: float, digits: int = 2) -> str:
    return f"{100 * v:.{digits}f} %"


def _count(v: float | None) -> str:
    return "no estimate" if v is None else f"{v:,.0f}"


def assess(subject: str, quasi_identifiers: tuple[str, ...], histogram: dict[int, int], *,
           population: int | str | None = None, threshold: float | None = None, suppressed: int | None = None,
           notes: tuple[str, ...] = (), journalist: JournalistRisks | None = None) -> RiskReport:
    """The report from a class-size frequency table. ``population``: its size, one of ARX's
    regions ('usa', …) or None for ARX's default (a hundred times the records)."""
    records = sum(size * n for size, n in histogram.items())
    size = population_size(records, population)
    if size < records:
        raise ValueError(f"a population of {size:,} is smaller than the {records:,} records measured")
    return RiskReport(subject, quasi_identifiers, dict(sorted(histogram.items())), sample_risks(histogram, threshold),
                      estimate(histogram, size), suppressed, notes, journalist)
