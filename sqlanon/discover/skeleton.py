"""A policy skeleton from what ``discover`` found: a proposal for the administrator to review,
never applied by sqlanon itself.

Identifier-like columns become ``identifiers``; the quasi-identifiers get hierarchy stubs:
numbers intervals whose widths grow from about a twentieth of the column's range (its min and
max, read in the database) by doubling, dates month → year → decade, fixed-length codes masks
of their trailing characters, everything else suppression. ``k`` is 5: a highest prosecutor
risk of 20 %, a common threshold for data shared beyond the organisation (El Emam 2013).
"""
from __future__ import annotations

import math
from typing import Any

import yaml

from sqlanon.discover.profile import ColumnProfile

#: the k proposed
K = 5


def nice_width(span: float) -> float:
    """The smallest of 1, 2, 5 × 10^e that is at least a twentieth of ``span``."""
    target = span / 20
    if target <= 0:
        return 1
    e = math.floor(math.log10(target))
    for m in (1, 2, 5, 10):
        w = m * 10.0 ** e
        if w >= target - 1e-12:
            return w
    return 10.0 ** (e + 1)


def hierarchy(p: ColumnProfile, code: bool = False) -> dict[str, Any]:
    if p.family == "numeric" and p.low is not None and p.high is not None:
        span = float(p.high) - float(p.low)
        whole = float(p.low).is_integer() and float(p.high).is_integer()
        w = max(nice_width(span), 1.0) if whole else nice_width(span)
        widths = [w]
        while widths[-1] * 2 < span / 2 and len(widths) < 5:
            widths.append(widths[-1] * 2)
        return {"type": "interval", "levels": [int(x) if float(x).is_integer() else x for x in widths]}
    if p.family == "date":
        return {"type": "date", "levels": ["month", "year", "decade"]}
    if code and p.shortest is not None and p.shortest == p.longest and p.shortest >= 2:
        return {"type": "mask", "levels": list(range(1, min(p.shortest, 5)))}
    return {"type": "suppress"}


def skeleton(table: str, identifiers: list[str], quasi_identifiers: list[str], profiles: dict[str, ColumnProfile],
             codes: set[str], others: list[str], notes: list[str]) -> str:
    """The proposal as YAML text, with the comments a reviewer needs."""
    spec: dict[str, Any] = {}
    if identifiers:
        spec["identifiers"] = identifiers
    spec["quasi_identifiers"] = {q: hierarchy(profiles[q], q in codes) for q in quasi_identifiers}
    spec["privacy"] = {"k": K}
    head = [f"# Proposed by 'sqlanon discover' for {table}: review every line before use; sqlanon applies",
            "# nothing by itself. Interval widths come from each number's range (its min and max).",
            *[f"# {n}" for n in notes]]
    if others:
        head.append(f"# not named here, so never released: {', '.join(others)} "
                    "(list them under 'sensitive' or 'insensitive' to release them)")
    body = yaml.safe_dump({"tables": {table: spec}}, sort_keys=False, default_flow_style=None, allow_unicode=True)
    return "\n".join(head) + "\n" + body
