"""The extended query protocol: Parse, Bind, Describe, Execute, Close, Sync, Flush.

Parse only stores the client's text. Bind is where a statement is decided: the parameters
become typed literals of the parsed statement (``values.py``), and the resulting text goes
through the gate exactly as a simple query would. A relayed portal is created on the database
with the admitted text and no parameters, and the database's replies are forwarded in place; a
protected-table portal runs in the library at Bind and is answered from its result. An error
skips everything up to the client's Sync.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, cast

from sqlglot import exp

from sqlanon.errors import QueryRejected, SqlanonError
from sqlanon.parse import parse
from sqlanon.proxy.pg import codec, gate, values
from sqlanon.proxy.pg.results import Rows, close_answer
from sqlanon.proxy.server import in_thread
from sqlanon.sql.write import write

if TYPE_CHECKING:
    from sqlanon.proxy.pg.backend import Backend
    from sqlanon.proxy.pg.session import PgSession


@dataclass
class Statement:
    text: str
    types: list[int]
    #: the text as parsed, once per prepared statement (``parsed``); never changed in place
    tree: exp.Expression | None = None


def parsed(stmt: Statement) -> exp.Expression:
    """The prepared statement's parse tree: parsed at its first Bind or Describe, not at every one."""
    if stmt.tree is None:
        stmt.tree = parse(stmt.text, "postgres").tree
    return stmt.tree


@dataclass
class Portal:
    decision: gate.Decision
    rows: Rows | None = None


def bound_sql(stmt: Statement, bind: codec.Bind | None) -> str:
    """The statement with its parameters as literals (typed NULLs when ``bind`` is None: a
    Describe of the statement); the text unchanged when it has none."""
    if "$" not in stmt.text and (bind is None or not bind.params):
        return stmt.text
    tree = parsed(stmt)
    needed = max(values.parameter_count(tree), len(stmt.types))
    types = stmt.types + [0] * (needed - len(stmt.types))
    if bind is None:
        literals = [values.literal(t, 0, None) for t in types]
    else:
        if len(bind.params) != needed:
            raise values.BadValue(f"bind message supplies {len(bind.params)} parameters, but prepared statement "
                                  f"requires {needed}")
        formats = codec.formats_for(bind.param_formats, needed)
        literals = [values.literal(t, f, raw) for t, f, raw in zip(types, formats, bind.params)]
    return write(values.substitute(tree.copy(), literals), "postgres")


@dataclass
class Expect:
    """Replies of the database still to come for messages already sent, in client order:
    forward them except ``swallow`` up to one of ``stops`` (``stream``: a result's rows)."""

    swallow: bytes
    stops: bytes
    stream: bool = False
    #: the client's Sync: the end of a batch, read without a Flush
    sync: bool = False
    done: Callable[[int, int, bytes], None] | None = None


