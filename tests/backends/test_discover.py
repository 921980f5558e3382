"""`discover` on every backend: minimal unique and nearly unique combinations of tables whose
uniques are known by construction, identifier-like columns, the sample-then-confirm path, the
policy proposal (which loads), and the figures on Adult's complete rows."""
from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest
import yaml

import sqlanon
from sqlanon import api
from sqlanon.policy import load_policy
from tests.conftest import DATASETS, fresh_database
from tests.helpers import ADULT_COLUMNS, load_table, read_adult, restricted

COLUMNS = [("id", "int"), ("a", "int"), ("b", "int"), ("c", "text"), ("email", "text"), ("phone", "text"),
           ("zip", "text"), ("name", "text"), ("score", "float")]


def people(n: int = 200) -> list[tuple]:
    """Row i: a = i // 20, b = i % 20 (so (a, b) is unique and a, b alone are not), c a letter
    of i % 3, a unique e-mail and phone, a 5-digit zip shared by 4 rows, a name shared by 2."""
    return [(i, i // 20, i % 20, "xyz"[i % 3], f"user{i}@example.org", f"+49 30 {1000000 + i}",
             f"{10000 + i // 4}", f"Anna {surname(i // 2)}", i / 7) for i in range(n)]


def surname(j: int) -> str:
    letters = "".join("abcdefghijklmnopqrstuvwxyz"[j // 26 ** p % 26] for p in range(3))
    return letters.capitalize()


def uniques_of(rows, idx) -> int:
    counts = Counter(tuple(r[i] for i in idx) for r in rows)
    return sum(1 for v in counts.values() if v == 1)


def minimal_uniques(rows, names, max_size) -> set[tuple]:
    out: set[tuple] = set()
    for k in range(1, max_size + 1):
        for idx in combinations(range(len(names)), k):
            cols = tuple(names[i] for i in idx)
            if uniques_of(rows, idx) == len(rows) and not any(set(f) <= set(cols) for f in out):
                out.add(cols)
    return out


def test_unique_combinations_by_construction(db_url):
    rows = people()
    load_table(db_url, "people", COLUMNS, rows)
    d = api.discover(db_url, "people", max_size=3, threshold=1.0)
    found = {c: (m.classes, m.uniques) for c, m in d.found}
    # every column that is unique alone, (a, b), and nothing that contains one of them ...
    assert {("id",), ("email",), ("phone",), ("score",), ("a", "b")} <= set(found)
    assert not any(set(c) & {"id", "email", "phone", "score"} for c in found if len(c) > 1)
    # ... exactly the minimal uniques a brute force over the rows finds
    assert set(found) == minimal_uniques(rows, [c for c, _ in COLUMNS], 3)
    assert all(v == (200, 200) for v in found.values())
    flagged = {i.column: i for i in d.identifiers}
    assert set(flagged) == {"id", "email", "phone", "score", "name"}
    assert flagged["id"].reasons[0] == "unique" and flagged["id"].uniques == 200
    assert any("e-mail" in r for r in flagged["email"].reasons)
    assert any("phone" in r for r in flagged["phone"].reasons)
    assert any("names" in r for r in flagged["name"].reasons) and flagged["name"].uniques == 0
    assert d.patterns["zip"][1]["code"] == d.patterns["zip"][0] == 200


def test_nearly_unique_by_construction(db_url):
    # (a, b) singles out 185 of 200 rows: the last 10 rows repeat five pairs of the first 20, twice each
    rows = [(i, i // 20, i % 20) for i in range(190)] + [(190 + j, 0, j % 5) for j in range(10)]
    load_table(db_url, "t", [("id", "int"), ("a", "int"), ("b", "int")], rows)
    assert uniques_of(rows, [1, 2]) == 185
    d = api.discover(db_url, "t", max_size=2, threshold=0.9, qi=["a", "b"])
    assert [(c, m.uniques) for c, m in d.found] == [(("id",), 200), (("a", "b"), 185)]
    assert d.together is not None and d.together.uniques == 185
    # at 0.95, (a, b) does not qualify
    d = api.discover(db_url, "t", max_size=2, threshold=0.95)
    assert [c for c, _ in d.found] == [("id",)]


def test_a_sample_first_then_the_whole_table(db_url):
    rows = people(400)
    load_table(db_url, "people", COLUMNS, rows)
    whole = sqlanon.api.discover(db_url, "people", max_size=3, threshold=1.0)
    with_sample = _discover(db_url, "people", max_size=3, threshold=1.0, sample_rows=100)
    assert with_sample.sample_rows == 100
    assert [(c, m.uniques, m.exact) for c, m in with_sample.found] == [(c, m.uniques, m.exact) for c, m in whole.found]
    assert "random sample of 100 rows" in with_sample.text()


def test_measured_side_by_side_as_one_by_one(db_url):
    """The exact measurements of a level sent on several connections at once find what one
    connection finds, with the same exact figures (the random samples differ: what was ruled
    out on a sample may differ, never what is found)."""
    load_table(db_url, "people", COLUMNS, people(400))
    one = _discover(db_url, "people", max_size=3, threshold=0.9, sample_rows=100, workers=1)
    three = _discover(db_url, "people", max_size=3, threshold=0.9, sample_rows=100, workers=3)
    assert one.on_table > 2  # several measured exactly: the side-by-side path ran
    assert [(c, m) for c, m in three.found] == [(c, m) for c, m in one.found]
    assert [(i.column, i.uniques) for i in three.identifiers] == [(i.column, i.uniques) for i in one.identifiers]
    assert three.on_table > 2 and three.statements == 1 + three.on_sample + three.on_table + len(three.patterns) + 1


def _discover(url, table, **kw):
    from sqlanon.backends.connect import open_database
    from sqlanon.discover import discover

    db = open_database(url)
    try:
        return discover(db, table, **kw)
    finally:
        db.dispose()


def test_the_proposed_policy_loads_and_serves(db_url):
    load_table(db_url, "people", COLUMNS, people())
    d = api.discover(db_url, "people", max_size=2, qi=["a", "c", "zip", "score"])
    text = d.policy_yaml
    assert text.startswith("# Proposed by 'sqlanon discover'")
    spec = yaml.safe_load(text)["tables"]["people"]
    assert spec["quasi_identifiers"]["a"] == {"type": "interval", "levels": [1, 2, 4]}  # a: 0..9
    assert spec["quasi_identifiers"]["zip"] == {"type": "mask", "levels": [1, 2, 3, 4]}
    assert spec["quasi_identifiers"]["c"] == {"type": "suppress"}
    assert spec["quasi_identifiers"]["score"]["type"] == "interval"
    # score is identifier-like, but named as a quasi-identifier it is no identifier
    assert set(spec["identifiers"]) == {"id", "email", "phone", "name"}
    assert spec["privacy"] == {"k": 5}
    policy = load_policy(yaml.safe_load(text))
    assert [q.column for q in policy.tables["people"].quasi_identifiers] == ["a", "c", "zip", "score"]
    with sqlanon.connect(db_url, yaml.safe_load(text), unrestricted=True) as s:
        released = s.execute("SELECT a, c, zip FROM people")
    assert len(released.rows) > 0


def test_it_reads_as_the_reader_role_never_as_the_login(db_url, backend):
    load_table(db_url, "people", COLUMNS, people())
    policy = {"tables": {"people": {"quasi_identifiers": {"a": {"type": "suppress"}}, "privacy": {"k": 2}}}}
    login, reader = restricted(db_url, policy)
    d = api.discover(login, "people", max_size=1, threshold=1.0, reader_role=reader)
    assert ("id",) in dict(d.found)
    if backend != "sqlite":  # SQLite has no users: its authorizer guards the login's connections
        with pytest.raises(sqlanon.errors.SqlanonError):
            api.discover(login, "people", max_size=1, reader_role="no_such_role")


@pytest.fixture(scope="module")
def adult_complete(backend, servers, tmp_path_factory):
    """Adult's 30,162 complete rows (no '?')."""
    rows = [r for r in read_adult(DATASETS / "adult" / "adult.data") if None not in r]
    with fresh_database(backend, servers, tmp_path_factory.mktemp("adultc")) as url:
        load_table(url, "adult", ADULT_COLUMNS, rows)
        yield url


@pytest.mark.slow
def test_adult_fnlwgt_is_identifier_like_and_the_six_qis_single_out_4907(adult_complete):
    qis = ["age", "education", "marital_status", "race", "sex", "native_country"]
    d = api.discover(adult_complete, "adult", max_size=2, qi=qis)
    assert d.rows == 30_162
    flagged = {i.column: i for i in d.identifiers}
    assert list(flagged) == ["fnlwgt"]
    assert flagged["fnlwgt"].uniques == 14_439
    assert flagged["fnlwgt"].partners["age"] == (24_459, True)
    assert d.together is not None and (d.together.uniques, d.together.classes) == (4_907, 7_645)
    assert "alone it singles out 14,439 rows" in d.text() and "with age 24,459" in d.text()
    assert "single out 4,907 rows" in d.text()
    assert yaml.safe_load(d.policy_yaml)["tables"]["adult"]["identifiers"] == ["fnlwgt"]
