"""Queries that must be rejected, each with the construct the error names."""
from __future__ import annotations

import re

import pytest

import sqlanon
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.helpers import connect, load_table

REJECT = [
    ("SELECT name FROM patients", "identifier column"),
    ("SELECT age FROM patients WHERE name = 'Sylvia Sauer'", "identifier column"),
    ("SELECT UPPER(name) FROM patients", "identifier column"),
    ("SELECT age FROM patients p NATURAL LEFT JOIN wards w", "NATURAL join"),
    ("SELECT age FROM patients p LEFT JOIN wards w ON w.ward = p.nationality AND p.zip + 1 = 2",
     "ADD over generalized column"),
    ("SELECT p.age FROM patients p JOIN patients q ON q.age = p.age", "self-join of a protected table"),
    ("SELECT age FROM patients WHERE age = (SELECT MIN(age) FROM patients)", "MIN in a subquery"),
    ("SELECT age FROM patients WHERE age < (SELECT AVG(age) FROM patients WHERE zip = '18528')", "subquery"),
    ("SELECT age FROM patients WHERE age < (SELECT AVG(name) FROM patients)", "identifier column"),
    ("SELECT age, (SELECT AVG(age) FROM patients) FROM patients", "subquery"),
    ("SELECT age FROM patients o WHERE age < (SELECT AVG(o.age) FROM patients i)", "correlated subquery"),
    ("SELECT age FROM patients WHERE age IN (SELECT floor FROM wards)", "subquery"),
    ("WITH x AS (SELECT age FROM patients LIMIT 3) SELECT age FROM x", "common table expression"),
    ("SELECT n FROM (SELECT disease, COUNT(*) AS n FROM patients GROUP BY disease) AS s", "subquery"),
    ("WITH x AS (SELECT name, age FROM patients) SELECT age FROM x WHERE name = 'Bob'", "identifier column"),
    ("SELECT age FROM patients UNION SELECT age FROM patients", "set operation"),
    ("SELECT age, ROW_NUMBER() OVER (ORDER BY age) FROM patients", "window function"),
    ("SELECT age FROM patients; SELECT 1", "several statements"),
    ("DELETE FROM patients", "DELETE statement"),
    ("UPDATE patients SET age = 1", "UPDATE statement"),
    ("DROP TABLE patients", "DROP statement"),
    ("SELECT age FROM patients /*!50000 UNION SELECT name FROM patients */", "MySQL executable comment"),
    ("SELECT secret_fn(age) FROM patients", "function SECRET_FN"),
    ("SELECT age FROM nosuchtable", "unknown table"),
    ("SELECT age, nosuchcol FROM patients", "unresolved column"),
    ("SELEC age FROM patients", "unparsable SQL"),
    ("", "empty statement"),
    ("SELECT AVG(zip) FROM patients", "AVG over generalized column"),
    ("SELECT zip + 1 FROM patients", "ADD over generalized column"),
]


@pytest.fixture
def session(db_url):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    load_table(db_url, "wards", [("ward", "text"), ("floor", "int")], [("deutsch", 1)])
    with connect(db_url, policy=PATIENT_POLICY) as s:
        yield s


@pytest.mark.parametrize("sql,construct", REJECT, ids=[c for _, c in REJECT])
def test_rejected(session, sql, construct):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(sql)
    assert construct in e.value.construct


@pytest.mark.parametrize("sql", ["SELECT p FROM patients p", "SELECT COUNT(p) FROM patients p",
                                 "SELECT p.age, w FROM patients p JOIN wards w ON w.floor = p.age"])
def test_whole_row_references_rejected(session, backend, sql):
    """PostgreSQL reads a table alias as the whole row (every column, identifiers too); the
    other engines know no such column."""
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute(sql)
    assert e.value.construct == ("whole-row reference" if backend == "postgresql" else "unresolved column")


@pytest.mark.spark
def test_unprotected_tables_pass_through(session):
    res = session.execute("SELECT ward, floor FROM wards")
    assert res.rows == [("deutsch", 1)] and res.report.table is None


def test_unknown_function_rejected_in_pass_through(session):
    with pytest.raises(sqlanon.QueryRejected, match="function"):
        session.execute("SELECT secret_fn(floor) FROM wards")


