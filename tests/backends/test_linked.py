"""Joins of two protected tables, released as one table of joined rows whose classes hold k
persons, not k rows (analyze/linked.py). The checks read the returned rows and the stored
tables only: a class's persons are those whose stored values its labels cover."""
from __future__ import annotations

import random
import re
from collections import Counter

import pytest

import sqlanon
from tests.helpers import about, connect, load_table

ZIPS = ["10115", "10117", "20095", "80331"]
K = 3


def data(seed: int = 11) -> tuple[list[tuple], list[tuple]]:
    """Patients with one to three visits each, and one patient with 25: counted by rows, her
    visits alone would fill classes of k."""
    rng = random.Random(seed)
    patients = [(i, rng.randint(20, 79), rng.choice(ZIPS), rng.choice("mf")) for i in range(150)]
    visits = []
    for pid, *_ in patients:
        for _ in range(25 if pid == 7 else rng.randint(1, 3)):
            visits.append((len(visits), pid, rng.choice(["flu", "cold", "asthma"]), rng.randint(10, 500)))
    return patients, visits


POLICY = {"tables": {
    "patients": {"identifiers": ["id"],
                 "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20, 40]},
                                       "zip": {"type": "mask", "levels": [1, 2, 3, 5]},
                                       "sex": {"type": "suppress"}},
                 "privacy": {"k": K, "max_suppression": 0}},
    "visits": {"identifiers": ["vid", "patient_id"], "sensitive": {"diagnosis": {}}, "insensitive": ["cost"],
               "privacy": {"k": 2, "max_suppression": 0}},
    "details": {"identifiers": ["patient_id"], "sensitive": {"income": {}}, "privacy": {"k": 2}},
}}

JOIN = "FROM patients p JOIN visits v ON v.patient_id = p.id"


@pytest.fixture
def session(db_url):
    patients, visits = data()
    load_table(db_url, "patients", [("id", "int"), ("age", "int"), ("zip", "text"), ("sex", "text")], patients)
    load_table(db_url, "visits", [("vid", "int"), ("patient_id", "int"), ("diagnosis", "text"), ("cost", "int")],
               visits)
    load_table(db_url, "details", [("patient_id", "int"), ("income", "text")],
               [(pid, "high" if pid % 3 == 0 else "low") for pid, *_ in patients])
    load_table(db_url, "wards", [("zip", "text"), ("ward", "text")], [(z, f"w{z[0]}") for z in ZIPS])
    with connect(db_url, policy=POLICY) as s:
        yield s


def covers(label: str, value: object) -> bool:
    """Whether a released label (exact value, ``[lo,hi)``, masked ``101**`` or ``*``) covers a
    stored value."""
    label, text = str(label), str(value)
    if label == "*" or label == text:
        return True
    if label.startswith("["):
        lo, hi = label[1:-1].split(",")
        return float(lo) <= float(text) < float(hi)
    return len(label) == len(text) and all(a in ("*", b) for a, b in zip(label, text))


def selected(where=lambda p, v: True) -> list[tuple[tuple, tuple]]:
    patients, visits = data()
    by_id = {p[0]: p for p in patients}
    return [(by_id[v[1]], v) for v in visits if where(by_id[v[1]], v)]


@pytest.mark.parametrize("method", ["alpha_k", "mondrian"])
def test_every_class_of_a_joined_release_holds_k_persons(session, method):
    res = session.execute(f"SELECT p.age, p.zip, v.diagnosis, v.cost {JOIN} WHERE v.cost > 50", method=method)
    rows = selected(lambda p, v: v[3] > 50)
    # nothing lost: every selected visit is released, its unprotected values exact
    assert Counter((d, c) for _, _, d, c in res.rows) == Counter((v[2], v[3]) for _, v in rows)
    classes = Counter((a, z) for a, z, _, _ in res.rows)
    for (age, zip_), n in classes.items():
        persons = {p[0] for p, _ in rows if covers(age, p[1]) and covers(zip_, p[2])}
        assert len(persons) >= K, (age, zip_, n, persons)
    m = max(Counter(p[0] for p, _ in rows).values())
    assert m > 20 and min(classes.values()) >= (K - 1) * m + 1
    assert res.report.requirement["k"] == (K - 1) * m + 1 and res.report.requirement["persons"]["k"] == K
    checks = {c["criterion"]: c["ok"] for c in res.report.checks}
    assert checks == {"k-anonymity": True, "k-anonymity over persons": True}
    assert any(f"up to {m} row(s)" in n for n in res.report.notes)


