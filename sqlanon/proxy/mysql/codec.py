"""The MySQL client/server protocol as bytes in, bytes out: no socket, no event loop (STYLE habit 10).

Framing (3-byte length, sequence id, 16 MiB continuation frames), length-encoded integers and
strings, the packets the proxy writes itself (handshake, OK, ERR, EOF, column definitions, text
and binary rows) and the few it reads (handshake response, SSLRequest, COM_STMT_EXECUTE
parameters). ``ResponseScanner`` finds where one response of the database ends in a byte stream,
so that the relay forwards the database's own packets without decoding rows.
Reference: the MySQL client/server protocol documentation ("Protocol Basics", "Text Protocol",
"Binary Protocol") and MariaDB's "Clients & Communication Protocol".
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

MAX_FRAME = 0xFFFFFF
#: a frame header read at once: length (3 bytes) and sequence id
_HEADER = struct.Struct("<I").unpack_from

# capability flags
LONG_PASSWORD, FOUND_ROWS, LONG_FLAG, CONNECT_WITH_DB = 1, 2, 4, 8
LOCAL_FILES, PROTOCOL_41, INTERACTIVE, SSL = 128, 512, 1024, 2048
TRANSACTIONS, SECURE_CONNECTION = 8192, 32768
MULTI_STATEMENTS, MULTI_RESULTS, PS_MULTI_RESULTS = 1 << 16, 1 << 17, 1 << 18
PLUGIN_AUTH, CONNECT_ATTRS, PLUGIN_AUTH_LENENC = 1 << 19, 1 << 20, 1 << 21
SESSION_TRACK, DEPRECATE_EOF = 1 << 23, 1 << 24
#: what the proxy offers clients. Never MULTI_STATEMENTS (one statement per packet), LOCAL_FILES
#: (the server could read client files), COMPRESS, IGNORE_SPACE (changes how the server parses).
OFFERED = (LONG_PASSWORD | FOUND_ROWS | LONG_FLAG | CONNECT_WITH_DB | PROTOCOL_41 | INTERACTIVE
           | TRANSACTIONS | SECURE_CONNECTION | MULTI_RESULTS | PS_MULTI_RESULTS | PLUGIN_AUTH
           | CONNECT_ATTRS | PLUGIN_AUTH_LENENC | SESSION_TRACK | DEPRECATE_EOF)
#: client flags that change the format of the database's responses: the backend leg uses the client's
RELAYED = FOUND_ROWS | LONG_FLAG | INTERACTIVE | TRANSACTIONS | MULTI_RESULTS | PS_MULTI_RESULTS \
    | SESSION_TRACK | DEPRECATE_EOF

# server status flags
STATUS_AUTOCOMMIT, MORE_RESULTS = 0x0002, 0x0008

# column types
DECIMAL, TINY, SHORT, LONG, FLOAT, DOUBLE, NULL, TIMESTAMP, LONGLONG, INT24 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
DATE, TIME, DATETIME, YEAR, NEWDECIMAL, BLOB, VAR_STRING, STRING = 10, 11, 12, 13, 246, 252, 253, 254
BINARY_FLAG, UNSIGNED_FLAG = 128, 32
BINARY_CHARSET = 63

# commands
COM_QUIT, COM_INIT_DB, COM_QUERY, COM_FIELD_LIST, COM_PING = 0x01, 0x02, 0x03, 0x04, 0x0E
COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA = 0x16, 0x17, 0x18
COM_STMT_CLOSE, COM_STMT_RESET, COM_RESET_CONNECTION = 0x19, 0x1A, 0x1F


class ProtocolError(Exception):
    """The peer broke the protocol; the connection cannot be trusted any more."""


class PacketTooLarge(ProtocolError):
    """A client's packet above the limit (the database's max_allowed_packet after login): the
    client is told so with MySQL's own error before the connection closes, as the server does."""

    def __init__(self, limit: int, seq: int):
        super().__init__(f"packet larger than {limit} bytes")
        self.limit, self.seq = limit, seq


