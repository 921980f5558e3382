"""The bounds global recoding prunes its lattice with (anonymize/lattice.py, global_recoding.py):
checked against the scores they bound on random domains, hierarchies nested or not, and any
withholding or release at the root within the limit."""
from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.anonymize.lattice import Domain, kl_bound, kl_sum


@st.composite
def domains(draw: st.DrawFn) -> tuple[list[Domain], int]:
    """One to three quasi-identifiers, each with a few values and, per level below the root,
    any grouping of them into labels (not necessarily coarser level by level)."""
    total = 0
    out = []
    counts_per_qi = []
    for _ in range(draw(st.integers(1, 3))):
        counts_per_qi.append(draw(st.lists(st.integers(1, 30), min_size=1, max_size=6)))
    total = sum(counts_per_qi[0])
    for counts in counts_per_qi:
        # every quasi-identifier describes the same rows: scale its counts to the first's total
        scaled = [max(1, c * total // sum(counts)) for c in counts]
        scaled[0] += total - sum(scaled)
        if scaled[0] < 1:
            scaled = [total]
        values = dict(enumerate(scaled))
        height = draw(st.integers(1, 3))
        value_labels = [{v: v for v in values}] + [
            {v: draw(st.integers(0, len(values) - 1)) for v in values} for _ in range(height - 1)]
        labels = []
        for lv in range(height):
            rows, members = Counter(), Counter()
            for v, n in values.items():
                rows[value_labels[lv][v]] += n
                members[value_labels[lv][v]] += 1
            labels.append({c: (rows[c], 1.0, members[c]) for c in rows})
        out.append(Domain(height, labels, float(len(values)), values, value_labels, [[] for _ in range(height)]))
    return out, total


@settings(max_examples=150, deadline=None)
@given(data=domains(), seed=st.randoms(use_true_random=False))
def test_kl_bound_is_below_every_node_above(data, seed):
    ds, total = data
    bound = kl_bound(ds, total)
    lattice = list(itertools.product(*[range(d.height + 1) for d in ds]))
    for low in lattice:
        floor = bound(low)
        for node in (n for n in lattice if all(a >= b for a, b in zip(n, low))):
            # none, a little or any withholding per label, and any of those rows released at
            # the root instead
            share = seed.choice([0, 10, 1])
            per_label = []
            for d, lv in zip(ds, node):
                labels = d.labels[lv] if lv < d.height else {0: (total, 1.0, len(d.values))}
                per_label.append({c: seed.randint(0, n // share) if share else 0 for c, (n, _, _) in labels.items()})
            withheld = min(sum(p.values()) for p in per_label)
            rooted = seed.randint(0, withheld)
            assert floor <= kl_sum(ds, node, total, per_label, rooted) + 1e-9, (low, node)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3).filter(any), min_size=1, max_size=6),
       t=st.sampled_from([0.05, 0.2, 0.5]))
def test_a_class_failing_t_forces_its_share_of_failing_rows_below(parts, t):
    """GlobalRecoding._beyond: a class at distance d > t from q has, at any node below, at least
    size · (d − t) / (1 − t) rows in parts farther than t from q."""
    q = [0.5, 0.3, 0.2]

    def distance(c: list[int]) -> float:
        return 0.5 * sum(abs(n / sum(c) - x) for n, x in zip(c, q))

    whole = [sum(p[i] for p in parts) for i in range(3)]
    size, d = sum(whole), distance(whole)
    failing = sum(sum(p) for p in parts if distance(p) > t)
    if d > t:
        assert failing >= size * (d - t) / (1 - t) - 1e-9
