"""D2Pt's synchronizer: the classes of the joined rows from both parties' local classes.

It sees, per party and row, the pseudonym of the join key and an opaque class number, and for
the party with the sensitive attribute a code per value: no label, no value. The joined rows are
the pairs of rows with one pseudonym; a joined row's class is the pair of its local classes (the
"equalized" classes of Nielsen et al.: both parties' generalizations agree on it). A class
passes when it holds k rows and k persons (pseudonyms: a person with many matches must not form
a class alone), and, where asked, its sensitive distribution is within t of the release's
(Earth Mover's Distance, equal or ordered ground distance) and l-diverse (distinct or entropy).
Written with NumPy: a million joined rows are a few vector operations, not a Python loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sqlanon.policy.model import Closeness, Diversity

#: EMD is floating point; a class exactly at t passes (as criteria/t_closeness.py)
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Join:
    """The joined rows as index pairs into the parties' row orders, and each one's person."""

    left: np.ndarray
    right: np.ndarray
    person: np.ndarray

    def __len__(self) -> int:
        return len(self.left)

    @cached_property
    def one_per_person(self) -> bool:
        """Every person has one joined row: persons are counted as rows."""
        return len(np.unique(self.person)) == len(self.person)


def as_numbers(pseudonyms: list[str]) -> np.ndarray:
    """16 hex digits each → unsigned 64-bit integers (one conversion, no Python loop)."""
    if not pseudonyms:
        return np.zeros(0, dtype=np.uint64)
    return np.frombuffer(bytes.fromhex("".join(pseudonyms)), dtype=">u8").astype(np.uint64)


def join(left: np.ndarray, right: np.ndarray) -> Join:
    """Every pair of a left and a right row with one pseudonym (an inner join, many to many)."""
    keys, inverse = np.unique(np.concatenate([left, right]), return_inverse=True)
    cl, cr = inverse[:len(left)], inverse[len(left):]
    nl, nr = np.bincount(cl, minlength=len(keys)), np.bincount(cr, minlength=len(keys))
    ol, orr = np.argsort(cl, kind="stable"), np.argsort(cr, kind="stable")
    sl, sr = np.cumsum(nl) - nl, np.cumsum(nr) - nr
    per = nl * nr
    common = np.nonzero(per)[0]
    counts = per[common]
    person = np.repeat(common, counts)
    j = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    width = nr[person]
    return Join(ol[sl[person] + j // width], orr[sr[person] + j % width], person)


@dataclass(frozen=True)
class Classes:
    """The joined rows' classes at one vector of levels, and which of them fail."""

    #: each joined row's class (0 … n-1)
    of_row: np.ndarray
    sizes: np.ndarray
    persons: np.ndarray
    #: classes that fail a model
    failing: np.ndarray

    def failing_rows(self) -> np.ndarray:
        return self.failing[self.of_row]


def classes(joined: Join, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, int]:
    """Each joined row's class from its two local classes; and the number of classes."""
    key = left[joined.left].astype(np.int64) * (int(right.max(initial=0)) + 1) + right[joined.right]
    _, of_row = np.unique(key, return_inverse=True)
    return of_row, int(of_row.max(initial=-1)) + 1


def judge(of_row: np.ndarray, n: int, joined: Join, k: int, sensitive: np.ndarray | None,
          keep: np.ndarray | None = None, reference: np.ndarray | None = None, t: Closeness | None = None,
          l: Diversity | None = None) -> Classes:  # noqa: E741
    """The classes' sizes and verdicts, over the joined rows ``keep`` selects (all by default);
    ``sensitive``: each joined row's value code. t compares with the distribution of the rows
    ``reference`` selects (all by default): the whole release."""
    keep = np.ones(len(of_row), dtype=bool) if keep is None else keep
    reference = np.ones(len(of_row), dtype=bool) if reference is None else reference
    rows = of_row[keep]
    sizes = np.bincount(rows, minlength=n)
    if joined.one_per_person:
        persons = sizes
    else:
        people = np.unique(rows.astype(np.int64) * (int(joined.person.max(initial=0)) + 1) + joined.person[keep])
        persons = np.bincount(people // (int(joined.person.max(initial=0)) + 1), minlength=n)
    failing = (sizes < k) | (persons < k)
    if sensitive is not None and (t is not None or l is not None):
        domain = np.unique(sensitive[keep | reference])
        m = len(domain)
        code = np.searchsorted(domain, sensitive[keep])
        whole = np.bincount(np.searchsorted(domain, sensitive[reference]), minlength=m) / max(int(reference.sum()), 1)
        if t is not None:
            failing |= _distance(rows, code, n, m, sizes, whole, t.distance) > t.value + TOLERANCE
        if l is not None:
            failing |= ~_diverse(rows, code, n, m, sizes, l)
    failing &= sizes > 0
    return Classes(of_row, sizes, persons, failing)


def _distance(rows: np.ndarray, code: np.ndarray, n: int, m: int, sizes: np.ndarray, whole: np.ndarray,
              distance: str) -> np.ndarray:
    """Each class's EMD from the whole distribution ``whole`` (a share per value code)."""
    pairs, counts = np.unique(rows.astype(np.int64) * m + code, return_counts=True)
    cls, val = pairs // m, pairs % m
    share = counts / np.maximum(sizes[cls], 1)
    if distance in ("equal", "variational"):
        # ½ Σ|p − q| = ½ (Σ_{v in E} (|p − q| − q) + 1): values absent from a class add q
        return 0.5 * (np.bincount(cls, np.abs(share - whole[val]) - whole[val], minlength=n) + 1)
    if m < 2:
        return np.zeros(n)
    out = np.zeros(n)
    step = max(1, 4_000_000 // m)  # classes per block of the dense matrix
    for lo in range(0, n, step):
        inside = (cls >= lo) & (cls < lo + step)
        block = np.zeros((min(step, n - lo), m))
        block[cls[inside] - lo, val[inside]] = share[inside]
        out[lo:lo + len(block)] = np.abs(np.cumsum(block - whole, axis=1))[:, :-1].sum(axis=1) / (m - 1)
    return out


def _diverse(rows: np.ndarray, code: np.ndarray, n: int, m: int, sizes: np.ndarray, l: Diversity  # noqa: E741
             ) -> np.ndarray:
    pairs, counts = np.unique(rows.astype(np.int64) * m + code, return_counts=True)
    cls = pairs // m
    if l.variant == "distinct":
        return np.bincount(cls, minlength=n) >= l.value
    p = counts / np.maximum(sizes[cls], 1)
    entropy = np.bincount(cls, -p * np.log(p), minlength=n)
    return entropy >= np.log(l.value) - TOLERANCE
