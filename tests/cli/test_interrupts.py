"""Ctrl-C, a lost connection and a locked database, as a user meets them on the command line:
one line on stderr naming the cause, an exit code that says which (130 interrupted, 3 the
database failed for now), no traceback, and nothing left behind — no temp table, no session,
no half-made release.

On PostgreSQL and MariaDB the run is stopped at a known point of its pipeline — its temp tables
made — by a lock an administrator holds on one of the catalog's tables, and the signal is sent
once the server shows the run waiting for it. SQLite shows nothing of another connection: there
the signal follows the opening of the database file, wherever the run then is.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time

import pytest

import sqlanon
from sqlanon.errors import Interrupted
from tests.cli.faults import Setup, one_line, wait_for

QUERY = ("query", "SELECT age, zip, problem FROM people")


@pytest.fixture
def setup(db_url, tmp_path):
    s = Setup(db_url, tmp_path)
    yield s
    s.dispose()


#: SQLite has no session of another connection to watch (see the SQLite tests below)
servers = pytest.mark.backends("postgresql", "mysql")


def no_temp_tables_left(setup: Setup) -> None:
    """The run's temp tables are gone (PostgreSQL lists every session's), and so are its sessions."""
    if setup.backend == "postgresql":
        wait_for(lambda: setup.scalar("SELECT COUNT(*) FROM pg_class WHERE relpersistence = 't' "
                                      "AND relname LIKE 'sqlanon%'") == 0, "no temp table of the run")
    wait_for(lambda: setup.sessions() == [], "no session of the run")


@servers
@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated (SIGTERM)")], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_during_a_query_says_so_in_one_line_and_drops_its_temp_tables(setup, sig, code, word):
    with setup.locked("selections"):  # the differencing check reads it, after the pushdown
        run = setup.start(*QUERY)
        setup.waiting(run, on="selections")
        run.send_signal(sig)
        _, err = run.communicate(timeout=60)
    assert run.returncode == code
    line = one_line(err)
    assert line.startswith(f"error: {word}; nothing was released")
    # PostgreSQL's driver cancels the statement and the run drops its temp tables; MariaDB's
    # closes the connection, and the run ends its session on the server, temp tables with it
    assert ("temp tables dropped" if setup.backend == "postgresql" else "session was ended") in line
    no_temp_tables_left(setup)
    assert setup.run(*QUERY).returncode == 0  # nothing in the way of the next run


@servers
def test_ctrl_c_during_a_materialize_leaves_no_half_release(setup):
    assert setup.run("materialize", "people", "--into", "people_a").returncode == 0
    # a second release of the table reads what the first stored (the memory of released rows)
    with setup.locked("rows_people"):
        run = setup.start("materialize", "people", "--into", "people_b", "--view", "people_bv")
        setup.waiting(run, on="rows_people")
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130 and one_line(err).startswith("error: interrupted; nothing was released")
    no_temp_tables_left(setup)
    assert setup.names() == {"people", "people_a"} and setup.claims() == 0 and setup.released("people_b") == 0
    out = setup.run("materialize", "people", "--into", "people_b", "--view", "people_bv")
    assert out.returncode == 0, out.stderr
    assert {"people_b", "people_bv"} <= setup.names() and setup.released("people_b") == 1


@servers
def test_the_library_tells_what_became_of_an_interrupted_run(setup):
    """In the library: Ctrl-C while the query waits is a KeyboardInterrupt (Interrupted) that
    says where the temp tables went, and the session goes on."""
    with sqlanon.connect(setup.login, str(setup.policy), reader_role=setup.reader) as db:
        with setup.locked("selections"):
            main = threading.main_thread().ident
            assert main is not None

            def interrupt() -> None:
                setup.waiting(on="selections")
                signal.pthread_kill(main, signal.SIGINT)  # as Ctrl-C: to the main thread, in its wait

            helper = threading.Thread(target=interrupt)
            helper.start()
            try:
                with pytest.raises(Interrupted) as e:
                    db.execute(QUERY[1])
            finally:
                helper.join()
            assert db.last_temp_tables and e.value.message.startswith("interrupted; nothing was released")
            if setup.backend == "postgresql":
                # the driver cancelled the statement; sqlanon dropped the tables on the connection,
                # which stays in the session's pool (the lock still held: nothing else ended them)
                assert "temp tables dropped" in e.value.message
                assert setup.scalar("SELECT COUNT(*) FROM pg_class WHERE relpersistence = 't' AND relname LIKE "
                                    "'sqlanon%'") == 0
                assert setup.sessions()
            else:
                # the driver closed the connection mid-answer: sqlanon ended the server's session
                assert "session was ended" in e.value.message
                wait_for(lambda: not any("lock" in s[1] for s in setup.sessions()), "the interrupted session to end")
        assert db.execute(QUERY[1]).rows


@servers
@pytest.mark.parametrize("command", ["query", "materialize"])
def test_a_lost_connection_is_one_line_and_leaves_nothing(setup, command):
    if command == "materialize":
        assert setup.run("materialize", "people", "--into", "people_a").returncode == 0
        args, table = ("materialize", "people", "--into", "people_b", "--view", "people_bv"), "rows_people"
    else:
        args, table = QUERY, "selections"
    with setup.locked(table):
        run = setup.start(*args)
        [(session, _, _)] = setup.waiting(run, on=table)
        setup.end(session)  # pg_terminate_backend, KILL: as an administrator or a restart does
        _, err = run.communicate(timeout=60)
    assert run.returncode == 3
    line = one_line(err)
    assert "the database connection was lost" in line and "temp tables" in line
    no_temp_tables_left(setup)
    if command == "materialize":
        assert setup.names() == {"people", "people_a"} and setup.claims() == 0 and setup.released("people_b") == 0


def sqlite_file(url: str) -> str:
    return url.split("sqlite:///", 1)[1]


def opened(pid: int, path: str) -> bool:
    """Whether process ``pid`` has ``path`` open (it is past its imports and connected)."""
    try:
        return any(os.path.realpath(os.path.join(f"/proc/{pid}/fd", fd)) == os.path.realpath(path)
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except FileNotFoundError:
        return False


@pytest.mark.backends("sqlite")  # the servers' runs are stopped at a known point above
def test_ctrl_c_on_sqlite_is_one_line_and_never_a_half_release(db_url, tmp_path, backend):
    """Wherever the signal lands, the release is all (table, view, log row) or nothing, and the
    line says which: "nothing was released", or that the release was stored (a signal after its
    commit), or the release's own line when the run was done first."""
    assert os.path.isdir("/proc/self/fd"), "needs /proc to see the run open its database"
    setup = Setup(db_url, tmp_path, n=20000)
    path = sqlite_file(db_url)
    for i, delay in enumerate((0.0, 0.02, 0.05, 0.08, 0.12, 0.2)):
        into, view = f"people_{i}", f"people_{i}_view"
        run = setup.start("materialize", "people", "--into", into, "--view", view)
        wait_for(lambda run=run: opened(run.pid, path) or run.poll() is not None, "the run opening the database")
        time.sleep(delay)
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=60)
        names = setup.names()
        if "rows released" in out:
            # done before the signal came (a signal while the interpreter exits ends it at once)
            assert {into, view} <= names and setup.released(into) == 1
            continue
        assert run.returncode == 130, err
        line = one_line(err)
        assert line.startswith("error: interrupted"), line
        stored = into in names
        # the table, its view and its log row are one transaction: all or nothing
        assert (view in names) == stored and setup.released(into) == int(stored), (delay, line)
        # never a claim the database contradicts
        assert ("nothing was released" not in line) or not stored, line
        assert (f"after the release {into} was stored" not in line) or stored, line
    setup.dispose()


