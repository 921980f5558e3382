"""The library's answers as MySQL result sets, in the text or the binary row format.

Column types come from the values: integers, floating point, decimals, dates, times and text
get the type a MySQL server would give them; generalized columns ('[30,40)', '185**') are text.
A column whose values mix kinds is sent as text. An anonymized answer streams (``head``, then
``row_packets`` batch by batch): its columns are typed by its first batch, which the driver
behind the library fills with one Python type per column, as the later rows.
"""
from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any, Iterable, Iterator, Sequence

from sqlanon.proxy.mysql import codec

INT64 = (-(1 << 63), (1 << 63) - 1)


#: Python type → kind of column
KINDS = {bool: "int", int: "int", float: "float", Decimal: "decimal", dt.datetime: "datetime", dt.date: "date",
         dt.timedelta: "time", bytes: "bytes", bytearray: "bytes", str: "text"}


def _kind(values: Sequence[Any]) -> str:
    kinds = {KINDS.get(t, "text") for t in set(map(type, values)) if t is not type(None)}
    kind = kinds.pop() if len(kinds) == 1 else "text"
    if kind == "int":
        present = [v for v in values if v is not None]
        if min(present) < INT64[0] or max(present) > INT64[1]:
            return "decimal"
    return kind


def columns(names: Sequence[str], by_column: Sequence[Sequence[Any]], charset: int) -> list[codec.Column]:
    """Column definitions for values given column by column (``list(zip(*rows))``)."""
    out = []
    for name, values in zip(names, by_column):
        kind = _kind(values)
        if kind == "int":
            out.append(codec.Column(name, codec.LONGLONG, codec.BINARY_CHARSET, 20, codec.BINARY_FLAG))
        elif kind == "float":
            out.append(codec.Column(name, codec.DOUBLE, codec.BINARY_CHARSET, 22, codec.BINARY_FLAG, 31))
        elif kind == "decimal":
            scale = max((-v.as_tuple().exponent for v in values if isinstance(v, Decimal)), default=0)
            out.append(codec.Column(name, codec.NEWDECIMAL, codec.BINARY_CHARSET, 65, codec.BINARY_FLAG,
                                    max(0, min(int(scale), 30))))
        elif kind in ("datetime", "date", "time"):
            t = {"datetime": codec.DATETIME, "date": codec.DATE, "time": codec.TIME}[kind]
            out.append(codec.Column(name, t, codec.BINARY_CHARSET, 26, codec.BINARY_FLAG, 6 if kind != "date" else 0))
        elif kind == "bytes":
            out.append(codec.Column(name, codec.BLOB, codec.BINARY_CHARSET, 1 << 24, codec.BINARY_FLAG))
        else:
            width = max((len(str(v)) for v in set(values) - {None}), default=1)
            out.append(codec.Column(name, codec.VAR_STRING, charset, max(width, 1) * 4))
    return out


def _text(v: Any, encoding: str) -> bytes:
    """A value as the text protocol writes it."""
    if isinstance(v, str):
        return v.encode(encoding, "replace")
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if isinstance(v, bool):
        return b"1" if v else b"0"
    if isinstance(v, float):
        return repr(v).encode()
    if isinstance(v, Decimal):
        return format(v, "f").encode()
    if isinstance(v, dt.datetime):
        return v.isoformat(" ").encode()
    if isinstance(v, dt.date):
        return v.isoformat().encode()
    if isinstance(v, dt.timedelta):
        return time_text(v).encode()
    return str(v).encode(encoding, "replace")


