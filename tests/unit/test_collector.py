"""The cyclic collector is paused while a run in the main thread builds its statements, and
comes back as it was (sqlanon.collector)."""
from __future__ import annotations

import gc
import subprocess
import sys
import threading

import pytest

import sqlanon
from sqlanon import collector
from tests.helpers import load_table


@pytest.fixture(autouse=True)
def collecting():
    was, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.unfreeze()  # a server started in this process by an earlier test froze what it held
    yield
    (gc.enable if was else gc.disable)()
    gc.set_threshold(*thresholds)


def held() -> bool:
    """Whether full collections are held off (young ones go on)."""
    return gc.isenabled() and gc.get_threshold()[2] >= 1 << 30


def test_held_in_the_main_thread_and_back_after_nested_runs():
    before = gc.get_threshold()
    with collector.paused():
        assert held() and gc.get_threshold()[:2] == before[:2]
        with collector.paused():
            assert held()
        assert held()  # the outer run still goes on
    assert gc.get_threshold() == before


def test_back_after_a_failed_run():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("refused")
    assert gc.get_threshold() == before and gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off():
    gc.disable()
    before = gc.get_threshold()
    with collector.paused():
        assert not gc.isenabled() and gc.get_threshold() == before
    assert not gc.isenabled()


def test_worker_threads_and_frozen_processes_keep_collecting():
    seen = []

    def work():
        with collector.paused():
            seen.append(held())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    gc.freeze()
    try:
        with collector.paused():
            seen.append(held())
    finally:
        gc.unfreeze()
    assert seen == [False, False]


def test_a_run_holds_full_collections_and_frees_its_garbage_as_it_goes(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    load_table(url, "t", [("age", "int"), ("s", "text")], [(a, "ab"[a % 2]) for a in range(8)])
    policy = {"tables": {"t": {"quasi_identifiers": {"age": {"type": "interval", "levels": [2, 4, 8]}},
                               "sensitive": {"s": {}}, "privacy": {"method": "mondrian", "k": 2}}}}
    seen = []
    before = gc.get_threshold()
    young = gc.get_stats()[0]["collections"]
    with sqlanon.connect(url, policy, unrestricted=True) as db:
        db.execute("SELECT age, s FROM t", progress=lambda stage: seen.append(held()))
        during = gc.get_stats()[0]["collections"]
    assert seen and all(seen)  # every stage, the answer's included
    assert during > young  # young collections went on: the run's cycles freed as they were made
    assert gc.get_threshold() == before


@pytest.mark.parametrize("frozen, expected", [(False, "0 True"), (True, "1 True")])
def test_importing_sqlanon_leaves_nothing_frozen_but_the_programs_own(frozen, expected):
    """The import's objects go to the oldest generation through freeze/unfreeze (sqlanon/__init__):
    afterwards nothing is frozen, and what the program froze before stays frozen."""
    code = ("import gc\n" + ("gc.freeze()\n" if frozen else "") + "import sqlanon\n"
            "print(int(gc.get_freeze_count() > 0), gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == expected