@pytest.mark.backends("sqlite")  # SQLite's write lock
def test_a_locked_sqlite_database_is_one_line(db_url, tmp_path, backend):
    setup = Setup(db_url, tmp_path)
    other = sqlite3.connect(sqlite_file(db_url), isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another connection writes: it holds the write lock
        out = setup.run("materialize", "people", "--into", "people_anon", "--view", "people_view")
        # a query writes the catalog's memory of its answer (outside the run's own statements)
        asked = setup.run(*QUERY)
    finally:
        other.execute("ROLLBACK")
        other.close()
    for failed in (out, asked):
        assert failed.returncode == 3 and failed.stdout == ""
        assert "the database is locked by another connection" in one_line(failed.stderr)
    assert setup.names() == {"people"} and setup.released("people_anon") == 0
    assert setup.run("materialize", "people", "--into", "people_anon").returncode == 0
    setup.dispose()


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("function", ["_md5", "_floor", "step"])
def test_ctrl_c_inside_sqlites_own_functions_is_an_interrupt_not_a_refusal(db_url, tmp_path, backend, monkeypatch,
                                                                           function):
    """SQLite runs sqlanon's functions (MD5, FLOOR, the statistics aggregates) in this process:
    a Ctrl-C that lands inside one reaches sqlite3 as an error of the function ("user-defined
    function raised exception"), and is still told as the interrupt, never as a refusal; the
    release is all or nothing. The signal is made to land there: the function raises it."""
    from sqlanon.backends import sqlite as sqlite_backend
    from sqlanon.backends import sqlite_statistics

    setup = Setup(db_url, tmp_path)
    owner = sqlite_statistics._Moments if function == "step" else sqlite_backend
    original, calls = getattr(owner, function), []

    def interrupted(*args: object) -> object:
        calls.append(args)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return original(*args)  # the session's connection keeps it: later calls work

    monkeypatch.setattr(owner, function, interrupted)
    with sqlanon.connect(setup.login, str(setup.policy), reader_role=setup.reader) as db:
        with pytest.raises(KeyboardInterrupt) as e:
            if function == "_floor":  # age's intervals
                db.materialize("people", into="people_anon")
            elif function == "_md5":  # the digests of the catalog's memory of an answer
                db.execute(QUERY[1])
            else:
                db.execute("SELECT VAR_POP(age) FROM people")
        assert calls, "the function ran"
        assert isinstance(e.value, Interrupted) and e.value.message.startswith("interrupted; nothing was released")
        assert "people_anon" not in setup.names() and setup.released("people_anon") == 0
        assert db.execute(QUERY[1]).rows  # the session goes on
    setup.dispose()


def test_a_signal_during_the_commit_waits_and_says_the_release_was_stored(setup, monkeypatch):
    """Ctrl-C that comes as a stored release commits is held until the run can tell what it made:
    the release stays whole (table, view, log row), and the interrupt says it was stored."""
    from sqlanon.context import RunContext

    hold = RunContext.hold_signals

    def hold_then_signal(ctx: RunContext) -> None:
        hold(ctx)
        signal.raise_signal(signal.SIGINT)  # as Ctrl-C, in the commit's first instant

    monkeypatch.setattr(RunContext, "hold_signals", hold_then_signal)
    handler = signal.getsignal(signal.SIGINT)  # whatever the process had
    with sqlanon.connect(setup.login, str(setup.policy), reader_role=setup.reader) as db:
        with pytest.raises(Interrupted) as e:
            db.materialize("people", into="people_anon", view="people_view")
    assert e.value.message.startswith("interrupted; after the release people_anon was stored"), e.value.message
    assert {"people_anon", "people_view"} <= setup.names() and setup.released("people_anon") == 1
    assert signal.getsignal(signal.SIGINT) is handler  # the hold ended
