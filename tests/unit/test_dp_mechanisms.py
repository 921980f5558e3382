"""The noise of differentially private answers (sqlanon/dp/): its scale matches ε and the
sensitivity, and the reported 95 % intervals cover the true value at about their rate.

OpenDP draws from the operating system's randomness and cannot be seeded: every test takes
enough draws that its bound fails by chance with a probability far below one in a million
(the bounds are several standard errors wide)."""
from __future__ import annotations

import math

from sqlglot import exp

from sqlanon.dp import mechanisms
from sqlanon.dp.release import answer
from sqlanon.dp.rewrite import Bounded, Measure, Output
from sqlanon.policy.model import Budget, Differential

DRAWS = 40_000


def discrete_variance(scale: float) -> float:
    a = math.exp(-1 / scale)
    return 2 * a / (1 - a) ** 2


def test_discrete_laplace_scale_is_sensitivity_over_epsilon():
    noisy, noise = mechanisms.laplace([0] * DRAWS, sensitivity=5, epsilon=0.5, integer=True)
    assert noise.scale == 10 and noise.mechanism == "discrete Laplace"
    assert all(isinstance(v, int) for v in noisy)
    var = sum(v * v for v in noisy) / DRAWS
    # the sample variance of 40,000 draws is within ~2.5 % (one standard error) of the variance
    assert abs(var / discrete_variance(10) - 1) < 0.12
    assert abs(sum(noisy) / DRAWS) < 6 * math.sqrt(discrete_variance(10) / DRAWS)


def test_float_laplace_scale_and_interval_coverage():
    noisy, noise = mechanisms.laplace([100.0] * DRAWS, sensitivity=90.0, epsilon=0.25, integer=False)
    assert noise.scale == 360
    errors = [v - 100.0 for v in noisy]
    var = sum(e * e for e in errors) / DRAWS
    assert abs(var / (2 * 360 ** 2) - 1) < 0.12
    covered = sum(abs(e) <= noise.accuracy for e in errors) / DRAWS
    assert 0.94 < covered < 0.96  # nominal 95 %; one standard error is 0.1 %


def test_discrete_interval_covers_at_least_its_rate():
    noisy, noise = mechanisms.laplace([7] * DRAWS, sensitivity=2, epsilon=1.0, integer=True)
    covered = sum(abs(v - 7) <= noise.accuracy for v in noisy) / DRAWS
    assert 0.945 < covered < 0.975  # integer noise: the interval is a little conservative


def test_threshold_keeps_one_persons_group_out_with_probability_delta():
    released, noise, t = mechanisms.threshold({"big": 10_000, "one": 3}, rows_per_person=3, epsilon=0.5, delta=1e-6)
    assert noise.scale == 6 and t > 3
    # a group that only one person's 3 rows make passes with probability P(Z >= t - 3) <= δ
    a = math.exp(-1 / noise.scale)
    assert a ** (t - 3) / (1 + a) <= 1e-6
    assert "big" in released and "one" not in released
    # and the threshold is not much higher than δ needs
    assert a ** (t - 3 - 2 * noise.scale) / (1 + a) > 1e-6


def _average_query() -> Bounded:
    measures = (Measure("count"), Measure("sum", "age"), Measure("count", "age"))
    outputs = (Output("n", "count", (0,)), Output("avg_age", "avg", (1, 2)), Output("total", "sum", (1,)))
    return Bounded((), measures, outputs, exp.select("1"), public=True, integers=frozenset({"age"}))


def test_count_sum_and_avg_intervals_cover_the_bounded_aggregate():
    dp = Differential(Budget(1.0, 100.0, "client", 86_400), None, 1, (("age", 17, 90),))
    exact_n, exact_sum = 40, 40 * 38  # a small group: the AVG interval is wide but must still hold it
    runs = 2_000
    hits = {"n": 0, "avg_age": 0, "total": 0}
    for _ in range(runs):
        out = answer(_average_query(), [(exact_n, exact_sum, exact_n)], dp, 1.0)
        (row,), (spans,) = out.rows, out.intervals
        assert out.measurements == 3 and out.noise["SUM(age)"]["scale"] == 90 * 3
        for (name, truth), span in zip((("n", exact_n), ("avg_age", 38.0), ("total", exact_sum)), spans):
            hits[name] += span[0] <= truth <= span[1]
        assert row[1] is None or 17 <= row[1] <= 90
    # 2,000 runs: one standard error of a 95 % rate is 0.5 %
    assert hits["n"] / runs > 0.93 and hits["total"] / runs > 0.93
    assert hits["avg_age"] / runs > 0.95 - 0.02  # conservative (Bonferroni): at least nominal


def test_public_groups_are_all_released_also_without_rows():
    dp = Differential(Budget(1.0, 100.0, "client", 86_400), None, 1, (), (("sex", ("F", "M", "X")),))
    b = Bounded(("sex",), (Measure("count"),), (Output("sex", "key", (0,)), Output("n", "count", (0,))),
                exp.select("1"), public=True)
    out = answer(b, [("F", 500), ("M", 400)], dp, 1.0)
    assert [r[0] for r in out.rows] == ["F", "M", "X"]
    assert all(r[1] >= 0 for r in out.rows) and out.threshold is None
