"""Microaggregation (MDAV+, V-MDAV): the in-database groups match a plain numpy MDAV+ written
here as the oracle, and every guarantee is checked on the released rows."""
from __future__ import annotations

import csv
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from sqlanon.anonymize import REGISTRY
from sqlanon.errors import PolicyError
from sqlanon.policy import load_policy
from tests.helpers import connect, load_table


def read_casc(datasets: Path, name: str) -> tuple[list[str], np.ndarray]:
    with open(datasets / "casc" / f"{name}.csv", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        data = np.array([[float(v) for v in row] for row in reader])
    return [h.lower().replace(".", "_") for h in header], data


def mdav_plus(x: np.ndarray, k: int) -> np.ndarray:
    """MDAV+ as Stoldt's talk on k-means microaggregation (2019) states it, on standardized data:
    the unassigned row farthest from the centroid and its k-1 nearest unassigned rows form a
    group, while k rows are left; the rest join the group with the nearest centroid. Returns a
    group number per row."""
    sd = x.std(axis=0)
    z = np.where(sd > 0, (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1), 0.0)
    d0 = (z ** 2).sum(axis=1)
    group = np.full(len(z), -1)
    free = np.ones(len(z), dtype=bool)
    g = 0
    while free.sum() >= k:
        idx = np.flatnonzero(free)
        seed = idx[np.argmax(d0[idx])]  # first maximum: the lowest index on a tie
        dist = ((z[idx] - z[seed]) ** 2).sum(axis=1)
        chosen = idx[np.lexsort((idx, dist))[:k]]
        group[chosen] = g
        free[chosen] = False
        g += 1
    if free.any():
        cents = np.array([z[group == i].mean(axis=0) for i in range(g)])
        for r in np.flatnonzero(free):
            group[r] = int(np.argmin(((cents - z[r]) ** 2).sum(axis=1)))
    return group


def sse_sst(x: np.ndarray, group: np.ndarray) -> float:
    sd = x.std(axis=0)
    keep = sd > 0
    z = (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]
    sse = sum(((z[group == g] - z[group == g].mean(axis=0)) ** 2).sum() for g in np.unique(group))
    return 100.0 * sse / (z ** 2).sum()


def released_il(x: np.ndarray, released: np.ndarray) -> float:
    """IL from the released rows, by the checker's own arithmetic: the released values' spread
    about the selection's mean is the part of each attribute's variance the groups keep."""
    sd = x.std(axis=0)
    keep = sd > 0
    mean = x.mean(axis=0)[keep]
    sst = ((x[:, keep] - mean) ** 2).sum(axis=0)
    ssb = ((released[:, keep] - mean) ** 2).sum(axis=0)
    return 100.0 * float(np.mean(1 - ssb / sst))


def casc_policy(table: str, columns: list[str], privacy: dict) -> dict:
    return {"tables": {table: {
        "quasi_identifiers": {c: {"type": "interval", "levels": [1000, 100000]} for c in columns},
        "privacy": {"method": "mdav", "max_suppression": 0, **privacy}}}}


@pytest.mark.parametrize("name", ["census", "tarragona"])
def test_mdav_matches_the_numpy_oracle(db_url, datasets, name):
    columns, data = read_casc(datasets, name)
    load_table(db_url, name, [(c, "float") for c in columns], data.tolist())
    sql = f"SELECT {', '.join(columns)} FROM {name}"
    for k in (3, 5, 10):
        with connect(db_url, policy=casc_policy(name, columns, {"k": k})) as db:
            res = db.execute(sql)
        released = np.array(res.rows, dtype=float)
        assert len(released) == len(data) and res.report.rows_suppressed == 0
        classes = Counter(map(tuple, released.tolist()))
        assert min(classes.values()) >= k
        # a group mean keeps the attribute's total
        assert np.allclose(released.sum(axis=0), data.sum(axis=0), rtol=1e-9)
        oracle = sse_sst(data, mdav_plus(data, k))
        measured = released_il(data, released)
        assert res.report.information_loss == pytest.approx(measured, rel=1e-6)
        assert measured == pytest.approx(oracle, rel=0.01), (k, measured, oracle)
        assert len(classes) >= len(data) // k - 2  # the oracle forms ⌊n/k⌋ groups


def test_vmdav_groups_are_l_diverse(db_url):
    rng = np.random.default_rng(7)
    rows = [(int(a), int(w), str(s)) for a, w, s in
            zip(rng.integers(18, 90, 300), rng.integers(1, 60, 300), rng.choice(list("abcdde"), 300))]
    load_table(db_url, "vm", [("age", "int"), ("hours", "int"), ("s", "text")], rows)
    pol = {"tables": {"vm": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [10]}, "hours": {"type": "interval", "levels": [10]}},
        "sensitive": {"s": {}},
        "privacy": {"method": "vmdav", "k": 4, "l": 3, "max_suppression": 0}}}}
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT age, hours, s FROM vm")
    assert len(res.rows) == 300
    groups: dict[tuple, Counter] = defaultdict(Counter)
    for a, h, s in res.rows:
        groups[(float(a), float(h))][s] += 1
    assert min(sum(c.values()) for c in groups.values()) >= 4
    assert min(len(c) for c in groups.values()) >= 3
    assert sorted(s for *_, s in res.rows) == sorted(s for *_, s in rows)
    assert 0 < res.report.information_loss < 100 and res.report.method == "vmdav"


def test_mdav_needs_numeric_quasi_identifiers(db_url):
    load_table(db_url, "mc", [("zip", "text"), ("age", "int")], [("123", 1), ("124", 2)])
    pol = {"tables": {"mc": {"quasi_identifiers": {"zip": {"type": "mask", "levels": [1]},
                                                   "age": {"type": "interval", "levels": [10]}},
                             "privacy": {"method": "mdav"}}}}
    with connect(db_url, policy=pol) as db:
        with pytest.raises(PolicyError, match="zip.*numeric"):
            db.execute("SELECT zip, age FROM mc")


def test_methods_refuse_models_they_do_not_build():
    base = {"quasi_identifiers": {"age": {"type": "interval", "levels": [10]}}, "sensitive": {"s": {}}}
    for method, privacy, needle in (("mdav", {"l": 2}, "does not build groups for l"),
                                    ("vmdav", {"l": {"value": 2, "variant": "entropy"}}, "for l"),
                                    ("vmdav", {}, "needs privacy.l"),
                                    ("vmdav", {"l": 2, "t": 0.3}, "for t")):
        req = load_policy({"tables": {"x": {**base, "privacy": {"method": method, **privacy}}}}).tables["x"].requirement
        with pytest.raises(PolicyError, match=needle):
            REGISTRY[method](req)
