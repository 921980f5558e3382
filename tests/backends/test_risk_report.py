"""The re-identification risk of a release in its report (``report: {risk: true}``, ``risk=True``)
and in ``check``, on every backend: the figures against an independent computation from the
released rows, the same figures as ``sqlanon risk`` of the stored release, nothing in a refusal."""
from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa

from sqlanon.errors import ReleaseRefused
from tests.backends.test_risk import COLUMNS, POLICY, ROWS
from tests.helpers import connect, load_table

QIS = ["age", "sex", "zip"]


def policy(**report) -> dict:
    spec = {**POLICY["tables"]["patients"], **({"report": report} if report else {})}
    return {"tables": {"patients": spec}}


def released_figures(rows, qi) -> dict:
    """ARX's headline figures from released rows, computed here: classes are rows alike on every
    quasi-identifier as released (text byte for byte); rows with every one '*' left out."""
    kept = [r for r in rows if not all(r[i] == "*" for i in qi)]
    sizes = list(Counter(tuple(r[i] for i in qi) for r in kept).values())
    n = len(kept)
    return {"records": n, "classes": len(sizes), "highest": 1 / min(sizes), "average": len(sizes) / n,
            "uniques": sizes.count(1), "suppressed": len(rows) - n}


def assert_figures(h: dict, want: dict) -> None:
    assert (h["records"], h["classes"], h["sample_uniques"], h["suppressed_records"]) == (
        want["records"], want["classes"], want["uniques"], want["suppressed"])
    for attacker in ("prosecutor", "journalist"):
        assert h[attacker]["highest"] == pytest.approx(want["highest"])
        assert h[attacker]["average"] == pytest.approx(want["average"])
    assert h["marketer"]["average"] == pytest.approx(want["average"])
    assert h["sample_unique_share"] == pytest.approx(want["uniques"] / want["records"])


@pytest.mark.parametrize("method", ["mondrian", "alpha_k", "global"])
def test_an_answer_reports_the_risk_of_its_released_rows(db_url, method):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with connect(db_url, policy()) as s:
        plain = s.execute("SELECT age, sex, zip, disease FROM patients", method=method)
        res = s.execute("SELECT age, sex, zip, disease FROM patients", method=method, risk=True)
    assert plain.report.risk == {} and "re-identification risk" not in str(plain.report)
    h = res.report.risk
    assert h["quasi_identifiers"] == QIS
    assert_figures(h, released_figures(res.rows, [0, 1, 2]))
    assert h["prosecutor"]["highest"] <= 1 / 2  # k = 2 holds on the released rows
    assert "population_uniqueness" not in h  # no population named
    text = str(res.report)
    assert "re-identification risk of the released rows over age, sex, zip" in text
    assert f"prosecutor      highest {100 * h['prosecutor']['highest']:.2f} %" in text
    assert res.report.to_dict()["risk"] == h


def test_the_policy_asks_for_it_with_a_population(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with connect(db_url, policy(risk=True, population=1200)) as s:
        res = s.execute("SELECT * FROM patients", method="mondrian")
    h = res.report.risk
    u = h["population_uniqueness"]
    assert u["population"] == 1200 and u["model"] in ("pitman", "zayatz", "none (no sample uniques)")
    assert "population uniques" in str(res.report)


def test_a_materialized_release_as_risk_measures_it(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with connect(db_url, policy()) as s:
        report = s.materialize("patients", "patients_k2", method="mondrian", risk=True, population="usa")
        again = s.risk("patients_k2", release_of="patients", population="usa")
    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        rows = [tuple(r) for r in c.execute(sa.text("SELECT age, sex, zip FROM patients_k2"))]
    engine.dispose()
    h = report.risk
    assert_figures(h, released_figures(rows, [0, 1, 2]))
    # `sqlanon risk` of the stored release says the same
    assert (h["records"], h["classes"], h["sample_uniques"]) == (again.sample.records, again.sample.classes,
                                                                 again.sample.uniques)
    assert h["prosecutor"]["highest"] == pytest.approx(again.sample.highest)
    assert h["population_uniqueness"]["uniques"] == pytest.approx(again.population.uniques)
    assert h["suppressed_records"] == (again.suppressed or 0)


def test_check_measures_a_stored_table(db_url):
    rows = [("3*", "f", "*"), ("3*", "f", "*"), ("3*", "m", "*"), ("*", "*", "*"), ("*", "*", "*"),
            ("4*", "m", "18*"), ("4*", "m", "18*"), ("4*", "m", "18*")]
    load_table(db_url, "stored", [("age", "text"), ("sex", "text"), ("zip", "text")], rows)
    spec = {"tables": {"stored": {"quasi_identifiers": {q: {"type": "suppress"} for q in QIS},
                                  "privacy": {"k": 2}}}}
    with connect(db_url, spec, catalog=False) as s:
        plain = s.check("stored")
        m = s.check("stored", risk=True)
    assert plain.risk == {} and plain.class_sizes is None
    assert m.class_sizes == {1: 1, 2: 1, 3: 1}
    want = released_figures(rows, [0, 1, 2])
    assert want["suppressed"] == 2
    assert_figures(m.risk, want)


def test_a_refusal_says_nothing_of_the_risk(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    strict = policy(risk=True)
    strict["tables"]["patients"] = {**strict["tables"]["patients"], "privacy": {"k": 2, "min_rows": 1000}}
    with connect(db_url, strict) as s:
        with pytest.raises(ReleaseRefused) as refused:
            s.execute("SELECT age, sex, zip FROM patients", method="mondrian", risk=True)
    message = refused.value.message
    assert "risk" not in message and "%" not in message and "unique" not in message


def test_explain_lists_the_statement_that_counts_class_sizes(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS)
    with connect(db_url, policy()) as s:
        without = s.explanation("SELECT age, sex, zip FROM patients", method="mondrian")
        with_risk = s.explanation("SELECT age, sex, zip FROM patients", method="mondrian", risk=True)
    assert len(with_risk.statements) == len(without.statements) + 1


def test_a_sliced_release_says_why_it_has_no_figures(db_url):
    load_table(db_url, "patients", COLUMNS, ROWS * 4)
    with connect(db_url, policy(risk=True)) as s:
        res = s.execute("SELECT age, sex, zip, disease FROM patients", method="slicing")
    assert res.report.risk == {}
    assert any(n.startswith("re-identification risk not measured: a sliced release") for n in res.report.notes)


def test_fully_suppressed_rows_are_left_out_alike(db_url):
    """Rows released with every quasi-identifier '*' are left out of the report's figures and of
    `risk --release-of` alike (on SQLite the release's columns have no declared type)."""
    load_table(db_url, "patients", COLUMNS, ROWS * 2 + [(90, "m", "99999", "flu"), (17, "f", "77777", "cold")])
    spec = policy()
    spec["tables"]["patients"] = {**spec["tables"]["patients"], "privacy": {"k": 3, "max_suppression": 0.5}}
    with connect(db_url, spec) as s:
        report = s.materialize("patients", "patients_k3", method="mondrian", risk=True)
        again = s.risk("patients_k3", release_of="patients")
    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        rows = [tuple(r) for r in c.execute(sa.text("SELECT age, sex, zip FROM patients_k3"))]
    engine.dispose()
    want = released_figures(rows, [0, 1, 2])
    assert want["suppressed"] > 0
    assert_figures(report.risk, want)
    assert (again.sample.records, again.suppressed) == (want["records"], want["suppressed"])
