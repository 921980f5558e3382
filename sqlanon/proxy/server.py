"""What both protocol front-ends share, and the listeners they run in.

One ``Proxy`` per process: the library session on the database (the proxy's own account), the
users file, one library session per client identity (its policy, its audit trail), the TLS
context of the client leg. The protocol modules (``pg/server.py``, ``mysql/server.py``) each
provide ``start(proxy, host, port) -> asyncio.Server``.

Shutdown (SIGTERM, SIGINT): the listeners close at once; a client waiting between statements
gets its protocol's shutdown error right away, a client whose statement runs gets its answer
first, unless the drain timeout (or a second signal) comes first; then the connections close,
and with them the database connections and their temporary tables.
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import ssl
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

from sqlanon import api
from sqlanon.access import DEFAULT_READER
from sqlanon.errors import SqlanonError
from sqlanon.policy import load_policy
from sqlanon.proxy.users import User, Users, load_users

LOG = logging.getLogger("sqlanon.proxy")
#: seconds the shutdown errors have to reach clients after the drain
FAREWELL = 2.0


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
    #: seconds the statements under way at a shutdown have to finish
    drain_timeout: float = 10.0


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


class ShuttingDown(Exception):
    """The proxy stops: the session ends with its protocol's shutdown error."""


class Client:
    """A client session as the shutdown sees it; both protocols' sessions derive from it."""

    #: waiting for the client (its login or its next statement), so that the shutdown ends the
    #: session at once; still set when that wait was interrupted, so the session knows it was idle
    idle = False

    async def from_client(self, proxy: "Proxy", read: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``read(*args)``, the client's next message, as an idle session; ShuttingDown instead
        once the proxy stops."""
        self.idle = True
        if proxy.stopping:
            raise ShuttingDown
        data = await read(*args)
        self.idle = False
        return data


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
        if not self.session.db.backend.proxied:
            self.session.close()
            raise ProxyError(f"the proxy does not serve {self.session.db.backend.title} (yet): use the library or the CLI")
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
        #: every client connection's task and session (a session leaves when its task ends)
        self.clients: dict[asyncio.Task, Client] = {}
        #: set by the shutdown: sessions end at their next wait for the client
        self.stopping = False
        #: what the front-ends close with the proxy (their pools and threads)
        self.closers: list[Callable[[], None]] = []

    def enlist(self, task: asyncio.Task, client: Client) -> None:
        self.clients[task] = client
        task.add_done_callback(self.clients.pop)

    def user(self, name: str) -> User | None:
        return self.users.get(name)

    def session_for(self, user: User, front_end: str) -> api.Session:
        """The library session of one authenticated client: its identity, its policy."""
        policy = self._policies[user.policy] if user.policy is not None else None
        return self.session.as_client(user.name, front_end, policy)

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()
        self.session.close()


#: protocol → module providing ``start(proxy, host, port)``
FRONT_ENDS = {"postgresql": "sqlanon.proxy.pg.server", "mysql": "sqlanon.proxy.mysql.server"}


class Stop:
    """Shutdown requests: the first starts the drain, a second ends it."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.again = asyncio.Event()

    def __call__(self) -> None:
        (self.again if self.requested.is_set() else self.requested).set()


def preload() -> None:
    """Import now, in the starting thread, what sessions would otherwise import on first use
    in their own threads: on Python 3.11 two threads building code objects at once (a module's
    dataclasses, a traceback's carets) can fail with "AST constructor recursion depth mismatch"
    (CPython gh-106905), and the first client should not wait for OpenDP's native library."""
    for name in ("opendp.prelude", *FRONT_ENDS.values(), "sqlanon.proxy.pg.session", "sqlanon.proxy.pg.extended",
                 "sqlanon.proxy.pg.results", "sqlanon.proxy.mysql.session", "sqlanon.proxy.mysql.results"):
        importlib.import_module(name)


async def serve(config: ProxyConfig, started: asyncio.Event | None = None, *, signals: bool = False) -> None:
    """Listen on every configured address until cancelled or, with ``signals`` (the main thread
    only), until SIGTERM or SIGINT, then shut down gracefully."""
    preload()
    stop = Stop()
    if signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop)
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
        await stop.requested.wait()
        await shut_down(proxy, servers, stop)
    finally:
        for s in servers:
            s.close()
        proxy.close()


async def shut_down(proxy: Proxy, servers: list[asyncio.Server], stop: Stop) -> None:
    """Accept no more clients; end idle sessions at once and the others when their statement
    is answered, or at the drain timeout, or at a second request (each session sends its
    protocol's shutdown error), then give those errors ``FAREWELL`` seconds to go out."""
    loop = asyncio.get_running_loop()
    for server in servers:
        server.close()
    proxy.stopping = True
    clients = len(proxy.clients)
    told = {task for task, client in proxy.clients.items() if client.idle}
    for task in told:
        task.cancel()
    deadline = loop.time() + proxy.config.drain_timeout
    again = loop.create_task(stop.again.wait())
    while proxy.clients and not again.done() and loop.time() < deadline:
        await asyncio.wait([*proxy.clients, again], timeout=deadline - loop.time(),
                           return_when=asyncio.FIRST_COMPLETED)
    again.cancel()
    cut = [task for task, client in proxy.clients.items() if task not in told and not client.idle]
    for task in cut:
        task.cancel()
    if proxy.clients:
        await asyncio.wait(list(proxy.clients), timeout=FAREWELL)
    for task in proxy.clients:  # clients that do not read their error: closed all the same
        task.cancel()
    why = "second signal" if stop.again.is_set() else f"drain timeout {proxy.config.drain_timeout:g} s"
    LOG.info("proxy shut down: %d client connections closed, %d statements cut short (%s)", clients, len(cut), why)


def address(text: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:port`` for IPv6)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ProxyError(f"expected host:port, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
