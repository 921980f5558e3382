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
failing node tags by the rows that fail k or distinct l alone (Outcome.monotone).

The metrics with suppression are not monotone, so every node that may beat the best found is
evaluated; the order and the cut-off come from a lower bound computed without the database, the
generalization part of the metric alone (ARX's lower bound for its loss): nodes in ascending
order of the bound, and the search stops at the first node whose bound is no better than the
best node found. Withheld rows only add loss, so no node skipped could have been better.

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
    #: rows of the classes that fail the models monotone with suppression (k, distinct l): where
    #: they exceed the limit, so do a predecessor's; None: ``withheld``
    monotone: int | None = None

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


def lower_bound(metric: str, domains: list[Domain], node: tuple[int, ...], total: int) -> float:
    """The metric's generalization part alone: no node at or above ``node`` scores less, and
    suppression only adds to it. 0 where no such bound is known (kl, discernibility)."""
    if metric == "loss":
        return arx_loss(arx_loss_parts(domains, node, total, 0, [0.0] * len(domains)))
    if metric == "entropy":
        return entropy(domains, node, total, [{} for _ in domains])
    return 0.0


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
           tag: bool = True) -> Search:
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
    # without a bound every node within the limit must be scored, so the lattice is walked
    # from the top: a node that fails there tags its whole down-set, never evaluated
    down = all(b == 0 for b in bounds.values())
    ordered = sorted(all_nodes, key=lambda n: (bounds[n], -sum(n) if down else sum(n), n))
    for i, node in enumerate(ordered):
        if bounds[node] >= result.score:
            result.pruned_bound = len(ordered) - i
            break
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
