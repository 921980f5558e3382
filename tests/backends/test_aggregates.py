"""Aggregates over released rows: a quasi-identifier generalized by numeric intervals stands for
its interval's midpoint (NULL for '*'); group means (microaggregation) are read as they are."""
from __future__ import annotations

import random

import pytest

import sqlanon
from tests.helpers import connect, load_table


def midpoint(label: str) -> float | None:
    if label == "*":
        return None
    if label.startswith("["):
        lo, hi = label[1:-1].split(",")
        return (float(lo) + float(hi)) / 2
    return float(label)


def test_interval_labels_aggregate_as_midpoints(db_url):
    rng = random.Random(3)
    load_table(db_url, "t", [("age", "int"), ("s", "text")], [(rng.randint(18, 80), rng.choice("ab")) for _ in range(200)])
    pol = {"tables": {"t": {"quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 40]}},
                            "sensitive": {"s": {}}, "privacy": {"k": 7, "method": "mondrian", "max_suppression": 0.3}}}}
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT age, s FROM t")  # Mondrian is deterministic: same labels below
        released = res.rows
        (avg, total, shifted), = db.execute("SELECT AVG(age), SUM(age), MAX(age + 1) FROM t").rows
        per_s = dict(db.execute("SELECT s, AVG(age) FROM t GROUP BY s").rows)
    known = [midpoint(a) for a, _ in released if midpoint(a) is not None]
    # the rows released as '*' (cut across 40) count as suppressed
    assert 0 < res.report.rows_generalized == len(released) - len(known) == res.report.rows_suppressed
    assert len({a for a, _ in released}) > 3 and any(a.startswith("[") for a, _ in released)
    assert float(avg) == pytest.approx(sum(known) / len(known))
    assert float(total) == pytest.approx(sum(known))
    assert float(shifted) == pytest.approx(max(known) + 1)
    for s in "ab":
        mine = [midpoint(a) for a, x in released if x == s and midpoint(a) is not None]
        assert float(per_s[s]) == pytest.approx(sum(mine) / len(mine))


def test_other_hierarchies_still_refuse_arithmetic(db_url):
    load_table(db_url, "z", [("zip", "text"), ("s", "text")], [("10115", "a"), ("10117", "b")] * 3)
    pol = {"tables": {"z": {"quasi_identifiers": {"zip": {"type": "mask", "levels": [2]}}, "sensitive": {"s": {}},
                            "privacy": {"k": 2}}}}
    with connect(db_url, policy=pol) as db:
        with pytest.raises(sqlanon.QueryRejected, match="SUM over generalized column"):
            db.execute("SELECT SUM(zip) FROM z")