def test_explain_shows_statements_without_running(session):
    text = session.explain("SELECT age, disease FROM patients WHERE age > 10")
    assert "CREATE TEMPORARY TABLE" in text and "alpha_k" in text


def test_no_temp_tables_left_after_success_and_failure(session):
    def leftovers() -> list[str]:
        # the pool holds the one connection every run used: temp tables live in that session
        assert session.db.engine.pool.checkedin() == 1
        raw = session.db.raw_connection()
        try:
            cur = raw.cursor()
            return [t for t in session.last_temp_tables if session.db.backend.temp_table_exists(cur, t)]
        finally:
            raw.close()

    session.execute("SELECT age, zip, disease FROM patients")
    assert len(session.last_temp_tables) > 10 and leftovers() == []
    with pytest.raises(sqlanon.ReleaseRefused):
        # 13 rows hold fewer than 13 diseases: the release fails its verification
        session.execute("SELECT age, disease FROM patients", method="mondrian", l=13)
    assert session.last_temp_tables and leftovers() == []


def test_hygiene_check_sees_a_temp_table(session):
    """The check above could not pass by mistake: it finds a temp table that is there."""
    raw = session.db.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute(session.db.backend.render(session.db.backend.create_temp_table(
            "sqlanon_probe", sqlanon_select_one())))
        assert session.db.backend.temp_table_exists(cur, "sqlanon_probe")
        for statement in session.db.backend.drop_temp_tables(["sqlanon_probe"]):
            cur.execute(session.db.backend.render(statement))
        assert not session.db.backend.temp_table_exists(cur, "sqlanon_probe")
    finally:
        raw.close()


def sqlanon_select_one():
    from sqlglot import exp

    return exp.select(exp.alias_(exp.Literal.number(1), "a"))


def test_cells_merged_by_a_hash_key_are_refused(session, monkeypatch):
    """Where the cell key is a hash, two cells sharing it would release one cell's rows under the
    other's values. Forced here: every row gets one key, taken as a hash; the cells, grouped on
    the key and the values, show it."""
    from sqlglot import exp

    backend = session.db.backend
    monkeypatch.setattr(backend, "cell_key", lambda values: exp.Literal.number(0))
    monkeypatch.setattr(backend, "hashed_cell_key", True)
    # nationality is released and not in the cells: the rows are joined to their cells by the key
    # (a release of the cells' columns alone is written from the plan on PostgreSQL, keyless)
    with pytest.raises(sqlanon.BackendError, match="share a hash key"):
        session.execute("SELECT age, zip, disease, nationality FROM patients")
    monkeypatch.undo()
    assert session.execute("SELECT age, zip, disease, nationality FROM patients").rows


def test_a_count_of_the_selection_that_misses_rows_is_refused(session, monkeypatch):
    """Verification reads the selection's distribution from the method's frequency table
    (Release.counts) but counts the selected rows itself: a table that lost a cell is caught."""
    from sqlglot import exp

    from sqlanon.anonymize.alpha_k import AlphaK
    from sqlanon.sql.templates import col, table

    own = AlphaK.run

    def run(self, frag, src, ctx):
        release = own(self, frag, src, ctx)
        ctx.run(exp.delete(table(release.counts)).where(col("cell").eq(exp.Literal.number(1))))
        return release

    monkeypatch.setattr(AlphaK, "run", run)
    with pytest.raises(sqlanon.BackendError, match="count of the selection differs") as e:
        session.execute("SELECT age, zip, disease FROM patients")
    # the refusal tells no count: a suppressing method's answer tells the selection's size only with noise
    assert not any(ch.isdigit() for ch in e.value.message), e.value.message
    monkeypatch.undo()
    assert session.execute("SELECT age, zip, disease FROM patients").rows


def test_a_statement_the_database_refuses_is_named_with_its_stage(session, monkeypatch):
    """Where statements are pipelined (PostgreSQL), the refusal shows when a later answer is
    read; the error is still the refused statement's own, with its stage, nothing is left
    behind, and the session runs the next query."""
    from sqlglot import exp

    from sqlanon.anonymize.alpha_k import AlphaK
    from sqlanon.sql.templates import table

    own = AlphaK.run

    def run(self, frag, src, ctx):
        ctx.run(exp.delete(table("sqlanon_no_such_table")))  # refused; more statements follow
        return own(self, frag, src, ctx)

    monkeypatch.setattr(AlphaK, "run", run)
    with pytest.raises(sqlanon.BackendError, match="stage anonymize: .*sqlanon_no_such_table"):
        session.execute("SELECT age, zip, disease FROM patients")
    raw = session.db.raw_connection()
    try:
        cur = raw.cursor()
        assert [t for t in session.last_temp_tables if session.db.backend.temp_table_exists(cur, t)] == []
    finally:
        raw.close()
    monkeypatch.undo()
    assert session.execute("SELECT age, zip, disease FROM patients").rows