class Extended:
    """Relayed steps are pipelined: sent to the database at once, their replies read in order
    (``settle``) when the client waits — at Sync, or when its input is exhausted — or before any
    local step that has effects (a library run, a decision in a thread)."""

    def __init__(self) -> None:
        self.statements: dict[str, Statement] = {}
        self.portals: dict[str, Portal] = {}
        #: an error happened in this batch: skip to Sync
        self.skipping = False
        #: replies owed to the client in order: local bytes, or replies of the database
        self.pending: deque[bytes | Expect] = deque()

    async def parse(self: "PgSession", body: bytes) -> None:
        name, text, types = codec.decode_parse(body)
        if name and name in self.statements:
            return self.fail("42P05", f'prepared statement "{name}" already exists')
        self.statements[name] = Statement(text, types)
        self.write(codec.PARSE_COMPLETE)

    async def bind(self: "PgSession", body: bytes) -> None:
        b = codec.decode_bind(body)
        stmt = self.statements.get(b.statement)
        if stmt is None:
            return self.fail("26000", f'prepared statement "{b.statement}" does not exist')
        if b.portal and b.portal in self.portals:
            return self.fail("42P03", f'cursor "{b.portal}" already exists')
        if "$" in stmt.text or b.params:
            if not await self.settled():
                return
            sql = await self.offload(bound_sql, stmt, b)
        else:
            sql = stmt.text
        decision = None if sql is None else await self.decide(sql)
        if decision is None:
            self.skipping = True
            return
        portal = Portal(decision)
        if decision.kind == "library":
            if not await self.settled():
                return
            result = await self.run_library(decision.sql)
            if result is None:
                self.skipping = True
                return
            try:  # the answer streams: the portal holds its first batch, the rest is read at Execute
                portal.rows = await Rows.start(self, result, b.result_formats)
            except SqlanonError as e:
                await close_answer(self, result)
                return self.fail(e.sqlstate, e.message)
        elif decision.kind == "relay":
            backend = await self.acquire()
            backend.send(codec.parse("", decision.sql) + codec.bind(b.portal, "", b.result_formats))
            self.pending.append(Expect(b"1", b"2E"))
        await self.close_portal(b.portal)  # the unnamed portal is replaced
        self.portals[b.portal] = portal
        if decision.kind != "relay":
            self.write(codec.BIND_COMPLETE)

    async def describe(self: "PgSession", body: bytes) -> None:
        r = codec.Reader(body)
        kind, name = r.byte(), r.cstring()
        r.end()
        if kind == b"S":
            return await self._describe_statement(name)
        portal = self.portals.get(name)
        if portal is None or kind != b"P":
            return self.fail("34000", f'portal "{name}" does not exist')
        if portal.rows is not None:
            self.write(portal.rows.description())
        elif portal.decision.kind == "relay":
            (await self.acquire()).send(codec.describe(b"P", name))
            self.pending.append(Expect(b"", b"TnE"))
        else:
            self.write(codec.NO_DATA)

    async def _describe_statement(self: "PgSession", name: str) -> None:
        stmt = self.statements.get(name)
        if stmt is None:
            return self.fail("26000", f'prepared statement "{name}" does not exist')
        if not await self.settled():
            return
        sql = await self.offload(bound_sql, stmt, None)
        decision = None if sql is None else await self.decide(sql)
        needed = None if decision is None else await self.offload(
            lambda: max(values.parameter_count(parsed(stmt)), len(stmt.types))
            if "$" in stmt.text else len(stmt.types))
        if decision is None or needed is None:
            self.skipping = True
            return
        if decision.kind == "library":
            return self.fail("0A000", "describing a prepared statement over a protected table: its columns are "
                                      "known once it runs; describe the portal after Bind")
        declared = stmt.types + [0] * (needed - len(stmt.types))
        self.write(codec.parameter_description([t or values.TEXT for t in declared]))
        if decision.kind == "relay":
            (await self.acquire()).send(codec.parse("", decision.sql) + codec.describe(b"S", ""))
            self.pending.append(Expect(b"1t", b"TnE"))
        else:
            self.write(codec.NO_DATA)

    async def execute(self: "PgSession", body: bytes) -> None:
        r = codec.Reader(body)
        name, max_rows = r.cstring(), r.int32()
        r.end()
        portal = self.portals.get(name)
        if portal is None:
            return self.fail("34000", f'portal "{name}" does not exist')
        if portal.rows is not None:
            if await self.settled() and not await portal.rows.send(self, max_rows):
                self.skipping = True
        elif portal.decision.kind == "relay":
            t0 = time.perf_counter()

            def done(stop: int, last_typ: int, last: bytes) -> None:
                if stop != ord("s"):
                    self.pinned |= portal.decision.pins and last_typ == ord("C")
                    self.audit(portal.decision.sql, t0, last_typ, last)

            (await self.acquire()).send(codec.execute(name, max_rows))
            self.pending.append(Expect(b"", b"CsIE", stream=True, done=done))
        else:
            self.write(codec.EMPTY_QUERY)

    async def close(self: "PgSession", body: bytes) -> None:
        r = codec.Reader(body)
        kind, name = r.byte(), r.cstring()
        r.end()
        if kind == b"S":
            self.statements.pop(name, None)
        elif kind == b"P":
            portal = await self.close_portal(name)
            if portal is not None and portal.decision.kind == "relay" and self.backend is not None:
                self.backend.send(codec.close(b"P", name))
                self.pending.append(Expect(b"3", b"3E"))
        else:
            raise codec.ProtocolViolation("Close of something other than a statement or portal")
        self.write(codec.CLOSE_COMPLETE)

    async def sync(self: "PgSession", _: bytes) -> None:
        if self.backend is not None:
            self.backend.send(codec.SYNC)
            self.pending.append(Expect(b"", b"Z", stream=True, sync=True))
            await self.settle()
            self.cycle_done()
        else:
            await self.settle()
            self.emit(codec.ready(self.tx))
        self.skipping = False
        if self.tx == b"I":
            await self.close_portals()

    async def close_portal(self, name: str) -> Portal | None:
        """Forget portal ``name``; an anonymized answer it was reading ends its run."""
        portal = self.portals.pop(name, None)
        if portal is not None and portal.rows is not None:
            await portal.rows.close(cast("PgSession", self))
        return portal

    async def close_portals(self) -> None:
        for name in list(self.portals):
            await self.close_portal(name)

    async def flush(self: "PgSession", _: bytes) -> None:
        await self.settle()
        await self.drain()

    # -- helpers ---------------------------------------------------------------------------
    def fail(self: "PgSession", sqlstate: str, message: str) -> None:
        self.write(codec.error(sqlstate, message))
        self.skipping = True

    async def offload(self: "PgSession", fn, *args):  # type: ignore[no-untyped-def]
        """``fn(*args)`` in the deciding threads; None after an ErrorResponse was written."""
        try:
            return await in_thread(self.front.decide, fn, *args)
        except SqlanonError as e:
            if isinstance(e, QueryRejected) and self.session is not None:
                self.session.record(str(args[0].text if isinstance(args[0], Statement) else args[0]), "rejected",
                                    construct=e.construct, message=e.message, seconds=0.0)
            self.write(codec.error(e.sqlstate, e.message))
            return None
        except Exception as e:  # noqa: BLE001 - refused, not run
            self.refuse_internal(str(args[0].text if isinstance(args[0], Statement) else args[0]), e)
            return None

    async def settled(self: "PgSession") -> bool:
        """``settle``, and whether the batch is still good (no error: go on with this message)."""
        await self.settle()
        return not self.skipping

    async def settle(self: "PgSession") -> None:
        """Read the database's replies owed to the client, in order, and pass them on. After an
        error the database skips to the Sync, and so do the replies owed until then."""
        if not self.pending:
            return
        if self.backend is not None and not any(isinstance(i, Expect) and i.sync for i in self.pending):
            self.backend.send(codec.FLUSH)
        failed = False
        self.busy = True
        try:
            while self.pending:
                item = self.pending.popleft()
                if isinstance(item, bytes):
                    if not failed:
                        self.emit(item)
                    continue
                if failed and not item.sync:
                    continue
                assert self.backend is not None
                stop, last_typ, last = await self._receive(self.backend, item)
                if item.done is not None:
                    item.done(stop, last_typ, last)
                if stop == ord("E") and not item.sync:
                    failed = self.skipping = True
        finally:
            self.busy = False

    async def _receive(self: "PgSession", backend: "Backend", item: Expect) -> tuple[int, int, bytes]:
        if item.stream:
            return await backend.relay(self.emit, self.drain, item.stops)
        while True:
            typ, body = await backend.message()
            if typ[0] not in item.swallow:
                self.emit(codec.message(typ, body))
            if typ[0] in item.stops:
                return typ[0], typ[0] if typ in (b"C", b"E") else 0, body
