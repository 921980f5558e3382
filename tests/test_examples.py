"""The examples (examples/*/): every command of an example's README (its ``sh`` block) run as
written, in a temporary directory, and the released rows judged here by the test's own code.

On SQLite the commands run unchanged but for the paths under ``examples/``, made absolute; on
PostgreSQL and MariaDB the database argument becomes the test database (the loader gets the
administrator's URL, ``sqlanon`` a login the database keeps from the protected tables, as
``tests.helpers.restricted`` makes it). A query runs with ``--format json`` added, so that its
rows can be read. Every documented query must have its selection below: a README and its test
cannot drift apart.
"""
from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from tests.helpers import restricted

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def documented(example: str) -> list[tuple[list[str], bool]]:
    """The README's commands as argv lists, each with whether the README says it is refused."""
    text = (EXAMPLES / example / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                commands.append((shlex.split(line, comments=True), bool(re.search(r"#\s*refused", line))))
    return commands


class Example:
    """Runs an example's commands against one test database."""

    def __init__(self, name: str, backend: str, db_url: str, cwd: Path):
        self.name, self.backend, self.cwd = name, backend, cwd
        self.admin = None if backend == "sqlite" else db_url
        self.policy = EXAMPLES / name / "policy.yaml"
        self.login: tuple[str, str] | None = None
        self.url: str | None = self.admin  # where the test reads stored rows

    def _paths(self, args: list[str]) -> list[str]:
        return [str(ROOT / a) if a.startswith("examples/") else a for a in args]

    def run(self, argv: list[str], *extra: str) -> subprocess.CompletedProcess:
        if argv[0] == "python3":  # the example's loader: one argument, the database
            args = [sys.executable, *self._paths(argv[1:])]
            if self.admin is not None:
                args[-1] = self.admin
            else:
                self.url = f"sqlite:///{(self.cwd / argv[-1]).resolve()}"
        else:
            assert argv[0] == "sqlanon", argv
            args = [sys.executable, "-m", "sqlanon", *self._paths(argv[1:]), *extra]
            if self.admin is not None:
                if self.login is None:
                    self.login = restricted(self.admin, str(self.policy))
                args[args.index("--db") + 1] = self.login[0]
                args[3:3] = ["--reader-role", self.login[1]]
        return subprocess.run(args, check=False, cwd=self.cwd, capture_output=True, text=True, timeout=900)

    def ok(self, argv: list[str], *extra: str) -> str:
        out = self.run(argv, *extra)
        assert out.returncode == 0, f"{shlex.join(argv)}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
        return out.stdout

    def query(self, argv: list[str]) -> tuple[list[str], list[list]]:
        doc = json.loads(self.ok(argv, "--format", "json"))
        return doc["columns"], doc["rows"]

    def stored(self, table: str) -> list[dict]:
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as c:
                return [dict(r._mapping) for r in c.execute(sa.text(f"SELECT * FROM {table}"))]
        finally:
            engine.dispose()


# -- labels and what they cover, read from the policy file by the test ------------------------
class Hierarchies:
    """Each quasi-identifier's hierarchy of an example's policy: which stored values a released
    label covers (exact value, ``[lo,hi)``, ``181**``, a taxonomy node, a month or year, ``*``)."""

    def __init__(self, policy: Path):
        spec = yaml.safe_load(policy.read_text(encoding="utf-8"))
        self.kinds: dict[str, dict] = {}
        self.ancestors: dict[str, dict[str, set[str]]] = {}
        for table in spec["tables"].values():
            for column, h in (table.get("quasi_identifiers") or {}).items():
                self.kinds[column] = h
                if h["type"] == "taxonomy":
                    with open(policy.parent / h["file"], newline="", encoding="utf-8") as f:
                        rows = [[c.strip() for c in r] for r in csv.reader(f, delimiter=h.get("sep", ";")) if r]
                    self.ancestors[column] = {r[0]: set(r) for r in rows}

    def covers(self, column: str, label: Any, value: Any) -> bool:
        if label == "*":
            return True
        if value is None or label is None:
            return value is None and label is None
        label, text, kind = str(label), str(value), self.kinds[column]["type"]
        if label == text:
            return True
        if kind == "interval" and label.startswith("["):
            lo, hi = label[1:-1].split(",")
            return float(lo) <= float(text) < float(hi)
        if kind == "mask":
            return len(label) == len(text) and all(a in ("*", b) for a, b in zip(label, text))
        if kind == "taxonomy":
            return label in self.ancestors[column].get(text, ())
        if kind == "date":
            return len(label) in (4, 7) and text.startswith(label)
        return False

    def valid(self, column: str, label: Any) -> bool:
        """A label the hierarchy can produce from some value (taxonomies only)."""
        return label is None or label == "*" or any(label in a for a in self.ancestors[column].values())


def classes(columns: list[str], rows: list[list], qis: list[str]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        d = dict(zip(columns, r))
        out[tuple(d[q] for q in qis)].append(d)
    return out


def at_most(released: Counter, stored: Counter) -> bool:
    return all(n <= stored[v] for v, n in released.items())


# -- UCI Adult ---------------------------------------------------------------------------------
ADULT = Hierarchies(EXAMPLES / "adult" / "policy.yaml")
ADULT_QIS = ["age", "education", "marital_status", "race", "sex", "native_country"]
K, ALPHA, MAX_SUPPRESSION = 5, 0.5, 0.15

#: each documented query's selection, over the stored rows
ADULT_SELECTIONS: dict[str, Callable[[dict], bool]] = {
    "SELECT age, education, marital_status, race, sex, native_country, occupation, income FROM adult "
    "WHERE age BETWEEN 30 AND 50": lambda r: 30 <= r["age"] <= 50,
    "SELECT education, income, COUNT(*) AS n FROM adult WHERE sex = 'Female' GROUP BY education, income":
        lambda r: r["sex"] == "Female",
}


def judge_adult_rows(columns: list[str], rows: list[list], selected: list[dict]) -> None:
    """Every class over the released quasi-identifiers holds k rows, at most α of them '>50K';
    every label is a node of its hierarchy; the sensitive values are the selection's, at most
    max_suppression of it withheld."""
    qis = [q for q in ADULT_QIS if q in columns]
    assert qis and "income" in columns
    groups = classes(columns, rows, qis)
    assert min(len(g) for g in groups.values()) >= K
    assert max(sum(r["income"] == ">50K" for r in g) / len(g) for g in groups.values()) <= ALPHA
    for q in qis:
        assert all(ADULT.valid(q, label) for label in {r[columns.index(q)] for r in rows}), q
    sensitive = [c for c in ("occupation", "income") if c in columns]
    assert at_most(Counter(tuple(r[columns.index(c)] for c in sensitive) for r in rows),
                   Counter(tuple(s[c] for c in sensitive) for s in selected))
    assert len(rows) >= (1 - MAX_SUPPRESSION) * len(selected) - 40  # noise of the suppression limit


@pytest.mark.slow
def test_adult(backend, db_url, tmp_path):
    ex = Example("adult", backend, db_url, tmp_path)
    commands = documented("adult")
    assert {argv[1] if argv[0] == "sqlanon" else "load" for argv, _ in commands} == {
        "load", "query", "explain", "materialize", "check"}
    stored: list[dict] = []
    for argv, refused in commands:
        if refused:
            out = ex.run(argv)
            assert out.returncode == 2 and out.stderr.startswith("error: rejected:"), (argv, out.stderr)
        elif argv[0] == "python3":
            ex.ok(argv)
            stored = ex.stored("adult")
            assert len(stored) == 32561
        elif argv[1] == "query":
            sql = " ".join(argv[2].split())
            selected = [r for r in stored if ADULT_SELECTIONS[sql](r)]
            columns, rows = ex.query(argv)
            if "GROUP BY" in sql:  # groups of k rows or more, each no larger than the selection's
                assert columns == ["education", "income", "n"] and rows
                truth = Counter((r["education"], r["income"]) for r in selected)
                assert all(int(n) >= K for *_, n in rows)
                assert all(int(n) <= truth[(e, i)] for e, i, n in rows if e != "*")
                assert sum(int(n) for *_, n in rows) <= len(selected)
            else:
                judge_adult_rows(columns, rows, selected)
        elif argv[1] == "explain":
            out = ex.ok(argv)
            assert "plan: alpha_k" in out and "CREATE TEMPORARY TABLE" in out
        elif argv[1] == "materialize":
            ex.ok(argv)
            into = argv[argv.index("--into") + 1]
            released = ex.stored(into)
            columns = list(released[0])
            assert not {"education_num", "relationship", "fnlwgt"} & set(columns)
            judge_adult_rows(columns, [list(r.values()) for r in released], stored)
        else:
            assert argv[1] == "check"
            assert "FAIL" not in ex.ok(argv)


# -- the clinic ------------------------------------------------------------------------------
CLINIC = Hierarchies(EXAMPLES / "clinic" / "policy.yaml")
JOIN = "FROM patients p JOIN visits v ON v.patient_id = p.patient_id"
#: each documented query's selection: patients, visits, or visits joined with their patient
CLINIC_SELECTIONS: dict[str, tuple[str, Callable[[dict], bool]]] = {
    "SELECT age, sex, zip, occupation, insurance FROM patients": ("patients", lambda r: True),
    "SELECT admitted, diagnosis, cost FROM visits": ("visits", lambda r: True),
    f"SELECT p.age, p.sex, p.occupation, v.admitted, v.diagnosis, v.cost {JOIN} WHERE p.age BETWEEN 30 AND 60":
        ("joined", lambda r: 30 <= r["age"] <= 60),
    f"SELECT v.diagnosis, COUNT(*) AS visits, AVG(v.cost) AS mean_cost {JOIN} GROUP BY v.diagnosis":
        ("joined", lambda r: True),
}


def judge_clinic_rows(columns: list[str], rows: list[list], selected: list[dict], k: int = 5, l: int = 3) -> None:
    """Every class over the released quasi-identifiers holds k patients: those of the selection
    whose stored values its labels cover; where diagnoses are released, l of them per class;
    the other columns' values are the selection's."""
    qis = [q for q in CLINIC.kinds if q in columns]
    assert qis
    for labels, members in classes(columns, rows, qis).items():
        covered = [s for s in selected if all(CLINIC.covers(q, lab, s[q]) for q, lab in zip(qis, labels))]
        assert len(covered) >= len(members), labels  # no class larger than the rows behind it
        assert len({s["patient_id"] for s in covered}) >= k, labels
        if "diagnosis" in columns:
            assert len({m["diagnosis"] for m in members}) >= l, labels
    exact = [c for c in columns if c not in CLINIC.kinds]
    assert at_most(Counter(tuple(r[columns.index(c)] for c in exact) for r in rows),
                   Counter(tuple(s[c] for c in exact) for s in selected))


def test_clinic(backend, db_url, tmp_path):
    ex = Example("clinic", backend, db_url, tmp_path)
    commands = documented("clinic")
    assert {argv[1] if argv[0] == "sqlanon" else "load" for argv, _ in commands} == {
        "load", "query", "explain", "materialize"}
    data: dict[str, list[dict]] = {}
    for argv, refused in commands:
        if refused:
            out = ex.run(argv)
            assert out.returncode == 2 and "identifier column" in out.stderr, out.stderr
        elif argv[0] == "python3":
            ex.ok(argv)
            patients = {p["patient_id"]: p for p in ex.stored("patients")}
            visits = ex.stored("visits")
            data = {"patients": list(patients.values()), "visits": visits,
                    "joined": [{**patients[v["patient_id"]], **v} for v in visits]}
            assert (len(data["patients"]), len(visits)) == (400, 1009)
        elif argv[1] == "query":
            sql = " ".join(argv[2].split())
            source, where = CLINIC_SELECTIONS[sql]
            selected = [r for r in data[source] if where(r)]
            columns, rows = ex.query(argv)
            if "GROUP BY" in sql:  # groups of (k−1)·m + 1 rows, m = the most visits of one patient
                m = max(Counter(r["patient_id"] for r in selected).values())
                assert m == 12 and columns == ["diagnosis", "visits", "mean_cost"] and rows
                truth = Counter(r["diagnosis"] for r in selected)
                assert all((5 - 1) * m + 1 <= int(n) <= truth[d] for d, n, _ in rows)
                costs = defaultdict(list)
                for r in selected:
                    costs[r["diagnosis"]].append(r["cost"])
                # (MariaDB's AVG of integers keeps 4 decimals)
                assert all(abs(float(c) - sum(costs[d]) / len(costs[d])) < 1e-3 for d, n, c in rows
                           if int(n) == truth[d])
            else:
                assert len(rows) >= 0.9 * len(selected)
                judge_clinic_rows(columns, rows, selected)
        elif argv[1] == "explain":
            out = ex.ok(argv)
            assert "plan: mondrian" in out and "CREATE TEMPORARY TABLE" in out
        else:
            assert argv[1] == "materialize"
            ex.ok(argv)
            released = ex.stored(argv[argv.index("--into") + 1])
            columns = list(released[0])
            assert columns == ["admitted", "diagnosis", "cost"] and len(released) == len(data["visits"])
            judge_clinic_rows(columns, [[str(v) if c == "admitted" else v for c, v in r.items()] for r in released],
                              data["visits"])