def test_a_one_to_one_join_keeps_k(session):
    res = session.execute("SELECT p.age, p.sex, d.income FROM patients p, details d WHERE d.patient_id = p.id "
                          "AND p.age >= 30")
    expected = [p for p in data()[0] if p[1] >= 30]
    assert len(res.rows) == len(expected)
    assert res.report.requirement["k"] == K  # one row per person: k rows are k persons
    for (age, sex), n in Counter((a, s) for a, s, _ in res.rows).items():
        assert n >= K and len([p for p in expected if covers(age, p[1]) and covers(sex, p[3])]) >= K
    assert Counter(i for *_, i in res.rows) == Counter("high" if p[0] % 3 == 0 else "low" for p in expected)


def test_star_and_shared_names_over_a_joined_release(session):
    res = session.execute(f"SELECT * {JOIN} WHERE p.age < 40")
    assert res.columns == ["age", "zip", "sex", "diagnosis", "cost"]  # identifiers never
    assert len(res.rows) == len(selected(lambda p, v: p[1] < 40))


def test_grouping_over_a_joined_release_counts_groups_of_k_persons(session):
    res = session.execute(f"SELECT v.diagnosis, COUNT(*) AS n, SUM(v.cost) AS c {JOIN} GROUP BY v.diagnosis")
    rows = selected()
    m = max(Counter(p[0] for p, _ in rows).values())
    counts = Counter(v[2] for _, v in rows)
    costs = Counter()
    for _, v in rows:
        costs[v[2]] += v[3]
    assert {d: (int(n), int(c)) for d, n, c in res.rows} == {d: (n, costs[d]) for d, n in counts.items()
                                                              if n >= (K - 1) * m + 1}


def test_unqualified_names_and_select_list_names(session):
    res = session.execute("SELECT zip AS z, diagnosis FROM patients JOIN visits ON patient_id = id "
                          "ORDER BY z, diagnosis LIMIT 5")
    assert res.columns == ["z", "diagnosis"] and len(res.rows) == 5
    assert [tuple(r) for r in res.rows] == sorted(tuple(r) for r in res.rows)


def test_the_query_runs_on_the_released_joined_rows(session):
    base = f"SELECT p.zip, v.diagnosis {JOIN} WHERE p.age BETWEEN 30 AND 60"
    released = session.execute(base, method="mondrian").rows
    res = session.execute(f"SELECT DISTINCT p.zip, v.diagnosis {JOIN} WHERE p.age BETWEEN 30 AND 60 "
                          "ORDER BY p.zip, v.diagnosis", method="mondrian")
    assert [tuple(r) for r in res.rows] == sorted(set(map(tuple, released)))


def test_other_tables_join_the_released_rows(session):
    released = session.execute(f"SELECT p.zip, v.diagnosis {JOIN} WHERE p.age > 30", method="mondrian").rows
    res = session.execute(f"SELECT p.zip, v.diagnosis, w.ward {JOIN} JOIN wards w ON w.zip = p.zip "
                          "WHERE p.age > 30", method="mondrian")
    # the wards join the released (generalized) ZIP codes: only those released whole match
    assert Counter(map(tuple, res.rows)) == Counter((z, d, f"w{z[0]}") for z, d in released if z in ZIPS)
    assert res.report.rows_in == len(selected(lambda p, v: p[1] > 30))
    grouped = session.execute("SELECT w.ward, COUNT(*) FROM wards w, patients p, visits v "
                              "WHERE v.patient_id = p.id AND w.zip = p.zip AND p.age > 30 GROUP BY w.ward",
                              method="mondrian")
    counts = Counter(f"w{z[0]}" for z, _ in released if z in ZIPS)
    k_rows = grouped.report.requirement["k"]  # (k−1)·m + 1: a group counts released rows
    assert {w: int(n) for w, n in grouped.rows} == {w: n for w, n in counts.items() if n >= k_rows}


@pytest.mark.parametrize("sql,construct", [
    ("SELECT p.age FROM patients p LEFT JOIN visits v ON v.patient_id = p.id", "LEFT join of protected tables"),
    ("SELECT p.age FROM patients p JOIN visits v ON v.cost = p.age", "join of protected tables without a person link"),
    ("SELECT p.age FROM patients p CROSS JOIN visits v", "join of protected tables without a person link"),
    (f"SELECT p.age {JOIN} WHERE p.id = 3", "identifier column"),
    (f"SELECT p.id, v.cost {JOIN}", "identifier column"),
    (f"SELECT p.age {JOIN} LEFT JOIN wards w ON w.zip = p.zip", "LEFT join of protected tables"),
    ("SELECT p.age FROM patients p JOIN wards visits ON visits.zip = p.zip JOIN visits v ON v.patient_id = p.id",
     "table alias named like a table"),
    (f"SELECT p.age {JOIN} WHERE p.age < (SELECT AVG(age) FROM patients)", "subquery"),
])
def test_joins_of_protected_tables_not_released_are_rejected_by_name(session, sql, construct):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(sql)
    assert e.value.construct == construct


