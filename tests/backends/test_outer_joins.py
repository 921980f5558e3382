"""Outer joins of a protected table with unprotected tables run on the released rows (the shapes
that push nothing down are in test_shapes.py). Conditions over the protected table alone are
pushed down where that equals filtering after the join: then the answer is the query over the
release of that selection, stored here with ``materialize --where`` (Mondrian is deterministic)."""
from __future__ import annotations

import pytest

import sqlanon
from tests.backends.test_shapes import POLICY, K, direct_rows, load, normal
from tests.helpers import assert_alpha_k, connect

FLU = "disease = 'flu'"

# (query through sqlanon, the same query over the stored release of the flu rows `rel_flu`)
PUSHED = [
    # the preserved side's WHERE selects its rows
    ("SELECT p.zip, d.district FROM people p LEFT JOIN districts d ON d.zip = p.zip AND d.district = 'Berlin' "
     "WHERE p.disease = 'flu'",
     "SELECT p.zip, d.district FROM rel_flu p LEFT JOIN districts d ON d.zip = p.zip AND d.district = 'Berlin'"),
    # the NULL-extended side's own ON condition selects the rows that may match
    ("SELECT d.zip, p.disease FROM districts d LEFT JOIN people p ON p.zip = d.zip AND p.disease = 'flu'",
     "SELECT d.zip, p.disease FROM districts d LEFT JOIN rel_flu p ON p.zip = d.zip"),
    ("SELECT d.zip, p.zip FROM people p RIGHT JOIN districts d ON p.disease = 'flu' AND d.zip = p.zip",
     "SELECT d.zip, p.zip FROM rel_flu p RIGHT JOIN districts d ON d.zip = p.zip"),
    ("SELECT d.zip, p.disease FROM districts d LEFT JOIN people p ON p.disease = 'flu'",
     "SELECT d.zip, p.disease FROM districts d LEFT JOIN rel_flu p ON 1 = 1"),
    # no column of the protected table is read: the flu rows are released all the same
    ("SELECT COUNT(*) FROM districts d LEFT JOIN people p ON p.disease = 'flu'",
     "SELECT COUNT(*) FROM districts d LEFT JOIN rel_flu p ON 1 = 1"),
]


#: the conditions above read the sensitive attribute: pushed down only where the policy allows it
STORED = {"tables": {"people": {**POLICY["tables"]["people"], "privacy": {
    **POLICY["tables"]["people"]["privacy"], "sensitive_predicates": "stored"}}}}


@pytest.fixture
def session(db_url):
    load(db_url)
    with connect(db_url, policy=STORED) as db:
        db.materialize("people", "rel")
        db.materialize("people", "rel_flu", where=FLU)
        yield db


def test_the_stored_releases_satisfy_the_policy(db_url, session):
    for name in ("rel", "rel_flu"):
        assert_alpha_k(direct_rows(db_url, f"SELECT zip, disease FROM {name}"), qi=[0], sens=1, k=K, alpha=None)


@pytest.mark.parametrize("through,direct", PUSHED, ids=[s[0][:70] for s in PUSHED])
def test_a_pushed_condition_selects_the_released_rows(db_url, session, through, direct):
    answer = session.execute(through)
    assert normal(answer.rows) == normal(direct_rows(db_url, direct))
    flu = direct_rows(db_url, "SELECT COUNT(*) FROM people WHERE " + FLU)[0][0]
    assert answer.report.rows_in == flu and "flu" in answer.report.predicate


def test_a_condition_over_the_sensitive_attribute_runs_on_the_released_rows(db_url, session):
    """By default a WHERE over a sensitive attribute is no selection: the whole table is
    anonymized, and the condition filters the released rows (it decides nothing on values the
    answer does not show)."""
    with connect(db_url, policy=POLICY) as db:
        answer = db.execute("SELECT p.zip, p.disease FROM people p WHERE p.disease = 'flu'")
    expected = direct_rows(db_url, "SELECT zip, disease FROM rel WHERE disease = 'flu'")
    assert normal(answer.rows) == normal(expected) and expected
    assert answer.report.predicate is None and answer.report.rows_in == 150


