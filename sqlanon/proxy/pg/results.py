"""An anonymized result on the wire: RowDescription, DataRows and the command tag.

The library hands the answer over as it reads it from the database (``Session.stream``): the
proxy holds one batch of it, never the whole answer. Each column's type OID is decided once
from the values of the first batch (``values.column_type``), generalized columns being text:
the drivers behind the library give every value of a column the same Python type (or None), so
later rows fit it; a column whose first batch is all NULL is text, which carries any value.
Each value is encoded in the format the client asked for in Bind (text for simple queries).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from sqlanon import api
from sqlanon.errors import SqlanonError
from sqlanon.proxy.pg import codec, values
from sqlanon.proxy.server import in_thread

if TYPE_CHECKING:
    from sqlanon.proxy.pg.session import PgSession

LOG = logging.getLogger("sqlanon.proxy")

#: rows read from the library and encoded between two waits for the client to read
BATCH = 500


@dataclass
class Rows:
    """A library answer being sent, possibly in several Execute messages (``max_rows``)."""

    result: api.Streamed
    formats: list[int]
    #: rows read from the answer and not sent yet (the first batch, or what ``max_rows`` left)
    ahead: list[tuple[Any, ...]] = field(default_factory=list)
    sent: int = 0
    oids: list[int] = field(default_factory=list)
    encoders: list[Callable[[Any], bytes]] = field(default_factory=list)

    @classmethod
    async def start(cls, session: "PgSession", result: api.Streamed, formats: list[int]) -> "Rows":
        """The answer's first batch read (the column types come from it); a failure to read it
        closes the answer and is raised."""
        first = await in_thread(session.front.library, result.fetchmany, BATCH)
        return cls(result, formats, first)

    def __post_init__(self) -> None:
        n = len(self.result.columns)
        self.formats = codec.formats_for(self.formats, n)
        self.oids = [values.column_type([r[i] for r in self.ahead]) for i in range(n)]
        self.encoders = [(values.BINARY_OUT if f else values.TEXT_OUT)[oid] for oid, f in zip(self.oids, self.formats)]

    def description(self) -> bytes:
        if not self.result.columns:
            return codec.NO_DATA
        return codec.row_description([(name, oid, values.SIZES.get(oid, -1), f)
                                      for name, oid, f in zip(self.result.columns, self.oids, self.formats)])

    async def send(self, session: "PgSession", max_rows: int = 0) -> bool:
        """Rows from the current position: all, or ``max_rows`` and PortalSuspended. False after
        an ErrorResponse (the database failed while the answer was read; it is closed)."""
        left = max_rows if max_rows > 0 else -1
        try:
            while left != 0:
                if not self.ahead and not await self._read(session):
                    break
                take = len(self.ahead) if left < 0 else min(left, len(self.ahead))
                batch, self.ahead = self.ahead[:take], self.ahead[take:]
                session.write(codec.data_rows(batch, self.encoders))
                await session.drain()
                self.sent += take
                left -= take if left > 0 else 0
            if left == 0 and (self.ahead or await self._read(session)):
                session.write(codec.PORTAL_SUSPENDED)
            else:
                session.write(codec.command_complete(f"SELECT {self.sent}"))
        except SqlanonError as e:
            session.write(codec.error(e.sqlstate, e.message))
            await self.close(session)
            return False
        return True

    async def _read(self, session: "PgSession") -> bool:
        """The next batch into ``ahead``; False at the end (the answer closed itself)."""
        self.ahead = await in_thread(session.front.library, self.result.fetchmany, BATCH)
        return bool(self.ahead)

    async def close(self, session: "PgSession") -> None:
        await close_answer(session, self.result)


async def close_answer(session: "PgSession", result: api.Streamed) -> None:
    """End an answer's run (its temp tables dropped), read to the end or not."""
    if result.rows.closed:
        return
    try:
        await in_thread(session.front.library, result.close)
    except SqlanonError as e:  # the client has its rows, or its error
        LOG.warning("closing an anonymized answer: %s", e.message)


async def send_result(session: "PgSession", result: api.Streamed, formats: list[int], *, describe: bool) -> None:
    try:
        rows = await Rows.start(session, result, formats)
        if describe:
            session.write(rows.description())
        await rows.send(session)
    except SqlanonError as e:
        session.write(codec.error(e.sqlstate, e.message))
    finally:
        await close_answer(session, result)
