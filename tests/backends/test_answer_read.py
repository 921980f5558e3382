"""An answer read whole (``execute``): where the driver can, its rows are converted as they
arrive (PostgreSQL's chunked rows: RunContext.read_whole); the answer keeps its columns when it
is empty, fails whole when the database fails amid its rows, and comes in a uniform random order."""
from __future__ import annotations

from collections import Counter

import pytest

from sqlanon.backends import postgres
from sqlanon.errors import BackendError
from tests.helpers import connect, load_table

ROWS = [(i // 5 * 5, f"v{i:03d}", i) for i in range(300)]
POLICY = {"tables": {"s": {"quasi_identifiers": {"a": {"type": "interval", "levels": [10]}},
                           "insensitive": ["v", "n"], "privacy": {"k": 5}}}}


@pytest.fixture
def s_url(db_url: str) -> str:
    load_table(db_url, "s", [("a", "int"), ("v", "text"), ("n", "int")], ROWS)
    return db_url


def test_every_row_comes_in_chunks_and_none_keeps_the_columns(s_url, monkeypatch):
    monkeypatch.setattr(postgres, "ANSWER_CHUNK", 7)  # 300 rows in 43 chunks on PostgreSQL
    with connect(s_url, policy=POLICY) as db:
        whole = db.execute("SELECT v, a FROM s")
        # 300 rows released, none answered: read in chunks on PostgreSQL, which tell no columns
        none = db.execute("SELECT a AS decade, COUNT(*) AS n FROM s GROUP BY a HAVING COUNT(*) > 1000")
        empty = db.execute("SELECT v, a AS decade FROM s WHERE v = 'none'")  # nothing released
    assert whole.columns == ["v", "a"] and sorted(r[0] for r in whole.rows) == [v for _, v, _ in ROWS]
    assert none.columns == ["decade", "n"] and none.rows == [] and none.report.rows_released == 300
    assert empty.columns == ["v", "decade"] and empty.rows == []


@pytest.mark.backends("postgresql")
def test_an_error_amid_the_rows_fails_the_whole_answer(s_url, monkeypatch):
    """The rows read before the database failed are not handed out, and the run's connection
    is clean for the next query."""
    import psycopg

    monkeypatch.setattr(postgres, "ANSWER_CHUNK", 1)
    seen = []
    stream = psycopg.Cursor.stream

    def counted(self, *args, **kw):
        for row in stream(self, *args, **kw):
            seen.append(row)
            yield row

    monkeypatch.setattr(psycopg.Cursor, "stream", counted)
    with connect(s_url, policy=POLICY) as db:
        with pytest.raises(BackendError, match="division by zero"):
            db.execute("SELECT v, 1 / (n - 299) AS x FROM s")
        assert seen  # rows had come before the error
        after = db.execute("SELECT v FROM s")
    assert len(after.rows) == 300


def test_the_order_is_uniform(s_url):
    """Which row comes first is uniform over the 300: the release's storage order does not
    show through."""
    with connect(s_url, policy=POLICY) as db:
        firsts = Counter(db.execute("SELECT v FROM s").rows[0][0] for _ in range(30))
    # a uniform first row repeats in 30 draws of 300 with probability ~0.77, thrice or more ~0.03;
    # a storage order that showed through would repeat every time
    assert max(firsts.values()) <= 4 and len(firsts) >= 20
