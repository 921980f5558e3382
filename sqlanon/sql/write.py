"""SQL text from a tree, in one dialect. Every statement sqlanon sends is written here, so that
a construct the dialect cannot express is refused by name instead of silently dropped: sqlglot
only raises when given ``ErrorLevel.RAISE`` itself — the string "RAISE" compares unequal to the
enum and lets it write ``SELECT x FROM t`` for ``SELECT x FROM t TABLESAMPLE (10 PERCENT)``."""
from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ErrorLevel, UnsupportedError

from sqlanon.errors import QueryRejected


def write(tree: exp.Expression, dialect: str, *, copy: bool = True) -> str:
    """``copy=False`` lets the generator transform a tree that is not used again."""
    try:
        return tree.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE, comments=False, copy=copy)
    except UnsupportedError as e:
        raise QueryRejected("SQL the database cannot express", f"{dialect}: {e}") from e
