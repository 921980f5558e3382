"""The PostgreSQL front-end with psycopg 3 and SQLAlchemy: login, pass-through types and
formats, anonymized answers judged by the independent checker, parameters, rejections."""
from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal

import psycopg
import pytest
import sqlalchemy as sa

from sqlanon.proxy.pg import codec
from tests.helpers import assert_alpha_k
from tests.proxy.pg_support import PASSWORD, WARDS, RawClient, pg_proxy  # noqa: F401 - fixture

PATIENT_K, PATIENT_ALPHA = 2, 0.5


def test_login_wrong_password_and_unknown_user_look_the_same(pg_proxy):
    errors = []
    for user, password in (("alice", "wrong"), ("mallory", PASSWORD), ("mallory", "wrong")):
        with pytest.raises(psycopg.OperationalError) as e:
            pg_proxy.connect(user=user, password=password)
        errors.append(str(e.value).replace(user, "USER"))
    assert len(set(errors)) == 1 and "password authentication failed" in errors[0]
    with pg_proxy.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
        assert c.info.parameter_status("is_superuser") == "off"
        assert c.info.parameter_status("session_authorization") == "alice"


def test_wrong_database_is_refused_after_login(pg_proxy):
    with pytest.raises(psycopg.OperationalError, match="does not exist"):
        pg_proxy.connect(dbname="other")


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_pass_through_types_and_row_count(pg_proxy, binary):
    with pg_proxy.connect() as c:
        cur = c.cursor(binary=binary)
        rows = cur.execute("SELECT ward, floor, cost, ratio, opened, active FROM wards ORDER BY ward").fetchall()
        assert rows == [(w, f, (c_ if c_ is None else Decimal(c_).quantize(Decimal("0.001"))), r, o, a)
                        for w, f, c_, r, o, a in WARDS]
        assert cur.rowcount == 3 and cur.statusmessage == "SELECT 3"
        oids = [d.type_code for d in cur.description]
        assert oids == [25, 23, 1700, 701, 1082, 16]  # the database's own types, relayed


def test_pass_through_with_parameters(pg_proxy):
    with pg_proxy.connect() as c:
        assert c.execute("SELECT ward FROM wards WHERE floor = %s AND ward <> %s", (2, "x")).fetchall() == [("B",)]
        assert c.execute("SELECT ward FROM wards WHERE opened < %s AND active = %s",
                         (dt.date(2000, 1, 1), False)).fetchall() == [("B",)]
        assert c.execute("SELECT ward FROM wards WHERE cost > %s AND ratio > %s ORDER BY ward",
                         (Decimal("-1.5"), -3.0)).fetchall() == [("A",), ("B",)]
        cur = c.cursor(binary=True)
        assert cur.execute("SELECT n, h FROM numbers WHERE n = %b", (7,)).fetchone()[0] == 7
        assert cur.execute("SELECT ward FROM wards WHERE ratio = %b AND active = %b AND opened = %b",
                           (1.5, True, dt.date(2020, 1, 2))).fetchall() == [("A",)]
        assert cur.execute("SELECT ward FROM wards WHERE cost = %b", (Decimal("-0.125"),)).fetchall() == [("B",)]
        # quotes in a parameter stay inside its literal
        assert c.execute("SELECT ward FROM wards WHERE ward = %s", ("A' OR 'x'='x",)).fetchall() == []


def test_unsupported_parameter_type_is_refused_clearly(pg_proxy):
    from psycopg.types.json import Jsonb

    with pg_proxy.connect() as c:
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="parameter type OID 3802"):
            c.execute("SELECT ward FROM wards WHERE %s IS NOT NULL", (Jsonb({"a": 1}),))
        assert c.execute("SELECT COUNT(*) FROM wards WHERE floor > %s", (1,)).fetchone() == (2,)


def test_anonymized_query_satisfies_the_policy(pg_proxy):
    with pg_proxy.connect() as c:
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            rows = cur.execute("SELECT age, sex, zip, disease FROM patients").fetchall()
            assert [d.name for d in cur.description] == ["age", "sex", "zip", "disease"]
            assert len(rows) >= 13 * 0.8 and cur.rowcount == len(rows)
            assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=PATIENT_K, alpha=PATIENT_ALPHA)
            assert any(isinstance(r[0], str) and r[0].startswith("[") for r in rows)  # generalized, as text


