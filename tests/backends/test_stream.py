"""Answers that stream (Session.stream): rows read from the database as they are fetched, the
release verified and any refusal raised before the first row, and the run's temp tables gone
however the reader stops — at the end, by close(), by breaking out of a loop, on an error."""
from __future__ import annotations

import gc
import time
import tracemalloc

import pytest
import sqlalchemy as sa

import sqlanon
from tests.helpers import assert_alpha_k, connect, load_table

POLICY = {"tables": {"s": {"quasi_identifiers": {"a": {"type": "interval", "levels": [10]}},
                           "sensitive": {"d": {}}, "insensitive": ["v"], "privacy": {"k": 5}}}}
ROWS = 3000
QUERY = "SELECT a, d, v FROM s"


@pytest.fixture
def session(db_url):
    load_table(db_url, "s", [("a", "int"), ("d", "text"), ("v", "text")],
               [(i % 60, f"d{i % 7}", f"v{i:05d}") for i in range(ROWS)])
    load_table(db_url, "plain", [("x", "int")], [(i,) for i in range(500)])
    with connect(db_url, POLICY) as s:
        yield s


def leftovers(session: sqlanon.Session, db_url: str) -> list[str]:
    """The run's temp tables the database still holds: on the pool's one connection (the run's),
    and on PostgreSQL in the server's catalog, whatever session holds them."""
    pool = session.db.engine.pool
    assert pool.checkedout() == 0, "the run kept its connection"
    found = []
    if pool.checkedin():
        raw = session.db.raw_connection()
        try:
            cur = raw.cursor()
            found = [t for t in session.last_temp_tables if session.db.backend.temp_table_exists(cur, t)]
        finally:
            raw.close()
    if session.db.backend.name == "postgresql":
        found += server_temp_tables(db_url)
    if session.db.backend.name == "mysql":
        # MariaDB lists no temp tables: a session the run ended (the reader stopped early) must be
        # gone from the server, the only sessions left the pools' own
        pooled = pool.checkedin() + (session.db._restricted.pool.checkedin() if session.db._restricted else 0)
        found += [f"session {i}" for i in orphan_sessions(session, db_url, pooled)]
    return found


