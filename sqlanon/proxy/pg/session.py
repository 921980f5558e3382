"""One client connection: an explicit state machine over the codec.

``startup`` (SSLRequest → 'S' then TLS, or 'N'; GSSENCRequest → 'N'; CancelRequest) →
``auth`` (SCRAM-SHA-256 against the users file) → ``ready`` (simple and extended query
protocol) → ``closed``. After an error inside an extended-protocol batch the session skips
every message up to the next Sync, as PostgreSQL does; a framing error closes the connection,
since nothing after it can be trusted. Each statement is decided by ``gate.decide``: relayed
to a pooled database connection (``backend.py``), answered from the library's anonymized
result (``results.py``), or refused with the library's SQLSTATE and message.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Callable

from sqlglot import exp

from sqlanon import api
from sqlanon.dp import summary
from sqlanon.errors import SqlanonError
from sqlanon.proxy.pg import codec, gate
from sqlanon.proxy.pg.auth import AuthFailed, ScramServer
from sqlanon.proxy.pg.backend import Backend, BackendLost, cancel
from sqlanon.proxy.pg.codec import ProtocolViolation
from sqlanon.proxy.pg.extended import Extended
from sqlanon.proxy.pg.results import send_result
from sqlanon.proxy.server import Client, ShuttingDown, in_thread

if TYPE_CHECKING:
    from sqlanon.proxy.pg.server import FrontEnd

LOG = logging.getLogger("sqlanon.proxy")
#: seconds a client has to finish start-up and authentication
STARTUP_TIMEOUT = 30.0
#: seconds a relayed statement's audit event may wait to be handed to the audit thread with
#: those of the statements after it: a thread woken per batch, not per statement (a pass-through
#: statement's overhead over a direct connection -16 to -20 %; 10 ms batches gained more, but
#: a batch's burst of log lines held up other statements: p99 +25 %)
AUDIT_DELAY = 0.002
CACHE_SIZE = 256
#: start-up parameters a client may send besides the settings of ``gate.SETTINGS``
#: the states of a connection and where each may go
TRANSITIONS = {"startup": ("auth", "closed"), "auth": ("ready", "closed"), "ready": ("closed",), "closed": ()}
STARTUP_KEYS = frozenset({"user", "database", "application_name", "client_encoding", "options"})


class Fatal(Exception):
    """End the connection with this error (start-up and authentication failures)."""

    def __init__(self, sqlstate: str, message: str):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message


class PgSession(Extended, Client):
    def __init__(self, front: "FrontEnd", reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        super().__init__()
        self.front = front
        self.reader = reader
        self.writer = writer
        self.framer = codec.Framer()
        self.state = "startup"
        self.session: api.Session | None = None
        self.backend: Backend | None = None
        #: a relayed statement runs on ``backend`` (cancel requests act only then)
        self.busy = False
        #: the client changed a session setting: its database connection stays its own
        self.pinned = False
        self.tx = b"I"
        self.key: tuple[int, int] | None = None
        #: statement text → (decision, the schema and the policy it was made under)
        self._cache: dict[str, tuple[gate.Decision, object, object]] = {}
        #: replies not yet handed to the transport (one write per batch)
        self.out = bytearray()
        #: audit events of relayed statements not yet handed to the audit thread (``audit``)
        self.audits: list[tuple[str, str, dict[str, Any]]] = []
        self._audit_timer: asyncio.TimerHandle | None = None

    def enter(self, state: str) -> None:
        if state not in TRANSITIONS[self.state]:
            raise ProtocolViolation(f"no transition from {self.state} to {state}")
        self.state = state

    # -- I/O -----------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """A reply, after those still owed by the database (``Extended.settle``)."""
        if self.pending:
            self.pending.append(data)
        else:
            self.out += data

    def emit(self, data: bytes) -> None:
        """A reply now (the database's own, as they are read); a large one goes to the
        transport as it is."""
        if len(data) < 1 << 16:
            self.out += data
            return
        if self.out:
            self.writer.write(bytes(self.out))
            self.out.clear()
        self.writer.write(data)

    async def drain(self) -> None:
        if self.out:
            self.writer.write(bytes(self.out))
            self.out.clear()
        if self.audits and self._audit_timer is None:
            self._audit_timer = asyncio.get_running_loop().call_later(AUDIT_DELAY, self.hand_over_audits)
        await self.writer.drain()

    def hand_over_audits(self) -> None:
        """The audit events of the replies written, to the audit thread: after the replies, so
        that no client waits for the hand-over, and AUDIT_DELAY after the first of them."""
        if self._audit_timer is not None:
            self._audit_timer.cancel()
            self._audit_timer = None
        if self.audits and self.session is not None:
            events, self.audits = self.audits, []
            self.front.audit.submit(_record, self.session.record, events)

    async def read(self) -> tuple[bytes, bytes]:
        while True:
            msg = self.framer.next()
            if msg is not None:
                return msg
            await self.settle()
            await self.drain()
            data = await self.from_client(self.front.proxy, self.reader.read, 1 << 16)
            if not data:
                raise ConnectionResetError("client closed the connection")
            self.framer.feed(data)

    # -- lifecycle -----------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            try:
                async with asyncio.timeout(STARTUP_TIMEOUT):
                    if not await self._startup():
                        return
                self.enter("ready")
                await self._serve()
            except Fatal as e:
                self.write(codec.error(e.sqlstate, e.message, severity="FATAL"))
            except ProtocolViolation as e:
                self.write(codec.error(e.sqlstate, str(e), severity="FATAL"))
            except TimeoutError:
                self.write(codec.error("08P01", "start-up took too long", severity="FATAL"))
            except (ShuttingDown, asyncio.CancelledError):
                if not self.front.proxy.stopping:
                    raise
                await self._farewell()
            except (ConnectionError, OSError):
                raise
            except Exception:  # a fault of the proxy: this client's connection ends, no other's
                LOG.exception("PostgreSQL client connection failed")
                self.write(codec.error("XX000", "internal error of the proxy; the connection is closed",
                                       severity="FATAL"))
            if not self.writer.is_closing():
                await self.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self.enter("closed")
            self.hand_over_audits()
            if self.key is not None:
                self.front.sessions.pop(self.key, None)
            try:  # a client gone half-way through an answer: its run ends, its temp tables go
                await self.close_portals()
            except Exception as e:  # noqa: BLE001 - the proxy shuts down: the database ends the sessions
                LOG.debug("closing a client's answers: %s", e)
            self._release(reuse=False)
            self.writer.close()

    async def _farewell(self) -> None:
        """The shutdown's FATAL error, as PostgreSQL sends it (unless the client has half a row:
        then it only sees the connection close); a statement still running on the database is
        cancelled there."""
        mid_row = self.backend is not None and self.backend.mid_row
        if not mid_row:
            self.pending.clear()
            self.emit(codec.error("57P01", "terminating connection due to administrator command: the sqlanon proxy "
                                           "is shutting down", severity="FATAL"))
        if self.backend is not None and not self.idle:
            await self.drain()
            await cancel(self.front.target, self.backend.key)

    async def _startup(self) -> bool:
        tls = False
        while True:
            _, body = await self.read()
            start = codec.decode_startup(body)
            if start.code == codec.CANCEL_REQUEST:
                assert start.cancel is not None
                await self.front.cancel(start.cancel)
                return False
            declined = tls or self.front.proxy.tls is None  # TLS once, and only when configured
            if start.code == codec.GSSENC_REQUEST or (start.code == codec.SSL_REQUEST and declined):
                self.emit(b"N")
                continue
            if start.code == codec.SSL_REQUEST:
                if self.framer.buf:
                    raise ProtocolViolation("data after the SSL request, before the TLS handshake")
                self.emit(b"S")
                await self.drain()
                await self.writer.start_tls(self.front.proxy.tls)
                tls = True
                continue
            break
        if self.front.proxy.config.require_tls and not tls:
            raise Fatal("28000", "the proxy accepts TLS connections only (sslmode=require)")
        self.framer.startup = False
        self.enter("auth")
        await self._authenticate(start.params)
        return True

    async def _authenticate(self, params: dict[str, str]) -> None:
        name = params.get("user", "")
        if not name:
            raise Fatal("28000", "no user name given")
        user = self.front.proxy.user(name)
        scram = ScramServer(user.scram if user is not None else None, name)
        failed = Fatal("28P01", f'password authentication failed for user "{name}"')
        self.write(codec.auth(10, b"SCRAM-SHA-256\0\0"))
        try:
            r = codec.Reader(await self._password_message())
            mechanism, n = r.cstring(), r.int32()
            self.write(codec.auth(11, scram.first(mechanism, r.bytes(n))))
            final = scram.final(await self._password_message())
        except (AuthFailed, ProtocolViolation):
            raise failed from None
        assert user is not None
        self.write(codec.auth(12, final) + codec.auth(0))
        self._check_parameters(params)
        self.session = self.front.proxy.session_for(user, "proxy-postgresql")
        try:
            backend = await self.acquire()
        except BackendLost as e:
            raise Fatal("08006", str(e)) from None
        for key, value in backend.params.items():
            value = {"is_superuser": "off", "session_authorization": name, "client_encoding": "UTF8",
                     "application_name": params.get("application_name", "")}.get(key, value)
            self.write(codec.parameter_status(key, value))
        await self._apply_settings(params)
        if not self.pinned:
            self._release(reuse=True)
        self.key = self.front.register(self)
        self.write(codec.backend_key(*self.key) + codec.ready(b"I"))

    async def _password_message(self) -> bytes:
        typ, body = await self.read()
        if typ != b"p":
            raise ProtocolViolation("expected a password message")
        return body

    def _check_parameters(self, params: dict[str, str]) -> None:
        database = params.get("database") or params["user"]
        if database != self.front.target.database:
            raise Fatal("3D000", f'database "{database}" does not exist (this proxy serves '
                                 f'"{self.front.target.database}")')
        for key, value in params.items():
            if key not in STARTUP_KEYS and key not in gate.SETTINGS:
                raise Fatal("0A000", f"start-up parameter {key!r} is not accepted by the proxy")
            if key == "options" and value.strip():
                raise Fatal("0A000", "start-up options (-c …) are not accepted by the proxy")
            if key == "client_encoding" and value.lower().replace("-", "") not in ("utf8", "unicode", "sql_ascii"):
                raise Fatal("22023", f"client_encoding {value!r}: the proxy speaks UTF8 only")
            if key in gate.SETTINGS and key not in ("application_name", "client_encoding") \
                    and not gate.SETTINGS[key](value):
                raise Fatal("22023", f"start-up parameter {key}={value!r} is not accepted by the proxy")

    async def _apply_settings(self, params: dict[str, str]) -> None:
        """Start-up settings (DateStyle, TimeZone, …) become SET statements on a pinned connection."""
        for key, value in params.items():
            if key in gate.SETTINGS and key not in ("application_name", "client_encoding"):
                assert self.session is not None
                decision = gate.decide(f"SET {key} = {exp.Literal.string(value).sql('postgres')}", self.session)
                assert self.backend is not None
                self.pinned = True
                self.backend.send(codec.query(decision.sql))
                while (reply := await self.backend.message())[0] != b"Z":
                    if reply[0] == b"E":
                        raise Fatal("22023", f"start-up parameter {key}: {codec.error_fields(reply[1]).get('M')}")

    # -- the ready state -----------------------------------------------------------------------
    async def _serve(self) -> None:
        handlers: dict[bytes, Callable[[bytes], Any]] = {
            b"Q": self._simple, b"P": self.parse, b"B": self.bind, b"D": self.describe, b"E": self.execute,
            b"C": self.close, b"S": self.sync, b"H": self.flush, b"F": self._function_call,
        }
        while True:
            typ, body = await self.read()
            if typ == b"X":
                return
            if typ in (b"d", b"c", b"f"):
                continue  # copy data outside COPY: ignored, as PostgreSQL does
            handler = handlers.get(typ)
            if handler is None:
                raise ProtocolViolation(f"unexpected message type {typ!r}")
            if self.skipping and typ != b"S":
                continue
            try:
                await handler(body)
            except BackendLost as e:
                await self._backend_lost(e, simple=typ == b"Q")

    async def _function_call(self, _: bytes) -> None:
        self.write(codec.error("0A000", "rejected: function call message: the proxy runs SQL statements only")
                   + codec.ready(self.tx))

    async def _simple(self, body: bytes) -> None:
        r = codec.Reader(body)
        sql = r.cstring()
        r.end()
        if not await self.settled():
            return  # an earlier extended-protocol message failed: skip to its Sync, as PostgreSQL does
        t0 = time.perf_counter()
        decision = await self.decide(sql)
        if decision is None:
            self.write(codec.ready(self.tx))
        elif decision.kind == "empty":
            self.write(codec.EMPTY_QUERY + codec.ready(self.tx))
        elif decision.kind == "library":
            result = await self.run_library(decision.sql)
            if result is not None:
                await send_result(self, result, [0] * len(result.columns), describe=True)
            self.write(codec.ready(self.tx))
        else:
            backend = await self.acquire()
            backend.send(codec.query(decision.sql))
            self.busy = True
            try:
                _, last_typ, last = await backend.relay(self.emit, self.drain, b"Z")
            finally:
                self.busy = False
            self.pinned |= decision.pins and last_typ == ord("C")
            self.audit(decision.sql, t0, last_typ, last)
            self.cycle_done()

    # -- deciding and running ------------------------------------------------------------------
    async def decide(self, sql: str) -> gate.Decision | None:
        """The gate's decision, or None after an ErrorResponse has been written."""
        assert self.session is not None
        # a decision holds for this client's identity (its session), this policy and this schema
        # (refresh_schema replaces the tables): any of them changed, the statement is decided again
        tables, policy = self.session.db.tables, self.session.policy
        hit = self._cache.get(sql)
        if hit is not None and hit[1] is tables and hit[2] is policy:
            return hit[0]
        if not await self.settled():
            return None
        try:
            decision = await in_thread(self.front.decide, gate.decide, sql,
                                                                        self.session)
        except SqlanonError as e:  # audited by the gate or the library
            self.write(codec.error(e.sqlstate, e.message))
            return None
        except Exception as e:  # noqa: BLE001 - a statement the gate chokes on is refused, not run
            self.refuse_internal(sql, e)
            return None
        if len(self._cache) >= CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[sql] = (decision, tables, policy)
        return decision

    def refuse_internal(self, sql: str, e: Exception) -> None:
        assert self.session is not None
        LOG.exception("deciding on a statement failed")
        self.hand_over_audits()  # in order
        self.front.audit.submit(self.session.record, sql, "error", message=f"{type(e).__name__}: {e}"[:200])
        self.write(codec.error("XX000", "rejected: the proxy could not analyze this statement (internal error); "
                                        "nothing was sent to the database"))

    async def run_library(self, sql: str) -> api.Streamed | None:
        assert self.session is not None
        if self.tx == b"E":
            self.write(codec.error("25P02", "current transaction is aborted, commands ignored until end of "
                                            "transaction block"))
            return None
        try:
            # verified (or refused) before its first row; the rows are read as they are sent
            result = await in_thread(self.front.library, self.session.stream, sql)
            told = summary(result.report)
            if told is not None:  # a differentially private answer: what it spent, how exact it is
                self.write(codec.notice(told))
            return result
        except SqlanonError as e:
            self.write(codec.error(e.sqlstate, e.message))
        except Exception as e:  # noqa: BLE001 - a database error inside the library: the client hears of it
            self.session.record(sql, "error", message=str(e).splitlines()[0] if str(e) else type(e).__name__)
            self.write(codec.error(getattr(e, "sqlstate", None) or "XX000", f"the database failed: "
                                   f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"))
        return None

    def audit(self, sql: str, t0: float, last_typ: int, last: bytes) -> None:
        """A relayed statement's event, recorded in the audit thread (a sink may write to the
        catalog's table: never on the event loop), in order, once its reply is written."""
        seconds = time.perf_counter() - t0
        if last_typ == ord("E"):
            self.audits.append((sql, "error", {"message": codec.error_fields(last).get("M"), "seconds": seconds}))
            return
        words = last.rstrip(b"\0").split()
        rows = int(words[-1]) if words and words[-1].isdigit() else None
        self.audits.append((sql, "passed", {"seconds": seconds, "rows": rows}))

    # -- database connections ------------------------------------------------------------------
    async def acquire(self) -> Backend:
        if self.backend is None:
            self.backend = await self.front.pool.acquire()
        return self.backend

    def cycle_done(self) -> None:
        """After a ReadyForQuery: keep the connection inside a transaction or when pinned."""
        if self.backend is not None:
            self.tx = self.backend.status
            if self.tx == b"I" and not self.pinned:
                self._release(reuse=True)

    def _release(self, *, reuse: bool) -> None:
        if self.backend is not None:
            self.front.pool.release(self.backend, reuse=reuse and not self.pinned and not self.busy)
            self.backend = None

    async def _backend_lost(self, e: BackendLost, *, simple: bool) -> None:
        """The database connection broke: the client hears an error, never waits. Its session
        state (a transaction, settings) is gone with it, so such a client is disconnected."""
        self.busy = False
        self.pending.clear()
        lost_state = self.pinned or self.tx != b"I"
        self._release(reuse=False)
        if lost_state:
            raise Fatal("08006", f"the connection to the database was lost: {e}")
        self.write(codec.error("08006", f"the connection to the database was lost: {e}"))
        if simple:
            self.write(codec.ready(b"I"))
        else:
            self.skipping = True


def _record(record: Callable[..., None], events: list[tuple[str, str, dict[str, Any]]]) -> None:
    for sql, decision, fields in events:
        record(sql, decision, **fields)
