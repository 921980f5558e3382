"""Slicing: values are released exactly within their buckets, links between column groups are
shuffled, associated attributes stay together, and k and l hold as measured here."""
from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from tests.helpers import connect, load_table

WARDS = ["north", "south", "east", "west"]
DISEASES = ["flu", "hiv", "cold", "asthma", "gout"]


def clinic(n: int = 240, seed: int = 1) -> list[tuple]:
    """Rows whose (ward, age) and zip values each occur at least twice, so that nothing needs
    generalizing at k=2; the city follows the zip."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n // 2):
        ward, age, zip_ = rng.choice(WARDS), rng.randint(20, 29), rng.choice(["10115", "10117", "20095"])
        for _ in range(2):
            rows.append((len(rows), ward, age, zip_, {"10115": "Berlin", "10117": "Berlin", "20095": "Hamburg"}[zip_],
                         rng.choice(DISEASES)))
    return rows


COLUMNS = [("pid", "int"), ("ward", "text"), ("age", "int"), ("zip", "text"), ("city", "text"), ("disease", "text")]


def policy(privacy: dict) -> dict:
    return {"tables": {"clinic": {
        "identifiers": ["pid"],
        "quasi_identifiers": {"ward": {"type": "suppress"}, "age": {"type": "interval", "levels": [10]},
                              "zip": {"type": "mask", "levels": [2]}, "city": {"type": "suppress"}},
        "sensitive": {"disease": {}},
        "privacy": {"method": "slicing", "max_suppression": 0, **privacy}}}}


@pytest.mark.spark
def test_values_stay_in_their_bucket_and_links_are_shuffled(db_url):
    rows = clinic()
    load_table(db_url, "clinic", COLUMNS, rows)
    pol = policy({"k": 2, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]],
                                      "buckets_by": "ward"}})
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT * FROM clinic")
    assert res.columns == ["ward", "age", "zip", "city", "disease"]  # no identifier
    assert res.report.method == "slicing" and res.report.classes == len(WARDS)
    for ward in WARDS:
        before = [r[1:] for r in rows if r[1] == ward]
        after = [tuple(r) for r in res.rows if r[0] == ward]
        # every column group's multiset is unchanged within the bucket, values exact
        assert Counter((str(a), ) for _, a, *_ in after) == Counter((str(a), ) for _, a, *_ in before)
        assert Counter((z, c) for _, _, z, c, _ in after) == Counter((z, c) for _, _, z, c, _ in before)
        assert Counter(d for *_, d in after) == Counter(d for *_, d in before)
    # the zip/city group keeps its pairs; whole rows are mostly new combinations
    assert {(r[2], r[3]) for r in res.rows} <= {(r[3], r[4]) for r in rows}
    original = Counter((r[1], str(r[2]), r[3], r[5]) for r in rows)
    kept = sum((Counter((r[0], r[1], r[2], r[4]) for r in res.rows) & original).values())
    assert kept < len(rows) / 2


def test_no_group_leans_on_an_order_the_planner_may_take_from_another(db_url, monkeypatch):
    """Where the planner may feed aggregates presorted by another aggregate's ORDER BY
    (PostgreSQL 16), a group left unshuffled would take that group's random order and be paired
    with it again: then every array has an ORDER BY of its own (the kept group's: the rank),
    and links are still shuffled. Forced here on every server."""
    from sqlanon.backends.base import Backend
    from sqlanon.backends.postgres import PostgresBackend

    monkeypatch.setattr(Backend, "presorts_aggregates", property(lambda self: True))
    monkeypatch.setattr(PostgresBackend, "presorts_aggregates", property(lambda self: True))
    rows = clinic(600, seed=5)
    load_table(db_url, "clinic", COLUMNS, rows)
    pol = policy({"k": 2, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]],
                                      "buckets_by": "ward"}})
    sql = "SELECT ward, age, zip, city, disease FROM clinic"
    with connect(db_url, policy=pol) as db:
        plan = db.explain(sql)
        res = db.execute(sql)
    aggregates = plan.split("ARRAY_AGG(")[1:]
    assert all("ORDER BY" in a.split(")) AS")[0] for a in aggregates)
    assert Counter(r[4] for r in res.rows) == Counter(r[5] for r in rows)
    assert {(r[2], r[3]) for r in res.rows} <= {(r[3], r[4]) for r in rows}
    # each group's pairing with the kept one (ward, age) is new for many rows; a group that
    # took the kept group's order (or the kept one another's) would keep every pair
    for theirs, ours in (((3,), (2,)), ((5,), (4,))):
        original = Counter((r[1], str(r[2]), *[r[i] for i in theirs]) for r in rows)
        released = Counter((r[0], str(r[1]), *[r[i] for i in ours]) for r in res.rows)
        assert sum((released & original).values()) < 0.9 * len(rows)


def test_a_seed_makes_the_permutation_reproducible_and_none_varies(db_url):
    load_table(db_url, "clinic", COLUMNS, clinic())
    sql = "SELECT ward, age, zip, disease FROM clinic"
    releases = {}
    for seed in (7, 7, None, None):
        pol = policy({"k": 2, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]],
                                          "buckets_by": "ward", **({"seed": seed} if seed is not None else {})}})
        with connect(db_url, policy=pol) as db:
            releases.setdefault(seed, []).append(sorted(map(tuple, db.execute(sql).rows)))
    assert releases[7][0] == releases[7][1]
    assert releases[None][0] != releases[None][1]  # 240 rows: two equal shuffles are vanishingly rare
    # seeded, the links are shuffled all the same: whole rows are mostly new combinations
    original = Counter((r[1], str(r[2]), r[3], r[5]) for r in clinic())
    kept = sum((Counter((r[0], str(r[1]), r[2], r[3]) for r in releases[7][0]) & original).values())
    assert kept < len(clinic()) / 2


def test_l_bounds_every_link_in_a_bucket(db_url):
    rows = clinic()
    load_table(db_url, "clinic", COLUMNS, rows)
    pol = policy({"k": 2, "l": 3, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]],
                                              "buckets_by": "ward"}})
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT ward, age, disease FROM clinic")
    per_bucket: dict[str, Counter] = defaultdict(Counter)
    for ward, _, disease in res.rows:
        per_bucket[ward][disease] += 1
    assert all(max(c.values()) * 3 <= sum(c.values()) for c in per_bucket.values())
    assert any(c["ok"] and c["criterion"] == "l-diverse slicing" for c in res.report.checks)
    # the report states every bucket (one per ward, in the wards' order) with its rows and l
    expected = [(sum(per_bucket[w].values()), sum(per_bucket[w].values()) / max(per_bucket[w].values()))
                for w in sorted(per_bucket)]
    stated = [(b["rows"], b["l"]) for b in sorted(res.report.buckets, key=lambda b: b["bucket"])]
    assert [r for r, _ in stated] == [r for r, _ in expected]
    assert all(math.isclose(a, b, abs_tol=1e-4) for (_, a), (_, b) in zip(stated, expected))


def test_a_bucket_that_cannot_be_l_diverse_is_refused(db_url):
    rows = [(i, "north" if i < 4 else "south", 20 + i % 2, "10115", "Berlin", "flu" if i < 4 else DISEASES[i % 5])
            for i in range(20)]
    load_table(db_url, "clinic", COLUMNS, rows)
    pol = policy({"k": 2, "l": 2, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]],
                                              "buckets_by": "ward"}})
    with connect(db_url, policy=pol) as db:
        with pytest.raises(sqlanon.ReleaseRefused, match="l-diverse slicing"):
            db.execute("SELECT ward, disease FROM clinic")


def test_a_column_group_left_below_k_is_refused(db_url, monkeypatch):
    """Verification counts every column group's combinations on the released rows itself: a
    method that forgot to generalize a group is caught. Forced here: no group is raised, so
    (ward, age) keeps combinations of one row."""
    from sqlanon.anonymize.slicing import Slicing

    rows = [(i, WARDS[i % 4], 20 + i, "10115", "Berlin", DISEASES[i % 5]) for i in range(12)]
    load_table(db_url, "clinic", COLUMNS, rows)
    pol = policy({"k": 3, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]]}})
    with connect(db_url, policy=pol) as db:
        assert db.execute("SELECT ward, age, zip, disease FROM clinic").rows
        monkeypatch.setattr(Slicing, "_levels", lambda self, frag, freq, attributes, groups, ctx: {})
        with pytest.raises(sqlanon.ReleaseRefused, match=r"k-anonymity of column group \(ward, age\)"):
            db.execute("SELECT ward, age, zip, disease FROM clinic")


def test_searched_buckets_group_associated_attributes(db_url):
    """Without fixed groups, zip and city (one follows the other) share a group, age does not;
    buckets are found by search; k of every group and l hold."""
    rows = clinic(600, seed=3)
    load_table(db_url, "clinic", COLUMNS, rows)
    with connect(db_url, policy=policy({"k": 4, "l": 2})) as db:
        res = db.execute("SELECT age, zip, city, disease FROM clinic")
    note = next(n for n in res.report.notes if n.startswith("slicing"))
    assert "zip, city" in note or "city, zip" in note
    assert {(r[1], r[2]) for r in res.rows} <= {(r[3], r[4]) for r in rows}
    assert Counter(r[3] for r in res.rows) == Counter(r[5] for r in rows)
    for group in ((0,), (1, 2)):
        assert min(Counter(tuple(r[i] for i in group) for r in res.rows).values()) >= 4
    assert all(c["ok"] for c in res.report.checks) and res.report.classes > 1


def test_the_search_counts_buckets_as_the_rows_would(db_url):
    """The probes count a candidate's buckets on runs of equal rows, split where a bucket ends;
    the search must end where one over the rows themselves (ordered by age, then disease) ends."""
    from sqlanon.anonymize.slicing import SEARCH_RATIO

    rng = random.Random(5)
    rows = [(i, "north", rng.randint(20, 29), "10115", "Berlin", rng.choice(DISEASES[:3])) for i in range(300)]
    load_table(db_url, "clinic", COLUMNS, rows)
    ordered = sorted((a, d) for *_, a, _, _, d in rows)
    n, k, l = len(ordered), 3, 2

    def passes(b: int) -> bool:
        buckets: dict[int, Counter] = defaultdict(Counter)
        for i, (_, d) in enumerate(ordered):
            buckets[i * b // n][d] += 1
        return all(max(c.values()) * l <= sum(c.values()) for c in buckets.values())

    lo, hi = 1, n // k
    while hi > lo * SEARCH_RATIO:
        mid = min(max(round(math.sqrt(lo * hi)), lo + 1), hi)
        lo, hi = (mid, hi) if passes(mid) else (lo, mid - 1)
    pol = policy({"k": k, "l": l, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]]}})
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT age, disease FROM clinic")
    assert lo > 1 and res.report.classes == lo


def test_slicing_refuses_models_it_does_not_build():
    from sqlanon.anonymize import REGISTRY
    from sqlanon.errors import PolicyError
    from sqlanon.policy import load_policy

    req = load_policy(policy({"t": 0.3})).tables["clinic"].requirement
    with pytest.raises(PolicyError, match="slicing does not build buckets for t"):
        REGISTRY["slicing"](req)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(WARDS), st.integers(20, 45), st.sampled_from(["10115", "10117", "20095"]),
                               st.sampled_from(DISEASES)), min_size=1, max_size=80),
       k=st.integers(2, 4), l=st.sampled_from([None, 2, 3]))
def test_sliced_releases_keep_k_per_group_and_every_value(db_url, rows, k, l):  # noqa: E741
    """For random tables: every column group's combinations of released QI values have k rows,
    the sensitive values travel unchanged, and a refusal happens only when l cannot hold even
    for the selection as one bucket (checked here) or a group cannot reach k."""
    engine = sa.create_engine(db_url)
    with engine.begin() as c:
        c.execute(sa.text("DROP TABLE IF EXISTS clinic"))
    engine.dispose()
    data = [(i, w, a, z, {"10115": "Berlin", "10117": "Berlin", "20095": "Hamburg"}[z], d)
            for i, (w, a, z, d) in enumerate(rows)]
    load_table(db_url, "clinic", COLUMNS, data)
    privacy = {"k": k, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]]}}
    if l is not None:
        privacy["l"] = l
    with connect(db_url, policy=policy(privacy)) as db:
        try:
            res = db.execute("SELECT ward, age, zip, city, disease FROM clinic")
        except sqlanon.errors.SuppressionExceeded:
            # max_suppression 0: refused only for rows released with every QI at the root
            with connect(db_url, policy=policy({**privacy, "max_suppression": 1})) as db:
                res = db.execute("SELECT ward, age, zip, city, disease FROM clinic")
            assert any(all(v == "*" for v in r[:4]) for r in res.rows)
            return
        except sqlanon.ReleaseRefused:
            counts = Counter(d for *_, d in rows)
            assert len(rows) < k or (l is not None and max(counts.values()) * l > len(rows))
            return
    assert res.report.rows_generalized == sum(all(v == "*" for v in r[:4]) for r in res.rows)
    assert Counter(r[4] for r in res.rows) == Counter(d for *_, d in rows)
    for group in ((0, 1), (2, 3)):
        assert min(Counter(tuple(str(r[i]) for i in group) for r in res.rows).values()) >= k


def test_values_of_every_width_are_released_whole(db_url):
    """Where text is declared as wide as its widest value (Backend.sized_text: MariaDB's
    in-memory tables), no value is cut: long, multi-byte and empty values come out whole."""
    wards = ["n", "Süd-West, Station für Innere Medizin ✓ " + "é" * 30, ""]
    diseases = ["flu", "ä" * 45 + "✓"]
    rows = [(i, wards[i % 3], 20 + (i // 3) % 2, ["10115", "20095"][i % 2], ["Berlin", "Hamburg"][i % 2],
             diseases[(i // 2) % 2]) for i in range(24)]
    load_table(db_url, "clinic", COLUMNS, rows)
    pol = policy({"k": 2, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]]}})
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT ward, age, zip, city, disease FROM clinic")
    assert Counter((r[0], int(r[1])) for r in res.rows) == Counter((r[1], r[2]) for r in rows)
    assert Counter(r[4] for r in res.rows) == Counter(r[5] for r in rows)


def test_values_that_differ_in_case_or_trailing_spaces_are_counted_apart(db_url):
    """A column group's k counts its combinations byte for byte (MariaDB's default collation
    would merge 'a', 'A' and 'a '): a zone that only one row holds is generalized, not counted
    with its look-alikes."""
    rows = [(i, "a" if i % 2 else "b", 20 + i % 3, DISEASES[i % 5]) for i in range(40)]
    rows += [(40, "A", 20, "flu"), (41, "a ", 21, "Flu"), (42, "a ", 21, "flu ")]
    load_table(db_url, "clinic", [("pid", "int"), ("zone", "text"), ("age", "int"), ("disease", "text")], rows)
    pol = {"tables": {"clinic": {
        "identifiers": ["pid"],
        "quasi_identifiers": {"zone": {"type": "suppress"}, "age": {"type": "interval", "levels": [10]}},
        "sensitive": {"disease": {}},
        "privacy": {"method": "slicing", "k": 2, "max_suppression": 0, "slicing": {"columns": [["zone", "age"], ["disease"]]}}}}}
    with connect(db_url, policy=pol) as db:
        res = db.execute("SELECT zone, age, disease FROM clinic")
    combos = Counter((r[0], str(r[1])) for r in res.rows)
    assert min(combos.values()) >= 2
    assert "A" not in {r[0] for r in res.rows}  # one row: its zone cannot be released as it is
    assert Counter(r[2] for r in res.rows) == Counter(r[3] for r in rows)  # 'Flu', 'flu ' kept apart


@pytest.mark.backends("mysql")
def test_rows_placed_from_the_lines_as_by_their_codes(db_url, monkeypatch):
    """MariaDB numbers the rows along the order by one join to the frequency table's lines
    (Backend.line_join) instead of looking up each quasi-identifier's code: with a seed, the
    release is the one the codes give (every released column is an attribute of the lines, so
    rows tied in the order are alike), and the rows' statement reads the lines."""
    from sqlanon.backends.mysql import MySQLBackend

    load_table(db_url, "clinic", COLUMNS, clinic(600, seed=4))
    sql = "SELECT ward, age, zip, city, disease FROM clinic"
    pol = policy({"k": 2, "l": 2, "slicing": {"columns": [["ward", "age"], ["zip", "city"], ["disease"]], "seed": 7}})
    released, numbered = [], []
    for line_join in ("STRAIGHT_JOIN", None):
        monkeypatch.setattr(MySQLBackend, "line_join", line_join)
        with connect(db_url, policy=pol) as db:
            released.append(sorted(map(tuple, db.execute(sql).rows)))
            ran = db.explanation(sql, analyze=True)
        numbered.append([s.sql for s in ran.statements if "_srows" in s.sql and s.sql.startswith("CREATE")])
    assert released[0] == released[1] and len(released[0]) == 600
    assert "STRAIGHT_JOIN" in numbered[0][0] and "_slines" in numbered[0][0] and "_ocodes_" not in numbered[0][0]
    assert "_slines" not in numbered[1][0] and "_ocodes_" in numbered[1][0]
    # the seeded release is shuffled: most whole rows are new combinations
    original = Counter((w, a, z, c, d) for _, w, a, z, c, d in clinic(600, seed=4))
    assert sum((Counter(released[0]) & original).values()) < 600 / 2
