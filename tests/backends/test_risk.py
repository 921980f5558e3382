"""`risk` on every backend: the class-size frequency table built in the database, the sample
risks against an independent computation from the raw rows, a stored release and a query's
answer measured on released rows, and Adult against ARX's figures."""
from __future__ import annotations

from collections import Counter

import pytest

from sqlanon import api
from sqlanon.errors import PolicyError
from tests.conftest import DATASETS
from tests.helpers import connect, load_table, read_adult

COLUMNS = [("age", "int"), ("sex", "text"), ("zip", "text"), ("disease", "text")]
#: classes over (age, sex, zip) of sizes 1, 1, 2, 3, 5 — 12 rows, 5 classes, 2 sample uniques
ROWS = ([(30, "f", "18055", "flu")] + [(31, "m", "18055", "flu")] + [(40, "f", "18057", "cold")] * 2
        + [(50, "m", "18059", "hiv")] * 3 + [(60, "f", "18061", "flu")] * 5)
POLICY = {"tables": {"patients": {
    "quasi_identifiers": {"age": {"type": "interval", "levels": [10, 20]}, "sex": {"type": "suppress"},
                          "zip": {"type": "mask", "levels": [1, 2, 3]}},
    "sensitive": {"disease": {}}, "privacy": {"k": 2, "max_suppression": 0.5}}}}


def independent(rows, qi) -> dict:
    """Prosecutor, journalist and marketer risk from the raw rows, as ARX defines them."""
    sizes = list(Counter(tuple(r[i] for i in qi) for r in rows).values())
    n = len(rows)
    return {"records": n, "classes": len(sizes), "highest": 1 / min(sizes), "average": len(sizes) / n,
            "lowest": 1 / max(sizes), "uniques": sum(1 for s in sizes if s == 1),
            "histogram": dict(Counter(sizes))}


def test_the_raw_table_by_the_policy(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    r = api.risk(db_url, "patients", POLICY, population=1200)
    want = independent(ROWS, [0, 1, 2])
    assert r.quasi_identifiers == ("age", "sex", "zip")
    assert r.histogram == want["histogram"] == {1: 2, 2: 1, 3: 1, 5: 1}
    s = r.sample
    assert (s.records, s.classes, s.uniques) == (want["records"], want["classes"], want["uniques"]) == (12, 5, 2)
    assert s.highest == want["highest"] == 1 and s.lowest == pytest.approx(want["lowest"])
    assert s.average == pytest.approx(want["average"])
    d = r.to_dict()
    assert d["journalist"] == d["prosecutor"] and d["marketer"]["average"] == pytest.approx(5 / 12)
    assert d["sample_unique_share"] == pytest.approx(2 / 12)
    assert r.population.population == 1200 and r.population.model in ("pitman", "zayatz")
    assert "sample uniques    2 records (16.67 %)" in r.text()


def test_the_login_reads_through_the_reader_role(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with connect(db_url, POLICY) as s:
        r = s.risk("patients", threshold=0.4)
    assert r.sample.at_risk == 4  # the two uniques and the class of 2 are above 40 %


def test_a_stored_release_and_a_query_answer(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with connect(db_url, POLICY) as s:
        s.materialize("patients", "patients_k2", method="mondrian")
        release = s.risk("patients_k2", release_of="patients")
        answer = s.risk(query="SELECT age, sex, zip FROM patients")
    for r in (release, answer):
        assert r.sample.highest <= 1 / 2  # k = 2: no class below 2 among the released records
        assert r.sample.uniques == 0 and r.population.uniques == 0
    assert release.subject == "release patients_k2 (of patients)"
    assert release.sample.records + (release.suppressed or 0) == 12
    assert answer.subject.startswith("answer of SELECT")


def test_no_quasi_identifiers_no_risk(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with pytest.raises(PolicyError):
        api.risk(db_url, "patients")
    with pytest.raises(PolicyError, match="nope"):
        api.risk(db_url, "patients", qi=["age", "nope"])
    with pytest.raises(PolicyError, match="smaller"):
        api.risk(db_url, "patients", qi=["age"], population=5)


@pytest.mark.slow
def test_adult_as_arx_measures_it(adult_url):
    """ARX's figures for Adult (32,561 rows, '?' one value; QI age, education, marital-status,
    race, sex, native-country; USA population) from ARX's own model classes."""
    qis = ["age", "education", "marital_status", "race", "sex", "native_country"]
    rows = read_adult(DATASETS / "adult" / "adult.data")
    want = independent(rows, [0, 3, 5, 8, 9, 13])
    r = api.risk(adult_url, "adult", qi=qis, population="usa")
    assert r.histogram == want["histogram"]
    assert (r.sample.records, r.sample.classes, r.sample.uniques) == (32_561, want["classes"], want["uniques"])
    assert r.sample.average == pytest.approx(want["average"])
    p = r.population
    assert p.model == "pitman" and p.pitman == pytest.approx(1717186.7122783156, rel=1e-6)
    assert p.zayatz == pytest.approx(9395056.260000257, rel=1e-6) and p.snb is None
