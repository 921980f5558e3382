"""Fail closed: every statement the MySQL front-end does not handle deliberately is an ERR packet
with the library's SQLSTATE, names what was refused, and leaves the connection usable; the
start-up chatter of common clients passes."""
from __future__ import annotations

import time

import pymysql
import pytest

from tests.proxy.mysql_harness import env  # noqa: F401 - fixture

REFUSED = [
    ("SELECT 1; SELECT 2", "several statements"),
    ("SELECT id FROM items /*!50000 UNION SELECT name FROM patients */", "executable comment"),
    ("SELECT id FROM items /*M!100000 UNION SELECT name FROM patients */", "executable comment"),
    ("SET NAMES utf8mb4 /*!, sql_mode = 'ANSI_QUOTES' */", "executable comment"),
    ("USE mysql", "USE of another database"),
    ("SET sql_mode = 'ANSI_QUOTES'", "sql_mode"),
    ("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'", "sql_mode"),
    ("SET @@sql_mode = ''", "sql_mode"),
    ("SET GLOBAL autocommit = 1", "SET"),
    ("SET @@global.time_zone = '+00:00'", "time_zone"),
    ("SET autocommit = 1, sql_mode = ''", "SET"),
    ("SET @x = (SELECT name FROM patients LIMIT 1)", "SET"),
    ("SET ROLE admin", "SET"),
    ("SET NAMES gbk", "SET NAMES"),
    ("PREPARE s FROM 'SELECT name FROM patients'", "PREPARE"),
    ("EXECUTE s", "EXECUTE"),
    ("DEALLOCATE PREPARE s", "unparsable"),
    ("LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE items", "unparsable"),
    ("HANDLER patients OPEN", "unparsable"),
    ("DO SLEEP(1)", "unparsable"),
    ("DECLARE c CURSOR FOR SELECT name FROM patients", ""),
    ("EXPLAIN ANALYZE SELECT * FROM patients", "EXPLAIN"),
    ("ANALYZE SELECT * FROM patients", ""),
    ("ANALYZE TABLE patients", "ANALYZE"),
    ("EXPLAIN SELECT age FROM patients WHERE age > 30", "EXPLAIN"),
    ("SHOW TABLE STATUS", "SHOW TABLE STATUS"),
    ("SHOW INDEX FROM patients", "SHOW INDEX"),
    ("SHOW CREATE TABLE patients", "SHOW CREATE TABLE"),
    ("SHOW TABLES FROM mysql", "SHOW TABLES"),
    ("SHOW TABLES WHERE (SELECT COUNT(*) FROM patients) > 10", "SHOW TABLES"),
    ("SELECT table_rows FROM information_schema.tables", "catalog query"),
    ("SELECT * FROM information_schema.tables", "catalog query"),
    ("SELECT * FROM information_schema.statistics", "catalog query"),
    ("SELECT table_name FROM information_schema.tables WHERE table_rows > 10", "catalog query"),
    ("SELECT column_name FROM information_schema.columns WHERE (SELECT name FROM patients LIMIT 1) = 'x'",
     "catalog query"),
    ("SELECT * FROM mysql.user", "outside the connected schema"),
    ("SELECT name FROM patients", "identifier column"),
    ("INSERT INTO items (id) VALUES (9)", "INSERT"),
    ("UPDATE patients SET age = 1", "UPDATE"),
    ("DELETE FROM items", "DELETE"),
    ("SELECT LOAD_FILE('/etc/passwd')", "LOAD_FILE"),
    ("SELECT USER()", "USER"),
    ("CALL p()", ""),
    ("KILL USER root", ""),
    ("SELEC 1", "unparsable"),
    ("SELECT " + "(" * 600 + "1" + ")" * 600, "too complex"),
    ("SELECT '" + "x" * 150_000 + "'", "too long"),
]

