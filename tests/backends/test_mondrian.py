"""Mondrian partitioning: every model it tests holds on the released rows (checked here, not by
the method), nothing is suppressed, and the cuts are the ones the median rule gives."""
from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict

import pytest

import sqlanon
from tests.helpers import connect, load_table, read_adult

EIGHT = [(age, s) for age, s in zip(range(8), "aabbaabb")]


def policy(privacy: dict, table: str = "m8") -> dict:
    return {"tables": {table: {"quasi_identifiers": {"age": {"type": "interval", "levels": [2, 4, 8]}},
                               "sensitive": {"s": {}},
                               "privacy": {"method": "mondrian", "max_suppression": 0, **privacy}}}}


def classes(rows, qi=(0,), sens=1) -> dict[tuple, Counter]:
    out: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        out[tuple(r[i] for i in qi)][r[sens]] += 1
    return out


@pytest.mark.spark
def test_median_cuts_down_to_k(db_url):
    load_table(db_url, "m8", [("age", "int"), ("s", "text")], EIGHT)
    with connect(db_url, policy=policy({"k": 2})) as db:
        res = db.execute("SELECT age, s FROM m8")
    found = classes(res.rows)
    # cut between 3 and 4, then between 1|2 and 5|6: four parts, each one width-2 interval
    assert {k[0] for k in found} == {"[0,2)", "[2,4)", "[4,6)", "[6,8)"}
    assert all(sum(c.values()) == 2 for c in found.values())
    assert res.report.rows_suppressed == 0 and res.report.method == "mondrian"


def test_parts_whose_cells_hold_k_rows_close_as_their_cells(db_url):
    """The median rule's parts, where cells of k rows are closed at once (close_cells.sql):
    ages 0-3 twice, 4-7 once, k=2. By hand: 0-2 | 3-7 (6 rows each); 0-2 has no cell under k, so
    its parts are its ages; 3-4 | 5-7 (3 rows each), where a cut would leave one row."""
    rows = [(a, "a") for a in range(4) for _ in range(2)] + [(a, "b") for a in range(4, 8)]
    load_table(db_url, "m12", [("age", "int"), ("s", "text")], rows)
    with connect(db_url, policy=policy({"k": 2}, "m12")) as db:
        res = db.execute("SELECT age, s FROM m12")
    sizes = {k[0]: sum(c.values()) for k, c in classes(res.rows).items()}
    assert sizes == {"0": 2, "1": 2, "2": 2, "[0,8)": 3, "[4,8)": 3}
    # every cell holds k rows: the first pass closes each as its own part
    load_table(db_url, "m16", [("age", "int"), ("s", "text")], [(a, "a") for a in range(8) for _ in range(2)])
    with connect(db_url, policy=policy({"k": 2}, "m16")) as db:
        res = db.execute("SELECT age, s FROM m16")
    assert {k[0]: sum(c.values()) for k, c in classes(res.rows).items()} == {str(a): 2 for a in range(8)}
    assert "1 cutting pass(es) over the frequency table" in res.report.notes


def test_l_diversity_stops_a_cut(db_url):
    load_table(db_url, "m8", [("age", "int"), ("s", "text")], EIGHT)
    with connect(db_url, policy=policy({"k": 2, "l": 2})) as db:
        res = db.execute("SELECT age, s FROM m8")
    found = classes(res.rows)
    # pairs would be all 'a' or all 'b': the cut stops at two parts of four ages
    assert {k[0] for k in found} == {"[0,4)", "[4,8)"} and all(set(c) == {"a", "b"} for c in found.values())


def test_alpha_stops_a_cut(db_url):
    load_table(db_url, "m8", [("age", "int"), ("s", "text")], EIGHT)
    with connect(db_url, policy=policy({"k": 2, "alpha": {"value": 0.5, "protect": ["a"]}})) as db:
        res = db.execute("SELECT age, s FROM m8")
    assert all(c["a"] * 2 <= sum(c.values()) for c in classes(res.rows).values())
    assert len(classes(res.rows)) == 2


