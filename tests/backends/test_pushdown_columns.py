"""What the pushdown stores with every selected row (anonymize/frequency.pushdown_columns): the
sensitive value and its α flag only where they vary; a constant 0 is written by the frequency
table itself, where the rows' table does not have the column (RunContext.columns)."""
from __future__ import annotations

import random

import pytest

from tests.helpers import assert_alpha_k, connect, load_table


def _rows() -> list[tuple]:
    rng = random.Random(33)
    return [(rng.choice([21, 22, 25, 34, 38, None]), rng.choice(["a", "A", "b", None]),
             rng.choice(["yes", "no", "maybe", None])) for _ in range(200)]


@pytest.mark.parametrize("privacy, stored, alpha", [
    ({"k": 3, "method": "mondrian", "max_suppression": 0}, set(), None),
    ({"k": 3, "l": 2, "method": "mondrian", "max_suppression": 1.0}, {"_sa_sv"}, None),
    ({"k": 3, "alpha": {"value": 0.5, "protect": ["yes"]}, "method": "alpha_k", "max_suppression": 1.0},
     {"_sa_sv", "_sa_p"}, 0.5)], ids=["k", "l", "alpha"])
def test_a_constant_is_not_stored_with_every_row(db_url, privacy, stored, alpha):
    rows = _rows()
    load_table(db_url, "t", [("age", "int"), ("zone", "text"), ("answer", "text")], rows)
    policy = {"tables": {"t": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "zone": {"type": "suppress"}},
        "sensitive": {"answer": {}}, "privacy": privacy}}}
    with connect(db_url, policy=policy) as db:
        plan = db.explain("SELECT age, zone, answer FROM t")
        res = db.execute("SELECT age, zone, answer FROM t")
    assert {c for c in ("_sa_sv", "_sa_p") if c in plan} == stored
    assert res.rows and len(res.rows) <= len(rows)
    assert_alpha_k(res.rows, qi=[0, 1], sens=2, k=3, alpha=alpha, protect=["yes"] if alpha else None)
    if alpha is None:
        assert len(res.rows) == len(rows)


def test_a_run_knows_the_columns_of_the_tables_it_made(db_url):
    """Named by its select, or ``*`` of one such table alone; otherwise not known (None)."""
    from sqlglot import exp

    from sqlanon.backends.connect import open_database
    from sqlanon.context import RunContext
    from sqlanon.sql.templates import col, table

    load_table(db_url, "t", [("age", "int"), ("zone", "text"), ("answer", "text")], _rows())
    db = open_database(db_url)
    try:
        with RunContext(db) as ctx:
            named = ctx.create_temp("named", exp.select(exp.alias_(col("age"), "x"), col("zone")).from_(table("t")))
            starred = ctx.create_temp("starred", exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("s")))
                                      .from_(table(named, "s")).where(exp.Is(this=col("x", "s"), expression=exp.null())))
            joined = ctx.create_temp("joined", exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("a")))
                                     .from_(table(named, "a"))
                                     .join(table("t", "b"), on=exp.EQ(this=col("x", "a"), expression=col("age", "b"))))
            assert ctx.columns(named) == ("x", "zone")
            assert ctx.columns(starred) == ("x", "zone")
            assert ctx.columns(joined) is None and ctx.columns("t") is None
    finally:
        db.dispose()
