"""The chatter gate: the session statements clients send besides queries, as an allowlist.

The library admits only single read queries. Clients also send session settings, transaction
control, ``USE``, ``SHOW`` and catalog queries; this module accepts the ones that expose
nothing of protected tables and change nothing about how the server reads SQL, and says what
to send instead of the client's text: a statement rendered from the parse tree, or a constant.
Anything it does not recognise goes to the library (``Session.admit``), which rejects what it
does not understand. Executable comments are refused before parsing, as the library does.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sqlanon.errors import QueryRejected
from sqlanon.parse import EXECUTABLE_COMMENT, MAX_CHARS
from sqlanon.sql.write import write

DIALECT = "mysql"

#: character sets a client may choose (name → Python codec); the relay forwards the database's bytes
CHARSETS = {"utf8mb4": "utf-8", "utf8": "utf-8", "utf8mb3": "utf-8", "latin1": "cp1252", "ascii": "ascii"}
#: collation ids of the handshake → character set
COLLATIONS = {8: "latin1", 11: "ascii", 33: "utf8mb3", 83: "utf8mb3", 45: "utf8mb4", 46: "utf8mb4", 255: "utf8mb4",
              **{i: "utf8mb4" for i in range(224, 248)}}

COLLATION_NAME = re.compile(r"[a-z0-9_]+")

#: session settings a client may change: none of them changes how the server reads quotes or
#: strings (sql_mode; the client and connection character sets are set by the proxy with SET
#: NAMES, so that its bytes are read as it wrote them), whose privileges apply (role) or what a
#: statement may read
SETTINGS = frozenset({
    "autocommit", "time_zone", "transaction_isolation", "tx_isolation", "transaction_read_only", "tx_read_only",
    "character_set_results",
    "net_read_timeout", "net_write_timeout", "wait_timeout", "interactive_timeout", "sql_select_limit",
    "max_statement_time", "lc_time_names", "div_precision_increment", "sql_warnings", "sql_notes",
})

#: SHOW statements that expose no data and no statistics (SHOW TABLE STATUS and SHOW INDEX do)
SHOWS = frozenset({"TABLES", "COLUMNS", "FIELDS", "DATABASES", "SCHEMAS", "VARIABLES", "SESSION VARIABLES",
                   "COLLATION", "CHARACTER SET", "CHARSET", "WARNINGS", "ERRORS", "ENGINES", "CREATE TABLE"})
TRANSACTION_MODES = frozenset({"ISOLATION LEVEL READ UNCOMMITTED", "ISOLATION LEVEL READ COMMITTED",
                               "ISOLATION LEVEL REPEATABLE READ", "ISOLATION LEVEL SERIALIZABLE", "READ ONLY",
                               "READ WRITE"})
SHOW_ARGS = frozenset({"this", "full", "like", "target", "db", "json", "scope_kind"})

#: information_schema tables a client may read → the columns it may read (None: all of them).
#: TABLES's row counts, lengths and AUTO_INCREMENT are statistics of protected tables.
CATALOG: dict[str, frozenset[str] | None] = {
    "schemata": None, "columns": None, "character_sets": None, "collations": None, "engines": None,
    "key_column_usage": None, "referential_constraints": None, "table_constraints": None, "views": None,
    "tables": frozenset({"table_catalog", "table_schema", "table_name", "table_type", "engine", "version",
                         "row_format", "create_time", "table_collation", "create_options", "table_comment"}),
}


@dataclass(frozen=True)
class Verdict:
    """What to do with a statement.

    kind: ``forward`` (send ``sql`` to the database and relay its answer), ``ok`` (answer OK,
    send nothing), ``kill`` (KILL [QUERY] of another proxy connection), ``library`` (the library
    decides). ``charset``: the character set the client switches to with this statement (SET NAMES)."""

    kind: str
    sql: str | None = None
    charset: str | None = None
    #: ``kill``: the proxy connection whose statement (``query``) or connection ends
    thread: int | None = None
    query: bool = False
    #: ``library``, for a query over a protected table: the names of its result columns
    columns: tuple[str, ...] = ()


class VerdictCache:
    """Verdicts for statement texts seen before, per policy and schema: a client that repeats a
    statement skips parsing and analysis (0.5–1.5 ms each). Only what passes is kept: a rejection
    is decided and audited again, and a query over a protected table runs the library anyway.
    A new policy object or a refreshed schema (a new ``tables`` dict) misses."""

    def __init__(self, size: int = 4096, longest: int = 4096):
        self.size, self.longest = size, longest
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, str], tuple[Any, Any, Verdict]] = OrderedDict()

    def get(self, policy: Any, tables: Any, sql: str) -> Verdict | None:
        with self._lock:
            entry = self._entries.get((id(policy), sql))
            if entry is None or entry[0] is not policy or entry[1] is not tables:
                return None
            self._entries.move_to_end((id(policy), sql))
            return entry[2]

    def put(self, policy: Any, tables: Any, sql: str, verdict: Verdict) -> None:
        if verdict.kind == "library" or len(sql) > self.longest:
            return
        with self._lock:
            self._entries[(id(policy), sql)] = (policy, tables, verdict)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)


def classify(sql: str, database: str, tables: set[str], protected: set[str]) -> Verdict:
    """``tables``: lower-cased tables of the current database; ``protected``: those with a policy."""
    if len(sql) > MAX_CHARS:
        return Verdict("library")
    if EXECUTABLE_COMMENT.search(sql):
        raise QueryRejected("MySQL executable comment", "/*! … */ runs on the server but is a comment to the parser")
    try:
        trees = [t for t in sqlglot.parse(sql, read=DIALECT) if t is not None]
    except (ParseError, TokenError, RecursionError):
        return Verdict("library")
    if len(trees) != 1:
        return Verdict("library")
    tree = trees[0]
    if isinstance(tree, exp.Set):
        return _set(tree, sql)
    if isinstance(tree, exp.Use):
        return _use(tree, database)
    if isinstance(tree, (exp.Transaction, exp.Commit, exp.Rollback)):
        return _transaction(tree)
    if isinstance(tree, exp.Show):
        return _show(tree, database, tables, protected)
    if isinstance(tree, exp.Describe):
        return _describe(tree, database, tables)
    if isinstance(tree, exp.Kill):
        return _kill(tree)
    if any(_schema(t) == "information_schema" for t in tree.find_all(exp.Table)):
        return _catalog(tree)
    return Verdict("library")


def set_names(charset: str, collation: str | None = None) -> str:
    """``SET NAMES`` for a character set of CHARSETS (and one of its collations), as the database
    should receive it."""
    item = exp.SetItem(this=exp.Var(this=charset), kind="NAMES")
    if collation is not None:
        item.set("collate", exp.Literal.string(collation))
    return _render(exp.Set(expressions=[item]))


def _render(tree: exp.Expression) -> str:
    return write(tree, DIALECT)


def _schema(t: exp.Table) -> str:
    return t.db.lower()


def _set(tree: exp.Set, sql: str) -> Verdict:
    if tree.args.get("unset") or tree.args.get("tag") or len(tree.expressions) != 1:
        raise QueryRejected("SET", "one session setting per statement")
    item = tree.expressions[0]
    kind = str(item.args.get("kind") or "").upper()
    if kind in ("NAMES", "CHARACTER SET", "CHARSET"):
        name = item.this.name.lower()
        collation = item.args["collate"].name.lower() if item.args.get("collate") is not None else None
        if name not in CHARSETS or collation is not None and not COLLATION_NAME.fullmatch(collation) or \
                collation is not None and not collation.startswith(name + "_"):
            raise QueryRejected("SET NAMES", f"character set {name} is not supported by the proxy")
        return Verdict("forward", set_names(name, collation), charset=name)
    if kind == "TRANSACTION" and not item.args.get("global_"):
        modes = [str(m).upper() for m in item.expressions]
        if len(modes) == 1 and modes[0] in TRANSACTION_MODES:
            # sqlglot drops SESSION, which makes the setting last beyond the next transaction
            tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(sql)
            session = len(tokens) > 1 and tokens[1].text.upper() == "SESSION"
            return Verdict("forward", " ".join(["SET", *(["SESSION"] if session else []), "TRANSACTION", modes[0]]))
    target = item.this.this if isinstance(item.this, exp.EQ) else None
    if kind in ("", "SESSION") and target is not None:
        value = item.this.expression
        name = target.name.lower()
        scope = str(target.args.get("kind") or "session").lower() if isinstance(target, exp.SessionParameter) else ""
        if isinstance(target, (exp.Column, exp.SessionParameter)) and scope in ("", "session") \
                and name in SETTINGS and isinstance(value, (exp.Literal, exp.Var, exp.Null, exp.Boolean)) \
                and not (isinstance(target, exp.Column) and target.table):
            return Verdict("forward", _render(tree))
        raise QueryRejected(f"SET {name}", "the proxy allows only settings that leave how SQL is read unchanged")
    raise QueryRejected("SET", "not an allowed session setting")


def _use(tree: exp.Use, database: str) -> Verdict:
    if tree.this is not None and tree.this.name == database and not tree.args.get("kind"):
        return Verdict("ok")
    raise QueryRejected("USE of another database", f"this proxy serves database {database} only")


def _transaction(tree: exp.Expression) -> Verdict:
    if isinstance(tree, exp.Transaction):
        modes = [str(m).upper() for m in tree.args.get("modes") or []]
        if modes in ([], ["READ ONLY"], ["READ WRITE"], ["WITH CONSISTENT SNAPSHOT"]):
            return Verdict("forward", " ".join(["START TRANSACTION", *modes]))
    elif not any(tree.args.get(a) for a in ("savepoint", "chain", "this")):
        return Verdict("forward", "COMMIT" if isinstance(tree, exp.Commit) else "ROLLBACK")
    raise QueryRejected("transaction control", "only BEGIN/START TRANSACTION, COMMIT and ROLLBACK")


def _in_database(tree: exp.Expression, arg: str, database: str) -> bool:
    db = tree.args.get(arg)
    return db is None or db.name == database


def _show(tree: exp.Show, database: str, tables: set[str], protected: set[str]) -> Verdict:
    what = str(tree.this).upper()
    if what not in SHOWS or {k for k, v in tree.args.items() if v} - SHOW_ARGS or \
            not _in_database(tree, "db", database):
        raise QueryRejected(f"SHOW {what}", "not on the proxy's list of SHOW statements without data or statistics")
    like = tree.args.get("like")
    if like is not None and not (isinstance(like, exp.Literal) and like.is_string):
        raise QueryRejected(f"SHOW {what}", "LIKE takes a string")
    target = tree.args.get("target")
    if target is not None:
        name = target.name.lower()
        # SHOW CREATE TABLE names the next AUTO_INCREMENT value: a row count
        if name not in tables or (what == "CREATE TABLE" and name in protected):
            raise QueryRejected(f"SHOW {what}", f"table {target.name} is not an unprotected table of {database}")
    return Verdict("forward", _render(tree))


def _describe(tree: exp.Describe, database: str, tables: set[str]) -> Verdict:
    t = tree.this
    if isinstance(t, exp.Table) and not tree.args.get("style") and not tree.args.get("kind") \
            and t.name.lower() in tables and t.db in ("", database):
        return Verdict("forward", _render(exp.Describe(this=exp.to_table(t.name, quoted=True))))
    raise QueryRejected("EXPLAIN", "plans carry row estimates; DESCRIBE takes a table of this database")


def _kill(tree: exp.Kill) -> Verdict:
    """``KILL [QUERY | CONNECTION] <id>`` of a proxy connection (the mariadb CLI's Ctrl-C)."""
    kind = tree.text("kind").upper() or "CONNECTION"
    if isinstance(tree.this, exp.Literal) and tree.this.name.isdigit() and kind in ("QUERY", "CONNECTION"):
        return Verdict("kill", thread=int(tree.this.name), query=kind == "QUERY")
    raise QueryRejected("KILL", "KILL [QUERY | CONNECTION] takes the id of a connection to the proxy")


def kill_query(thread_id: int) -> str:
    """``KILL QUERY`` of a database connection of the proxy's, as the database should receive it."""
    return _render(exp.Kill(this=exp.Literal.number(thread_id), kind=exp.Var(this="QUERY")))


def _catalog(tree: exp.Expression) -> Verdict:
    """A query over information_schema only, reading allowed tables and columns, plain SQL."""
    if not isinstance(tree, exp.Select):
        raise QueryRejected("catalog query", "only a plain SELECT over information_schema")
    allowed: set[str] = set()
    restricted = False
    for t in tree.find_all(exp.Table):
        cols = CATALOG.get(t.name.lower(), False) if _schema(t) == "information_schema" else False
        if cols is False:
            raise QueryRejected("catalog query", f"{t.sql(dialect=DIALECT)} is not on the proxy's catalog list")
        if cols is not None:
            restricted = True
            allowed |= cols
    # ORDER BY may name an output alias (MySQL resolves it to the select list first)
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    for node in tree.walk():
        if isinstance(node, (exp.Anonymous, exp.Command, exp.Placeholder, exp.Parameter, exp.Into, exp.Lock,
                             exp.Subquery)):
            raise QueryRejected("catalog query", f"{node.key.upper()} is not accepted in a catalog query")
        if isinstance(node, exp.Star) and restricted:
            raise QueryRejected("catalog query", "name the columns: some of this table's columns are statistics")
        if isinstance(node, exp.Column) and restricted and node.name.lower() not in allowed and not (
                node.name.lower() in aliases and node.find_ancestor(exp.Order) is not None):
            raise QueryRejected("catalog query", f"column {node.name} is a statistic or not on the catalog list")
    return Verdict("forward", _render(tree))
