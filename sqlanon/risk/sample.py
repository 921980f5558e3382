"""Re-identification risks of the sample itself, from its class-size frequency table.

As ARX defines them (arx-deidentifier/arx, ``risk/RiskModelSampleSummary`` after El Emam,
"Guide to the De-Identification of Personal Health Information", 2013, ch. "Measuring the
Probability of Re-identification"; ``RiskModelSampleRisks``, ``RiskModelSampleUniqueness``):

- prosecutor (the attacker knows the person is in the data): a record's risk is 1 / its class
  size; highest = 1 / the smallest class, average = classes / records (the share of records
  one could re-identify on average), lowest = 1 / the largest class;
- journalist (the attacker does not know whether the person is in the data): a record's risk
  is 1 / the size of its class in a population table the data are a sample of (ARX's data set
  with a research subset: ``journalist_risks``); highest = 1 / the smallest such size, average
  = the larger of classes / Σ population sizes and Σ (class size / population size) / records.
  Where no population table is given — ARX without a research subset — the data set is its own
  population table, so the figures are the prosecutor's;
- marketer (re-identify as many records as possible): classes / records, the average;
- sample uniques: records alone in their class, and their share.

``histogram``: {class size: number of classes of that size}.
"""
from __future__ import annotations

from dataclasses import dataclass

#: the class-size bands of the distribution shown (lower bounds; the last band is open)
BANDS = (1, 2, 3, 5, 10, 20, 50, 100, 1000)


@dataclass(frozen=True)
class SampleRisks:
    records: int
    classes: int
    #: 1 / smallest class, classes / records, 1 / largest class (prosecutor = journalist here)
    highest: float
    average: float
    lowest: float
    #: records alone in their class
    uniques: int
    #: records whose risk is above the threshold (1 / class size > threshold), when one is given
    threshold: float | None = None
    at_risk: int | None = None

    @property
    def unique_share(self) -> float:
        return self.uniques / self.records if self.records else 0.0

    def to_dict(self) -> dict:
        attacker = {"highest": self.highest, "average": self.average, "lowest": self.lowest}
        out = {"records": self.records, "classes": self.classes,
               "prosecutor": attacker, "journalist": dict(attacker), "marketer": {"average": self.average},
               "sample_uniques": self.uniques, "sample_unique_share": self.unique_share}
        if self.threshold is not None:
            out["threshold"] = self.threshold
            out["records_at_risk"] = self.at_risk
        return out


def sample_risks(histogram: dict[int, int], threshold: float | None = None) -> SampleRisks:
    records = sum(size * count for size, count in histogram.items())
    classes = sum(histogram.values())
    if records == 0:
        return SampleRisks(0, 0, 0.0, 0.0, 0.0, 0, threshold, 0 if threshold is not None else None)
    at_risk = None
    if threshold is not None:
        at_risk = sum(size * count for size, count in histogram.items() if 1 / size > threshold)
    return SampleRisks(records, classes, 1 / min(histogram), classes / records, 1 / max(histogram),
                       histogram.get(1, 0), threshold, at_risk)


@dataclass(frozen=True)
class JournalistRisks:
    """Journalist and marketer risk against a population table (``journalist_risks``)."""

    #: the population table and its rows
    table: str
    rows: int
    highest: float
    average: float
    #: Σ (class size / population size) / records: the marketer's expected share of re-identified records
    marketer: float
    #: records whose journalist risk (1 / population size) is above the threshold, when one is given
    at_risk: int | None = None

    def to_dict(self) -> dict:
        out: dict = {"population_table": self.table, "population_records": self.rows, "highest": self.highest,
                     "average": self.average}
        if self.at_risk is not None:
            out["records_at_risk"] = self.at_risk
        return out


def journalist_risks(table: str, rows: int, pairs: dict[tuple[int, int], int],
                     threshold: float | None = None) -> JournalistRisks:
    """From {(class size, its size in the population table): classes}, as ARX's
    ``RiskModelSampleSummary`` computes them for a research subset. Every class must be in the
    population at least as often as in the sample (it is part of it)."""
    short = sum(n for (size, p), n in pairs.items() if p < size)
    if short:
        raise ValueError(f"{short:,} classes of the measured table are missing from the population table {table} or "
                         "larger than there: the population table must hold every measured record (as ARX's data set "
                         "holds its research subset), with the same values")
    records = sum(size * n for (size, _), n in pairs.items())
    if records == 0:
        return JournalistRisks(table, rows, 0.0, 0.0, 0.0, 0 if threshold is not None else None)
    classes = sum(pairs.values())
    spread = sum(size / p * n for (size, p), n in pairs.items()) / records
    average = max(classes / sum(p * n for (_, p), n in pairs.items()), spread)
    at_risk = None if threshold is None else sum(size * n for (size, p), n in pairs.items() if 1 / p > threshold)
    return JournalistRisks(table, rows, 1 / min(p for _, p in pairs), average, spread, at_risk)


def distribution(histogram: dict[int, int]) -> list[dict]:
    """Class sizes in bands: [{"sizes": "3-4", "classes": …, "records": …}], empty bands left out."""
    out = []
    for i, lo in enumerate(BANDS):
        hi = BANDS[i + 1] - 1 if i + 1 < len(BANDS) else None
        inside = {s: c for s, c in histogram.items() if s >= lo and (hi is None or s <= hi)}
        if not inside:
            continue
        label = str(lo) if hi == lo else (f"{lo}-{hi}" if hi is not None else f"{lo}+")
        out.append({"sizes": label, "classes": sum(inside.values()),
                    "records": sum(s * c for s, c in inside.items())})
    return out