def test_parameterized_queries_over_a_protected_table(pg_proxy):
    with pg_proxy.connect() as c:
        rows = c.execute("SELECT age, sex, zip, disease FROM patients WHERE zip = %s", ("18528",)).fetchall()
        assert rows and all(r[2].startswith("1852") for r in rows)
        assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=PATIENT_K, alpha=PATIENT_ALPHA)
        cur = c.cursor(binary=True)
        n = cur.execute("SELECT COUNT(*) FROM patients WHERE age > %s", (10,)).fetchone()[0]
        assert isinstance(n, int) and 0 < n <= 13
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="identifier column"):
            c.execute("SELECT age FROM patients WHERE name = %s", ("Hans Spargel",))
        assert c.execute("SELECT 2").fetchone() == (2,)


def test_rejection_keeps_the_connection_usable(pg_proxy):
    with pg_proxy.connect() as c:
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT name FROM patients")
        assert e.value.sqlstate == "42501" and "identifier column" in str(e.value)
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT age FROM patients WHERE age = %s AND name = %s", (3, "x"))
        assert e.value.sqlstate == "42501"
        assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)


FAIL_CLOSED = [
    ("COPY wards TO STDOUT", "COPY"),
    ("SET ROLE postgres", "SET"),
    ("SET SESSION AUTHORIZATION postgres", "SET"),
    ("SET search_path = pg_temp, public", "search_path"),
    ("SET standard_conforming_strings = off", "standard_conforming_strings"),
    ("SET work_mem = '1GB'", "work_mem"),
    ("RESET ALL", "RESET"),
    ("SELECT 1; SELECT 2", "several statements"),
    ("EXPLAIN ANALYZE SELECT * FROM patients", "EXPLAIN"),
    ("EXPLAIN SELECT * FROM patients", "EXPLAIN"),
    ("PREPARE p AS SELECT age FROM patients", "PREPARE"),
    ("EXECUTE p", "EXECUTE"),
    ("DEALLOCATE p", "DEALLOCATE"),
    ("DO $$ BEGIN PERFORM 1; END $$", "DO"),
    ("DECLARE c CURSOR FOR SELECT age FROM patients", "DECLARE"),
    ("FETCH 1 FROM c", "FETCH"),
    ("LISTEN x", "LISTEN"),
    ("DISCARD ALL", "DISCARD"),
    ("SELEC age FROM patients", "SELEC statement"),
    ("SELECT age FROM patients WHERE (", "unparsable"),
    ("SELECT * FROM pg_stats WHERE tablename = 'patients'", "pg_stats"),
    ("SELECT * FROM pg_catalog.pg_statistic", "pg_statistic"),
    ("SELECT relname, n_live_tup FROM pg_stat_user_tables", "pg_stat_user_tables"),
    ("SELECT relname, reltuples FROM pg_class WHERE relname = 'patients'", "reltuples"),
    ("SELECT * FROM pg_class", "pg_class"),
    ("SELECT c FROM pg_class c", "whole-row"),
    ("SELECT pg_catalog.pg_relation_size('patients')", "PG_RELATION_SIZE"),
    ("SELECT pg_catalog.query_to_xml('select name from patients', true, true, '')", "QUERY_TO_XML"),
    ("SELECT query_to_xml('select name from patients', true, true, '')", "QUERY_TO_XML"),
    ("SELECT pg_read_file('/etc/passwd')", "PG_READ_FILE"),
    ("SELECT rolname, rolpassword FROM pg_authid", "pg_authid"),
    ("SELECT relname FROM pg_class WHERE EXISTS (SELECT 1 FROM patients WHERE name = 'x')", "user table"),
    ("SELECT to_json(p) FROM patients p", "TO_JSON"),
    ("SELECT set_config('search_path', 'x', false)", "SET_CONFIG"),
    ("INSERT INTO wards VALUES ('Z', 9)", "INSERT"),
    ("CREATE TABLE t (a int)", "CREATE"),
    ("BEGIN; SELECT 1", "several statements"),
]


