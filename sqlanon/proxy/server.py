"""What both protocol front-ends share, and the listeners they run in.

One ``Proxy`` per process: the library session on the database (the proxy's own account), the
users file, one library session per client identity (its policy, its audit trail), the TLS
context of the client leg. The protocol modules (``pg/server.py``, ``mysql/server.py``) each
provide ``start(proxy, host, port) -> asyncio.Server``.
"""
from __future__ import annotations

import asyncio
import importlib
import ssl
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from sqlanon import api
from sqlanon.access import DEFAULT_READER
from sqlanon.errors import SqlanonError
from sqlanon.policy import load_policy
from sqlanon.proxy.users import User, Users, load_users


@dataclass(frozen=True)
class ProxyConfig:
    url: str
    policy: Path
    users: Path
    listen_pg: tuple[str, int] | None = None
    listen_mysql: tuple[str, int] | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    #: refuse clients that do not switch to TLS
    require_tls: bool = False
    #: the role the pipeline takes on (sqlanon.access); the proxy's own account may not read a
    #: protected table without it, or the proxy does not start
    reader_role: str = DEFAULT_READER
    #: serve an account that can read protected tables itself (development only)
    unrestricted: bool = False
    #: serve protected tables without a catalog, that is without any defence across queries
    without_catalog: bool = False


T = TypeVar("T")


def _guarded(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    except StopIteration as e:
        # a StopIteration cannot be set on an asyncio future: the awaiting client would hang
        raise RuntimeError(f"StopIteration in {getattr(fn, '__name__', fn)}") from e


async def in_thread(executor: Executor | None, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on ``executor``'s threads; whatever it raises reaches the awaiting session."""
    return await asyncio.get_running_loop().run_in_executor(executor, _guarded, fn, *args)


class ProxyError(SqlanonError):
    """The proxy cannot start as configured."""

    sqlstate = "08000"


class Proxy:
    def __init__(self, config: ProxyConfig):
        if config.require_tls and config.tls_cert is None:
            raise ProxyError("--require-tls needs --tls-cert and --tls-key")
        if (config.tls_cert is None) != (config.tls_key is None):
            raise ProxyError("--tls-cert and --tls-key go together")
        self.config = config
        self.users: Users = load_users(config.users)
        self.session = api.connect(config.url, config.policy, reader_role=config.reader_role,
                                   unrestricted=config.unrestricted)
        if self.session.catalog is None and not config.without_catalog:
            self.session.close()
            raise ProxyError("the proxy serves protected tables only with a catalog, whose defences work across "
                             "queries (differencing, repeated releases): run 'sqlanon db upgrade' first, or pass "
                             "--without-catalog to serve without them")
        self._policies = {user.policy: load_policy(user.policy) for user in self.users.users.values() if user.policy}
        self.tls: ssl.SSLContext | None = None
        if config.tls_cert is not None:
            self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.tls.load_cert_chain(config.tls_cert, config.tls_key)

    def user(self, name: str) -> User | None:
        return self.users.get(name)

    def session_for(self, user: User, front_end: str) -> api.Session:
        """The library session of one authenticated client: its identity, its policy."""
        policy = self._policies[user.policy] if user.policy is not None else None
        return self.session.as_client(user.name, front_end, policy)

    def close(self) -> None:
        self.session.close()


#: protocol → module providing ``start(proxy, host, port)``
FRONT_ENDS = {"postgresql": "sqlanon.proxy.pg.server", "mysql": "sqlanon.proxy.mysql.server"}


async def serve(config: ProxyConfig, started: asyncio.Event | None = None) -> None:
    """Listen on every configured address until cancelled."""
    proxy = Proxy(config)
    servers: list[asyncio.Server] = []
    try:
        for protocol, listen in (("postgresql", config.listen_pg), ("mysql", config.listen_mysql)):
            if listen is not None:
                start = importlib.import_module(FRONT_ENDS[protocol]).start
                servers.append(await start(proxy, *listen))
        if not servers:
            raise ProxyError("nothing to listen on: give --listen-pg and/or --listen-mysql")
        if started is not None:
            started.set()
        await asyncio.gather(*(s.serve_forever() for s in servers))
    finally:
        for s in servers:
            s.close()
        proxy.close()


def address(text: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:port`` for IPv6)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ProxyError(f"expected host:port, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
