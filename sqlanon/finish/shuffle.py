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

import importlib
import random
import sys
import threading
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


def prepare(statement: exp.Query, rows: int | None) -> threading.Thread | None:
    """Import numpy in a thread of its own where the answer to ``statement`` (the caller's) will
    likely be ``rows`` (the selection's size, known while the database still anonymizes it)
    read whole and shuffled with numpy: the import then overlaps the database's work instead
    of delaying the answer. Safe beside the run's thread on Python 3.11: numpy's import builds
    no syntax tree, which the race of CPython gh-106905 needs in two threads at once
    (sqlanon.proxy.server.preload). A grouped, ordered or limited answer is not expected large."""
    if rows is None or rows < NUMPY_ROWS or "numpy" in sys.modules or not isinstance(statement, exp.Select) \
            or any(statement.args.get(a) for a in ("order", "limit", "offset", "group")):
        return None
    thread = threading.Thread(target=_import_numpy, name="sqlanon-numpy", daemon=True)
    thread.start()
    return thread


def _import_numpy() -> None:
    try:
        importlib.import_module("numpy")
    except Exception:  # noqa: BLE001, S110 - ``shuffled`` imports it again and tells why it fails
        pass


def shuffled(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``rows`` in a uniformly random order (Fisher–Yates: numpy's generator seeded from the
    operating system for a large answer, the random module's otherwise)."""
    if len(rows) < max(NUMPY_ROWS, 2):
        random.shuffle(rows)
        return rows
    import numpy as np  # here: 0.2 s of import that a small answer should not pay

    # shuffled as an array of the row objects: Fisher–Yates moves their pointers, and the list
    # is made again in one pass (1 M fetched rows: 0.19 s, where taking them through a
    # permutation's indices, itemgetter(*perm)(rows), cost 0.49 s)
    held = np.fromiter(rows, dtype=object, count=len(rows))
    np.random.default_rng().shuffle(held)
    return held.tolist()
