"""The cyclic collector's full collections held off while a run builds and sends its statements.

A run makes tens of thousands of sqlglot nodes, and every node points to its parent: cycles,
which only the cyclic collector frees. Young collections free most of them as they are made,
but enough outlive two young collections to bring on full collections over every object the
process holds (~130,000 after the imports): Adult, Mondrian k=5 on PostgreSQL, 65-70 of
140-150 ms of the client's CPU per query (mean of 6 warm queries, load 8). So while a run goes
on, the oldest generation's threshold is out of reach: young collections go on (the run's
garbage is freed as it is made, and an answer's fetched tuples are looked at while in cache),
full ones wait until the run ends. Turning the collector off instead saved as much CPU but kept
every cycle of the run until its end (global recoding on Adult at k=10: 146 -> 195 MB peak).

Only a run in the main thread holds them off (the library called from a program): the proxy's
runs overlap in worker threads, where the hold might never end; other threads' full
collections wait at most until the main thread's run ends. A collector the program turned off
stays off. Nor where the process froze what it held (gc.freeze: the CLI), whose full
collections are cheap.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

#: the oldest generation's threshold during a run: young collections between full ones
_OUT_OF_REACH = 1 << 30

_depth = 0  # the main thread's runs in progress (a run may start another: the catalog's)
_thresholds = gc.get_threshold()  # as the program had them when the outermost run began


@contextmanager
def paused() -> Iterator[None]:
    global _depth, _thresholds
    if threading.current_thread() is not threading.main_thread() or gc.get_freeze_count() or \
            not gc.isenabled():
        yield
        return
    if _depth == 0:
        _thresholds = gc.get_threshold()
        gc.set_threshold(_thresholds[0], _thresholds[1], _OUT_OF_REACH)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            gc.set_threshold(*_thresholds)
