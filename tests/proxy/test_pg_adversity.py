"""Adversity for the PostgreSQL front-end: many clients at once, clients killed mid-result,
malformed frames and start-up packets (hypothesis), a lost database connection, cancel
requests — each must leave other clients, the proxy and the database as they were."""
from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
import subprocess
import sys
import threading
import time

import psycopg
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_alpha_k, wait_for
from tests.proxy.pg_support import pg_proxy, start_proxy, temp_tables  # noqa: F401 - fixture

BIG = "SELECT a.n, b.h FROM numbers a CROSS JOIN numbers b"


def proxy_backends(url: str, *, active: bool = False) -> list[int]:
    """Process ids of the proxy's own database connections (relay)."""
    engine = sa.create_engine(url)
    with engine.connect() as c:
        rows = c.exec_driver_sql("SELECT pid, state FROM pg_stat_activity WHERE application_name = 'sqlanon-proxy' "
                                 "AND datname = current_database()").fetchall()
    engine.dispose()
    return [pid for pid, state in rows if not active or state == "active"]



def test_hundred_concurrent_clients(pg_proxy):
    async def client(i: int) -> tuple[int, list]:
        async with await psycopg.AsyncConnection.connect(pg_proxy.conninfo(), autocommit=True) as c:
            row = await (await c.execute("SELECT n FROM numbers WHERE n = %s", (i + 1,))).fetchone()
            anonymized = []
            if i % 25 == 0:
                anonymized = await (await c.execute("SELECT age, sex, zip, disease FROM patients")).fetchall()
            return row[0], anonymized

    async def main() -> list:
        return await asyncio.gather(*(client(i) for i in range(100)))

    t0 = time.perf_counter()
    results = asyncio.run(main())
    assert [n for n, _ in results] == list(range(1, 101))
    for _, rows in results[::25]:
        assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
    assert time.perf_counter() - t0 < 60
    assert temp_tables(pg_proxy.db_url) == []


KILLED_CLIENT = """
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as c:
    cur = c.cursor()
    for i, _ in enumerate(cur.stream(sys.argv[2])):
        if i == 1000:
            print("streaming", flush=True)
"""


@pytest.mark.parametrize("query", [BIG, "SELECT age, sex, zip, disease FROM patients CROSS JOIN wards"],
                         ids=["relayed", "anonymized"])
def test_client_killed_mid_result(pg_proxy, query):
    with pg_proxy.connect() as other:
        proc = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, pg_proxy.conninfo(), query],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if query == BIG:
            assert proc.stdout.readline().strip() == "streaming", proc.stderr.read()
        else:
            time.sleep(0.3)  # killed while the library runs, or while it sends the rows
        proc.kill()
        proc.wait()
        assert other.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)
        rows = other.execute("SELECT age, disease FROM patients").fetchall()
        assert_alpha_k(rows, qi=[0], sens=1, k=2, alpha=None)
    # the relayed query does not run on for a client that is gone; temp tables are dropped
    wait_for(lambda: proxy_backends(pg_proxy.db_url, active=True) == [])
    wait_for(lambda: temp_tables(pg_proxy.db_url) == [])


def _exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data``, close our side, and read until the proxy closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            return b""
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk


def _packet(code: int, body: bytes = b"") -> bytes:
    return struct.pack("!ii", len(body) + 8, code) + body


start_packets = st.one_of(
    st.binary(max_size=64),
    st.builds(lambda n, rest: struct.pack("!i", n) + rest, st.integers(-2**31, 2**31 - 1), st.binary(max_size=32)),
    st.builds(lambda code, body: _packet(code, body), st.sampled_from([196608, 80877103, 80877104, 80877102, 0]),
              st.binary(max_size=48)),
    st.builds(lambda body: _packet(196608, body), st.lists(st.sampled_from(
        [b"user\0", b"alice\0", b"database\0", b"\0", b"options\0", b"-c x=y\0", b"\xff\0"]),
        max_size=8).map(b"".join)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start_packets)
def test_fuzzed_start_up_packets_get_an_answer_or_a_close(pg_proxy, data):
    t0 = time.perf_counter()
    reply = _exchange(pg_proxy.port, data)
    assert time.perf_counter() - t0 < 10
    assert reply == b"" or reply[:1] in (b"E", b"N", b"S", b"R")


def test_encryption_requests_and_stray_cancel_requests(pg_proxy):
    with socket.create_connection(("127.0.0.1", pg_proxy.port), timeout=10) as s:
        s.sendall(_packet(80877104))  # GSSENCRequest: not offered
        assert s.recv(1) == b"N"
        s.sendall(_packet(80877103))  # SSLRequest: TLS is configured
        assert s.recv(1) == b"S"
    # plaintext pipelined behind the SSLRequest would be read as if it came over TLS: refused
    reply = _exchange(pg_proxy.port, _packet(80877103) + _packet(196608, b"user\0alice\0\0"))
    assert reply[:1] == b"E" and b"SSL request" in reply
    assert _exchange(pg_proxy.port, _packet(80877102, struct.pack("!ii", 1, 2))) == b""  # unknown key: no answer


def test_proxy_survives_the_fuzzing_and_malformed_frames(pg_proxy):
    with pg_proxy.connect() as c:
        sock = socket.socket(fileno=c.pgconn.socket)
        try:
            sock.sendall(b"Q" + struct.pack("!i", 0x7FFFFFF0) + b"SELECT")  # a frame above the limit
            time.sleep(0.2)
        finally:
            sock.detach()
        with pytest.raises(psycopg.OperationalError):
            c.execute("SELECT 1")
    with pg_proxy.connect() as c:
        assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)


