"""Stage 1: bound the input, parse exactly one statement in the target dialect, or reject.

A parser failure is a rejection, never a pass-through. Input is bounded before parsing because
sqlglot's recursion and qualification cost grow steeply with nesting and term count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sqlanon.errors import QueryRejected

MAX_CHARS = 100_000
MAX_DEPTH = 64
MAX_NODES = 20_000

#: MySQL runs the body of /*! … */ and /*M! … */ although every parser reads a comment
EXECUTABLE_COMMENT = re.compile(r"/\*[M]?!")


@dataclass(frozen=True)
class Parsed:
    sql: str
    tree: exp.Expression
    dialect: str


def _depth(e: exp.Expression) -> int:
    deepest = 0
    for node in e.walk(bfs=False):
        d = 0
        p = node.parent
        while p is not None:
            d += 1
            p = p.parent
        deepest = max(deepest, d)
    return deepest


def _syntax_error(e: ParseError) -> str:
    """Where the parser stopped, in the user's words: sqlglot's own message names its classes."""
    first = e.errors[0] if e.errors else {}
    where = f" at line {first['line']}, column {first['col']}" if first.get("line") else ""
    near = (first.get("start_context") or "")[-30:] + (first.get("highlight") or "")
    return f"syntax error{where}" + (f", after {near.strip()!r}" if near.strip() else "")


def parse(sql: str, dialect: str) -> Parsed:
    if not isinstance(sql, str) or not sql.strip():
        raise QueryRejected("empty statement")
    if len(sql) > MAX_CHARS:
        raise QueryRejected("statement too long", f"{len(sql)} characters (limit {MAX_CHARS})")
    if EXECUTABLE_COMMENT.search(sql):
        raise QueryRejected("MySQL executable comment", "/*! … */ runs on the server but is a comment to the parser")
    if sql.count("(") > MAX_DEPTH * 8:
        raise QueryRejected("statement too complex", "too many parentheses")
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect, error_level=sqlglot.ErrorLevel.RAISE) if t is not None]
    except ParseError as e:
        raise QueryRejected("unparsable SQL", _syntax_error(e)) from None
    except TokenError as e:
        raise QueryRejected("unparsable SQL", str(e).splitlines()[0]) from None
    except RecursionError:
        raise QueryRejected("statement too complex", "nesting too deep") from None
    if len(trees) != 1:
        raise QueryRejected("several statements", f"{len(trees)} statements in one string")
    tree = trees[0]
    nodes = sum(1 for _ in tree.walk())
    if nodes > MAX_NODES:
        raise QueryRejected("statement too complex", f"{nodes} syntax nodes (limit {MAX_NODES})")
    if _depth(tree) > MAX_DEPTH:
        raise QueryRejected("statement too complex", f"nesting deeper than {MAX_DEPTH}")
    if isinstance(tree, exp.Command):
        raise QueryRejected(f"opaque command {str(tree.this).upper()}", "sqlglot does not parse this statement kind")
    if not isinstance(tree, exp.Query):
        raise QueryRejected(f"{tree.key.upper()} statement", "only single read queries are accepted")
    return Parsed(sql, tree, dialect)
