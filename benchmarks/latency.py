"""Small-query latency (issue 27): two checkouts of sqlanon side by side, on one PostgreSQL
server and the same rows, each measurement alternating between them so that a shared machine's
load falls on both alike (compare.py's discipline); ratios are this checkout's to the other's.

- ``query``: UCI Adult's 30,162 complete rows (table ``adult_complete``), Mondrian k=5 on the six
  quasi-identifiers with their ARX hierarchies, sensitive occupation; the whole query through the
  library (``Session.execute``), ``--repeat`` warm runs in a fresh process per checkout and round:
  the fastest wall time, client CPU and server CPU (server_cpu.py), the means of wall and client
  CPU (the fastest run is one without a full collection of Python's cyclic collector, which
  came every second query or so), and the release (classes, KL sum), which must agree;
- ``cli``: the same query as ``python -m sqlanon query --format csv`` in a fresh process, start to
  end: the process's CPU seconds (user + system; the wall time drifts with the load) and wall,
  its bytecode cached as an installed package's is (run_cli);
- ``proxy``: ``SELECT 1`` through each checkout's PostgreSQL proxy and directly, psycopg (prepared
  after five runs), blocks of 100 in turn: p50 and p99, and each proxy's CPU per statement.

Usage:  git worktree add ../base <commit>
        python benchmarks/latency.py ../base [--parts query,cli,proxy] [--rounds 3] [--repeat 5]
               [--queries 30000]
Server: SQLANON_TEST_POSTGRESQL_URL, else a local server as the tests start it.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import sqlalchemy as sa
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import methods  # noqa: E402
import proxy_pg  # noqa: E402

from sqlanon.proxy.users import set_user  # noqa: E402
from tests.helpers import ADULT_COLUMNS, load_table, restricted  # noqa: E402
from tests.servers import local  # noqa: E402

TABLE = "adult_complete"
PRIVACY = {"method": "mondrian", "k": 5, "max_suppression": 0}
SQL = (f"SELECT {', '.join(methods.QIS)}, occupation, COUNT(*) AS n FROM {TABLE} "
       f"GROUP BY {', '.join(methods.QIS)}, occupation")


def policy(hdir: Path) -> dict:
    others = [c for c, _ in ADULT_COLUMNS if c not in methods.QIS and c != "occupation"]
    return {"tables": {TABLE: {
        "quasi_identifiers": {c: {"type": "taxonomy", "file": str(hdir / f"{c}.csv")} for c in methods.QIS},
        "sensitive": {"occupation": {"type": "categorical"}},
        "insensitive": others,
        "privacy": PRIVACY,
    }}}


def prepare(url: str) -> None:
    engine = sa.create_engine(url)
    if not sa.inspect(engine).has_table(TABLE):
        load_table(url, TABLE, ADULT_COLUMNS, [r for r in methods.read_adult_raw() if "?" not in r])
    engine.dispose()


#: the ``query`` measurement, in a fresh process whose sqlanon (and tests.helpers) are the
#: checkout's: argv = checkout, url, policy file, warm runs, this directory (for server_cpu.py)
CHILD = """
import json, sys, time
from pathlib import Path
checkout, url, policy_file, repeat, here = sys.argv[1:6]
sys.path[:0] = [checkout, here]
import server_cpu
import sqlanon
from tests.helpers import restricted
assert Path(sqlanon.__file__).resolve().is_relative_to(Path(checkout).resolve()), sqlanon.__file__
sql = sys.stdin.read()
login, reader = restricted(url, policy_file)
cpu = server_cpu.reader(url)
runs = []
with sqlanon.connect(login, policy_file, reader_role=reader) as db:
    db.execute(sql)  # warm: a process's first run pays for its imports' collections
    for _ in range(int(repeat)):
        start, client, server = time.perf_counter(), time.process_time(), cpu() if cpu else 0.0
        res = db.execute(sql)
        runs.append((time.perf_counter() - start, time.process_time() - client, cpu() - server if cpu else None))
print(json.dumps({"wall": min(r[0] for r in runs), "client_cpu": min(r[1] for r in runs),
                  "server_cpu": None if cpu is None else min(r[2] for r in runs),
                  "wall_mean": sum(r[0] for r in runs) / len(runs), "client_cpu_mean": sum(r[1] for r in runs) / len(runs),
                  "release": [res.report.classes, round(res.report.kl_sum, 4)], "statements": res.report.statements}))
"""


def run_query(checkout: Path, url: str, policy_file: Path, repeat: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(checkout), url, str(policy_file), str(repeat), str(HERE)],
                         input=SQL, capture_output=True, text=True, check=False, cwd=checkout)
    if out.returncode != 0:
        raise SystemExit(f"{checkout}: {(out.stderr.strip().splitlines() or ['failed'])[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_cli(checkout: Path, url: str, policy_file: Path, pycache: Path) -> dict:
    """The CLI from process start to its last row: CPU seconds of the process, and wall. Its
    modules' bytecode comes from ``pycache`` (one per checkout, filled by an untimed first
    run), as an installed package's does: with PYTHONDONTWRITEBYTECODE set, every module whose
    cached bytecode is missing or stale (a checkout being edited) was compiled at every start."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    start = time.perf_counter()
    before = os.times()
    out = subprocess.run([sys.executable, "-m", "sqlanon", "--unrestricted", "query", "--db", url, "--policy",
                          str(policy_file), "--format", "csv", "--no-report", SQL],
                         capture_output=True, text=True, check=False, cwd=checkout, env=env)
    wall = time.perf_counter() - start
    after = os.times()
    if out.returncode != 0:
        raise SystemExit(f"{checkout}: {(out.stderr.strip().splitlines() or ['failed'])[-1]}")
    return {"cpu": after.children_user - before.children_user + after.children_system - before.children_system,
            "wall": wall, "rows": len(out.stdout.splitlines()) - 1}


