"""The PostgreSQL listener: what every client connection of one proxy shares.

The library is synchronous: statements are decided (parse, analyze) in one thread pool,
anonymized queries run in another and audit events are recorded in a third, so that no client
blocks the event loop and a slow anonymization never delays another client's pass-through.
The library's pool holds 5 + 10 database connections by default; ``LIBRARY_WORKERS`` keeps
within that, so that a hundred clients queue for a worker instead of failing on an exhausted
connection pool.
"""
from __future__ import annotations

import asyncio
import gc
import secrets
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from sqlanon.proxy.pg.backend import Pool, Target, cancel

if TYPE_CHECKING:
    from sqlanon.proxy.pg.session import PgSession
    from sqlanon.proxy.server import Proxy

#: anonymized queries at once, each holding one of the library's pooled connections: with the
#: MySQL front-end's 6 and one audit thread each (a catalog sink writes through the same pool),
#: SQLAlchemy's 5 + 10
LIBRARY_WORKERS = 7
#: statements parsed and analyzed at once (CPU only)
DECIDE_WORKERS = 4
#: database connections for relayed statements, shared by all clients
RELAY_CONNECTIONS = 50
FRONT_END = "proxy-postgresql"


class FrontEnd:
    def __init__(self, proxy: "Proxy"):
        self.proxy = proxy
        self.target = Target.from_url(proxy.config.url)
        self.pool = Pool(self.target, RELAY_CONNECTIONS)
        self.library = ThreadPoolExecutor(LIBRARY_WORKERS, thread_name_prefix="sqlanon-pg-library")
        self.decide = ThreadPoolExecutor(DECIDE_WORKERS, thread_name_prefix="sqlanon-pg-decide")
        #: audit events of relayed statements, in order, off the event loop
        self.audit = ThreadPoolExecutor(1, thread_name_prefix="sqlanon-pg-audit")
        #: (process id, secret key) the proxy gave each client → its session, for cancel requests
        self.sessions: dict[tuple[int, int], "PgSession"] = {}

    def register(self, session: "PgSession") -> tuple[int, int]:
        while True:
            key = (secrets.randbits(31), secrets.randbits(31))
            if key not in self.sessions:
                self.sessions[key] = session
                return key

    async def cancel(self, key: tuple[int, int]) -> None:
        """Cancel what the client with ``key`` runs on the database, if it runs a relayed statement
        (an anonymization in the library runs to its end)."""
        session = self.sessions.get(key)
        backend = session.backend if session is not None else None
        if backend is not None and session is not None and session.state == "ready" and session.busy:
            await cancel(self.target, backend.key)

    def close(self) -> None:
        self.pool.close()
        self.library.shutdown(wait=False, cancel_futures=True)
        self.decide.shutdown(wait=False, cancel_futures=True)
        self.audit.shutdown(wait=True)


async def start(proxy: "Proxy", host: str, port: int) -> asyncio.Server:
    from sqlanon.proxy.pg.session import PgSession

    front = FrontEnd(proxy)
    proxy.closers.append(front.close)

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = PgSession(front, reader, writer)
        task = asyncio.current_task()
        assert task is not None
        proxy.enlist(task, session)
        try:
            await session.run()
        except asyncio.CancelledError:
            pass  # the shutdown closed a client that did not read its error (asyncio would log a traceback)

    server = await asyncio.start_server(client, host, port, limit=1 << 16)
    # what start-up loaded (sqlglot, SQLAlchemy, the policies) lives as long as the process:
    # out of the collector's reach, full collections stay short and so do latency spikes
    gc.freeze()
    return server
