"""Every hierarchy level gives the same label on every backend (SQL generated per dialect)."""
from __future__ import annotations

import datetime

import pytest
from sqlglot import exp

from sqlanon.backends.connect import open_database
from sqlanon.context import RunContext
from sqlanon.hierarchy import DateHierarchy, IntervalHierarchy, MaskHierarchy, SuppressHierarchy, TaxonomyHierarchy
from sqlanon.sql.templates import col
from tests.helpers import connect, load_table

CASES = [
    ("n", IntervalHierarchy([5, 10, 20]), [(34, ["34", "[30,35)", "[30,40)", "[20,40)", "*"]),
                                          (-3, ["-3", "[-5,0)", "[-10,0)", "[-20,0)", "*"]),
                                          (40, ["40", "[40,45)", "[40,50)", "[40,60)", "*"])]),
    ("t", MaskHierarchy([1, 3]), [("22981", ["22981", "2298*", "22***", "*"]), ("ab", ["ab", "a*", "***", "*"])]),
    ("d", DateHierarchy(["month", "year", "decade"]),
     [(datetime.date(2016, 6, 21), ["2016-06-21", "2016-06", "2016", "2010s", "*"])]),
    ("t", SuppressHierarchy(), [("x", ["x", "*"])]),
    ("t", TaxonomyHierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]]),
     [("a", ["a", "ab", "*"]), ("c", ["c", "c", "*"])]),
]


@pytest.mark.parametrize("column,h,values", CASES, ids=[c[1].kind for c in CASES])
def test_labels_agree_across_backends(db_url, column, h, values):
    rows = [(v if column == "n" else None, v if column == "t" else None, v if column == "d" else None)
            for v, _ in values]
    load_table(db_url, "h", [("n", "int"), ("t", "text"), ("d", "date")], rows)
    db = open_database(db_url)
    try:
        with RunContext(db) as ctx:
            for value, expected in values:
                got = []
                for level in range(h.height + 1):
                    literal = col(column)
                    where = col(column).eq(exp.Literal.number(value) if column == "n" else exp.Literal.string(str(value)))
                    got.append(ctx.scalar(exp.select(db.backend.binary_text(h.expr(literal, level)))
                                          .from_(exp.to_table("h", quoted=True)).where(where)))
                assert got == expected
    finally:
        db.dispose()


def test_null_stays_null_below_the_root(db_url):
    load_table(db_url, "h", [("n", "int")], [(None,)])
    db = open_database(db_url)
    h = IntervalHierarchy([10])
    try:
        with RunContext(db) as ctx:
            got = [ctx.scalar(exp.select(h.expr(col("n"), lv)).from_(exp.to_table("h", quoted=True)))
                   for lv in range(h.height + 1)]
    finally:
        db.dispose()
    assert got == [None, None, "*"]


def test_a_taxonomy_that_misses_a_value_is_refused_at_connect(db_url):
    """One scan finds that some taxonomy misses a value; the error then names the table, the
    column and the values (NULL is not a value a taxonomy must hold)."""
    from sqlanon.errors import PolicyError

    load_table(db_url, "tx", [("a", "text"), ("b", "text"), ("s", "text")],
               [("x", "p", "flu"), ("y", "q", "flu"), (None, "r", "flu"), ("x", "p", "hiv")])
    covering = {"a": [["x", "*"], ["y", "*"]], "b": [["p", "*"], ["q", "*"], ["r", "*"]]}

    def policy(b_rows: list[list[str]]) -> dict:
        return {"tables": {"tx": {"quasi_identifiers": {"a": {"type": "taxonomy", "rows": covering["a"]},
                                                        "b": {"type": "taxonomy", "rows": b_rows}},
                                  "sensitive": {"s": {}}, "privacy": {"k": 2}}}}

    with connect(db_url, policy(covering["b"])):
        pass
    with pytest.raises(PolicyError) as refused:
        connect(db_url, policy(covering["b"][:2]))
    message = str(refused.value)
    assert message.startswith("policy: tx.b: taxonomy") and message.endswith("does not cover the values ['r']")
