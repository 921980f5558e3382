"""The risk models in plain Python: special functions, ARX's sample risks, and the population
models against figures of ARX's own ModelPitman, ModelZayatz and ModelSNB (arx-deidentifier/arx,
compiled from its source and run on the same class-size frequency tables)."""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from sqlanon.discover.lattice import Measure, needed, search
from sqlanon.risk.numerics import digamma, hypergeometric_one, trigamma
from sqlanon.risk.population import estimate, population_size
from sqlanon.risk.report import assess
from sqlanon.risk.sample import distribution, sample_risks
from tests.helpers import read_adult

ADULT = Path(__file__).resolve().parents[2] / "data" / "adult" / "adult.data"
QI = [0, 3, 5, 8, 9, 13]  # age, education, marital_status, race, sex, native_country
USA = 317_238_626


def histogram(rows: list[tuple]) -> dict[int, int]:
    return dict(Counter(Counter(tuple(r[i] for i in QI) for r in rows).values()))


@pytest.fixture(scope="module")
def adult() -> list[tuple]:
    return read_adult(ADULT)


def test_special_functions():
    euler = 0.5772156649015329
    assert digamma(1) == pytest.approx(-euler, abs=1e-12)
    assert digamma(0.5) == pytest.approx(-euler - 2 * math.log(2), abs=1e-12)
    assert digamma(100.5) - digamma(99.5) == pytest.approx(1 / 99.5, rel=1e-12)
    assert digamma(-0.5) == pytest.approx(digamma(0.5) + 2, abs=1e-10)  # ψ(x+1) = ψ(x) + 1/x
    assert trigamma(1) == pytest.approx(math.pi ** 2 / 6, abs=1e-12)
    assert trigamma(0.5) == pytest.approx(math.pi ** 2 / 2, abs=1e-11)
    assert trigamma(-0.5) == pytest.approx(trigamma(0.5) + 4, abs=1e-9)  # ψ′(x) = ψ′(x+1) + 1/x²
    # P(X=1): 10 items, 3 marked, 4 drawn = 3·C(7,3)/C(10,4)
    assert hypergeometric_one(10, 3, 4) == pytest.approx(3 * 35 / 210, rel=1e-12)


def test_sample_risks_as_arx_defines_them():
    h = {1: 2, 2: 1, 5: 2}  # 2 + 2 + 10 = 14 records, 5 classes
    s = sample_risks(h, threshold=0.4)
    assert (s.records, s.classes, s.uniques) == (14, 5, 2)
    assert s.highest == 1 and s.lowest == pytest.approx(0.2) and s.average == pytest.approx(5 / 14)
    assert s.at_risk == 4  # risks 1 and 1/2 are above 0.4, 1/5 is not
    assert distribution(h) == [{"sizes": "1", "classes": 2, "records": 2}, {"sizes": "2", "classes": 1, "records": 2},
                               {"sizes": "5-9", "classes": 2, "records": 10}]


@pytest.mark.parametrize("complete, population, pitman, zayatz, snb, model", [
    # Adult's 30,162 complete rows
    (True, USA, 1352558.3493687757, 8421763.305182742, None, "pitman"),
    (True, 3_016_200, 80243.18257667414, 103387.8689513454, None, "pitman"),
    (True, 60_000, 7450.507196826862, 7530.640722078274, None, "zayatz"),
    (True, 40_000, 5825.689279204613, 5857.052841125013, 5383.625482330765, "snb"),
    # all 32,561 rows ('?' one value among the others)
    (False, USA, 1717186.7122783156, 9395056.260000257, None, "pitman"),
    (False, 40_000, 6372.168681426659, 6374.412808048152, 6070.095922872914, "snb"),
])
def test_population_models_give_arx_figures(adult, complete, population, pitman, zayatz, snb, model):
    rows = [r for r in adult if None not in r] if complete else adult
    e = estimate(histogram(rows), population)
    assert e.pitman == pytest.approx(pitman, rel=1e-6)
    assert e.zayatz == pytest.approx(zayatz, rel=1e-6)
    assert (e.snb is None) if snb is None else e.snb == pytest.approx(snb, rel=1e-6)
    assert e.model == model


def test_no_sample_uniques_no_population_uniques():
    e = estimate({2: 10, 3: 4}, 10_000)
    assert e.uniques == 0 and e.pitman == 0


def test_population_sizes():
    assert population_size(300, None) == 30_000  # ARX's default sampling fraction, 1 %
    assert population_size(300, "USA") == USA and population_size(300, 5000) == 5000
    with pytest.raises(ValueError):
        population_size(300, "atlantis")
    with pytest.raises(ValueError):
        assess("t", ("a",), {1: 10}, population=5)


def test_the_lattice_finds_minimal_combinations_and_prunes():
    # rows 0..99: a = i // 10, b = i % 10, c = i % 2 — (a, b) is unique, a and b alone are not
    rows = [(i // 10, i % 10, i % 2) for i in range(100)]
    names = ["a", "b", "c"]
    asked = []

    def measure(cols):
        asked.append(cols)
        counts = Counter(tuple(r[names.index(c)] for c in cols) for r in rows)
        return Measure(len(counts), sum(1 for v in counts.values() if v == 1))

    found = search(names, 100, {"a": 10, "b": 10, "c": 2}, measure, threshold=1.0, max_size=3)
    assert list(found.found) == [("a", "b")]
    # a, b, c alone and (a, c), (b, c) are settled by their bound (at most 20 classes), so only
    # (a, b) is measured; (a, b, c) is a superset of a unique and never a candidate
    assert asked == [("a", "b")] and found.bounded == 5
    assert needed(100, 0.95) == 95 and needed(100, 1) == 100
