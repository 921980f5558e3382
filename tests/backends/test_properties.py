"""Property tests: for random tables, policies and k/α, the released rows satisfy k and α as an
independent plain-Python checker measures them, hold no identifier, and account for exactly the
rows the WHERE clause selects."""
from __future__ import annotations

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from tests.helpers import assert_alpha_k, load_table

DISEASES = ["flu", "hiv", "cold", "asthma"]
row = st.tuples(st.integers(0, 99), st.sampled_from(["10115", "10117", "20095", "20097", "80331"]),
                st.sampled_from(["f", "m", "F", "f "]), st.sampled_from(DISEASES))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(rows=st.lists(row, min_size=1, max_size=60), k=st.integers(2, 5),
       alpha=st.sampled_from([None, 0.5, 0.75]), protect=st.sampled_from(["all", ["hiv"]]),
       lo=st.integers(0, 60), age_levels=st.sampled_from([[10, 50], [5], [2, 20, 60]]),
       zip_levels=st.sampled_from([[1, 3], [2], [1, 2, 3, 4]]))
def test_release_satisfies_k_and_alpha(db_url, rows, k, alpha, protect, lo, age_levels, zip_levels):
    engine = sa.create_engine(db_url)
    with engine.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS people"))
    engine.dispose()
    load_table(db_url, "people", [("pid", "int"), ("age", "int"), ("zip", "text"), ("sex", "text"),
                                  ("disease", "text")], [(i, *r) for i, r in enumerate(rows)])
    privacy = {"k": k, "max_suppression": 1.0}
    if alpha is not None:
        privacy["alpha"] = {"value": alpha, "protect": protect}
    policy = {"tables": {"people": {
        "identifiers": ["pid"],
        "quasi_identifiers": {"age": {"type": "interval", "levels": age_levels},
                              "zip": {"type": "mask", "levels": zip_levels}, "sex": {"type": "suppress"}},
        "sensitive": {"disease": {}}, "privacy": privacy}}}
    with sqlanon.connect(db_url, policy=policy) as db:
        res = db.execute("SELECT * FROM people WHERE age >= " + str(lo))
    selected = sum(1 for r in rows if r[0] >= lo)
    assert res.columns == ["age", "zip", "sex", "disease"]
    assert res.report.rows_in == selected
    assert len(res.rows) + res.report.rows_suppressed == selected
    assert_alpha_k(res.rows, qi=[0, 1, 2], sens=3, k=k, alpha=alpha,
                   protect=None if protect == "all" else protect)
    # sensitive values are released exactly: a sub-multiset of the selected ones
    from collections import Counter
    assert not Counter(r[3] for r in res.rows) - Counter(r[3] for r in rows if r[0] >= lo)
