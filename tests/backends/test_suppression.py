"""Suppression as the field counts it: withheld rows plus rows released with every quasi-
identifier at the root. Under ``method: auto`` a method that exceeds ``max_suppression`` so is
replaced by Mondrian; a method the policy names is refused. Counted here from the released rows."""
from __future__ import annotations

import pytest

import sqlanon
from tests.backends.test_sabre import ADULT_QIS
from tests.helpers import connect

pytestmark = pytest.mark.slow


def policy(datasets, **privacy) -> dict:
    h = datasets / "adult" / "hierarchies"
    return {"tables": {"adult": {
        "quasi_identifiers": {q: {"type": "taxonomy", "file": str(h / f"adult_hierarchy_{q.replace('_', '-')}.csv")}
                              for q in ADULT_QIS},
        "sensitive": {"income": {}},
        "privacy": {"k": 5, "alpha": {"value": 0.5, "protect": [">50K"]}, **privacy}}}}


SQL = f"SELECT {', '.join(ADULT_QIS)}, income FROM adult WHERE native_country IS NOT NULL"


def at_root(rows: list) -> int:
    return sum(all(v == "*" for v in r[:len(ADULT_QIS)]) for r in rows)


def test_auto_falls_back_to_mondrian_when_alpha_k_fully_generalizes_too_many(adult_url, datasets):
    with connect(adult_url, policy=policy(datasets, max_suppression=1.0)) as db:
        free = db.execute(SQL)
    # (α,k) alone leaves far more than 4 % of the rows with every quasi-identifier at the root
    assert free.report.method == "alpha_k" and at_root(free.rows) == free.report.rows_generalized
    assert at_root(free.rows) > 0.06 * len(free.rows)
    with connect(adult_url, policy=policy(datasets, max_suppression=0.04)) as db:
        res = db.execute(SQL)
        with pytest.raises(sqlanon.errors.SuppressionExceeded):
            db.execute(SQL, method="alpha_k")
    rep = res.report
    assert rep.method == "mondrian" and "Mondrian instead" in rep.rule
    assert rep.rows_generalized == at_root(res.rows) and rep.rows_withheld == 0
    assert rep.rows_suppressed <= 0.04 * len(res.rows)
