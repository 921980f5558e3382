"""The proxy's own connections to the database, and the relay of their replies.

Pass-through statements are answered by the database itself: the proxy sends the statement text
the library admitted, then copies the database's reply messages to the client as they arrive —
type OIDs, formats, command tags and errors exactly as a direct connection would see them, at
near-native speed, and large results stream through a bounded buffer.
The proxy logs in with the account of its ``--db`` URL; clients never see it.

Connections are pooled: a client holds one while a statement or transaction runs, or for good
once it changed a session setting (``pin``), so that 100 clients need not hold 100 server
processes, and no client's settings reach another's statements.
"""
from __future__ import annotations

import asyncio
import hashlib
import ssl
import struct
from dataclasses import dataclass
from typing import Any, Callable

from sqlalchemy.engine import make_url

from sqlanon.proxy.pg import codec
from sqlanon.proxy.pg.auth import AuthFailed, ScramClient
from sqlanon.proxy.server import ProxyError

CHUNK = 1 << 18
#: seconds a client waits for a free database connection before it gets an error
ACQUIRE_TIMEOUT = 30.0
#: a database reply message may be as large as a row (up to 1 GB in PostgreSQL)
MAX_REPLY = 1 << 30
_D, _C, _E, _Z = ord("D"), ord("C"), ord("E"), ord("Z")
_LEN = struct.Struct("!i").unpack_from


def _take(buf: bytearray, n: int) -> bytes:
    """The first ``n`` bytes of ``buf``, removed from it (one copy)."""
    with memoryview(buf) as view:
        out = bytes(view[:n])
    del buf[:n]
    return out


class BackendLost(Exception):
    """The database connection broke; the statement's outcome is unknown."""


class CountingReader(asyncio.StreamReader):
    """A stream reader that counts the bytes it was fed, so that a pooled connection is known
    to be quiet (the database said nothing to it while idle) without a read waiting on it: a
    task per statement to watch it, and a wait to stop the watch, took 26 µs of a pass-through
    statement's release and acquire here, the count 2 µs."""

    received = 0

    def feed_data(self, data: Any) -> None:  # the transport's bytes (typeshed: any iterable)
        self.received += len(data)
        super().feed_data(data)


async def _open(host: str, port: int) -> tuple[CountingReader, asyncio.StreamWriter]:
    """``asyncio.open_connection`` with a CountingReader."""
    loop = asyncio.get_running_loop()
    reader = CountingReader(limit=CHUNK, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, host, port)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    user: str
    password: str
    database: str
    sslmode: str

    @classmethod
    def from_url(cls, url: str) -> "Target":
        u = make_url(url)
        if u.get_backend_name() != "postgresql":
            raise ProxyError("the PostgreSQL front-end relays to a PostgreSQL database: give a postgresql URL")
        q = {k: (v[0] if isinstance(v, tuple) else v) for k, v in u.query.items()}
        return cls(u.host or q.get("host", "127.0.0.1"), int(u.port or q.get("port", 5432)), u.username or "",
                   u.password or "", u.database or "postgres", q.get("sslmode", "prefer"))


