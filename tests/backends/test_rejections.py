"""Queries that must be rejected, each with the construct the error names."""
from __future__ import annotations

import pytest

import sqlanon
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.helpers import load_table

REJECT = [
    ("SELECT name FROM patients", "identifier column"),
    ("SELECT age FROM patients WHERE name = 'Sylvia Sauer'", "identifier column"),
    ("SELECT UPPER(name) FROM patients", "identifier column"),
    ("SELECT age FROM patients p JOIN wards w ON w.ward = p.nationality", "join"),
    ("SELECT age FROM patients WHERE age < (SELECT AVG(age) FROM patients)", "subquery"),
    ("WITH x AS (SELECT age FROM patients) SELECT age FROM x", "common table expression"),
    ("SELECT age FROM patients UNION SELECT age FROM patients", "set operation"),
    ("SELECT age, ROW_NUMBER() OVER (ORDER BY age) FROM patients", "window function"),
    ("SELECT age FROM patients; SELECT 1", "several statements"),
    ("DELETE FROM patients", "DELETE statement"),
    ("UPDATE patients SET age = 1", "UPDATE statement"),
    ("DROP TABLE patients", "DROP statement"),
    ("SELECT age FROM patients /*!50000 UNION SELECT name FROM patients */", "MySQL executable comment"),
    ("SELECT secret_fn(age) FROM patients", "function SECRET_FN"),
    ("SELECT age FROM nosuchtable", "unknown table"),
    ("SELECT age, nosuchcol FROM patients", "unresolved column"),
    ("SELEC age FROM patients", "unparsable SQL"),
    ("", "empty statement"),
    ("SELECT AVG(age) FROM patients", "AVG over generalized column"),
    ("SELECT age + 1 FROM patients", "ADD over generalized column"),
]


@pytest.fixture
def session(db_url):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    load_table(db_url, "wards", [("ward", "text"), ("floor", "int")], [("deutsch", 1)])
    with sqlanon.connect(db_url, policy=PATIENT_POLICY) as s:
        yield s


@pytest.mark.parametrize("sql,construct", REJECT, ids=[c for _, c in REJECT])
def test_rejected(session, sql, construct):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(sql)
    assert construct in e.value.construct


def test_unprotected_tables_pass_through(session):
    res = session.execute("SELECT ward, floor FROM wards")
    assert res.rows == [("deutsch", 1)] and res.report.table is None


def test_unknown_function_rejected_in_pass_through(session):
    with pytest.raises(sqlanon.QueryRejected, match="function"):
        session.execute("SELECT secret_fn(floor) FROM wards")


def test_explain_shows_statements_without_running(session):
    text = session.explain("SELECT age, disease FROM patients WHERE age > 10")
    assert "CREATE TEMPORARY TABLE" in text and "alpha_k" in text


def test_no_temp_tables_left_after_success_and_failure(session):
    session.execute("SELECT age, zip, disease FROM patients")
    with pytest.raises(sqlanon.ReleaseRefused):
        session.execute("SELECT age FROM patients WHERE disease = 'Grippe'")  # every class 100 % Grippe
    raw = session.db.raw_connection()
    try:
        cur = raw.cursor()
        left = [t for t in session.db.backend.list_temp_tables(cur) if t.startswith("sqlanon_")]
    finally:
        raw.close()
    assert left == []
