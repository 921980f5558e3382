"""Benchmark of the MySQL front-end of the proxy against a direct connection, same run (MariaDB).

- ``latency``: a trivial pass-through query (``SELECT 1``), PyMySQL, one connection: p50 and p99
  over ``--queries`` round trips, direct and through the proxy. Target: proxy ≤ 1.3 × direct + 0.5 ms.
- ``streaming``: 1,000,000 rows of an unprotected table (int, text, decimal, date), received by
  the ``mariadb`` CLI (C client, ``--quick``: rows decoded in C and dropped, so that the proxy's
  share is not hidden) and by PyMySQL's unbuffered cursor; rows/s, direct and through the
  proxy, and the proxy's peak memory. Target: proxy ≥ 0.8 × direct.
- ``anonymized``: ``SELECT * FROM adult WHERE age BETWEEN 30 AND 50`` (UCI Adult, k=2, α=0.5 on
  income, the hierarchies of benchmarks/proxy_pg.py) through the proxy vs ``Session.execute``
  in-process; median of ``--repeat``. Target: proxy ≤ 1.1 × library.

The proxy runs as ``sqlanon proxy`` in a subprocess (its own interpreter, as deployed).
Usage:  python benchmarks/proxy_mysql.py [--rows 1000000] [--queries 2000] [--repeat 3] [--json out.json]
Server: SQLANON_TEST_MYSQL_URL, else a local MariaDB as the tests start it.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pymysql
import sqlalchemy as sa
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.proxy_pg import ANONYMIZED, SHARED, adult_policy, peak_kib  # noqa: E402 - one Adult query and policy
from sqlanon.proxy.users import set_user  # noqa: E402
from tests.helpers import ADULT_COLUMNS, connect, load_table, read_adult, restricted  # noqa: E402
from tests.servers import local  # noqa: E402

STREAM = "SELECT id, label, amount, day FROM big"
DATABASE = "sqlanon_bench_proxy"
PASSWORD = "bench"


def prepare(url: str, rows: int) -> None:
    load_table(url, "adult", ADULT_COLUMNS, read_adult(SHARED / "adult.data"))
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE big (id INT PRIMARY KEY, label CHAR(32), amount DECIMAL(10,3), day DATE)")
        c.exec_driver_sql("INSERT INTO big SELECT seq, MD5(seq), MOD(seq, 1000) / 7, "
                          f"DATE '2000-01-01' + INTERVAL MOD(seq, 9000) DAY FROM seq_1_to_{int(rows)}")
    engine.dispose()


def start_proxy(url: str, policy: Path, users: Path, port: int) -> subprocess.Popen:
    # as deployed: an account the database keeps from the protected table, without a catalog here
    login, reader = restricted(url, policy)
    proc = subprocess.Popen([sys.executable, "-m", "sqlanon", "--reader-role", reader, "proxy", "--db", login,
                             "--policy", str(policy), "--without-catalog",
                             "--users", str(users), "--listen-mysql", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = time.time() + 60
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        if proc.poll() is not None:
            raise RuntimeError("the proxy exited")
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the proxy did not start")


def latency(conn: dict, n: int) -> dict:
    with pymysql.connect(**conn) as c, c.cursor() as cur:
        for _ in range(50):
            cur.execute("SELECT 1")
            cur.fetchall()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            cur.execute("SELECT 1")
            cur.fetchall()
            times.append(time.perf_counter() - t0)
    times.sort()
    return {"p50_ms": 1000 * times[len(times) // 2], "p99_ms": 1000 * times[int(len(times) * 0.99)]}


def streaming(conn: dict) -> dict:
    cli = ["mariadb", "--no-defaults", f"-h{conn['host']}", f"-P{conn['port']}", f"-u{conn['user']}",
           f"-p{conn['password']}", "--skip-ssl", "--batch", "--quick", conn["database"], "-e", STREAM]
    t0 = time.perf_counter()
    out = subprocess.run(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    raw = time.perf_counter() - t0
    n = out.stdout.count(b"\n") - 1
    with pymysql.connect(**conn, cursorclass=pymysql.cursors.SSCursor) as c, c.cursor() as cur:
        t0 = time.perf_counter()
        cur.execute(STREAM)
        m = sum(1 for _ in cur)
        fetch = time.perf_counter() - t0
    assert m == n
    return {"rows": n, "mariadb_cli_rows_per_s": n / raw, "pymysql_rows_per_s": n / fetch}


def anonymized(conn: dict, repeat: int) -> float:
    times = []
    with pymysql.connect(**conn) as c, c.cursor() as cur:
        for _ in range(repeat):
            t0 = time.perf_counter()
            cur.execute(ANONYMIZED)
            cur.fetchall()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def library(url: str, policy: dict, repeat: int) -> float:
    times = []
    with connect(url, policy) as db:
        for _ in range(repeat):
            t0 = time.perf_counter()
            db.execute(ANONYMIZED)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    stops = []
    admin = os.environ.get("SQLANON_TEST_MYSQL_URL")
    if not admin:
        server = local.start_mariadb()
        stops.append(server.stop)
        admin = server.url
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-bench-"))
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.exec_driver_sql(f"DROP DATABASE IF EXISTS {DATABASE}")
        c.exec_driver_sql(f"CREATE DATABASE {DATABASE}")
    u = sa.engine.make_url(admin).set(database=DATABASE)
    url = u.render_as_string(hide_password=False)
    proc = None
    try:
        prepare(url, args.rows)
        policy = tmp / "policy.yml"
        policy.write_text(yaml.safe_dump(adult_policy()), encoding="utf-8")
        users = tmp / "users.yml"
        set_user(users, "bench", PASSWORD, native=True)
        port = local.free_port()
        proc = start_proxy(url, policy, users, port)
        direct = dict(host=u.host, port=u.port, user=u.username, password=u.password or "", database=DATABASE)
        proxied = dict(host="127.0.0.1", port=port, user="bench", password=PASSWORD, database=DATABASE,
                       ssl_disabled=True)
        out: dict = {"latency": {"direct": latency(direct, args.queries), "proxy": latency(proxied, args.queries)}}
        out["streaming"] = {"direct": streaming(direct), "proxy": streaming(proxied)}
        out["streaming"]["proxy_peak_rss_mib"] = peak_kib(proc.pid) / 1024
        out["anonymized"] = {"library_s": library(url, adult_policy(), args.repeat),
                             "proxy_s": anonymized(proxied, args.repeat)}
        lat, st, an = out["latency"], out["streaming"], out["anonymized"]
        out["targets"] = {
            "latency_p50": lat["proxy"]["p50_ms"] <= 1.3 * lat["direct"]["p50_ms"] + 0.5,
            "latency_p99": lat["proxy"]["p99_ms"] <= 1.3 * lat["direct"]["p99_ms"] + 0.5,
            "streaming_cli": st["proxy"]["mariadb_cli_rows_per_s"] >= 0.8 * st["direct"]["mariadb_cli_rows_per_s"],
            "streaming_pymysql": st["proxy"]["pymysql_rows_per_s"] >= 0.8 * st["direct"]["pymysql_rows_per_s"],
            "anonymized": an["proxy_s"] <= 1.1 * an["library_s"],
        }
        text = json.dumps(out, indent=2)
        print(text)
        if args.json:
            args.json.write_text(text)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        with engine.connect() as c:
            c.exec_driver_sql(f"DROP DATABASE IF EXISTS {DATABASE}")
        engine.dispose()
        for stop in stops:
            stop()


if __name__ == "__main__":
    main()
