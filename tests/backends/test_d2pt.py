"""Joins over two databases at once (D2Pt): a clinic's patients in one database, a lab's results
in another, each a real server (PostgreSQL + MariaDB, SQLite + either). The release is judged by
plain Python on its rows; the join key's pseudonym is the same digits in every database; every
other query over two databases is refused by name."""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from sqlglot import exp

import sqlanon
from sqlanon.backends.connect import open_database
from sqlanon.backends.keyed_hash import pseudonym
from sqlanon.distributed import split_policy
from sqlanon.errors import QueryRejected, ReleaseRefused
from sqlanon.policy import load_policy
from sqlanon.sql.templates import col, table
from tests.conftest import ServerPool, fresh_database
from tests.helpers import load_table, restricted

PAIRS = [("postgresql", "mysql"), ("sqlite", "postgresql"), ("sqlite", "mysql")]
JOIN = "FROM clinic.patients p JOIN lab.results l ON l.patient_id = p.id"
QUERY = f"SELECT p.age, p.zip, p.sex, l.test, l.result {JOIN}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "pair" in metafunc.fixturenames:
        chosen = {b.strip() for b in metafunc.config.getoption("--backends").split(",")}
        pairs = [p for p in PAIRS if set(p) <= chosen]
        metafunc.parametrize("pair", pairs, ids=["+".join(p) for p in pairs], scope="module")


def data() -> tuple[list[tuple], list[tuple]]:
    """600 patients; results for patients 1-650 (50 without a patient), 1-3 each, patients
    without results too; result values that differ only in case (MariaDB's collation would merge them)."""
    rng = random.Random(24)
    patients = [(i, f"name {i}", rng.randint(18, 90), str(rng.randint(10000, 10150)), rng.choice("MF"))
                for i in range(1, 601)]
    results, rid = [], 0
    for i in range(1, 651):
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            rid += 1
            results.append((rid, i, rng.choice(["hb", "ldl", "crp"]), rng.choice(["low", "normal", "high", "High"]),
                            rng.randint(1, 40)))
    return patients, results


_rng = random.Random(25)
#: one table of two sites (a third at the clinic, the rest at the lab): a horizontal partition
VISITS = [(_rng.randint(18, 90), str(_rng.randint(10000, 10150)), _rng.choice("MF"),
           _rng.choice(["flu", "flu", "cold", "asthma", "Asthma", "fracture"])) for _ in range(900)]
VISIT = {"quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20]},
                               "zip": {"type": "mask", "levels": [1, 2, 3, 5]}, "sex": {"type": "suppress"}},
         "sensitive": {"diagnosis": {"type": "categorical"}},
         "privacy": {"k": 6, "t": {"value": 0.25, "distance": "equal"}, "max_suppression": 0.04}}


#: one result per patient, and 2,000 of persons the clinic does not know: most rows unmatched
ARCHIVE = [(i, _rng.choice(["low", "normal", "high"])) for i in range(1, 601)] + [
    (10_000 + i, _rng.choice(["low", "normal", "high"])) for i in range(2000)]


def policy(t: dict | None = None, k: int = 5) -> dict:
    return {"tables": {"clinic.visits": VISIT, "lab.visits": VISIT,
                       "lab.archive": {"identifiers": ["patient_id"], "sensitive": {"result": {"type": "categorical"}},
                                       "privacy": {"k": 5, "t": {"value": 0.3, "distance": "equal"},
                                                   "max_suppression": 0.04}},
        "clinic.patients": {"identifiers": ["id", "name"],
                            "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20]},
                                                  "zip": {"type": "mask", "levels": [1, 2, 3, 5]},
                                                  "sex": {"type": "suppress"}},
                            "privacy": {"k": k, "max_suppression": 0.04}},
        "lab.results": {"identifiers": ["rid", "patient_id"],
                        "sensitive": {"result": {"type": "categorical"}, "value": {"type": "numeric"}},
                        "insensitive": ["test"],
                        "privacy": {"k": 3, "t": t or {"value": 0.3, "distance": "equal", "attribute": "result"},
                                    "max_suppression": 0.04}}}}


