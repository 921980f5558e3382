"""Distributed two-party t-closeness, D2Pt (Nielsen, Janusz, Taeschner, Freytag, BTW 2015;
John's thesis §3.4 and the decision algorithm's branch for joins over several databases,
Abbildung 23), on top of DPP2GA's loop: anonymizer, synchronizer, fragmenter.

1. Anonymizer: each party pushes its selection into a temp table of its own database, the join
   key replaced by its pseudonym (HMAC-SHA-256 under a key drawn for this query, held by the
   client only: backends/keyed_hash.py), and generalizes its own quasi-identifiers there, one
   full-domain level vector at a time, over its cells (each distinct combination once); it tells
   the client only an opaque class number per cell, and each row's cell once.
2. Synchronizer (synchronize.py, in the client): joins the two pseudonym columns, forms the
   classes of the joined rows from both sides' class numbers, and judges them (k rows and k
   persons, t, l) with the sensitive attribute as codes. The chain of level vectors runs from
   the raw values to the root, one quasi-identifier one level up per step, in Datafly's order
   (the most labels, as DPP2GA), generalized by the party that holds it; each joined row is
   released at the finest vector where its class, among the rows not placed finer, passes every
   model (local recoding along the chain); rows that pass nowhere are withheld within
   max_suppression, else the answer is refused.
3. Fragmenter: the quasi-identifiers' party receives the released class numbers per vector and
   returns their labels (the paper's GID table), the values' party receives the released row
   numbers and returns their sensitive and insensitive values (one bulk insert each); the
   client merges them by the class pair into joined rows, in random order.
The release is then measured again on its rows alone (verify.py); any failure refuses it.
"""
from __future__ import annotations

import math
import secrets
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from sqlanon.distributed import synchronize as sync
from sqlanon.distributed.party import Party
from sqlanon.distributed.query import CrossJoin
from sqlanon.distributed.verify import measure
from sqlanon.errors import PolicyError, QueryRejected, ReleaseRefused
from sqlanon.policy.model import Overrides, Requirement, Sensitive
from sqlanon.verify.noise import noisy

#: bytes of the per-query HMAC key
KEY_BYTES = 32


@dataclass
class Report:
    """What a cross-database release tells: the guarantee, what moved, and how long it took."""

    method: str
    rule: str
    requirement: dict[str, Any]
    rows_released: int
    #: the joined rows withheld, with noise (an answer counts exactly only what it releases)
    rows_withheld: int
    classes: int
    levels: dict[str, dict[str, int]]
    checks: list[dict[str, Any]]
    #: per database: bytes it sent to the client, bytes it received, statements
    parties: dict[str, dict[str, int]]
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def bytes_to_client(self) -> int:
        return sum(p["sent"] for p in self.parties.values())

    @property
    def bytes_to_databases(self) -> int:
        return sum(p["received"] for p in self.parties.values())

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["bytes_to_client"], d["bytes_to_databases"] = self.bytes_to_client, self.bytes_to_databases
        return d

    def __str__(self) -> str:
        lines = [f"method: {self.method} — {self.rule}", f"requirement: {self.requirement}",
                 f"rows released: {self.rows_released} in {self.classes} class(es); withheld: about "
                 f"{self.rows_withheld}", "levels: " + ", ".join(f"{c} {d}" for c, d in self.levels.items())]
        lines += [f"{'ok ' if c['ok'] else 'FAIL'} {c['criterion']}: {c['measured']}" for c in self.checks]
        lines += [f"{name}: sent {p['sent']} B to the client, received {p['received']} B, {p['statements']} "
                  "statement(s); nothing to or from the other database" for name, p in self.parties.items()]
        lines.append("seconds: " + ", ".join(f"{s} {v:.3f}" for s, v in self.seconds.items()))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass
class Answer:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    report: Report