def time_text(v: dt.timedelta) -> str:
    sign = "-" if v < dt.timedelta(0) else ""
    total = abs(v)
    hours, rest = divmod(total.days * 86400 + total.seconds, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return text + (f".{total.microseconds:06d}" if total.microseconds else "")


#: one-byte length prefixes, the common case of a text value
_SHORT = [bytes([n]) for n in range(251)]


def _lenenc(b: bytes) -> bytes:
    return (_SHORT[len(b)] if len(b) < 251 else codec.lenenc_int(len(b))) + b


def text_rows(by_column: Sequence[Sequence[Any]], encoding: str) -> list[bytes]:
    """ProtocolText::ResultsetRow payloads, encoded column by column: generalized columns hold
    few distinct values, each encoded once (where a column holds one type: 1, 1.0 and True
    are equal keys but different texts)."""
    encoded = []
    for values in by_column:
        kinds = set(map(type, values)) - {type(None)}
        if len(kinds) > 1 or bytearray in kinds:
            encoded.append([b"\xfb" if v is None else _lenenc(_text(v, encoding)) for v in values])
            continue
        seen: dict[Any, bytes] = {}
        column = []
        for v in values:
            b = seen.get(v)
            if b is None:
                b = seen[v] = b"\xfb" if v is None else _lenenc(_text(v, encoding))
            column.append(b)
        encoded.append(column)
    return list(map(b"".join, zip(*encoded)))


def binary_row(row: Sequence[Any], cols: Sequence[codec.Column], encoding: str) -> bytes:
    """ProtocolBinary::ResultsetRow: header, NULL bitmap (offset 2), values by column type."""
    nulls = bytearray((len(cols) + 9) // 8)
    values = []
    for i, (v, c) in enumerate(zip(row, cols)):
        if v is None:
            nulls[(i + 2) // 8] |= 1 << ((i + 2) % 8)
        elif c.type == codec.LONGLONG:
            values.append(struct.pack("<q", int(v)))
        elif c.type == codec.DOUBLE:
            values.append(struct.pack("<d", v))
        elif c.type in (codec.DATE, codec.DATETIME):
            values.append(_binary_datetime(v))
        elif c.type == codec.TIME:
            values.append(_binary_time(v))
        else:
            values.append(codec.lenenc_str(_text(v, encoding)))
    return b"\x00" + bytes(nulls) + b"".join(values)


def _binary_datetime(v: dt.date) -> bytes:
    if not isinstance(v, dt.datetime):
        return struct.pack("<BHBB", 4, v.year, v.month, v.day)
    if v.microsecond:
        return struct.pack("<BHBBBBBI", 11, v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)
    return struct.pack("<BHBBBBB", 7, v.year, v.month, v.day, v.hour, v.minute, v.second)


def _binary_time(v: dt.timedelta) -> bytes:
    neg = v < dt.timedelta(0)
    t = abs(v)
    h, rest = divmod(t.seconds, 3600)
    if t.microseconds:
        return struct.pack("<BBIBBBI", 12, neg, t.days, h, rest // 60, rest % 60, t.microseconds)
    return struct.pack("<BBIBBB", 8, neg, t.days, h, rest // 60, rest % 60)


def result_set(names: Sequence[str], rows: Sequence[Sequence[Any]], *, caps: int, status: int, charset: int,
               encoding: str, binary: bool, warnings: int = 0) -> Iterator[bytes]:
    """The payloads of one result set: column count, definitions, (EOF), rows, end (with the
    number of ``warnings`` SHOW WARNINGS then lists)."""
    packets, cols = head(names, rows, caps=caps, status=status, charset=charset)
    yield from packets
    yield from row_packets(rows, cols, encoding=encoding, binary=binary)
    yield codec.end_of_rows(caps, status, warnings)


def head(names: Sequence[str], rows: Sequence[Sequence[Any]], *, caps: int, status: int,
         charset: int) -> tuple[list[bytes], list[codec.Column]]:
    """The payloads before the rows (column count, definitions, EOF) and the columns, typed by
    ``rows`` (all of them, or a streamed answer's first batch)."""
    cols = columns(names, list(zip(*rows)) if rows else [() for _ in names], charset)
    out = [codec.lenenc_int(len(cols)), *(c.definition() for c in cols)]
    if not caps & codec.DEPRECATE_EOF:
        out.append(codec.eof(status))
    return out, cols


def row_packets(rows: Sequence[Sequence[Any]], cols: Sequence[codec.Column], *, encoding: str,
                binary: bool) -> list[bytes]:
    if binary:
        return [binary_row(r, cols, encoding) for r in rows]
    return text_rows(list(zip(*rows)), encoding) if rows else []


def definitions(cols: Iterable[bytes], caps: int, status: int) -> list[bytes]:
    """Column definition packets followed by EOF unless the client deprecated it."""
    out = list(cols)
    if out and not caps & codec.DEPRECATE_EOF:
        out.append(codec.eof(status))
    return out
