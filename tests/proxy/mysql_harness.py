"""The MySQL front-end under test: a fresh MariaDB database, the proxy in a thread of its own
(its own event loop, as ``sqlanon proxy`` runs it), a users file and a TLS certificate made here.

Fixtures live in this module (the PostgreSQL tests have their own); test modules import them.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pymysql
import pytest
import sqlalchemy as sa
import yaml

from sqlanon import demo
from sqlanon.proxy.mysql.server import start
from sqlanon.proxy.server import Proxy, ProxyConfig
from sqlanon.proxy.users import set_user
from tests.conftest import fresh_database
from tests.helpers import load_table, restricted
from tests.proxy.certs import make_certificate
from tests.servers.local import free_port

PATIENT_COLS = [("name", "text"), ("age", "int"), ("sex", "text"), ("zip", "text"),
                ("nationality", "text"), ("disease", "text")]
POLICY = {"tables": {"patients": demo.POLICY["tables"]["patients"]}}
ITEMS = [(1, "apple", 1.5, "2.125", dt.date(2020, 1, 2)), (2, None, None, None, None),
         (3, "o'brien \\ \"q\"", -0.25, "-7.500", dt.date(1999, 12, 31))]
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw"}  # alice may use mysql_native_password, bob may not


class RunningProxy:
    """``Proxy`` + the MySQL listener on an event loop in a daemon thread."""

    def __init__(self, config: ProxyConfig):
        self.port = config.listen_mysql[1] if config.listen_mysql else 0
        self.proxy = Proxy(config)
        #: every library session the proxy opened for a client (to inspect temp tables afterwards)
        self.sessions: list[Any] = []
        session_for = self.proxy.session_for

        def recording(user: Any, front_end: str) -> Any:
            s = session_for(user, front_end)
            self.sessions.append(s)
            return s

        self.proxy.session_for = recording  # type: ignore[method-assign]
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"proxy did not start: {self._error}")

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.server = self.loop.run_until_complete(start(self.proxy, "127.0.0.1", self.port))
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self._shutdown())
        self.loop.close()

    async def _shutdown(self) -> None:
        self.server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.proxy.close()


@dataclass
class Env:
    url: str
    database: str
    proxy: RunningProxy
    strict: RunningProxy | None
    cert: Path
    admin: sa.Engine
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def port(self) -> int:
        return self.proxy.port

    def connect(self, user: str = "alice", password: str | None = None, **kw: Any) -> pymysql.Connection:
        kw.setdefault("ssl_disabled", True)
        return pymysql.connect(host="127.0.0.1", port=kw.pop("port", self.port), user=user,
                               password=PASSWORDS.get(user, "") if password is None else password,
                               database=kw.pop("database", self.database), connect_timeout=10, read_timeout=60, **kw)

    def direct(self, **kw: Any) -> pymysql.Connection:
        u = sa.engine.make_url(self.url)
        return pymysql.connect(host=u.host, port=u.port, user=u.username, password=u.password or "",
                               database=u.database, **kw)


def build_env(servers: Any, tmp: Path, *, strict: bool = False, big_rows: int = 0) -> Iterator[Env]:
    with fresh_database("mysql", servers, tmp) as url:
        load_table(url, "patients", PATIENT_COLS, demo.PATIENTS)
        load_table(url, "items", [("id", "int"), ("name", "text"), ("price", "float"), ("amount", "text"),
                                  ("day", "date")], [])
        admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.exec_driver_sql("ALTER TABLE items MODIFY amount DECIMAL(10,3)")
            c.execute(sa.text("INSERT INTO items VALUES (:a, :b, :c, :d, :e)"),
                      [dict(zip("abcde", r)) for r in ITEMS])
            if big_rows:
                c.exec_driver_sql("CREATE TABLE big (id INT PRIMARY KEY, label VARCHAR(40))")
                c.exec_driver_sql(f"INSERT INTO big SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{big_rows}")
        policy = tmp / "policy.yml"
        policy.write_text(yaml.safe_dump(POLICY))
        users = tmp / "users.yml"
        set_user(users, "alice", PASSWORDS["alice"], native=True)
        set_user(users, "bob", PASSWORDS["bob"])
        cert, key = make_certificate(tmp)
        # as deployed: the proxy's account cannot read the protected table, its pipeline takes on
        # the reader role; no catalog here (its defences: tests/backends/test_catalog.py)
        login, reader = restricted(url, policy)
        base = dict(url=login, policy=policy, users=users, tls_cert=cert, tls_key=key, reader_role=reader,
                    without_catalog=True)
        proxy = RunningProxy(ProxyConfig(**base, listen_mysql=("127.0.0.1", free_port())))
        other = RunningProxy(ProxyConfig(**base, listen_mysql=("127.0.0.1", free_port()), require_tls=True)) \
            if strict else None
        try:
            yield Env(url, sa.engine.make_url(url).database, proxy, other, cert, admin)
        finally:
            proxy.stop()
            if other is not None:
                other.stop()
            admin.dispose()


@pytest.fixture(scope="module")
def env(servers: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Env]:
    """One database and proxy per test module; a module asks for a second proxy that requires
    TLS (``STRICT_PROXY = True``) or an unprotected table ``big`` (``BIG_ROWS = n``)."""
    yield from build_env(servers, tmp_path_factory.mktemp("mysql-proxy"),
                         strict=getattr(request.module, "STRICT_PROXY", False),
                         big_rows=getattr(request.module, "BIG_ROWS", 0))
