"""(α,k) releases written from the release plan (Backend.row_series) against releases that join
the stored rows to it."""
from __future__ import annotations

import random
from collections import Counter

from tests.helpers import assert_alpha_k, connect, load_table


def test_a_release_of_cells_alone_holds_the_rows_it_stands_for(db_url, backend):
    """A selection of the quasi-identifiers and the α attribute alone is written from the plan
    where the database can repeat a row (PostgreSQL); with an insensitive column as well, the
    release joins the stored rows. The search is the same, so both must release the same rows
    but for that column: values that differ in case or trailing spaces only, NULLs among the
    quasi-identifiers and the values, and classes released in part (α) or not at all."""
    rng = random.Random(27)
    values = ["yes"] * 4 + ["Yes", "yes ", None, "no", "maybe"]
    rows = [(rng.choice([21, 22, 25, 34, 38, None]), rng.choice(["a", "A", "b", "b ", None]), rng.choice(values),
             f"w{i}") for i in range(240)]
    load_table(db_url, "t", [("age", "int"), ("zone", "text"), ("answer", "text"), ("w", "text")], rows)
    policy = {"tables": {"t": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "zone": {"type": "suppress"}},
        "sensitive": {"answer": {}}, "insensitive": ["w"],
        "privacy": {"k": 4, "alpha": {"value": 0.3, "protect": ["yes"]}, "method": "alpha_k",
                    "max_suppression": 1.0}}}}
    with connect(db_url, policy=policy) as db:
        cells = db.execute("SELECT age, zone, answer FROM t")
        joined = db.execute("SELECT age, zone, answer, w FROM t")
        plan = db.explain("SELECT age, zone, answer FROM t")
    assert ("GENERATE_SERIES" in plan) == (backend == "postgresql")
    assert Counter(map(tuple, cells.rows)) == Counter(tuple(r[:3]) for r in joined.rows)
    assert 0 < len(cells.rows) < len(rows)  # some rows are withheld, the rest released
    assert_alpha_k(cells.rows, qi=[0, 1], sens=2, k=4, alpha=0.3, protect=["yes"])
