"""One client of the MySQL front-end, as an explicit state machine.

greeting → (SSLRequest → TLS) → authentication → commands, until COM_QUIT or a protocol error.
In the command state every packet that carries SQL goes through ``decide``: the chatter gate,
then the library's admission. Pass-through statements are relayed to this client's own
database connection (opened lazily with the proxy's account; reopened after it was lost);
statements over protected tables run in the library, off the event loop, and come back as a
result set the proxy encodes itself. Any error is an ERR packet and the session goes on; only a
protocol violation, a lost client or a database lost mid-answer ends it.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
import struct
import time
from functools import partial
from typing import TYPE_CHECKING

from sqlanon.dp import summary
from sqlanon.errors import QueryRejected, SqlanonError
from sqlanon.proxy.mysql import auth, codec, gate, results, statements
from sqlanon.proxy.mysql.backend import Backend, BackendLost, PrepareFailed
from sqlanon.proxy.mysql.gate import Verdict
from sqlanon.proxy.server import Client, ShuttingDown

if TYPE_CHECKING:
    from sqlanon.api import Session as LibrarySession
    from sqlanon.api import Streamed
    from sqlanon.proxy.mysql.server import Connection, Shared

LOG = logging.getLogger("sqlanon.proxy.mysql")
FRONT_END = "proxy-mysql"

# error numbers (MySQL's own where one fits)
ER_DBACCESS_DENIED, ER_ACCESS_DENIED, ER_UNKNOWN_COM, ER_UNKNOWN_ERROR = 1044, 1045, 1047, 1105
ER_REJECTED, ER_UNKNOWN_STMT, ER_SIGNAL, ER_INSECURE, ER_LOST = 1227, 1243, 1644, 3159, 2013
ER_NO_SUCH_THREAD, ER_NET_PACKET_TOO_LARGE, ER_SERVER_SHUTDOWN = 1094, 1153, 1053
CHARSET_IDS = {"utf8mb4": 45, "utf8": 33, "utf8mb3": 33, "latin1": 8, "ascii": 11}
MAX_LONG_DATA = 16 << 20
#: rows of an anonymized answer read from the library, encoded and sent at a time
STREAM_BATCH = 1000
#: seconds from the greeting to the end of authentication (MySQL's connect_timeout)
LOGIN_TIMEOUT = 10.0


#: the statement a client asks for the last answer's notes with
SHOW_WARNINGS = re.compile(r"\s*SHOW\s+WARNINGS\s*;?\s*$", re.IGNORECASE)


class Closed(Exception):
    """End the session (after the client quit, or after an error that leaves no way on)."""


def error_packet(e: Exception) -> bytes:
    if isinstance(e, QueryRejected):
        return codec.err(ER_REJECTED, e.sqlstate, e.message)
    if isinstance(e, BackendLost):
        return codec.err(ER_LOST, e.sqlstate, e.message)
    if isinstance(e, SqlanonError):
        return codec.err(ER_SIGNAL, e.sqlstate, e.message)
    return codec.err(ER_UNKNOWN_ERROR, "HY000", "internal error in the proxy; see its log")


class ClientSession(Client):
    def __init__(self, conn: "Connection", shared: "Shared", connection_id: int):
        self.conn, self.shared, self.id = conn, shared, connection_id
        self.state = "greeting"
        self.seq = 0
        self.caps = 0
        self.charset = self.login_charset = "utf8mb4"
        self.status = codec.STATUS_AUTOCOMMIT
        self.lib: LibrarySession | None = None
        self.user: str | None = None
        self.backend: Backend | None = None
        self.prepared: dict[int, statements.Prepared] = {}
        self._next_stmt = 1
        #: part of the answer to the current command went out
        self.answered = False
        #: the database connection a relayed command runs on, until its answer is complete
        self.relaying: int | None = None
        #: notes on the last answer (a differentially private one's ε and intervals), for SHOW WARNINGS
        self.notes: list[str] = []

    # -- plumbing -------------------------------------------------------------------------------
    async def send(self, *payloads: bytes) -> None:
        out = []
        for p in payloads:
            data, self.seq = codec.frame(p, self.seq)
            out.append(data)
        self.answered = True
        await self.conn.write(b"".join(out))

    async def read(self) -> bytes:
        seq, payload = await self.from_client(self.shared.proxy, self.conn.read_packet)
        self.seq = (seq + 1) & 0xFF
        return payload

    @property
    def encoding(self) -> str:
        return gate.CHARSETS[self.charset]

    async def run(self) -> None:
        try:
            await asyncio.wait_for(self._connect(), LOGIN_TIMEOUT)
            self.state = "command"
            while True:
                payload = await self.read()
                if self.seq != 1 or not payload:
                    raise codec.ProtocolError("a command must start a new exchange")
                self.answered = False
                await self._command(payload)
        except codec.PacketTooLarge as e:
            LOG.info("client %d (%s): %s", self.id, self.state, e)
            self.seq = (e.seq + 1) & 0xFF
            with contextlib.suppress(ConnectionError):  # a client already gone is not told
                await self.send(codec.err(ER_NET_PACKET_TOO_LARGE, "08S01",
                                          f"Got a packet bigger than 'max_allowed_packet' bytes ({e.limit})"))
        except (ShuttingDown, asyncio.CancelledError):
            if not self.shared.proxy.stopping:
                raise
            await self._farewell()
        except (Closed, ConnectionError, codec.ProtocolError, asyncio.TimeoutError, ssl.SSLError) as e:
            if not isinstance(e, Closed):
                LOG.info("client %d (%s): %s", self.id, self.state, e)
        except Exception:  # noqa: BLE001 - one client's failure never reaches the listener
            LOG.exception("client %d (%s): closed after an unexpected error", self.id, self.state)
        finally:
            self.state = "closed"
            self.shared.sessions.pop(self.id, None)
            if self.backend is not None:
                self.backend.close()
            self.conn.close()

    async def _farewell(self) -> None:
        """ER_SERVER_SHUTDOWN, as MariaDB sends it: to an idle client unasked (sequence 0), to a
        command as its answer; a client that has part of an answer only sees the connection close.
        A relayed statement still running is killed on the database."""
        if self.idle and self.state == "command":
            self.seq = 0
        if not self.answered or self.idle:
            with contextlib.suppress(ConnectionError):
                await self.send(codec.err(ER_SERVER_SHUTDOWN, "08S01", "Server shutdown in progress"))
        if self.relaying is not None:
            with contextlib.suppress(BackendLost):
                killer = await Backend.open(self.shared.target, 0, [])
                try:
                    await killer.simple(gate.kill_query(self.relaying))
                finally:
                    killer.close()

    # -- connection phase -------------------------------------------------------------------------
    async def _connect(self) -> None:
        sh = self.shared
        salt = auth.scramble()
        await self.send(codec.handshake(sh.info.version, self.id, salt, sh.capabilities, sh.info.charset, auth.SHA2))
        response = codec.parse_handshake_response(await self.read())
        tls = False
        if response.ssl_request:
            if sh.tls is None:
                raise codec.ProtocolError("SSLRequest without TLS configured")
            self.state = "tls"
            await self.conn.start_tls(sh.tls)
            tls = True
            response = codec.parse_handshake_response(await self.read())
            if response.ssl_request:
                raise codec.ProtocolError("second SSLRequest")
        self.conn.exact = False
        self.caps = response.capabilities & sh.capabilities
        self.charset = self.login_charset = gate.COLLATIONS.get(response.charset, "utf8mb4")
        if sh.require_tls and not tls:
            await self.send(codec.err(ER_INSECURE, "HY000", "the proxy requires TLS: connect with SSL"))
            raise Closed
        self.state = "auth"
        user = sh.proxy.user(response.user)
        exchange = auth.Exchange(user, response.user, salt, tls=tls, keys=sh.keys, cache=sh.cache)
        step = exchange.start(response.plugin, response.auth)
        while True:
            await self.send(*step.send)
            if step.outcome == "continue":
                step = exchange.next(await self.read())
            elif step.outcome == "verify":
                assert step.password is not None
                ok = await self.shared.run(exchange.check, step.password)
                step = exchange.verified(ok, step.password)
            else:
                break
        if step.outcome != "ok" or user is None:
            await self.send(codec.err(ER_ACCESS_DENIED, "28000", f"Access denied for user '{response.user}'"))
            raise Closed
        if response.database not in (None, "", sh.database):
            await self.send(codec.err(ER_DBACCESS_DENIED, "42000",
                                      f"Access denied for user '{user.name}' to database '{response.database}'"))
            raise Closed
        self.lib = sh.proxy.session_for(user, FRONT_END)
        self.user = user.name
        sh.sessions[self.id] = self
        LOG.info("client %d: %s logged in (%s, %s)", self.id, user.name, "TLS" if tls else "no TLS",
                 response.attributes.get("program_name") or response.attributes.get("_client_name") or "client")
        self.conn.logged_in()
        await self.send(codec.ok(self.caps, self.status))

    # -- command phase ----------------------------------------------------------------------------
    async def _command(self, payload: bytes) -> None:
        cmd, body = payload[0], payload[1:]
        try:
            if cmd == codec.COM_QUIT:
                raise Closed
            if cmd == codec.COM_PING:
                await self.send(codec.ok(self.caps, self.status))
            elif cmd == codec.COM_QUERY:
                await self._sql(self._text(body), binary=False)
            elif cmd == codec.COM_INIT_DB:
                if self._text(body) != self.shared.database:
                    raise QueryRejected("USE of another database", f"this proxy serves {self.shared.database} only")
                await self.send(codec.ok(self.caps, self.status))
            elif cmd == codec.COM_STMT_PREPARE:
                await self._prepare(self._text(body))
            elif cmd == codec.COM_STMT_EXECUTE:
                stmt = self._statement(body)
                try:
                    sql = statements.bind(stmt, payload, self.encoding)
                finally:
                    stmt.long_data.clear()
                await self._sql(sql, binary=True)
            elif cmd == codec.COM_STMT_SEND_LONG_DATA:
                stmt = self._statement(body)
                index = struct.unpack("<H", body[4:6])[0]
                data = stmt.long_data.setdefault(index, bytearray())
                if len(data) + len(body) > MAX_LONG_DATA:
                    raise codec.ProtocolError("long data above the limit")
                data += body[6:]
            elif cmd == codec.COM_STMT_CLOSE:
                self.prepared.pop(struct.unpack("<I", body[:4])[0] if len(body) >= 4 else -1, None)
            elif cmd == codec.COM_STMT_RESET:
                self._statement(body).long_data.clear()
                await self.send(codec.ok(self.caps, self.status))
            elif cmd == codec.COM_FIELD_LIST:
                await self._field_list(body)
            elif cmd == codec.COM_RESET_CONNECTION:  # connection pools: back to the state after login
                self._drop_backend()
                self.prepared.clear()
                self.charset, self.status = self.login_charset, codec.STATUS_AUTOCOMMIT
                await self.send(codec.ok(self.caps, self.status))
            else:
                await self.send(codec.err(ER_UNKNOWN_COM, "08S01", f"command {cmd:#04x} is not served by the proxy"))
        except BackendLost as e:
            self._drop_backend()
            await self.send(error_packet(e))
        except (SqlanonError, UnknownStatement) as e:
            await self.send(codec.err(ER_UNKNOWN_STMT, "HY000", str(e)) if isinstance(e, UnknownStatement)
                            else error_packet(e))
        except (Closed, ConnectionError, codec.ProtocolError):
            raise
        except Exception as e:  # noqa: BLE001 - a bug or a malformed field: an error, the session goes on
            LOG.exception("client %d: command %#04x failed", self.id, cmd)
            await self.send(error_packet(e))

    def _text(self, body: bytes) -> str:
        try:
            return body.decode(self.encoding)
        except UnicodeDecodeError:
            raise QueryRejected("undecodable statement", f"not {self.charset} text") from None

    def _statement(self, body: bytes) -> statements.Prepared:
        stmt = self.prepared.get(struct.unpack("<I", body[:4])[0] if len(body) >= 4 else -1)
        if stmt is None:
            raise UnknownStatement("unknown prepared statement handler")
        return stmt

    def decide(self, sql: str) -> Verdict:
        """Gate, then library (runs in a worker thread; rejections are recorded in the audit)."""
        assert self.lib is not None
        db, policy = self.lib.db, self.lib.policy
        tables = db.tables
        try:
            verdict = gate.classify(sql, self.shared.database, set(tables), set(policy.tables))
        except QueryRejected as e:
            self.lib.record(sql, "rejected", construct=e.construct, message=e.message)
            raise
        if verdict.kind == "library":
            admission = self.lib.admit(sql)
            verdict = Verdict("forward", admission.passthrough) if admission.passthrough is not None else \
                Verdict("library", columns=admission.columns)
        self.shared.verdicts.put(policy, tables, sql, verdict)
        return verdict

    async def _sql(self, sql: str, *, binary: bool) -> None:
        assert self.lib is not None
        if self.notes and SHOW_WARNINGS.match(sql):
            notes, self.notes = self.notes, []
            await self._result(["Level", "Code", "Message"], [("Note", 1003, n) for n in notes], binary)
            return
        self.notes = []
        verdict = self.shared.verdicts.get(self.lib.policy, self.lib.db.tables, sql) or \
            await self.shared.run(self.decide, sql)
        if verdict.kind == "ok":
            self.shared.audit(self.lib, sql, "passed")
            await self.send(codec.ok(self.caps, self.status))
            return
        if verdict.kind == "kill":
            await self._kill(sql, verdict)
            return
        if verdict.kind == "forward":
            assert verdict.sql is not None
            t0 = time.perf_counter()
            scanner = await (self._relay_binary(verdict.sql) if binary else self._relay(
                bytes([codec.COM_QUERY]) + verdict.sql.encode(self.encoding)))
            if scanner is not None and scanner.error is None and verdict.charset is not None:
                self.charset = verdict.charset
            if scanner is not None:
                self.shared.audit(self.lib, sql, "passed", seconds=time.perf_counter() - t0, rows=scanner.rows)
            return
        async with self.shared.library_slots:  # held while the answer streams: it holds a connection
            # verified (or refused) before its first row; the rows are read as they are sent
            result = await self.shared.run(self.lib.stream, sql)
            # a differentially private answer: what it spent and how exact it is, as a warning (a note)
            told = summary(result.report)
            self.notes = [told] if told is not None else []
            await self._streamed(result, binary, warnings=len(self.notes))

    async def _streamed(self, result: "Streamed", binary: bool, warnings: int) -> None:
        """An anonymized answer sent as the library reads it from the database, a batch at a time
        (the first batch types the columns); its run ends however the sending ends. A failure
        half-way is an ERR packet in place of the end of the rows, as a server sends it."""
        try:
            batch = await self.shared.run(result.fetchmany, STREAM_BATCH)
            packets, cols = results.head(result.columns, batch, caps=self.caps, status=self.status,
                                         charset=CHARSET_IDS[self.charset])
            while batch:
                packets += await self.shared.run(partial(results.row_packets, batch, cols, encoding=self.encoding,
                                                         binary=binary))
                await self.send(*packets)
                packets = []
                batch = await self.shared.run(result.fetchmany, STREAM_BATCH)
            await self.send(*packets, codec.end_of_rows(self.caps, self.status, warnings))
        finally:
            if not result.rows.closed:
                try:
                    await self.shared.run(result.close)
                except SqlanonError as e:  # the client has its rows, or its error
                    LOG.warning("closing an anonymized answer: %s", e.message)

    async def _result(self, names: list[str], rows: list[tuple], binary: bool, warnings: int = 0) -> None:
        """Encode off the event loop (16k Adult rows take ~0.1 s), frame and send in batches."""
        packets = await self.shared.run(lambda: list(results.result_set(
            names, rows, caps=self.caps, status=self.status, charset=CHARSET_IDS[self.charset],
            encoding=self.encoding, binary=binary, warnings=warnings)))
        for i in range(0, len(packets), 1024):
            await self.send(*packets[i:i + 1024])

    async def _kill(self, sql: str, verdict: Verdict) -> None:
        """KILL of a connection of the same client identity: QUERY stops the statement its
        database connection runs (an anonymization runs to its end); CONNECTION closes it."""
        target = self.shared.sessions.get(verdict.thread or 0)
        if target is None or target.user != self.user:
            await self.send(codec.err(ER_NO_SUCH_THREAD, "HY000", f"Unknown thread id: {verdict.thread}"))
            return
        assert self.lib is not None
        self.shared.audit(self.lib, sql, "passed")
        if verdict.query and target.backend is not None and target is not self:
            await self._relay(bytes([codec.COM_QUERY]) + gate.kill_query(target.backend.thread_id).encode())
            return
        if not verdict.query:
            target.conn.close()
        await self.send(codec.ok(self.caps, self.status))

    # -- the database leg ---------------------------------------------------------------------
    async def _backend(self) -> Backend:
        if self.backend is None:
            setup = list(self.shared.setup)
            if self.charset != "utf8mb4":
                setup.append(gate.set_names(self.charset))
            self.backend = await Backend.open(self.shared.target, self.caps, setup)
        return self.backend

    def _drop_backend(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None

    async def _relay(self, payload: bytes, *, fields: bool = False) -> codec.ResponseScanner | None:
        """Forward one command's answer; a database lost before any byte went out is an ERR."""
        backend = await self._backend()
        sent = False

        async def write(data: bytes) -> None:
            nonlocal sent
            sent = self.answered = True
            await self.conn.write(data)

        self.relaying = backend.thread_id
        try:
            scanner = await backend.relay(payload, write, fields=fields)
        except BackendLost:
            self.relaying = None
            self._drop_backend()
            if sent:
                raise Closed from None
            raise
        except BaseException:
            self._drop_backend()  # the client went away mid-answer: the rest is still coming
            raise
        self.relaying = None
        self.status = scanner.status or self.status
        return scanner

    async def _relay_binary(self, sql: str) -> codec.ResponseScanner | None:
        """A statement with its values bound, answered in the binary row format: prepared and
        executed on the database (no parameters left), its answer relayed, the handle closed."""
        backend = await self._backend()
        try:
            stmt_id, _ = await backend.prepare(sql)
        except PrepareFailed as e:
            await self.send(e.packet)
            return None
        try:
            return await self._relay(bytes([codec.COM_STMT_EXECUTE]) + struct.pack("<IBI", stmt_id, 0, 1))
        finally:
            if self.backend is backend:
                backend.close_statement(stmt_id)

    async def _prepare(self, sql: str) -> None:
        stmt = statements.prepare(self._next_stmt, sql)
        verdict = await self.shared.run(self.decide, stmt.render_with_nulls())
        # an anonymized result's types are known when it runs: text until then (clients read the
        # definitions sent with each execution)
        cols = [codec.Column(name, codec.VAR_STRING, CHARSET_IDS[self.charset], 1024).definition()
                for name in verdict.columns]
        if verdict.kind == "forward" and verdict.sql is not None:
            backend = await self._backend()
            try:
                stmt_id, cols = await backend.prepare(verdict.sql)
                backend.close_statement(stmt_id)
            except PrepareFailed:
                cols = []  # e.g. LIMIT NULL: the columns come with the first execution
        self._next_stmt += 1
        self.prepared[stmt.id] = stmt
        param = codec.Column("?", codec.VAR_STRING, codec.BINARY_CHARSET, 0).definition()
        head = b"\x00" + struct.pack("<IHHBH", stmt.id, len(cols), stmt.params, 0, 0)
        await self.send(head, *results.definitions([param] * stmt.params, self.caps, self.status),
                        *results.definitions(cols, self.caps, self.status))

    async def _field_list(self, body: bytes) -> None:
        table = body.split(b"\x00", 1)[0].decode(self.encoding, "replace")
        assert self.lib is not None
        if table.lower() not in self.lib.db.tables:
            raise QueryRejected("field list", f"{table} is not a table of {self.shared.database}")
        # the table as the database spells it; the client's wildcard is dropped
        name = self.lib.db.spelling.get(table.lower(), table)
        await self._relay(bytes([codec.COM_FIELD_LIST]) + name.encode(self.encoding) + b"\x00", fields=True)


class UnknownStatement(Exception):
    """COM_STMT_* for a handle this session never gave out (or closed)."""