def test_lost_database_connection_is_an_error_not_a_hang(pg_proxy):
    with pg_proxy.connect() as c:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                c.execute("SELECT COUNT(*) FROM numbers a, numbers b, numbers c")
            except BaseException as e:  # noqa: BLE001 - checked below
                errors.append(e)

        t = threading.Thread(target=run)
        t.start()
        wait_for(lambda: proxy_backends(pg_proxy.db_url, active=True) != [])
        engine = sa.create_engine(pg_proxy.db_url)
        with engine.connect() as admin:
            for pid in proxy_backends(pg_proxy.db_url, active=True):
                admin.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
        engine.dispose()
        t.join(20)
        assert not t.is_alive() and errors and isinstance(errors[0], psycopg.Error)
    with pg_proxy.connect() as c:  # a fresh database connection for the next client
        assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)


def test_clients_queue_for_a_database_connection_then_get_an_error(pg_proxy, monkeypatch):
    monkeypatch.setattr("sqlanon.proxy.pg.server.RELAY_CONNECTIONS", 1)
    monkeypatch.setattr("sqlanon.proxy.pg.backend.ACQUIRE_TIMEOUT", 1.0)
    proxy, port = start_proxy(pg_proxy)
    try:
        with pg_proxy.connect(port=str(port)) as a, pg_proxy.connect(port=str(port)) as b:
            a.execute("BEGIN")  # a holds the only connection until its transaction ends
            a.execute("SELECT 1")
            t0 = time.perf_counter()
            with pytest.raises(psycopg.OperationalError, match="no database connection became free"):
                b.execute("SELECT 2")
            assert 0.9 < time.perf_counter() - t0 < 10
            threading.Timer(0.3, lambda: a.execute("COMMIT")).start()
            assert b.execute("SELECT 3").fetchone() == (3,)  # waited for a's connection
    finally:
        proxy.stop()


def test_cancel_request(pg_proxy):
    with pg_proxy.connect() as c:
        threading.Timer(0.5, c.cancel_safe).start()
        t0 = time.perf_counter()
        with pytest.raises(psycopg.errors.QueryCanceled):
            c.execute("SELECT COUNT(*) FROM numbers a, numbers b, numbers c")
        assert time.perf_counter() - t0 < 10
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_audit_trail(pg_proxy, caplog):
    caplog.set_level(logging.INFO, logger="sqlanon.audit")
    with pg_proxy.connect() as c:
        c.execute("SELECT ward FROM wards WHERE floor = %s", (1,))
        c.execute("SELECT age, disease FROM patients")
        with pytest.raises(psycopg.Error):
            c.execute("SET ROLE postgres")

    def alices() -> list[dict]:
        events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "sqlanon.audit"]
        return [e for e in events if e["client"] == "alice" and e["front_end"] == "proxy-postgresql"]

    wait_for(lambda: any(e["decision"] == "passed" for e in alices()))  # relayed events: the audit thread
    mine = alices()
    decisions = {(e["decision"], e.get("rows")) for e in mine}
    assert ("passed", 1) in decisions
    assert any(e["decision"] == "anonymized" and e["table"] == "patients" for e in mine)
    assert any(e["decision"] == "rejected" and e["construct"] == "SET ROLE" for e in mine)


def test_idle_pooled_connections_ended_by_the_database_are_not_reused(pg_proxy):
    with pg_proxy.connect() as c:
        assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)  # a pooled connection, idle now
        engine = sa.create_engine(pg_proxy.db_url)
        with engine.connect() as admin:
            idle = proxy_backends(pg_proxy.db_url)
            assert idle
            for pid in idle:
                admin.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
        engine.dispose()
        wait_for(lambda: not set(idle) & set(proxy_backends(pg_proxy.db_url)))
        for _ in range(3):  # a fresh connection each time, never the stale one's FATAL
            assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)
