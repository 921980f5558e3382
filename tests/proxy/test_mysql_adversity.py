"""Adversity (STYLE habit 11): many clients at once, clients that vanish mid-answer, a database
connection killed under a client, and garbage instead of a handshake. One client's failure must
never reach another, and nothing may be left behind (database connections, temp tables)."""
from __future__ import annotations

import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.proxy.mysql import codec
from tests.helpers import assert_alpha_k, wait_for
from tests.proxy.mysql_harness import env  # noqa: F401 - fixture

QUERY = "SELECT age, sex, zip, disease FROM patients"
BIG_ROWS = 50_000


def backend_connections(env) -> int:
    with env.admin.connect() as c:
        return c.exec_driver_sql("SELECT COUNT(*) FROM information_schema.processlist WHERE db = %s",
                                 (env.database,)).scalar()


def settled(env, quiet: float = 0.5, timeout: float = 10.0) -> int:
    """The count of the database's connections once it stops changing: sessions that earlier
    tests ended (a closed pool, a stream given up) leave the process list in the background."""
    last, since, deadline = backend_connections(env), time.time(), time.time() + timeout
    while time.time() < deadline:
        time.sleep(0.05)
        now = backend_connections(env)
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= quiet:
            break
    return last



def test_hundred_concurrent_clients(env):
    barrier = threading.Barrier(100, timeout=60)

    def client(i: int) -> bool:
        with env.connect("alice" if i % 2 else "bob") as c, c.cursor() as cur:
            barrier.wait()
            cur.execute("SELECT id FROM items WHERE id = %s", (i % 3 + 1,))
            assert cur.fetchall() == ((i % 3 + 1,),)
            if i % 12 == 0:  # 9 anonymizations (~140 statements each): more than LIBRARY_SLOTS, so some queue
                cur.execute(QUERY)
                assert_alpha_k(cur.fetchall(), qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
            with pytest.raises(pymysql.err.MySQLError):
                cur.execute("SELECT name FROM patients")
            cur.execute("SELECT %s", (i,))
            return cur.fetchall() == ((i,),)

    with ThreadPoolExecutor(100) as pool:
        assert all(pool.map(client, range(100), timeout=120))


def test_client_killed_mid_result(env):
    before = settled(env)
    victim = env.connect(cursorclass=pymysql.cursors.SSCursor)
    cur = victim.cursor()
    cur.execute("SELECT id, label FROM big")
    assert [cur.fetchone() for _ in range(10)][-1] is not None
    wait_for(lambda: backend_connections(env) == before + 1)
    victim._sock.shutdown(socket.SHUT_RDWR)
    victim._sock.close()
    cur._result.unbuffered_active = False  # PyMySQL would read the rest when collected
    with env.connect() as other, other.cursor() as oc:
        oc.execute("SELECT COUNT(*) FROM big")
        assert oc.fetchall() == ((50_000,),)
    wait_for(lambda: backend_connections(env) == before, "the victim's database connection stayed open")


def test_client_killed_during_anonymization_leaves_no_temp_table(env):
    db = env.proxy.proxy.session.db
    victim = env.connect("bob")
    victim._execute_command(pymysql.constants.COMMAND.COM_QUERY, QUERY)
    session = env.proxy.sessions[-1]
    victim._sock.close()
    with env.connect() as other, other.cursor() as cur:  # others go on meanwhile
        cur.execute("SELECT COUNT(*) FROM items")
        assert cur.fetchall() == ((3,),)
    wait_for(lambda: session.last_temp_tables and db.engine.pool.checkedout() == 0)
    conns = [db.raw_connection() for _ in range(db.engine.pool.checkedin())]
    try:
        for conn in conns:
            c = conn.cursor()
            assert not any(db.backend.temp_table_exists(c, name) for name in session.last_temp_tables)
            c.close()
    finally:
        for conn in conns:
            conn.close()


def test_lost_database_connection_is_an_error_then_a_new_one(env):
    with env.connect() as c, c.cursor() as cur:
        cur.execute("SELECT @@pseudo_thread_id")
        (backend_id,), = cur.fetchall()
        with env.admin.connect() as admin:
            admin.exec_driver_sql(f"KILL {int(backend_id)}")
        t0 = time.time()
        with pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute("SELECT id FROM items")
        assert e.value.args[0] == 2013 and time.time() - t0 < 5
        cur.execute("SELECT COUNT(*) FROM items")
        assert cur.fetchall() == ((3,),)


def _greeting(sock: socket.socket) -> bytes:
    head = sock.recv(4, socket.MSG_WAITALL)
    return sock.recv(int.from_bytes(head[:3], "little"), socket.MSG_WAITALL)


def _answer_or_close(env, data: bytes) -> None:
    """Send ``data`` after the greeting; the proxy must answer and/or close, within seconds."""
    with socket.create_connection(("127.0.0.1", env.port), timeout=5) as s:
        assert _greeting(s)[:1] == b"\x0a"
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):  # raises socket.timeout if the proxy hangs
            pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=1, max_size=200))
