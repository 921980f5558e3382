"""The catalog's commands driven as an administrator drives them: migrations, policies stored
and compared, the release log; exit codes and output."""
from __future__ import annotations

import json

import yaml

from sqlanon.catalog.schema import HEAD
from tests.backends.test_catalog import POLICY, load, people
from tests.cli import test_cli


def sqlanon(*args: str):
    """The administrator's own account, which reads every table: the commands that answer
    queries serve it only with --unrestricted (said in their reports)."""
    return test_cli.sqlanon(*args, env={"SQLANON_UNRESTRICTED": "1"})


def test_db_policy_and_releases_commands(db_url, tmp_path):
    load(db_url, people(40))
    hierarchy = tmp_path / "problems.csv"
    hierarchy.write_text("".join(f"problem {i};some problem;*\n" for i in range(40)), encoding="utf-8")
    spec = yaml.safe_load(yaml.safe_dump(POLICY))
    spec["tables"]["people"]["sensitive"]["problem"]["hierarchy"] = "problems.csv"
    policy = tmp_path / "policy.yml"
    policy.write_text(yaml.safe_dump(spec), encoding="utf-8")

    out = sqlanon("db", "current", "--db", db_url)
    assert out.returncode == 0 and out.stdout.startswith("none"), out.stderr
    out = sqlanon("releases", "--db", db_url)
    assert out.returncode == 2 and "no sqlanon catalog" in out.stderr
    assert sqlanon("db", "upgrade", "--db", db_url).stdout.strip() == f"catalog at revision {HEAD}"
    assert sqlanon("db", "current", "--db", db_url).stdout.startswith(HEAD)

    out = sqlanon("policy", "diff", str(policy), "--db", db_url)
    assert out.returncode == 1 and "+people:" in out.stdout
    assert sqlanon("policy", "apply", str(policy), "--db", db_url).stdout.strip() == "people: version 1"
    out = sqlanon("policy", "diff", str(policy), "--db", db_url)
    assert out.returncode == 0 and out.stdout == ""
    out = sqlanon("policy", "show", "people", "--db", db_url)
    assert "version 1" in out.stdout and "some problem" in out.stdout  # the taxonomy is stored inline

    spec["tables"]["people"]["privacy"]["k"] = 3
    policy.write_text(yaml.safe_dump(spec), encoding="utf-8")
    out = sqlanon("policy", "diff", str(policy), "--db", db_url)
    assert out.returncode == 1 and "-  privacy: {k: 2" in out.stdout and "+  privacy: {k: 3" in out.stdout
    assert sqlanon("policy", "apply", str(policy), "--db", db_url).stdout.strip() == "people: version 2"
    hierarchy.unlink()  # the stored policy no longer needs the file

    # no --policy: the catalog's newest version (k=3) governs
    out = sqlanon("materialize", "people", "--into", "people_anon", "--db", db_url)
    assert out.returncode == 0, out.stderr
    assert "requirement k=3" in out.stdout
    out = sqlanon("materialize", "people", "--into", "people_anon", "--refresh", "--db", db_url)
    assert out.returncode == 0, out.stderr
    out = sqlanon("query", "SELECT id FROM people", "--db", db_url)
    assert out.returncode == 2 and "identifier column" in out.stderr

    out = sqlanon("releases", "--db", db_url, "--format", "json")
    assert out.returncode == 0, out.stderr
    log = json.loads(out.stdout)
    assert [r["target"] for r in log] == ["people_anon", "people_anon"]
    assert all(r["front_end"] == "cli" and r["rows_released"] == 40 for r in log)
    assert "people_anon" in sqlanon("releases", "--db", db_url, "--table", "people").stdout

    out = sqlanon("db", "downgrade", "base", "--db", db_url)
    assert out.returncode == 2 and "--yes" in out.stderr  # nothing dropped without confirmation
    assert sqlanon("db", "current", "--db", db_url).stdout.startswith(HEAD)
