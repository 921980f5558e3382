"""The order in which method ``local`` visits the lattice (anonymize/local_recoding.py)."""
from __future__ import annotations

import itertools

from sqlanon.anonymize.local_recoding import lattice_order


def test_every_node_least_generalized_first_root_last():
    heights = [4, 3, 2, 1, 1, 2]  # Adult's six QIs
    nodes = lattice_order(heights)
    assert sorted(nodes) == sorted(itertools.product(*[range(h + 1) for h in heights])) and len(nodes) == 720
    assert nodes[0] == (0,) * 6 and nodes[-1] == tuple(heights)
    weights = [sum(lv / h for lv, h in zip(n, heights)) for n in nodes[:-1]]
    assert weights == sorted(weights)


def test_a_large_lattice_is_cut_to_its_lowest_nodes_and_the_root():
    heights = [4] * 10  # 5^10 nodes
    nodes = lattice_order(heights, limit=100)
    assert len(nodes) == len(set(nodes)) == 100 and nodes[-1] == (4,) * 10
    sums = [sum(n) for n in nodes[:-1]]
    # all 66 nodes at most two levels up, then 33 of the 220 three levels up
    assert sums == sorted(sums) and sums.count(0) + sums.count(1) + sums.count(2) == 66 and sums[-1] == 3


def test_an_attribute_without_levels_stays_at_its_root():
    assert lattice_order([0, 1]) == [(0, 0), (0, 1)]