@pytest.mark.parametrize("sql,construct", FAIL_CLOSED, ids=[s[:40] for s, _ in FAIL_CLOSED])
def test_fail_closed(pg_proxy, sql, construct):
    with pg_proxy.connect() as c:
        with pytest.raises(psycopg.Error) as e:
            c.execute(sql, prepare=False)
        assert construct.lower() in str(e.value).lower()
        assert e.value.sqlstate in ("42501", "0A000", "42601")
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_function_call_message_and_copy_are_refused(pg_proxy):
    with pg_proxy.connect() as c:
        with pytest.raises(psycopg.Error, match="COPY"):
            with c.cursor().copy("COPY wards TO STDOUT") as copy:
                list(copy)
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_session_chatter_and_transactions(pg_proxy):
    with pg_proxy.connect() as c:
        assert "PostgreSQL" in c.execute("SELECT version()").fetchone()[0]
        assert c.execute("SELECT pg_catalog.version()").fetchone()[0].startswith("PostgreSQL")
        assert c.execute("SHOW server_version").fetchone()[0][:2].isdigit()
        c.execute("SET application_name = 'app one'")
        assert c.execute("SHOW application_name").fetchone() == ("app one",)
        assert c.info.parameter_status("application_name") == "app one"
        c.execute("SET DateStyle = ISO, MDY")
        c.execute("SET client_encoding TO 'UTF8'")
        c.execute("SET TIME ZONE 'UTC'")
        assert c.execute("SHOW transaction isolation level").fetchone() == ("read committed",)
    with pg_proxy.connect() as c:  # another client: the settings stayed with the first
        assert c.execute("SHOW application_name").fetchone() != ("app one",)
    with psycopg.connect(pg_proxy.conninfo()) as c:  # psycopg's own BEGIN/COMMIT/ROLLBACK
        c.execute("SELECT ward FROM wards")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        rows = c.execute("SELECT age, disease FROM patients").fetchall()
        assert_alpha_k(rows, qi=[0], sens=1, k=PATIENT_K, alpha=None)
        c.rollback()
        c.execute("SELECT 1")
        c.commit()
        c.execute("SAVEPOINT s1")
        c.execute("ROLLBACK TO SAVEPOINT s1")
        c.execute("RELEASE SAVEPOINT s1")
        c.commit()


def test_sqlalchemy(pg_proxy):
    url = sa.engine.make_url(pg_proxy.db_url).set(username="alice", password=PASSWORD, host="127.0.0.1",
                                                  port=pg_proxy.port, query={"sslmode": "disable"})
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            assert c.execute(sa.text("SELECT ward FROM wards WHERE floor = :f"), {"f": 1}).scalar() == "A"
            rows = c.execute(sa.text("SELECT age, sex, zip, disease FROM patients WHERE age > :a"),
                             {"a": 0}).fetchall()
            assert_alpha_k([tuple(r) for r in rows], qi=[0, 1, 2], sens=3, k=PATIENT_K, alpha=PATIENT_ALPHA)
        insp = sa.inspect(engine)
        assert set(insp.get_table_names()) >= {"patients", "wards", "numbers"}
        assert [c["name"] for c in insp.get_columns("wards")] == ["ward", "floor", "cost", "ratio", "opened", "active"]
        assert insp.get_pk_constraint("wards")["constrained_columns"] == []
    finally:
        engine.dispose()


def test_tls_offered(pg_proxy):
    with pg_proxy.connect(sslmode="require") as c:
        assert c.pgconn.ssl_in_use
        assert c.execute("SELECT COUNT(*) FROM wards").fetchone() == (3,)


def test_database_errors_are_relayed_and_pipelines_resynchronise(pg_proxy, caplog):
    caplog.set_level(logging.INFO, logger="sqlanon.audit")
    with pg_proxy.connect() as c:
        with pytest.raises(psycopg.errors.DivisionByZero):
            c.execute("SELECT floor / 0 FROM wards")
        with pytest.raises(psycopg.errors.DivisionByZero):
            c.execute("SELECT floor / %s FROM wards", (0,))
        with pytest.raises(psycopg.errors.DivisionByZero):
            with c.pipeline():
                first = c.execute("SELECT ward FROM wards WHERE floor = %s", (1,))
                c.execute("SELECT floor / %s FROM wards", (0,))
                c.execute("SELECT age, sex FROM patients")  # skipped: after the error, up to the Sync
        assert first.fetchall() == [("A",)]
        assert not any("SELECT age, sex FROM patients" in r.getMessage() for r in caplog.records)  # never ran
        with c.pipeline():
            rows = c.execute("SELECT age, disease FROM patients WHERE age > %s", (1,))
            count = c.execute("SELECT COUNT(*) FROM numbers WHERE n <= %s", (10,))
        assert_alpha_k(rows.fetchall(), qi=[0], sens=1, k=PATIENT_K, alpha=None)
        assert count.fetchone() == (10,)


