"""Prepared statements: ``?`` placeholders numbered at prepare time, bound values as sqlglot literals.

At COM_STMT_PREPARE the statement is parsed once with every ``?`` turned into a named
placeholder in textual order (sqlglot's tree order is not the text's). At COM_STMT_EXECUTE the
bound values are decoded from the binary protocol and put into a copy of the tree as typed
literals that sqlglot quotes itself; the rendered statement then goes through the same gate and
library as a text query. No value is ever pasted into SQL text.
"""
from __future__ import annotations

import datetime as dt
import math
import struct
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from sqlanon.errors import QueryRejected
from sqlanon.parse import EXECUTABLE_COMMENT, MAX_CHARS
from sqlanon.proxy.mysql import codec
from sqlanon.proxy.mysql.gate import DIALECT
from sqlanon.proxy.mysql.results import time_text
from sqlanon.sql.write import write

MAX_PARAMS = 1000
_FIXED = {codec.TINY: "<b", codec.SHORT: "<h", codec.YEAR: "<h", codec.LONG: "<i", codec.INT24: "<i",
          codec.LONGLONG: "<q", codec.FLOAT: "<f", codec.DOUBLE: "<d"}


@dataclass
class Prepared:
    id: int
    tree: exp.Expression
    params: int
    #: parameter types of the last execution (a client may bind them once)
    types: list[int] | None = None
    #: values sent with COM_STMT_SEND_LONG_DATA, by parameter index
    long_data: dict[int, bytearray] = field(default_factory=dict)

    def render_with_nulls(self) -> str:
        """The statement with NULL for every parameter: what prepare-time checks look at."""
        return _render(self.tree, [exp.Null()] * self.params)


def prepare(stmt_id: int, sql: str) -> Prepared:
    if len(sql) > MAX_CHARS:
        raise QueryRejected("statement too long", f"{len(sql)} characters (limit {MAX_CHARS})")
    if EXECUTABLE_COMMENT.search(sql):
        raise QueryRejected("MySQL executable comment", "/*! … */ runs on the server but is a comment to the parser")
    dialect = sqlglot.Dialect.get_or_raise(DIALECT)
    try:
        tokens, n = [], 0
        for t in dialect.tokenize(sql):
            if t.token_type == TokenType.PLACEHOLDER:
                tokens += [Token(TokenType.COLON, ":", t.line, t.col, t.start, t.end),
                           Token(TokenType.VAR, f"p{n}", t.line, t.col, t.start, t.end)]
                n += 1
            else:
                tokens.append(t)
        trees = [t for t in dialect.parser().parse(tokens, sql) if t is not None]
    except (ParseError, TokenError) as e:
        raise QueryRejected("unparsable SQL", str(e).splitlines()[0]) from None
    except RecursionError:
        raise QueryRejected("statement too complex", "nesting too deep") from None
    if len(trees) != 1:
        raise QueryRejected("several statements", f"{len(trees)} statements in one string")
    if n > MAX_PARAMS:
        raise QueryRejected("too many parameters", f"{n} (limit {MAX_PARAMS})")
    return Prepared(stmt_id, trees[0], n)


def bind(stmt: Prepared, payload: bytes, encoding: str) -> str:
    """The statement of a COM_STMT_EXECUTE packet with its bound values, rendered."""
    return _render(stmt.tree, [literal(v) for v in decode_params(stmt, payload, encoding)])


def _render(tree: exp.Expression, values: list[exp.Expression]) -> str:
    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and str(node.name).startswith("p"):
            return values[int(node.name[1:])].copy()
        return node

    # transform copies the tree; the copy is not used again
    return write(tree.transform(put), DIALECT, copy=False)


def decode_params(stmt: Prepared, payload: bytes, encoding: str) -> list[Any]:
    r = codec.Reader(payload, 10)  # command, statement id, flags, iteration count
    n = stmt.params
    if n == 0:
        return []
    nulls = r.take((n + 7) // 8)
    if r.int(1):
        stmt.types = [r.int(2) for _ in range(n)]
    if stmt.types is None:
        raise codec.ProtocolError("parameters executed without types")
    out: list[Any] = []
    for i, t in enumerate(stmt.types):
        if nulls[i // 8] >> (i % 8) & 1:
            out.append(None)
        elif i in stmt.long_data:
            out.append(_text(bytes(stmt.long_data[i]), t, encoding))
        else:
            out.append(_value(r, t, encoding))
    return out


def _value(r: codec.Reader, t: int, encoding: str) -> Any:
    base, unsigned = t & 0xFF, bool(t & 0x8000)
    if base in _FIXED:
        fmt = _FIXED[base]
        if unsigned and base not in (codec.FLOAT, codec.DOUBLE):
            fmt = fmt.upper()
        return struct.unpack(fmt, r.take(struct.calcsize(fmt)))[0]
    if base == codec.NULL:
        return None
    if base in (codec.DATE, codec.DATETIME, codec.TIMESTAMP):
        d = r.take(r.int(1)) + b"\x00" * 11
        y, mo, day, h, mi, s, us = struct.unpack("<HBBBBBI", d[:11])
        if base == codec.DATE:
            return dt.date(y, mo, day)
        return dt.datetime(y, mo, day, h, mi, s, us)
    if base == codec.TIME:
        d = r.take(r.int(1)) + b"\x00" * 12
        neg, days, h, mi, s, us = struct.unpack("<BIBBBI", d[:12])
        v = dt.timedelta(days=days, hours=h, minutes=mi, seconds=s, microseconds=us)
        return -v if neg else v
    return _text(r.lenenc_str(), t, encoding)


def _text(b: bytes, t: int, encoding: str) -> Any:
    if t & 0xFF in (codec.DECIMAL, codec.NEWDECIMAL):
        try:
            return Decimal(b.decode("ascii"))
        except (InvalidOperation, UnicodeDecodeError):
            raise QueryRejected("parameter", "a DECIMAL parameter that is not a number") from None
    try:
        return b.decode(encoding)
    except UnicodeDecodeError:
        raise QueryRejected("binary parameter", f"a parameter that is not {encoding} text") from None


def literal(v: Any) -> exp.Expression:
    """A bound value as the literal sqlglot writes and quotes."""
    if v is None:
        return exp.Null()
    if isinstance(v, bool):
        return exp.Literal.number(int(v))
    if isinstance(v, int):
        return exp.Literal.number(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise QueryRejected("parameter", "a floating point parameter that is not finite")
        return exp.Literal.number(repr(v))
    if isinstance(v, Decimal):
        if not v.is_finite():
            raise QueryRejected("parameter", "a DECIMAL parameter that is not finite")
        return exp.Literal.number(format(v, "f"))
    if isinstance(v, dt.datetime):
        return exp.Literal.string(v.isoformat(" "))
    if isinstance(v, dt.date):
        return exp.Literal.string(v.isoformat())
    if isinstance(v, dt.timedelta):
        return exp.Literal.string(time_text(v))
    return exp.Literal.string(str(v))
