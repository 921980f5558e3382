"""The MySQL proxy streams anonymized answers: the library reads them from MariaDB a batch at a
time as the proxy sends them, and a client gone half-way leaves neither a run's connection nor a
temp table behind."""
from __future__ import annotations

import socket

import pymysql

from tests.helpers import assert_alpha_k, wait_for
from tests.proxy.mysql_harness import env  # noqa: F401 - fixture

BIG_ROWS = 2000
#: 13 patients × 150 rows of an unprotected table: a protected answer of several batches of 1000
MANY = "SELECT age, sex, zip, disease, id FROM patients CROSS JOIN big WHERE id <= 150"



def test_a_large_answer_arrives_whole(env):
    with env.connect() as c, c.cursor() as cur:
        cur.execute(MANY)
        rows = cur.fetchall()
        assert 1500 < len(rows) <= 1950 and cur.rowcount == len(rows)
        assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2 * 150, alpha=0.5)
        assert {type(r[4]) for r in rows} == {int}
        cur.execute("SELECT COUNT(*) FROM big")  # the session goes on after the answer
        assert cur.fetchall() == ((BIG_ROWS,),)


def test_a_client_gone_half_way_leaves_nothing_behind(env):
    db = env.proxy.proxy.session.db
    victim = env.connect(cursorclass=pymysql.cursors.SSCursor)
    cur = victim.cursor()
    cur.execute(MANY)
    assert all(cur.fetchone() is not None for _ in range(10))
    session = env.proxy.sessions[-1]
    assert db.engine.pool.checkedout() == 1  # the run is held while the answer streams
    victim._sock.shutdown(socket.SHUT_RDWR)
    victim._sock.close()
    cur._result.unbuffered_active = False  # PyMySQL would read the rest when collected
    wait_for(lambda: db.engine.pool.checkedout() == 0, "the run kept its connection")
    conns = [db.raw_connection() for _ in range(db.engine.pool.checkedin())]
    try:
        for conn in conns:
            c = conn.cursor()
            assert not any(db.backend.temp_table_exists(c, name) for name in session.last_temp_tables)
            c.close()
    finally:
        for conn in conns:
            conn.close()
    with env.connect() as other, other.cursor() as oc:  # others are served on
        oc.execute("SELECT COUNT(*) FROM items")
        assert oc.fetchall() == ((3,),)
