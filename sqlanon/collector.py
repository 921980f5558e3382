"""The cyclic garbage collector paused while a run builds and sends its statements.

A run makes tens of thousands of sqlglot nodes, and every node points to its parent: cycles,
which only the cyclic collector frees. With it on, they outlived young collections, were
promoted, and brought on full collections over every object the process holds (~130,000 after
the imports): Adult, Mondrian k=5 on PostgreSQL, 65-70 of 140-150 ms of the client's CPU per
query (mean of 6 warm queries, load 8). Paused, the run's garbage is collected once, young, when
it ends: 30-40 ms, the client's CPU 90-105 ms.

Only a run in the main thread pauses it (the library called from a program): the proxy's runs
overlap in worker threads, where a pause might never end; other threads' garbage waits at most
until the main thread's run ends. A collector the program turned off stays off. Nor where the
process froze what it held (gc.freeze: the CLI), whose full collections are then cheap: there
the one large young collection cost more than the frequent small ones (cache misses).
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_depth = 0  # the main thread's runs in progress (a run may start another: the catalog's)


@contextmanager
def paused() -> Iterator[None]:
    global _depth
    if threading.current_thread() is not threading.main_thread() or gc.get_freeze_count() or \
            (_depth == 0 and not gc.isenabled()):
        yield
        return
    _depth += 1
    gc.disable()
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            gc.enable()  # the next allocation collects the young objects: the run's garbage


@contextmanager
def resumed() -> Iterator[None]:
    """The collector on again, inside a paused run, while the answer's rows are made: a young
    collection then looks at each fetched tuple once, soon after it was made (in cache), and
    untracks it (it holds only values). Left to the one young collection at the run's end, the
    same look at a million tuples spread over a gigabyte cost 0.6-0.8 s of the client's CPU
    (1 M rows, PostgreSQL: the answer's rows 1.6 -> 2.2-2.4 s)."""
    if _depth == 0 or gc.isenabled() or threading.current_thread() is not threading.main_thread():
        yield
        return
    gc.enable()
    try:
        yield
    finally:
        gc.disable()
