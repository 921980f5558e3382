"""What becomes of one statement a PostgreSQL client sends: relayed, anonymized or refused.

Three kinds of statement reach the database, each rebuilt from what was recognized, never
sent as the client wrote it:

- session statements (``SET``/``RESET``/``SHOW`` of the settings listed here, transaction
  control), recognized from sqlglot's tokens and rendered again with quoted identifiers and
  literals; settings that change how the server reads SQL (``search_path``,
  ``standard_conforming_strings``, roles) are not on the list;
- catalog queries (``catalog.py``), parsed with the library's bounds and checked against the
  catalog allowlist;
- everything else goes to the library: ``Session.admit`` gives the regenerated text of a query
  that reads no protected table, or names the protected table (then ``Session.execute``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from sqlanon import api
from sqlanon.errors import QueryRejected
from sqlanon.parse import MAX_CHARS, parse
from sqlanon.proxy.pg import catalog
from sqlanon.sql.write import write

_DIALECT = Postgres()


@dataclass(frozen=True)
class Decision:
    #: relay (send ``sql`` to the database), library (``Session.execute(sql)``) or empty
    kind: str
    sql: str
    #: a session setting: the client keeps its database connection from now on
    pins: bool = False


def _any(_: str) -> bool:
    return True


def _words(*allowed: str) -> Callable[[str], bool]:
    return lambda v: all(w.strip().lower() in allowed for w in v.split(",") if w.strip())


_DURATION = re.compile(r"^\d+\s*(us|ms|s|min|h|d)?$", re.IGNORECASE)
_ZONE = re.compile(r"^[A-Za-z0-9_/+\-:. ]{1,64}$")

#: settings a client may change, and which values
SETTINGS: dict[str, Callable[[str], bool]] = {
    "application_name": lambda v: len(v) < 64,
    "client_encoding": _words("utf8", "utf-8", "unicode"),
    "datestyle": _words("iso", "sql", "postgres", "german", "dmy", "mdy", "ymd", "euro", "european", "us",
                        "noneuro", "noneuropean", "default"),
    "intervalstyle": _words("postgres", "postgres_verbose", "sql_standard", "iso_8601"),
    "timezone": lambda v: bool(_ZONE.match(v)),
    "extra_float_digits": lambda v: v.lstrip("-").isdigit() and -15 <= int(v) <= 3,
    "statement_timeout": lambda v: bool(_DURATION.match(v)),
    "lock_timeout": lambda v: bool(_DURATION.match(v)),
    "idle_in_transaction_session_timeout": lambda v: bool(_DURATION.match(v)),
    "client_min_messages": _words("debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning",
                                  "error"),
    "bytea_output": _words("hex", "escape"),
    "default_transaction_isolation": _words("serializable", "repeatable read", "read committed",
                                            "read uncommitted"),
    "default_transaction_read_only": _words("on", "off", "true", "false"),
}

#: settings a client may read (SHOW)
SHOWN = frozenset(SETTINGS) | {
    "server_version", "server_version_num", "server_encoding", "standard_conforming_strings",
    "integer_datetimes", "transaction_isolation", "transaction_read_only", "max_identifier_length",
    "search_path", "lc_collate", "lc_ctype",
}

_TX_WORDS = frozenset({"ISOLATION", "LEVEL", "SERIALIZABLE", "REPEATABLE", "READ", "COMMITTED", "UNCOMMITTED",
                       "WRITE", "ONLY", "NOT", "DEFERRABLE", ","})
_QUERY = frozenset({"SELECT", "WITH", "(", "VALUES", "TABLE"})
_SESSION = frozenset({"SET", "RESET", "SHOW", "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT",
                      "SAVEPOINT", "RELEASE"})


def tokens(sql: str) -> list[Token]:
    if len(sql) > MAX_CHARS:
        raise QueryRejected("statement too long", f"{len(sql)} characters (limit {MAX_CHARS})")
    try:
        toks = _DIALECT.tokenize(sql)
    except TokenError as e:
        raise QueryRejected("unparsable SQL", str(e).splitlines()[0]) from None
    while toks and toks[-1].token_type == TokenType.SEMICOLON:
        toks.pop()
    if any(t.token_type == TokenType.SEMICOLON for t in toks):
        raise QueryRejected("several statements", "one statement per message")
    return toks


def decide(sql: str, session: api.Session) -> Decision:
    """The decision for one statement; raises QueryRejected (audited, by the library or here)."""
    try:
        toks = tokens(sql)
        if not toks:
            return Decision("empty", "")
        first = toks[0].text.upper()
        if toks[0].token_type == TokenType.STRING:
            raise QueryRejected("unparsable SQL", "a statement starts with a keyword")
        if first in _SESSION:
            return _session_statement(first, toks)
        if first not in _QUERY:
            raise QueryRejected(f"{first} statement", "the proxy accepts read queries, the settings a client "
                                "may change, and transaction control")
        if catalog.is_catalog([t.text.lower() for t in toks if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)]):
            tree = parse(sql, "postgres").tree
            catalog.check(tree)
            return Decision("relay", write(tree, "postgres"))
    except QueryRejected as e:
        session.record(sql, "rejected", construct=e.construct, message=e.message, seconds=0.0)
        raise
    admission = session.admit(sql)
    if admission.passthrough is not None:
        return Decision("relay", admission.passthrough)
    return Decision("library", sql)


def _ident(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("postgres")


def _value(t: Token) -> str:
    """One value of a SET statement as the value's text (checked by the setting's rule)."""
    if t.token_type in (TokenType.STRING, TokenType.NUMBER):
        return t.text
    if t.token_type != TokenType.IDENTIFIER and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t.text):
        return t.text
    raise QueryRejected("SET value", f"{t.text!r}: a value is a string, a number or a word")


def _session_statement(first: str, toks: list[Token]) -> Decision:
    words = [t.text.upper() if t.token_type != TokenType.STRING else t.text for t in toks]
    if first == "SET":
        return _set(toks)
    if first == "RESET":
        if len(toks) != 2 or toks[1].text.lower() not in SETTINGS:
            raise QueryRejected("RESET " + " ".join(words[1:])[:60], "only the settings a client may SET are reset")
        return Decision("relay", f"RESET {_ident(toks[1].text.lower())}", pins=True)
    if first == "SHOW":
        rest = " ".join(w.lower() for w in words[1:])
        if rest == "transaction isolation level":
            return Decision("relay", "SHOW TRANSACTION ISOLATION LEVEL")
        if len(toks) != 2 or rest not in SHOWN:
            raise QueryRejected("SHOW " + rest[:60], "not on the proxy's list of settings a client may read")
        return Decision("relay", f"SHOW {_ident(rest)}")
    rest = words[1:]
    if rest[:1] in (["WORK"], ["TRANSACTION"]):
        rest = rest[1:]
    if first in ("BEGIN", "START"):
        if first == "START" and words[1:2] != ["TRANSACTION"]:
            raise QueryRejected("START", "START TRANSACTION only")
        if not set(rest) <= _TX_WORDS:
            raise QueryRejected("transaction mode", " ".join(rest)[:60])
        return Decision("relay", " ".join(["BEGIN", *rest]).replace(" ,", ","))
    if first in ("COMMIT", "END") and not rest:
        return Decision("relay", "COMMIT")
    if first in ("ROLLBACK", "ABORT") and not rest:
        return Decision("relay", "ROLLBACK")
    name = toks[-1]
    if name.token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
        raise QueryRejected(f"{first} statement", " ".join(words)[:60])
    if first == "SAVEPOINT" and len(rest) == 1:
        return Decision("relay", f"SAVEPOINT {_ident(name.text)}")
    if first == "RELEASE" and len(rest) in (1, 2) and rest[:-1] in ([], ["SAVEPOINT"]):
        return Decision("relay", f"RELEASE SAVEPOINT {_ident(name.text)}")
    if first == "ROLLBACK" and rest[:1] == ["TO"] and len(rest) in (2, 3) and rest[1:-1] in ([], ["SAVEPOINT"]):
        return Decision("relay", f"ROLLBACK TO SAVEPOINT {_ident(name.text)}")
    raise QueryRejected(f"{first} statement", " ".join(words)[:60])


def _set(toks: list[Token]) -> Decision:
    i = 1
    local = False
    if i < len(toks) and toks[i].text.upper() in ("SESSION", "LOCAL"):
        local = toks[i].text.upper() == "LOCAL"
        i += 1
    words = [t.text.upper() for t in toks[i:]]
    if words[:2] == ["TIME", "ZONE"]:
        name, values = "timezone", toks[i + 2:]
    elif len(words) >= 2 and words[1] in ("=", "TO"):
        name, values = toks[i].text.lower(), toks[i + 2:]
    else:
        head = [t.text.upper() for t in toks[1:3]] or [""]
        raise QueryRejected("SET " + (" ".join(head) if head[0] == "SESSION" else head[0]), "only SET name = value "
                            "of the settings a client may change (role, session authorization and transaction "
                            "characteristics are not)")
    rule = SETTINGS.get(name)
    if rule is None:
        raise QueryRejected(f"SET {name}", "not on the proxy's list of settings a client may change (it could "
                            "change how the server reads statements, or whose rights they run with)")
    scope = "SET LOCAL" if local else "SET"
    if len(values) == 1 and values[0].text.upper() in ("DEFAULT", "LOCAL") and values[0].token_type != TokenType.STRING:
        return Decision("relay", f"{scope} {_ident(name)} TO DEFAULT", pins=not local)
    items = [v for v in values if v.token_type != TokenType.COMMA]
    if not items or len(values) != 2 * len(items) - 1 or any(v.token_type != TokenType.COMMA for v in values[1::2]):
        raise QueryRejected(f"SET {name}", "expected a value or a comma-separated list of values")
    texts = [_value(v) for v in items]
    if not rule(", ".join(texts)):
        raise QueryRejected(f"SET {name}", f"value {', '.join(texts)[:60]!r} is not accepted by the proxy")
    rendered = ", ".join(exp.Literal.string(t).sql("postgres") for t in texts)
    return Decision("relay", f"{scope} {_ident(name)} = {rendered}", pins=not local)
