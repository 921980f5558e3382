"""Journalist risk against a population table of the same database (ARX's research subset), on
every backend: a sample built so that its answers are known, checked against an independent
computation from the rows of both tables; the prosecutor's figures stay the sample's own."""
from __future__ import annotations

from collections import Counter

import pytest

from sqlanon import api
from sqlanon.errors import PolicyError
from tests.cli.test_cli import sqlanon as run
from tests.helpers import load_table

COLUMNS = [("age", "int"), ("sex", "text"), ("zip", "text")]
A, B, C, D = (30, "f", "18055"), (40, "m", "18057"), (50, "f", None), (60, "m", "18061")
#: the population: classes A 4, B 5, C 2 (zip NULL), D 10 records — 21 records
POPULATION = [A] * 4 + [B] * 5 + [C] * 2 + [D] * 10
#: the sample: A 1, B 2, C 1 — 4 records; D not sampled
SAMPLE = [A] + [B] * 2 + [C]
QI = ["age", "sex", "zip"]


def independent(sample, population, threshold):
    """ARX's journalist and marketer risk (RiskModelSampleSummary with a research subset)."""
    s, p = Counter(sample), Counter(population)
    n = len(sample)
    spread = sum(size / p[key] for key, size in s.items()) / n
    return {"highest": 1 / min(p[key] for key in s), "average": max(len(s) / sum(p[key] for key in s), spread),
            "marketer": spread, "at_risk": sum(size for key, size in s.items() if 1 / p[key] > threshold)}


def test_journalist_against_a_population_table(db_url):
    load_table(db_url, "population", COLUMNS, POPULATION)
    load_table(db_url, "sample", COLUMNS, SAMPLE)
    r = api.risk(db_url, "sample", qi=QI, population_table="population", threshold=0.3)
    want = independent(SAMPLE, POPULATION, 0.3)
    # known by construction: 1/2 (class C has 2 in the population), Σ s/P / n = (1/4 + 2/5 + 1/2) / 4
    assert want["highest"] == 0.5 and want["marketer"] == pytest.approx(0.2875) and want["at_risk"] == 1
    j = r.journalist
    assert j is not None and (j.table.lower(), j.rows) == ("population", 21)
    assert j.highest == pytest.approx(want["highest"]) and j.average == pytest.approx(want["average"])
    assert j.marketer == pytest.approx(want["marketer"]) and j.at_risk == want["at_risk"]
    # the prosecutor knows the person is in the sample: the sample's own classes (1, 2, 1)
    assert (r.sample.highest, r.sample.average, r.sample.at_risk) == (1.0, 0.75, 4)
    d = r.to_dict()
    assert d["journalist"]["highest"] == 0.5 and d["prosecutor"]["highest"] == 1.0
    assert d["marketer"]["average"] == pytest.approx(0.2875)
    assert d["population_uniqueness"]["population"] == 21  # the population table's rows
    assert "in the population table" in r.text()
    # the same table as its own population: journalist = prosecutor
    itself = api.risk(db_url, "sample", qi=QI, population_table="sample")
    assert (itself.journalist.highest, itself.journalist.average) == (1.0, 0.75)


def test_a_population_must_hold_the_sample(db_url):
    load_table(db_url, "population", COLUMNS, POPULATION[4:])  # class A missing
    load_table(db_url, "sample", COLUMNS, SAMPLE)
    with pytest.raises(PolicyError, match="missing from the population table"):
        api.risk(db_url, "sample", qi=QI, population_table="population")
    with pytest.raises(PolicyError, match="no table"):
        api.risk(db_url, "sample", qi=QI, population_table="nope")


def test_the_command(db_url):
    load_table(db_url, "population", COLUMNS, POPULATION)
    load_table(db_url, "sample", COLUMNS, SAMPLE)
    out = run("risk", "sample", "--db", db_url, "--qi", "age,sex,zip", "--population-table", "population")
    assert out.returncode == 0, out.stderr
    assert "journalist risk   highest 50.00 %" in out.stdout and "prosecutor risk   highest 100.00 %" in out.stdout
