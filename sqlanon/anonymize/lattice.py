"""The generalization lattice of full-domain recoding, searched for the node of least loss.

A node gives every quasi-identifier one level (0 = the value, ``height`` = the root). The
models global recoding builds — k-anonymity and distinct l-diversity, each class that fails
withheld within the suppression limit — are monotone along the lattice (Samarati 2001; Kohlmayer
et al., "Flash: efficient, stable and optimal k-anonymity", 2012, ARX's ``FLASHAlgorithm``):
a class of a more general node is a union of classes below it, so it fails only if all of its
parts fail, and a node's suppressed rows never exceed those of a node below it. Hence predictive
tagging: a node that meets the limit makes every successor meet it (``satisfied``), a node that
fails makes every predecessor fail (``failed``), which is never evaluated. α-deassociation is
monotone without suppression but not with it (a class above may fail as a whole where only one
of its parts failed below, and withhold more rows), and neither is t-closeness; with α or t a
failing node tags by the rows that every node below must suppress (Outcome.monotone: those
failing k or distinct l, and a share of those failing t).

The metrics with suppression are not monotone, so every node that may beat the best found is
evaluated, but for those a lower bound computed without the database rules out: no node at or
above a node scores less than the node's bound (lower_bound: the generalization part alone for
ARX's loss and the entropy, ARX's bound for its loss; kl_bound for KL). Nodes go in ascending
order of the bound, or from the top where the bound is loose (``down``: failing nodes then tag
the most), and a node whose bound exceeds the best score found is skipped unevaluated.

This module holds the search and the scores, in Python over the few numbers per node that the
database returns (anonymize/global_recoding.py asks it, one GROUP BY per evaluated node).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Domain:
    """One quasi-identifier's distribution in the selection, per level below the root: for
    each label code its rows and its domain share (ARX: the share of the hierarchy's leaves
    below the label), and the domain's size (ARX: the hierarchy's leaves)."""

    height: int
    #: level → code → (rows, share, values of the selection below the label)
    labels: list[dict[int, tuple[int, float, int]]]
    size: float
    #: value code (level 0) → rows: the selection's distribution of original values
    values: dict[int, int]
    #: level → value code → label code
    value_labels: list[dict[int, int]]
    #: level → the label codes that read as the root's label below the root
    roots: list[list[int]]


@dataclass
class Outcome:
    """What the database measured of one node."""

    withheld: int
    generalized: int
    classes: int
    dm: int
    #: per quasi-identifier: Σ over withheld rows of their label's domain share
    shares: list[float]
    #: per quasi-identifier: label code → withheld rows (for kl and entropy; else empty)
    per_label: list[dict[int, int]] = field(default_factory=list)
    #: rows of the failing classes released with every quasi-identifier at the root instead of
    #: withheld (t-closeness, as ARX releases suppressed rows): counted in ``generalized``;
    #: ``withheld``, ``shares`` and ``per_label`` still describe them as they would be withheld
    rooted: int = 0
    #: rows that every node below must suppress (the classes failing k or distinct l, a share
    #: of those failing t: GlobalRecoding._beyond): where they exceed the limit, a predecessor
    #: fails too; None: ``withheld``
    monotone: float | None = None

    @property
    def suppressed(self) -> int:
        """Withheld and released at the root, as sqlanon (and ARX) count suppression."""
        return self.withheld + self.generalized


def nodes(heights: list[int]) -> list[tuple[int, ...]]:
    return list(itertools.product(*[range(h + 1) for h in heights]))


def arx_loss_parts(domains: list[Domain], node: tuple[int, ...], total: int, withheld: int,
                   shares: list[float]) -> list[float]:
    """ARX's loss per quasi-identifier (MetricMDNMLoss, generalization/suppression factor 0.5):
    Σ over released rows of their label's domain share plus 1 per withheld row, normalized
    between every row at level 0 (T / domain size) and every row at the root (T)."""
    out = []
    for d, lv, u in zip(domains, node, shares):
        generalized = total if lv == d.height else sum(n * s for n, s, _ in d.labels[lv].values())
        low = total / d.size if d.size else 0.0
        value = generalized - u + withheld
        out.append(max((value - low) / (total - low), 0.0) if total > low else 0.0)
    return out


def arx_loss(parts: list[float]) -> float:
    """ARX's default aggregate: the geometric mean of 1 + loss, minus 1 (weights all 1)."""
    if not parts:
        return 0.0
    return math.prod(1.0 + p for p in parts) ** (1.0 / len(parts)) - 1.0