def requirement(parties: list[Party], overrides: Overrides) -> tuple[Requirement, int | None, Sensitive | None]:
    """The joined release's requirement: the stricter of the two tables' k and suppression
    limit, t and l of the one party whose sensitive attribute the query releases; and that
    party's index and attribute."""
    reqs = [p.policy.requirement for p in parties]
    if overrides.method not in (None, "d2pt"):
        raise QueryRejected(f"method {overrides.method} across databases", "a cross-database join is answered by d2pt")
    if overrides.alpha is not None:
        raise QueryRejected("α-deassociation across databases", "D2Pt guarantees k, t and l")
    holder: int | None = None
    t = l = None  # noqa: E741
    for i, (p, r) in enumerate(zip(parties, reqs)):
        if r.alpha is not None and r.alpha.attribute in p.side.columns:
            raise QueryRejected("α-deassociation across databases", f"{p.name}.{p.side.table}.{r.alpha.attribute}: "
                                "D2Pt guarantees k, t and l")
        for model in (r.t, r.l):
            if model is not None and model.attribute in p.side.columns:
                if holder not in (None, i):
                    raise QueryRejected("sensitive attributes of both parties across databases",
                                        "t and l judge one sensitive attribute; release the other party's apart")
                holder = i
        if holder == i:
            t, l = (r.t if r.t is not None and r.t.attribute in p.side.columns else None,  # noqa: E741
                    r.l if r.l is not None and r.l.attribute in p.side.columns else None)
    if holder is None:  # an override of t or l judges the first released sensitive attribute
        holder = next((i for i, p in enumerate(parties) for s in p.policy.sensitive if s.column in p.side.columns),
                      None)
    sensitive = tuple(s for s in parties[holder].policy.sensitive if s.column in parties[holder].side.columns
                      ) if holder is not None else ()
    req = Requirement(k=max(r.k for r in reqs), t=t, l=l, max_suppression=min(r.max_suppression for r in reqs))
    req = req.tightened(Overrides(overrides.k, None, overrides.l, overrides.t, None), sensitive)
    if req.t is not None and req.t.distance == "hierarchical":
        raise QueryRejected("hierarchical t-closeness across databases", "use the equal or ordered distance")
    if req.l is not None and req.l.variant == "recursive":
        raise QueryRejected("recursive (c,l)-diversity across databases", "use distinct or entropy l")
    attribute = req.t.attribute if req.t is not None else req.l.attribute if req.l is not None else None
    if attribute is None:
        return req, None, None
    assert holder is not None
    found = next((s for s in sensitive if s.column == attribute), None)
    if found is None:
        raise PolicyError(f"{attribute} is not a released sensitive attribute", table=parties[holder].side.table)
    return req, holder, found


@contextmanager
def _stage(timings: dict[str, float], name: str, parties: list[Party]) -> Iterator[None]:
    t0 = time.perf_counter()
    stacks = [p.ctx.in_stage(name) for p in parties]
    for s in stacks:
        s.__enter__()
    try:
        yield
    finally:
        for s in stacks:
            s.__exit__(None, None, None)
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0