def test_one_sensitive_attribute_per_release(db_url):
    load_table(db_url, "m2", [("age", "int"), ("s", "text"), ("t", "text")], [(1, "a", "x"), (2, "b", "y")])
    p = {"tables": {"m2": {"quasi_identifiers": {"age": {"type": "interval", "levels": [2]}},
                           "sensitive": {"s": {}, "t": {}},
                           "privacy": {"method": "mondrian", "k": 2, "l": {"value": 2, "attribute": "s"},
                                       "t": {"value": 0.5, "attribute": "t"}}}}}
    with connect(db_url, policy=p) as db:
        with pytest.raises(sqlanon.PolicyError, match="one sensitive attribute"):
            db.execute("SELECT age FROM m2")



@pytest.mark.slow
def test_adult_with_l_diversity(adult_url, datasets):
    h = datasets / "adult" / "hierarchies"
    qis = ["age", "education", "marital_status", "sex"]
    pol = {"tables": {"adult": {
        "quasi_identifiers": {q: {"type": "taxonomy", "file": str(h / f"adult_hierarchy_{q.replace('_', '-')}.csv")} for q in qis},
        "sensitive": {"income": {}},
        "privacy": {"method": "mondrian", "k": 5, "l": 2, "max_suppression": 0}}}}
    with connect(adult_url, policy=pol) as db:
        res = db.execute("SELECT age, education, marital_status, sex, income FROM adult "
                         "WHERE age BETWEEN 30 AND 50")
    selected = [r for r in read_adult(datasets / "adult" / "adult.data") if 30 <= r[0] <= 50]
    assert len(res.rows) == len(selected) == 16390
    assert Counter(r[4] for r in res.rows) == Counter(r[14] for r in selected)
    found = classes(res.rows, qi=(0, 1, 2, 3), sens=4)
    assert all(sum(c.values()) >= 5 and len(c) >= 2 for c in found.values())
    # every released value is a node of its hierarchy
    for j, q in enumerate(qis):
        with open(h / f"adult_hierarchy_{q.replace('_', '-')}.csv", encoding="utf-8") as f:
            nodes = {v.strip() for row in csv.reader(f, delimiter=";") for v in row}
        assert {r[j] for r in res.rows} <= nodes | {None}
    # far finer than one class: the cuts went deep (605 parts on every engine when written)
    assert len(found) > 300 and res.report.classes == len(found)
    assert math.isfinite(res.report.kl_sum)


def test_auto_takes_mondrian_for_l_diversity(db_url):
    load_table(db_url, "m8", [("age", "int"), ("s", "text")], EIGHT)
    p = policy({"k": 2, "l": 2})
    p["tables"]["m8"]["privacy"].pop("method")
    with connect(db_url, policy=p) as db:
        res = db.execute("SELECT age, s FROM m8")
        assert res.report.method == "mondrian" and "l-diversity" in res.report.rule
        assert "mondrian" in db.explain("SELECT age, s FROM m8")


def test_t_closeness_stops_a_cut(db_url):
    """Salaries rise with age: a cut into pairs leaves pairs far from the whole distribution."""
    from tests.backends.test_diversity_closeness import ordered_emd

    rows = [(age, 1000 * (age + 1)) for age in range(8)]
    load_table(db_url, "m8t", [("age", "int"), ("salary", "int")], rows)
    p = {"tables": {"m8t": {"quasi_identifiers": {"age": {"type": "interval", "levels": [2, 4, 8]}},
                            "sensitive": {"salary": {"type": "numeric"}},
                            "privacy": {"method": "mondrian", "k": 2, "t": 0.3, "max_suppression": 0}}}}
    with connect(db_url, policy=p) as db:
        res = db.execute("SELECT age, salary FROM m8t")
    released = [(r[0], "", r[1]) for r in res.rows]
    distances = ordered_emd(released)
    # the outer pairs ([0,2), [6,8)) would be 3/7 = 0.43 away; halves ([0,4), [4,8)) are 2/7 = 0.286
    assert max(distances) <= 0.3 and len(distances) == 2
    assert sorted(r[1] for r in res.rows) == sorted(s for _, s in rows)
    assert "largest distance 0.2857" in next(c for c in res.report.checks if c["criterion"].startswith("t-"))["measured"]
