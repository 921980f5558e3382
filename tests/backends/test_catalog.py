"""The catalog on every backend: Alembic migrations up and down, the release and audit logs, and
the defences across releases — each attack of Sweeney 2002 run against a naive release (no
catalog), where it succeeds, and against sqlanon with its catalog, where it fails."""
from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa

import sqlanon
from sqlanon.backends.connect import open_database
from sqlanon.catalog import migrate, open_catalog
from sqlanon.catalog.schema import HEAD, Names, tables
from tests.helpers import connect

POLICY = {"tables": {"people": {
    "identifiers": ["id"],
    "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20]},
                          "zip": {"type": "mask", "levels": [1, 2, 3]}},
    "sensitive": {"problem": {"type": "categorical"}},
    "privacy": {"k": 2, "method": "mondrian"},
}}}


def policy(**privacy: Any) -> dict:
    out = {"tables": {"people": dict(POLICY["tables"]["people"])}}
    out["tables"]["people"]["privacy"] = {**POLICY["tables"]["people"]["privacy"], **privacy}
    return out


def people(n: int, seed: int = 7) -> list[tuple]:
    """``n`` people with distinct problems (linking two releases on it is exact, as on
    slides 22-23 of He Yan's k-anonymity talk (2009), where the problem joins GT1 and GT3)."""
    rnd = random.Random(seed)
    return [(i, rnd.randint(20, 69), f"0213{rnd.randint(0, 9)}", f"problem {i}") for i in range(n)]


def load(url: str, rows: list[tuple]) -> sa.Table:
    engine = sa.create_engine(url)
    md = sa.MetaData()
    t = sa.Table("people", md, sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
                 sa.Column("age", sa.Integer), sa.Column("zip", sa.String(10)), sa.Column("problem", sa.String(40)))
    md.create_all(engine)
    with engine.begin() as c:
        c.execute(t.insert(), [dict(zip(("id", "age", "zip", "problem"), r)) for r in rows])
    engine.dispose()
    return t


def execute(url: str, statement: Any) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.execute(statement)
    engine.dispose()


def stored(url: str, name: str) -> list[tuple]:
    engine = sa.create_engine(url)
    with engine.connect() as c:
        rows = [tuple(r) for r in c.execute(sa.select(sa.table(name, sa.column("age"), sa.column("zip"),
                                                                sa.column("problem"))))]
    engine.dispose()
    return rows


# -- independent reading of released labels --------------------------------------------------
def age_range(label: str | None) -> tuple[float, float]:
    if label in (None, "*"):
        return (float("-inf"), float("inf"))
    m = re.fullmatch(r"\[(-?\d+),(-?\d+)\)", label)
    if m:
        return (float(m.group(1)), float(m.group(2)))
    return (float(label), float(label) + 1)


def zip_prefix(label: str) -> str:
    return "" if label == "*" else label.rstrip("*")


def linked(first: list[tuple], second: list[tuple]) -> list[tuple]:
    """Sweeney's LT: the two releases joined on the problem, each person's QI the intersection
    of both generalizations (the narrower age range, the longer ZIP prefix)."""
    other = {r[2]: r for r in second}
    out = []
    for age, zp, problem in first:
        if problem not in other:
            continue
        a1, a2 = age_range(str(age)), age_range(str(other[problem][0]))
        p1, p2 = zip_prefix(zp), zip_prefix(other[problem][1])
        assert p1.startswith(p2) or p2.startswith(p1), "two releases of one row disagree"
        out.append(((max(a1[0], a2[0]), min(a1[1], a2[1])), max(p1, p2, key=len), problem))
    return out


def smallest_class(rows: list[tuple]) -> int:
    return min(Counter((r[0], r[1]) for r in rows).values())


# -- migrations -------------------------------------------------------------------------------
def test_migrations_up_and_down_match_the_running_schema(db_url):
    engine = sa.create_engine(db_url)  # an empty database (SQLite: its file; sqlanon opens no missing one)
    engine.connect().close()
    engine.dispose()
    db = open_database(db_url)
    try:
        assert migrate.current(db) is None and open_catalog(db) is None
        assert migrate.upgrade(db) == HEAD
        names = Names.of(db.backend)
        insp = sa.inspect(db.engine)
        for t in tables(names).__dict__.values():
            found = {c["name"] for c in insp.get_columns(t.name, schema=names.schema)}
            assert found == {c.name for c in t.columns}, t.name
        db.refresh_schema()
        assert not any(name.startswith("sqlanon") for name in db.tables)  # no query can name them
        assert migrate.downgrade(db, "base") is None
        assert not sa.inspect(db.engine).has_table(names("releases"), schema=names.schema)
        assert migrate.upgrade(db) == HEAD  # and up again
    finally:
        db.dispose()


def test_catalog_tables_cannot_be_queried(db_url):
    load(db_url, people(20))
    with connect(db_url, POLICY, catalog=True) as db:
        names = Names.of(db.db.backend)
        name = f"{names.schema}.{names('audit')}" if names.schema else names("audit")
        with pytest.raises(sqlanon.QueryRejected, match="unknown table|outside the connected schema"):
            db.execute(f"SELECT * FROM {name}")


