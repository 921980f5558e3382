"""A whole answer's random order, made where its rows end up.

Every answer comes in random order (unsorted matching, Sweeney 2002: pushdown/fragment.py's
``remainder`` orders it by ``RAND()``). When that random order is the statement's only ORDER BY,
no LIMIT or OFFSET reads it, and the caller takes every row at once (``execute``), the database
would sort every row only for the client to hold them all anyway: at 1 M rows that sort is
0.8 s of the server's CPU before the first row is sent, against 0.2 s of the client's for a
permutation of the fetched list here, 0.4 s with numpy's import (benchmarks/README.md). The
order stays uniformly random and stays in the answer — the release is stored as the method wrote
it, and the caller never sees another order.
A streamed answer (one batch held at a time) and a sample (LIMIT) keep the database's order.
"""
from __future__ import annotations

import random
from operator import itemgetter
from typing import Any

from sqlglot import exp

#: from this many rows numpy's permutation (0.2 s for 1 M rows, and 0.1-0.2 s to import numpy)
#: beats ``random.shuffle`` (0.45 s for 1 M rows); below it, a small answer does not pay the import
NUMPY_ROWS = 200_000


def unordered(statement: exp.Expression) -> exp.Select | None:
    """``statement`` without its random order, where the client may make that order instead
    (``shuffled``); None where the database must: another order, a LIMIT, an OFFSET."""
    if not isinstance(statement, exp.Select) or any(statement.args.get(a) for a in ("limit", "offset", "locks")):
        return None
    order = statement.args.get("order")
    keys = [k.this if isinstance(k, exp.Ordered) else k for k in order.expressions] if order is not None else []
    if len(keys) != 1 or not isinstance(keys[0], exp.Rand):
        return None
    out = statement.copy()
    out.set("order", None)
    return out


def shuffled(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``rows`` in a uniformly random order (Fisher–Yates: numpy's generator seeded from the
    operating system for a large answer, the random module's otherwise)."""
    if len(rows) < max(NUMPY_ROWS, 2):
        random.shuffle(rows)
        return rows
    import numpy as np  # here: 0.2 s of import that a small answer should not pay

    return list(itemgetter(*np.random.default_rng().permutation(len(rows)).tolist())(rows))
