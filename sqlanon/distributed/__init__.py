"""Several databases under one name each: ``sqlanon.connect({"clinic": url1, "lab": url2}, policy)``.

A query that reads one database's tables is that database's session's (the flow as ever). A
join of two databases' tables is anonymized with D2Pt (d2pt.py): each database anonymizes its
own part inside itself, and neither receives anything from the other; what reaches the client
is the join key's pseudonyms, class numbers and value codes, then the release. Every other
query over two databases is refused by name (query.py).

The policy names a table by its database: ``clinic.patients``; a table without one belongs to
the only database there is.
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any, Iterator

from sqlglot import exp

from sqlanon.backends.faults import translated
from sqlanon.context import RunContext
from sqlanon.distributed import query as q
from sqlanon.distributed import union
from sqlanon.distributed.d2pt import Answer, run
from sqlanon.distributed.party import Party
from sqlanon.errors import PolicyError, QueryRejected, ReleaseRefused, SqlanonError
from sqlanon.finish.stream import BATCH
from sqlanon.policy import Policy, load_policy
from sqlanon.policy.model import Overrides


class Batches:
    """A cross-database answer as a stream (``Session.stream``'s shape): columns, report, rows
    a batch at a time."""

    def __init__(self, answer: Answer, size: int):
        self.columns, self.report, self.size = answer.columns, answer.report, size
        self._rows = iter(answer.rows)

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        return list(islice(self._rows, size or self.size))

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return self._rows

    def __enter__(self) -> "Batches":
        return self

    def __exit__(self, *_: Any) -> None:
        self._rows = iter(())


def split_policy(policy: Policy, names: frozenset[str]) -> dict[str, Policy]:
    """One policy per database, its tables named as that database spells them."""
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for key, tp in policy.tables.items():
        prefix, _, rest = key.partition(".")
        if rest and prefix in names:
            out[prefix][rest] = replace(tp, table=tp.table.split(".", 1)[1])
        elif len(names) == 1:
            out[next(iter(names))][key] = tp
        else:
            raise PolicyError(f"name the table's database: one of {', '.join(sorted(names))}, as "
                              f"{sorted(names)[0]}.{key}", table=tp.table)
    return {n: Policy(tables=t, source=policy.source) for n, t in out.items()}


class Federation:
    """Sessions of several databases; ``execute`` answers within one of them or across two."""

    def __init__(self, sessions: dict[str, Any]):
        #: database name → its Session (sqlanon.api)
        self.sessions = sessions
        #: database name → the temp tables the last cross-database answer made there (all
        #: dropped when it returned or raised)
        self.last_temp_tables: dict[str, list[str]] = {}

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.sessions)

    def execute(self, sql: str, *, k: int | None = None, alpha: float | None = None, l: int | None = None,  # noqa: E741
                t: float | None = None, method: str | None = None, **kw: Any) -> Any:
        """The answer of ``sql``: a flow Result from one database, or a D2Pt Answer across two."""
        tree = q.parse(sql)
        named = q.databases(tree, self.names)
        if len(named) <= 1:
            name = self._one(named)
            s = self.sessions[name]
            return s.execute(s.db.backend.render(self._own(sql, name)), k=k, alpha=alpha, l=l, t=t, method=method,
                             **kw)
        return self._across(sql, tree, Overrides(k, alpha, l, t, method))

    def stream(self, sql: str, **kw: Any) -> Any:
        """``Session.stream`` for one database's query; across two, the verified release (held
        in the client: the fragmenter merges it there) handed out a batch at a time."""
        tree = q.parse(sql)
        named = q.databases(tree, self.names)
        if len(named) <= 1:
            name = self._one(named)
            s = self.sessions[name]
            return s.stream(s.db.backend.render(self._own(sql, name)), **kw)
        asked = Overrides(kw.get("k"), kw.get("alpha"), kw.get("l"), kw.get("t"), kw.get("method"))
        return Batches(self._across(sql, tree, asked), kw.get("size") or BATCH)

    def explain(self, sql: str, **kw: Any) -> Any:
        """``Session.explain`` for one database's query; a cross-database join is not explained
        (its statements depend on the synchronizer's answers): run it, its report tells."""
        return self._explained("explain", sql, kw)

    def explanation(self, sql: str, **kw: Any) -> Any:
        """``Session.explanation`` (the CLI's), as ``explain``."""
        return self._explained("explanation", sql, kw)

    def _explained(self, how: str, sql: str, kw: dict[str, Any]) -> Any:
        tree = q.parse(sql)
        named = q.databases(tree, self.names)
        if len(named) > 1:
            raise QueryRejected("explain across databases", "run the query: its report lists what each database "
                                "sent and received")
        name = self._one(named)
        s = self.sessions[name]
        return getattr(s, how)(s.db.backend.render(self._own(sql, name)), **kw)

    def _own(self, sql: str, name: str) -> exp.Expression:
        """``sql`` as its one database reads it: parsed again in that database's dialect (its
        quoting), the federation's qualifier removed."""
        return q.strip(q.parse(sql, self.sessions[name].db.backend.dialect), name)

    def _one(self, named: set[str]) -> str:
        if not named and len(self.sessions) > 1:
            raise QueryRejected("table without a database name", f"name each table's database "
                                f"({', '.join(sorted(self.names))}): database.table")
        return next(iter(named or self.names))

    def _across(self, sql: str, tree: Any, overrides: Overrides) -> Answer:
        from sqlanon.api import NO_CATALOG  # api imports this package: not at module level

        t0 = time.perf_counter()
        sessions = []
        self.last_temp_tables = {}
        try:
            cj: q.CrossJoin | q.UnionAll = q.union_all(tree, self.names) if isinstance(
                tree, exp.Union) else q.cross_join(tree, self.names)
            sessions = [self.sessions[s.database] for s in cj.sides]
            logged = sorted(side.database for side, s in zip(cj.sides, sessions) if s.catalog is not None)
            if logged:
                # the catalog's defences (differencing, consistency across releases) compare the
                # answers of one database; a cross-database answer would slip past them
                raise QueryRejected("cross-database join of a database with a release log",
                                    f"{', '.join(logged)} keeps sqlanon's catalog, whose defences across queries "
                                    "do not cover answers over several databases; connect with catalog=False "
                                    "only where no such defence is required")
            with ExitStack() as stack:
                parties = []
                for side, s in zip(cj.sides, sessions):
                    tp = s.policy.for_table(side.table)
                    if tp is None:
                        raise QueryRejected("cross-database join with an unprotected table",
                                            f"{side.database}.{side.table}: the policy must describe both tables")
                    stack.enter_context(translated(s.db.backend))
                    created: list[str] = []
                    self.last_temp_tables[side.database] = created
                    ctx = stack.enter_context(RunContext(s.db, created=created))
                    parties.append(Party(side.database, s.db, tp, side, ctx))
                answer = union.run(cj, parties, overrides) if isinstance(cj, q.UnionAll) else run(
                    cj, parties, overrides)
                answer.report.notes.append(NO_CATALOG)
        except SqlanonError as e:
            decision = "rejected" if isinstance(e, QueryRejected) else "refused" if isinstance(
                e, ReleaseRefused) else "error"
            for s in sessions or self.sessions.values():
                s.record(sql, decision, message=e.message, seconds=time.perf_counter() - t0, failing=True)
            raise
        for s, side in zip(sessions, cj.sides):
            s.record(sql, "anonymized", table=side.table, method="d2pt", seconds=time.perf_counter() - t0,
                     rows=len(answer.rows))
        return answer

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()

    def __enter__(self) -> "Federation":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def connect(urls: dict[str, str], policy: str | Path | dict | Policy, *, reader_role: str | dict[str, str],
            **kw: Any) -> Federation:
    """Open every database of ``urls`` (name → SQLAlchemy URL) with its share of ``policy``;
    ``reader_role``: one for all, or one per name."""
    from sqlanon import api

    if not urls:
        raise PolicyError("no database named")
    names = frozenset(n.lower() for n in urls)
    if len(names) != len(urls) or any(not n.isidentifier() for n in names):
        raise PolicyError("database names are distinct identifiers (clinic, lab, …)")
    policies = split_policy(load_policy(policy), names)
    sessions: dict[str, Any] = {}
    try:
        for name, url in urls.items():
            role = reader_role[name] if isinstance(reader_role, dict) else reader_role
            sessions[name.lower()] = api.connect(url, policies[name.lower()], reader_role=role, **kw)
    except BaseException:
        for s in sessions.values():
            s.close()
        raise
    return Federation(sessions)