def test_releases_and_rejections_are_logged(db_url):
    load(db_url, people(60))
    with connect(db_url, POLICY, catalog=True, client="alice") as db:
        db.execute("SELECT age, zip, problem FROM people WHERE age >= 30")
        with pytest.raises(sqlanon.QueryRejected, match="identifier column"):
            db.execute("SELECT id FROM people")
        log = db.releases()
        audit = db.catalog.audit()
    assert len(log) == 1 and log[0]["client"] == "alice" and log[0]["method"] == "mondrian"
    assert log[0]["rows_in"] == sum(1 for r in people(60) if r[1] >= 30)
    assert "age" in log[0]["predicate"] and "30" in log[0]["predicate"]
    assert [(a["decision"], a["construct"]) for a in audit] == [("rejected", "identifier column"),
                                                                 ("anonymized", None)]
    # a later session on the same database finds the catalog without being asked to create it
    with connect(db_url, POLICY) as again:
        assert again.catalog is not None and len(again.releases("people")) == 1


# -- differencing by narrow WHERE clauses ------------------------------------------------------
def test_differencing_succeeds_naively_and_is_refused_with_the_catalog(db_url):
    rnd = random.Random(5)
    rows = [(i, rnd.randint(20, 69), f"0213{rnd.randint(0, 9)}", rnd.choice(["flu", "asthma", "hiv", "cold"]))
            for i in range(80)]
    victim = (80, 47, "02199", "hiv")  # the only one in her ZIP code
    load(db_url, rows + [victim])
    q_all = "SELECT problem, COUNT(*) AS n FROM people WHERE age >= 20 GROUP BY problem"
    q_but = "SELECT problem, COUNT(*) AS n FROM people WHERE age >= 20 AND zip <> '02199' GROUP BY problem"
    with connect(db_url, POLICY, catalog=False) as naive:
        first, second = dict(naive.execute(q_all).rows), dict(naive.execute(q_but).rows)
    assert {p for p in first if first[p] != second.get(p)} == {"hiv"}  # the two answers name her problem
    with connect(db_url, POLICY, catalog=True) as db:
        db.execute(q_all)
        with pytest.raises(sqlanon.QueryRejected, match="differencing") as e:
            db.execute(q_but)
        assert "fewer than 2 rows" in e.value.message  # how many is not told
        assert db.catalog.audit(decision="rejected")[0]["construct"] == "differencing"
        db.execute(q_all)  # the same selection again is no difference
        # a selection that differs in many rows is answered
        db.execute("SELECT problem, COUNT(*) AS n FROM people WHERE age >= 45 GROUP BY problem")


def test_a_query_asked_again_after_an_insert_or_a_deletion_is_refused(db_url):
    """The temporal attack (Sweeney, k-anonymity, 2002): the same question before and after one
    person is added tells that person's problem, whatever each answer's k; a deletion likewise.
    The catalog remembers which rows each answer selected, so the same predicate over changed
    rows is a different selection."""
    t = load(db_url, people(60))
    newcomer = dict(id=60, age=33, zip="02131", problem="problem new")
    q = "SELECT age, zip, problem FROM people WHERE zip LIKE '0213%'"
    with connect(db_url, POLICY, catalog=False) as naive:
        before = Counter(r[2] for r in naive.execute(q).rows)
        execute(db_url, t.insert().values(**newcomer))
        after = Counter(r[2] for r in naive.execute(q).rows)
    assert after - before == Counter({"problem new": 1})  # the difference is the newcomer
    execute(db_url, t.delete().where(t.c.id == 60))
    with connect(db_url, POLICY, catalog=True) as db:
        db.execute(q)
        db.execute(q)  # the same rows again: no difference
        execute(db_url, t.insert().values(**newcomer))
        with pytest.raises(sqlanon.QueryRejected, match="differencing") as e:
            db.execute(q)
        assert "problem" not in e.value.message and "60" not in e.value.message
        execute(db_url, t.delete().where(t.c.id == 60))
        db.execute(q)  # the rows of the first answer again
        execute(db_url, t.delete().where(t.c.id == 0))
        with pytest.raises(sqlanon.QueryRejected, match="differencing"):
            db.execute(q)


# -- complementary release (Sweeney 2002) -----------------------------------------------------
def test_complementary_release_links_naively_and_stays_k_anonymous_with_the_catalog(db_url):
    rows = people(120, seed=3)
    load(db_url, rows)
    with connect(db_url, POLICY, catalog=False) as naive:
        naive.materialize("people", "gt1", where="age < 50")
        naive.materialize("people", "gt3")
    lt = linked(stored(db_url, "gt1"), stored(db_url, "gt3"))
    assert smallest_class(stored(db_url, "gt1")) >= 2 and smallest_class(stored(db_url, "gt3")) >= 2
    assert smallest_class(lt) < 2, "the naive releases should link to a unique person"

    with connect(db_url, POLICY, catalog=True) as db:
        db.materialize("people", "rel1", where="age < 50")
        report = db.materialize("people", "rel2")
    n_first = sum(1 for r in rows if r[1] < 50)
    assert any(f"keep their earlier generalization ({n_first} from rel1)" in n for n in report.notes)
    lt = linked(stored(db_url, "rel1"), stored(db_url, "rel2"))
    assert len(lt) == sum(1 for r in rows if r[1] < 50)
    assert smallest_class(lt) >= 2
    assert smallest_class(stored(db_url, "rel2")) >= 2