def test_explain_analyze_times_every_statement(session):
    """explain --analyze sends each statement alone (no pipeline), to time it."""
    text = session.explain("SELECT age, sex, zip, disease FROM patients WHERE age > 10", analyze=True)
    statements = [line for line in text.splitlines() if line.startswith("[")]
    assert statements and all(line.endswith(" ms") for line in statements)


@pytest.mark.parametrize("timed", [False, True])
def test_a_copy_is_counted_as_the_database_wrote_it(session, timed):
    """Where the driver tells the rows a CREATE TABLE … AS SELECT wrote (PostgreSQL's command
    tag), verification takes that count of the selection's copy instead of scanning it again;
    elsewhere nothing is remembered and the copy is counted by a statement. Pipelined or timed
    alike, and a statement the database refused counts nothing."""
    from sqlglot import exp

    from sqlanon.context import RunContext
    from sqlanon.sql.templates import col, table

    tells = session.db.backend.counts_created_rows
    with RunContext(session.db, timed=timed) as ctx:
        some = ctx.create_temp("some", exp.select(col("age")).from_(table("patients")).where(exp.GT(this=col("age"), expression=exp.Literal.number(30))))
        none = ctx.create_temp("none", exp.select(col("age")).from_(table("patients")).where(exp.false()))
        rows = int(ctx.scalar(exp.select(exp.Count(this=exp.Star())).from_(table(some))))
        assert 0 < rows < len(PATIENTS)
        assert ctx.created_rows(some) == (rows if tells else None)
        assert ctx.created_rows(none) == (0 if tells else None)
        with pytest.raises(sqlanon.BackendError):
            ctx.create_temp("bad", exp.select(exp.column("nosuchcol")).from_(table("patients")))
            ctx.sync()
        assert ctx.created_rows(ctx.temp_name("bad")) is None


@pytest.mark.backends("postgresql")
def test_the_selection_is_not_scanned_again_to_count_it(session):
    """On PostgreSQL no statement after the copy counts its rows: the copy's command tag did.
    (The insensitive column makes the release read the rows again: without it they are read
    through a view, once, and counted through it: test_selection_view.py.)"""
    text = session.explain("SELECT age, zip, disease, nationality FROM patients", analyze=True)
    statements = [line for line in text.splitlines() if line.startswith("[")]
    assert any(re.search(r'CREATE TEMPORARY TABLE "\w+_src"', line) for line in statements)
    assert not [line for line in statements if re.search(r'COUNT\(\*\) FROM "\w+_src"', line)]


def test_a_class_under_k_in_the_rows_written_is_refused(db_url, monkeypatch):
    """Verification counts the classes of the rows actually written, also where the release's
    frequency table is read as one row per class (k alone: no sensitive value among its
    columns): a row the method did not make, in a class of its own, fails k."""
    from sqlglot import exp

    from sqlanon.anonymize.mondrian import Mondrian
    from sqlanon.sql.templates import table

    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    privacy = {"method": "mondrian", "k": 2, "max_suppression": 1.0}
    policy = {"tables": {"patients": {**PATIENT_POLICY["tables"]["patients"], "privacy": privacy}}}
    own = Mondrian.run

    def run(self, frag, src, ctx):
        release = own(self, frag, src, ctx)
        ctx.run(exp.insert(exp.select(exp.Literal.string("lonely"), exp.Literal.string("row")), table(release.table)))
        return release

    with connect(db_url, policy=policy) as s:
        assert s.execute("SELECT age, zip FROM patients").rows
        monkeypatch.setattr(Mondrian, "run", run)
        with pytest.raises(sqlanon.ReleaseRefused, match="k-anonymity"):
            s.execute("SELECT age, zip FROM patients")
