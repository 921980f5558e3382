"""D2Pt's synchronizer without a database: the join of pseudonym columns, class verdicts
against a plain-Python count, and the HMAC the databases spell out."""
from __future__ import annotations

import hashlib
import hmac
import random
from collections import Counter, defaultdict

import numpy as np

from sqlanon.backends.keyed_hash import pads, pseudonym
from sqlanon.distributed import synchronize as sync
from sqlanon.policy.model import Closeness


def test_join_is_the_inner_join_many_to_many():
    rng = random.Random(3)
    left = [rng.randrange(30) for _ in range(200)]
    right = [rng.randrange(40) for _ in range(150)]
    joined = sync.join(np.array(left, dtype=np.uint64), np.array(right, dtype=np.uint64))
    got = Counter(zip(joined.left.tolist(), joined.right.tolist()))
    want = Counter((i, j) for i, a in enumerate(left) for j, b in enumerate(right) if a == b)
    assert got == want and all(left[i] == right[j] for i, j in got)


def test_pseudonyms_as_numbers():
    assert sync.as_numbers(["00000000000000ff", "8000000000000000"]).tolist() == [255, 2**63]


def test_verdicts_match_a_plain_count():
    rng = random.Random(5)
    n = 500
    person = np.arange(n, dtype=np.uint64)
    joined = sync.join(person, person)
    cls_a = np.array([rng.randrange(8) for _ in range(n)])
    cls_b = np.array([rng.randrange(3) for _ in range(n)])
    values = np.array([rng.choice([1, 1, 1, 2, 3]) for _ in range(n)])
    of_row, m = sync.classes(joined, cls_a, cls_b)
    t = Closeness(0.1, "v", "equal")
    verdict = sync.judge(of_row, m, joined, 20, values[joined.right], t=t)
    groups: dict[tuple, Counter] = defaultdict(Counter)
    for a, b in zip(joined.left.tolist(), joined.right.tolist()):
        groups[(cls_a[a], cls_b[b])][values[b]] += 1
    whole = Counter(values.tolist())
    for j, (a, b) in enumerate(zip(joined.left.tolist(), joined.right.tolist())):
        c = groups[(cls_a[a], cls_b[b])]
        size = sum(c.values())
        emd = 0.5 * sum(abs(c[v] / size - whole[v] / n) for v in whole)
        failing = size < 20 or emd > 0.1 + 1e-9
        assert verdict.failing[of_row[j]] == failing


def test_hmac_pads_are_rfc_2104():
    key = bytes(range(32))
    inner, outer = pads(key)
    msg = "Zürich".encode()
    spelled = hashlib.sha256(outer + hashlib.sha256(inner + msg).digest()).hexdigest()[:16]
    assert spelled == hmac.new(key, msg, hashlib.sha256).hexdigest()[:16] == pseudonym(key, "Zürich")
