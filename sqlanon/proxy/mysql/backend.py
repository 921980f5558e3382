"""The proxy's own connection to the database, one per client, under the proxy's account.

Opened with the client's response-format flags (EOF or not, session tracking, found rows) so
that the database's result packets can be forwarded to the client as they are: ``relay`` sends
one command and streams the response back, looking only at packet heads (``ResponseScanner``),
with the client's backpressure. Never asks for multi-statements or local files. Passwords are
sent with ``mysql_native_password`` or ``caching_sha2_password`` (RSA with the server's key
when it wants full authentication); the database leg does not use TLS.
"""
from __future__ import annotations

import asyncio
import collections
import hashlib
import struct
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from sqlalchemy.engine import make_url

from sqlanon.errors import SqlanonError
from sqlanon.proxy.mysql import codec

#: flags the database leg always uses, besides the client's RELAYED ones
BASE_CAPS = codec.LONG_PASSWORD | codec.PROTOCOL_41 | codec.SECURE_CONNECTION | codec.PLUGIN_AUTH \
    | codec.CONNECT_WITH_DB
UTF8MB4_GENERAL_CI = 45
CHUNK = 256 * 1024


class BackendLost(SqlanonError):
    """The database connection failed or broke; the message is safe to show the client."""

    sqlstate = "08S01"


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    user: str
    password: str
    database: str
    unix_socket: str | None = None

    @classmethod
    def from_url(cls, url: str) -> "Target":
        u = make_url(url)
        sock = u.query.get("unix_socket")
        return cls(u.host or "127.0.0.1", u.port or 3306, u.username or "", u.password or "", u.database or "",
                   sock if isinstance(sock, str) else None)


@dataclass(frozen=True)
class ServerInfo:
    """What the database says in its greeting: the proxy repeats it to its own clients."""

    version: str
    capabilities: int
    charset: int


def _scramble(plugin: str, password: bytes, salt: bytes) -> bytes:
    if not password:
        return b""
    if plugin == "caching_sha2_password":
        p1 = hashlib.sha256(password).digest()
        p3 = hashlib.sha256(hashlib.sha256(p1).digest() + salt).digest()
        return bytes(a ^ b for a, b in zip(p1, p3))
    if plugin == "mysql_native_password":
        p1 = hashlib.sha1(password).digest()
        p3 = hashlib.sha1(salt + hashlib.sha1(p1).digest()).digest()
        return bytes(a ^ b for a, b in zip(p1, p3))
    raise BackendLost(f"the database asks for authentication plugin {plugin}, which the proxy does not speak")


def _greeting(payload: bytes) -> tuple[ServerInfo, int, bytes, str]:
    r = codec.Reader(payload)
    if r.int(1) != 10:
        raise BackendLost("the database does not speak protocol 10")
    version = r.nul_str().decode("utf-8", "replace")
    thread_id = r.int(4)
    salt = r.take(8)
    r.take(1)
    caps = r.int(2)
    charset = r.int(1)
    r.take(2)
    caps |= r.int(2) << 16
    r.take(11)
    salt += r.nul_str()[:12]
    plugin = r.nul_str().decode() if not r.done else "mysql_native_password"
    return ServerInfo(version, caps, charset), thread_id, salt, plugin


