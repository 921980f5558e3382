"""Releases written from the release plan or the cells (Backend.row_series, bounded_series: (α,k), Mondrian
under a criterion) against releases that join the stored rows to them."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.helpers import assert_alpha_k, classes, connect, load_table


@pytest.mark.parametrize("privacy", [
    {"k": 4, "alpha": {"value": 0.3, "protect": ["yes"]}, "method": "alpha_k", "max_suppression": 1.0},
    {"k": 4, "l": 2, "method": "mondrian", "max_suppression": 1.0}], ids=["alpha_k", "mondrian_l"])
def test_a_release_of_cells_alone_holds_the_rows_it_stands_for(db_url, backend, privacy):
    """A selection of the quasi-identifiers and the judged attribute alone is written from the
    plan ((α,k)) or the cells (Mondrian) where the database can repeat a row (PostgreSQL; MariaDB
    for (α,k)); with
    an insensitive column as well, the release joins the stored rows. The search is the same, so
    both must release the same rows but for that column: values that differ in case or trailing
    spaces only, NULLs among the quasi-identifiers and the values, and classes released in part
    (α) or not at all."""
    rng = random.Random(27)
    values = ["yes"] * 4 + ["Yes", "yes ", None, "no", "maybe"]
    rows = [(rng.choice([21, 22, 25, 34, 38, None]), rng.choice(["a", "A", "b", "b ", None]), rng.choice(values),
             f"w{i}") for i in range(240)]
    load_table(db_url, "t", [("age", "int"), ("zone", "text"), ("answer", "text"), ("w", "text")], rows)
    policy = {"tables": {"t": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "zone": {"type": "suppress"}},
        "sensitive": {"answer": {}}, "insensitive": ["w"], "privacy": privacy}}}
    with connect(db_url, policy=policy) as db:
        cells = db.execute("SELECT age, zone, answer FROM t")
        joined = db.execute("SELECT age, zone, answer, w FROM t")
        plan = db.explain("SELECT age, zone, answer FROM t")
    # PostgreSQL repeats a row with a function; MariaDB reads a range of the Sequence engine's
    # integers ((α,k) only so far)
    from_plan = backend == "postgresql" or (backend == "mysql" and "alpha" in privacy)
    assert ("GENERATE_SERIES" in plan or "seq_1_to_" in plan) == from_plan
    assert Counter(map(tuple, cells.rows)) == Counter(tuple(r[:3]) for r in joined.rows)
    if "alpha" in privacy:
        assert 0 < len(cells.rows) < len(rows)  # some rows are withheld, the rest released
        assert_alpha_k(cells.rows, qi=[0, 1], sens=2, k=4, alpha=0.3, protect=["yes"])
    else:  # Mondrian withholds nothing; every class holds two distinct values or more
        assert len(cells.rows) == len(rows)
        assert_alpha_k(cells.rows, qi=[0, 1], sens=2, k=4, alpha=None)
        assert min(len({r[2] for r in cls}) for cls in classes(cells.rows, [0, 1]).values()) >= 2


@pytest.mark.backends("mysql")
def test_the_search_work_tables_move_to_memory_only_where_they_fit(db_url):
    """MariaDB runs the (α,k) search's work tables as MEMORY tables, which fail instead of
    spilling beyond max_heap_table_size: where the cells might not fit (a 16 KB cap from the
    connection URL) they stay as they are, and the release is the same."""
    rng = random.Random(5)
    rows = [(rng.randint(20, 69), rng.choice("abcdefgh"), rng.choice(["yes", "no", "no"])) for _ in range(400)]
    load_table(db_url, "t", [("age", "int"), ("zone", "text"), ("answer", "text")], rows)
    policy = {"tables": {"t": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "zone": {"type": "suppress"}},
        "sensitive": {"answer": {}},
        "privacy": {"k": 4, "alpha": {"value": 0.5, "protect": ["yes"]}, "method": "alpha_k", "max_suppression": 1.0}}}}
    sql = "SELECT age, zone, answer FROM t"
    releases, moved = [], []
    for url in (db_url, f"{db_url}{'&' if '?' in db_url else '?'}max_heap_table_size=16384"):
        with connect(url, policy=policy) as db:
            ran = db.explanation(sql, analyze=True)
            releases.append(Counter(map(tuple, db.execute(sql).rows)))
        moved.append(any("ENGINE=MEMORY" in s.sql and "_blk" in s.sql for s in ran.statements))
    assert moved == [True, False]
    assert releases[0] == releases[1] and sum(releases[0].values()) > 0
