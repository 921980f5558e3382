"""The CLI driven as a user drives it: a subprocess, exit codes and output."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.helpers import about, load_table, restricted


def sqlanon(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI in a subprocess. A command with ``--db`` and ``--policy`` connects as a deployment
    does: as a login the database keeps from the policy's tables, under its reader role
    (``tests.helpers.restricted``); the test database's own URL is the administrator's."""
    args = list(args)
    if "--db" in args and "--policy" in args:
        i = args.index("--db") + 1
        args[i], reader = restricted(args[i], args[args.index("--policy") + 1])
        args = ["--reader-role", reader, *args]
    return subprocess.run([sys.executable, "-m", "sqlanon", *args], capture_output=True, text=True, timeout=300,
                          env=None if env is None else {**os.environ, **env})


def setup(db_url, tmp_path):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    policy = tmp_path / "policy.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")
    return str(policy)


def test_query_json(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("query", "SELECT age, sex, zip, disease FROM patients", "--db", db_url, "--policy", policy,
                  "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["columns"] == ["age", "sex", "zip", "disease"]
    assert about(doc["report"]["rows_in"], 13) and len(doc["rows"]) <= 13
    assert all(c["ok"] for c in doc["report"]["checks"])


def test_query_csv_and_table(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("query", "SELECT age, sex, zip, disease FROM patients", "--db", db_url, "--policy", policy,
                  "--format", "csv", "--k", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "age,sex,zip,disease" and len(lines) >= 2
    assert "k-anonymity: smallest class" in out.stderr  # the report goes to stderr with csv
    out = sqlanon("query", "SELECT age, sex, zip FROM patients", "--db", db_url, "--policy", policy)
    assert out.returncode == 0 and "age" in out.stdout and "SQL statements" in out.stdout


def test_rejection_exit_code_and_message(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("query", "SELECT name FROM patients", "--db", db_url, "--policy", policy)
    assert out.returncode == 2
    assert "identifier column" in out.stderr and "Sylvia" not in out.stdout + out.stderr


def test_weaker_override_is_refused(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("query", "SELECT age FROM patients", "--db", db_url, "--policy", policy, "--alpha", "0.9")
    assert out.returncode == 2 and "weaker" in out.stderr


def test_explain(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("explain", "SELECT age, disease FROM patients WHERE age > 10", "--db", db_url, "--policy", policy)
    assert out.returncode == 0, out.stderr
    assert "plan: alpha_k" in out.stdout and "CREATE TEMPORARY TABLE" in out.stdout
    # all three quasi-identifiers: over age alone the release can exceed max_suppression (compared with noise)
    # in some runs and be refused
    out = sqlanon("explain", "SELECT age, sex, zip, disease FROM patients", "--db", db_url, "--policy", policy,
                  "--analyze")
    counted = re.search(r"rows: (\d+) selected", out.stdout)
    assert out.returncode == 0 and counted and about(int(counted.group(1)), 13)


def test_demo_runs(tmp_path):
    """The embedded default: no server, one run."""
    out = sqlanon("demo", "--dir", str(tmp_path / "demo"), "--rows", "800", "--show", "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("--- report:") == 4 and "k-anonymity" in out.stdout
    assert "k-anonymity over persons" in out.stdout  # the join of clinic and stays