class Backend:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, caps: int):
        self.reader, self.writer, self.caps = reader, writer, caps
        #: the database's greeting, once logged in
        self.info = ServerInfo("", 0, 0)
        #: the database's id of this connection (for KILL QUERY)
        self.thread_id = 0
        self._framer = codec.Framer(1 << 30)
        self._packets: collections.deque[tuple[int, bytes]] = collections.deque()

    @classmethod
    async def open(cls, target: Target, client_caps: int, setup: list[str]) -> "Backend":
        """Connect, authenticate as the proxy and run ``setup`` (the library's session settings)."""
        try:
            if target.unix_socket:
                reader, writer = await asyncio.open_unix_connection(target.unix_socket)
            else:
                reader, writer = await asyncio.open_connection(target.host, target.port)
        except OSError as e:
            raise BackendLost(f"cannot reach the database: {e.strerror or e}") from None
        self = cls(reader, writer, BASE_CAPS | (client_caps & codec.RELAYED))
        try:
            await self._login(target)
            for sql in setup:
                await self.simple(sql)
        except BaseException:
            self.close()
            raise
        return self

    @staticmethod
    async def probe(target: Target) -> ServerInfo:
        """The database's greeting, read once at start (its version and capabilities)."""
        backend = await Backend.open(target, 0, [])
        try:
            return backend.info
        finally:
            backend.close()

    async def _login(self, target: Target) -> None:
        _, payload = await self.read()
        self.info, self.thread_id, salt, plugin = _greeting(payload)
        if not self.info.capabilities & codec.PROTOCOL_41:
            raise BackendLost("the database does not speak protocol 4.1")
        self.caps &= self.info.capabilities | codec.LONG_PASSWORD
        password = target.password.encode()
        auth = _scramble(plugin, password, salt)
        out = (struct.pack("<IIB", self.caps, 1 << 24, UTF8MB4_GENERAL_CI) + b"\x00" * 23
               + target.user.encode() + b"\x00" + bytes([len(auth)]) + auth
               + target.database.encode() + b"\x00" + plugin.encode() + b"\x00")
        seq = self.send(out, 1)
        while True:
            seq, payload = await self.read()
            seq += 1
            head = payload[:1]
            if head == b"\x00":
                return
            if head == b"\xff":
                raise BackendLost("the database refused the proxy's account: " + _message(payload))
            if head == b"\xfe":  # auth switch
                r = codec.Reader(payload, 1)
                plugin = r.nul_str().decode()
                salt = r.rest().rstrip(b"\x00")
                self.send(_scramble(plugin, password, salt), seq)
            elif payload == b"\x01\x03":  # caching_sha2 fast path: an OK follows
                continue
            elif payload == b"\x01\x04":  # full authentication: encrypt with the server's key
                self.send(b"\x02", seq)
                seq, key = await self.read()
                public = serialization.load_pem_public_key(key[1:])
                xored = bytes(b ^ salt[i % len(salt)] for i, b in enumerate(password + b"\x00"))
                oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
                self.send(public.encrypt(xored, oaep), seq + 1)  # type: ignore[union-attr]
            else:
                raise BackendLost("unexpected packet while the proxy logged in to the database")

    def send(self, payload: bytes, seq: int = 0) -> int:
        data, nxt = codec.frame(payload, seq)
        self.writer.write(data)
        return nxt

    async def read(self) -> tuple[int, bytes]:
        """The next packet (small answers: greeting, OK, prepare; rows go through ``relay``)."""
        while not self._packets:
            self._packets.extend(self._framer.feed(await self._chunk()))
        return self._packets.popleft()

    async def _chunk(self) -> bytes:
        try:
            data = await self.reader.read(CHUNK)
        except OSError as e:
            raise BackendLost(f"lost the database connection: {e.strerror or e}") from None
        if not data:
            raise BackendLost("lost the database connection")
        return data

    async def simple(self, sql: str) -> None:
        """A statement whose answer is an OK (session settings); an error is the proxy's fault."""
        self.send(bytes([codec.COM_QUERY]) + sql.encode("utf-8"))
        _, payload = await self.read()
        if payload[:1] != b"\x00":
            raise BackendLost("the database refused a session setting: " + _message(payload))

    async def relay(self, payload: bytes, write: Callable[[bytes], Awaitable[Any]], *,
                    fields: bool = False) -> codec.ResponseScanner:
        """Send one command and forward its whole response, unchanged, to ``write`` (``fields``:
        the answer to COM_FIELD_LIST, column definitions only)."""
        if self._packets or self._framer.pending:
            raise BackendLost("the database sent more than was asked")
        self.send(payload)
        scanner = codec.ResponseScanner(self.caps, fields=fields)
        buf = bytearray()
        started = False
        while True:
            buf += await self._chunk()
            if not started and len(buf) >= 4:
                if buf[3] != 1:  # e.g. the ERR a killed connection leaves behind: no answer to this
                    raise BackendLost("lost the database connection")
                started = True
            used, done = scanner.scan(buf)
            if used:
                await write(bytes(buf[:used]))
                del buf[:used]
            if done:
                if buf:
                    raise BackendLost("the database sent more than was asked")
                return scanner

    async def prepare(self, sql: str) -> tuple[int, list[bytes]]:
        """COM_STMT_PREPARE on the database: its statement id and column definitions."""
        self.send(bytes([codec.COM_STMT_PREPARE]) + sql.encode("utf-8"))
        _, head = await self.read()
        if head[:1] == b"\xff":
            raise PrepareFailed(head)
        stmt_id, ncols, nparams = struct.unpack("<IHH", head[1:9])
        packets = [(await self.read())[1] for _ in range(nparams + ncols + self._eofs(nparams) + self._eofs(ncols))]
        cols = packets[nparams + self._eofs(nparams):][:ncols]
        return stmt_id, cols

    def _eofs(self, n: int) -> int:
        return 1 if n and not self.caps & codec.DEPRECATE_EOF else 0

    def close_statement(self, stmt_id: int) -> None:
        self.send(bytes([codec.COM_STMT_CLOSE]) + struct.pack("<I", stmt_id))

    def close(self) -> None:
        try:
            self.writer.write(codec.frame(bytes([codec.COM_QUIT]), 0)[0])
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass
        self.writer.close()


class PrepareFailed(Exception):
    """The database refused to prepare; ``packet`` is its ERR packet, to forward."""

    def __init__(self, packet: bytes):
        super().__init__(_message(packet))
        self.packet = packet


def _message(payload: bytes) -> str:
    if payload[:1] != b"\xff" or len(payload) < 9:
        return "unexpected answer"
    return payload[9:].decode("utf-8", "replace")
