"""Reading and writing the catalog: releases, audit events, policies.

Every write is one INSERT in its own transaction: a release is logged when it has been
verified, and a refusal or rejection when it happened, whatever the caller does next. A stored
release is logged in the transaction that stores it (catalog/ledger.py, finish/store.py).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from sqlanon.audit import AuditEvent
from sqlanon.backends.connect import Database, open_database
from sqlanon.catalog import migrate
from sqlanon.catalog.schema import HEAD, Names, Tables, tables
from sqlanon.errors import BackendError
from sqlanon.finish.report import Report


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def fingerprint(predicate: str | None) -> str:
    """The same selection written the same way gets the same fingerprint (the predicate as
    sqlanon generated it, columns named by one alias)."""
    return hashlib.sha256((predicate or "").encode("utf-8")).hexdigest()


@dataclass
class Catalog:
    db: Database
    names: Names
    t: Tables

    # -- writes --------------------------------------------------------------------------------
    def record_release(self, report: Report, *, client: str, front_end: str, target: str | None = None,
                       connection: sa.Connection | None = None) -> int:
        """``connection``: write in its open transaction (a stored release's own, finish/store.py)."""
        assert report.table is not None
        row = dict(at=_now(), client=client, front_end=front_end, table_name=report.table,
                   predicate=report.predicate, fingerprint=fingerprint(report.predicate), method=report.method,
                   parameters=json.dumps(report.requirement, sort_keys=True, default=str),
                   rows_in=report.rows_in, rows_released=report.rows_released,
                   rows_suppressed=report.rows_suppressed, classes=report.classes,
                   report=json.dumps(report.to_dict(), sort_keys=True, default=str), target=target)
        with _in(self.db, connection) as c:
            release = int(c.execute(self.t.releases.insert().values(**row)).inserted_primary_key[0])
            # a join of protected tables: one entry per table, with the rows of it the join read,
            # so that differencing compares them with that table's other selections
            for table, predicate in report.selections.items():
                c.execute(self.t.releases.insert().values(**{
                    **row, "table_name": table, "predicate": predicate, "fingerprint": fingerprint(predicate)}))
            return release

    def remember_selection(self, sid: int, table: str, rows: int, since: dt.datetime) -> None:
        """Log one released selection (its rows follow, from the run's own connection) and
        forget the selections of ``table`` that left the comparison window."""
        sel, rws = self.t.selections, self.t.selection_rows
        with self.db.engine.begin() as c:
            gone = sa.select(sel.c.id).where(sel.c.table_name == table, sel.c.at < since)
            c.execute(rws.delete().where(rws.c.selection_id.in_(gone)))
            c.execute(sel.delete().where(sel.c.table_name == table, sel.c.at < since))
            c.execute(sel.insert().values(id=sid, table_name=table, at=_now(), rows=rows))

    def sink(self, event: AuditEvent) -> None:
        """An audit sink (``sqlanon.audit``): every statement's decision, in the catalog."""
        row = dict(at=dt.datetime.fromtimestamp(event.at, dt.timezone.utc).replace(tzinfo=None),
                   client=event.client[:200], front_end=event.front_end[:40], sql=event.sql,
                   decision=event.decision, table_name=event.table, method=event.method,
                   construct=(event.construct or None) and event.construct[:200], message=event.message,
                   seconds=event.seconds, rows=event.rows)
        with self.db.engine.begin() as c:
            c.execute(self.t.audit.insert().values(**row))

    # -- reads ---------------------------------------------------------------------------------
    def releases(self, table: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        r = self.t.releases
        q = sa.select(r.c.id, r.c.at, r.c.client, r.c.front_end, r.c.table_name, r.c.method, r.c.predicate,
                      r.c.rows_in, r.c.rows_released, r.c.rows_suppressed, r.c.classes, r.c.target, r.c.parameters)
        if table is not None:
            q = q.where(sa.func.lower(r.c.table_name) == table.lower())
        with self.db.engine.connect() as c:
            return [dict(m) for m in c.execute(q.order_by(r.c.id.desc()).limit(limit)).mappings()]

    def released_into(self, table: str, target: str) -> bool:
        """Whether ``target`` holds a stored release of ``table`` made by sqlanon."""
        r = self.t.releases
        q = sa.select(r.c.id).where(sa.func.lower(r.c.table_name) == table.lower(), r.c.target == target).limit(1)
        with self.db.engine.connect() as c:
            return c.execute(q).first() is not None

    def earlier(self, table: str, since: dt.datetime, exclude: str, limit: int) -> list[tuple[int, str | None]]:
        """Releases of ``table`` since ``since`` whose selection was written differently: (id,
        predicate), one per predicate (its newest release), newest first, at most ``limit``.
        Reads the releases of the window along the index (table, time), not the whole log."""
        r = self.t.releases
        newest = sa.func.max(r.c.id)
        ids = (sa.select(newest.label("id"))
               .where(r.c.table_name == table, r.c.at >= since, r.c.fingerprint != exclude)
               .group_by(r.c.fingerprint).order_by(newest.desc()).limit(limit)).subquery()
        q = sa.select(r.c.id, r.c.predicate).join_from(r, ids, r.c.id == ids.c.id).order_by(r.c.id.desc())
        with self.db.engine.connect() as c:
            return [(int(i), predicate) for i, predicate in c.execute(q)]

    def audit(self, limit: int = 100, decision: str | None = None) -> list[dict[str, Any]]:
        a = self.t.audit
        q = sa.select(a)
        if decision is not None:
            q = q.where(a.c.decision == decision)
        with self.db.engine.connect() as c:
            return [dict(m) for m in c.execute(q.order_by(a.c.id.desc()).limit(limit)).mappings()]


@contextmanager
def _in(db: Database, connection: sa.Connection | None) -> Iterator[sa.Connection]:
    """``connection`` as it is (its caller commits), or a transaction of its own."""
    if connection is not None:
        yield connection
        return
    with db.engine.begin() as c:
        yield c


def open_catalog(db: Database, *, create: bool = False, upgrade: str = "sqlanon db upgrade") -> Catalog | None:
    """The catalog of ``db``: created or upgraded when ``create``; None where there is none
    and none is asked for. A catalog at a revision this sqlanon does not know is refused;
    ``upgrade``: the command that brings an older one up to date."""
    if not db.backend.keeps_catalog:
        if create:
            raise BackendError(f"{db.backend.title} cannot keep sqlanon's catalog (release log, audit, budgets): "
                               "it has no transactions nor row writes; use it without a catalog")
        return None
    rev = migrate.current(db)
    if rev != HEAD:
        if rev is not None and rev not in _known():
            raise BackendError(f"the catalog is at revision {rev}, unknown to this sqlanon (head {HEAD}): "
                               "it was made by a newer version")
        if not create:
            if rev is None:
                return None
            raise BackendError(f"the catalog is at revision {rev}, this sqlanon needs {HEAD}: run '{upgrade}'")
        migrate.upgrade(db)
    names = Names.of(db.backend)
    return Catalog(db, names, tables(names))


def open_apart(url: str) -> Catalog:
    """The catalog kept in a database of its own (``connect(catalog=URL)``), for tables on a
    backend that cannot keep one (Spark SQL). It is never made here: a mistyped URL must not
    become an empty ledger that forgets what was spent; ``sqlanon db upgrade --catalog URL``
    makes it."""
    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError as e:
        raise BackendError(f"the catalog's database: not a database URL: {e}") from None
    upgrade = f"sqlanon db upgrade --catalog {shown}"
    try:
        db = open_database(url, reader=None)
    except BackendError as e:
        raise BackendError(f"the catalog's database: {e.message}; '{upgrade}' makes it") from None
    try:
        if not db.backend.keeps_catalog:
            raise BackendError(f"{db.backend.title} cannot keep sqlanon's catalog: name a SQLite, PostgreSQL or "
                               "MariaDB database as the catalog's")
        catalog = open_catalog(db, upgrade=upgrade)
        if catalog is None:
            raise BackendError(f"{shown} has no sqlanon catalog: run '{upgrade}'")
    except BaseException:
        db.dispose()
        raise
    return catalog


def _known() -> set[str]:
    return {line.split(":", 1)[0] for line in migrate.history()}
