"""`sqlanon discover` and `sqlanon risk`: the commands print what the library measures, the
proposed policy loads and serves, errors end in one line and exit 2."""
from __future__ import annotations

import json

import yaml

from sqlanon.policy import load_policy
from tests.backends.test_discover import COLUMNS, people
from tests.cli.test_cli import sqlanon as run
from tests.helpers import load_table


def test_discover_prints_text_json_and_a_policy_that_loads(db_url, tmp_path):
    load_table(db_url, "people", COLUMNS, people())
    text = run("discover", "people", "--db", db_url, "--max-size", "2", "--threshold", "1", "--workers", "3")
    assert text.returncode == 0, text.stderr
    assert "a, b: unique, singles out 200 rows" in text.stdout
    assert "id: unique" in text.stdout
    doc = json.loads(run("discover", "people", "--db", db_url, "--max-size", "2", "--format", "json").stdout)
    assert {"columns": ["a", "b"], "classes": 200, "uniques": 200, "unique": True} in doc["combinations"]
    proposal = run("discover", "people", "--db", db_url, "--max-size", "2", "--qi", "a,c,zip", "--format", "yaml")
    assert proposal.returncode == 0, proposal.stderr
    path = tmp_path / "policy.yaml"
    path.write_text(proposal.stdout)
    policy = load_policy(path)
    assert [q.column for q in policy.tables["people"].quasi_identifiers] == ["a", "c", "zip"]
    # the proposal serves as it stands: a query through it, as the login the policy protects
    served = run("query", "SELECT a, c, zip FROM people", "--db", db_url, "--policy", str(path), "--format", "json")
    assert served.returncode == 0, served.stderr
    assert yaml.safe_load(proposal.stdout)["tables"]["people"]["privacy"] == {"k": 5}


def test_risk_of_a_table_and_of_a_query(db_url, tmp_path):
    load_table(db_url, "people", COLUMNS, people())
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({"tables": {"people": {
        "identifiers": ["id", "email", "phone", "name"],
        "quasi_identifiers": {"a": {"type": "interval", "levels": [2, 4]}, "c": {"type": "suppress"}},
        "privacy": {"k": 5}}}}))
    raw = run("risk", "people", "--db", db_url, "--policy", str(path), "--population", "usa", "--format", "json")
    assert raw.returncode == 0, raw.stderr
    doc = json.loads(raw.stdout)
    # (a, c): a = i // 20 and c = i % 3 give 10 × 3 classes of 6 or 7 rows
    assert doc["records"] == 200 and doc["classes"] == 30 and doc["sample_uniques"] == 0
    assert doc["prosecutor"]["highest"] == 1 / 6 and doc["population_uniqueness"]["population"] == 317_238_626
    answer = run("risk", "--query", "SELECT a, c FROM people", "--db", db_url, "--policy", str(path))
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.startswith("answer of SELECT a, c FROM people: 200 records")
    assert "prosecutor risk" in answer.stdout and "marketer risk" in answer.stdout


def test_errors_exit_two_in_one_line(db_url):
    load_table(db_url, "people", COLUMNS, people())
    missing = run("discover", "nope", "--db", db_url)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and "nope" in missing.stderr
    no_qis = run("risk", "people", "--db", db_url)
    assert no_qis.returncode == 2 and "quasi-identifiers" in no_qis.stderr
    bad = run("risk", "people", "--db", db_url, "--qi", "a", "--population", "atlantis")
    assert bad.returncode == 2 and "usa" in bad.stderr
