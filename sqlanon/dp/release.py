"""The noisy answer: the bounded aggregates (rewrite.py) through OpenDP (mechanisms.py), the
groups that may be released, every figure's 95 % interval, and what the report says.

The query's ε (``privacy.epsilon.per_query``) is split equally over its measurements, which
compose sequentially (Dwork & Roth 2014, Thm. 3.16: ε-DP mechanisms on the same rows add up
to Σε): each distinct COUNT(*), COUNT(col) and SUM(col) the query needs — ``AVG(col)`` is
the noisy SUM(col) divided by the noisy COUNT(col) — and, for keys without a public domain,
the threshold, whose noisy COUNT(*) answers the query's COUNT(*) when it asks for one. Public
keys (``groups.public``) are all released, groups without a row included (their domain is
enumerated here, never read from the data); other keys only when their noisy count passes the
threshold, so that a group's absence says nothing beyond δ.

Intervals: a count or sum ± the noise's 95 % accuracy (OpenDP's ``*_scale_to_accuracy``),
around the bounded aggregate (after clamping and at most rows_per_person rows per person);
AVG's interval joins the 97.5 % intervals of its SUM and COUNT (Bonferroni: at least 95 %),
clipped to the column's bounds, and is the whole bound range when the COUNT may be 0. A
count released by the threshold is conditioned on passing it: its interval is nominal only
for groups well above the threshold.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlanon.dp import mechanisms
from sqlanon.dp.mechanisms import Noise
from sqlanon.dp.rewrite import Bounded, Measure, Output
from sqlanon.policy.model import Differential


@dataclass
class Answer:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    #: per row, per column: the 95 % interval of a noisy figure, None for a key
    intervals: list[list[list[float] | None]]
    #: what each measurement was (mechanism, ε, sensitivity, scale), by figure
    noise: dict[str, dict[str, Any]] = field(default_factory=dict)
    threshold: int | None = None
    #: the measurements the query's ε was split over
    measurements: int = 0


def measurements(b: Bounded) -> int:
    """How many ways the query's ε is split (see the module's docstring): the measures; for
    keys without a public domain, their COUNT(*) is the threshold's."""
    return len(b.measures)


def _figure(m: Measure) -> str:
    return f"{m.kind.upper()}({m.column or '*'})"


def _norm(v: Any) -> Any:
    """A key as compared with the public domain (a database's Decimal 1 is YAML's 1)."""
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        return float(v)
    return v


def answer(b: Bounded, found: list[tuple[Any, ...]], dp: Differential, epsilon: float) -> Answer:
    """``found``: the bounded aggregate's rows (keys, then measures), exact and never released."""
    share = epsilon / measurements(b)
    n = len(b.keys)
    noise: dict[str, dict[str, Any]] = {}
    threshold = None
    noisy: dict[int, list[Any]] = {}
    scales: dict[int, Noise] = {}
    if b.public:
        exact = {tuple(_norm(v) for v in row[:n]): row[n:] for row in found}
        groups = list(itertools.product(*[dp.domain(k) or () for k in b.keys]))
        looked = [exact.get(tuple(_norm(v) for v in g)) for g in groups]
    else:
        j = b.measures.index(Measure("count"))
        counts = {str(i): int(row[n + j]) for i, row in enumerate(found)}
        released, t_noise, threshold = mechanisms.threshold(counts, dp.rows_per_person, share, dp.delta or 0.0)
        kept = sorted(int(i) for i in released)
        groups = [tuple(found[i][:n]) for i in kept]
        looked = [found[i][n:] for i in kept]
        noise["COUNT(*)"] = {**t_noise.describe(), "threshold": threshold}
        noisy[j] = [released[str(i)] for i in kept]
        scales[j] = t_noise
    for j, m in enumerate(b.measures):
        if j in noisy:
            continue
        integer = m.kind == "count" or m.column in b.integers
        values = [(row[j] if row is not None and row[j] is not None else 0) for row in looked]
        if m.kind == "sum":
            lo, hi = dp.bound(m.column or "") or (0.0, 0.0)
            sensitivity = dp.rows_per_person * max(abs(lo), abs(hi))
        else:
            sensitivity = dp.rows_per_person
        noisy[j], scales[j] = mechanisms.laplace(values, sensitivity, share, integer)
        noise[_figure(m)] = scales[j].describe()
    rows: list[tuple[Any, ...]] = []
    intervals: list[list[list[float] | None]] = []
    for g, key in enumerate(groups):
        row: list[Any] = []
        spans: list[list[float] | None] = []
        for o in b.outputs:
            value, span = _output(o, g, key, b, noisy, scales, dp)
            row.append(value)
            spans.append(span)
        rows.append(tuple(row))
        intervals.append(spans)
    rows, intervals = _ordered(b, rows, intervals)
    return Answer([o.name for o in b.outputs], rows, intervals, noise, threshold, measurements(b))


def _output(o: Output, g: int, key: tuple[Any, ...], b: Bounded, noisy: dict[int, list[Any]],
            scales: dict[int, Noise], dp: Differential) -> tuple[Any, list[float] | None]:
    if o.kind == "key":
        return key[o.of[0]], None
    if o.kind in ("count", "sum"):
        j = o.of[0]
        value, a = noisy[j][g], scales[j].accuracy
        if o.kind == "count":
            # a count is never negative (post-processing)
            return max(0, value), [max(0.0, value - a), max(0.0, value + a)]
        return value, [value - a, value + a]
    s, c = o.of
    lo, hi = dp.bound(b.measures[s].column or "") or (0.0, 0.0)
    total, count = noisy[s][g], noisy[c][g]
    a_s = mechanisms.accuracy(scales[s].scale, b.measures[s].column in b.integers, mechanisms.ALPHA / 2)
    a_c = mechanisms.accuracy(scales[c].scale, True, mechanisms.ALPHA / 2)
    value = None if count <= 0 else min(hi, max(lo, total / count))
    if count - a_c <= 0:
        return value, [float(lo), float(hi)]
    ends = [x / y for x in (total - a_s, total + a_s) for y in (count - a_c, count + a_c)]
    return value, [max(float(lo), min(ends)), min(float(hi), max(ends))]


def _ordered(b: Bounded, rows: list[tuple[Any, ...]],
             intervals: list[list[list[float] | None]]) -> tuple[list[tuple[Any, ...]], list[list[list[float] | None]]]:
    """ORDER BY, OFFSET and LIMIT over the noisy answer (NULLs first, as in SQLite and MariaDB)."""
    pairs = list(zip(rows, intervals))
    for i, desc in reversed(b.order):
        pairs.sort(key=lambda p: (p[0][i] is not None, p[0][i] if p[0][i] is not None else 0), reverse=desc)
    end = None if b.limit is None else b.offset + b.limit
    pairs = pairs[b.offset:end]
    return [p[0] for p in pairs], [p[1] for p in pairs]
