"""PostgreSQL protocol 3.0 messages, without I/O: framing, decoding and encoding.

A ``Framer`` is fed bytes and yields whole messages; it bounds every length before it buffers
the body, so a client cannot make the proxy hold more than ``MAX_MESSAGE`` bytes of one message.
The session (``session.py``) does the reading and writing; the backend relay uses the same
framer on the database's replies. Message layouts: PostgreSQL documentation, chapter 55.7.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

#: the largest frontend message accepted (a statement plus its parameters)
MAX_MESSAGE = 1 << 20
#: PostgreSQL's own limit on a start-up packet
MAX_STARTUP = 10_000

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

_I32 = struct.Struct("!i")
_I16 = struct.Struct("!h")
_HDR = struct.Struct("!ci")


class ProtocolViolation(Exception):
    """The peer broke the framing; the connection cannot be resynchronised."""

    sqlstate = "08P01"


@dataclass(frozen=True)
class Startup:
    """A start-up packet: protocol 3.0 parameters, or one of the special request codes."""

    code: int
    params: dict[str, str]
    #: CancelRequest: the key the client was given
    cancel: tuple[int, int] | None = None


def decode_startup(body: bytes) -> Startup:
    if len(body) < 4:
        raise ProtocolViolation("start-up packet too short")
    code = _I32.unpack_from(body)[0]
    if code == CANCEL_REQUEST:
        if len(body) != 12:
            raise ProtocolViolation("malformed cancel request")
        pid, key = struct.unpack_from("!ii", body, 4)
        return Startup(code, {}, (pid, key))
    if code in (SSL_REQUEST, GSSENC_REQUEST):
        if len(body) != 4:
            raise ProtocolViolation("malformed encryption request")
        return Startup(code, {})
    if code != PROTOCOL_3:
        raise ProtocolViolation(f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}")
    parts = body[4:].split(b"\0")
    if len(parts) < 2 or parts[-1] != b"" or parts[-2] != b"" or len(parts) % 2 != 0:
        raise ProtocolViolation("malformed start-up parameters")
    try:
        words = [p.decode("utf-8") for p in parts[:-2]]
    except UnicodeDecodeError:
        raise ProtocolViolation("start-up parameters are not UTF-8") from None
    params = dict(zip(words[0::2], words[1::2]))
    if len(params) * 2 != len(words) or "" in params:
        raise ProtocolViolation("malformed start-up parameters")
    return Startup(code, params)


class Framer:
    """Splits a byte stream into messages: ``(type, body)`` with a one-byte type, or untyped
    start-up packets while ``startup`` is set."""

    def __init__(self, limit: int = MAX_MESSAGE):
        self.buf = bytearray()
        self.limit = limit
        self.startup = True

    def feed(self, data: bytes) -> None:
        self.buf += data

    def next(self) -> tuple[bytes, bytes] | None:
        """The next whole message, or None until more bytes arrive."""
        buf = self.buf
        if self.startup:
            if len(buf) < 4:
                return None
            n = _I32.unpack_from(buf)[0]
            if n < 8 or n > MAX_STARTUP:
                raise ProtocolViolation(f"invalid start-up packet length {n}")
            if len(buf) < n:
                return None
            body = bytes(buf[4:n])
            del buf[:n]
            return b"", body
        if len(buf) < 5:
            return None
        typ, n = _HDR.unpack_from(buf)
        if n < 4 or n > self.limit:
            raise ProtocolViolation(f"invalid message length {n} for message type {typ!r}")
        if len(buf) < n + 1:
            return None
        body = bytes(buf[5:n + 1])
        del buf[:n + 1]
        return typ, body


class Reader:
    """Fields of one message body, in order."""

    def __init__(self, body: bytes):
        self.body = body
        self.pos = 0

    def int32(self) -> int:
        v = self._take(4)
        return _I32.unpack(v)[0]

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def cstring(self) -> str:
        end = self.body.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolViolation("unterminated string")
        raw = self.body[self.pos:end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolViolation("string is not UTF-8") from None

    def bytes(self, n: int) -> bytes:
        if n < 0:
            raise ProtocolViolation("negative length")
        return self._take(n)

    def byte(self) -> bytes:
        return self._take(1)

    def rest(self) -> bytes:
        out, self.pos = self.body[self.pos:], len(self.body)
        return out

    def end(self) -> None:
        if self.pos != len(self.body):
            raise ProtocolViolation("trailing bytes in message")

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.body):
            raise ProtocolViolation("message shorter than its fields")
        out = self.body[self.pos:self.pos + n]
        self.pos += n
        return out


@dataclass(frozen=True)
class Bind:
    portal: str
    statement: str
    param_formats: list[int]
    params: list[bytes | None]
    result_formats: list[int]


def decode_bind(body: bytes) -> Bind:
    r = Reader(body)
    portal, statement = r.cstring(), r.cstring()
    pf = [r.int16() for _ in range(r.int16())]
    params: list[bytes | None] = []
    for _ in range(r.int16()):
        n = r.int32()
        params.append(None if n == -1 else r.bytes(n))
    rf = [r.int16() for _ in range(r.int16())]
    r.end()
    if any(f not in (0, 1) for f in pf + rf):
        raise ProtocolViolation("format code other than text (0) or binary (1)")
    return Bind(portal, statement, pf, params, rf)


def decode_parse(body: bytes) -> tuple[str, str, list[int]]:
    r = Reader(body)
    name, query = r.cstring(), r.cstring()
    types = [r.int32() for _ in range(r.int16())]
    r.end()
    return name, query, types


def formats_for(codes: list[int], n: int) -> list[int]:
    """A Bind's format codes spread over ``n`` columns: none, one for all, or one each."""
    if not codes:
        return [0] * n
    if len(codes) == 1:
        return codes * n
    if len(codes) != n:
        raise ProtocolViolation(f"{len(codes)} format codes for {n} values")
    return codes


