"""The ε budget ledger of differentially private answers (migration 0004).

A query's ε is reserved before anything reads the table, in one transaction that checks and
records it: the transaction first updates the table's row of ``dp_scopes``, whose lock (a row
lock on PostgreSQL and MariaDB, the write lock of the database file on SQLite) every other
reservation for the table waits for until this one commits; then it sums what the client (or,
``per: table``, every client) spent within the window, refuses when the query would exceed
the budget, and inserts the spend. Two concurrent queries of one analyst therefore cannot both
see the budget that only one of them may spend. A reservation stays spent when the query fails
afterwards (fail closed).
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlglot import exp

from sqlanon.catalog.store import Catalog
from sqlanon.dp import Spent
from sqlanon.errors import ReleaseRefused
from sqlanon.policy.model import Differential


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def _window(seconds: int) -> str:
    return f"{seconds // 86_400} days" if seconds % 86_400 == 0 else f"{seconds} seconds"


def reserve(catalog: Catalog, client: str, table: str, dp: Differential, epsilon: float, delta: float) -> Spent:
    """Record ``epsilon`` (and ``delta``) spent by ``client`` on ``table``, or raise ReleaseRefused
    when it would exceed the budget within the window; returns the spend after it."""
    scopes, spends = catalog.t.dp_scopes, catalog.t.dp_spends
    key = table.lower()
    now = _now()
    since = now - dt.timedelta(seconds=dp.epsilon.window)
    render = catalog.db.backend.render
    with catalog.db.engine.connect() as c:
        # the table's row exists before any reservation locks it (a concurrent insert loses the race harmlessly)
        if c.execute(sa.select(scopes.c.table_name).where(scopes.c.table_name == key)).first() is None:
            try:
                c.execute(scopes.insert().values(table_name=key, at=now))
            except sa.exc.IntegrityError:
                pass
        # the engine runs in autocommit: this transaction is opened and ended explicitly
        c.exec_driver_sql(render(exp.Transaction()))
        try:
            c.execute(scopes.update().where(scopes.c.table_name == key).values(at=now))
            q = sa.select(sa.func.coalesce(sa.func.sum(spends.c.epsilon), 0.0)).where(
                spends.c.table_name == key, spends.c.at >= since)
            if dp.epsilon.per == "client":
                q = q.where(spends.c.client == client[:200])
            spent = float(c.execute(q).scalar_one())
            budget = dp.epsilon.budget
            if spent + epsilon > budget * (1 + 1e-9):
                who = f"client {client}" if dp.epsilon.per == "client" else "all clients together"
                raise ReleaseRefused(f"privacy budget exhausted: {table}'s ε budget is {budget:g} per "
                                     f"{_window(dp.epsilon.window)} for {who}; {spent:g} is spent and this query "
                                     f"needs {epsilon:g} (nothing ran)")
            c.execute(spends.insert().values(at=now, client=client[:200], table_name=key, epsilon=epsilon,
                                             delta=delta))
            c.exec_driver_sql(render(exp.Commit()))
        except BaseException:
            c.exec_driver_sql(render(exp.Rollback()))
            raise
    return Spent(spent + epsilon, budget)


def spent(catalog: Catalog, windows: dict[str, int], client: str | None = None) -> list[dict[str, Any]]:
    """What each client spent on each table: queries and ε within the table's window (``windows``:
    table → seconds, from the policy; all time where the policy names none), newest spend first."""
    s = catalog.t.dp_spends
    q = sa.select(s.c.client, s.c.table_name, s.c.at, s.c.epsilon, s.c.delta)
    if client is not None:
        q = q.where(s.c.client == client)
    now = _now()
    out: dict[tuple[str, str], dict[str, Any]] = {}
    with catalog.db.engine.connect() as c:
        for who, table, at, eps, delta in c.execute(q.order_by(s.c.at.desc())):
            window = windows.get(table)
            row = out.setdefault((who, table), {"client": who, "table": table, "queries": 0, "epsilon": 0.0,
                                                "delta": 0.0, "last": at, "window_seconds": window})
            if window is not None and at < now - dt.timedelta(seconds=window):
                continue
            row["queries"] += 1
            row["epsilon"] += float(eps)
            row["delta"] += float(delta)
    return sorted(out.values(), key=lambda r: (r["client"], r["table"]))
