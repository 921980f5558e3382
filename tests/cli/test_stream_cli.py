"""``sqlanon query --format csv|json|jsonl`` writes the rows as they arrive (Session.stream); a
reader that goes away (a pipe into ``head``) ends the command quietly."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import yaml

from tests.cli.test_cli import sqlanon
from tests.helpers import assert_alpha_k, load_table, restricted

POLICY = {"tables": {"s": {"quasi_identifiers": {"a": {"type": "interval", "levels": [10]}},
                           "sensitive": {"d": {}}, "insensitive": ["v"], "privacy": {"k": 5}}}}
ROWS = 2000


def setup(db_url, tmp_path) -> str:
    load_table(db_url, "s", [("a", "int"), ("d", "text"), ("v", "text")],
               [(i % 40, f"d{i % 3}", f"v{i:05d}" + "x" * 90) for i in range(ROWS)])
    path = tmp_path / "policy.yml"
    path.write_text(yaml.safe_dump(POLICY), encoding="utf-8")
    return str(path)


def test_every_format_carries_the_release(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    query = ["query", "SELECT a, d, v FROM s", "--db", db_url, "--policy", policy]
    out = sqlanon(*query, "--format", "csv")
    assert out.returncode == 0, out.stderr
    table = list(csv.reader(io.StringIO(out.stdout)))
    assert table[0] == ["a", "d", "v"] and len(table) == ROWS + 1
    assert "k-anonymity" in out.stderr  # the report, on stderr
    assert_alpha_k(table[1:], qi=[0], sens=1, k=5, alpha=None)

    out = sqlanon(*query, "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["columns"] == ["a", "d", "v"] and len(doc["rows"]) == ROWS
    assert all(c["ok"] for c in doc["report"]["checks"])
    assert sorted(r[2] for r in doc["rows"]) == sorted(r[2] for r in table[1:])

    out = sqlanon(*query, "--format", "jsonl", "--no-report")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == ROWS and set(lines[0]) == {"a", "d", "v"}
    out = sqlanon("query", "SELECT a, a FROM s", "--db", db_url, "--policy", policy, "--format", "jsonl")
    assert out.returncode == 2 and "own alias" in out.stderr and out.stdout == ""


def test_a_reader_that_goes_away_ends_the_command_quietly(db_url, tmp_path):
    policy = setup(db_url, tmp_path)
    login, reader = restricted(db_url, policy)
    proc = subprocess.Popen([sys.executable, "-m", "sqlanon", "--reader-role", reader, "query", "SELECT a, d, v FROM s",
                             "--db", login, "--policy", policy, "--format", "csv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    # the header: the release passed its verification; the rows (200 kB) outgrow the pipe
    assert proc.stdout.readline() == b"a,d,v\r\n"
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(timeout=120) == 141
    assert b"error" not in proc.stderr.read()