def kl_sum(domains: list[Domain], node: tuple[int, ...], total: int, per_label: list[dict[int, int]],
           rooted: int = 0) -> float:
    """sqlanon's KL measure (metrics/kl_divergence.py) of the release at this node: per
    quasi-identifier, each label's released rows spread evenly over the selection's values below
    it; D normalized by the values' entropy, summed over the quasi-identifiers. ``rooted``: the
    rows of ``per_label`` are released at the root (spread over every value), not withheld."""
    out = 0.0
    for d, lv, withheld in zip(domains, node, per_label):
        if lv == d.height:
            released = {0: (total - sum(withheld.values()) + rooted, len(d.values))}
            label_of = {v: 0 for v in d.values}
        else:
            released = {c: (n - withheld.get(c, 0), m) for c, (n, _, m) in d.labels[lv].items()}
            label_of = d.value_labels[lv]
        everywhere = rooted / total / len(d.values) if lv < d.height and d.values else 0.0
        entropy = -sum(n / total * math.log2(n / total) for n in d.values.values() if n)
        div = 0.0
        for v, n in d.values.items():
            rows, covered = released.get(label_of.get(v, -1), (0, 1))
            share = max(rows, 0) / total / covered + everywhere
            if share <= 0:
                return math.inf
            div += n / total * math.log2((n / total) / share)
        out += max(div, 0.0) / entropy if entropy > 0 else max(div, 0.0)
    return out


def entropy(domains: list[Domain], node: tuple[int, ...], total: int, per_label: list[dict[int, int]]) -> float:
    """Non-uniform entropy (ARX's MetricMDNUEntropy, after de Waal & Willenborg): per row and
    quasi-identifier log2 of (rows of the selection under its released label) / (rows with its
    value); a withheld row counts as released at the root."""
    out = 0.0
    for d, lv, withheld in zip(domains, node, per_label):
        own = sum(n * math.log2(n) for n in d.values.values() if n)
        if lv == d.height:
            out += total * math.log2(total) - own if total else 0.0
            continue
        w = sum(withheld.values())
        out += sum((n - withheld.get(c, 0)) * math.log2(n) for c, (n, _, _) in d.labels[lv].items() if n) \
            + (w * math.log2(total) if w else 0.0) - own
    return out


def kl_floor(d: Domain, lv: int, total: int) -> float:
    """A floor under one quasi-identifier's term of kl_sum at level ``lv``, whatever the node
    withholds or releases at the root: the divergence from the selection's distribution p of
    its projection p̂ onto the level's labels (each label's rows spread evenly over its values).

    kl_sum gives value v the mass q_v = (n_L − w_L) / (T m_L) + R / (T |V|) of its label L (n_L
    rows over m_L values, w_L of them withheld, R rows released at the root; at the root level
    (T − W + R) / (T |V|)): q is constant on every label and sums to s ≤ 1. For such a q,
    D(p‖q) = Σ_L p(L) log2(p(L) / Q(L)) + Σ_v p_v log2(p_v m_L / p(L)) with Q(L) = Σ_{v∈L} q_v;
    the second sum is D(p‖p̂) and the first is a divergence of distributions over the labels
    less log2 s ≥ 0 (Gibbs). kl_sum clips a term at 0 and normalizes it by p's entropy: so
    does this."""
    if lv == d.height:
        labels = {0: (total, len(d.values))}
        label_of = {v: 0 for v in d.values}
    else:
        labels = {c: (n, m) for c, (n, _, m) in d.labels[lv].items()}
        label_of = d.value_labels[lv]
    entropy = -sum(n / total * math.log2(n / total) for n in d.values.values() if n)
    div = 0.0
    for v, n in d.values.items():
        rows, covered = labels.get(label_of.get(v, -1), (0, 1))
        if not n:
            continue
        if rows <= 0:
            return math.inf
        div += n / total * math.log2((n / total) / (rows / total / max(covered, 1)))
    return max(div, 0.0) / entropy if entropy > 0 else max(div, 0.0)