def _cpu(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run_proxy(sides: dict[str, Path], admin: str, n: int, tmp: Path) -> dict:
    """Each checkout's proxy and the database directly, blocks of 100 ``SELECT 1`` in turn, in a
    database of their own (proxy_pg.py's tables and policy)."""
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.exec_driver_sql("DROP DATABASE IF EXISTS sqlanon_bench_latency WITH (FORCE)")
        c.exec_driver_sql("CREATE DATABASE sqlanon_bench_latency")
    engine.dispose()
    u = sa.engine.make_url(admin).set(database="sqlanon_bench_latency")
    admin = u.render_as_string(hide_password=False)
    proxy_pg.prepare(admin, 1000)
    policy_file = tmp / "proxy-policy.yml"
    policy_file.write_text(yaml.safe_dump(proxy_pg.adult_policy()), encoding="utf-8")
    users = tmp / "users.yml"
    set_user(users, "bench", proxy_pg.PASSWORD)
    login, reader = restricted(admin, policy_file)
    conninfo = {"direct": f"host={u.host} port={u.port} user={u.username} password={u.password} dbname={u.database}"}
    procs = {}
    try:
        for name, checkout in sides.items():
            port = local.free_port()
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "sqlanon", "--reader-role", reader, "proxy", "--db", login, "--policy",
                 str(policy_file), "--without-catalog", "--users", str(users), "--listen-pg", f"127.0.0.1:{port}"],
                cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 60
            while time.time() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            conninfo[name] = (f"host=127.0.0.1 port={port} user=bench password={proxy_pg.PASSWORD} "
                              f"dbname={u.database} sslmode=disable")
        conns = {k: psycopg.connect(v, autocommit=True) for k, v in conninfo.items()}
        for c in conns.values():
            for _ in range(200):
                c.execute("SELECT 1").fetchone()
        times: dict[str, list[float]] = {k: [] for k in conns}
        before = {k: _cpu(p.pid) for k, p in procs.items()}
        for _ in range(max(1, n // 100)):
            for k, c in conns.items():
                for _ in range(100):
                    t0 = time.perf_counter()
                    c.execute("SELECT 1").fetchone()
                    times[k].append(time.perf_counter() - t0)
        after = {k: _cpu(p.pid) for k, p in procs.items()}
        for c in conns.values():
            c.close()
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGINT)
            p.wait(30)
    out: dict = {}
    for k, ts in times.items():
        ts.sort()
        out[k] = {"p50_ms": 1000 * ts[len(ts) // 2], "p99_ms": 1000 * ts[int(len(ts) * 0.99)]}
        if k in procs:
            out[k]["cpu_per_statement_ms"] = 1000 * (after[k] - before[k]) / len(ts)
    for k in procs:
        out[k]["overhead_p50_ms"] = out[k]["p50_ms"] - out["direct"]["p50_ms"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", type=Path, help="the checkout to compare this one with")
    ap.add_argument("--parts", default="query,cli,proxy")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5, help="warm queries per process (query)")
    ap.add_argument("--queries", type=int, default=30000, help="SELECT 1 per side (proxy)")
    a = ap.parse_args()
    parts = a.parts.split(",")
    sides = {"other": a.other.resolve(), "this": ROOT}
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-latency-"))
    hdir = tmp / "h"
    hdir.mkdir()
    methods.hierarchies(hdir)
    policy_file = tmp / "policy.yml"
    policy_file.write_text(yaml.safe_dump(policy(hdir)), encoding="utf-8")
    stops: list = []
    admin = methods.backend_url("postgresql", tmp / "unused.db", stops)
    report: dict = {}
    try:
        prepare(admin)
        for part in ("query", "cli"):
            if part not in parts:
                continue
            runs: dict[str, list[dict]] = {s: [] for s in sides}
            if part == "cli":
                for side, checkout in sides.items():
                    run_cli(checkout, admin, policy_file, tmp / f"pycache-{side}")  # fills the bytecode cache
            for r in range(a.rounds):
                for side, checkout in sides.items():
                    m = run_query(checkout, admin, policy_file, a.repeat) if part == "query" \
                        else run_cli(checkout, admin, policy_file, tmp / f"pycache-{side}")
                    runs[side].append(m)
                    print(f"{part} round {r + 1} {side:5} {json.dumps(m)}", file=sys.stderr, flush=True)
            keys = ("wall", "client_cpu", "server_cpu", "wall_mean", "client_cpu_mean") if part == "query" \
                else ("wall", "cpu")
            best = {s: {k: min(m[k] for m in v) for k in keys if all(m[k] is not None for m in v)}
                    for s, v in runs.items()}
            report[part] = {"fastest": best, "ratio_this_to_other": {
                k: round(best["this"][k] / best["other"][k], 3) for k in best["this"] if best["other"].get(k)}}
            if part == "query":
                report[part]["same_release"] = len({json.dumps(m["release"]) for v in runs.values() for m in v}) == 1
        if "proxy" in parts:
            p = run_proxy(sides, admin, a.queries, tmp)
            p["overhead_ratio_this_to_other"] = round(p["this"]["overhead_p50_ms"] / p["other"]["overhead_p50_ms"], 3)
            report["proxy"] = p
    finally:
        for stop in stops:
            stop()
    report["load"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