def test_garbage_instead_of_a_handshake(env, data):
    _answer_or_close(env, data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=120), st.integers(0, 255), st.sampled_from([codec.PROTOCOL_41 | codec.SSL,
                                                                      codec.PROTOCOL_41 | codec.PLUGIN_AUTH, 0]))
def test_framed_garbage_handshake_responses(env, payload, seq, caps):
    _answer_or_close(env, codec.frame(struct.pack("<I", caps) + payload, seq)[0])


def test_proxy_survives_garbage_and_refuses_huge_packets(env):
    with socket.create_connection(("127.0.0.1", env.port), timeout=5) as s:
        _greeting(s)
        s.sendall(b"\xff\xff\xff\x01")  # announces 16 MiB: refused before any of it is read
        answer = s.recv(65536)
        assert answer[4:5] == b"\xff" and b"max_allowed_packet" in answer  # MySQL's error 1153, then
        assert s.recv(65536) == b""  # the connection closes
    with env.connect() as c, c.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)


def test_statements_up_to_max_allowed_packet_and_an_error_above(env):
    """A statement above 1 MiB (multi-frame above 16 MiB) reaches the library, which answers
    it by name; one above the database's max_allowed_packet gets MySQL's own error 1153, not a
    silently closed connection."""
    with env.connect() as c, c.cursor() as cur:
        cur.execute("SELECT @@max_allowed_packet")
        limit = int(cur.fetchone()[0])
    big = "SELECT id FROM items WHERE name = '" + "x" * (2 << 20) + "'"
    assert 2 << 20 < limit
    with env.connect() as c, c.cursor() as cur:
        with pytest.raises(pymysql.MySQLError) as e:
            cur.execute(big)
        assert "statement too long" in str(e.value)
        cur.execute("SELECT 1")  # the connection goes on
        assert cur.fetchall() == ((1,),)
    with env.connect() as c, c.cursor() as cur:
        with pytest.raises(pymysql.MySQLError) as e:
            cur.execute("SELECT '" + "y" * (limit + 10) + "'")
        assert e.value.args[0] == 1153


def test_kill_query_stops_a_relayed_statement_of_the_same_client(env):
    """The mariadb CLI's Ctrl-C: KILL QUERY <proxy connection id> from a second connection."""
    slow = "SELECT COUNT(*) FROM big x, big y WHERE x.label < y.label"
    victim, other = env.connect(), env.connect()
    outcome: dict = {}

    def run() -> None:
        try:
            with victim.cursor() as cur:
                cur.execute(slow)
        except pymysql.err.MySQLError as e:
            outcome["errno"] = e.args[0]

    worker = threading.Thread(target=run)
    worker.start()
    try:
        def running() -> bool:
            with env.admin.connect() as c:
                return bool(c.exec_driver_sql("SELECT COUNT(*) FROM information_schema.processlist "
                                              "WHERE info LIKE %s AND id <> CONNECTION_ID()",
                                              ("%big%x.label%",)).scalar())

        wait_for(running)
        with env.connect("bob") as stranger, stranger.cursor() as cur, pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(f"KILL QUERY {victim.thread_id()}")
        assert e.value.args[0] == 1094  # another client's connection does not exist for bob
        with other.cursor() as cur:
            cur.execute(f"KILL QUERY {victim.thread_id()}")
        worker.join(20)
        assert not worker.is_alive() and outcome.get("errno") == 1317  # query execution was interrupted
        with victim.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchall() == ((1,),)
    finally:
        with env.admin.connect() as c:
            for (pid,) in c.exec_driver_sql("SELECT id FROM information_schema.processlist "
                                            "WHERE info LIKE %s AND id <> CONNECTION_ID()", ("%big%x.label%",)).all():
                c.exec_driver_sql(f"KILL QUERY {int(pid)}")
        worker.join(20)
        victim.close()
        other.close()
