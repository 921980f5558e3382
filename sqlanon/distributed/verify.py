"""Verification of a joined release, on the released rows alone.

The synchronizer judged classes by codes; this module judges what leaves: it groups the
released rows by their released quasi-identifier values, byte for byte as a reader of the
answer does, and measures k, t (EMD, equal or ordered distance) and l (distinct or entropy) on
them. It sees no pseudonym, no class number, no raw row — only the answer.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Sequence

from sqlanon.policy.model import Closeness, Diversity

TOLERANCE = 1e-9


def measure(rows: Sequence[Sequence[Any]], qi: Sequence[int], sensitive: int | None, k: int,
            t: Closeness | None, l: Diversity | None) -> list[dict[str, Any]]:  # noqa: E741
    """One verdict per model: criterion, ok, measured."""
    groups: dict[tuple, list[Any]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[i] for i in qi)].append(r[sensitive] if sensitive is not None else None)
    smallest = min((len(v) for v in groups.values()), default=0)
    out = [{"criterion": "k-anonymity", "ok": not rows or smallest >= k,
            "measured": f"smallest class {smallest} row(s) of {len(groups)} class(es) (k={k})"}]
    if t is not None and sensitive is not None:
        whole = Counter(v for vs in groups.values() for v in vs)
        order = _ordered(list(whole)) if t.distance == "ordered" else list(whole)
        worst = max((_emd(Counter(vs), whole, len(rows), order, t.distance) for vs in groups.values()), default=0.0)
        out.append({"criterion": f"t-closeness ({t.distance} distance)", "ok": worst <= t.value + TOLERANCE,
                    "measured": f"largest distance {worst:.4f} of a class from the whole release (t={t.value:g})"})
    if l is not None and sensitive is not None:
        if l.variant == "distinct":
            least = min((len(set(vs)) for vs in groups.values()), default=0)
            out.append({"criterion": "distinct l-diversity", "ok": not rows or least >= l.value,
                        "measured": f"fewest distinct values in a class {least} (l={l.value})"})
        else:
            least_h = min((_entropy(Counter(vs)) for vs in groups.values()), default=0.0)
            out.append({"criterion": "entropy l-diversity", "ok": not rows or least_h >= math.log(l.value) - TOLERANCE,
                        "measured": f"lowest entropy of a class {least_h:.4f} (log l = {math.log(l.value):.4f})"})
    return out


def _ordered(values: list[Any]) -> list[Any]:
    """Values in their order (NULL first); numbers as numbers."""
    return sorted(values, key=lambda v: (v is not None, v))


def _emd(part: Counter, whole: Counter, n: int, order: list[Any], distance: str) -> float:
    size = sum(part.values())
    diffs = [part.get(v, 0) / size - whole[v] / n for v in order]
    if distance == "ordered":
        if len(order) < 2:
            return 0.0
        running, total = 0.0, 0.0
        for d in diffs[:-1]:
            running += d
            total += abs(running)
        return total / (len(order) - 1)
    return 0.5 * sum(abs(d) for d in diffs)


def _entropy(c: Counter) -> float:
    n = sum(c.values())
    return -sum(x / n * math.log(x / n) for x in c.values())
