"""``explain --summary``: the plan (table, method and why, requirement) and the statements per
stage, without their SQL; ``--format json`` the same as data."""
from __future__ import annotations

import json
import re
from collections import Counter

from tests.cli.test_cli import setup, sqlanon

SQL = "SELECT age, sex, zip, disease FROM patients"
STAGE = re.compile(r"^  (\w+) +(\d+)(?:  [\d.]+ s)?$", re.M)


def counts_in_full(text: str) -> Counter:
    """Statements per stage as the full explain lists them ('-- stage X', then '[i] …')."""
    out: Counter = Counter()
    stage = None
    for line in text.splitlines():
        if line.startswith("-- stage "):
            stage = line.removeprefix("-- stage ")
        elif re.match(r"\[\d+\] ", line):
            out[stage] += 1
    return out


def test_summary_counts_the_statements_the_full_explain_lists(db_url, backend, tmp_path):
    policy = setup(db_url, tmp_path)
    full = sqlanon("explain", SQL, "--db", db_url, "--policy", policy)
    short = sqlanon("explain", SQL, "--db", db_url, "--policy", policy, "--summary")
    assert full.returncode == 0 and short.returncode == 0, full.stderr + short.stderr
    text = short.stdout
    assert "table: patients" in text and "plan: alpha_k; rule: " in text and "requirement k=2" in text
    assert "CREATE" not in text and "SELECT" not in text and "[1]" not in text  # no SQL
    stages = {name: int(n) for name, n in STAGE.findall(text)}
    total = stages.pop("total")
    # MariaDB writes no statement of the pushdown where (α,k) reads the selection in place
    # (Backend.inline_selection): its first statement reads the table itself
    first = ["anonymize"] if backend == "mysql" else ["pushdown", "anonymize"]
    assert list(stages)[:len(first)] == first and "verify" in stages
    assert stages == dict(counts_in_full(full.stdout)) and total == sum(stages.values())


def test_summary_with_analyze_times_the_stages_and_reports(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("explain", SQL, "--db", db_url, "--policy", policy, "--summary", "--analyze")
    assert out.returncode == 0, out.stderr
    assert re.search(r"^  anonymize +\d+  [\d.]+ s$", out.stdout, re.M)
    assert re.search(r"rows: \d+ selected", out.stdout) and "[1]" not in out.stdout


def test_json(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("explain", SQL, "--db", db_url, "--policy", policy, "--summary", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["table"] == "patients" and doc["method"] == "alpha_k" and doc["requirement"]["k"] == 2
    assert "statements" not in doc and all(s["statements"] > 0 for s in doc["stages"])
    out = sqlanon("explain", SQL, "--db", db_url, "--policy", policy, "--format", "json", "--analyze")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert sum(s["statements"] for s in doc["stages"]) == len(doc["statements"]) == doc["report"]["statements"]


def test_a_pass_through(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    out = sqlanon("explain", "SELECT 1 AS one", "--db", db_url, "--policy", policy, "--summary")
    assert out.returncode == 0, out.stderr
    assert "plan: pass-through" in out.stdout and re.search(r"^  passthrough +1$", out.stdout, re.M)
