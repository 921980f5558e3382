"""The PostgreSQL front-end under test: a fresh database with the patients table (protected) and
two unprotected tables, a users file, test certificates, and the proxy running in-process on a
free port (a thread with its own event loop). Fixtures live here, not in a shared conftest."""
from __future__ import annotations

import asyncio
import datetime as dt
import threading
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Iterator

import psycopg
import pytest
import sqlalchemy as sa
import yaml

from sqlanon.demo import PATIENTS
from sqlanon.proxy.server import ProxyConfig, serve
from sqlanon.proxy.users import set_user
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY
from tests.conftest import fresh_database
from tests.helpers import load_table, restricted
from tests.proxy.certs import make_certificate
from tests.servers.local import free_port

PASSWORD = "s3cret pass"
WARDS = [("A", 1, Decimal("12.50"), 1.5, dt.date(2020, 1, 2), True), ("B", 2, Decimal("-0.125"), -2.25,
                                                                          dt.date(1999, 12, 31), False),
         ("C", 3, None, None, None, None)]


@dataclass
class Running:
    """A proxy in front of a database: where to connect and how."""

    port: int
    db_url: str
    database: str
    users: Path
    policy: Path
    tls_dir: Path

    def conninfo(self, user: str = "alice", password: str = PASSWORD, **kw: str) -> str:
        parts = {"host": "127.0.0.1", "port": str(self.port), "user": user, "password": password,
                 "dbname": self.database, "sslmode": "disable", "connect_timeout": "10"}
        parts.update(kw)
        return " ".join(f"{k}='{v}'" for k, v in parts.items())

    def connect(self, **kw: str) -> psycopg.Connection:
        return psycopg.connect(self.conninfo(**kw), autocommit=True)


class ProxyThread:
    """``sqlanon.proxy.server.serve`` on an event loop of its own thread."""

    def __init__(self, config: ProxyConfig):
        self.config = config
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = threading.Event()
        self.error: BaseException | None = None
        self.task: asyncio.Task | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            ready = asyncio.Event()
            self.loop = asyncio.get_running_loop()
            self.task = asyncio.ensure_future(serve(self.config, ready))
            waiter = asyncio.ensure_future(ready.wait())
            await asyncio.wait([waiter, self.task], return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            self.started.set()
            try:
                await self.task
            except asyncio.CancelledError:
                pass

        try:
            with asyncio.Runner() as runner:  # closing it cancels and finishes every task
                runner.run(main())
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self.error = e
        finally:
            self.started.set()

    def start(self) -> "ProxyThread":
        self.thread.start()
        self.started.wait(30)
        if self.error is not None or (self.task is not None and self.task.done()):
            raise RuntimeError(f"proxy did not start: {self.error or self.task.exception()}")
        return self

    def stop(self) -> None:
        if self.task is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(30)


def prepare(url: str, tmp: Path) -> tuple[Path, Path]:
    """Tables, policy and users file in ``tmp``."""
    load_table(url, "patients", PATIENT_COLS, PATIENTS)
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE wards (ward text, floor int, cost numeric(10,3), ratio float8, "
                          "opened date, active boolean)")
        c.execute(sa.text("INSERT INTO wards VALUES (:a, :b, :c, :d, :e, :f)"),
                  [dict(zip("abcdef", w)) for w in WARDS])
        c.exec_driver_sql("CREATE TABLE numbers AS SELECT g AS n, md5(g::text) AS h FROM generate_series(1, 20000) g")
    engine.dispose()
    policy = tmp / "policy.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")
    users = tmp / "users.yml"
    set_user(users, "alice", PASSWORD)
    set_user(users, "bob", "another one")
    return policy, users


def start_proxy(running: Running, **kw) -> tuple[ProxyThread, int]:
    port = free_port()
    # as deployed: the proxy's account cannot read the protected table, its pipeline takes on the
    # reader role; no catalog here (its defences are tested in tests/backends/test_catalog.py)
    login, reader = restricted(running.db_url, running.policy)
    kw.setdefault("without_catalog", True)
    config = ProxyConfig(login, running.policy, running.users, listen_pg=("127.0.0.1", port), reader_role=reader,
                         **kw)
    return ProxyThread(config).start(), port


@pytest.fixture(scope="module")
def pg_proxy(servers, tmp_path_factory) -> Iterator[Running]:
    """One database and one proxy (TLS offered, not required) for a test module."""
    tmp = tmp_path_factory.mktemp("pgproxy")
    with fresh_database("postgresql", servers, tmp) as url:
        policy, users = prepare(url, tmp)
        cert, key = make_certificate(tmp)
        running = Running(0, url, sa.engine.make_url(url).database, users, policy, tmp)
        proxy, running.port = start_proxy(running, tls_cert=cert, tls_key=key)
        try:
            yield running
        finally:
            proxy.stop()


def temp_tables(url: str) -> list[str]:
    """Temporary tables any session of the database still holds."""
    engine = sa.create_engine(url)
    with engine.connect() as c:
        names = [r[0] for r in c.exec_driver_sql(
            "SELECT relname FROM pg_class WHERE relpersistence = 't' AND relkind = 'r'")]
    engine.dispose()
    return names


class RawClient:
    """Protocol 3.0 by hand, for message sequences no driver sends (one write, no Flush)."""

    def __init__(self, running: Running, user: str = "alice", password: str = PASSWORD):
        import socket

        from sqlanon.proxy.pg import codec
        from sqlanon.proxy.pg.auth import ScramClient

        self.codec = codec
        self.sock = socket.create_connection(("127.0.0.1", running.port), timeout=20)
        self.framer = codec.Framer(1 << 30)
        self.framer.startup = False
        self.sock.sendall(codec.startup({"user": user, "database": running.database}))
        scram = ScramClient(password)
        while True:
            typ, body = self.receive()
            code = int.from_bytes(body[:4], "big") if typ == b"R" else None
            if code == 10:
                first = scram.first()
                self.send(codec.message(b"p", codec.cstr("SCRAM-SHA-256") + codec.int32(len(first)) + first))
            elif code == 11:
                self.send(codec.message(b"p", scram.final(body[4:])))
            elif code == 12:
                scram.check(body[4:])
            elif typ == b"E":
                raise RuntimeError(codec.error_fields(body))
            elif typ == b"Z":
                return

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> tuple[bytes, bytes]:
        while (msg := self.framer.next()) is None:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.framer.feed(data)
        return msg

    def until_ready(self) -> list[tuple[bytes, bytes]]:
        out = []
        while True:
            out.append(self.receive())
            if out[-1][0] == b"Z":
                return out

    def close(self) -> None:
        self.sock.close()