ALLOWED = [
    "SELECT @@version_comment LIMIT 1", "SELECT VERSION()", "SELECT DATABASE()", "SET NAMES utf8mb4",
    "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'", "SET autocommit = 0", "SET autocommit = 1",
    "SET @@session.autocommit = ON", "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "SET time_zone = '+00:00'", "SHOW TABLES", "SHOW FULL TABLES", "SHOW COLUMNS FROM patients",
    "SHOW VARIABLES LIKE 'sql_mode'", "SHOW WARNINGS", "SHOW CREATE TABLE items", "DESCRIBE patients",
    "START TRANSACTION", "BEGIN", "COMMIT", "START TRANSACTION READ ONLY", "ROLLBACK",
    "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = DATABASE()",
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'patients'",
]


@pytest.fixture(scope="module")
def conn(env):
    c = env.connect()
    yield c
    c.close()


@pytest.mark.parametrize("sql,construct", REFUSED, ids=[s[:40] for s, _ in REFUSED])
def test_refused_and_the_connection_goes_on(conn, sql, construct):
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(sql)
        errno, message = e.value.args
        assert errno == 1227 and message.startswith("rejected: ") and construct in message
        cur.execute("SELECT 7")
        assert cur.fetchall() == ((7,),)


@pytest.mark.parametrize("sql", ALLOWED)
def test_client_chatter_passes(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        cur.fetchall()


def test_use_and_init_db_only_to_the_current_database(env, conn):
    with conn.cursor() as cur:
        cur.execute(f"USE `{env.database}`")
    conn.select_db(env.database)
    with pytest.raises(pymysql.err.MySQLError) as e:
        conn.select_db("mysql")
    assert e.value.args[0] == 1227
    conn.ping()
    with pytest.raises(pymysql.err.OperationalError) as e:
        env.connect(database="mysql")
    assert e.value.args[0] == 1044


def test_multi_statements_are_never_offered(env):
    c = env.connect(client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    try:
        assert not c.server_capabilities & pymysql.constants.CLIENT.MULTI_STATEMENTS
        assert not c.server_capabilities & pymysql.constants.CLIENT.LOCAL_FILES
        with c.cursor() as cur, pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("SELECT 1; SELECT name FROM patients")
        assert "several statements" in e.value.args[1]
    finally:
        c.close()


def test_quotes_are_read_as_the_parser_reads_them(env, conn):
    # the database leg runs without ANSI_QUOTES / NO_BACKSLASH_ESCAPES whatever the server default
    with conn.cursor() as cur:
        cur.execute("SELECT @@sql_mode")
        mode = cur.fetchall()[0][0]
        assert "ANSI_QUOTES" not in mode and "NO_BACKSLASH_ESCAPES" not in mode
        cur.execute("SELECT 'a\\'b' AS s, \"c\" AS t")
        assert cur.fetchall() == (("a'b", "c"),)


def test_rejections_are_audited(env, conn, caplog):
    with caplog.at_level("INFO", logger="sqlanon.audit"), conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError):
            cur.execute("SET sql_mode = 'ANSI_QUOTES'")
        cur.execute("SELECT id FROM items WHERE id = 1")
        def events() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.name == "sqlanon.audit"]

        deadline = time.time() + 5  # relayed statements are recorded off the event loop
        while not any('"decision": "passed"' in e for e in events()) and time.time() < deadline:
            time.sleep(0.02)
    assert any('"decision": "rejected"' in e and "sql_mode" in e and '"client": "alice"' in e for e in events())
    assert any('"decision": "passed"' in e and '"rows": 1' in e for e in events())


def test_set_names_switches_what_the_proxy_writes(env):
    with env.connect(charset="utf8mb4") as c, c.cursor() as cur:
        cur.execute("SET NAMES latin1 COLLATE 'latin1_swedish_ci'")
        cur.execute("SELECT @@character_set_client, @@collation_connection")
        assert cur.fetchall() == (("latin1", "latin1_swedish_ci"),)
        with pytest.raises(pymysql.err.MySQLError):
            cur.execute("SET character_set_client = 'gbk'")
        with pytest.raises(pymysql.err.MySQLError):
            cur.execute("SET NAMES utf8mb4 COLLATE 'latin1_bin'")
