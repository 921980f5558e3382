"""What differs between databases, in one class per backend.

Flags have a default and a one-line reason here; subclasses override only what differs. No
other module asks which database it talks to: it asks the backend for a flag or an expression.
"""
from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, ClassVar, Iterator

from sqlglot import exp

from sqlanon.sql.templates import table
from sqlanon.sql.write import write

#: an answer read whole as it came (Backend.answer_reader): its column names — None where the
#: driver tells none, an empty answer's — and its rows
WholeAnswer = tuple[list[str] | None, list[tuple[Any, ...]]]


class Backend:
    """Base backend: standard SQL as PostgreSQL and SQLite read it."""

    #: name used in URLs, reports and test ids
    name: ClassVar[str] = "base"
    #: the database's name in messages
    title: ClassVar[str] = "the database"
    #: sqlglot dialect used to read user SQL and to write every generated statement
    dialect: ClassVar[str] = ""
    #: DROP must say TEMPORARY to never touch a base table of the same name (MySQL)
    temporary_in_drop: ClassVar[bool] = False
    #: one DROP statement may name several tables (not SQLite)
    drop_many: ClassVar[bool] = True
    #: schema that holds sqlanon's catalog where the database has schemas (PostgreSQL); None:
    #: the catalog's tables live beside the user's, named with ``catalog_prefix``
    catalog_schema: ClassVar[str | None] = None
    #: prefix of the catalog's table names beside the user's tables (none inside its own schema)
    catalog_prefix: ClassVar[str] = "sqlanon_"
    #: SQL:2003 statistics aggregates (John's thesis, Tables 7–8) the database does not have: a
    #: query over a protected table that uses one is rejected by name, not sent to fail
    missing_aggregates: ClassVar[tuple[type[exp.AggFunc], ...]] = ()
    #: FULL OUTER JOIN exists
    full_outer_join: ClassVar[bool] = True
    #: TRUNCATE empties a table without leaving dead rows behind (not SQLite, whose DELETE
    #: without WHERE does the same)
    truncate: ClassVar[bool] = False
    #: a statement's intermediates may stay CTEs or derived tables: PostgreSQL computes a CTE
    #: referenced twice once and hash-joins it. MariaDB computes it again at every reference,
    #: and SQLite joins it without the automatic index it builds for a table (a (α,k) search on
    #: Adult: 4.5-6.7 s with CTEs, 2.7-3.9 s with tables), so there they go to temp tables
    #: (RunContext.staged)
    ctes_in_pipelines: ClassVar[bool] = False
    #: each scalar subquery of a statement runs as a job of its own before the statement (Spark:
    #: planned, scheduled and collected apart, 0.05-0.1 s each): a row read column by column is
    #: then joined once instead
    subqueries_are_jobs: ClassVar[bool] = False
    #: arrays unnested side by side in a select list run in lockstep (PostgreSQL): slicing then
    #: permutes every column group in one pass instead of a join per group
    zips_arrays: ClassVar[bool] = False
    #: GROUP BY GROUPING SETS: one scan counts the rows by several columns apart (the (α,k)
    #: search's entropy of every quasi-identifier: 7.8 ms -> 4.3 ms a round on Adult)
    grouping_sets: ClassVar[bool] = False
    #: each pass of a recursive CTE joins only the rows the last pass added, at their cost
    #: (PostgreSQL hashes the joined table once, SQLite indexes it). MariaDB scans the whole
    #: joined table every pass: the (α,k) history resolved that way took 0.60 s on Adult, as a
    #: loop of plain statements 0.15 s.
    fast_recursion: ClassVar[bool] = True
    #: the cell key is a hash that two cells may share (PostgreSQL's 64 bits), not the values'
    #: own encoding (a 128-bit digest is taken as one)
    hashed_cell_key: ClassVar[bool] = False
    #: the driver tells how many rows a CREATE TABLE … AS SELECT wrote (PostgreSQL's command tag
    #: ``SELECT n`` as the cursor's rowcount): the database's own count of them, which spares
    #: verification a scan of the selection's copy to count it (RunContext.created_rows)
    counts_created_rows: ClassVar[bool] = False
    #: closing a streamed answer's cursor before its last row stops the answer (Backend.stream);
    #: where the server sends every row anyway (MariaDB's unbuffered answer: 1 M rows read and
    #: dropped in 15 s) the run's session is ended instead (RunContext.abandon_stream)
    closes_answers: ClassVar[bool] = True
    #: CREATE TABLE, CREATE VIEW, CREATE INDEX and GRANT take part in a transaction, so that a
    #: stored release is made in one (MariaDB and MySQL commit before and after each of them)
    transactional_ddl: ClassVar[bool] = True
    #: the database can keep sqlanon's catalog (keys, transactions, row writes; not Spark)
    keeps_catalog: ClassVar[bool] = True
    #: the proxies may serve it (not Spark yet: refused by name)
    proxied: ClassVar[bool] = True
    #: a GROUP BY key costs more than an aggregate of a value the other keys fix already (slicing's
    #: frequency table takes each stored text value with MIN instead of grouping by it: MariaDB
    #: at 1 M rows 20 % less server CPU; PostgreSQL's hash aggregate 10 % more)
    fewer_group_keys: ClassVar[bool] = False
    #: the join kind by which slicing's rows read their place along the order from one table of
    #: the frequency table's lines, keyed on the cell key (``fewer_group_keys``), where one keyed
    #: join per row costs less than a lookup of each quasi-identifier's code and a sort on them
    #: (MariaDB: STRAIGHT_JOIN); None: each row looks its codes up (anonymize/slicing)
    line_join: ClassVar[str | None] = None
    #: small work tables of a loop may move to an in-memory engine (Backend.in_memory)
    memory_tables: ClassVar[bool] = False
    #: an in-memory internal table (a window's rows, a hash join's buffer) holds text at its
    #: declared width (MariaDB: 4 bytes a character in utf8mb4), so a statement over many rows
    #: spills to disk unless its text is declared as wide as its widest value (Backend.sized_text)
    text_at_declared_width: ClassVar[bool] = False

    def __init__(self, server_version: str = ""):
        self.server_version = server_version

    def unsupported(self) -> str | None:
        """Why sqlanon cannot serve this server (its version, its product), or None: asked once
        at connect, so that a pipeline never fails half-way for a reason known in advance."""
        return None

    @property
    def presorts_aggregates(self) -> bool:
        """The planner may feed an aggregate the rows in the order another aggregate of the same
        query asked for (PostgreSQL 16: enable_presorted_aggregate), so an aggregate without an
        ORDER BY of its own cannot be taken to see them in the GROUP BY's order. Assumed unless
        a backend knows otherwise: a shuffle must never lean on an order it cannot prove."""
        return True

    @property
    def product(self) -> str:
        """The database's name as errors show it."""
        return self.title

    # -- expression hooks -------------------------------------------------------------------
    def binary_text(self, e: exp.Expression) -> exp.Expression:
        """Text compared byte for byte, so that classes are counted as an attacker reads them."""
        return e

    def sized_text(self, e: exp.Expression, chars: int) -> exp.Expression:
        """``binary_text(e)`` declared ``chars`` characters wide, where that is cheaper
        (``text_at_declared_width``): the caller has measured that no value is wider."""
        return self.binary_text(e)

    def fixed_value(self, e: exp.Expression) -> exp.Expression:
        """``e`` as a select grouped on a key that fixes it (every row of a group holds the same
        bytes: the key is an injective function of it) reads it: MIN(e) in standard SQL."""
        return exp.Min(this=e)

    def byte_exact_probe(self, name: str, columns: list[str]) -> exp.Select | None:
        """A query whose one row says, per column of table ``name``, whether binary_text would leave
        its values as they are (1) or convert them (0); None where the conversion costs nothing
        (verify/reading.py)."""
        return None

    def cell_key(self, values: list[exp.Expression]) -> exp.Expression:
        """The key that joins each row to its cell: one value instead of a join on every column.

        ``values`` are the stored values, in their own collation: the key must tell apart what
        differs in a single byte. It may be a hash (``hashed_cell_key``): the cells are then
        grouped on the key and the values (anonymize/frequency.py), and two cells sharing a key
        are refused. Here the values' text, length-prefixed, with '~' for NULL."""
        return self.binary_text(injective_text(values, self))

    def row_digest(self, values: list[exp.Expression]) -> exp.Expression:
        """A row's key as 32 hex digits (MD5 of the values' injective text): what the catalog
        remembers of a released row (catalog/differencing.py), never the key itself."""
        return exp.MD5(this=injective_text(values, self))

    def pseudonym(self, value: exp.Expression, key: bytes) -> exp.Expression:
        """The join key ``value`` as 16 hex digits of HMAC-SHA-256 under ``key``
        (backends/keyed_hash.py): the same digits for the same integer or text in every
        database, computed where the value is stored (a cross-database join, sqlanon/distributed/)."""
        from sqlanon.errors import QueryRejected

        raise QueryRejected("cross-database join", f"{self.product} cannot compute a keyed hash of the join key")

    def fenced(self, select: exp.Select) -> exp.Select:
        """A derived table the planner computes once and does not merge into the query that
        reads it, where merging would copy its subqueries to every reference (MariaDB does not
        merge a derived table with subqueries in its select list; PostgreSQL and SQLite do)."""
        return select

    def drop_temp_tables(self, names: list[str]) -> list[exp.Drop]:
        """The statements that drop ``names``: one when the database allows it."""
        groups = [names] if self.drop_many else [[n] for n in names]
        return [exp.Drop(tables=[table(n) for n in g], kind="TABLE", exists=True, temporary=self.temporary_in_drop)
                for g in groups if g]

    def empty(self, name: str) -> exp.Expression:
        """The statement that empties a pipeline table that a loop refills every pass."""
        if self.truncate:
            return exp.TruncateTable(expressions=[table(name)])
        return exp.delete(table(name))

    def refill(self, name: str, select: exp.Expression) -> list[exp.Expression]:
        """The statements that replace the rows of pipeline table ``name`` by ``select``'s, every
        pass of a loop: emptied, then filled; one statement where the database makes a table's
        rows anew anyway (Spark: a round's statements are its jobs)."""
        return [self.empty(name), exp.insert(select, table(name))]

    #: a refill's query may read the table it refills: its rows are computed before they are
    #: named in place of the old ones (Spark), where elsewhere the table is emptied first
    refill_reads_old: ClassVar[bool] = False

    def view(self, name: str, select: exp.Expression) -> exp.Expression | None:
        """The statement that names ``select`` as a temp view whose rows are computed where a
        later statement reads it (an intermediate a loop's pass reads once), or None where a
        table serves better: every database here but Spark, whose every table is a job."""
        return None

    #: where ``selection_view`` has no view, the selection a method reads in one statement is
    #: not copied either: each statement that reads it reads the select in its place, as a
    #: derived table (RunContext.selection_view); verify then counts it through the select
    inline_selection: ClassVar[bool] = False

    def selection_view(self, name: str, select: exp.Select) -> exp.Expression | None:
        """The statement that names the pushed-down selection as a temp view, for a method that
        reads its rows in one statement (Method.reads_rows_once): that statement then reads the
        protected table itself, and no copy is written to be read once. Only where a view reads
        with the privileges of whoever reads it, so that the login, once the run has given up
        the pipeline's identity, can read no row through it; None: the selection is copied."""
        return None

    @property
    def views_selection(self) -> bool:
        """Whether ``selection_view`` names a selection as a view here: a method whose release
        may be written from its cells at the price of wider cells (Mondrian k alone) does so
        only where the rows are then read once and not copied."""
        return self.selection_view("_sa_probe", exp.select(exp.Literal.number(1))) is not None

    def row_series(self, lo: exp.Expression, hi: exp.Expression) -> exp.Expression | None:
        """A function that, placed in FROM after a table, gives each of its rows one row per
        integer from ``lo`` to ``hi`` (its columns): a release plan's range is then written as
        that many copies of one row, without reading the stored rows again (alpha_k.py); None
        where the database has none (the release joins the stored rows instead)."""
        return None

    def bounded_series(self, lo: exp.Expression, hi: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
        """``row_series`` as a FROM item named ``_sa_n`` and the condition that bounds it to
        ``lo`` … ``hi``, for a database whose series is a table of every integer rather than a
        function of the row before it; None where it has neither."""
        series = self.row_series(lo, hi)
        return None if series is None else (series, exp.true())

    def create_temp_table(self, name: str, select: exp.Query) -> exp.Create:
        return exp.Create(
            this=table(name), kind="TABLE", expression=select,
            properties=exp.Properties(expressions=[exp.TemporaryProperty(), *self.temp_table_properties()]),
        )

    def temp_table_properties(self) -> list[exp.Expression]:
        """Storage options for pipeline temp tables."""
        return []

    def loop(self, condition: str, body: list[str], hash_joins: bool = False) -> str | None:
        """One statement that runs the ``body`` statements inside the server while the scalar
        query ``condition`` is true, or None where the database has no server-side loop (the
        caller then repeats the statements itself). Both are generated SQL, never user text.
        ``hash_joins``: the body joins CTEs the planner cannot estimate; keep it from nested
        loops where the database lets a loop say so."""
        return None

    def hash_joined(self, statement: str) -> str:
        """``statement`` (generated SQL) as run with hash joins only, where the database lets a
        statement say so: for joins the planner cannot estimate (see ``loop``)."""
        return statement

    def hash_grouped(self, statement: str) -> str:
        """``statement`` (generated SQL, a temp table made from a view of the selection:
        ``selection_view``) as run with its groups hashed, not sorted, where the database lets a
        statement say so: the view is planned on the protected table's statistics, whose
        estimate of the groups (the product of the columns' distinct values) can be a hundred
        times the groups there are, and a sort of every row then looks cheaper."""
        return statement

    def analyze(self, name: str, columns: list[str]) -> str | None:
        """The statement (sqlglot does not model it) that gives the planner the statistics of
        ``columns`` of pipeline table ``name``, or None where it plans as well without them.
        Asked for small tables that later statements join to the full rows (the cells), on the
        join columns, never for the rows themselves."""
        return None

    def lookup_index(self, name: str, column: str) -> str | None:
        """The statement (generated SQL) that lets every row look its value up in small pipeline
        table ``name`` by equality on ``column`` (a value's code), or None where the planner's
        hash join serves as well. It must leave the table as it is where it cannot index it."""
        return None

    def in_memory(self, name: str, rows: int) -> str | None:
        """The statement (generated SQL) that moves work table ``name``, which a loop empties and
        fills again every pass and which holds at most ``rows`` rows of a few integers, to an
        in-memory engine; None where its temp tables serve as well (or ``rows`` would not fit).
        It must leave the table as it is where it cannot move it. Asked only where
        ``memory_tables`` says so (the rows are counted for it)."""
        return None

    # -- who may read what (backends/access.py) ------------------------------------------------
    #: the database checks privileges per role, and a session can take one on and off (SET
    #: ROLE): the pipeline takes on the reader role, every other statement runs without it
    roles: ClassVar[bool] = True

    def ident(self, name: str) -> str:
        """``name`` as a quoted identifier of this dialect (for statements sqlglot does not model:
        SET ROLE, GRANT)."""
        return exp.to_identifier(name, quoted=True).sql(self.dialect)

    def assume(self, connection: Any, role: str) -> list[str]:
        """The statements that give a session the pipeline's identity back: ``role``, which may
        read the protected tables (and whatever a database without roles does to the connection
        itself, returning no statement)."""
        return [f"SET ROLE {self.ident(role)}"]

    def relinquish(self, connection: Any, denied: frozenset[str], temp_tables: list[str]) -> list[str]:
        """The statements that leave the session under the login's own identity, which cannot
        read the protected tables nor the catalog (``denied``); ``temp_tables`` of the run stay
        readable to it."""
        return []

    def restrict(self, connection: Any, denied: frozenset[str]) -> None:
        """Make a fresh connection of the restricted pool unable to read ``denied`` tables where
        the database has no roles (SQLite's authorizer); nothing where the login's grants do it."""

    def is_permission_error(self, error: Exception) -> bool:
        """Whether ``error`` is the database refusing a read for want of privileges."""
        return False

    def grants(self, database: str, login: str, reader: str, protected: list[str], unprotected: list[str],
               catalog: list[str]) -> list[str]:
        """The administrator's statements that let ``reader`` (a role, created when missing) read
        the ``protected`` tables and keep the catalog, and the ``login`` assume it but read
        only the ``unprotected`` tables by itself (``sqlanon db grants``); none where the
        database has no roles."""
        return []

    def share(self, name: str) -> list[str]:
        """The statements that let the login read ``name``, a table or view the pipeline's role
        created for it (a stored release): none where it may read what it created."""
        return []

    # -- session ----------------------------------------------------------------------------
    def session_setup(self, cursor: Any) -> None:
        """Settings that make generated SQL mean what sqlglot wrote, and make the pipeline fast."""

    def take_options(self, url: Any) -> Any:
        """The connection URL (a SQLAlchemy URL) without the options this backend reads itself
        (its session settings, which the driver would refuse): asked once, before connecting."""
        return url

    # -- faults, sessions, locks (sqlanon.backends.faults, finish/store.py) -------------------
    def fault(self, error: BaseException) -> str | None:
        """What an error of this backend's driver says: "lost" (the server closed or killed the
        connection, the network broke), "locked" (another connection holds a lock this one
        waited for, a deadlock, a conflicting write), "interrupted" (a Ctrl-C inside a function
        the database ran in this process) or "refused" (any other error of the database); None
        when ``error`` is not the driver's. ``error`` is the driver's own,
        unwrapped from SQLAlchemy's."""
        return None

    def error_text(self, error: BaseException | str) -> str:
        """The driver's message in one line, without the driver's class names."""
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        return lines[0] if lines else type(error).__name__

    def connection_open(self, connection: Any) -> bool:
        """Whether a pool's connection can still carry a statement (after an error or an
        interrupt the driver may have closed it)."""
        return True

    def session_id(self, connection: Any) -> int | None:
        """The server's id of the session behind ``connection``, to end it from another
        connection (``end_session``); None where there is no server."""
        return None

    def end_session(self, session: int) -> exp.Expression | None:
        """The statement, sent on another connection, that ends ``session`` at once: its running
        statement stops, its temp tables and locks go with it. A driver that broke off in the
        middle of an answer (an interrupt) leaves the server working on a statement nobody
        waits for."""
        return None

    def lock(self, key: str, wait: bool = True) -> exp.Select | None:
        """A query that takes the session's lock named ``key`` (held until ``unlock`` or the
        session's end, whichever comes first: a killed client releases it) and returns 1 when
        it has it; ``wait=False`` returns 0 at once when another session holds it. None where
        the database has no such locks (SQLite: its write transaction serializes instead)."""
        return None

    def unlock(self, key: str) -> exp.Select | None:
        """The query that releases ``lock(key)``."""
        return None

    def begin(self) -> exp.Expression:
        """The statement that opens the transaction a release is stored in."""
        return exp.Transaction()

    def stored_table_properties(self) -> list[exp.Expression]:
        """Storage options of a stored release and of the catalog's memory of released rows: an
        engine whose writes take part in transactions."""
        return []

    def pipeline(self, connection: Any) -> AbstractContextManager[Any] | None:
        """A mode of ``connection`` (a pool's DBAPI connection) in which a statement is sent
        without waiting for its answer, so that sqlanon writes the next statement while the
        database runs this one (RunContext); None where every statement waits. Inside it, the
        statements up to each ``sync()`` of the object it yields run as one transaction."""
        return None

    def cancel(self, connection: Any) -> None:
        """Ask the server to stop the statement ``connection`` is still running (a failed run
        leaving a pipeline whose statements it no longer needs, one of them perhaps waiting
        for a lock); nothing where statements are never left running (no ``pipeline``)."""

    @contextmanager
    def stream(self, connection: Any, sql: str, size: int) -> Iterator[Any]:
        """A cursor that has run ``sql`` (a generated query) on ``connection`` and hands its rows
        over as they are fetched, ``size`` at a time, instead of holding the whole answer in the
        client; leaving the context closes it, read to the end or not. SQLite's own cursor steps
        through the rows as they are fetched."""
        cur = connection.cursor()
        try:
            cur.execute(sql)
            yield cur
        finally:
            cur.close()

    def answer_reader(self, connection: Any, rows: int) -> Callable[[str], WholeAnswer] | None:
        """Where the driver converts an answer of about ``rows`` rows while the database still
        sends the rest: a function that runs ``sql`` (a generated query) on ``connection``,
        outside pipeline mode, and returns its column names and every row (RunContext.read_whole).
        None: the answer is read once it has arrived whole, as any statement's."""
        return None

    def temp_table_exists(self, cursor: Any, name: str) -> bool:
        """Whether this session still holds ``name`` (hygiene checks; MariaDB lists no temp tables)."""
        try:
            cursor.execute(self.render(exp.select("1").from_(table(name)).where(exp.false())))
            cursor.fetchall()
            return True
        except Exception:  # noqa: BLE001 - every driver names "no such table" differently
            return False

    def render(self, e: exp.Expression) -> str:
        # the statement is not used again: let the generator transform it in place
        return write(e, self.dialect, copy=False)


def injective_text(values: list[exp.Expression], backend: Backend) -> exp.Expression:
    """One text that differs whenever one of ``values`` differs (NULL included)."""
    parts: list[exp.Expression] = []
    for e in values:
        text = backend.binary_text(exp.cast(e.copy(), "TEXT"))
        parts.append(exp.Case(
            ifs=[exp.If(this=exp.Is(this=e.copy(), expression=exp.Null()), true=exp.Literal.string("~"))],
            default=exp.Concat(expressions=[exp.cast(exp.Length(this=text.copy()), "TEXT"),
                                            exp.Literal.string(":"), text], safe=True)))
    return exp.Concat(expressions=parts, safe=True) if len(parts) > 1 else parts[0]
