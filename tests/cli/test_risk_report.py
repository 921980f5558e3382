"""`--risk` on `query`, `materialize`, `explain` and `check`: the report's re-identification risk in
words and in JSON, computed on the released rows; a refusal ends in one line without it."""
from __future__ import annotations

import json

import yaml

from tests.backends.test_risk import COLUMNS, POLICY, ROWS
from tests.backends.test_risk_report import released_figures
from tests.cli.test_cli import sqlanon as run
from tests.helpers import load_table


def _policy(tmp_path, **privacy) -> str:
    spec = {**POLICY["tables"]["patients"], "privacy": {**POLICY["tables"]["patients"]["privacy"], **privacy}}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({"tables": {"patients": spec}}))
    return str(path)


def test_query_and_materialize_report_the_risk(db_url, tmp_path):
    load_table(db_url, "patients", COLUMNS, ROWS)
    policy = _policy(tmp_path)
    out = run("query", "SELECT age, sex, zip FROM patients", "--db", db_url, "--policy", policy, "--method",
              "mondrian", "--risk", "--population", "1200", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    h = doc["report"]["risk"]
    want = released_figures([tuple(r) for r in doc["rows"]], [0, 1, 2])
    assert (h["records"], h["classes"], h["sample_uniques"]) == (want["records"], want["classes"], want["uniques"])
    assert h["population_uniqueness"]["population"] == 1200
    text = run("materialize", "patients", "--into", "patients_k2", "--db", db_url, "--policy", policy, "--method",
               "mondrian", "--risk")
    assert text.returncode == 0, text.stderr
    assert "re-identification risk of the released rows over age, sex, zip" in text.stdout
    assert "marketer" in text.stdout and "population uniques" not in text.stdout
    stored = run("check", "patients_k2", "--db", db_url, "--qi", "age,sex,zip", "--k", "2", "--risk")
    assert stored.returncode == 0, stored.stderr
    assert "prosecutor      highest" in stored.stdout
    as_json = json.loads(run("check", "patients_k2", "--db", db_url, "--qi", "age,sex,zip", "--risk",
                             "--format", "json").stdout)
    assert as_json["risk"]["prosecutor"]["highest"] <= 0.5
    plain = json.loads(run("check", "patients_k2", "--db", db_url, "--qi", "age,sex,zip", "--format", "json").stdout)
    assert "risk" not in plain


def test_a_refusal_is_one_line_without_figures(db_url, tmp_path):
    load_table(db_url, "patients", COLUMNS, ROWS)
    out = run("query", "SELECT age, sex, zip FROM patients", "--db", db_url, "--policy",
              _policy(tmp_path, min_rows=1000), "--method", "mondrian", "--risk")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "risk" not in out.stderr and "%" not in out.stderr