def test_complementary_release_refused_when_the_policy_says_so(db_url):
    load(db_url, people(120, seed=3))
    strict = policy(across_releases="refuse")
    with connect(db_url, strict, catalog=True) as db:
        db.materialize("people", "rel1", where="age < 50")
        with pytest.raises(sqlanon.ReleaseRefused, match="released before \\(in rel1.*another generalization"):
            db.materialize("people", "rel2")
        assert [r["target"] for r in db.releases("people")] == ["rel1"]


# -- temporal attack (Sweeney 2002) ----------------------------------------------------------
def test_refresh_keeps_classes_and_refuses_when_the_union_breaks(db_url):
    rows = people(60, seed=11)
    t = load(db_url, rows)
    with connect(db_url, POLICY, catalog=True) as db:
        db.materialize("people", "rel")
        before = Counter((a, z) for a, z, _ in stored(db_url, "rel"))
        added = [(1000 + i, 30 + i % 4, "02139", f"new problem {i}") for i in range(6)]
        execute(db_url, t.insert().values([dict(zip(("id", "age", "zip", "problem"), r)) for r in added]))
        report = db.materialize("people", "rel", refresh=True)
        after = stored(db_url, "rel")
        assert report.rows_released == len(after) == 66
        counts = Counter((a, z) for a, z, _ in after)
        assert all(counts[c] >= n for c, n in before.items())  # every earlier class is still there, whole
        assert smallest_class(after) >= 2

        # remove all but one member of an earlier class: kept in its class, that row would be
        # alone in the new release (and old and new together would single it out)
        label = min(before, key=lambda c: (before[c], str(c)))
        released_as = {problem: (age, zp) for age, zp, problem in after}
        doomed = [r[0] for r in rows if released_as.get(r[3]) == label][1:]
        execute(db_url, t.delete().where(t.c.id.in_(doomed)))
        with pytest.raises(sqlanon.ReleaseRefused, match="earlier classes|together break"):
            db.materialize("people", "rel", refresh=True)
        assert sorted(stored(db_url, "rel"), key=str) == sorted(after, key=str)  # nothing half-done


def test_refresh_needs_a_release_of_that_table(db_url):
    load(db_url, people(30))
    execute(db_url, sa.text("CREATE TABLE bystander (x INTEGER)"))
    with connect(db_url, POLICY, catalog=True) as db:
        for name in ("nothing_here", "bystander"):
            with pytest.raises(sqlanon.QueryRejected, match="did not release"):
                db.materialize("people", name, refresh=True)
    with connect(db_url, POLICY, catalog=False) as db:
        db.materialize("people", "plain")
        with pytest.raises(sqlanon.SqlanonError, match="no catalog"):
            db.materialize("people", "plain", refresh=True)


def test_flooding_the_window_does_not_push_a_selection_out_of_the_check(db_url, monkeypatch):
    """Every distinct selection of the window is compared, over several passes; beyond the cap,
    new selections are refused rather than compared with only some of them."""
    from sqlanon.catalog import differencing

    rnd = random.Random(5)
    rows = [(i, rnd.randint(20, 69), f"0213{rnd.randint(0, 9)}", rnd.choice(["flu", "asthma", "hiv", "cold"]))
            for i in range(80)]
    load(db_url, rows + [(80, 47, "02199", "hiv")])
    monkeypatch.setattr(differencing, "PER_PASS", 2)  # five earlier selections: three passes
    monkeypatch.setattr(differencing, "MAX_SELECTIONS", 5)
    with connect(db_url, POLICY, catalog=True) as db:
        db.execute("SELECT problem, COUNT(*) AS n FROM people WHERE age >= 20 GROUP BY problem")
        for low in (25, 30, 35, 40):  # the flood, newer than the selection it should hide
            db.execute(f"SELECT problem, COUNT(*) AS n FROM people WHERE age >= {low} GROUP BY problem")
        with pytest.raises(sqlanon.QueryRejected, match="differs from release"):
            db.execute("SELECT problem, COUNT(*) AS n FROM people WHERE age >= 20 AND zip <> '02199' GROUP BY problem")
        db.execute("SELECT problem, COUNT(*) AS n FROM people WHERE age >= 45 GROUP BY problem")  # the sixth
        with pytest.raises(sqlanon.QueryRejected, match="more than 5 differently written selections"):
            db.execute("SELECT problem, COUNT(*) AS n FROM people WHERE age >= 50 GROUP BY problem")
        db.execute("SELECT problem, COUNT(*) AS n FROM people WHERE age >= 30 GROUP BY problem")  # released before
