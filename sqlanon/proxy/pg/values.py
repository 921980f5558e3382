"""Values on the wire: the library's result values as typed columns, and Bind parameters as
sqlglot literals.

Anonymized results come from the library as Python values; each column gets the type OID its
values call for (generalized columns are text) and is sent in the format the client asked for.
Parameters are decoded from text or binary and become literals of the statement's tree, quoted by
sqlglot — never pasted into the text — so a bound statement is admitted exactly as the same
statement sent as a simple query would be.
"""
from __future__ import annotations

import datetime as dt
import math
import re
import struct
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from sqlglot import exp

from sqlanon.errors import SqlanonError

BOOL, BYTEA, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 19, 20, 21, 23, 25, 26
FLOAT4, FLOAT8, UNKNOWN, BPCHAR, VARCHAR, DATE, TIMESTAMP, TIMESTAMPTZ, NUMERIC = \
    700, 701, 705, 1042, 1043, 1082, 1114, 1184, 1700
SIZES = {BOOL: 1, INT8: 8, FLOAT8: 8, DATE: 4, TIMESTAMP: 8, TIMESTAMPTZ: 8}
EPOCH = dt.date(2000, 1, 1)
EPOCH_TS = dt.datetime(2000, 1, 1)
EPOCH_TZ = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


class Unsupported(SqlanonError):
    """A parameter or value type the proxy does not translate."""

    sqlstate = "0A000"


class BadValue(SqlanonError):
    """A parameter value that is not valid for its declared type."""

    sqlstate = "22P02"


# -- results ---------------------------------------------------------------------------------

def column_type(values: list[Any]) -> int:
    kinds = {type(v) for v in values if v is not None}
    for oid, allowed in ((BOOL, {bool}), (INT8, {int}), (FLOAT8, {float, int}), (NUMERIC, {Decimal, int}),
                         (DATE, {dt.date}), (BYTEA, {bytes, memoryview})):
        if kinds and kinds <= allowed:
            return oid
    if kinds == {dt.datetime}:
        aware = {v.tzinfo is not None for v in values if v is not None}
        return TIMESTAMPTZ if aware == {True} else TIMESTAMP if aware == {False} else TEXT
    return TEXT


def _float_text(v: float) -> bytes:
    if math.isnan(v):
        return b"NaN"
    if math.isinf(v):
        return b"Infinity" if v > 0 else b"-Infinity"
    return repr(float(v)).encode()


def _decimal_text(v: Decimal) -> bytes:
    return b"NaN" if v.is_nan() else format(v, "f").encode()


TEXT_OUT: dict[int, Callable[[Any], bytes]] = {
    BOOL: lambda v: b"t" if v else b"f",
    INT8: lambda v: str(v).encode(),
    FLOAT8: _float_text,
    NUMERIC: lambda v: _decimal_text(Decimal(v)),
    DATE: lambda v: v.isoformat().encode(),
    TIMESTAMP: lambda v: v.isoformat(" ").encode(),
    TIMESTAMPTZ: lambda v: v.isoformat(" ").encode(),
    BYTEA: lambda v: b"\\x" + bytes(v).hex().encode(),
    TEXT: lambda v: str(v).encode("utf-8"),
}