class Framer:
    """Reassembles packets from bytes; refuses a packet above ``limit`` before buffering it."""

    def __init__(self, limit: int):
        self.limit = limit
        self._buf = bytearray()
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Complete packets as (sequence id of the last frame, payload)."""
        self._buf += data
        out = []
        while len(self._buf) >= 4:
            length = int.from_bytes(self._buf[:3], "little")
            self._size += length
            if self._size > self.limit:
                raise PacketTooLarge(self.limit, self._buf[3])
            if len(self._buf) < 4 + length:
                self._size -= length
                break
            seq = self._buf[3]
            self._parts.append(bytes(self._buf[4:4 + length]))
            del self._buf[:4 + length]
            if length < MAX_FRAME:
                out.append((seq, b"".join(self._parts)))
                self._parts, self._size = [], 0
        return out

    def wanted(self) -> int:
        """Bytes that complete the next frame's header or payload, and not one more: during the
        handshake the transport reads exactly this much, so a TLS ClientHello sent right behind
        the SSLRequest stays in the socket for the TLS layer."""
        if len(self._buf) < 4:
            return 4 - len(self._buf)
        return 4 + int.from_bytes(self._buf[:3], "little") - len(self._buf)

    @property
    def pending(self) -> bool:
        return bool(self._buf or self._parts)


def frame(payload: bytes, seq: int) -> tuple[bytes, int]:
    """The frames of one packet and the next sequence id (16 MiB payloads continue in a new frame)."""
    out = bytearray()
    pos = 0
    while True:
        chunk = payload[pos:pos + MAX_FRAME]
        out += len(chunk).to_bytes(3, "little") + bytes([seq & 0xFF]) + chunk
        seq += 1
        pos += MAX_FRAME
        if len(chunk) < MAX_FRAME:
            return bytes(out), seq & 0xFF


# -- length-encoded values ------------------------------------------------------------------
def lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def lenenc_str(b: bytes) -> bytes:
    return lenenc_int(len(b)) + b


class Reader:
    """Reads fields from one packet's payload; running past its end is a protocol error."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("packet too short")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self, n: int) -> int:
        return int.from_bytes(self.take(n), "little")

    def lenenc(self) -> int | None:
        """A length-encoded integer; None for the NULL marker 0xFB."""
        first = self.int(1)
        if first < 251:
            return first
        if first == 251:
            return None
        if first == 255:
            raise ProtocolError("bad length-encoded integer")
        return self.int({252: 2, 253: 3, 254: 8}[first])

    def lenenc_str(self) -> bytes:
        n = self.lenenc()
        return b"" if n is None else self.take(n)

    def nul_str(self) -> bytes:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise ProtocolError("unterminated string")
        b = self.data[self.pos:end]
        self.pos = end + 1
        return b

    def rest(self) -> bytes:
        b = self.data[self.pos:]
        self.pos = len(self.data)
        return b

    @property
    def done(self) -> bool:
        return self.pos >= len(self.data)


# -- connection phase -----------------------------------------------------------------------
def handshake(version: str, connection_id: int, scramble: bytes, capabilities: int, charset: int,
              plugin: str) -> bytes:
    """Protocol::HandshakeV10 (``scramble`` is 20 bytes)."""
    return (b"\x0a" + version.encode() + b"\x00" + struct.pack("<I", connection_id) + scramble[:8] + b"\x00"
            + struct.pack("<HBHH", capabilities & 0xFFFF, charset, STATUS_AUTOCOMMIT, capabilities >> 16)
            + bytes([21]) + b"\x00" * 10 + scramble[8:] + b"\x00" + plugin.encode() + b"\x00")


@dataclass
class HandshakeResponse:
    capabilities: int
    charset: int
    user: str = ""
    auth: bytes = b""
    database: str | None = None
    plugin: str = "mysql_native_password"
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def ssl_request(self) -> bool:
        """An SSLRequest: the first 32 bytes of a response, sent in the clear before TLS."""
        return not self.user and bool(self.capabilities & SSL)


def parse_handshake_response(payload: bytes) -> HandshakeResponse:
    r = Reader(payload)
    caps = r.int(4)
    if not caps & PROTOCOL_41:
        raise ProtocolError("client does not speak protocol 4.1")
    r.take(4)  # max packet size
    out = HandshakeResponse(caps, r.int(1))
    r.take(23)
    if r.done:
        if len(payload) != 32:
            raise ProtocolError("malformed SSLRequest")
        return out
    out.user = r.nul_str().decode("utf-8", "replace")
    if caps & PLUGIN_AUTH_LENENC:
        out.auth = r.lenenc_str()
    elif caps & SECURE_CONNECTION:
        out.auth = r.take(r.int(1))
    else:
        out.auth = r.nul_str()
    if caps & CONNECT_WITH_DB and not r.done:
        out.database = r.nul_str().decode("utf-8", "replace")
    if caps & PLUGIN_AUTH and not r.done:
        out.plugin = r.nul_str().decode("ascii", "replace")
    if caps & CONNECT_ATTRS and not r.done:
        attrs = Reader(r.lenenc_str())
        while not attrs.done:
            key = attrs.lenenc_str().decode("utf-8", "replace")
            out.attributes[key] = attrs.lenenc_str().decode("utf-8", "replace")
    return out


def auth_switch(plugin: str, data: bytes) -> bytes:
    return b"\xfe" + plugin.encode() + b"\x00" + data


def auth_more(data: bytes) -> bytes:
    return b"\x01" + data


# -- generic responses ----------------------------------------------------------------------
def ok(caps: int, status: int, affected: int = 0, insert_id: int = 0, warnings: int = 0, *,
       header: int = 0x00) -> bytes:
    out = bytes([header]) + lenenc_int(affected) + lenenc_int(insert_id) + struct.pack("<HH", status, warnings)
    return out + (b"\x00" if caps & SESSION_TRACK else b"")


