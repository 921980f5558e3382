"""Fail closed through both proxies: the corpus of must-never-pass queries, the database's own
refusal when the analyzer is sabotaged, and a proxy that will not start on an account that reads
protected tables or without a catalog."""
from __future__ import annotations

from dataclasses import replace

import psycopg
import pymysql
import pytest
import sqlalchemy as sa

from sqlanon import flow
from sqlanon.analyze import Analysis
from sqlanon.errors import SqlanonError
from sqlanon.proxy.server import Proxy, ProxyConfig
from tests.helpers import connect
from tests.never_pass import check_corpus, corpus
from tests.proxy.mysql_harness import RunningProxy, env  # noqa: F401 - fixture
from tests.proxy.pg_support import pg_proxy, start_proxy  # noqa: F401 - fixture
from tests.servers.local import free_port


def _sabotage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analyzer finds no protected table in any query."""
    monkeypatch.setattr(flow, "analyze", lambda parsed, _db, _policy: Analysis(tree=parsed.tree))


def _pg_rows(c: psycopg.Connection, sql: str) -> list[tuple]:
    try:
        cur = c.execute(sql)
        return cur.fetchall() if cur.description else []
    except psycopg.Error:
        return []


def _mysql_rows(c: pymysql.Connection, sql: str) -> list[tuple]:
    try:
        with c.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    except pymysql.MySQLError:
        return []


def test_pg_corpus_never_leaks(pg_proxy):
    with pg_proxy.connect() as c:
        check_corpus(lambda sql: _pg_rows(c, sql), corpus("wards", "postgres"))


def test_mysql_corpus_never_leaks(env):
    c = env.connect()
    try:
        check_corpus(lambda sql: _mysql_rows(c, sql), corpus("items", "mysql"))
    finally:
        c.close()


def test_pg_database_refuses_what_a_faulty_analyzer_passes(pg_proxy, monkeypatch):
    _sabotage(monkeypatch)
    with pg_proxy.connect() as c:
        for sql in ["SELECT * FROM patients", "SELECT w.ward, p.name FROM wards w CROSS JOIN patients p"]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql).fetchall()
        assert c.execute("SELECT ward FROM wards").fetchall()  # the session stays usable


def test_mysql_database_refuses_what_a_faulty_analyzer_passes(env, monkeypatch):
    _sabotage(monkeypatch)
    c = env.connect()
    try:
        with c.cursor() as cur:
            for sql in ["SELECT * FROM patients", "SELECT i.name, p.name FROM items i CROSS JOIN patients p"]:
                with pytest.raises(pymysql.MySQLError) as e:
                    cur.execute(sql)
                assert e.value.args[0] == 1142, e.value.args  # SELECT command denied
            cur.execute("SELECT id FROM items")
            assert cur.fetchall()
    finally:
        c.close()


def test_proxy_refuses_an_account_that_reads_protected_tables(pg_proxy, env):
    for url, policy, users, listen in [(pg_proxy.db_url, pg_proxy.policy, pg_proxy.users, "listen_pg"),
                                       (env.url, env.proxy.proxy.config.policy, env.proxy.proxy.config.users,
                                        "listen_mysql")]:
        with pytest.raises(SqlanonError) as e:
            Proxy(ProxyConfig(url, policy, users, without_catalog=True, **{listen: ("127.0.0.1", free_port())}))
        assert "patients" in e.value.message and "sqlanon db grants" in e.value.message


def test_proxy_refuses_to_serve_protected_tables_without_a_catalog(env):
    config = env.proxy.proxy.config
    with pytest.raises(SqlanonError) as e:
        Proxy(ProxyConfig(config.url, config.policy, config.users, reader_role=config.reader_role,
                          listen_mysql=("127.0.0.1", free_port())))
    assert "only with a catalog" in e.value.message


# -- the temporal attack through each proxy, with a catalog (last: the catalog stays in the
#    module's database) ------------------------------------------------------------------------
NEWCOMER = ("Nora Neu", 40, "weiblich", "18540", "deutsch", "Asthma")
TEMPORAL = "SELECT age, zip, disease FROM patients WHERE zip LIKE '185%'"


def _change(url: str, sql: str, params: dict) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.execute(sa.text(sql), params)
    engine.dispose()


def _add_newcomer(url: str) -> None:
    _change(url, "INSERT INTO patients (name, age, sex, zip, nationality, disease) VALUES (:n, :a, :s, :z, :c, :d)",
            dict(zip("naszcd", NEWCOMER)))


def _remove_newcomer(url: str) -> None:
    _change(url, "DELETE FROM patients WHERE name = :n", {"n": NEWCOMER[0]})


def test_pg_proxy_refuses_a_query_asked_again_after_an_insert(pg_proxy):
    connect(pg_proxy.db_url, pg_proxy.policy, catalog=True).close()
    proxy, port = start_proxy(pg_proxy, without_catalog=False)
    try:
        with replace(pg_proxy, port=port).connect() as c:
            assert c.execute(TEMPORAL).fetchall()
            assert c.execute(TEMPORAL).fetchall()  # the same rows again
            _add_newcomer(pg_proxy.db_url)
            try:
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="differencing"):
                    c.execute(TEMPORAL).fetchall()
            finally:
                _remove_newcomer(pg_proxy.db_url)
    finally:
        proxy.stop()


def test_mysql_proxy_refuses_a_query_asked_again_after_an_insert(env):
    config = env.proxy.proxy.config
    connect(env.url, config.policy, catalog=True).close()
    other = RunningProxy(ProxyConfig(config.url, config.policy, config.users, reader_role=config.reader_role,
                                     listen_mysql=("127.0.0.1", free_port())))
    try:
        c = env.connect(port=other.port)
        try:
            with c.cursor() as cur:
                cur.execute(TEMPORAL)
                assert cur.fetchall()
                _add_newcomer(env.url)
                try:
                    with pytest.raises(pymysql.MySQLError, match="differencing"):
                        cur.execute(TEMPORAL)
                finally:
                    _remove_newcomer(env.url)
        finally:
            c.close()
    finally:
        other.stop()
