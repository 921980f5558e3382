"""The PostgreSQL proxy streams anonymized answers: read from the library a batch at a time as
they are sent, a portal read in pieces holds its run (and temp tables) until it is closed, and a
client gone half-way leaves no temp table behind."""
from __future__ import annotations

import psycopg

from sqlanon.proxy.pg import codec
from tests.helpers import assert_alpha_k, wait_for
from tests.proxy.pg_support import RawClient, pg_proxy, temp_tables  # noqa: F401 - the fixture

#: 13 patients × 100 numbers: several of the proxy's batches of 500 rows
MANY = "SELECT age, sex, zip, disease, n FROM patients CROSS JOIN numbers WHERE n <= 100"


def test_a_large_answer_arrives_whole(pg_proxy):
    with pg_proxy.connect() as c:
        rows = c.execute(MANY).fetchall()
        assert len(rows) <= 1300 and len(rows) > 1000
        assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2 * 100, alpha=0.5)
        # read in the extended protocol, binary, through psycopg's stream (one Execute)
        cur = c.cursor(binary=True)
        streamed = list(cur.stream(MANY))
        assert len(streamed) == len(rows) and all(isinstance(r[4], int) for r in streamed)
    wait_for(lambda: temp_tables(pg_proxy.db_url) == [])


def test_a_suspended_portal_holds_its_run_until_closed(pg_proxy):
    raw = RawClient(pg_proxy)
    try:
        raw.send(codec.parse("", MANY) + codec.bind("p", "", []) + codec.execute("p", 700) + codec.FLUSH)
        types = [raw.receive()[0] for _ in range(4)]
        assert types == [b"1", b"2", b"D", b"D"]
        while (typ := raw.receive()[0]) == b"D":
            pass
        assert typ == b"s"  # PortalSuspended after 700 rows; the rest still in the database
        assert temp_tables(pg_proxy.db_url)
        raw.send(codec.execute("p", 5) + codec.close(b"P", "p") + codec.SYNC)
        replies = [t for t, _ in raw.until_ready()]
        assert replies == [b"D"] * 5 + [b"s", b"3", b"Z"]
        wait_for(lambda: temp_tables(pg_proxy.db_url) == [])
        # read to the end: CommandComplete counts every row sent
        raw.send(codec.parse("", MANY) + codec.bind("", "", []) + codec.execute("", 1000) + codec.execute("", 0)
                 + codec.SYNC)
        replies = raw.until_ready()
        tags = [b.rstrip(b"\0") for t, b in replies if t == b"C"]
        data = sum(1 for t, _ in replies if t == b"D")
        assert [t for t, _ in replies if t not in (b"D",)] == [b"1", b"2", b"s", b"C", b"Z"]
        assert tags == [f"SELECT {data}".encode()] and data > 1000
    finally:
        raw.close()
    wait_for(lambda: temp_tables(pg_proxy.db_url) == [])


def test_a_client_gone_with_a_suspended_portal_leaves_no_temp_table(pg_proxy):
    raw = RawClient(pg_proxy)
    raw.send(codec.parse("", MANY) + codec.bind("p", "", []) + codec.execute("p", 10) + codec.FLUSH)
    while raw.receive()[0] != b"s":
        pass
    assert temp_tables(pg_proxy.db_url)
    raw.close()
    wait_for(lambda: temp_tables(pg_proxy.db_url) == [])
    with pg_proxy.connect() as c:  # the proxy serves on
        assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)


def test_a_refusal_comes_before_any_row(pg_proxy):
    with pg_proxy.connect() as c:
        try:
            c.execute("SELECT name FROM patients CROSS JOIN numbers")
        except psycopg.Error as e:
            assert "identifier" in str(e)
        else:
            raise AssertionError("an identifier column was released")
