"""The headline figures of re-identification risk, for the report of a release and for ``check``.

A release's report can carry them (``report: {risk: true}`` in the policy, ``--risk``): the
prosecutor, journalist and marketer risk (highest and average), the share of sample uniques and,
where the policy names the population the rows are a sample of, the estimate of population
uniqueness — each a function of the released classes' sizes alone (``histogram``: {class size:
classes}, counted inside the database on the released rows by verify/), so they tell nothing
the released rows do not. Fully suppressed records (every quasi-identifier at the root) are
left out, as ARX leaves them out.
"""
from __future__ import annotations

from typing import Any, Sequence

from sqlanon.risk.population import estimate, population_size
from sqlanon.risk.sample import sample_risks


def headline(quasi_identifiers: Sequence[str], histogram: dict[int, int], *, population: int | str | None = None,
             suppressed: int = 0) -> dict[str, Any]:
    """The figures as the JSON report shows them."""
    s = sample_risks(histogram)
    out: dict[str, Any] = {
        "quasi_identifiers": list(quasi_identifiers), "records": s.records, "classes": s.classes,
        "prosecutor": {"highest": s.highest, "average": s.average},
        # without a population table the released rows are their own population (ARX without a
        # research subset): the journalist's figures are the prosecutor's
        "journalist": {"highest": s.highest, "average": s.average},
        "marketer": {"average": s.average},
        "sample_uniques": s.uniques, "sample_unique_share": s.unique_share,
        "suppressed_records": suppressed,
    }
    if population is not None and s.records:
        size = population_size(s.records, population)
        if size >= s.records:
            p = estimate(histogram, size)
            out["population_uniqueness"] = {"population": p.population, "model": p.model, "uniques": p.uniques,
                                            "share": p.share}
    return out


def _pct(v: float) -> str:
    return f"{100 * v:.2f} %"


def headline_lines(h: dict[str, Any]) -> list[str]:
    """The figures in words, one measure a line, each saying what it means."""
    lines = [f"re-identification risk of the released rows over {', '.join(h['quasi_identifiers'])} "
             f"({h['records']:,} records in {h['classes']:,} classes"
             + (f"; {h['suppressed_records']:,} fully suppressed records left out" if h["suppressed_records"] else "")
             + "):"]
    p, m = h["prosecutor"], h["marketer"]
    lines += [
        f"  prosecutor      highest {_pct(p['highest'])}, average {_pct(p['average'])}",
        "                  (the attacker knows the person is in the release: 1 / the size of the person's class)",
        f"  journalist      highest {_pct(h['journalist']['highest'])}, average {_pct(h['journalist']['average'])}",
        "                  (the attacker does not know it; the released rows taken as their own population)",
        f"  marketer        {_pct(m['average'])}",
        "                  (share of all records an attacker who links every one re-identifies on average)",
        f"  sample uniques  {h['sample_uniques']:,} ({_pct(h['sample_unique_share'])})",
        "                  (records alone in their class)",
    ]
    u = h.get("population_uniqueness")
    if u is not None:
        lines += [f"  population uniques  {u['uniques']:,.0f} of {u['population']:,} ({100 * u['share']:.4f} %)",
                  f"                  (estimated people unique in the population on these values; model {u['model']}, "
                  "chosen by Dankar et al.'s rule)"]
    return lines