BINARY_OUT: dict[int, Callable[[Any], bytes]] = {
    BOOL: lambda v: b"\x01" if v else b"\x00",
    INT8: lambda v: struct.pack("!q", v),
    FLOAT8: lambda v: struct.pack("!d", v),
    NUMERIC: lambda v: numeric_binary(Decimal(v)),
    DATE: lambda v: struct.pack("!i", (v - EPOCH).days),
    TIMESTAMP: lambda v: struct.pack("!q", (v - EPOCH_TS) // dt.timedelta(microseconds=1)),
    TIMESTAMPTZ: lambda v: struct.pack("!q", (v - EPOCH_TZ) // dt.timedelta(microseconds=1)),
    BYTEA: bytes,
    TEXT: lambda v: str(v).encode("utf-8"),
}


def numeric_binary(d: Decimal) -> bytes:
    """PostgreSQL's binary numeric: base-10000 digits, weight, sign, display scale."""
    if d.is_nan():
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    if d.is_infinite():
        return struct.pack("!hhHh", 0, 0, 0xF000 if d < 0 else 0xD000, 0)
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    dscale = max(-exponent, 0)
    text = ("".join(map(str, digits)) + "0" * max(exponent, 0)).rjust(dscale + 1, "0")
    whole, frac = (text[:len(text) - dscale], text[len(text) - dscale:]) if dscale else (text, "")
    whole = whole.lstrip("0")
    whole = whole.rjust(-(-len(whole) // 4) * 4, "0")
    frac = frac.ljust(-(-len(frac) // 4) * 4, "0")
    digits = whole + frac
    groups = [int(digits[i:i + 4]) for i in range(0, len(digits), 4)]
    weight = len(whole) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    return struct.pack(f"!hhHh{len(groups)}h", len(groups), weight, 0x4000 if sign else 0, dscale, *groups)


def binary_numeric(raw: bytes) -> Decimal:
    n, weight, sign, dscale = struct.unpack_from("!hhHh", raw)
    if n < 0 or dscale < 0 or len(raw) != 8 + 2 * n:
        raise BadValue("malformed binary numeric parameter")
    if sign == 0xC000:
        return Decimal("NaN")
    groups = struct.unpack_from(f"!{n}h", raw, 8)
    if sign not in (0, 0x4000) or any(not 0 <= g < 10000 for g in groups):
        raise BadValue("malformed binary numeric parameter")
    # exact: the digits and the exponent, never arithmetic in a limited context
    text = "".join(f"{g:04d}" for g in groups) or "0"
    exponent = 4 * (weight - n + 1)
    if exponent > -dscale:
        text += "0" * (exponent + dscale)
    else:
        text = text[:len(text) - (-dscale - exponent)] or "0"  # digits beyond the display scale are zeros
    return Decimal((1 if sign == 0x4000 else 0, tuple(int(c) for c in text), -dscale))


# -- parameters ------------------------------------------------------------------------------

_INTS = {INT2: "!h", INT4: "!i", INT8: "!q"}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadValue("parameter is not valid UTF-8") from None
    if "\0" in text:
        raise BadValue("parameter contains a NUL byte")
    return text


def _cast(e: exp.Expression, to: str) -> exp.Expression:
    return exp.cast(e, exp.DataType.build(to, dialect="postgres"))


def literal(oid: int, fmt: int, raw: bytes | None) -> exp.Expression:
    """The parameter as a typed sqlglot literal."""
    try:
        return _literal(oid, fmt, raw)
    except (ValueError, struct.error, InvalidOperation):
        raise BadValue(f"invalid {'binary' if fmt else 'text'} value for a parameter of type OID {oid}") from None


def _literal(oid: int, fmt: int, raw: bytes | None) -> exp.Expression:
    if raw is None:
        return exp.Null() if oid in (0, UNKNOWN) else _cast(exp.Null(), TYPE_NAMES.get(oid, "TEXT"))
    if oid in (0, UNKNOWN) and fmt == 0:
        # an untyped literal: the server infers its type from the context, as for $n
        return exp.Literal.string(_text(raw))
    if oid in (TEXT, VARCHAR, BPCHAR, NAME):
        return exp.Literal.string(_text(raw))
    if oid in _INTS:
        v = struct.unpack(_INTS[oid], raw)[0] if fmt else int(_text(raw).strip())
        return exp.Literal.number(v)
    if oid in (FLOAT4, FLOAT8):
        f = struct.unpack("!f" if len(raw) == 4 else "!d", raw)[0] if fmt else float(_text(raw))
        return _cast(exp.Literal.number(repr(f)) if math.isfinite(f) else exp.Literal.string(_float_text(f).decode()),
                     "DOUBLE PRECISION")
    if oid == NUMERIC:
        d = binary_numeric(raw) if fmt else Decimal(_text(raw).strip())
        if d.is_nan() or d.is_infinite():
            return _cast(exp.Literal.string(_decimal_text(d).decode()), "NUMERIC")
        return exp.Literal.number(format(d, "f"))
    if oid == BOOL:
        if fmt:
            if raw not in (b"\x00", b"\x01"):
                raise ValueError(raw)
            return exp.Boolean(this=raw == b"\x01")
        word = _text(raw).strip().lower()
        if word not in ("t", "true", "1", "f", "false", "0", "on", "off", "yes", "no", "y", "n"):
            raise ValueError(word)
        return exp.Boolean(this=word in ("t", "true", "1", "on", "yes", "y"))
    if oid == DATE:
        if fmt:
            text = (EPOCH + dt.timedelta(days=struct.unpack("!i", raw)[0])).isoformat()
        else:
            text = _text(raw).strip()
            if not (_DATE.match(text) and dt.date.fromisoformat(text)) and text not in ("infinity", "-infinity"):
                raise ValueError(text)
        return _cast(exp.Literal.string(text), "DATE")
    if oid in (0, UNKNOWN):
        raise Unsupported("a binary parameter of unspecified type: declare its type or send it as text")
    raise Unsupported(f"parameter type OID {oid} is not supported (int2/4/8, float4/8, numeric, text, varchar, "
                      "bool, date, or untyped text)")


TYPE_NAMES = {BOOL: "BOOLEAN", INT2: "SMALLINT", INT4: "INT", INT8: "BIGINT", FLOAT4: "REAL",
              FLOAT8: "DOUBLE PRECISION", NUMERIC: "NUMERIC", TEXT: "TEXT", VARCHAR: "VARCHAR", DATE: "DATE"}


def substitute(tree: exp.Expression, values: list[exp.Expression]) -> exp.Expression:
    """Replace ``$1`` … ``$n`` in ``tree`` by ``values``; a number out of range is a protocol error."""
    for p in list(tree.find_all(exp.Parameter)):
        idx = p.this.this if isinstance(p.this, exp.Literal) and not p.this.is_string else None
        if idx is None or not str(idx).isdigit() or not 1 <= int(idx) <= len(values):
            raise BadValue(f"parameter ${p.this} has no value ({len(values)} bound)")
        p.replace(values[int(idx) - 1].copy())
    return tree


def parameter_count(tree: exp.Expression) -> int:
    numbers = [int(p.this.this) for p in tree.find_all(exp.Parameter)
               if isinstance(p.this, exp.Literal) and str(p.this.this).isdigit()]
    return max(numbers, default=0)