def test_three_tables_linked_by_one_person(session):
    res = session.execute("SELECT v.diagnosis, d.income, COUNT(*) FROM patients p JOIN visits v ON v.patient_id = p.id "
                          "JOIN details d ON d.patient_id = p.id GROUP BY v.diagnosis, d.income")
    rows = selected()
    expected = Counter((v[2], "high" if p[0] % 3 == 0 else "low") for p, v in rows)
    assert {(d, i): int(n) for d, i, n in res.rows} == {g: n for g, n in expected.items() if n >= (K - 1) * 25 + 1}
    assert res.report.table == "details JOIN patients JOIN visits ON details.patient_id = patients.id AND " \
                               "patients.id = visits.patient_id"


def test_slicing_of_a_join_is_rejected(session):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(f"SELECT p.age, v.diagnosis {JOIN}", method="slicing")
    assert e.value.construct == "slicing of a join of protected tables"


@pytest.fixture
def with_victim(db_url):
    """A patient alone in her ZIP code, with two visits."""
    patients, visits = data()
    patients.append((999, 47, "99999", "f"))
    visits += [(len(visits), 999, "asthma", 120), (len(visits) + 1, 999, "asthma", 130)]
    load_table(db_url, "patients", [("id", "int"), ("age", "int"), ("zip", "text"), ("sex", "text")], patients)
    load_table(db_url, "visits", [("vid", "int"), ("patient_id", "int"), ("diagnosis", "text"), ("cost", "int")],
               visits)
    return {"tables": {t: POLICY["tables"][t] for t in ("patients", "visits")}}


def test_differencing_is_checked_on_joined_selections(db_url, with_victim):
    q_all = f"SELECT v.diagnosis, COUNT(*) AS n {JOIN} WHERE p.age >= 20 GROUP BY v.diagnosis"
    q_but = f"SELECT v.diagnosis, COUNT(*) AS n {JOIN} WHERE p.age >= 20 AND p.zip <> '99999' GROUP BY v.diagnosis"
    with connect(db_url, with_victim, catalog=True) as db:
        db.execute(q_all)
        with pytest.raises(sqlanon.QueryRejected, match="differs from release"):
            db.execute(q_but)
        # the same selection written with other aliases and the tables the other way round
        db.execute("SELECT x.diagnosis, COUNT(*) AS n FROM visits x JOIN patients y ON x.patient_id = y.id "
                   "WHERE y.age >= 20 GROUP BY x.diagnosis")
        tables = [r["table_name"] for r in db.catalog.releases()]
        assert set(tables) == {"patients", "visits", "patients JOIN visits ON patients.id = visits.patient_id"}


@pytest.mark.parametrize("first", ["alone", "joined"])
def test_a_join_cannot_difference_a_table_read_alone(db_url, with_victim, first):
    """Filtering visits by a column of patients, or one visit out, and comparing with the
    visits read alone: refused, whichever comes first."""
    alone = "SELECT diagnosis, COUNT(*) AS n FROM visits GROUP BY diagnosis"
    for joined in (f"SELECT v.diagnosis, COUNT(*) AS n {JOIN} WHERE p.zip <> '99999' GROUP BY v.diagnosis",
                   f"SELECT v.diagnosis, COUNT(*) AS n {JOIN} WHERE v.cost <> 130 GROUP BY v.diagnosis"):
        with connect(db_url, with_victim, catalog=True) as db:
            db.catalog.db.engine.dispose()
            with db.catalog.db.engine.begin() as c:  # a fresh log for each pair
                for t in (db.catalog.t.releases, db.catalog.t.selections, db.catalog.t.selection_rows):
                    c.execute(t.delete())
            queries = [alone, joined] if first == "alone" else [joined, alone]
            db.execute(queries[0])
            with pytest.raises(sqlanon.QueryRejected, match="differs from release"):
                db.execute(queries[1])


def test_explain_shows_the_join_in_the_pushdown(session):
    text = session.explain(f"SELECT p.age, v.diagnosis {JOIN}")
    assert "plan: " in text and "JOIN" in text and "sqlanon_person_0" in text


def test_the_decision_algorithm_treats_a_joined_release_as_row_oriented(session):
    # grouped over one table it would be sliced (column-oriented); a join matches whole rows
    chosen = session.plan(f"SELECT v.diagnosis, COUNT(*) {JOIN} GROUP BY v.diagnosis")
    assert chosen.method == "alpha_k" and "a join matches whole rows" in chosen.rule
    counted = re.search(r"about (\d+) row\(s\) selected", chosen.rule)
    assert counted and about(int(counted.group(1)), len(selected()))  # the join's rows, counted with noise
