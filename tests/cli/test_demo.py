"""``sqlanon demo`` as a new user meets it: a folder with the database and its policy, the small
table class by class beside its raw rows, reports in words, and next commands that work as printed."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from sqlanon import demo
from sqlanon.policy import load_policy


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sqlanon", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def printed_commands(stdout: str) -> list[tuple[list[str], str]]:
    """The next commands as the demo prints them: argv (the shell's reading) and the comment."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("  sqlanon "):
            out.append((shlex.split(line, comments=True), line.partition("#")[2].strip()))
    return out


def test_the_demo_writes_its_files_and_its_next_commands_work_as_printed(tmp_path):
    folder = tmp_path / "my demo"  # a space: the printed paths must be quoted
    out = run("demo", "--dir", str(folder), "--rows", "400", "--show", "3")
    assert out.returncode == 0, out.stderr
    assert (folder / "demo.db").is_file() and (folder / "policy.yaml").is_file()
    assert str(folder.resolve()) in out.stdout
    # the file is the policy the demo applied, and it loads as a policy
    assert yaml.safe_load((folder / "policy.yaml").read_text(encoding="utf-8")) == demo.POLICY
    assert set(load_policy(folder / "policy.yaml").tables) == {"patients", "clinic", "stays"}

    commands = printed_commands(out.stdout)
    assert len(commands) == len(demo.NEXT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seen = set()
    for argv, what in commands:
        assert argv[0] == "sqlanon" and argv[argv.index("--db") + 1] == f"sqlite:///{(folder / 'demo.db').resolve()}"
        done = run(*argv[1:], cwd=elsewhere)  # absolute paths: they work from any directory
        if what.startswith("refused"):
            assert done.returncode == 2 and "identifier" in done.stderr, (argv, done.stderr)
            seen.add("refused")
            continue
        assert done.returncode == 0, (argv, done.stderr)
        if "--format" in argv:
            doc = json.loads(done.stdout)
            assert doc["columns"] and doc["report"]["checks"] and all(c["ok"] for c in doc["report"]["checks"])
            seen.add("json")
        elif argv[1] == "explain" and "--summary" in argv:
            assert "stages" in done.stdout and "CREATE TEMPORARY TABLE" not in done.stdout
            seen.add("summary")
        elif argv[1] == "explain":
            assert "CREATE TEMPORARY TABLE" in done.stdout
            seen.add("explain")
        else:
            assert "k-anonymity: smallest class" in done.stdout and "Kullback-Leibler" in done.stdout
            seen.add("query")
    assert seen == {"refused", "json", "summary", "explain", "query"}


def test_the_report_is_in_words(tmp_path):
    out = run("demo", "--dir", str(tmp_path / "d"), "--rows", "400", "--show", "2")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("=== ") == len(demo.QUERIES) and text.count("--- report:") == len(demo.QUERIES)
    for meaning in ("normalized Kullback-Leibler divergence: 0 = identical",
                    "sum over rows of the size of the class each falls in",
                    "average class size divided by k: 1 = ideal",
                    "rows released at each generalization level",
                    "withheld (selected rows left out) +"):
        assert text.count(meaning) >= len(demo.QUERIES), meaning
    assert "k-anonymity over persons" in text and "at least 5 distinct persons per class" in text  # the join
    assert "sqlanon_" not in text  # no temp table or internal column names
    assert "{'" not in text and "['" not in text  # no Python reprs
    assert "alpha=0.3 on diagnosis" in text and "protected: HIV, Herzinfarkt" in text


def fits(label: str, value: object, kind: str) -> bool:
    """A released label covers a raw value: the test's own reading of the demo's hierarchies."""
    if label == "*":
        return True
    if kind == "interval" and label.startswith("["):
        lo, hi = (int(x) for x in label[1:-1].split(","))
        return lo <= int(value) < hi  # type: ignore[call-overload]
    if kind == "mask":
        keep = len(label.rstrip("*"))
        return label[:keep] == str(value)[:keep] and len(label) == len(str(value))
    return label == str(value)


def test_the_small_table_class_by_class(tmp_path):
    out = run("demo", "--dir", str(tmp_path / "d"), "--rows", "200", "--show", "100", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    first = doc["queries"][0]
    assert first["sql"] == demo.CLASSES_QUERY
    members = first["classes"]
    assert sorted(m["raw"]["name"] for m in members) == sorted(p[0] for p in demo.PATIENTS)
    kinds = {c: spec["type"] for c, spec in demo.POLICY["tables"]["patients"]["quasi_identifiers"].items()}
    columns = first["released"]["columns"]
    released = [m for m in members if m["released"] is not None]
    # every released row is beside a raw row it can have been made from
    for m in released:
        for c, label in zip(columns, m["released"]):
            assert fits(label, m["raw"][c], kinds[c]) if c in kinds else label == m["raw"][c], (m, c)
    # a class is one combination of released quasi-identifiers, and the released rows are those
    qi = [i for i, c in enumerate(columns) if c in kinds]
    by_class: dict[int, set] = {}
    for m in released:
        by_class.setdefault(m["class"], set()).add(tuple(m["released"][i] for i in qi))
    assert all(len(v) == 1 for v in by_class.values())
    assert sorted(tuple(m["released"]) for m in released) == sorted(tuple(r) for r in first["released"]["rows"])
    # the text shows the same classes, each row's raw values beside it
    text = run("demo", "--dir", str(tmp_path / "d"), "--rows", "200").stdout
    table = text.split("--- report:")[0]
    assert re.search(r"^class \| rows \| age +\| sex +\| zip +\| disease +\| raw row: name, age", table, re.M)
    assert all(table.count(f"{p[0]}, {p[1]}, ") == 1 for p in demo.PATIENTS)
    assert f"{len(demo.PATIENTS)} raw rows: " in table


def test_json_has_the_report_fields(tmp_path):
    out = run("demo", "--dir", str(tmp_path / "d"), "--rows", "200", "--show", "2", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert Path(doc["policy"]).is_file() and Path(doc["database"]).is_file()
    assert len(doc["queries"]) == len(demo.QUERIES)
    for q in doc["queries"]:
        r = q["report"]
        for key in ("rows_in", "rows_released", "rows_withheld", "rows_generalized", "rows_suppressed", "classes",
                    "checks", "kl_divergence", "discernibility", "avg_class_size", "levels", "requirement"):
            assert key in r, key
        assert r["rows_suppressed"] == r["rows_withheld"] + r["rows_generalized"]
        assert len(q["released"]["rows"]) <= 2 and q["released"]["total"] >= len(q["released"]["rows"])
    assert "C_avg" in doc["meanings"] and [n["command"].split()[:2] for n in doc["next"]][0] == ["sqlanon", "query"]


def test_without_dir_one_named_folder_is_reused(tmp_path):
    for _ in range(2):
        out = run("demo", "--rows", "100", "--show", "1", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["sqlanon-demo"]
    assert sorted(p.name for p in (tmp_path / "sqlanon-demo").iterdir()) == ["demo.db", "policy.yaml"]
    assert f"demo folder: {(tmp_path / 'sqlanon-demo').resolve()}" in out.stdout