def test_an_error_skips_the_rest_of_a_batch_even_an_anonymization(pg_proxy, caplog):
    """Parse/Bind/Execute ×3 and one Sync in a single write: the second fails in the database,
    so the third (over the protected table) must not run — not even in the library."""
    caplog.set_level(logging.INFO, logger="sqlanon.audit")
    raw = RawClient(pg_proxy)
    try:
        batch = b""
        for sql in ("SELECT ward FROM wards WHERE floor = 1", "SELECT floor / 0 FROM wards",
                    "SELECT age, zip FROM patients"):
            batch += codec.parse("", sql) + codec.bind("", "", []) + codec.describe(b"P", "") + codec.execute("", 0)
        raw.send(batch + codec.SYNC)
        types = [t for t, _ in raw.until_ready()]
        assert types == [b"1", b"2", b"T", b"D", b"C", b"1", b"2", b"T", b"E", b"Z"]
        raw.send(codec.query("SELECT COUNT(*) FROM wards"))
        assert [t for t, _ in raw.until_ready()] == [b"T", b"D", b"C", b"Z"]
    finally:
        raw.close()
    assert not any("SELECT age, zip FROM patients" in r.getMessage() for r in caplog.records)


def _types(raw: RawClient) -> list[bytes]:
    return [t for t, _ in raw.until_ready()]


def test_protocol_edges_by_hand(pg_proxy):
    raw = RawClient(pg_proxy)
    try:
        raw.send(codec.message(b"F", codec.int32(1234) + b"\0\0\0\0\0\0\0\0"))  # FunctionCall
        replies = raw.until_ready()
        assert replies[0][0] == b"E" and "function call message" in codec.error_fields(replies[0][1])["M"]
        raw.send(codec.bind("", "nosuch", []) + codec.execute("", 0) + codec.SYNC)
        replies = raw.until_ready()
        assert [t for t, _ in replies] == [b"E", b"Z"] and codec.error_fields(replies[0][1])["C"] == "26000"
        # a portal read in pieces: relayed and anonymized alike
        for sql in ("SELECT n FROM numbers WHERE n <= 5", "SELECT age, disease FROM patients"):
            raw.send(codec.parse("s1", sql) + codec.bind("p1", "s1", []) + codec.execute("p1", 2)
                     + codec.execute("p1", 0) + codec.close(b"S", "s1") + codec.SYNC)
            types = _types(raw)
            assert types[:5] == [b"1", b"2", b"D", b"D", b"s"] and types[-3:] == [b"C", b"3", b"Z"]
            assert set(types[5:-3]) == {b"D"}
        # a prepared statement over a protected table cannot be described before it runs
        raw.send(codec.parse("s2", "SELECT age FROM patients WHERE zip = $1") + codec.describe(b"S", "s2")
                 + codec.SYNC)
        replies = raw.until_ready()
        assert [t for t, _ in replies][:2] == [b"1", b"E"] and codec.error_fields(replies[1][1])["C"] == "0A000"
        raw.send(codec.parse("s3", "SELECT n, h FROM numbers WHERE n = $1") + codec.describe(b"S", "s3") + codec.SYNC)
        assert _types(raw) == [b"1", b"t", b"T", b"Z"]
        raw.send(codec.message(b"?", b""))  # not a frontend message: the connection ends
        replies = [raw.receive()]
        assert replies[0][0] == b"E" and codec.error_fields(replies[0][1])["S"] == "FATAL"
        with pytest.raises(ConnectionError):
            raw.receive()
    finally:
        raw.close()
    raw = RawClient(pg_proxy)
    raw.send(codec.TERMINATE)
    with pytest.raises(ConnectionError):
        raw.receive()
    raw.close()
