"""The MySQL listener: ``start(proxy, host, port)``, and the transport of one client.

TLS without a race: MySQL clients may send the TLS ClientHello right behind the 36-byte
SSLRequest, before the server answers (PyMySQL does). A stream reader would already hold those
bytes when TLS starts, and the handshake would hang. ``Connection`` is a buffered protocol that,
until the first packet is complete, hands the socket a buffer exactly as large as the bytes
that complete it, so the ClientHello stays in the socket for ``loop.start_tls``.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import ssl
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from sqlanon.proxy.mysql import auth, codec, gate
from sqlanon.proxy.mysql.backend import Backend, ServerInfo, Target
from sqlanon.proxy.mysql.session import ClientSession
from sqlanon.proxy.server import Proxy, in_thread

LOG = logging.getLogger("sqlanon.proxy.mysql")
T = TypeVar("T")

#: largest packet a client may send where the database does not say its max_allowed_packet
#: (a statement is at most 100,000 characters to the parser, which refuses longer ones by name)
MAX_PACKET = 1 << 20
#: largest packet before login: a handshake response with its attributes is a few hundred bytes
LOGIN_PACKET = 16 << 10
#: library executions at once from this front-end: the rest queue here, not in SQLAlchemy's pool
#: (5 + 10 connections by default, shared with the other front-end), where they would time out
LIBRARY_SLOTS = 6
#: worker threads for the library (admission is quick; executions are bounded by LIBRARY_SLOTS)
WORKERS = 24
#: packets a client may have sent ahead before the proxy stops reading from it
QUEUE_LIMIT = 32


class Shared:
    """What every client session of one listener shares."""

    def __init__(self, proxy: Proxy, target: Target, info: ServerInfo, setup: list[str], max_packet: int):
        self.proxy, self.target, self.info, self.setup = proxy, target, info, setup
        #: a logged-in client's largest packet: the database's max_allowed_packet
        self.max_packet = max_packet
        self.database = target.database
        self.tls: ssl.SSLContext | None = proxy.tls
        self.require_tls = proxy.config.require_tls
        self.capabilities = codec.OFFERED & (info.capabilities | codec.LONG_PASSWORD)
        if self.tls is not None:
            self.capabilities |= codec.SSL
        self.keys = auth.Keys()
        self.cache = auth.FastCache()
        self.verdicts = gate.VerdictCache()
        self.library_slots = asyncio.Semaphore(LIBRARY_SLOTS)
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="sqlanon-mysql")
        #: one thread, so that a client's events stay in order; sinks may write to the catalog
        self.audits = ThreadPoolExecutor(1, thread_name_prefix="sqlanon-mysql-audit")
        self.ids = itertools.count(1)
        #: logged-in sessions by connection id (KILL names them)
        self.sessions: dict[int, ClientSession] = {}

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await in_thread(self.pool, fn, *args)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.audits.shutdown(wait=True)

    def audit(self, lib: Any, sql: str, decision: str, **fields: Any) -> None:
        """Record a statement the proxy relayed itself, off the event loop (the catalog's audit
        sink inserts a row per statement)."""
        self.audits.submit(lib.record, sql, decision, **fields)


class Connection(asyncio.BufferedProtocol):
    """Packets in, bytes out, with backpressure both ways."""

    def __init__(self, shared: Shared):
        self.shared = shared
        self.framer = codec.Framer(LOGIN_PACKET)
        self._too_large: codec.PacketTooLarge | None = None
        #: read exactly up to the end of the current packet (until the first one is in)
        self.exact = True
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray(256 * 1024)
        self._packets: collections.deque[tuple[int, bytes]] = collections.deque()
        self._error: BaseException | None = None
        self._arrived = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._paused = False
        self.task: asyncio.Task | None = None

    # -- asyncio protocol ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.transport is not None:  # the TLS transport taking over
            return
        self.transport = transport  # type: ignore[assignment]
        # a relayed result arrives in 256 KiB chunks: pause the database side only past 1 MiB
        self.transport.set_write_buffer_limits(high=1 << 20)
        session = ClientSession(self, self.shared, next(self.shared.ids))
        self.task = asyncio.get_running_loop().create_task(session.run())
        self.shared.proxy.enlist(self.task, session)

    def get_buffer(self, sizehint: int) -> memoryview:
        n = self.framer.wanted() if self.exact else len(self._buffer)
        return memoryview(self._buffer)[:n]

    def buffer_updated(self, nbytes: int) -> None:
        if self._too_large is not None:
            return  # the rest of a packet too large: read (a close with unread bytes resets) and dropped
        try:
            self._packets.extend(self.framer.feed(bytes(self._buffer[:nbytes])))
        except codec.PacketTooLarge as e:
            # keep the way back open for the error the session sends before it closes
            self._too_large = e
            self.exact = False
            self._arrived.set()
            return
        except codec.ProtocolError as e:
            self._fail(e)
            return
        if len(self._packets) >= QUEUE_LIMIT and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._arrived.set()

    def eof_received(self) -> bool:
        self._fail(ConnectionResetError("client closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionResetError("connection lost"))

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def _fail(self, e: BaseException) -> None:
        if self._error is None:
            self._error = e
        self._arrived.set()
        self._writable.set()

    # -- what the session uses -------------------------------------------------------------------
    async def read_packet(self) -> tuple[int, bytes]:
        while not self._packets:
            if self._too_large is not None:
                raise self._too_large
            if self._error is not None:
                raise self._error if isinstance(self._error, codec.ProtocolError) else ConnectionResetError(
                    str(self._error))
            self._arrived.clear()
            await self._arrived.wait()
        if self._paused and len(self._packets) < QUEUE_LIMIT // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return self._packets.popleft()

    async def write(self, data: bytes) -> None:
        if self._error is not None or self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("client gone")
        self.transport.write(data)
        if not self._writable.is_set():
            await self._writable.wait()
            if self._error is not None:
                raise ConnectionResetError("client gone")

    async def start_tls(self, context: ssl.SSLContext) -> None:
        assert self.transport is not None
        if self._packets or self.framer.pending:
            raise codec.ProtocolError("data after the SSLRequest before TLS")
        loop = asyncio.get_running_loop()
        self.transport = await loop.start_tls(self.transport, self, context, server_side=True,  # type: ignore
                                              ssl_handshake_timeout=10)

    def logged_in(self) -> None:
        """Accept packets up to the database's max_allowed_packet from now on."""
        self.framer.limit = self.shared.max_packet

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _setup_statements(proxy: Proxy) -> list[str]:
    """The library's own session settings for a connection (sql_mode without ANSI_QUOTES and
    NO_BACKSLASH_ESCAPES, utf8mb4): pass-through text is rendered by sqlglot for exactly those."""
    collected: list[str] = []

    class Collect:
        def execute(self, sql: str) -> None:
            collected.append(sql)

    proxy.session.db.backend.session_setup(Collect())
    return collected


def _max_allowed_packet(proxy: Proxy) -> int:
    """The database's max_allowed_packet (MAX_PACKET where it does not say)."""
    with proxy.session.db.engine.connect() as c:
        found = c.exec_driver_sql("SELECT @@max_allowed_packet").scalar()
    return int(found) if found else MAX_PACKET


async def start(proxy: Proxy, host: str, port: int) -> asyncio.Server:
    target = Target.from_url(proxy.config.url)
    info = await Backend.probe(target)
    max_packet = await in_thread(None, _max_allowed_packet, proxy)
    shared = Shared(proxy, target, info, _setup_statements(proxy), max_packet)
    proxy.closers.append(shared.close)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(shared), host, port)
    LOG.info("MySQL front-end on %s:%d (database %s, %s)", host, port, shared.database, info.version)
    return server
