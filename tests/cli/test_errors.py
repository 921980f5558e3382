"""Error texts in the words of the interface that was used: α out of its range is said to be
out of range (not "weaker"), and ``check`` asks for the option it misses, not for a policy
file's key. Every failure is one line."""
from __future__ import annotations

import sqlite3

import pytest
import yaml

import sqlanon
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.cli.faults import one_line
from tests.cli.test_cli import sqlanon as cli
from tests.helpers import load_table


@pytest.fixture
def patients(tmp_path):
    """The patients of the worked examples in a SQLite file, and the policy (α = 0.5)."""
    path = tmp_path / "patients.db"
    sqlite3.connect(path).close()
    url = f"sqlite:///{path}"
    load_table(url, "patients", PATIENT_COLS, PATIENTS)
    policy = tmp_path / "policy.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")
    return url, str(policy)


@pytest.mark.parametrize("value", ["0", "-0.5", "1.5"])
def test_alpha_out_of_its_range_is_said_to_be(patients, value):
    url, policy = patients
    out = cli("query", "SELECT age FROM patients", "--db", url, "--policy", policy, "--alpha", value)
    assert out.returncode == 2 and "'--alpha'" in out.stderr and "0<x<=1" in out.stderr
    assert "weaker" not in out.stderr and "Traceback" not in out.stderr


def test_the_library_says_alpha_is_out_of_range(patients):
    url, policy = patients
    with sqlanon.connect(url, policy) as db:
        with pytest.raises(sqlanon.PolicyError, match=r"alpha=0 is out of range: .* in \(0, 1\]"):
            db.execute("SELECT age FROM patients", alpha=0)
        with pytest.raises(sqlanon.PolicyError, match="weaker"):
            db.execute("SELECT age FROM patients", alpha=0.9)  # in range, but looser than the policy


def test_check_asks_for_the_sensitive_column_a_model_needs(patients):
    url, _ = patients
    out = cli("check", "patients", "--db", url, "--qi", "age,sex", "--alpha", "0.5")
    assert out.returncode == 2
    assert one_line(out.stderr) == "error: --alpha needs --sensitive COLUMN: the column its model judges"
    out = cli("check", "patients", "--db", url, "--qi", "age,sex", "--l", "2", "--t", "0.3")
    assert "--l and --t need --sensitive COLUMN" in one_line(out.stderr)
    out = cli("check", "patients", "--db", url, "--qi", "age,sex", "--sensitive", "disease", "--alpha", "0.5")
    assert out.returncode in (0, 1), out.stderr  # measured: the models hold or not