def run(cj: CrossJoin, parties: list[Party], overrides: Overrides) -> Answer:
    """Anonymize the join of the two parties' selections with D2Pt (the steps above)."""
    for p in parties:
        p.check()
    req, holder, attribute = requirement(parties, overrides)
    timings: dict[str, float] = {}
    key = secrets.token_bytes(KEY_BYTES)
    with _stage(timings, "pushdown", parties):
        for p in parties:
            p.pushdown(key)
    del key  # the pseudonyms are made; nobody needs the key again
    with _stage(timings, "synchronize", parties):
        joined = sync.join(*(sync.as_numbers(p.pseudonyms()) for p in parties))
        sensitive = None
        if holder is not None and attribute is not None:
            codes = np.asarray(parties[holder].codes(attribute.column, attribute.kind == "numeric"), dtype=np.int64)
            sensitive = codes[joined.left if holder == 0 else joined.right]
        if len(np.unique(joined.person)) < req.k:
            raise ReleaseRefused(f"the join holds fewer than k={req.k} persons: nothing can be released")
        chain = Chain(parties)
        budget = math.floor(req.max_suppression * len(joined))
        reference: np.ndarray | None = None
        for _ in range(4):  # the whole distribution t compares with is the release's: settle it
            step = _assign(chain, joined, req, sensitive, reference)
            kept = step >= 0
            if int((~kept).sum()) > budget:
                raise ReleaseRefused("the joined rows fail the requirement in more rows than max_suppression "
                                     f"{req.max_suppression:.1%} allows, even with every quasi-identifier at its root: "
                                     "nothing was released")
            if (reference is None and kept.all()) or (reference is not None and np.array_equal(kept, reference)):
                break
            reference = kept
    with _stage(timings, "fragment", parties):
        chosen = np.nonzero(kept)[0]
        order = chosen[np.random.default_rng(secrets.randbits(128)).permutation(len(chosen))]
        rows_of = [joined.left[order], joined.right[order]]
        vector = [chain.vector[step[order], i] for i in range(2)]
        labels: list[dict[tuple[int, int], tuple]] = [{}, {}]
        values: list[dict[int, tuple]] = [{}, {}]
        classes = [[int(chain.classes[i][v][r]) for v, r in zip(vector[i].tolist(), rows_of[i].tolist())]
                   for i in range(2)]
        for i, p in enumerate(parties):
            if p.qis:  # the released classes per vector: the party learns no row of them
                needed: dict[int, set[int]] = {}
                for v, c in zip(vector[i].tolist(), classes[i]):
                    needed.setdefault(v, set()).add(c)
                labels[i] = p.released_labels(chain.levels[i], {v: sorted(cs) for v, cs in needed.items()})
            if p.per_row:
                values[i] = p.released_values(np.unique(rows_of[i]))
        rows = _merge(cj, parties, rows_of, vector, classes, labels, values)
    columns = [name for _, _, name in cj.output]
    with _stage(timings, "verify", parties):
        qi = [j for j, (s, c, _) in enumerate(cj.output) if parties[s].policy.qi(c) is not None]
        at = next((j for j, (s, c, _) in enumerate(cj.output) if attribute is not None and s == holder
                   and c == attribute.column), None)
        checks = measure(rows, qi, at, req.k, req.t, req.l)
    failed = [c for c in checks if not c["ok"]]
    if failed:
        raise ReleaseRefused(f"the joined release fails {failed[0]['criterion']}: {failed[0]['measured']}")
    report = Report(
        method="d2pt",
        rule=f"a join over several databases ({parties[0].name}, {parties[1].name}) → D2Pt (distributed "
             f"t-closeness; John's thesis, Abbildung 23); {len(chain.vector)} level vector(s) synchronized",
        requirement=_describe(req), rows_released=len(rows), rows_withheld=noisy(len(joined) - len(rows)),
        classes=len({(int(s_), a, b) for s_, a, b in zip(step[order].tolist(), classes[0], classes[1])}),
        levels=_levels(parties, chain, step[order]), checks=checks,
        parties={p.name: {"sent": p.sent, "received": p.received, "statements": len(p.ctx.statements)}
                 for p in parties},
        seconds=timings,
        notes=["the join key left neither database: only its keyed pseudonyms (HMAC-SHA-256, a key new for this "
               "query and dropped after the pushdown) went to the client; no database received anything of the "
               "other"])
    return Answer(columns, rows, report)


