"""Graceful shutdown of ``sqlanon proxy``, the real process receiving real signals: on SIGTERM it
accepts no more connections, an idle client gets its protocol's shutdown error at once
(PostgreSQL 57P01, MySQL 1053), a statement under way gets its answer if it finishes within the
drain timeout and the shutdown error if not (a relayed one is then stopped on the database, an
anonymization abandoned), a second signal ends the drain, and the process exits 0 with one line
of log and no traceback.

A statement is kept under way by a lock the test holds on the database directly."""
from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import psycopg
import pymysql
import pytest
import sqlalchemy as sa
import yaml

from sqlanon import demo
from sqlanon.proxy.users import set_user
from tests.conftest import fresh_database
from tests.helpers import load_table, restricted, wait_for
from tests.proxy import mysql_harness, pg_support
from tests.servers.local import free_port

ROOT = Path(__file__).resolve().parents[2]
#: seconds the process may take beyond the drain timeout (the farewell of cut statements, exit)
MARGIN = 5.0


@dataclass
class Database:
    protocol: str
    url: str
    policy: Path
    users: Path
    login: str
    reader: str

    @property
    def name(self) -> str:
        return sa.engine.make_url(self.url).database

    def admin(self) -> Any:
        u = sa.engine.make_url(self.url)
        if self.protocol == "postgresql":
            return psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password or "",
                                   dbname=u.database, autocommit=True)
        return pymysql.connect(host=u.host, port=u.port, user=u.username, password=u.password or "",
                               database=u.database, autocommit=True)

    def lock(self, table: str) -> Callable[[], None]:
        """Hold a lock that keeps statements over ``table`` waiting; returns its release."""
        c = self.admin()
        if self.protocol == "postgresql":
            c.execute("BEGIN")
            c.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            release = lambda: c.execute("COMMIT")  # noqa: E731
        else:
            c.cursor().execute("SET SESSION lock_wait_timeout = 20")
            c.cursor().execute(f"LOCK TABLES {table} WRITE")
            release = lambda: c.cursor().execute("UNLOCK TABLES")  # noqa: E731

        def done() -> None:
            release()
            c.close()
        return done

    def waiting(self) -> int:
        """The proxy's statements waiting for the test's lock on the database."""
        sql = ("SELECT COUNT(*) FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'"
               if self.protocol == "postgresql" else
               "SELECT COUNT(*) FROM information_schema.processlist WHERE user = %s AND state LIKE 'Waiting%%lock'")
        return self._count(sql)

    def connections(self) -> int:
        """The proxy's connections to the database."""
        sql = ("SELECT COUNT(*) FROM pg_stat_activity WHERE usename = %s" if self.protocol == "postgresql" else
               "SELECT COUNT(*) FROM information_schema.processlist WHERE user = %s")
        return self._count(sql)

    def _count(self, sql: str) -> int:
        login = sa.engine.make_url(self.login).username
        with self.admin() as c:
            cur = c.cursor()
            cur.execute(sql, (login,))
            return cur.fetchone()[0]


#: protocol → (an unprotected table, a relayed statement over it and its answer, the listen option)
LONG = {"postgresql": ("wards", "SELECT COUNT(*) FROM wards", [(3,)], "--listen-pg"),
        "mysql": ("items", "SELECT COUNT(*) FROM items", [(3,)], "--listen-mysql")}
#: an anonymized statement (it runs in a library thread)
ANONYMIZED = ("patients", "SELECT age, disease FROM patients")


def _setup(protocol: str, url: str, tmp: Path) -> tuple[Path, Path]:
    if protocol == "postgresql":
        return pg_support.prepare(url, tmp)
    load_table(url, "patients", mysql_harness.PATIENT_COLS, demo.PATIENTS)
    load_table(url, "items", [("id", "int"), ("name", "text")], [(1, "a"), (2, "b"), (3, "c")])
    policy = tmp / "policy.yml"
    policy.write_text(yaml.safe_dump(mysql_harness.POLICY))
    users = tmp / "users.yml"
    set_user(users, "alice", mysql_harness.PASSWORDS["alice"], native=True)
    return policy, users