@pytest.fixture(scope="module")
def urls(pair: tuple[str, str], servers: ServerPool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    patients, results = data()
    with fresh_database(pair[0], servers, tmp_path_factory.mktemp("clinic")) as clinic, \
            fresh_database(pair[1], servers, tmp_path_factory.mktemp("lab")) as lab:
        load_table(clinic, "patients", [("id", "int"), ("name", "text"), ("age", "int"), ("zip", "text"),
                                        ("sex", "text")], patients)
        load_table(lab, "results", [("rid", "int"), ("patient_id", "int"), ("test", "text"), ("result", "text"),
                                    ("value", "int")], results)
        load_table(lab, "archive", [("patient_id", "int"), ("result", "text")], ARCHIVE)
        half = len(VISITS) // 3
        for url, part in ((clinic, VISITS[:half]), (lab, VISITS[half:])):
            load_table(url, "visits", [("age", "int"), ("zip", "text"), ("sex", "text"), ("diagnosis", "text")], part)
        yield {"clinic": clinic, "lab": lab}


def federate(urls: dict, pol: dict) -> sqlanon.distributed.Federation:
    """As deployed: each database's login cannot read its protected table; the pipeline's role can."""
    parts = split_policy(load_policy(pol), frozenset(urls))
    logins, roles = {}, {}
    for name, url in urls.items():
        logins[name], roles[name] = restricted(url, parts[name])
    return sqlanon.connect(logins, pol, reader_role=roles, catalog=False)


def joined_truth() -> list[tuple]:
    patients, results = data()
    by_id = {p[0]: p for p in patients}
    return [(by_id[r[1]], r) for r in results if r[1] in by_id]


def emd_equal(part: Counter, whole: Counter) -> float:
    size, n = sum(part.values()), sum(whole.values())
    return 0.5 * sum(abs(part[v] / size - whole[v] / n) for v in whole)


def emd_ordered(part: Counter, whole: Counter) -> float:
    size, n, order = sum(part.values()), sum(whole.values()), sorted(whole)
    running, total = 0.0, 0.0
    for v in order[:-1]:
        running += part[v] / size - whole[v] / n
        total += abs(running)
    return total / (len(order) - 1)


def test_join_is_k_anonymous_and_t_close(urls):
    with federate(urls, policy()) as f:
        answer = f.execute(QUERY)
    rows, truth = answer.rows, joined_truth()
    assert answer.columns == ["age", "zip", "sex", "test", "result"]
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        classes[r[:3]][r[4]] += 1
    whole = Counter(r[4] for r in rows)
    assert min(sum(c.values()) for c in classes.values()) >= 5
    assert max(emd_equal(c, whole) for c in classes.values()) <= 0.3 + 1e-9
    assert len(classes) > 1  # not everything generalized to one class
    # the lab's values travel unchanged, the join is the true one, at most 4 % withheld
    released = Counter((r[3], r[4]) for r in rows)
    true = Counter((lab[2], lab[3]) for _, lab in truth)
    assert not released - true and len(rows) >= 0.96 * len(truth)
    assert {"High", "high"} <= set(whole)  # told apart byte for byte on every backend
    # no identifier, no raw age
    values = {v for r in rows for v in r}
    assert not values & {p[1] for p, _ in truth} and not any(isinstance(v, int) for v in values)
    report = answer.report
    assert report.method == "d2pt" and all(c["ok"] for c in report.checks)
    assert report.rows_released == len(rows) and set(report.parties) == {"clinic", "lab"}
    assert all(p["sent"] > 0 for p in report.parties.values())


def test_ordered_distance_on_a_numeric_result(urls):
    with federate(urls, policy({"value": 0.15, "distance": "ordered", "attribute": "value"}, k=4)) as f:
        answer = f.execute(f"SELECT p.age, p.sex, l.value {JOIN}")
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in answer.rows:
        classes[r[:2]][r[2]] += 1
    whole = Counter(r[2] for r in answer.rows)
    assert min(sum(c.values()) for c in classes.values()) >= 4
    assert max(emd_ordered(c, whole) for c in classes.values()) <= 0.15 + 1e-9
    assert all(isinstance(r[2], int) for r in answer.rows)


def test_entropy_l_diversity_on_the_joined_release(urls):
    pol = policy()
    pol["tables"]["lab.results"]["privacy"]["l"] = {"value": 3, "variant": "entropy", "attribute": "result"}
    with federate(urls, pol) as f:
        answer = f.execute(f"SELECT p.age, p.zip, l.result {JOIN}")
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in answer.rows:
        classes[r[:2]][r[2]] += 1
    for c in classes.values():
        n = sum(c.values())
        assert -sum(x / n * math.log(x / n) for x in c.values()) >= math.log(3) - 1e-9
    assert min(sum(c.values()) for c in classes.values()) >= 5


def test_a_join_that_matches_few_of_a_partys_rows(urls):
    """The values' party is sent the few rows it releases (not the many it withholds), and
    releases nothing of the rows the join does not match."""
    with federate(urls, policy()) as f:
        answer = f.execute("SELECT p.age, p.sex, a.result FROM clinic.patients p "
                           "JOIN lab.archive a ON a.patient_id = p.id")
    rows = answer.rows
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        classes[r[:2]][r[2]] += 1
    whole = Counter(r[2] for r in rows)
    assert min(sum(c.values()) for c in classes.values()) >= 5
    assert max(emd_equal(c, whole) for c in classes.values()) <= 0.3 + 1e-9
    assert 0.96 * 600 <= len(rows) <= 600 and not whole - Counter(r for _, r in ARCHIVE[:600])
    assert answer.report.parties["lab"]["received"] <= 8 * 600


def test_one_database_is_its_own_session(urls):
    with federate(urls, policy()) as f:
        res = f.execute("SELECT p.age, p.zip, p.sex FROM clinic.patients p")
    assert res.report.method != "d2pt" and len(res.rows) > 0


@pytest.mark.parametrize("sql, construct", [
    (f"SELECT p.age, l.result {JOIN} WHERE p.age > 30", "WHERE across databases"),
    ("SELECT p.age, l.result FROM clinic.patients p LEFT JOIN lab.results l ON l.patient_id = p.id",
     "LEFT JOIN across databases"),
    (f"SELECT COUNT(*) {JOIN}", "Count across databases"),
    (f"SELECT * {JOIN}", "* across databases"),
    (f"SELECT p.age, l.result {JOIN} ORDER BY p.age", "ORDER BY across databases"),
    (f"SELECT p.name, l.result {JOIN}", "identifier column"),
    (f"SELECT p.age, l.patient_id {JOIN}", "identifier column"),
    ("SELECT p.age FROM clinic.patients p UNION ALL SELECT l.value FROM lab.results l",
     "union of different columns across databases"),
    ("SELECT age, sex FROM clinic.visits UNION SELECT age, sex FROM lab.visits", "UNION across databases"),
    ("SELECT age, sex FROM clinic.visits WHERE age > 30 UNION ALL SELECT age, sex FROM lab.visits",
     "WHERE in a union across databases"),
    ("SELECT p.age, l.result FROM clinic.patients p JOIN lab.results l ON l.patient_id > p.id",
     "join condition other than one equality of two columns across databases"),
    ("SELECT p.age, l.result FROM clinic.patients p JOIN (SELECT * FROM lab.results) l ON l.patient_id = p.id",
     "subquery across databases"),
    ("SELECT age FROM patients", "table without a database name"),
    ("SELECT diagnosis FROM clinic.visits UNION ALL SELECT diagnosis FROM lab.visits",
     "union without quasi-identifiers across databases"),
])
def test_everything_else_is_refused_by_name(urls, sql, construct):
    with federate(urls, policy()) as f:
        with pytest.raises(QueryRejected) as e:
            f.execute(sql)
    assert e.value.construct == construct


def test_one_table_in_two_databases_is_one_release(urls):
    """Horizontal partitioning: the union's rows anonymized as one release, judged on its rows."""
    with federate(urls, policy()) as f:
        answer = f.execute("SELECT age, zip, sex, diagnosis FROM clinic.visits UNION ALL "
                           "SELECT v.age, v.zip, v.sex, v.diagnosis FROM lab.visits v")
    rows = answer.rows
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        classes[r[:3]][r[3]] += 1
    whole = Counter(r[3] for r in rows)
    assert min(sum(c.values()) for c in classes.values()) >= 6
    assert max(emd_equal(c, whole) for c in classes.values()) <= 0.25 + 1e-9
    assert len(classes) > 1 and len(rows) >= 0.96 * len(VISITS)
    assert not whole - Counter(v[3] for v in VISITS) and {"asthma", "Asthma"} <= set(whole)
    assert answer.report.method == "d2pt" and all(c["ok"] for c in answer.report.checks)


def test_an_unsatisfiable_requirement_is_refused(urls):
    with federate(urls, policy(k=700)) as f, pytest.raises(ReleaseRefused):
        f.execute(QUERY)


def test_no_temp_tables_left_in_either_database(urls):
    def leftovers(f) -> list[str]:
        out = []
        for name, session in f.sessions.items():
            # the pool holds the one connection every run used: temp tables live in that session
            assert session.db.engine.pool.checkedin() == 1
            raw = session.db.raw_connection()
            try:
                cur = raw.cursor()
                out += [t for t in f.last_temp_tables[name] if session.db.backend.temp_table_exists(cur, t)]
            finally:
                raw.close()
        return out

    with federate(urls, policy()) as f:
        f.execute(QUERY)
        assert all(f.last_temp_tables.values()) and leftovers(f) == []
        with pytest.raises(ReleaseRefused):
            f.execute(QUERY, k=700)
        assert all(f.last_temp_tables.values()) and leftovers(f) == []


def test_a_database_with_a_release_log_is_not_joined_across(urls):
    """The catalog's defences across queries (differencing, consistency) compare answers of one
    database: a cross-database answer would slip past them, so it is refused, by name."""
    parts = split_policy(load_policy(policy()), frozenset(urls))
    logins, roles = {}, {}
    for name, url in urls.items():
        logins[name], roles[name] = restricted(url, parts[name])
    with sqlanon.connect(logins, policy(), reader_role=roles, catalog=True) as f:
        with pytest.raises(QueryRejected) as e:
            f.execute(QUERY)
        assert e.value.construct == "cross-database join of a database with a release log"
        assert f.last_temp_tables == {}  # refused before either database did any work
    with federate(urls, policy()) as f:
        assert any("no catalog" in n for n in f.execute(QUERY).report.notes)


def test_the_pseudonym_is_one_hmac_everywhere(backend, servers, tmp_path: Path):
    """The SQL of Backend.pseudonym is HMAC-SHA-256 (Python's hmac) on every backend."""
    key = bytes(range(32))
    values = [17, 0, -5, "abc", "Zürich", "a b  "]
    with fresh_database(backend, servers, tmp_path) as url:
        load_table(url, "k", [("i", "int"), ("s", "text")], [(v, None) if isinstance(v, int) else (None, v)
                                                                 for v in values])
        db = open_database(url)
        try:
            with db.engine.connect() as c:
                for column in ("i", "s"):
                    q = exp.select(col(column), db.backend.pseudonym(col(column), key)).from_(table("k")).where(
                        exp.Not(this=exp.Is(this=col(column), expression=exp.Null())))
                    found = c.exec_driver_sql(db.backend.render(q)).fetchall()
                    assert len(found) == 3
                    for v, h in found:
                        assert h == pseudonym(key, v), (backend, v)
        finally:
            db.dispose()


def test_the_cli_names_several_databases(tmp_path: Path):
    """``sqlanon query --db clinic=URL --db lab=URL``: the release as JSON, its report, and a
    refusal's exit code (two SQLite files: the protocol is the same)."""
    patients, results = data()
    urls = {"clinic": f"sqlite:///{tmp_path / 'clinic.db'}", "lab": f"sqlite:///{tmp_path / 'lab.db'}"}
    load_table(urls["clinic"], "patients", [("id", "int"), ("name", "text"), ("age", "int"), ("zip", "text"),
                                            ("sex", "text")], patients)
    load_table(urls["lab"], "results", [("rid", "int"), ("patient_id", "int"), ("test", "text"),
                                        ("result", "text"), ("value", "int")], results)
    load_table(urls["lab"], "archive", [("patient_id", "int"), ("result", "text")], ARCHIVE)
    for url in urls.values():
        load_table(url, "visits", [("age", "int"), ("zip", "text"), ("sex", "text"), ("diagnosis", "text")], VISITS)
    pol = tmp_path / "policy.yml"
    pol.write_text(yaml.safe_dump(policy()), encoding="utf-8")
    dbs = [a for name, url in urls.items() for a in ("--db", f"{name}={url}")]

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sqlanon", "query", *dbs, "--policy", str(pol), *args],
                              capture_output=True, text=True, timeout=300)

    out = cli("--format", "json", QUERY)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["columns"] == ["age", "zip", "sex", "test", "result"] and doc["report"]["method"] == "d2pt"
    sizes = Counter(tuple(r[:3]) for r in doc["rows"])
    assert min(sizes.values()) >= 5 and len(doc["rows"]) >= 0.96 * len(joined_truth())
    refused = cli(f"SELECT p.age, l.result {JOIN} WHERE p.age > 30")
    assert refused.returncode == 2 and "WHERE across databases" in refused.stderr
