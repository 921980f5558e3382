"""Joins of a protected table with unprotected tables: the protected rows are selected and
anonymized in the pushdown, the join runs afterwards on the released rows."""
from __future__ import annotations

import random
from collections import Counter

import pytest

import sqlanon
from tests.helpers import about, connect, load_table

ZIPS = {"10115": "Mitte", "10117": "Mitte", "20095": "Altstadt", "80331": "Altstadt"}


def people(n: int = 120) -> list[tuple]:
    """Every (age, zip) pair twice: k=2 holds on the raw values, so the release is exact and
    the join's result can be computed here from the stored rows."""
    rng = random.Random(5)
    rows = []
    for i in range(n // 2):
        age, zip_ = rng.randint(20, 60), rng.choice(sorted(ZIPS))
        rows += [(2 * i, age, zip_, rng.choice(["flu", "cold"])), (2 * i + 1, age, zip_, rng.choice(["flu", "cold"]))]
    return rows


POLICY = {"tables": {"people": {
    "identifiers": ["pid"],
    "quasi_identifiers": {"age": {"type": "interval", "levels": [10, 40]}, "zip": {"type": "mask", "levels": [2, 5]}},
    "sensitive": {"disease": {}},
    "privacy": {"k": 2, "method": "alpha_k", "max_suppression": 0}}}}


@pytest.fixture
def session(db_url):
    load_table(db_url, "people", [("pid", "int"), ("age", "int"), ("zip", "text"), ("disease", "text")], people())
    load_table(db_url, "districts", [("zip", "text"), ("district", "text")], sorted(ZIPS.items()))
    with connect(db_url, policy=POLICY) as s:
        yield s


def test_join_runs_on_the_released_rows(session):
    rows = people()
    res = session.execute("SELECT p.age, p.zip, d.district FROM people p JOIN districts d ON d.zip = p.zip "
                          "WHERE p.age >= 40 AND d.district <> 'Altstadt'")
    expected = Counter((str(a), z, ZIPS[z]) for _, a, z, _ in rows if a >= 40 and ZIPS[z] != "Altstadt")
    assert Counter((str(a), z, d) for a, z, d in res.rows) == expected
    # only the conjunct over the protected table was pushed down
    assert about(res.report.rows_in, sum(1 for r in rows if r[1] >= 40))
    assert res.report.method == "alpha_k"


def test_star_keeps_the_other_tables_columns_and_never_identifiers(session):
    res = session.execute("SELECT * FROM districts d JOIN people p ON p.zip = d.zip")
    assert "pid" not in res.columns and "district" in res.columns and "disease" in res.columns
    assert len(res.rows) == len(people())


def test_grouping_over_a_join(session):
    res = session.execute("SELECT d.district, COUNT(*) FROM people p JOIN districts d ON d.zip = p.zip "
                          "GROUP BY d.district")
    assert dict(res.rows) == dict(Counter(ZIPS[z] for _, _, z, _ in people()))


@pytest.mark.parametrize("sql,construct", [
    ("SELECT p.age FROM people p NATURAL JOIN districts d", "NATURAL join"),
    ("SELECT p.age FROM people p JOIN districts d USING (zip)", "JOIN … USING"),
    ("SELECT p.age FROM people p JOIN people q ON q.age = p.age", "self-join of a protected table"),
    ("SELECT p.age FROM people p JOIN districts d ON d.zip = p.zip "
     "WHERE d.district = 'Mitte' OR p.age < (SELECT AVG(age) FROM people)", "subquery"),
    ("SELECT p.age FROM people p JOIN districts d ON d.zip = p.zip AND p.pid = 3", "identifier column"),
])
def test_joins_not_rewritten_are_rejected_by_name(session, sql, construct):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(sql)
    assert e.value.construct == construct


@pytest.mark.parametrize("join", ["JOIN", "LEFT JOIN", "RIGHT JOIN"])
def test_a_join_is_planned_as_a_row_query(db_url, join):
    load_table(db_url, "people", [("pid", "int"), ("age", "int"), ("zip", "text"), ("disease", "text")], people())
    load_table(db_url, "districts", [("zip", "text"), ("district", "text")], sorted(ZIPS.items()))
    auto = {"tables": {"people": {**POLICY["tables"]["people"], "privacy": {"k": 2, "max_suppression": 0}}}}
    with connect(db_url, policy=auto) as db:
        chosen = db.plan(f"SELECT d.district, COUNT(*) FROM people p {join} districts d ON d.zip = p.zip "
                         "GROUP BY d.district")
    assert chosen.method == "alpha_k" and "joined within the database" in chosen.rule


def test_a_whole_table_average_under_another_alias_and_with_a_join(session):
    rows = people()
    mean = sum(r[1] for r in rows) / len(rows)
    alone = session.execute("SELECT * FROM people AS x WHERE x.age < (SELECT AVG(age) FROM people)")
    joined = session.execute("SELECT * FROM people AS x JOIN districts d ON d.zip = x.zip "
                             "WHERE x.age < (SELECT AVG(age) FROM people) AND d.district = 'Mitte'")
    younger = [r for r in rows if r[1] < mean]
    assert about(alone.report.rows_in, len(younger)) and about(joined.report.rows_in, len(younger))
    assert len(alone.rows) == len(younger)
    assert len(joined.rows) == sum(1 for r in younger if ZIPS[r[2]] == "Mitte")
    assert "district" in joined.columns and "pid" not in joined.columns


def test_two_columns_of_one_name_with_and_without_distinct(session):
    plain = session.execute("SELECT d.zip, p.zip FROM districts d JOIN people p ON p.zip = d.zip LIMIT 5")
    distinct = session.execute("SELECT DISTINCT d.zip, p.zip FROM districts d JOIN people p ON p.zip = d.zip")
    assert len(plain.rows) == 5 and all(a == b for a, b in plain.rows)
    assert sorted(distinct.rows) == sorted((z, z) for z in ZIPS)
