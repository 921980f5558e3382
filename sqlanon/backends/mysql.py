"""MySQL 8 and MariaDB >= 10.6 through PyMySQL.

There is no MariaDB dialect in sqlglot; both use ``mysql``. Differences that matter here:
- collation: the default ``utf8mb4_general_ci`` merges 'ABC', 'abc' and 'abc  ' in GROUP BY, so
  every class is formed on text converted to a binary, NO PAD collation;
- a temporary table is dropped with DROP TEMPORARY TABLE, which never touches a base table;
- no COVAR_*, CORR or REGR_* aggregates, no FULL OUTER JOIN.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterator

from sqlglot import exp

from sqlanon.backends import keyed_hash
from sqlanon.backends.base import Backend
from sqlanon.errors import BackendError
from sqlanon.sql.templates import col, table

#: session settings (bytes) that sqlanon raises for its pipelines, each a cap, not an allocation
#: (the server takes what a statement needs, up to it); a connection URL's query may set each
#: for a busy server, e.g. ``mysql+pymysql://…/db?tmp_table_size=268435456``. The join buffer
#: is MariaDB's alone. Whatever is lower spills sooner: internal tables to disk (Aria), joins
#: into refills that scan their large side again.
SESSION_CAPS = {
    # a join's hash table holds the smaller side (a plan of ~30k cells); when it does not fit,
    # the large side is scanned once per refill (54 s instead of 2 s at 1 M rows)
    "join_buffer_space_limit": 1 << 30,
    "join_buffer_size": 1 << 28,
    # an in-memory internal table (a window's rows, a GROUP BY's groups) keeps every VARCHAR at
    # its declared width: slicing's shuffle of two text columns at 1 M rows takes ~830 MB there,
    # and beyond this cap it is copied into an Aria table on disk (1.66 -> 2.35 s of server CPU)
    "tmp_table_size": 1 << 30,
    "max_heap_table_size": 1 << 30,
    "sort_buffer_size": 1 << 25,
}
_MARIADB_ONLY = ("join_buffer_space_limit", "join_buffer_size")
#: a bound on the bytes of one row of a loop's work table in a MEMORY table (fixed width: a few
#: dozen BIGINT codes and the engine's own overhead)
MEMORY_ROW_BYTES = 512
#: the largest integer of the Sequence engine's table a range is read from (no cell holds more
#: rows; seq_1_to_N with N of 2^64 - 1 is empty)
SERIES_TOP = 2**62


class MySQLBackend(Backend):
    name = "mysql"
    dialect = "mysql"
    temporary_in_drop = True
    # both have VAR_* and STDDEV_* only
    missing_aggregates = (exp.CovarPop, exp.CovarSamp, exp.Corr, exp.RegrSlope, exp.RegrIntercept, exp.RegrR2,
                          exp.RegrCount, exp.RegrAvgx, exp.RegrAvgy, exp.RegrSxx, exp.RegrSyy, exp.RegrSxy)
    # `a FULL JOIN b` is `a AS full JOIN b` to the server; sqlglot writes a FULL JOIN as a UNION
    # of a LEFT and a RIGHT join, which is wrong under aggregates, GROUP BY or LIMIT
    full_outer_join = False
    truncate = True
    fast_recursion = False
    transactional_ddl = False
    closes_answers = False
    fewer_group_keys = True
    memory_tables = True
    text_at_declared_width = True
    # the join kind by which slicing's rows read their place along the order from the frequency
    # table's lines (Backend.line_join); at 1 M rows: six code lookups and a sort on
    # the packed codes and the sensitive text 3.3 s of server CPU, one join to the 50 k lines'
    # places and a sort on one integer 2.7 s. STRAIGHT_JOIN keeps the rows first: the lines are
    # then hashed on their stored key (BNLH), probed with each row's computed key; the other way
    # round the key is an expression of the joined table, which no hash serves (a nested loop
    # over 1 M x 50 k, stopped after 14 min)
    line_join = "STRAIGHT_JOIN"
    # no temporary views; the selection a method reads once is read where it is grouped: at
    # 1 M rows the copy and the frequency table grouped from it 1.31 + 0.51-0.53 s of server
    # CPU, the frequency table grouped from the protected table's select 1.44-1.47 s
    inline_selection = True

    def __init__(self, server_version: str = ""):
        super().__init__(server_version)
        self.session_caps = dict(SESSION_CAPS)

    def take_options(self, url: Any) -> Any:
        given = {k: v for k, v in url.query.items() if k in SESSION_CAPS}
        for k, v in given.items():
            value = v if isinstance(v, str) else v[-1]
            if not value.isdigit():
                raise BackendError(f"{k}={value!r} in the connection URL: give a number of bytes")
            self.session_caps[k] = int(value)
        return url.difference_update_query(given)

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    @property
    def product(self) -> str:
        return "MariaDB" if self.is_mariadb else "MySQL"

    def unsupported(self) -> str | None:
        if not self.is_mariadb:
            return ("MySQL is not supported yet: pipeline statements open a temporary table twice, which MySQL "
                    "refuses (error 1137); use MariaDB 10.6 or later")
        found = re.match(r"(\d+)\.(\d+)", self.server_version)
        if found and (int(found.group(1)), int(found.group(2))) < (10, 6):
            return f"MariaDB {found.group(0)} is older than 10.6, the oldest sqlanon supports"
        return None

    @property
    def binary_collation(self) -> str:
        # utf8mb4_bin is PAD SPACE on both servers ('a' = 'a '); these two are NO PAD.
        return "utf8mb4_nopad_bin" if self.is_mariadb else "utf8mb4_0900_bin"

    def binary_text(self, e: exp.Expression) -> exp.Expression:
        # CAST(… AS CHAR CHARACTER SET utf8mb4): DataType.build would drop the character set
        utf8mb4 = exp.DataType(this=exp.DataType.Type.CHARACTER_SET, kind=exp.Var(this="utf8mb4"))
        converted = exp.Cast(this=e, to=utf8mb4)
        return exp.Collate(this=converted, expression=exp.Var(this=self.binary_collation))

    def sized_text(self, e: exp.Expression, chars: int) -> exp.Expression:
        # CAST(… AS CHAR(n) CHARACTER SET utf8mb4): slicing's rows at 1 M Adult rows, seven
        # VARCHAR(100) columns, took ~2.5 GB in a window's in-memory table and spilled to disk;
        # declared as wide as their widest values, ~0.5 GB, and half the server CPU
        utf8mb4 = exp.DataType(this=exp.DataType.Type.CHARACTER_SET, kind=exp.Var(this="utf8mb4"),
                               expressions=[exp.DataTypeParam(this=exp.Literal.number(max(chars, 1)))])
        return exp.Collate(this=exp.Cast(this=e, to=utf8mb4), expression=exp.Var(this=self.binary_collation))

    def fixed_value(self, e: exp.Expression) -> exp.Expression:
        # a column not grouped on is read from one row of its group (ONLY_FULL_GROUP_BY is off
        # for the session: session_setup), where MIN compares every row's value under its
        # collation: the (α,k) frequency table of 1 M rows on its cell key, with nine values
        # taken, 1.37-1.41 s of server CPU with MIN, 1.04 s without
        return e

    def byte_exact_probe(self, name: str, columns: list[str]) -> exp.Select | None:
        # COLLATION() of a column names its declared collation, which implies the character set
        # (one row read; none in an empty table, whose columns are then converted for nothing)
        return exp.select(*[exp.Case(ifs=[exp.If(this=exp.EQ(
            this=exp.Anonymous(this="COLLATION", expressions=[col(c)]),
            expression=exp.Literal.string(self.binary_collation)), true=exp.Literal.number(1))],
            default=exp.Literal.number(0)) for c in columns]).from_(table(name)).limit(1)

    def cell_key(self, values: list[exp.Expression]) -> exp.Expression:
        # MariaDB hash-joins only keys of bounded declared length (~3 KB), so the key is a digest
        # of an injective encoding (a digest of 128 bits or more is taken as injective): each
        # value's bytes as QUOTE writes them, quoted with their quotes and backslashes escaped,
        # NULL as the bare word NULL, so that the concatenation splits one way only. Its SHA-1
        # costs 0.4 s of server CPU per 1 M rows where the MD5 of row_digest's encoding cost
        # 1.1 s (MariaDB's MD5 is the slower digest, QUOTE cheaper than a length per value), and
        # groups and joins as fast, declared 20 bytes wide (a hash join's buffer holds keys at
        # their declared width).
        quoted = [exp.Anonymous(this="QUOTE", expressions=[v]) for v in _as_bytes(values)]
        return exp.cast(exp.Unhex(this=exp.SHA(this=exp.Concat(expressions=quoted))),
                        exp.DataType.build("BINARY(20)", dialect="mysql"))

    def row_digest(self, values: list[exp.Expression]) -> exp.Expression:
        # 16 bytes of MD5 of an injective encoding, kept as bytes (the catalog's column is
        # VARBINARY: a text digest would meet it in another character set and miss its index,
        # 57 s on Adult instead of milliseconds); the catalog compares digests across runs, so
        # the encoding stays: the values joined by ':', then their byte lengths ('N' for NULL).
        # Read from the end, the lengths split the values unambiguously, whatever they contain.
        raw = _as_bytes(values)
        lengths = [exp.func("COALESCE", exp.Length(this=v.copy(), binary=True), exp.Literal.string("N"))
                   for v in raw]
        encoding = exp.Anonymous(this="CONCAT_WS", expressions=[
            exp.Literal.string(":"), *[v.copy() for v in raw],
            exp.Anonymous(this="CONCAT_WS", expressions=[exp.Literal.string(","), *lengths])])
        return exp.Unhex(this=exp.MD5(this=encoding))

    def pseudonym(self, value: exp.Expression, key: bytes) -> exp.Expression:
        # SHA2 but no HMAC; CONCAT with a binary string takes the text's utf8mb4 bytes
        inner, outer = keyed_hash.pads(key)

        def sha(data: exp.Expression) -> exp.Expression:
            return exp.SHA2(this=data, length=exp.Literal.number(256))

        def raw(pad: bytes) -> exp.Expression:
            return exp.Unhex(this=exp.Literal.string(pad.hex()))

        text = exp.cast(value.copy(), "CHAR")
        digest = sha(exp.Concat(expressions=[raw(outer), exp.Unhex(this=sha(exp.Concat(expressions=[raw(inner), text])))]))
        return exp.Left(this=digest, expression=exp.Literal.number(keyed_hash.DIGITS))

    def bounded_series(self, lo: exp.Expression, hi: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
        # MariaDB's Sequence engine: seq_1_to_N holds the integers 1 … N, read by range for each
        # row before it ("range checked for each record"): the (α,k) release at 1 M rows written
        # from the plan's 28,535 ranges, 0.37 s of server CPU, instead of numbering the split
        # cells' rows (0.34 s) and joining every stored row to its range (0.67 s)
        if not self.is_mariadb:
            return None
        return (exp.to_table(f"seq_1_to_{SERIES_TOP}"),
                exp.Between(this=col("seq", "_sa_n"), low=lo, high=hi))

    def temp_table_properties(self) -> list[exp.Expression]:
        # InnoDB temp tables cost ~7x PostgreSQL's; Aria keeps TEXT columns and is faster.
        # Its default PAGE rows are for crash recovery, which a temp table never needs: DYNAMIC
        # rows write 1 M pushed-down rows in 2.7 s instead of 3.2-3.6 s, read as fast.
        if not self.is_mariadb:
            return []
        return [exp.EngineProperty(this=exp.Var(this="Aria")), exp.RowFormatProperty(this=exp.Var(this="DYNAMIC"))]

    def lookup_index(self, name: str, column: str) -> str | None:
        # MariaDB's hash joins (BNLH) of 1 M rows to six code tables of a few values each took
        # 12 s (slicing's order at 1 M rows); lookups in an in-memory hash index 1.5 s. A MEMORY
        # table holds no TEXT and no value longer than its key allows: the handler then keeps
        # the Aria table (an ALTER that fails leaves it unchanged) and its hash join.
        if not self.is_mariadb:
            return None
        return self._to_memory(name, f", ADD INDEX USING HASH ({self.ident(column)})")

    def in_memory(self, name: str, rows: int) -> str | None:
        # the (α,k) search's work tables, emptied and filled ~20 times a round: an Aria temp
        # table's TRUNCATE and writes cost 1.48 s of server CPU for the loop at 1 M rows
        # (28,535 cells), MEMORY 1.03 s. A MEMORY table beyond max_heap_table_size fails where
        # Aria spills, so only where the rows fit at a generous width; one with a TEXT column
        # stays as it is (the handler)
        if not self.is_mariadb or rows * MEMORY_ROW_BYTES > self.session_caps["max_heap_table_size"] // 2:
            return None
        return self._to_memory(name)

    def _to_memory(self, name: str, also: str = "") -> str:
        """Temp table ``name`` moved to the MEMORY engine (with ``also``'s changes), or left as
        it is where MEMORY cannot hold it (TEXT, a value longer than a key): an ALTER that fails
        leaves the table unchanged, and the handler swallows its error."""
        return (f"BEGIN NOT ATOMIC DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END; ALTER TABLE "
                f"{self.ident(name)} ENGINE=MEMORY{also}; END")

    def loop(self, condition: str, body: list[str], hash_joins: bool = False) -> str | None:
        # MariaDB runs a compound statement outside a stored program (no CREATE ROUTINE needed);
        # MySQL does not, and repeats the statements from the client. Hash joins are the
        # session's setting already (join_cache_level).
        if not self.is_mariadb:
            return None
        return f"BEGIN NOT ATOMIC WHILE ({condition}) DO " + " ".join(f"{b};" for b in body) + " END WHILE; END"

    def fault(self, error: BaseException) -> str | None:
        import pymysql

        if isinstance(error, pymysql.err.InterfaceError):
            return "lost"  # the driver closed the connection (an interrupt, a broken socket)
        if not isinstance(error, pymysql.err.Error):
            return None
        code = error.args[0] if error.args else None
        return "lost" if code in _LOST else "locked" if code in _LOCKED else "refused"

    def error_text(self, error: BaseException | str) -> str:
        # PyMySQL's errors are (code, message) tuples
        args: tuple = getattr(error, "args", ())
        if len(args) >= 2 and isinstance(args[1], str):
            return super().error_text(args[1]) if args[1] else "the connection was closed"
        return super().error_text(error)

    def connection_open(self, connection: Any) -> bool:
        return bool(getattr(connection, "driver_connection", connection).open)

    def session_id(self, connection: Any) -> int | None:
        return getattr(connection, "driver_connection", connection).thread_id()

    def end_session(self, session: int) -> exp.Expression | None:
        return exp.Kill(this=exp.Literal.number(session), kind="CONNECTION")

    @contextmanager
    def stream(self, connection: Any, sql: str, size: int) -> Iterator[Any]:
        # PyMySQL's default cursor reads the whole answer before the first row (1 M rows:
        # 662 MB); SSCursor reads rows off the socket as they are fetched. Until it is closed
        # the connection carries no other statement; closing it early would read the rest.
        import pymysql.cursors

        cur = connection.driver_connection.cursor(pymysql.cursors.SSCursor)
        try:
            cur.execute(sql)
            yield cur
        except GeneratorExit:
            # given up with its connection before the last row (RunContext.abandon_stream ends
            # the session instead): PyMySQL would read the rest when the cursor is collected
            result = getattr(cur, "_result", None)
            if result is not None:
                result.unbuffered_active = False
            raise
        except BaseException:
            cur.close()
            raise
        cur.close()

    def _lock_name(self, key: str) -> exp.Expression:
        # lock names are the server's, not the database's, and at most 64 characters long
        return exp.Concat(expressions=[exp.Literal.string("sqlanon."), exp.MD5(this=exp.Concat(expressions=[
            exp.CurrentSchema(), exp.Literal.string("."), exp.Literal.string(key)]))])

    def lock(self, key: str, wait: bool = True) -> exp.Select | None:
        # GET_LOCK waits at most the given seconds: a day stands for "until it is free"
        return exp.select(exp.Anonymous(this="GET_LOCK", expressions=[
            self._lock_name(key), exp.Literal.number(86400 if wait else 0)]))

    def unlock(self, key: str) -> exp.Select | None:
        return exp.select(exp.Anonymous(this="RELEASE_LOCK", expressions=[self._lock_name(key)]))

    def stored_table_properties(self) -> list[exp.Expression]:
        # a server whose default engine is MyISAM or Aria would store a release outside every
        # transaction: a refresh (DELETE and INSERT) must be undone whole when it fails
        return [exp.EngineProperty(this=exp.Var(this="InnoDB"))]

    def relinquish(self, connection: Any, denied: frozenset[str], temp_tables: list[str]) -> list[str]:
        # a session reads its own temp tables whatever its privileges
        return ["SET ROLE NONE"]

    def is_permission_error(self, error: Exception) -> bool:
        # 1142/1143: table/column access denied; 1044: database access denied
        return bool(getattr(error, "args", None)) and error.args[0] in (1142, 1143, 1044)

    def grants(self, database: str, login: str, reader: str, protected: list[str], unprotected: list[str],
               catalog: list[str]) -> list[str]:
        r, u = self.ident(reader), _account(login, self)
        db = self.ident(database)
        # the reader keeps the catalog beside the user's tables and creates the pipeline's
        # temp tables and stored releases (which it may grant to the login)
        out = [f"CREATE ROLE IF NOT EXISTS {r}",
               f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, "
               f"CREATE VIEW, SHOW VIEW ON {db}.* TO {r} WITH GRANT OPTION",
               f"GRANT {r} TO {u}",
               # a privilege on the database lets the login open it; this one reads nothing
               f"GRANT CREATE TEMPORARY TABLES ON {db}.* TO {u}"]
        out += [f"GRANT SELECT ON {db}.{self.ident(t)} TO {u}" for t in unprotected]
        # listed by SHOW TABLES and SHOW COLUMNS (a client's reflection), never read: a table
        # shows to an account with any privilege on it, and REFERENCES reads nothing
        out += [f"GRANT REFERENCES ON {db}.{self.ident(t)} TO {u}" for t in protected]
        return out

    def share(self, name: str) -> list[str]:
        return [f"GRANT SELECT ON {self.ident(name)} TO CURRENT_USER"]

    def session_setup(self, cursor: Any) -> None:
        # sqlglot writes backticks and backslash escapes: make sure the server reads them so;
        # a column a group's key fixes is read without an aggregate (fixed_value)
        cursor.execute(
            "SET SESSION sql_mode = REPLACE(REPLACE(REPLACE(@@sql_mode, 'ANSI_QUOTES', ''), "
            "'NO_BACKSLASH_ESCAPES', ''), 'ONLY_FULL_GROUP_BY', '')"
        )
        if self.is_mariadb:
            # Pipeline temp tables carry no indexes: allow hash joins (BNLH) instead of block
            # nested loops, which are quadratic in the frequency table's size.
            cursor.execute("SET SESSION join_cache_level = 8")
        for name, value in self.session_caps.items():
            if self.is_mariadb or name not in _MARIADB_ONLY:
                cursor.execute(self.render(set_cap(name, value)))
        cursor.execute("SET NAMES utf8mb4")


#: client errors of a connection that is gone: server gone away, lost during a query, lost at
#: reading the handshake, killed (MariaDB), server shutting down
_LOST = {2006, 2013, 2055, 1927, 1053}
#: lock wait timeout, deadlock, NOWAIT
_LOCKED = {1205, 1213, 3572}


def set_cap(name: str, value: int) -> exp.Set:
    """``SET SESSION name = value`` for one of SESSION_CAPS: the name checked against them and
    quoted, the value a non-negative integer literal (a URL's query sets them: nothing of it
    reaches the server as text)."""
    if name not in SESSION_CAPS:
        raise BackendError(f"{name!r} is not a session setting sqlanon sets (one of {', '.join(SESSION_CAPS)})")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BackendError(f"{name}={value!r}: give a number of bytes")
    return exp.Set(expressions=[exp.SetItem(kind="SESSION", this=exp.EQ(
        this=exp.column(name, quoted=True), expression=exp.Literal.number(value)))])


def _as_bytes(values: list[exp.Expression]) -> list[exp.Expression]:
    """The values as stored, as bytes: no collation to mix, no conversion to pay."""
    return [exp.cast(v.copy(), exp.DataType.build("BINARY", dialect="mysql")) for v in values]


def _account(login: str, backend: Backend) -> str:
    """``name`` or ``name@host`` as a MySQL account (any host when none is given)."""
    name, _, host = login.partition("@")
    return f"{backend.ident(name)}@{backend.ident(host or '%')}"
