"""`materialize`: a protected table anonymized once, inside the database, into a new table (and
a view), checked here on the stored rows; an existing table is never replaced."""
from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

import sqlanon
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.cli.test_cli import sqlanon as run
from tests.helpers import assert_alpha_k, connect, load_table


def stored(db_url: str, name: str) -> tuple[list[str], list[tuple]]:
    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        res = c.execute(sa.text(f"SELECT * FROM {name}"))
        out = list(res.keys()), [tuple(r) for r in res]
    engine.dispose()
    return out


def test_a_release_is_stored_with_its_view_and_holds_the_models(db_url):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    with connect(db_url, policy=PATIENT_POLICY) as db:
        report = db.materialize("patients", "patients_anon", view="patients_view")
    columns, rows = stored(db_url, "patients_anon")
    assert columns == ["age", "sex", "zip", "disease", "nationality"]  # no identifier
    assert len(rows) == report.rows_released and report.rows_in == len(PATIENTS)
    assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
    assert sorted(stored(db_url, "patients_view")[1], key=str) == sorted(rows, key=str)


def test_where_selects_and_existing_names_are_refused(db_url):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    with connect(db_url, policy=PATIENT_POLICY) as db:
        report = db.materialize("patients", "older", where="age >= 60")
        assert report.rows_in == sum(1 for p in PATIENTS if p[1] >= 60)
        before = stored(db_url, "older")
        with pytest.raises(sqlanon.QueryRejected, match="existing table"):
            db.materialize("patients", "older")
        with pytest.raises(sqlanon.QueryRejected, match="existing table"):
            db.materialize("patients", "other", view="older")
        with pytest.raises(sqlanon.PolicyError, match="only a protected table"):
            db.materialize("older", "again")
        with pytest.raises(sqlanon.QueryRejected, match="identifier column"):
            db.materialize("patients", "named", where="name = 'Hans Spargel'")
    assert stored(db_url, "older") == before
    assert "other" not in sa.inspect(sa.create_engine(db_url)).get_table_names()


def test_the_cli_materializes(db_url, tmp_path):
    import yaml

    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    policy = tmp_path / "policy.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")
    out = run("materialize", "patients", "--into", "released", "--db", db_url, "--policy", str(policy), "--k", "3")
    assert out.returncode == 0, out.stderr
    assert "released:" in out.stdout and "k-anonymity" in out.stdout
    _, rows = stored(db_url, "released")
    assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=3, alpha=0.5)
    # another method and a model the policy does not ask for, given on the command line
    out = run("materialize", "patients", "--into", "diverse", "--db", db_url, "--policy", str(policy),
              "--method", "mondrian", "--l", "2")
    assert out.returncode == 0, out.stderr
    assert "method mondrian" in out.stdout and "l-diversity" in out.stdout
    _, rows = stored(db_url, "diverse")
    assert all(len({r[3] for r in rows if r[:3] == c}) >= 2 for c in {r[:3] for r in rows})
    out = run("materialize", "patients", "--into", "weaker", "--db", db_url, "--policy", str(policy), "--k", "1")
    assert out.returncode == 2 and "weaker" in out.stderr


@pytest.mark.slow
def test_adult_round_trip_materialize_then_check(adult_url, datasets, tmp_path):
    """The whole of Adult stored once (Mondrian, k=5, l=3 on occupation), then measured as it is
    stored by ``sqlanon check`` — which knows nothing of how it was made — and by the plain-Python
    checker; a table that was not anonymized fails the same check."""
    h = datasets / "adult" / "hierarchies"
    qis = ["age", "education", "marital_status", "sex"]
    pol = {"tables": {"adult": {
        "quasi_identifiers": {q: {"type": "taxonomy", "file": str(h / f"adult_hierarchy_{q.replace('_', '-')}.csv")}
                              for q in qis},
        "sensitive": {"occupation": {}},
        "privacy": {"method": "mondrian", "k": 5, "l": 3, "max_suppression": 0}}}}
    with connect(adult_url, policy=pol) as db:
        report = db.materialize("adult", "adult_anon")
    assert report.rows_in == report.rows_released == 32561
    columns, rows = stored(adult_url, "adult_anon")
    assert columns == qis + ["occupation"]
    assert_alpha_k(rows, qi=[0, 1, 2, 3], sens=4, k=5, alpha=None)
    assert min(len({r[4] for r in rows if r[:4] == c}) for c in {r[:4] for r in rows}) >= 3
    args = ["--db", adult_url, "--qi", ",".join(qis), "--sensitive", "occupation", "--k", "5", "--l", "3"]
    out = run("check", "adult_anon", *args, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert all(c["ok"] for c in json.loads(out.stdout)["checks"])
    assert run("check", "adult", *args).returncode == 1  # the raw table is no release
