"""Benchmark of the anonymization stage: in the database (sqlanon) against the client-side
alternative.

For each backend it loads UCI Adult (32,561 rows, '?' kept as a value) and synthetic
Adult-like tables of 1,000,000 rows (``--sizes 1m``, table adult1m) and 10,000,000 rows
(``10m``, adult10m): Adult repeated with ages shifted by -2..+2, built inside the database; then
it measures in fresh subprocesses, so that peak memory is per measurement:

- ``spec``: sqlanon, k=5, α=0.5 on income = '>50K', QI = age, education, marital_status, race,
  sex, native_country (ARX hierarchies), the issue's target configuration;
- ``occupation``: sqlanon, k=5, α=0.5 on every occupation value, and the client-side
  alternative on the same data: fetch the rows with the driver, anonymize with anjana
  (pandas). Figures are reported as ratios to that baseline, measured in the same run;
- ``mondrian_k5`` and ``mondrian_l3_t02``: sqlanon's Mondrian with sensitive occupation, k=5,
  and k=5, l=3, t=0.2 (equal distance) — the configuration issue 3 compares with anonypy
  (k=5: KL sum 0.187, discernibility 1.55e6) and anjana;
- ``sabre_l3_t02``: SABRE with sensitive occupation, k=5, l=3, t=0.2 (equal distance);
- ``local_k5``: iterative local recoding over the lattice, k=5 (issue 23), beside ``mondrian_k5``;
- ``slicing_l3``: slicing with sensitive occupation, k=5, l=3, against a client-side slicing in
  the same run (fetch, sort, the same number of buckets, pandas shuffles per column group);
- ``global_k5`` and ``global_k10``: global (full-domain) recoding, k=5 and k=10, 4 % suppression
  limit, ARX's loss (issue 23); the report's notes give the lattice search;
- ``answer`` (``--methods answer``): a whole released table as the answer (``SELECT *``, Mondrian
  k=5, every row released), read by ``execute`` (all rows in a list) and by ``stream`` (a batch at
  a time), and a stream closed after its first row: the client's peak memory, the time to the
  first row and to the last, the server's CPU seconds (issue 24); at 10m ``stream`` alone, a
  list of 10 M rows being what streaming avoids (issue 27);
- ``floor`` (with every sqlanon configuration): the physical floor of a pushdown on the same
  server, session settings and rows — a temp copy of the selection's QI and sensitive columns,
  then one ``GROUP BY`` of the QIs into a temp table — to which the stage is compared (issue 27);
  with ``answer``, ``fetch``: every row of the table into Python with the driver's own cursor
  (``fetchall``), the floor of a whole table as the answer. ``answer`` splits its time at the
  answer's statement (the progress callback before it): the stage before, the statement with
  the transfer and the rows' conversion after, wall, server and client CPU seconds.

Peak memory is the measuring process's own high-water mark of resident memory (``VmHWM`` in
/proc/self/status): ``ru_maxrss`` would start at the parent's peak, which a forked child inherits.

Usage:  python benchmarks/methods.py [--backends sqlite,postgresql,mysql] [--sizes adult,1m,10m]
        [--methods alpha_k,mondrian,sabre,slicing,global,answer] [--skip-client] [--json out.json]
        [--repeat N]   (N warm runs of each sqlanon configuration in one process; the fastest
                        is reported, all in "walls")
Servers: SQLANON_TEST_POSTGRESQL_URL / SQLANON_TEST_MYSQL_URL, else local servers as the tests
start them. Needs ``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

#: environment variable naming another checkout whose sqlanon a measuring child imports
#: (compare.py --answer: both sides measured by this file's code)
CHECKOUT = "SQLANON_BENCH_CHECKOUT"
ROOT = Path(os.environ.get(CHECKOUT) or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

import server_cpu  # noqa: E402

from tests.helpers import ADULT_COLUMNS, connect, load_table, restricted  # noqa: E402
from tests.servers import local  # noqa: E402

SHARED = ROOT / "data" / "adult"
#: environment variable that tells a measuring child how many runs to time (--repeat)
REPEAT = "SQLANON_BENCH_REPEAT"
QIS = ["age", "education", "marital_status", "race", "sex", "native_country"]
HIER = {"age": "age", "education": "education", "marital_status": "marital-status", "race": "race",
        "sex": "sex", "native_country": "native-country"}


def read_adult_raw() -> list[tuple]:
    rows = []
    with open(SHARED / "adult.data", encoding="utf-8") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 15:
                rows.append(tuple(int(p) if t == "int" else p for p, (_, t) in zip(parts, ADULT_COLUMNS)))
    return rows


def hierarchies(tmp: Path) -> dict[str, Path]:
    """ARX hierarchies plus a row for '?' (missing), which Adult has and ARX does not cover."""
    out = {}
    for col, name in HIER.items():
        src = (SHARED / "hierarchies" / f"adult_hierarchy_{name}.csv").read_text(encoding="utf-8").rstrip("\n")
        width = len(src.splitlines()[0].split(";"))
        if col != "age":
            src += "\n" + ";".join(["?"] * (width - 1) + ["*"])
        path = tmp / f"{col}.csv"
        path.write_text(src + "\n", encoding="utf-8")
        out[col] = path
    return out


def policy(hpaths: dict[str, Path], sensitive: str, privacy: dict, table: str = "adult1m") -> dict:
    """Adult, adult1m (prepare builds it always) and ``table`` protected alike: every checkout's
    policy names the same tables, whose grants its login shares (a policy that names a missing
    table is refused)."""
    others = [c for c, _ in ADULT_COLUMNS if c not in QIS and c != sensitive]
    return {"tables": {t: {
        "quasi_identifiers": {c: {"type": "taxonomy", "file": str(hpaths[c])} for c in QIS},
        "sensitive": {sensitive: {"type": "categorical"}},
        "insensitive": others,
        "privacy": privacy,
    } for t in dict.fromkeys(("adult", "adult1m", table))}}


def alpha_k(protect: object) -> dict:
    return {"k": 5, "alpha": {"value": 0.5, "protect": protect}, "max_suppression": 0.2}


#: the configurations of issue 3, per method named by --methods
PARTITIONS = {
    "mondrian": {"mondrian_k5": {"method": "mondrian", "k": 5, "max_suppression": 0},
                 # rows with every QI at the root count as suppressed (benchmarks/suppression.py
                 # measures them): Mondrian leaves 1.5 % there on Adult, SABRE a third
                 "mondrian_l3_t02": {"method": "mondrian", "k": 5, "l": 3, "t": {"value": 0.2, "distance": "equal"},
                                     "max_suppression": 0.05}},
    "sabre": {"sabre_l3_t02": {"method": "sabre", "k": 5, "l": 3, "t": {"value": 0.2, "distance": "equal"},
                               "max_suppression": 0.4}},
    "slicing": {"slicing_l3": {"method": "slicing", "k": 5, "l": 3, "max_suppression": 0}},
    # iterative local recoding over the lattice (issue 23): k=5, to set beside mondrian_k5
    "local": {"local_k5": {"method": "local", "k": 5, "max_suppression": 0}},
    # global (full-domain) recoding, ARX's optimum under its loss with a 4 % suppression limit
    # (issue 23: on Adult's complete rows levels 3,1,0,0,0,1 for k=5 and 3,1,1,0,0,1 for k=10)
    "global": {"global_k5": {"method": "global", "k": 5, "max_suppression": 0.04},
               "global_k10": {"method": "global", "k": 10, "max_suppression": 0.04}},
}
#: the column groups sqlanon's slicing finds on Adult (Cramér's V ≥ 0.3), for the client-side run
SLICE_GROUPS = [["age"], ["education"], ["marital_status", "sex"], ["race", "native_country"], ["occupation"]]


#: the synthetic sizes (--sizes) and their tables, rows
TABLES = {"1m": "adult1m", "10m": "adult10m"}
ROWS = {"1m": 1_000_000, "10m": 10_000_000}


def table_of(size: str) -> str:
    return "adult" if size == "adult" else TABLES[size]


def prepare(url: str, sizes: tuple[str, ...] = ("1m",)) -> None:
    """Adult, adult1m, and the other synthetic sizes asked for."""
    engine = sa.create_engine(url)
    insp = sa.inspect(engine)
    if not insp.has_table("adult"):
        load_table(url, "adult", ADULT_COLUMNS, read_adult_raw())
    for size in (s for s in dict.fromkeys(("1m", *sizes)) if s in TABLES and not insp.has_table(TABLES[s])):
        md = sa.MetaData()
        adult = sa.Table("adult", md, autoload_with=engine)
        copies = sa.Table(f"copies{size}", md, sa.Column("c", sa.Integer))
        big = sa.Table(TABLES[size], md, *[sa.Column(c.name, c.type) for c in adult.columns])
        md.create_all(engine, tables=[copies, big])
        with engine.begin() as conn:
            conn.execute(copies.insert(), [{"c": i} for i in range(-(-ROWS[size] // 32_561))])
            shifted = sa.case((adult.c.age + copies.c.c % 5 - 2 < 17, 17),
                              (adult.c.age + copies.c.c % 5 - 2 > 90, 90),
                              else_=adult.c.age + copies.c.c % 5 - 2)
            cols = [shifted if c.name == "age" else c for c in adult.columns]
            sel = sa.select(*cols).select_from(adult.join(copies, sa.true())).limit(ROWS[size])
            conn.execute(big.insert().from_select([c.name for c in adult.columns], sel))
    engine.dispose()


# -- measurements, each in its own process -------------------------------------------------
def measure_sqlanon(url: str, table: str, hdir: str, sensitive: str, privacy: dict) -> dict:
    import sqlanon

    pol = policy({c: Path(hdir) / f"{c}.csv" for c in QIS}, sensitive, privacy, table)
    cols = ", ".join(QIS + [sensitive])
    # every QI released, few rows fetched: the cost measured is the stage, not the transfer
    sql = "SELECT " + cols + ", COUNT(*) AS n FROM " + table + " GROUP BY " + cols
    # as deployed: a login the database keeps from the table, the pipeline under its reader role
    login, reader = restricted(url, pol)
    engine = sa.create_engine(url)
    with engine.connect() as c:  # the administrator's count: answers report it only with noise
        selected = int(c.execute(sa.text("SELECT COUNT(*) FROM " + table)).scalar())
    engine.dispose()
    cpu = server_cpu.reader(url)
    t0 = time.perf_counter()
    runs = []  # (wall, report, client CPU, server CPU); --repeat: warm runs in one process, the fastest reported
    with sqlanon.connect(login, pol, reader_role=reader) as db:
        t1 = time.perf_counter()
        for _ in range(int(os.environ.get(REPEAT, "1"))):
            start, client, server = time.perf_counter(), time.process_time(), cpu() if cpu else 0.0
            res = db.execute(sql)
            runs.append((time.perf_counter() - start, res.report, time.process_time() - client,
                         cpu() - server if cpu else None))
    wall, rep, _, _ = min(runs, key=lambda r: r[0])
    stage = sum(v for k, v in rep.seconds.items() if k in ("pushdown", "anonymize", "verify"))
    return {"seconds": round(stage, 3), "wall": round(wall, 3), "connect": round(t1 - t0, 3),
            "walls": [round(r[0], 3) for r in runs],
            # CPU seconds of the whole run, the fewest over the runs (server_cpu.py: None for SQLite)
            "client_cpu": round(min(r[2] for r in runs), 3),
            "server_cpu": None if cpu is None else round(min(r[3] for r in runs), 3),
            "rows_in": selected, "method": rep.method, "withheld": selected - rep.rows_released,
            "generalized": rep.rows_generalized,
            "suppressed": selected - rep.rows_released + rep.rows_generalized, "kl_sum": round(rep.kl_sum, 4),
            "arx_loss": None if rep.arx_loss is None else round(rep.arx_loss, 4),
            "nu_entropy": None if rep.nu_entropy is None else round(rep.nu_entropy, 1),
            "discernibility": rep.discernibility, "classes": rep.classes, "statements": rep.statements,
            "checks": [c["measured"] for c in rep.checks], "peak_rss_mb": _rss(),
            **({"lattice": [n for n in rep.notes if n.startswith("global recoding")]}
               if rep.method == "global" else {})}


def measure_floor(url: str, table: str, sensitive: str) -> dict:
    """The physical floor of a pushdown anonymization on this server: a temp copy of the
    selection's QI and sensitive columns, then one GROUP BY of the QIs into a temp table (the
    frequency table), in a session tuned as sqlanon tunes its own (Backend.session_setup), so
    that like is compared with like: PostgreSQL runs neither statement in parallel (a temp
    table is never read by parallel workers, and sqlanon's copy is one too)."""
    from sqlanon.backends.connect import open_database

    db = open_database(url)  # its connections are set up as a run's are
    cpu = server_cpu.reader(url)
    cols = ", ".join(QIS + [sensitive])
    qis = ", ".join(QIS)
    out: dict = {}
    with db.engine.connect() as conn:
        cur = conn.connection.dbapi_connection.cursor()
        for name, sql in (("copy", f"CREATE TEMPORARY TABLE _floor_copy AS SELECT {cols} FROM {table}"),
                          ("group", f"CREATE TEMPORARY TABLE _floor_cells AS SELECT {qis}, COUNT(*) AS n "
                                    f"FROM _floor_copy GROUP BY {qis}")):
            start, server = time.perf_counter(), cpu() if cpu else 0.0
            cur.execute(sql)
            out[name] = round(time.perf_counter() - start, 3)
            out[f"{name}_server_cpu"] = round(cpu() - server, 3) if cpu else None
        cur.execute("DROP TABLE _floor_cells")
        cur.execute("DROP TABLE _floor_copy")
        cur.close()
    db.engine.dispose()
    out["seconds"] = round(out["copy"] + out["group"], 3)
    out["server_cpu"] = round(out["copy_server_cpu"] + out["group_server_cpu"], 3) if cpu else None
    return out


def fetch_rows(url: str, table: str, cols: list[str]) -> tuple[list, float]:
    """The client-side alternatives' first step: every row's columns through the driver."""
    engine = sa.create_engine(url)
    t0 = time.perf_counter()
    tab = sa.Table(table, sa.MetaData(), autoload_with=engine)
    raw = engine.raw_connection()
    cur = raw.cursor()
    cur.execute(str(sa.select(*[tab.c[c] for c in cols]).compile(engine)))
    rows = cur.fetchall()
    raw.close()
    engine.dispose()
    return rows, time.perf_counter() - t0


def measure_client(url: str, table: str, hdir: str, sensitive: str) -> dict:
    import pandas as pd
    from anjana.anonymity import alpha_k_anonymity

    cols = QIS + [sensitive]
    rows, fetch = fetch_rows(url, table, cols)
    df = pd.DataFrame(rows, columns=cols)
    hier = {c: dict(pd.read_csv(Path(hdir) / f"{c}.csv", header=None, sep=";")) for c in QIS}
    t1 = time.perf_counter()
    out = alpha_k_anonymity(df, [], QIS, sensitive, 5, 0.5, 20, hier)
    anon = time.perf_counter() - t1
    return {"seconds": round(fetch + anon, 3), "fetch": round(fetch, 3), "anonymize": round(anon, 3),
            "rows_in": len(df), "withheld": len(df) - len(out), "generalized": int((out[QIS] == "*").all(axis=1).sum()),
            "suppressed": len(df) - len(out) + int((out[QIS] == "*").all(axis=1).sum()), "peak_rss_mb": _rss()}


#: the evaluation queries of John's Rostock thesis (Figures 30, 34, 40–44) and two column-oriented ones
PLANNED = ["SELECT * FROM {t} WHERE age BETWEEN 30 AND 50", "SELECT * FROM {t} WHERE age BETWEEN 30 AND 35",
           "SELECT * FROM {t} WHERE age BETWEEN 80 AND 83", "SELECT * FROM {t} WHERE age = 65",
           "SELECT * FROM {t} WHERE age = 30", "SELECT * FROM {t} WHERE age BETWEEN 30 AND 40",
           "SELECT education, COUNT(*) FROM {t} GROUP BY education", "SELECT age FROM {t} WHERE age = 30"]


def measure_planning(url: str, table: str, hdir: str) -> dict:
    """The planner's overhead per query: parse + analyze + the rule (policy naming the method),
    and the same with ``auto``, which adds the pushed-down COUNT(*) the rule reads."""

    hp = {c: Path(hdir) / f"{c}.csv" for c in QIS}
    out: dict = {}
    for method in ("mondrian", "auto"):
        with connect(url, policy(hp, "occupation", {"k": 5, "method": method}, table)) as db:
            times = []
            for q in PLANNED:
                db.plan(q.format(t=table))  # warm
                t0 = time.perf_counter()
                chosen = db.plan(q.format(t=table))
                times.append(time.perf_counter() - t0)
                if method == "auto":
                    out.setdefault("methods", []).append(chosen.method)
        out[f"{'rule_only' if method != 'auto' else 'auto_with_count'}_ms"] = {
            "max": round(1000 * max(times), 2), "mean": round(1000 * sum(times) / len(times), 2)}
    return out


def measure_client_slicing(url: str, table: str, buckets: int) -> dict:
    """The client-side alternative to slicing: fetch the rows, sort them along the QIs, cut
    them into as many buckets as sqlanon used, and shuffle every column group per bucket."""
    import numpy as np
    import pandas as pd

    cols = [c for g in SLICE_GROUPS for c in g]
    rows, fetch = fetch_rows(url, table, cols)
    t1 = time.perf_counter()
    df = pd.DataFrame(rows, columns=cols).sort_values(QIS, kind="stable").reset_index(drop=True)
    bucket = (np.arange(len(df)) * max(buckets, 1)) // max(len(df), 1)
    rng = np.random.default_rng()
    parts = []
    for g in SLICE_GROUPS:
        order = np.lexsort((rng.random(len(df)), bucket))  # a random order inside each bucket
        parts.append(df[g].iloc[order].reset_index(drop=True))
    out = pd.concat(parts, axis=1)
    anon = time.perf_counter() - t1
    return {"seconds": round(fetch + anon, 3), "fetch": round(fetch, 3), "anonymize": round(anon, 3),
            "rows_in": len(out), "peak_rss_mb": _rss()}


#: the answers ``--methods answer`` reads: all rows in a list, a batch at a time, the first only
ANSWER_MODES = ("execute", "stream", "first_row")
#: at 10 M rows: a list of them is what streaming avoids; ``materialize`` stores the release
#: (rows in random order) in the database instead of sending it
ANSWER_MODES_10M = ("stream", "materialize")


def measure_answer(url: str, table: str, hdir: str, mode: str) -> dict:
    """A released table as the answer (Mondrian, k=5, nothing withheld: every row comes back):
    the time until the first row is in hand, until the last, and the client's peak memory."""
    import sqlanon

    pol = policy({c: Path(hdir) / f"{c}.csv" for c in QIS}, "occupation",
                 {"method": "mondrian", "k": 5, "max_suppression": 0}, table)
    login, reader = restricted(url, pol)
    cpu = server_cpu.reader(url)
    marks: dict[str, tuple[float, float, float]] = {}  # (wall, server CPU, client CPU) at the finish

    def progress(stage: str) -> None:
        if stage.startswith("finish"):  # the last one is told right before the answer's statement
            marks["answer"] = _now(cpu)
            marks.setdefault("finish", marks["answer"])

    with sqlanon.connect(login, pol, reader_role=reader) as db:
        connected = _rss()
        t0, server, client = time.perf_counter(), cpu() if cpu else 0.0, time.process_time()
        if mode == "materialize":
            report = db.materialize(table, into=f"{table}_released", progress=progress)
            done = _now(cpu)  # the release written and committed
            first = time.perf_counter() - t0
            rows = report.rows_released
        elif mode == "execute":
            res = db.execute("SELECT * FROM " + table, progress=progress)
            done = _now(cpu)  # the statement, the rows and the run's end (its temp tables dropped)
            first = time.perf_counter() - t0
            rows, report, released = len(res.rows), res.report, res.rows
        else:
            streamed = db.stream("SELECT * FROM " + table, progress=progress)
            report, it = streamed.report, iter(streamed)
            next(it)
            first = time.perf_counter() - t0
            rows = 1
            if mode == "stream":
                rows += sum(1 for _ in it)
            done = _now(cpu)  # the statement, the rows, not the run's end (the close)
            closing = time.perf_counter()
            streamed.close()
            closed = time.perf_counter() - closing
        total = time.perf_counter() - t0
        spent = round(cpu() - server, 3) if cpu else None
    if mode == "materialize":
        engine = sa.create_engine(url)
        with engine.begin() as c:
            c.execute(sa.text(f"DROP TABLE {table}_released"))  # noqa: S608 - the benchmark's own name
        engine.dispose()
    out = {"mode": mode, "rows": rows, "first_row": round(first, 3), "total": round(total, 3), "server_cpu": spent,
           "pipeline": round(sum(v for k, v in report.seconds.items() if k != "finish"), 3),
           "peak_rss_mb": _rss(), "rss_connected_mb": connected}
    if mode == "first_row":
        out["close"] = round(closed, 3)  # what stopping after the first row cost
    if mode == "execute":  # the released rows whatever their order, to tell that two checkouts agree
        digest = hashlib.sha256()
        for r in sorted(released):
            digest.update(repr(r).encode())
        out["digest"] = digest.hexdigest()[:16]
    if "answer" in marks and mode != "first_row":
        start = (t0, server, client)
        for name, (a, b) in {"stage": (start, marks["finish"]), "finish_before_answer": (marks["finish"], marks["answer"]),
                             "answer": (marks["answer"], done)}.items():
            out[name] = {"wall": round(b[0] - a[0], 3), "server_cpu": round(b[1] - a[1], 3) if cpu else None,
                         "client_cpu": round(b[2] - a[2], 3)}
    return out


def _now(cpu: object) -> tuple[float, float, float]:
    """Wall, server CPU (0 where unknown) and client CPU seconds so far."""
    return time.perf_counter(), cpu() if callable(cpu) else 0.0, time.process_time()


def measure_fetch(url: str, table: str) -> dict:
    """The floor of a whole table as the answer: every row into Python with the driver's own
    cursor (``fetchall``), no anonymization, no order; wall, server and client CPU seconds."""
    engine = sa.create_engine(url)
    cpu = server_cpu.reader(url)
    raw = engine.raw_connection()
    cur = raw.cursor()
    t0, server, client = time.perf_counter(), cpu() if cpu else 0.0, time.process_time()
    cur.execute(f"SELECT * FROM {table}")
    rows = len(cur.fetchall())
    out = {"rows": rows, "wall": round(time.perf_counter() - t0, 3),
           "server_cpu": round(cpu() - server, 3) if cpu else None, "client_cpu": round(time.process_time() - client, 3)}
    raw.close()
    engine.dispose()
    return out


def _rss() -> int:
    """This process's peak resident memory in MB: its own (VmHWM), not the parent's, which a
    forked child's ru_maxrss starts from."""
    try:
        found = re.search(r"^VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    except OSError:
        found = None
    if found is None:  # not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return int(found.group(1)) // 1024


def backend_url(backend: str, sqlite_file: Path, stops: list) -> str:
    """The server to measure on: the URL the tests use, else a local server started here (its
    stop function is appended to ``stops``)."""
    if backend == "sqlite":
        return f"sqlite:///{sqlite_file}"
    url = os.environ.get(f"SQLANON_TEST_{backend.upper()}_URL")
    if not url:
        server = local.start_postgres() if backend == "postgresql" else local.start_mariadb()
        stops.append(server.stop)
        url = server.url
    return url


def finish(results: list, stops: list, path: str | None) -> None:
    """Stop the servers started here; print the results, and write them to ``path``."""
    for stop in stops:
        stop()
    print(json.dumps(results, indent=2))
    if path:
        Path(path).write_text(json.dumps(results, indent=2))


def child(kind: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, *args], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="sqlite,postgresql,mysql")
    ap.add_argument("--sizes", default="adult,1m")
    ap.add_argument("--methods", default="alpha_k,mondrian,sabre,slicing")
    ap.add_argument("--skip-client", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each sqlanon configuration in one process; the fastest is reported")
    ap.add_argument("--child", nargs="+")
    a = ap.parse_args()
    if not a.child:
        os.environ[REPEAT] = str(max(a.repeat, 1))  # read by the measuring children
    if a.child:
        kind, *rest = a.child
        if kind == "sqlanon":
            url, table, hdir, sens, privacy = rest
            print(json.dumps(measure_sqlanon(url, table, hdir, sens, json.loads(privacy))))
        elif kind == "answer":
            url, table, hdir, mode = rest
            print(json.dumps(measure_answer(url, table, hdir, mode)))
        elif kind == "fetch":
            url, table = rest
            print(json.dumps(measure_fetch(url, table)))
        elif kind == "floor":
            url, table, sens = rest
            print(json.dumps(measure_floor(url, table, sens)))
        elif kind == "client_slicing":
            url, table, buckets = rest
            print(json.dumps(measure_client_slicing(url, table, int(buckets))))
        else:
            url, table, hdir, sens = rest
            print(json.dumps(measure_client(url, table, hdir, sens)))
        return

    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-bench-"))
    hdir = str(tmp)
    hierarchies(tmp)
    results = []
    stops = []
    for backend in a.backends.split(","):
        url = backend_url(backend, tmp / "bench.db", stops)
        t0 = time.perf_counter()
        prepare(url, tuple(a.sizes.split(",")))
        print(f"[{backend}] data ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        for size in a.sizes.split(","):
            table = table_of(size)
            row = {"backend": backend, "table": table}
            methods = a.methods.split(",")
            if "alpha_k" in methods:
                row["spec"] = child("sqlanon", url, table, hdir, "income", json.dumps(alpha_k([">50K"])))
                row["occupation"] = child("sqlanon", url, table, hdir, "occupation", json.dumps(alpha_k("all")))
            configs = {name: privacy for m in methods for name, privacy in PARTITIONS.get(m, {}).items()}
            for name, privacy in configs.items():
                row[name] = child("sqlanon", url, table, hdir, "occupation", json.dumps(privacy))
            if "alpha_k" in methods or configs:
                row["floor"] = child("floor", url, table, "occupation")
            if "answer" in methods:
                # 10 M rows in a list are what streaming avoids: only the stream is read there
                modes = ANSWER_MODES_10M if size == "10m" else ANSWER_MODES
                row["answer"] = {mode: child("answer", url, table, hdir, mode) for mode in modes}
                row["answer"]["fetch"] = child("fetch", url, table)
            if not a.skip_client:
                row["client"] = child("client", url, table, hdir, "occupation")
                base = row["client"].get("seconds")
                for name in ("occupation", *configs):
                    if base and "seconds" in row.get(name, {}) and not name.startswith("slicing"):
                        row[name]["ratio_to_client"] = round(row[name]["seconds"] / base, 3)
            if "classes" in row.get("slicing_l3", {}):  # a sliced release's classes are its buckets
                row["client_slicing"] = child("client_slicing", url, table, str(row["slicing_l3"]["classes"]))
                base = row["client_slicing"].get("seconds")
                if base:
                    row["slicing_l3"]["ratio_to_client"] = round(row["slicing_l3"]["seconds"] / base, 3)
            row["planning"] = measure_planning(url, table, hdir)
            print(json.dumps(row), file=sys.stderr)
            results.append(row)
    finish(results, stops, a.json)


if __name__ == "__main__":
    main()
