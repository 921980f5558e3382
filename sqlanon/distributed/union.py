"""A horizontally partitioned table (the second case of Nielsen et al.): one table's rows in two
databases, ``SELECT … FROM a.t UNION ALL SELECT … FROM b.t``, anonymized as one release.

Both parties generalize with the same hierarchies, one shared level vector at a time. Their
classes must be compared across databases without a label leaving either: each party sends, per
row, a keyed hash of its labels (HMAC under the query's key, backends/keyed_hash.py) — equal
labels, equal hash, in both databases — and, for t and l, a keyed hash of the sensitive value.
The client judges the union's classes on these (synchronize.py) and places each row at the
finest vector where its class passes (local recoding along the chain, as d2pt.py). Each party
then generalizes its own released rows and sends them; the client shuffles the two parts into
one answer and verifies it on its rows alone.
"""
from __future__ import annotations

import math
import secrets
from typing import Any

import numpy as np

from sqlanon.distributed import synchronize as sync
from sqlanon.distributed.d2pt import Answer, Report, _describe, _stage
from sqlanon.distributed.party import RN, Party
from sqlanon.distributed.query import UnionAll
from sqlanon.distributed.verify import measure
from sqlanon.errors import QueryRejected, ReleaseRefused
from sqlanon.policy.model import Overrides, Requirement
from sqlanon.verify.noise import noisy


def _same(a: object, b: object) -> bool:
    """Two hierarchies generalize alike (their files may lie apart)."""
    return type(a) is type(b) and {k: v for k, v in vars(a).items() if k != "source"} == {
        k: v for k, v in vars(b).items() if k != "source"}


def requirement(parties: list[Party], overrides: Overrides) -> Requirement:
    """The union's requirement: the stricter of the two tables' (k, t, l, suppression)."""
    a, b = (p.policy for p in parties)
    released = set(parties[0].side.columns)
    for column in released:
        qa, qb = a.qi(column), b.qi(column)
        sa_ = {s.column for s in a.sensitive}, {s.column for s in b.sensitive}
        if (qa is None) != (qb is None) or (column in sa_[0]) != (column in sa_[1]):
            raise QueryRejected("union of differently protected columns across databases",
                                f"{column}: the two tables' policies give it different roles")
        if qa is not None and qb is not None and not _same(qa.hierarchy, qb.hierarchy):
            raise QueryRejected("union of differently generalized columns across databases",
                                f"{column}: the two tables' policies give it different hierarchies")
    if overrides.method not in (None, "d2pt") or overrides.alpha is not None:
        raise QueryRejected("α-deassociation across databases" if overrides.alpha is not None
                            else f"method {overrides.method} across databases")
    ra, rb = a.requirement, b.requirement
    t = l = None  # noqa: E741
    for r in (ra, rb):
        if r.alpha is not None and r.alpha.attribute in released:
            raise QueryRejected("α-deassociation across databases", "D2Pt guarantees k, t and l")
        if r.t is not None and r.t.attribute in released:
            if t is not None and (t.attribute, t.distance) != (r.t.attribute, r.t.distance):
                raise QueryRejected("t-closeness of two attributes across databases")
            t = r.t if t is None or r.t.value < t.value else t
        if r.l is not None and r.l.attribute in released:
            if l is not None and (l.attribute, l.variant) != (r.l.attribute, r.l.variant):
                raise QueryRejected("l-diversity of two attributes across databases")
            l = r.l if l is None or r.l.value > l.value else l  # noqa: E741
    sensitive = tuple(s for s in a.sensitive if s.column in released)
    req = Requirement(k=max(ra.k, rb.k), t=t, l=l, max_suppression=min(ra.max_suppression, rb.max_suppression))
    req = req.tightened(Overrides(overrides.k, None, overrides.l, overrides.t, None), sensitive)
    if req.t is not None and req.t.distance not in ("equal", "variational"):
        raise QueryRejected(f"{req.t.distance} t-closeness over a union across databases",
                            "the parties compare values by keyed hashes, which keep no order: use the equal distance")
    if req.l is not None and req.l.variant == "recursive":
        raise QueryRejected("recursive (c,l)-diversity across databases", "use distinct or entropy l")
    return req


