"""MWEM (sqlanon/dp/mwem.py) without a database: the domain's cells, the marginals, and a fit
that approaches the measured marginals as ε grows."""
from __future__ import annotations

from sqlanon.dp.mwem import Axis, cells, marginals, mwem
from sqlanon.policy.model import Budget, Differential

DP = Differential(Budget(1.0, 1e9, "client", 86_400))
COLS = [Axis("sex", ("F", "M")), Axis("age", (25.0, 35.0, 45.0), (20.0, 30.0, 40.0))]
#: (sex, age bin, count) as the histogram statement returns them; a value outside the domain is left out
FOUND = [("F", 0, 300), ("F", 2, 100), ("M", 1, 500), ("M", 2, 100), ("X", 1, 50), ("M", None, 7)]


def test_cells_and_marginals():
    assert cells(COLS, FOUND) == [300, 0, 100, 0, 500, 100]
    one, two, both = marginals(COLS, None)
    assert (one.columns, one.size, two.columns, two.size, both.size) == ((0,), 2, (1,), 3, 6)
    assert one.of == (0, 0, 0, 1, 1, 1) and two.of == (0, 1, 2, 0, 1, 2)
    (only,) = marginals(COLS, [["age"]])
    assert only.columns == (1,)


def l1(rows: list[tuple], truth: list[int]) -> float:
    counts = [0] * 6
    for sex, age in rows:
        counts[("F", "M").index(sex) * 3 + (25.0, 35.0, 45.0).index(age)] += 1
    return sum(abs(a - b) for a, b in zip(counts, truth))


def test_the_fit_approaches_the_histogram_as_epsilon_grows():
    truth = cells(COLS, FOUND)
    uniform = sum(abs(t - sum(truth) / 6) for t in truth)
    tight = mwem(COLS, truth, None, DP, epsilon=100.0, rounds=6)
    assert abs(len(tight.rows) - 1000) <= 2 and l1(tight.rows, truth) < 0.1 * uniform
    loose = [l1(mwem(COLS, truth, None, DP, epsilon=0.05, rounds=3).rows, truth) for _ in range(5)]
    assert sorted(loose)[2] > l1(tight.rows, truth)