def err(errno: int, sqlstate: str, message: str) -> bytes:
    state = (sqlstate.encode("ascii", "replace") + b"HY000")[:5]
    return b"\xff" + struct.pack("<H", errno) + b"#" + state + message.encode("utf-8", "replace")[:4000]


def eof(status: int, warnings: int = 0) -> bytes:
    return b"\xfe" + struct.pack("<HH", warnings, status)


def end_of_rows(caps: int, status: int, warnings: int = 0) -> bytes:
    """The packet after the last row: EOF, or an OK with the EOF header (CLIENT_DEPRECATE_EOF)."""
    return ok(caps, status, warnings=warnings, header=0xFE) if caps & DEPRECATE_EOF else eof(status, warnings)


def status_of(payload: bytes) -> int | None:
    """The server status of an OK or EOF packet (None for any other packet)."""
    if payload[:1] == b"\xfe" and len(payload) < 9:
        return int.from_bytes(payload[3:5], "little") if len(payload) >= 5 else None
    if payload[:1] in (b"\x00", b"\xfe"):
        r = Reader(payload, 1)
        r.lenenc()
        r.lenenc()
        return r.int(2)
    return None


@dataclass(frozen=True)
class Column:
    name: str
    type: int
    charset: int
    length: int
    flags: int = 0
    decimals: int = 0

    def definition(self, schema: str = "", table: str = "") -> bytes:
        name = self.name.encode("utf-8")
        return (lenenc_str(b"def") + lenenc_str(schema.encode()) + lenenc_str(table.encode())
                + lenenc_str(table.encode()) + lenenc_str(name) + lenenc_str(name) + b"\x0c"
                + struct.pack("<HIBHB", self.charset, self.length, self.type, self.flags, self.decimals) + b"\x00\x00")


class ResponseScanner:
    """Finds the end of one command's response (OK, ERR, or a result set, several when the server
    says more follow) in the database's byte stream, looking only at packet heads.

    ``scan(buf)`` returns how many bytes of ``buf`` belong to the response so far and whether it
    is complete; the caller forwards those bytes as they are and keeps the rest."""

    def __init__(self, caps: int, *, fields: bool = False):
        self.deprecate_eof = bool(caps & DEPRECATE_EOF)
        #: COM_FIELD_LIST answers with column definitions up to an EOF, like rows
        self.state = "rows" if fields else "first"
        self.rows = 0
        self.columns = 0
        self.continued = False
        self.status = 0
        self.error: bytes | None = None

    def scan(self, buf: bytearray | bytes) -> tuple[int, bool]:
        pos, n = 0, len(buf)
        while pos + 4 <= n:
            if self.state == "rows" and not self.continued:
                pos = self._rows(buf, pos, n)
                if pos + 4 > n:
                    break
            length = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            end = pos + 4 + length
            if end > n:
                break
            continued, self.continued = self.continued, length == MAX_FRAME
            if not continued:
                first = buf[pos + 4] if length else -1
                small = self.state == "first" or first in (0xFE, 0xFF)
                if self._packet(first, length, bytes(buf[pos + 4:end]) if small else b""):
                    return end, True
            pos = end
        return pos, False

    def _rows(self, buf: bytearray | bytes, pos: int, n: int) -> int:
        """Skip whole row packets (the hot loop of a large result): stops before a packet that
        may end the result set (0xFE, 0xFF), a 16 MiB frame, or the end of ``buf``."""
        rows, header = 0, _HEADER
        while pos + 4 < n:
            length = header(buf, pos)[0] & MAX_FRAME
            end = pos + 4 + length
            if end > n or buf[pos + 4] >= 0xFE or length == MAX_FRAME:
                break
            pos = end
            rows += 1
        self.rows += rows
        return pos

    def _packet(self, first: int, length: int, payload: bytes) -> bool:
        """Advance over one packet (``payload`` only where its content matters); True when the
        response is complete."""
        if self.state == "first":
            if first in (0x00, 0xFF):
                return self._end(payload, first)
            if first == 0xFB:
                raise ProtocolError("the database asked for a local file")
            self.columns = Reader(payload).lenenc() or 0
            if not self.columns:
                raise ProtocolError("bad column count")
            self.state = "columns"
        elif self.state == "columns":
            self.columns -= 1
            if self.columns == 0:
                self.state = "rows" if self.deprecate_eof else "columns-eof"
        elif self.state == "columns-eof":
            self.state = "rows"
        elif first == 0xFF or (first == 0xFE and length < (MAX_FRAME if self.deprecate_eof else 9)):
            return self._end(payload, first)
        else:
            self.rows += 1
        return False

    def _end(self, payload: bytes, first: int) -> bool:
        if first == 0xFF:
            self.error = payload
            return True
        self.status = status_of(payload) or 0
        if self.status & MORE_RESULTS:
            self.state = "first"
            return False
        return True
