"""RunContext.later: a query sent without waiting for it (PostgreSQL's pipeline), its rows read
at the run's next wait, its check raised there, in the stage that sent it; elsewhere answered at once."""
from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa
from sqlglot import exp

from sqlanon.backends.connect import open_database
from sqlanon.context import RunContext
from sqlanon.errors import BackendError, Interrupted
from sqlanon.sql.templates import col, table
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.helpers import connect, load_table


def _count(name: str) -> exp.Select:
    return exp.select(exp.Count(this=exp.Star())).from_(table(name))


def test_later_answers_after_the_statements_sent_before_it(db_url):
    load_table(db_url, "t", [("age", "int")], [(a,) for a in range(10)])
    db = open_database(db_url)
    try:
        with RunContext(db) as ctx:
            old = ctx.create_temp("old", exp.select(col("age")).from_(table("t")).where(col("age").eq(3)))
            answer = ctx.later(_count(old))
            # sent after it, run after it: the later query saw one row
            ctx.run(exp.insert(exp.select(col("age")).from_(table("t")), table(old)))
            assert answer.rows() == [(1,)]
            assert ctx.scalar(_count(old)) == 11
    finally:
        db.dispose()


def test_a_later_check_is_raised_in_the_stage_that_sent_it(db_url):
    load_table(db_url, "t", [("age", "int")], [(a,) for a in range(10)])
    db = open_database(db_url)
    seen: list[list[tuple]] = []

    def check(rows: list[tuple]) -> None:
        seen.append(rows)
        if rows[0][0] != 0:
            raise BackendError("the later check refused")

    try:
        with pytest.raises(BackendError, match="the later check refused"):
            with RunContext(db) as ctx:
                with ctx.in_stage("anonymize"):
                    ctx.later(_count("t"), check=check)
                seen.append([])  # never reached: the stage's own wait raised
        assert seen == [[(10,)]]
        with RunContext(db) as ctx:  # the pool's connection serves the next run
            assert ctx.scalar(_count("t")) == 10
    finally:
        db.dispose()


def test_mondrian_refuses_cells_that_share_a_hash_key(db_url, monkeypatch):
    """Mondrian never reads the frequency table's largest codes, whose answer the hash-key check
    comes with (Frequency.first): the check is made all the same, before anything is released.
    Forced as in test_rejections: every row gets one key, taken as a hash; nationality is
    released and not in the cells, so the rows are joined to their cells by the key."""
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    with connect(db_url, policy=PATIENT_POLICY) as session:
        backend = session.db.backend
        monkeypatch.setattr(backend, "cell_key", lambda values: exp.Literal.number(0))
        monkeypatch.setattr(backend, "hashed_cell_key", True)
        with pytest.raises(BackendError, match="share a hash key"):
            session.execute("SELECT age, zip, disease, nationality FROM patients", method="mondrian")
        monkeypatch.undo()
        assert session.execute("SELECT age, zip, disease, nationality FROM patients", method="mondrian").rows


@pytest.mark.backends("postgresql")
def test_an_interrupt_outside_any_wait_stops_what_the_pipeline_still_runs(db_url):
    """Ctrl-C that lands in Python while a statement sent without waiting is blocked on a lock
    (psycopg cancels only what it is waiting for itself): the run stops the statement and ends
    at once, instead of waiting for the lock as it leaves the pipeline."""
    load_table(db_url, "t", [("age", "int")], [(a,) for a in range(10)])
    db = open_database(db_url)
    locker = sa.create_engine(db_url).connect()
    release = threading.Timer(30, locker.rollback)  # the test ends even where the run waits
    try:
        locker.execute(sa.text("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"))
        release.start()
        started = time.monotonic()
        with pytest.raises(Interrupted, match="nothing was released"):
            with RunContext(db) as ctx:
                ctx.later(_count("t"))  # queued: the server waits for the lock
                time.sleep(0.2)
                raise KeyboardInterrupt  # where the program is, not in a wait
        assert time.monotonic() - started < 10
        with RunContext(db) as ctx:  # the pool's connection serves the next run
            locker.rollback()
            assert ctx.scalar(_count("t")) == 10
    finally:
        release.cancel()
        locker.close()
        db.dispose()
