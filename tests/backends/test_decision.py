"""The decision algorithm of John's Rostock thesis (§5, Figure 23) on UCI Adult: its query classes and
the method each must get, for the models a policy asks for."""
from __future__ import annotations

import pytest

import sqlanon
from tests.helpers import connect

NUMERIC = {"age": {"type": "interval", "levels": [5, 10, 20]},
           "education_num": {"type": "interval", "levels": [4, 8]},
           "hours_per_week": {"type": "interval", "levels": [10, 20, 40]}}
MIXED = {**NUMERIC, "sex": {"type": "suppress"}, "race": {"type": "suppress"}}

ALPHA = {"k": 2, "alpha": {"value": 0.5, "attribute": "income"}, "max_suppression": 1.0}
K_ONLY = {"k": 5}
T = {"k": 5, "t": {"value": 0.2, "attribute": "occupation"}}
L = {"k": 5, "l": {"value": 3, "attribute": "occupation"}}
L_RECURSIVE = {"k": 5, "l": {"value": 3, "variant": "recursive", "c": 2, "attribute": "occupation"}}

ABB30 = "SELECT * FROM adult WHERE age BETWEEN 30 AND 50"   # 16,390 rows
ABB40 = "SELECT * FROM adult WHERE age BETWEEN 80 AND 83"   # 60 rows
ABB41 = "SELECT * FROM adult WHERE age = 65"                 # 178 rows
GROUPED = "SELECT education_num, COUNT(*) FROM adult GROUP BY education_num"
PROJECTION = "SELECT age FROM adult WHERE age = 30"

CASES = [
    # query, QIs, privacy, method, words the rule must contain
    (ABB30, MIXED, ALPHA, "alpha_k", "α is asked"),          # Table 10: the thesis's own (α,k) runs
    (ABB40, MIXED, ALPHA, "alpha_k", "rows not counted"),
    (ABB41, MIXED, K_ONLY, "alpha_k", "row(s) selected (counted with noise)"),  # about 178
    (ABB30, MIXED, K_ONLY, "mondrian", "many rows"),
    (ABB30, MIXED, T, "sabre", "t-closeness"),
    (ABB40, MIXED, T, "sabre", "rows not counted"),
    (ABB30, NUMERIC, L, "vmdav", "distinct l over numeric"),
    (ABB30, MIXED, L, "mondrian", "l-diversity"),
    (ABB30, NUMERIC, L_RECURSIVE, "mondrian", "l-diversity"),
    (GROUPED, MIXED, K_ONLY, "slicing", "complex, column-oriented"),
    (GROUPED, MIXED, L, "slicing", "groups or aggregates"),
    (PROJECTION, MIXED, K_ONLY, "slicing", "simple, column-oriented"),
    (GROUPED, MIXED, ALPHA, "alpha_k", "slicing does not build alpha"),
    (GROUPED, MIXED, T, "sabre", "slicing does not build t"),
    # Figure 31: a whole-table average selects the rows inside the pushdown
    ("SELECT * FROM adult WHERE age < (SELECT AVG(age) FROM adult)", MIXED, K_ONLY, "mondrian", "many rows"),
]


def policy(qis: dict, privacy: dict) -> dict:
    return {"tables": {"adult": {"quasi_identifiers": qis, "sensitive": {"income": {}, "occupation": {}},
                                 "insensitive": ["workclass", "relationship"], "privacy": privacy}}}



@pytest.mark.parametrize("sql,qis,privacy,method,words", CASES)
def test_the_seeds_query_classes_get_their_method(adult_url, sql, qis, privacy, method, words):
    with connect(adult_url, policy=policy(qis, privacy)) as db:
        chosen = db.plan(sql)
    assert chosen.method == method, chosen.rule
    assert words in chosen.rule


def test_few_rows_is_a_policy_setting(adult_url):
    with connect(adult_url, policy=policy(MIXED, {**K_ONLY, "few_rows": 20_000})) as db:
        assert db.plan(ABB30).method == "alpha_k"
    with connect(adult_url, policy=policy(MIXED, {**K_ONLY, "method": "mondrian"})) as db:
        assert db.plan(ABB40).rule == "policy names method mondrian"


def test_queries_without_a_protected_table_pass_through_and_the_plan_is_explained(adult_url):
    with connect(adult_url, policy=policy(MIXED, K_ONLY)) as db:
        # Figure 20: a recursive CTE that reads no table
        assert db.plan("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 100) "
                       "SELECT SUM(n) FROM t") is None
        text = db.explain(GROUPED, analyze=True)
    assert "plan: slicing" in text and "complex, column-oriented" in text


@pytest.mark.parametrize("sql,construct", [
    # Figure 22: a subquery in HAVING, after anonymization (it would read the raw table there)
    ("SELECT education, COUNT(*) FROM adult GROUP BY education HAVING AVG(education_num) > "
     "(SELECT AVG(education_num) FROM adult)", "subquer"),
    # Figure 19: a join (with itself here: one protected table twice)
    ("SELECT a.age FROM adult a JOIN adult b ON a.age = b.age", "join"),
])
def test_shapes_not_yet_rewritten_are_rejected_by_name(adult_url, sql, construct):
    with connect(adult_url, policy=policy(MIXED, K_ONLY)) as db:
        with pytest.raises(sqlanon.QueryRejected, match=f"(?i){construct}"):
            db.plan(sql)
