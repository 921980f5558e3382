"""A stored release under faults: a ``materialize`` killed (SIGKILL) at its worst moment — its
table made, its release-log row not yet written — and two refreshes of one table at once.

Whatever happens, the end is one complete release (table, view, log row, every released row
once) or nothing; what a killed run left half-made, the next materialize or refresh of the table
removes. The run is held at the moment chosen by a lock an administrator holds on the catalog's
release log (PostgreSQL: SHARE, which lets reads through and holds inserts; MariaDB: the rows and
the gap after the last, FOR UPDATE), and killed once the server shows it waiting there.
"""
from __future__ import annotations

import signal

import pytest

from tests.cli.faults import Setup, one_line, wait_for

N = 2000
MATERIALIZE = ("materialize", "people", "--into", "people_anon", "--view", "people_view")
REFRESH = ("materialize", "people", "--into", "people_anon", "--refresh")


@pytest.fixture
def setup(db_url, tmp_path):
    s = Setup(db_url, tmp_path, n=N)
    yield s
    s.dispose()


#: SQLite: a killed writer's transaction is rolled back by the next connection (its journal)
servers = pytest.mark.backends("postgresql", "mysql")


def held_before_its_log_row(setup: Setup, *args: str) -> None:
    """Run ``args`` and SIGKILL it while it waits to write its release-log row; then let the
    server notice (the lock goes, the session reads the end of its socket)."""
    mode = "SHARE" if setup.backend == "postgresql" else "FOR UPDATE"
    with setup.locked("releases", mode):
        run = setup.start(*args)
        setup.waiting(run, on="releases")
        if setup.backend == "mysql" and "--refresh" not in args:
            # DDL commits on MariaDB: the table, its view and the memory of released rows are
            # there, claimed by the run
            assert {"people_anon", "people_view"} <= setup.names() and setup.claims() == 3
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
    wait_for(lambda: setup.sessions() == [], "the killed run's session to end")


def complete(setup: Setup, releases: int = 1) -> None:
    """One release: table, view, log rows, no claim, every released row once."""
    assert {"people_anon", "people_view"} <= setup.names()
    assert setup.released("people_anon") == releases and setup.claims() == 0
    assert setup.scalar("SELECT COUNT(*) FROM people_anon") == N
    assert setup.scalar("SELECT COUNT(*) FROM people_view") == N
    assert setup.scalar(f"SELECT COUNT(*) FROM {setup.catalog('rows_people')}") == N


@servers
@pytest.mark.parametrize("then", [MATERIALIZE, REFRESH], ids=["rerun", "refresh"])
def test_a_materialize_killed_before_its_log_row_is_cleared_by_the_next_run(setup, then):
    held_before_its_log_row(setup, *MATERIALIZE)
    assert setup.released("people_anon") == 0
    if setup.backend == "postgresql":
        # one transaction: the server rolled it back with the session
        assert setup.names() == {"people"}
        if then == REFRESH:
            out = setup.run(*REFRESH)
            assert out.returncode == 2 and "no stored release" in one_line(out.stderr)
            then = MATERIALIZE
    else:
        # the DDL was committed; its claims name it for the next run
        assert {"people_anon", "people_view"} <= setup.names() and setup.claims() == 3
    # a rerun, or a refresh of the release the dead run was making (with the view it named)
    out = setup.run(*then)
    assert out.returncode == 0, out.stderr
    complete(setup)


@servers
def test_a_refresh_killed_before_its_log_row_changes_nothing(setup):
    assert setup.run(*MATERIALIZE).returncode == 0
    held_before_its_log_row(setup, *REFRESH)
    complete(setup)  # the rows of the refresh, written in its transaction, went with it
    out = setup.run(*REFRESH)
    assert out.returncode == 0, out.stderr
    complete(setup, releases=2)


@pytest.mark.backends("mysql")  # elsewhere the table appears with the transaction's commit, whole
def test_a_materialize_killed_when_its_table_appears(setup):
    """MariaDB makes the table visible at once (DDL commits): killed right then, unheld."""
    run = setup.start(*MATERIALIZE)
    wait_for(lambda: "people_anon" in setup.names() or run.poll() is not None, "the release's table")
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=60)
    wait_for(lambda: setup.sessions() == [], "the killed run's session to end")
    if setup.released("people_anon") == 0:  # killed half-way (else it had finished: nothing to clear)
        out = setup.run(*MATERIALIZE)
        assert out.returncode == 0, out.stderr
    complete(setup)


def test_two_refreshes_at_once_store_every_row_once(setup):
    assert setup.run(*MATERIALIZE).returncode == 0
    if setup.backend == "sqlite":
        # no session lock: the second to commit finds the first's release and stores nothing
        runs = [setup.start(*REFRESH), setup.start(*REFRESH)]
    else:
        # the first is held at its release-log row, its rows rewritten but not committed; the
        # second waits for the table's lock — without it, it would delete the rows it sees (not
        # the first's new ones) and insert its own beside them
        with setup.locked("releases", "SHARE" if setup.backend == "postgresql" else "FOR UPDATE"):
            runs = [setup.start(*REFRESH), setup.start(*REFRESH)]
            setup.waiting(*runs, count=2)
    outs = [(r.returncode, err) for r in runs for _, err in [r.communicate(timeout=300)]]
    if setup.backend == "sqlite":
        assert all(code == 0 or (code == 3 and "run it again" in one_line(err)) for code, err in outs), outs
        complete(setup, releases=1 + sum(code == 0 for code, _ in outs))
        return
    assert [code for code, _ in outs] == [0, 0], outs  # one after the other
    complete(setup, releases=3)


def test_a_failure_after_the_table_leaves_nothing_without_a_catalog_too(db_url, monkeypatch):
    """No catalog to claim names in: a statement refused after the table was made — a grant on a
    table that does not exist; on SQLite, which grants nothing, a view named like an index —
    still leaves neither table nor view: rolled back with the transaction, or, where DDL
    committed (MariaDB), dropped by the failed run itself."""
    import sqlalchemy as sa

    import sqlanon
    from tests.backends.test_catalog import POLICY, execute, load, people
    from tests.helpers import connect

    load(db_url, people(50))
    with connect(db_url, POLICY, catalog=False) as db:
        backend = db.db.backend
        if db.db.reader is not None:
            monkeypatch.setattr(backend, "share", lambda name: [
                f"GRANT SELECT ON {backend.ident('no_such_table')} TO CURRENT_USER"])
        else:
            execute(db_url, sa.text("CREATE INDEX people_view ON people (age)"))
        with pytest.raises(sqlanon.SqlanonError):
            db.materialize("people", "people_anon", view="people_view")
        monkeypatch.undo()
        if db.db.reader is None:
            execute(db_url, sa.text("DROP INDEX people_view"))
        db.db.refresh_schema()
        assert "people_anon" not in db.db.tables and "people_view" not in db.db.views
        db.materialize("people", "people_anon", view="people_view")  # nothing in the way
        db.db.refresh_schema()
        assert "people_anon" in db.db.tables and "people_view" in db.db.views
