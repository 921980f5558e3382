"""Differentially private aggregates through both proxies: a client of the PostgreSQL or MySQL
wire protocol gets the noisy answer, spends its own budget (the proxy's user is the ledger's
client), and is refused with an error once it is spent; a client hears what each answer spent
and its intervals: in a notice (PostgreSQL), a note SHOW WARNINGS lists (MySQL)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Iterator

import psycopg
import pymysql
import pytest
import yaml

from sqlanon.proxy.server import ProxyConfig
from sqlanon.proxy.users import set_user
from tests.backends.test_dp import HEAVY, bounded, load, policy, visits
from tests.conftest import fresh_database
from tests.helpers import connect, restricted
from tests.proxy.mysql_harness import RunningProxy
from tests.proxy.pg_support import ProxyThread
from tests.servers.local import free_port

PASSWORD = "dp-pw"
SQL = "SELECT sex, COUNT(*) AS n FROM visits GROUP BY sex ORDER BY sex"


def _prepare(url: str, tmp: Path) -> tuple[ProxyConfig, list[tuple]]:
    rows = visits(60)
    load(url, rows)
    path = tmp / "policy.yml"
    # ε = 300 per query, budget for three: the counts show through the noise, the fourth is refused
    path.write_text(yaml.safe_dump(policy(per_query=300.0, budget=900.0)))
    connect(url, str(path), catalog=True).close()  # the catalog, with its ledger
    users = tmp / "users.yml"
    set_user(users, "alice", PASSWORD, native=True)
    login, reader = restricted(url, str(path))
    return ProxyConfig(login, path, users, reader_role=reader), bounded(rows)


def _expected(mine: list[tuple]) -> list[tuple]:
    return [("Female", sum(r[2] == "Female" for r in mine)), ("Male", sum(r[2] == "Male" for r in mine)),
            ("Other", 0)]


@pytest.fixture
def pg(servers, tmp_path) -> Iterator[tuple[int, str, list[tuple]]]:
    with fresh_database("postgresql", servers, tmp_path) as url:
        config, mine = _prepare(url, tmp_path)
        port = free_port()
        proxy = ProxyThread(replace(config, listen_pg=("127.0.0.1", port))).start()
        try:
            yield port, url.rsplit("/", 1)[1], mine
        finally:
            proxy.stop()


@pytest.fixture
def my(servers, tmp_path) -> Iterator[tuple[int, str, list[tuple]]]:
    with fresh_database("mysql", servers, tmp_path) as url:
        config, mine = _prepare(url, tmp_path)
        proxy = RunningProxy(replace(config, listen_mysql=("127.0.0.1", free_port())))
        try:
            yield proxy.port, url.rsplit("/", 1)[1], mine
        finally:
            proxy.stop()


def test_pg_proxy_answers_with_noise_and_keeps_the_budget(pg):
    port, database, mine = pg
    assert len(mine) < HEAVY
    info = f"host=127.0.0.1 port={port} user=alice password='{PASSWORD}' dbname={database} sslmode=disable"
    with psycopg.connect(info, autocommit=True) as c:
        notices: list[str] = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        for _ in range(2):
            assert [tuple(r) for r in c.execute(SQL).fetchall()] == _expected(mine)
        # the extended protocol (a parameter makes psycopg bind) hears the same
        assert [tuple(r) for r in c.execute(SQL.replace("GROUP BY", "WHERE age > %s GROUP BY"), (-1,)).fetchall()] \
            == _expected(mine)
        assert len(notices) == 3 and all("differential privacy: ε 300 spent" in n for n in notices)
        assert "0 of 900 left" in notices[-1] and "95 % intervals: row 1: n [" in notices[0]
        with pytest.raises(psycopg.Error, match="privacy budget exhausted"):
            c.execute(SQL)


def test_mysql_proxy_answers_with_noise_and_keeps_the_budget(my):
    port, database, mine = my
    c = pymysql.connect(host="127.0.0.1", port=port, user="alice", password=PASSWORD, database=database,
                        ssl_disabled=True, connect_timeout=10, read_timeout=60)
    try:
        with c.cursor() as cur:
            for _ in range(2):
                cur.execute(SQL)
                assert [tuple(r) for r in cur.fetchall()] == _expected(mine)
            # what the answer spent and its intervals: a note that SHOW WARNINGS lists
            assert cur._result.warning_count == 1
            ((level, code, note),) = c.show_warnings()
            assert level == "Note" and "differential privacy: ε 300 spent, 300 of 900 left" in note
            assert c.show_warnings() != ((level, code, note),)  # told once, then the database's own
            cur.execute(SQL)
            with pytest.raises(pymysql.MySQLError, match="privacy budget exhausted"):
                cur.execute(SQL)
    finally:
        c.close()
