"""An anonymized result on the wire: RowDescription, DataRows and the command tag.

The library returns Python values; each column's type OID is decided once from its values
(``values.column_type``), generalized columns being text, and each value is encoded in the
format the client asked for in Bind (text for simple queries).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from sqlanon import api
from sqlanon.proxy.pg import codec, values

if TYPE_CHECKING:
    from sqlanon.proxy.pg.session import PgSession

#: rows encoded between two waits for the client to read
BATCH = 500


@dataclass
class Rows:
    """A library result being sent, possibly in several Execute messages (``max_rows``)."""

    result: api.Result
    formats: list[int]
    pos: int = 0
    oids: list[int] = field(default_factory=list)
    encoders: list[Callable[[Any], bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.result.columns)
        self.formats = codec.formats_for(self.formats, n)
        self.oids = [values.column_type([r[i] for r in self.result.rows]) for i in range(n)]
        self.encoders = [(values.BINARY_OUT if f else values.TEXT_OUT)[oid] for oid, f in zip(self.oids, self.formats)]

    def description(self) -> bytes:
        if not self.result.columns:
            return codec.NO_DATA
        return codec.row_description([(name, oid, values.SIZES.get(oid, -1), f)
                                      for name, oid, f in zip(self.result.columns, self.oids, self.formats)])

    async def send(self, session: "PgSession", max_rows: int = 0) -> None:
        """Rows from the current position: all, or ``max_rows`` and PortalSuspended."""
        rows = self.result.rows
        end = len(rows) if max_rows <= 0 else min(len(rows), self.pos + max_rows)
        encoders = self.encoders
        for start in range(self.pos, end, BATCH):
            session.write(codec.data_rows(rows[start:min(end, start + BATCH)], encoders))
            await session.drain()
        self.pos = end
        if end < len(rows):
            session.write(codec.PORTAL_SUSPENDED)
        else:
            session.write(codec.command_complete(f"SELECT {len(rows)}"))


async def send_result(session: "PgSession", result: api.Result, formats: list[int], *, describe: bool) -> None:
    rows = Rows(result, formats)
    if describe:
        session.write(rows.description())
    await rows.send(session)
