"""The catalog's side of a stored release (finish/store.py): the release log's row, written in
the release's own transaction, and the names a running ``materialize`` claims where DDL commits
by itself (``materializing``, migration 0003).

Every call takes the connection to use: the run's own inside its transaction, or, for the
claims, which must be committed at once for every other session to see, the engine's.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlglot import exp

from sqlanon.catalog.store import Catalog
from sqlanon.finish.report import Report
from sqlanon.finish.store import Claim
from sqlanon.sql.templates import table


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


@dataclass
class Ledger:
    """finish.store.Ledger for one caller of ``materialize`` (named in the release log)."""

    catalog: Catalog
    client: str
    front_end: str

    def released_into(self, table_name: str, target: str) -> bool:
        return self.catalog.released_into(table_name, target)

    def newest(self, conn: sa.Connection | None, table_name: str) -> int | None:
        r = self.catalog.t.releases
        q = sa.select(sa.func.max(r.c.id)).where(sa.func.lower(r.c.table_name) == table_name.lower(),
                                                 r.c.target.is_not(None))
        if conn is not None:
            return conn.execute(q).scalar()
        with self.catalog.db.engine.connect() as c:
            return c.execute(q).scalar()

    def record(self, conn: sa.Connection, report: Report, target: str) -> None:
        self.catalog.record_release(report, client=self.client, front_end=self.front_end, target=target,
                                    connection=conn)

    # -- claims ------------------------------------------------------------------------------
    def claims(self, table_name: str | None = None, names: tuple[str, ...] = ()) -> list[Claim]:
        """The claims of runs of ``table_name``, or those on ``names``."""
        m = self.catalog.t.materializing
        q = sa.select(m.c.name, m.c.kind, m.c.table_name, m.c.run)
        q = q.where(m.c.table_name == table_name) if table_name is not None else q.where(m.c.name.in_(names))
        with self.catalog.db.engine.connect() as c:
            return [Claim(*row) for row in c.execute(q.order_by(m.c.run, m.c.kind))]

    def claim(self, run: str, table_name: str, names: list[tuple[str, str]]) -> Claim | None:
        """Claim ``names`` ((name, kind) pairs) for ``run``, committed at once; the claim of
        another run that holds one of them (then none is claimed), or None."""
        m = self.catalog.t.materializing
        taken = self.claims(names=tuple(n for n, _ in names))
        if taken:
            return taken[0]
        try:
            with self.catalog.db.engine.begin() as c:
                c.execute(m.insert(), [dict(name=n, kind=k, table_name=table_name, run=run, client=self.client[:200],
                                            at=_now()) for n, k in names])
        except sa.exc.IntegrityError:
            # another run claimed one of them since: its claim is what to tell
            taken = self.claims(names=tuple(n for n, _ in names))
            if taken:
                return taken[0]
            raise
        return None

    def unclaim(self, conn: sa.Connection | None, run: str) -> None:
        m = self.catalog.t.materializing
        if conn is not None:
            conn.execute(m.delete().where(m.c.run == run))
            return
        with self.catalog.db.engine.begin() as c:
            c.execute(m.delete().where(m.c.run == run))

    def memory(self, name: str) -> exp.Table:
        """A claimed memory of released rows as a table of the catalog (its schema, if any)."""
        t = table(name)
        if self.catalog.names.schema is not None:
            t.set("db", exp.to_identifier(self.catalog.names.schema, quoted=True))
        return t