@pytest.fixture(scope="module", params=["postgresql", "mysql"])
def database(request, servers, tmp_path_factory) -> Iterator[Database]:
    tmp = tmp_path_factory.mktemp(f"shutdown-{request.param}")
    with fresh_database(request.param, servers, tmp) as url:
        policy, users = _setup(request.param, url, tmp)
        login, reader = restricted(url, policy)
        yield Database(request.param, url, policy, users, login, reader)


class Spawned:
    """``sqlanon proxy`` in a process of its own, and clients of it."""

    def __init__(self, db: Database, drain: float):
        self.db = db
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sqlanon", "--reader-role", db.reader, "proxy", "--db", db.login, "--policy",
             str(db.policy), "--users", str(db.users), "--without-catalog", LONG[db.protocol][3],
             f"127.0.0.1:{self.port}", "--drain-timeout", str(drain)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not self.accepts():
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                pytest.fail(f"the proxy did not start: {self.proc.communicate()[1]}")
            time.sleep(0.1)
        self.signalled = 0.0
        self.clients: list[Any] = []

    def accepts(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def connect(self) -> Any:
        if self.db.protocol == "postgresql":
            c = psycopg.connect(host="127.0.0.1", port=self.port, user="alice", password=pg_support.PASSWORD,
                                dbname=self.db.name, sslmode="disable", autocommit=True, connect_timeout=10)
        else:
            c = pymysql.connect(host="127.0.0.1", port=self.port, user="alice",
                                password=mysql_harness.PASSWORDS["alice"], database=self.db.name,
                                ssl_disabled=True, connect_timeout=10, read_timeout=60, autocommit=True)
        self.clients.append(c)
        return c

    @staticmethod
    def run(conn: Any, sql: str) -> list[tuple]:
        cur = conn.cursor()
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]

    def signal(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.signalled = self.signalled or time.monotonic()

    def exit(self, within: float) -> str:
        """Wait for the exit (code 0, within ``within`` seconds of the first signal); its stderr."""
        try:
            _, err = self.proc.communicate(timeout=within + 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the proxy did not exit: {self.proc.communicate()[1]}")
        took = time.monotonic() - self.signalled
        assert self.proc.returncode == 0, err
        assert took < within, (took, err)
        assert "Traceback" not in err, err
        assert err.count("proxy shut down") == 1, err
        return err

    def kill(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                c.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def spawn(database) -> Iterator[Callable[[float], Spawned]]:
    started: list[Spawned] = []

    def start(drain: float) -> Spawned:
        started.append(Spawned(database, drain))
        return started[-1]

    yield start
    for p in started:
        p.kill()


def is_shutdown_error(protocol: str, e: BaseException) -> bool:
    if protocol == "postgresql":
        return isinstance(e, psycopg.errors.AdminShutdown) and "administrator command" in str(e)
    return isinstance(e, pymysql.OperationalError) and e.args[0] == 1053 and "shutdown" in e.args[1]


def assert_told_unasked(protocol: str, conn: Any) -> None:
    """The shutdown error arrives unasked on a connection between statements, then the proxy
    closes it. Read from the socket: PyMySQL would take MySQL's for a lost connection (its
    sequence number is 0, as MariaDB's own is)."""
    if protocol == "postgresql":
        sock = socket.socket(fileno=conn.pgconn.socket)
        try:
            sock.settimeout(10)
            data = sock.recv(4096)
        finally:
            sock.detach()
        assert data[:1] == b"E" and b"C57P01\0" in data and b"SFATAL\0" in data, data
    else:
        conn._sock.settimeout(10)
        data = conn._sock.recv(4096)
        assert data[3:4] == b"\x00" and data[4:7] == b"\xff\x1d\x04", data  # ERR 1053, sequence 0
        assert data[7:13] == b"#08S01" and b"Server shutdown in progress" in data, data
    assert data and _closed(conn, protocol)


def _closed(conn: Any, protocol: str) -> bool:
    sock = socket.socket(fileno=conn.pgconn.socket) if protocol == "postgresql" else conn._sock
    try:
        sock.settimeout(10)
        return sock.recv(4096) == b""
    finally:
        if protocol == "postgresql":
            sock.detach()


class Background:
    """A statement in a thread: its rows or its error."""

    def __init__(self, conn: Any, sql: str):
        self.rows: list[tuple] | None = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.rows = Spawned.run(conn, sql)
            except BaseException as e:  # noqa: BLE001 - checked by the test
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def result(self, timeout: float) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the statement got no answer"
        return self.error if self.error is not None else self.rows



def test_statement_under_way_is_answered_idle_clients_told_at_once(database, spawn):
    proxy = spawn(10.0)
    table, sql, answer, _ = LONG[database.protocol]
    idle, busy = proxy.connect(), proxy.connect()
    notices: list[str | None] = []
    if database.protocol == "postgresql":
        busy.add_notice_handler(lambda diag: notices.append(diag.sqlstate))
    try:
        assert Spawned.run(idle, sql) == answer
        release = database.lock(table)
        try:
            statement = Background(busy, sql)
            wait_for(lambda: database.waiting() == 1)
            proxy.signal()
            assert_told_unasked(database.protocol, idle)  # at once, not after the drain
            assert time.monotonic() - proxy.signalled < 5
            assert not proxy.accepts()  # the listener closed before the idle clients were told
            time.sleep(0.5)
        finally:
            release()
        assert statement.result(10) == answer  # the statement under way got its answer
        # then the shutdown error: libpq passes an error that arrives between statements to the
        # notice handler, PyMySQL takes one with sequence number 0 for a lost connection (2013)
        with pytest.raises((psycopg.OperationalError, pymysql.OperationalError)) as e:
            Spawned.run(busy, sql)
        assert is_shutdown_error(database.protocol, e.value) or notices == ["57P01"] or (
            database.protocol == "mysql" and e.value.args[0] == 2013), (e.value, notices)
        err = proxy.exit(within=5.0)  # not the 10 s drain timeout: nothing was left to wait for
        assert "2 client connections closed, 0 statements cut short (drain timeout 10 s)" in err, err
    finally:
        proxy.kill()
    wait_for(lambda: database.connections() == 0)


@pytest.mark.parametrize("kind, second_signal", [("relayed", False), ("relayed", True), ("anonymized", False)],
                         ids=["drain-timeout", "second-signal", "anonymization"])
def test_statement_past_the_drain_gets_the_shutdown_error(database, spawn, kind, second_signal):
    drain = 30.0 if second_signal else 1.5
    proxy = spawn(drain)
    table, sql = LONG[database.protocol][:2] if kind == "relayed" else ANONYMIZED
    busy = proxy.connect()
    release = database.lock(table)
    try:
        statement = Background(busy, sql)
        wait_for(lambda: database.waiting() == 1)
        proxy.signal()
        if second_signal:
            time.sleep(0.5)
            proxy.proc.send_signal(signal.SIGINT)
        outcome = statement.result(drain + MARGIN)
        assert is_shutdown_error(database.protocol, outcome), repr(outcome)
        # an anonymization cut short runs on in its library thread: the process does not wait for it
        err = proxy.exit(within=(1.0 if second_signal else drain) + MARGIN)
        why = "second signal" if second_signal else "drain timeout 1.5 s"
        assert f"1 client connections closed, 1 statements cut short ({why})" in err, err
        if kind == "relayed":  # stopped on the database, not left waiting for the lock
            wait_for(lambda: database.waiting() == 0)
    finally:
        release()
        proxy.kill()
    wait_for(lambda: database.connections() == 0)