class Backend:
    def __init__(self, reader: CountingReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self.framer = codec.Framer(MAX_REPLY)
        self.framer.startup = False
        self.params: dict[str, str] = {}
        self.key = (0, 0)
        self.status = b"I"
        self.broken = False
        #: ``relay`` passed on part of a DataRow (nothing but the rest of it may follow)
        self.mid_row = False
        #: messages not yet handed to the transport: sent together when a reply is awaited
        self.out = bytearray()
        #: bytes of the reader taken into the framer: fewer than it received, the database
        #: spoke (pooled and idle, it has nothing to say unless it ends the connection)
        self.consumed = reader.received

    def send(self, data: bytes) -> None:
        if self.broken:
            raise BackendLost("the database connection is closed")
        self.out += data

    async def message(self) -> tuple[bytes, bytes]:
        """The next reply message."""
        while True:
            msg = self.framer.next()
            if msg is not None:
                if msg[0] == b"Z":
                    self.status = msg[1]
                return msg
            await self._fill()

    async def _fill(self) -> None:
        try:
            if self.out:
                self.writer.write(bytes(self.out))
                self.out.clear()
            data = await self.reader.read(CHUNK)
        except (ConnectionError, OSError) as e:
            self.broken = True
            raise BackendLost(str(e)) from None
        if not data:
            self.broken = True
            raise BackendLost("the database closed the connection")
        self.consumed += len(data)
        self.framer.feed(data)

    def quiet(self) -> bool:
        """Whether the database sent nothing since the last reply was read (a terminated or
        restarted server says FATAL, then closes): an idle connection may be used again."""
        r = self.reader
        return (not self.broken and r.received == self.consumed and not self.framer.buf and not r.at_eof()
                and r.exception() is None)

    async def relay(self, write: Callable[[bytes], object], drain: Callable[[], object],
                    stops: bytes) -> tuple[int, int, bytes]:
        """Copy reply messages to the client until one whose type is in ``stops`` (included).
        Returns that message's type, and the type and body of the last CommandComplete or
        ErrorResponse (for the audit trail).

        DataRows, the bulk of a result, are skipped by their length and passed on as they
        arrive, a row cut by the end of a read included: the proxy holds one read, not a row."""
        buf = self.framer.buf
        last_typ, last = 0, b""
        #: where the next message starts, counted from the start of ``buf`` (beyond its end
        #: while a DataRow continues in the next read)
        pos = 0
        unpack = _LEN
        while True:
            n = len(buf)
            lim = n - 5
            while pos <= lim:
                while pos <= lim and buf[pos] == _D:  # the bulk, in the tightest loop
                    length = unpack(buf, pos + 1)[0]
                    if length < 4:
                        break
                    pos += 1 + length
                if pos > lim:
                    break
                typ, length = buf[pos], unpack(buf, pos + 1)[0]
                if length < 4:
                    self.broken = True
                    raise BackendLost("the database sent a malformed message")
                end = pos + 1 + length
                if end > n:
                    break
                if typ == _C or typ == _E:
                    last_typ, last = typ, bytes(buf[pos + 5:end])
                if typ in stops:
                    if typ == _Z:
                        self.status = bytes(buf[pos + 5:end])
                    write(_take(buf, end))
                    self.mid_row = False
                    return typ, last_typ, last
                pos = end
            cut = min(pos, n)
            if cut:
                write(_take(buf, cut))
                pos -= cut
                self.mid_row = pos > 0
                await drain()
            await self._fill()

    def close(self) -> None:
        if not self.broken:
            self.broken = True
            try:
                self.writer.write(bytes(self.out) + codec.TERMINATE)
            except Exception:  # noqa: BLE001 - closing anyway
                pass
        self.writer.close()


async def connect(t: Target) -> Backend:
    reader, writer = await _open(t.host, t.port)
    try:
        if t.sslmode != "disable":
            writer.write(codec.SSL_REQUEST_PACKET)
            answer = await reader.readexactly(1)
            if answer == b"S":
                ctx = ssl.create_default_context()
                if t.sslmode in ("prefer", "allow", "require"):
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
                await writer.start_tls(ctx, server_hostname=t.host)
            elif t.sslmode in ("require", "verify-ca", "verify-full"):
                raise ProxyError("the database refused TLS, which the --db URL requires")
        b = Backend(reader, writer)
        b.send(codec.startup({"user": t.user, "database": t.database, "client_encoding": "UTF8",
                              "standard_conforming_strings": "on", "application_name": "sqlanon-proxy"}))
        await _login(b, t)
        return b
    except BaseException:
        writer.close()
        raise


async def _login(b: Backend, t: Target) -> None:
    scram: ScramClient | None = None
    while True:
        typ, body = await b.message()
        if typ == b"E":
            raise ProxyError(f"the database refused the proxy's login: {codec.error_fields(body).get('M', '')}")
        if typ == b"R":
            r = codec.Reader(body)
            code = r.int32()
            if code == 3:  # cleartext password
                b.send(codec.message(b"p", codec.cstr(t.password)))
            elif code == 5:  # MD5
                inner = hashlib.md5((t.password + t.user).encode()).hexdigest().encode()
                b.send(codec.message(b"p", codec.cstr("md5" + hashlib.md5(inner + r.bytes(4)).hexdigest())))
            elif code == 10:
                scram = ScramClient(t.password)
                first = scram.first()
                b.send(codec.message(b"p", codec.cstr("SCRAM-SHA-256") + codec.int32(len(first)) + first))
            elif code == 11 and scram is not None:
                b.send(codec.message(b"p", scram.final(r.rest())))
            elif code == 12 and scram is not None:
                try:
                    scram.check(r.rest())
                except AuthFailed as e:
                    raise ProxyError(str(e)) from None
            elif code != 0:
                raise ProxyError(f"unsupported database authentication request {code}")
        elif typ == b"S":
            r = codec.Reader(body)
            name = r.cstring()
            b.params[name] = r.cstring()
        elif typ == b"K":
            r = codec.Reader(body)
            b.key = (r.int32(), r.int32())
        elif typ == b"Z":
            return


async def cancel(t: Target, key: tuple[int, int]) -> None:
    """Ask the database to cancel what the connection with ``key`` runs (a new connection)."""
    try:
        _, writer = await asyncio.open_connection(t.host, t.port)
    except OSError:
        return
    writer.write(codec.int32(16) + codec.int32(codec.CANCEL_REQUEST) + codec.int32(key[0]) + codec.int32(key[1]))
    try:
        await writer.drain()
    finally:
        writer.close()


class Pool:
    """At most ``size`` database connections; a client waits for one rather than fails, up to
    ``ACQUIRE_TIMEOUT``, then gets an error rather than waits for ever."""

    def __init__(self, target: Target, size: int):
        self.target = target
        self.idle: list[Backend] = []
        self.slots = asyncio.Semaphore(size)

    async def acquire(self) -> Backend:
        if self.slots.locked():  # a free slot is taken without waiting (and without a timer)
            try:
                async with asyncio.timeout(ACQUIRE_TIMEOUT):
                    await self.slots.acquire()
            except TimeoutError:
                raise BackendLost(f"no database connection became free within {ACQUIRE_TIMEOUT:.0f} s (the "
                                  "proxy holds at most RELAY_CONNECTIONS; clients in transactions or with session "
                                  "settings keep theirs)") from None
        else:
            await self.slots.acquire()
        try:
            while self.idle:
                b = self.idle.pop()
                if b.quiet():
                    return b
                b.close()
            return await connect(self.target)
        except (OSError, ProxyError, asyncio.IncompleteReadError) as e:
            self.slots.release()
            raise BackendLost(f"the proxy cannot reach the database: {e}") from None
        except BaseException:
            self.slots.release()
            raise

    def release(self, b: Backend, *, reuse: bool) -> None:
        if reuse and not b.broken and b.status == b"I" and not b.out:
            self.idle.append(b)
        else:
            b.close()
        self.slots.release()

    def close(self) -> None:
        for b in self.idle:
            b.close()
        self.idle.clear()
