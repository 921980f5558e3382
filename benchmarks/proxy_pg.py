"""Benchmark of the PostgreSQL front-end of the proxy against a direct connection, same run.

- ``latency``: a trivial pass-through query (``SELECT 1``), psycopg (prepared after five runs:
  the extended protocol), one connection each: p50 and p99 over ``--queries`` round trips,
  direct and through the proxy in alternating blocks. Target: proxy ≤ 1.3 × direct + 0.5 ms.
- ``streaming``: 1,000,000 rows of an unprotected table (int, text, numeric, date), received
  with libpq alone (``pgconn.exec_``: bytes only, no Python conversion, so that the proxy's share
  is not hidden) and with psycopg's ``fetchall``; rows/s, best of ``--repeat``, direct and
  through the proxy alternately, and the proxy's peak memory. Target: proxy ≥ 0.8 × direct.
- ``anonymized``: ``SELECT * FROM adult WHERE age BETWEEN 30 AND 50`` (UCI Adult, k=2, α=0.5
  on income, taxonomy/interval hierarchies of tests/backends/test_adult.py) through the proxy
  vs ``Session.execute`` in-process, alternately, median of ``--repeat`` after a warm-up.
  Target: proxy ≤ 1.1 × library.

The proxy runs as ``sqlanon proxy`` in a subprocess (its own interpreter, as deployed).
Usage:  python benchmarks/proxy_pg.py [--rows 1000000] [--queries 2000] [--repeat 3] [--json out.json]
Server: SQLANON_TEST_POSTGRESQL_URL, else a local server as the tests start it.
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

import psycopg
import sqlalchemy as sa
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlanon.proxy.users import set_user  # noqa: E402
from tests.helpers import ADULT_COLUMNS, connect, load_table, read_adult, restricted  # noqa: E402
from tests.servers import local  # noqa: E402

SHARED = ROOT / "data" / "adult"
ANONYMIZED = "SELECT * FROM adult WHERE age BETWEEN 30 AND 50"
PASSWORD = "bench"


def adult_policy() -> dict:
    h = SHARED / "hierarchies"
    return {"tables": {"adult": {
        "quasi_identifiers": {
            "age": {"type": "taxonomy", "file": str(h / "adult_hierarchy_age.csv")},
            "education": {"type": "taxonomy", "file": str(h / "adult_hierarchy_education.csv")},
            "fnlwgt": {"type": "interval", "levels": [10000, 100000, 500000]},
        },
        "sensitive": {"income": {"type": "categorical"}},
        "insensitive": [c for c, _ in ADULT_COLUMNS if c not in ("age", "education", "fnlwgt", "income")],
        "privacy": {"k": 2, "alpha": {"value": 0.5, "protect": "all"}, "max_suppression": 1.0},
    }}}


def prepare(url: str, rows: int) -> None:
    load_table(url, "adult", ADULT_COLUMNS, read_adult(SHARED / "adult.data"))
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE big AS SELECT g AS id, md5(g::text) AS label, mod(g, 1000) / 7.0 AS amount, "
                          f"DATE '2000-01-01' + mod(g, 9000) AS day FROM generate_series(1, {int(rows)}) g")
        c.exec_driver_sql("ANALYZE big")
    engine.dispose()


def start_proxy(url: str, policy: Path, users: Path, port: int) -> subprocess.Popen:
    # as deployed: an account the database keeps from the protected table, without a catalog here
    login, reader = restricted(url, policy)
    proc = subprocess.Popen([sys.executable, "-m", "sqlanon", "--reader-role", reader, "proxy", "--db", login,
                             "--policy", str(policy), "--without-catalog",
                             "--users", str(users), "--listen-pg", f"127.0.0.1:{port}"],
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


def latency(direct: str, proxied: str, n: int) -> dict:
    """Round trips of ``SELECT 1`` (psycopg prepares it after five: Bind/Describe/Execute/Sync),
    direct and proxied in alternating blocks of 100, so that a shared machine's load falls on
    both alike."""
    times: dict[str, list[float]] = {"direct": [], "proxy": []}
    with psycopg.connect(direct, autocommit=True) as d, psycopg.connect(proxied, autocommit=True) as p:
        for c in (d, p):
            for _ in range(50):
                c.execute("SELECT 1").fetchone()
        for _ in range(max(1, n // 100)):
            for name, c in (("direct", d), ("proxy", p)):
                for _ in range(100):
                    t0 = time.perf_counter()
                    c.execute("SELECT 1").fetchone()
                    times[name].append(time.perf_counter() - t0)
    out = {}
    for name, ts in times.items():
        ts.sort()
        out[name] = {"p50_ms": 1000 * ts[len(ts) // 2], "p99_ms": 1000 * ts[int(len(ts) * 0.99)]}
    return out


def streaming(direct: str, proxied: str, repeat: int) -> dict:
    """The whole table, received by libpq alone and by psycopg's fetchall; the best of
    ``repeat`` runs each, direct and proxied alternately."""
    best: dict[str, dict[str, float]] = {"direct": {}, "proxy": {}}
    for _ in range(repeat):
        for name, conninfo in (("direct", direct), ("proxy", proxied)):
            with psycopg.connect(conninfo, autocommit=True) as c:
                t0 = time.perf_counter()
                res = c.pgconn.exec_(b"SELECT id, label, amount, day FROM big")
                raw = time.perf_counter() - t0
                n = res.ntuples
                res.clear()
                t0 = time.perf_counter()
                rows = c.execute("SELECT id, label, amount, day FROM big").fetchall()
                fetch = time.perf_counter() - t0
                assert len(rows) == n
                del rows
            b = best[name]
            b["rows"] = n
            b["libpq_rows_per_s"] = max(b.get("libpq_rows_per_s", 0), n / raw)
            b["fetchall_rows_per_s"] = max(b.get("fetchall_rows_per_s", 0), n / fetch)
    return best


def anonymized(url: str, policy: dict, conninfo: str, repeat: int) -> dict:
    """The library call and the same query through the proxy, alternately after one warm-up
    each (the load of a shared machine drifts)."""
    lib, proxied = [], []
    with connect(url, policy) as db, psycopg.connect(conninfo, autocommit=True) as c:
        db.execute(ANONYMIZED)
        c.execute(ANONYMIZED).fetchall()
        for _ in range(repeat):
            t0 = time.perf_counter()
            db.execute(ANONYMIZED)
            lib.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            c.execute(ANONYMIZED).fetchall()
            proxied.append(time.perf_counter() - t0)
    return {"library_s": statistics.median(lib), "proxy_s": statistics.median(proxied)}


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    stops = []
    admin = os.environ.get("SQLANON_TEST_POSTGRESQL_URL")
    if not admin:
        server = local.start_postgres()
        stops.append(server.stop)
        admin = server.url
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-bench-"))
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.exec_driver_sql("DROP DATABASE IF EXISTS sqlanon_bench_proxy WITH (FORCE)")
        c.exec_driver_sql("CREATE DATABASE sqlanon_bench_proxy")
    u = sa.engine.make_url(admin).set(database="sqlanon_bench_proxy")
    url = u.render_as_string(hide_password=False)
    proc = None
    try:
        prepare(url, args.rows)
        policy = tmp / "policy.yml"
        policy.write_text(yaml.safe_dump(adult_policy()), encoding="utf-8")
        users = tmp / "users.yml"
        set_user(users, "bench", PASSWORD)
        port = local.free_port()
        proc = start_proxy(url, policy, users, port)
        direct = f"host={u.host} port={u.port} user={u.username} password={u.password} dbname={u.database}"
        proxied = f"host=127.0.0.1 port={port} user=bench password={PASSWORD} dbname={u.database} sslmode=disable"
        out: dict = {"latency": latency(direct, proxied, args.queries)}
        out["streaming"] = streaming(direct, proxied, args.repeat)
        out["streaming"]["proxy_peak_rss_mib"] = peak_kib(proc.pid) / 1024
        out["anonymized"] = anonymized(url, adult_policy(), proxied, args.repeat)
        lat, st, an = out["latency"], out["streaming"], out["anonymized"]
        out["targets"] = {
            "latency_p50": lat["proxy"]["p50_ms"] <= 1.3 * lat["direct"]["p50_ms"] + 0.5,
            "latency_p99": lat["proxy"]["p99_ms"] <= 1.3 * lat["direct"]["p99_ms"] + 0.5,
            "streaming_libpq": st["proxy"]["libpq_rows_per_s"] >= 0.8 * st["direct"]["libpq_rows_per_s"],
            "streaming_fetchall": st["proxy"]["fetchall_rows_per_s"] >= 0.8 * st["direct"]["fetchall_rows_per_s"],
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
            c.exec_driver_sql("DROP DATABASE IF EXISTS sqlanon_bench_proxy WITH (FORCE)")
        engine.dispose()
        for stop in stops:
            stop()


if __name__ == "__main__":
    main()