class Chain:
    """Level vectors from the raw values to the root, one quasi-identifier one level up per
    step in Datafly's order (the most labels first), each party's class numbers pulled once per
    vector of its own, when a step first needs them."""

    def __init__(self, parties: list[Party]):
        self.parties = parties
        #: per party: its level vectors, and its rows' class numbers at each
        self.levels: list[list[dict[str, int]]] = [[{q.column: 0 for q in p.qis}] for p in parties]
        self.classes: list[list[np.ndarray]] = [[_local(p, lv[0])] for p, lv in zip(parties, self.levels)]
        #: per step: each party's vector index
        self.vector = np.zeros((1, 2), dtype=np.int64)
        self._joined: dict[int, tuple[np.ndarray, int]] = {}

    def has(self, step: int) -> bool:
        """Whether ``step`` exists (made now if it is the next one); False beyond the root."""
        if step < len(self.vector):
            return True
        current = [lv[-1] for lv in self.levels]
        choice = _most_labels(self.parties, current)
        if choice is None:
            return False
        side, column = choice
        new = dict(current[side])
        new[column] += 1
        self.levels[side].append(new)
        self.classes[side].append(_local(self.parties[side], new))
        row = self.vector[-1].copy()
        row[side] = len(self.levels[side]) - 1
        self.vector = np.vstack([self.vector, row])
        return True

    def local(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        return self.classes[0][self.vector[step, 0]], self.classes[1][self.vector[step, 1]]

    def joined_classes(self, step: int, joined: sync.Join) -> tuple[np.ndarray, int]:
        """The joined rows' classes at ``step`` (computed once: the release's distribution may
        be settled in several passes over the chain)."""
        if step not in self._joined:
            self._joined[step] = sync.classes(joined, *self.local(step))
        return self._joined[step]


def _assign(chain: Chain, joined: sync.Join, req: Requirement, sensitive: np.ndarray | None,
            reference: np.ndarray | None) -> np.ndarray:
    """Each joined row's step: the finest level vector at which its class, among the rows not
    placed at a finer one, passes every model (local recoding along the chain); -1: none, even
    at the root — withheld. Released classes are these classes (labels of different levels
    differ, and a union of passing classes passes: k adds up, a mixture is as close as its parts)."""
    step = np.full(len(joined), -1, dtype=np.int64)
    i = 0
    while (step < 0).any() and chain.has(i):
        open_ = step < 0
        of_row, n = chain.joined_classes(i, joined)
        verdict = sync.judge(of_row, n, joined, req.k, sensitive, keep=open_, reference=reference, t=req.t, l=req.l)
        step[open_ & ~verdict.failing[of_row]] = i
        i += 1
    return step


def _levels(parties: list[Party], chain: Chain, step: np.ndarray) -> dict[str, dict[str, int]]:
    """Released rows per level of each quasi-identifier."""
    counts = np.bincount(step, minlength=len(chain.vector))
    out: dict[str, dict[str, int]] = {}
    for i, p in enumerate(parties):
        for q in p.qis:
            per: Counter[int] = Counter()
            for s_, n in enumerate(counts.tolist()):
                if n:
                    per[chain.levels[i][chain.vector[s_, i]][q.column]] += n
            out[f"{p.name}.{p.side.table}.{q.column}"] = {f"{lv} ({q.hierarchy.describe(lv)})": n
                                                          for lv, n in sorted(per.items())}
    return out


def _local(p: Party, levels: dict[str, int]) -> np.ndarray:
    """A party's class numbers per row (one class where it releases no quasi-identifier)."""
    if not p.qis:
        return np.zeros(p.rows, dtype=np.int64)
    return np.asarray(p.classes(levels), dtype=np.int64)


def _most_labels(parties: list[Party], levels: list[dict[str, int]]) -> tuple[int, str] | None:
    """Datafly's choice: the quasi-identifier with the most labels at its level, below its root."""
    best: tuple[int, int, str] | None = None
    for i, p in enumerate(parties):
        open_ = {q.column for q in p.qis if levels[i][q.column] < q.hierarchy.height}
        if not open_:
            continue
        for column, n in p.distinct(levels[i]).items():
            if column in open_ and (best is None or n > best[0]):
                best = (n, i, column)
    return None if best is None else (best[1], best[2])


def _merge(cj: CrossJoin, parties: list[Party], rows_of: list[np.ndarray], vector: list[np.ndarray],
           classes: list[list[int]], labels: list[dict[tuple[int, int], tuple]],
           values: list[dict[int, tuple]]) -> list[tuple[Any, ...]]:
    """The fragmenter's merge: each joined row from its two parts, its quasi-identifiers by class
    (the level vector and class number: the paper's GID), the rest by row."""
    getters = []
    for s, c, _ in cj.output:
        p = parties[s]
        qi = [q.column for q in p.qis]
        getters.append((s, True, qi.index(c)) if c in qi else (s, False, p.per_row.index(c)))
    rows = [rows_of[0].tolist(), rows_of[1].tolist()]
    vec = [vector[0].tolist(), vector[1].tolist()]
    out = []
    for j in range(len(rows[0])):
        out.append(tuple(labels[s][(vec[s][j], classes[s][j])][c] if by_class else values[s][rows[s][j] + 1][c]
                         for s, by_class, c in getters))
    return out


def _describe(req: Requirement) -> dict[str, Any]:
    d: dict[str, Any] = {"k": req.k, "persons": req.k}
    if req.t is not None:
        d["t"] = {"value": req.t.value, "attribute": req.t.attribute, "distance": req.t.distance}
    if req.l is not None:
        d["l"] = {"value": req.l.value, "attribute": req.l.attribute, "variant": req.l.variant}
    d["max_suppression"] = req.max_suppression
    return d

