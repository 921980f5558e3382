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
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_in_the_main_thread_and_back_after_nested_runs():
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer run still goes on
    assert gc.isenabled()


def test_back_after_a_failed_run():
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("refused")
    assert gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off():
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_worker_threads_and_frozen_processes_keep_collecting():
    seen = []

    def work():
        with collector.paused():
            seen.append(gc.isenabled())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    gc.freeze()
    try:
        with collector.paused():
            seen.append(gc.isenabled())
    finally:
        gc.unfreeze()
    assert seen == [True, True]


def test_a_run_pauses_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    load_table(url, "t", [("age", "int"), ("s", "text")], [(a, "ab"[a % 2]) for a in range(8)])
    policy = {"tables": {"t": {"quasi_identifiers": {"age": {"type": "interval", "levels": [2, 4, 8]}},
                               "sensitive": {"s": {}}, "privacy": {"method": "mondrian", "k": 2}}}}
    seen = []
    with sqlanon.connect(url, policy, unrestricted=True) as db:
        db.execute("SELECT age, s FROM t", progress=lambda stage: seen.append((stage, gc.isenabled())))
    # every statement but the answer's, whose rows are made with the collector on (resumed)
    assert [on for _, on in seen[:-1]] == [False] * (len(seen) - 1) and seen[-1][0].startswith("finish")
    assert seen[-1][1]
    assert gc.isenabled()


def test_resumed_while_the_answers_rows_are_made_inside_a_run_only():
    with collector.paused():
        with collector.resumed():
            assert gc.isenabled()
        assert not gc.isenabled()  # the run goes on paused
    assert gc.isenabled()
    gc.disable()  # outside a run: as the program has it
    with collector.resumed():
        assert not gc.isenabled()


@pytest.mark.parametrize("frozen, expected", [(False, "0 True"), (True, "1 True")])
def test_importing_sqlanon_leaves_nothing_frozen_but_the_programs_own(frozen, expected):
    """The import's objects go to the oldest generation through freeze/unfreeze (sqlanon/__init__):
    afterwards nothing is frozen, and what the program froze before stays frozen."""
    code = ("import gc\n" + ("gc.freeze()\n" if frozen else "") + "import sqlanon\n"
            "print(int(gc.get_freeze_count() > 0), gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == expected