# -- encoding ------------------------------------------------------------------------------------

def message(typ: bytes, body: bytes = b"") -> bytes:
    return _HDR.pack(typ, len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\0"


def auth(code: int, data: bytes = b"") -> bytes:
    return message(b"R", _I32.pack(code) + data)


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", cstr(name) + cstr(value))


def backend_key(pid: int, key: int) -> bytes:
    return message(b"K", struct.pack("!ii", pid, key))


def ready(status: bytes) -> bytes:
    return message(b"Z", status)


def command_complete(tag: str) -> bytes:
    return message(b"C", cstr(tag))


def error(sqlstate: str, text: str, *, severity: str = "ERROR", detail: str | None = None) -> bytes:
    fields = [b"S" + cstr(severity), b"V" + cstr(severity), b"C" + cstr(sqlstate), b"M" + cstr(text)]
    if detail:
        fields.append(b"D" + cstr(detail))
    return message(b"E", b"".join(fields) + b"\0")


def notice(text: str) -> bytes:
    """A NoticeResponse (severity NOTICE, SQLSTATE 00000): psql prints it before the rows."""
    fields = [b"S" + cstr("NOTICE"), b"V" + cstr("NOTICE"), b"C" + cstr("00000"), b"M" + cstr(text)]
    return message(b"N", b"".join(fields) + b"\0")


def error_fields(body: bytes) -> dict[str, str]:
    """An ErrorResponse's fields by code letter (the backend's, for the audit trail)."""
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


def row_description(columns: list[tuple[str, int, int, int]]) -> bytes:
    """``columns``: (name, type oid, type size, format)."""
    parts = [_I16.pack(len(columns))]
    for name, oid, size, fmt in columns:
        parts.append(cstr(name) + struct.pack("!ihihih", 0, 0, oid, size, -1, fmt))
    return message(b"T", b"".join(parts))


_ROW = struct.Struct("!cih").pack
_NULL = b"\xff\xff\xff\xff"


def data_rows(rows: Iterable[Sequence[Any]], encoders: Sequence[Callable[[Any], bytes]]) -> bytes:
    """DataRow messages, each value encoded by its column's encoder (None is NULL)."""
    out = []
    n = len(encoders)
    length = _I32.pack
    for row in rows:
        parts = []
        for v, enc in zip(row, encoders):
            if v is None:
                parts.append(_NULL)
            else:
                e = enc(v)
                parts.append(length(len(e)))
                parts.append(e)
        body = b"".join(parts)
        out.append(_ROW(b"D", len(body) + 6, n) + body)
    return b"".join(out)


def parameter_description(oids: list[int]) -> bytes:
    return message(b"t", _I16.pack(len(oids)) + b"".join(_I32.pack(o) for o in oids))


def query(text: str) -> bytes:
    return message(b"Q", cstr(text))


def parse(name: str, text: str) -> bytes:
    return message(b"P", cstr(name) + cstr(text) + _I16.pack(0))


def bind(portal: str, statement: str, result_formats: list[int]) -> bytes:
    body = cstr(portal) + cstr(statement) + _I16.pack(0) + _I16.pack(0)
    body += _I16.pack(len(result_formats)) + b"".join(_I16.pack(f) for f in result_formats)
    return message(b"B", body)


def describe(kind: bytes, name: str) -> bytes:
    return message(b"D", kind + cstr(name))


def execute(portal: str, max_rows: int) -> bytes:
    return message(b"E", cstr(portal) + _I32.pack(max_rows))


def close(kind: bytes, name: str) -> bytes:
    return message(b"C", kind + cstr(name))


def startup(params: dict[str, str]) -> bytes:
    body = _I32.pack(PROTOCOL_3) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return _I32.pack(len(body) + 4) + body


def int32(v: int) -> bytes:
    return _I32.pack(v)


PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
EMPTY_QUERY = message(b"I")
PORTAL_SUSPENDED = message(b"s")
SYNC = message(b"S")
FLUSH = message(b"H")
TERMINATE = message(b"X")
SSL_REQUEST_PACKET = struct.pack("!ii", 8, SSL_REQUEST)