def test_a_where_over_the_null_extended_side_runs_after_the_join(db_url, session):
    """``WHERE p.disease = 'flu' OR p.disease IS NULL`` must see the NULL-extended rows: it is
    not pushed down, and the whole table is released."""
    answer = session.execute("SELECT d.zip, p.disease FROM districts d LEFT JOIN people p ON p.zip = d.zip "
                             "WHERE p.disease = 'flu' OR p.disease IS NULL")
    expected = direct_rows(db_url, "SELECT d.zip, p.disease FROM districts d LEFT JOIN rel p ON p.zip = d.zip "
                                   "WHERE p.disease = 'flu' OR p.disease IS NULL")
    assert normal(answer.rows) == normal(expected) and any(d is None for _, d in expected)
    assert answer.report.rows_in == 150 and answer.report.predicate is None


def test_each_released_row_comes_back_once_and_no_other(session):
    """The join reads the released table only: rows a method withholds are not in it, so they
    cannot come back, not even NULL-extended; each released row appears once (zips are unique
    in districts)."""
    answer = session.execute("SELECT p.zip, p.disease, d.district FROM people p LEFT JOIN districts d "
                             "ON d.zip = p.zip")
    assert len(answer.rows) == answer.report.rows_released
    assert_alpha_k(answer.rows, qi=[0], sens=1, k=K, alpha=None)


def test_groups_count_released_rows_not_null_extended_ones(db_url, session):
    """Only Berlin's labels may match below: the other districts' groups (Hamburg, München, '?'
    for the labels of several) are all NULL-extended rows, and a group needs k released rows."""
    through = ("SELECT d.district, COUNT(p.zip), COUNT(*) FROM districts d LEFT JOIN people p ON p.zip = d.zip "
               "AND d.district = 'Berlin' GROUP BY d.district")
    padded = direct_rows(db_url, through.replace("people p", "rel p") + f" HAVING COUNT(*) >= {K}")
    assert {d for d, n, _ in padded if n == 0} == {"?", "Hamburg", "München"}
    answer = session.execute(through)
    assert normal(answer.rows) == normal(r for r in padded if r[1] >= K)


def test_full_join_where_the_database_has_it(db_url, session, backend):
    through = ("SELECT d.zip, p.zip, p.disease FROM people p FULL OUTER JOIN districts d ON d.zip = p.zip "
               "AND d.district = 'Hamburg'")
    if backend == "mysql":
        with pytest.raises(sqlanon.QueryRejected, match="has no FULL OUTER JOIN") as e:
            session.execute(through)
        assert e.value.construct == "FULL OUTER join"
        return
    expected = direct_rows(db_url, through.replace("people p", "rel p"))
    answer = session.execute(through)
    assert normal(answer.rows) == normal(expected)
    assert any(r[0] is None for r in expected) and any(r[1] is None for r in expected)


@pytest.mark.parametrize("sql,construct", [
    ("SELECT d.zip FROM districts d LEFT JOIN people p ON p.zip = d.zip AND p.pid = 3", "identifier column"),
    ("SELECT d.zip FROM districts d LEFT JOIN people p ON p.zip = d.zip WHERE p.pid IS NULL", "identifier column"),
    ("SELECT d.zip FROM districts d LEFT JOIN people p USING (zip)", "JOIN … USING"),
    ("SELECT p.zip FROM people p NATURAL LEFT JOIN districts d", "NATURAL join"),
    ("SELECT p.zip FROM people p NATURAL JOIN districts d", "NATURAL join"),
    ("SELECT p.zip FROM districts d LEFT JOIN districts e JOIN people p ON p.zip = e.zip ON e.zip = d.zip",
     "nested join"),
    ("SELECT d.zip FROM districts d LEFT JOIN people p ON p.zip = d.zip "
     "WHERE p.visits < (SELECT AVG(visits) FROM people)", "subquery"),
    ("SELECT d.zip FROM districts d LEFT JOIN people p ON p.zip = d.zip "
     "AND p.visits < (SELECT AVG(visits) FROM people)", "subquery"),
    ("SELECT p.zip FROM people p LEFT JOIN people q ON q.zip = p.zip", "self-join of a protected table"),
    # the preserved side's ON condition runs on the released labels
    ("SELECT p.zip FROM people p LEFT JOIN districts d ON d.zip = p.zip AND p.zip + 1 > 2",
     "ADD over generalized column"),
    ("SELECT p.zip FROM people p STRAIGHT_JOIN districts d ON d.zip = p.zip", "STRAIGHT_JOIN"),
])
def test_outer_joins_not_rewritten_are_rejected_by_name(session, sql, construct):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(sql)
    assert e.value.construct == construct
