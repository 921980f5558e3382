"""A whole answer's random order made in the client (finish/shuffle.py): only where it is the
statement's whole order over every row, and then a uniform permutation."""
from __future__ import annotations

from collections import Counter

import pytest
import sqlglot

from sqlanon.finish import shuffle
from sqlanon.finish.shuffle import shuffled, unordered


def _unordered(sql: str) -> str | None:
    out = unordered(sqlglot.parse_one(sql, read="postgres"))
    return None if out is None else out.sql("postgres")


def test_a_random_order_alone_is_left_to_the_client():
    assert _unordered("SELECT a, b FROM r ORDER BY RANDOM()") == "SELECT a, b FROM r"
    # DISTINCT rows ordered outside (pushdown/fragment.py's remainder)
    assert _unordered("SELECT * FROM (SELECT DISTINCT a FROM r) AS q ORDER BY RANDOM()") == \
        "SELECT * FROM (SELECT DISTINCT a FROM r) AS q"


@pytest.mark.parametrize("sql", [
    "SELECT a FROM r ORDER BY RANDOM() LIMIT 20",  # a random sample: the database picks it
    "SELECT a FROM r ORDER BY RANDOM() OFFSET 5",
    "SELECT a FROM r ORDER BY a, RANDOM()",  # the user's order, ties broken at random
    "SELECT a FROM r ORDER BY a",
    "SELECT COUNT(*) FROM r",
    "SELECT a FROM r UNION SELECT a FROM s ORDER BY RANDOM()",
])
def test_any_other_order_stays_in_the_statement(sql):
    assert _unordered(sql) is None


@pytest.mark.parametrize("numpy_rows", [0, 10 ** 9], ids=["numpy", "random"])
def test_every_permutation_comes_out(numpy_rows, monkeypatch):
    """Both ways of shuffling are uniform: each of the 24 orders of 4 rows turns up about as
    often in 4,800 shuffles (expected 200 each; below 120 or above 280 is far beyond chance)."""
    monkeypatch.setattr(shuffle, "NUMPY_ROWS", numpy_rows)
    rows = [(i, f"v{i}") for i in range(4)]
    seen = Counter(tuple(shuffled(list(rows))) for _ in range(4800))
    assert len(seen) == 24 and all(120 < n < 280 for n in seen.values())
    big = [(i,) for i in range(1000)]
    out = shuffled(list(big))
    assert sorted(out) == big and out != big


def test_numpy_is_imported_ahead_for_a_large_whole_answer_only():
    """In a fresh process (numpy not imported yet): a large selection read whole starts numpy's
    import in a thread; a small one, or an answer grouped, ordered or limited, does not."""
    import subprocess
    import sys

    script = """
import sys, sqlglot
from sqlanon.finish.shuffle import prepare
tree = lambda sql: sqlglot.parse_one(sql, read="postgres")
for sql, rows in [("SELECT a FROM r", 1000), ("SELECT a FROM r", None), ("SELECT a FROM r LIMIT 5", 10**6),
                  ("SELECT a, COUNT(*) FROM r GROUP BY a", 10**6), ("SELECT a FROM r ORDER BY a", 10**6)]:
    assert prepare(tree(sql), rows) is None and "numpy" not in sys.modules, sql
thread = prepare(tree("SELECT a, b FROM r WHERE a > 1"), 10**6)
thread.join()
assert "numpy" in sys.modules and sys.modules["numpy"].random is not None
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