def run(ua: UnionAll, parties: list[Party], overrides: Overrides) -> Answer:
    for p in parties:
        p.check()
    if not parties[0].qis:
        raise QueryRejected("union without quasi-identifiers across databases",
                            "release at least one quasi-identifier, or query each database alone")
    req = requirement(parties, overrides)
    timings: dict[str, float] = {}
    key = secrets.token_bytes(32)  # for this query's label and value hashes; never stored
    with _stage(timings, "pushdown", parties):
        for p in parties:
            p.pushdown(None)
    with _stage(timings, "synchronize", parties):
        attribute = req.t.attribute if req.t is not None else req.l.attribute if req.l is not None else None
        sensitive = None
        if attribute is not None:
            sensitive = np.concatenate([sync.as_numbers(p.hashes(None, attribute, key)) for p in parties])
        sizes = [p.rows for p in parties]
        if sum(sizes) < req.k:
            raise ReleaseRefused(f"the union holds fewer than k={req.k} rows: nothing can be released")
        rows = sum(sizes)
        everyone = sync.Join(np.arange(rows), np.arange(rows), np.arange(rows))
        qis = parties[0].qis
        levels = [{q.column: 0 for q in qis}]
        classes = [np.concatenate([sync.as_numbers(p.hashes(levels[0], None, key)) for p in parties])]
        budget = math.floor(req.max_suppression * rows)
        reference: np.ndarray | None = None
        for _ in range(4):
            step = np.full(rows, -1, dtype=np.int64)
            i = 0
            while (step < 0).any():
                if i == len(levels):
                    if not _next(parties, levels, classes, key):
                        break
                open_ = step < 0
                _, of_row = np.unique(classes[i], return_inverse=True)
                verdict = sync.judge(of_row, int(of_row.max(initial=-1)) + 1, everyone, req.k, sensitive,
                                     keep=open_, reference=reference, t=req.t, l=req.l)
                step[open_ & ~verdict.failing[of_row]] = i
                i += 1
            kept = step >= 0
            if int((~kept).sum()) > budget:
                raise ReleaseRefused("the union's rows fail the requirement in more rows than max_suppression "
                                     f"{req.max_suppression:.1%} allows, even with every quasi-identifier at its root: "
                                     "nothing was released")
            if (reference is None and kept.all()) or (reference is not None and np.array_equal(kept, reference)):
                break
            reference = kept
    del key
    with _stage(timings, "fragment", parties):
        out: list[tuple[Any, ...]] = []
        offset = 0
        for p, n in zip(parties, sizes):
            mine = step[offset:offset + n]
            chosen = np.nonzero(mine >= 0)[0]
            keep = p.keep([(int(r) + 1, int(mine[r])) for r in chosen], (RN, "v"))
            out += p.released_rows(levels, sorted({int(v) for v in mine[chosen]}), keep)
            offset += n
        order = np.random.default_rng(secrets.randbits(128)).permutation(len(out))
        released = [out[j] for j in order.tolist()]
    with _stage(timings, "verify", parties):
        columns = list(parties[0].side.columns)
        qi_at = [j for j, c in enumerate(columns) if parties[0].policy.qi(c) is not None]
        checks = measure(released, qi_at, columns.index(attribute) if attribute is not None else None,
                         req.k, req.t, req.l)
    failed = [c for c in checks if not c["ok"]]
    if failed:
        raise ReleaseRefused(f"the union's release fails {failed[0]['criterion']}: {failed[0]['measured']}")
    per_level: dict[str, dict[str, int]] = {}
    counts = np.bincount(step[step >= 0], minlength=len(levels)).tolist()
    for q in qis:
        hist: dict[str, int] = {}
        for s_, n in enumerate(counts):
            if n:
                name = f"{levels[s_][q.column]} ({q.hierarchy.describe(levels[s_][q.column])})"
                hist[name] = hist.get(name, 0) + n
        per_level[q.column] = hist
    report = Report(
        method="d2pt",
        rule=f"one table in two databases ({parties[0].name}, {parties[1].name}: UNION ALL, horizontally "
             f"partitioned) → D2Pt, released as one; {len(levels)} level vector(s) synchronized",
        requirement=_describe(req), rows_released=len(released), rows_withheld=noisy(rows - len(released)),
        classes=len({tuple(r[j] for j in qi_at) for r in released}), levels=per_level, checks=checks,
        parties={p.name: {"sent": p.sent, "received": p.received, "statements": len(p.ctx.statements)}
                 for p in parties},
        seconds=timings,
        notes=["classes were compared across the databases by keyed hashes of their labels (a key new for this "
               "query, never stored): no label or value went from one database to the other"])
    return Answer(list(ua.names), released, report)


def _next(parties: list[Party], levels: list[dict[str, int]], classes: list[np.ndarray], key: bytes) -> bool:
    """One quasi-identifier one level up in both parties (the most labels in either, Datafly);
    False at the root."""
    current = levels[-1]
    best: tuple[int, str] | None = None
    for q in parties[0].qis:
        if current[q.column] < q.hierarchy.height:
            n = sum(p.distinct(current)[q.column] for p in parties)
            if best is None or n > best[0]:
                best = (n, q.column)
    if best is None:
        return False
    new = dict(current)
    new[best[1]] += 1
    levels.append(new)
    classes.append(np.concatenate([sync.as_numbers(p.hashes(new, None, key)) for p in parties]))
    return True
