"""The search over the lattice of column sets for minimal (nearly) unique combinations.

After Grunert & Heuer (2014), "Big Data und der Fluch der Dimensionalität: Die effiziente Suche
nach Quasi-Identifikatoren in hochdimensionalen Daten" (GvD 2014). A combination *singles out*
a row when no other row has the same values on it (a sample unique). It is **unique** when it
singles out every row (its distinct count equals the row count), **nearly unique** when it
singles out at least ``threshold`` of the rows; both are called *qualifying* below. Adding a
column only splits classes, so a row singled out stays singled out:

- a superset of a qualifying combination qualifies, and is not minimal: never measured;
- a subset of a non-qualifying combination does not qualify.

The search goes up level by level (apriori): a combination of size k+1 is a candidate only when
all its k-subsets were found not to qualify. Before measuring a candidate, an upper bound on
its classes — a subset's classes times the distinct values of the added column — is compared
with the rows it must single out: a combination that cannot form that many classes cannot
qualify and is settled without a query. Every other candidate is measured by ``measure``; the
candidates of one level do not depend on each other, so ``prefetch`` may measure them all at
once (several statements at a time) before ``measure`` is asked for each.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

Combination = tuple[str, ...]


@dataclass(frozen=True)
class Measure:
    classes: int
    #: rows singled out (alone in their class)
    uniques: int
    #: measured on the whole table (False: on the random sample, where it did not qualify)
    exact: bool = True
    #: rows the measurement read (the table's, or the sample's)
    rows: int = 0


@dataclass
class Lattice:
    rows: int
    threshold: float
    #: minimal qualifying combinations, with their exact measures
    found: dict[Combination, Measure]
    #: every combination measured (qualifying or not)
    measured: dict[Combination, Measure]
    #: candidates settled by the bound on their classes, without a query
    bounded: int

    def qualifies(self, m: Measure) -> bool:
        return m.uniques >= needed(self.rows, self.threshold)


def needed(rows: int, threshold: float) -> int:
    """Rows a combination must single out to qualify."""
    return rows if threshold >= 1 else math.ceil(threshold * rows - 1e-9)


def search(columns: list[str], rows: int, distinct: dict[str, int], measure: Callable[[Combination], Measure], *,
           threshold: float = 0.95, max_size: int = 4,
           prefetch: Callable[[list[Combination]], None] | None = None) -> Lattice:
    """``distinct``: each column's number of distinct values (NULL one of them), exact.
    ``prefetch``: told each level's candidates that will be measured, before the first is."""
    need = needed(rows, threshold)
    found: dict[Combination, Measure] = {}
    measured: dict[Combination, Measure] = {}
    bounded = 0
    #: upper bounds on the classes of the non-qualifying combinations of the last level
    level: dict[Combination, int] = {}
    for size in range(1, max_size + 1):
        if size == 1:
            candidates: dict[Combination, int] = {(c,): min(rows, distinct[c]) for c in columns}
        else:
            candidates = {}
            order = {c: i for i, c in enumerate(columns)}
            for base in level:
                for c in columns[order[base[-1]] + 1:]:
                    cand = base + (c,)
                    subsets = [cand[:i] + cand[i + 1:] for i in range(size)]
                    if all(s in level for s in subsets):
                        candidates[cand] = min(rows, *(level[s] * distinct[cand[i]] for i, s in enumerate(subsets)))
        nxt: dict[Combination, int] = {}
        if prefetch is not None:
            prefetch([cand for cand, bound in candidates.items() if bound >= need])
        for cand, bound in candidates.items():
            if bound < need:
                nxt[cand] = bound
                bounded += 1
                continue
            m = measure(cand)
            measured[cand] = m
            if m.exact and m.uniques >= need:
                found[cand] = m
            else:
                nxt[cand] = m.classes if m.exact else bound
        level = nxt
        if not level:
            break
    return Lattice(rows, threshold, found, measured, bounded)


def all_combinations(columns: list[str], max_size: int) -> int:
    """The size of the lattice searched (for the report)."""
    return sum(math.comb(len(columns), k) for k in range(1, min(max_size, len(columns)) + 1))