def kl_bound(domains: list[Domain], total: int) -> Callable[[tuple[int, ...]], float]:
    """A lower bound of kl_sum at every node at or above a node, for the search to prune with.
    kl_sum is a sum of one term per quasi-identifier, and the nodes at or above a node are every
    combination of levels at or above its own, so the least sum over them is the sum over the
    quasi-identifiers of the least floor (kl_floor) at the levels at or above the node's. Where
    every level's labels group the level's below (a taxonomy), the floor never falls as the
    level rises (the chain rule: D(p‖p̂') − D(p‖p̂) is a divergence between the distributions
    over the finer labels), so this is the node's own floor; the minimum keeps it sound for
    hierarchies whose levels are not nested."""
    least = []
    for d in domains:
        floors = [kl_floor(d, lv, total) for lv in range(d.height + 1)]
        least.append([min(floors[lv:]) for lv in range(d.height + 1)])
    return lambda node: sum(m[lv] for m, lv in zip(least, node))


def lower_bound(metric: str, domains: list[Domain], total: int) -> Callable[[tuple[int, ...]], float]:
    """A bound under the metric at every node at or above a node, for ``search``: for ARX's loss
    and the entropy their generalization part alone (it never falls as levels rise, and
    suppression only adds to it); for KL kl_bound. 0 for discernibility, whose suppression
    part can fall as levels rise (fewer classes fail)."""
    # each quasi-identifier's part depends on its level alone: computed once per level, not
    # once per node (720 nodes on Adult took 0.1-0.2 s)
    if metric == "loss":
        parts = [[arx_loss_parts([d], (lv,), total, 0, [0.0])[0] for lv in range(d.height + 1)] for d in domains]
        return lambda node: arx_loss([p[lv] for p, lv in zip(parts, node)])
    if metric == "entropy":
        terms = [[entropy([d], (lv,), total, [{}]) for lv in range(d.height + 1)] for d in domains]
        return lambda node: sum(t[lv] for t, lv in zip(terms, node))
    if metric == "kl":
        return kl_bound(domains, total)
    return lambda node: 0.0


@dataclass
class Search:
    """The search's record, for the release notes and ``explain``."""

    best: tuple[int, ...] | None = None
    score: float = math.inf
    outcome: Outcome | None = None
    evaluated: int = 0
    pruned_failed: int = 0
    pruned_bound: int = 0
    total: int = 0
    seconds: float = 0.0

    def describe(self, names: list[str]) -> str:
        chosen = ", ".join(f"{n} {lv}" for n, lv in zip(names, self.best)) if self.best is not None else "none"
        return (f"global recoding: lattice of {self.total} nodes, {self.evaluated} evaluated in the database, "
                f"{self.pruned_failed} pruned by predictive tagging (a node above them failed), "
                f"{self.pruned_bound} by the lower bound of the metric; chosen levels: {chosen}; "
                f"score {self.score:.4f}; {self.seconds:.3f} s")


def search(heights: list[int], bound: Callable[[tuple[int, ...]], float],
           evaluate: Callable[[tuple[int, ...]], tuple[bool, float, Outcome]], limit: float,
           tag: bool = True, down: bool = False) -> Search:
    """The node of least score among those that meet the models within the limit.
    ``evaluate(node)`` → (meets the models within the limit, score, outcome). Ties go to the
    lower node, then to the lower levels in attribute order. Only withheld rows beyond
    ``limit`` tag a node's predecessors: rows released at the root count as suppressed too, but
    only where every quasi-identifier is at the root, which a lower node need not be. ``tag``:
    whether failing nodes tag their predecessors (the models are monotone with suppression)."""
    import time

    t0 = time.perf_counter()
    all_nodes = nodes(heights)
    result = Search(total=len(all_nodes))
    failed: set[tuple[int, ...]] = set()
    bounds = {n: bound(n) for n in all_nodes}
    # ascending bounds stop the search at the first node no better than the best found; from
    # the top (``down``) a failing node tags its whole down-set, never evaluated, and the bound
    # still skips every node that cannot win
    ordered = sorted(all_nodes, key=lambda n: (-sum(n), n) if down else (bounds[n], sum(n), n))
    for node in ordered:
        if bounds[node] > result.score:  # equal: the node may tie, and ties go to the lower node
            result.pruned_bound += 1
            continue
        if node in failed:
            result.pruned_failed += 1
            continue
        ok, score, outcome = evaluate(node)
        result.evaluated += 1
        if not ok:
            beyond = outcome.withheld if outcome.monotone is None else outcome.monotone
            if tag and beyond > max(limit, 0):
                failed.update(p for p in itertools.product(*[range(lv + 1) for lv in node]))
            continue
        # an infinite KL is still a node within the limit; ties go to the lower node
        if result.best is None or (score, sum(node), node) < (result.score, sum(result.best), result.best):
            result.best, result.score, result.outcome = node, score, outcome
    result.seconds = time.perf_counter() - t0
    return result
