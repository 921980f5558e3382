"""A table with several rows per person (visits) whose policy names its ``person`` column: every
class of a release holds k persons, not k rows. The checks read the returned rows and the stored
table only: a class's persons are those whose stored values its labels cover."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import sqlalchemy as sa

import sqlanon
from tests.backends.test_linked import covers
from tests.helpers import connect, load_table

K = 3


def visits(seed: int = 5) -> list[tuple]:
    """Patients' attributes repeated on each of their visits; patient 7 has 25 visits."""
    rng = random.Random(seed)
    rows = []
    for pid in range(120):
        age, zip_ = rng.randint(20, 79), rng.choice(["10115", "10117", "20095", "80331"])
        for _ in range(25 if pid == 7 else rng.randint(1, 3)):
            rows.append((len(rows), pid, age, zip_, rng.choice(["flu", "cold", "asthma"])))
    return rows


def policy(person: str | None = "patient_id", **privacy) -> dict:
    spec = {"identifiers": ["vid", "patient_id"],
            "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20, 40]},
                                  "zip": {"type": "mask", "levels": [1, 2, 3, 5]}},
            "sensitive": {"diagnosis": {}}, "privacy": {"k": K, "max_suppression": 0, **privacy}}
    if person is not None:
        spec["person"] = person
    return {"tables": {"visits": spec}}


@pytest.fixture
def url(db_url):
    load_table(db_url, "visits", [("vid", "int"), ("patient_id", "int"), ("age", "int"), ("zip", "text"),
                                  ("diagnosis", "text")], visits())
    return db_url


@pytest.mark.parametrize("method", ["alpha_k", "mondrian"])
def test_every_class_holds_k_persons(url, method):
    with connect(url, policy=policy()) as db:
        res = db.execute("SELECT age, zip, diagnosis FROM visits", method=method)
    rows = visits()
    assert Counter(d for *_, d in res.rows) == Counter(r[4] for r in rows)  # nothing lost
    for (age, zip_), n in Counter((a, z) for a, z, _ in res.rows).items():
        persons = {r[1] for r in rows if covers(age, r[2]) and covers(zip_, r[3])}
        assert len(persons) >= K, (age, zip_, n, persons)
    assert res.report.requirement["k"] == (K - 1) * 25 + 1 and res.report.requirement["persons"]["k"] == K
    assert {c["criterion"]: c["ok"] for c in res.report.checks}["k-anonymity over persons"]


def test_auto_does_not_slice_a_table_of_several_rows_per_person(url):
    with connect(url, policy=policy()) as db:
        chosen = db.plan("SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis")
        assert chosen.method != "slicing" and "person's rows are counted together" in chosen.rule
        with pytest.raises(sqlanon.QueryRejected) as e:
            db.execute("SELECT age, diagnosis FROM visits", method="slicing")
    assert e.value.construct == "slicing of a table with several rows per person"


def test_the_person_column_stays_in_the_database(url):
    with connect(url, policy=policy()) as db:
        res = db.execute("SELECT * FROM visits")
        assert res.columns == ["age", "zip", "diagnosis"]
        with pytest.raises(sqlanon.QueryRejected) as e:
            db.execute("SELECT diagnosis FROM visits WHERE patient_id = 7")
        assert e.value.construct == "identifier column"
        db.materialize("visits", into="visits_released")
    engine = sa.create_engine(url)
    assert [c["name"] for c in sa.inspect(engine).get_columns("visits_released")] == ["age", "zip", "diagnosis"]
    engine.dispose()


def test_person_must_be_an_identifier(url):
    with pytest.raises(sqlanon.PolicyError, match="'person' must name one of the identifier columns"):
        connect(url, policy=policy(person="age"))


def test_a_join_by_another_identifier_still_counts_the_declared_person(url):
    """Labs linked to visits by visit id: the link alone would count visits as persons, and
    patient 7's 25 visits could fill a class; the visits table's ``person`` is counted too."""
    load_table(url, "labs", [("lab_id", "int"), ("vid", "int"), ("result", "text")],
               [(vid, vid, "high" if vid % 3 else "normal") for vid, *_ in visits()])
    pol = policy()
    pol["tables"]["labs"] = {"identifiers": ["lab_id", "vid"], "sensitive": {"result": {}},
                             "privacy": {"k": K, "max_suppression": 0}}
    with connect(url, policy=pol) as db:
        res = db.execute("SELECT v.age, v.zip, l.result FROM visits v JOIN labs l ON l.vid = v.vid",
                         method="mondrian")
    rows = visits()
    assert len(res.rows) == len(rows)
    for age, zip_ in {(a, z) for a, z, _ in res.rows}:
        persons = {r[1] for r in rows if covers(age, r[2]) and covers(zip_, r[3])}
        assert len(persons) >= K, (age, zip_, persons)
    # the persons are named by the policy's identifier columns, never by internal names
    assert sorted(res.report.requirement["persons"]["columns"]) == ["labs.vid", "visits.patient_id"], \
        res.report.requirement["persons"]["columns"]
    assert res.report.requirement["k"] == (K - 1) * 25 + 1