def orphan_sessions(session: sqlanon.Session, db_url: str, pooled: int) -> list[int]:
    """The login's sessions beyond the ``pooled`` ones, after the server had time to end them."""
    login = sa.engine.make_url(session.db.url).username
    engine = sa.create_engine(db_url)
    try:
        for _ in range(50):
            with engine.connect() as c:
                ids = [r[0] for r in c.exec_driver_sql(
                    "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (login,))]
            if len(ids) <= pooled:
                return []
            time.sleep(0.1)
        return ids
    finally:
        engine.dispose()


def server_temp_tables(db_url: str) -> list[str]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            return [r[0] for r in c.exec_driver_sql(
                "SELECT relname FROM pg_class WHERE relpersistence = 't' AND relname LIKE 'sqlanon%%'")]
    finally:
        engine.dispose()


def test_streamed_rows_are_the_verified_release(session, db_url):
    with session.stream(QUERY, size=100) as res:
        assert res.columns == ["a", "d", "v"] and res.report.method and res.report.rows_released == ROWS
        first = res.fetchmany(250)  # across batches of 100
        one = res.fetchone()
        rest = list(res)
        assert res.fetchmany(10) == [] and res.rows.closed
    rows = first + [one] + rest
    assert len(first) == 250 and len(rows) == ROWS and all(isinstance(r, tuple) for r in rows)
    assert sorted(r[2] for r in rows) == [f"v{i:05d}" for i in range(ROWS)]
    assert_alpha_k(rows, qi=[0], sens=1, k=5, alpha=None)
    assert session.last_temp_tables and leftovers(session, db_url) == []
    # the materialized form is unchanged
    assert len(session.execute(QUERY).rows) == ROWS


def test_the_run_is_held_while_rows_are_read(session, db_url, backend):
    res = session.stream(QUERY, size=50)
    res.fetchmany(10)
    assert session.db.engine.pool.checkedout() == 1
    if backend == "postgresql":  # the check below could fail: the temp tables are there now
        assert set(session.last_temp_tables) & set(server_temp_tables(db_url))
    res.close()
    assert leftovers(session, db_url) == []


@pytest.mark.backends("postgresql")
def test_the_finish_query_has_the_release_alone(session, db_url):
    """While the answer is read, the run's only temp table is the release: the pipeline's other
    tables (the selection's copy among them) were dropped before the finish query ran, as the
    login's identity would not hide them on SQLite, MariaDB or Spark (checked here where the
    server lists every session's temp tables)."""
    with session.stream(QUERY, size=50) as res:
        res.fetchmany(10)
        live = set(server_temp_tables(db_url))
        made = set(session.last_temp_tables)
        assert len(made) > 2, "the pipeline made its tables"
        assert len(live & made) == 1, f"tables the finish query could read: {sorted(live & made)}"
    assert leftovers(session, db_url) == []


@pytest.mark.parametrize("how", ["close", "with", "break", "error"])
def test_a_reader_that_stops_half_way_leaves_no_temp_table(session, db_url, how):
    if how == "close":
        res = session.stream(QUERY, size=100)
        assert len(res.fetchmany(120)) == 120
        res.close()
        res.close()  # twice is harmless
        with pytest.raises(sqlanon.BackendError, match="closed"):
            res.fetchmany(1)
    elif how == "with":
        with session.stream(QUERY, size=100) as res:
            next(iter(res))
    elif how == "break":
        for n, _ in enumerate(session.stream(QUERY, size=100)):
            if n == 150:
                break
        gc.collect()  # no cycle keeps the rows alive; the collection only makes sure of it
    else:
        with pytest.raises(RuntimeError, match="the reader failed"):
            with session.stream(QUERY, size=100) as res:
                for _ in res:
                    raise RuntimeError("the reader failed")
    assert session.last_temp_tables and leftovers(session, db_url) == []
    assert len(session.execute(QUERY).rows) == ROWS  # the session goes on


def test_a_refusal_comes_before_the_first_row(session, db_url):
    with pytest.raises(sqlanon.ReleaseRefused):
        # 7 sensitive values: no release is 8-diverse; refused by the verification
        session.stream(QUERY, method="mondrian", l=8)
    assert session.last_temp_tables and leftovers(session, db_url) == []
    with pytest.raises(sqlanon.QueryRejected):
        session.stream("SELECT * FROM s; DROP TABLE s")


def test_pass_through_and_few_rows_stream_too(session, db_url):
    with session.stream("SELECT x FROM plain ORDER BY x") as res:
        assert res.report.table is None and [r[0] for r in res] == list(range(500))
    res = session.stream("SELECT x FROM plain WHERE x < 0")
    assert res.fetchmany(5) == [] and res.rows.closed
    assert leftovers(session, db_url) == []


def test_the_audit_log_counts_the_rows_read(session):
    events = []
    session.audit.sinks.append(events.append)
    with session.stream(QUERY, size=100) as res:
        res.fetchmany(130)
        assert events == []  # recorded when the answer ends
    assert [(e.decision, e.rows) for e in events] == [("anonymized", 130)]


def test_the_reader_holds_a_batch_not_the_answer(db_url):
    """30,000 rows: read as a stream, Python holds one batch of them at a time."""
    load_table(db_url, "s", [("a", "int"), ("d", "text"), ("v", "text")],
               [(i % 60, f"d{i % 7}", f"value number {i:06d}") for i in range(30000)])
    with connect(db_url, POLICY) as s:
        res, other = s.stream(QUERY, size=500), s.stream(QUERY, size=500)
        tracemalloc.start()
        try:
            n = sum(1 for _ in res)
            streamed = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            whole = other.fetchmany(30000)
            held = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            other.close()
    assert n == len(whole) == 30000
    assert streamed < held / 5, (streamed, held)


def test_a_streamed_release_is_logged_before_its_rows(db_url):
    """With a catalog, the release log has the answer before its first row; an answer that joins
    an unprotected table holds no read lock while it is logged (SQLite) and is audited when read."""
    load_table(db_url, "s", [("a", "int"), ("d", "text"), ("v", "text")],
               [(i % 60, f"d{i % 7}", f"v{i:05d}") for i in range(ROWS)])
    load_table(db_url, "plain", [("x", "int")], [(i,) for i in range(500)])
    with connect(db_url, POLICY, catalog=True) as s:
        with s.stream("SELECT s.a, s.d, s.v, plain.x FROM s JOIN plain ON plain.x = 7", size=100) as res:
            assert [r["table_name"] for r in s.releases()] == ["s"]
            rows = list(res)
        assert len(rows) == ROWS and {r[3] for r in rows} == {7}
        assert_alpha_k(rows, qi=[0], sens=1, k=5, alpha=None)
        with s.stream(QUERY) as res:  # the next answer is checked against the logged one
            assert len(res.fetchmany(10)) == 10
        assert [r["table_name"] for r in s.releases()] == ["s", "s"]


def test_closing_the_session_ends_its_answers(db_url, backend):
    load_table(db_url, "s", [("a", "int"), ("d", "text"), ("v", "text")],
               [(i % 60, f"d{i % 7}", f"v{i:05d}") for i in range(ROWS)])
    s = connect(db_url, POLICY)
    rows = iter(s.stream(QUERY, size=100))
    next(rows)
    if backend == "postgresql":
        assert server_temp_tables(db_url)
    s.close()
    assert rows.closed and s.db.engine.pool.checkedout() == 0
    if backend == "postgresql":
        assert server_temp_tables(db_url) == []


@pytest.mark.backends("postgresql")
def test_a_connection_lost_mid_answer_is_an_error_and_leaves_nothing(session, db_url):
    """PostgreSQL: every batch is a FETCH of the named cursor (MariaDB may have sent a small
    answer whole into the socket's buffers before the kill)."""
    res = session.stream(QUERY, size=100)
    res.fetchmany(10)
    engine = sa.create_engine(db_url)
    login = sa.engine.make_url(session.db.url).username
    with engine.connect() as c:  # the administrator ends the login's sessions
        c.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (login,))
    engine.dispose()
    with pytest.raises(sqlanon.BackendError):
        res.fetchmany(ROWS)
    res.close()
    assert leftovers(session, db_url) == []
    assert len(session.execute(QUERY).rows) == ROWS  # a new connection serves the next query
