"""Benchmark of a join over two databases (D2Pt, sqlanon/distributed/) against the same join
inside one database.

UCI Adult's complete rows (30,162; ``--size 1m``: repeated with new person ids to 1,000,000) are
split vertically by a person id: ``adult_qi`` (pid, age, education, marital_status, race, sex,
native_country) in PostgreSQL, ``adult_sa`` (pid, occupation, income) in MariaDB. The policy:
the six quasi-identifiers with ARX's hierarchies, occupation sensitive, income insensitive,
k=5, t=0.2 (equal distance) on occupation, at most 4 % withheld. Measured:

- ``d2pt``: ``SELECT q.age, …, s.occupation, s.income FROM pg.adult_qi q JOIN maria.adult_sa s
  ON s.pid = q.pid`` through ``sqlanon.connect({"pg": …, "maria": …})``: wall time of
  ``execute``, bytes each database sent to the client and received from it (the values as the
  client holds them; nothing goes from one database to the other), rows withheld;
- ``single``: the same join with both tables in one PostgreSQL database, through the ordinary
  flow (``auto`` picks its method), and the bytes of its answer;
- the KL sum of both releases (John's thesis §6.1: per QI, the released labels' rows spread
  evenly over the original values each covers, suppressed rows carrying no mass), computed
  here from the released rows and the original data, by code independent of sqlanon.

Usage:  python benchmarks/d2pt.py [--size adult|1m] [--json out.json]
Servers: SQLANON_TEST_POSTGRESQL_URL / SQLANON_TEST_MYSQL_URL, else local servers as the tests
start them.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlanon  # noqa: E402
from benchmarks.methods import QIS, backend_url, hierarchies, read_adult_raw  # noqa: E402
from sqlanon.distributed.party import size  # noqa: E402
from sqlanon.errors import ReleaseRefused  # noqa: E402
from tests.helpers import load_table  # noqa: E402

PRIVACY = {"k": 5, "t": {"value": 0.2, "distance": "equal"}, "max_suppression": 0.04}
SELECT = ", ".join(f"q.{c}" for c in QIS) + ", s.occupation, s.income"


def data(n: int | None) -> tuple[list[tuple], list[tuple]]:
    """(pid, QIs…) and (pid, occupation, income) of Adult's complete rows, repeated to ``n``."""
    complete = [r for r in read_adult_raw() if "?" not in r]
    rows = complete if n is None else [complete[i % len(complete)] for i in range(n)]
    qi = [(i, r[0], r[3], r[5], r[8], r[9], r[13]) for i, r in enumerate(rows)]
    sa_ = [(i, r[6], r[14]) for i, r in enumerate(rows)]
    return qi, sa_


def policy(h: dict[str, Path], prefix: dict[str, str]) -> dict:
    return {"tables": {
        f"{prefix['qi']}adult_qi": {"identifiers": ["pid"], "privacy": {k: v for k, v in PRIVACY.items() if k != "t"},
                                    "quasi_identifiers": {c: {"type": "taxonomy", "file": str(h[c])} for c in QIS}},
        f"{prefix['sa']}adult_sa": {"identifiers": ["pid"], "privacy": PRIVACY,
                                    "sensitive": {"occupation": {"type": "categorical"}}, "insensitive": ["income"]}}}


def fresh(admin: str, name: str) -> str:
    """A new database ``name`` on the server of ``admin`` (dropped first if it exists)."""
    u = sa.engine.make_url(admin)
    engine = sa.create_engine(u, isolation_level="AUTOCOMMIT")
    q = engine.dialect.identifier_preparer.quote_identifier(name)
    with engine.connect() as c:
        c.exec_driver_sql(f"DROP DATABASE IF EXISTS {q}")
        c.exec_driver_sql(f"CREATE DATABASE {q}")
    engine.dispose()
    return u.set(database=name).render_as_string(hide_password=False)


def covers(h: dict[str, Path]) -> dict[str, dict[str, set[str]]]:
    """Per QI: label → the original values it covers (its taxonomy's rows that list it)."""
    out: dict[str, dict[str, set[str]]] = {}
    for c in QIS:
        cov: dict[str, set[str]] = defaultdict(set)
        with open(h[c], encoding="utf-8") as f:
            for row in csv.reader(f, delimiter=";"):
                for label in row:
                    cov[label].add(row[0])
        out[c] = cov
    return out


def kl_sum(original: list[tuple], released: list[tuple], cov: dict[str, dict[str, set[str]]]) -> float:
    """Σ over the QIs of D(p‖q)/H(p) (bits), p the original values' shares, q the released
    labels' rows spread evenly over the values each covers (thesis §6.1)."""
    total = 0.0
    n = len(original)
    for j, c in enumerate(QIS):
        p = Counter(str(r[j]) for r in original)
        q: dict[str, float] = defaultdict(float)
        for label, m in Counter(str(r[j]) for r in released).items():
            values = cov[c].get(label, {label})
            for v in values:
                q[v] += m / len(values)
        entropy = -sum(x / n * math.log2(x / n) for x in p.values())
        d = sum(x / n * math.log2((x / n) / (q[v] / n)) if q.get(v) else math.inf for v, x in p.items())
        total += d / entropy if entropy else 0.0
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=["adult", "1m"], default="adult")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    stops: list = []
    tmp = Path(tempfile.mkdtemp())
    h = hierarchies(tmp)
    cov = covers(h)
    qi, sa_ = data(None if args.size == "adult" else 1_000_000)
    original = [r[1:] for r in qi]
    pg = backend_url("postgresql", tmp / "x.db", stops)
    maria = backend_url("mysql", tmp / "x.db", stops)
    results: dict = {"rows": len(qi)}
    try:
        qi_cols = [("pid", "int")] + [(c, "int" if c == "age" else "text") for c in QIS]
        sa_cols = [("pid", "int"), ("occupation", "text"), ("income", "text")]
        urls = {"pg": fresh(pg, "d2pt_qi"), "maria": fresh(maria, "d2pt_sa")}
        single = fresh(pg, "d2pt_single")
        t0 = time.perf_counter()
        load_table(urls["pg"], "adult_qi", qi_cols, qi)
        load_table(urls["maria"], "adult_sa", sa_cols, sa_)
        load_table(single, "adult_qi", qi_cols, qi)
        load_table(single, "adult_sa", sa_cols, sa_)
        results["load_seconds"] = round(time.perf_counter() - t0, 1)

        with sqlanon.connect(urls, policy(h, {"qi": "pg.", "sa": "maria."}), catalog=False, unrestricted=True) as f:
            t0 = time.perf_counter()
            answer = f.execute(f"SELECT {SELECT} FROM pg.adult_qi q JOIN maria.adult_sa s ON s.pid = q.pid")
            wall = time.perf_counter() - t0
        r = answer.report
        results["d2pt"] = {"seconds": round(wall, 2), "stages": {k: round(v, 2) for k, v in r.seconds.items()},
                           "rows_released": r.rows_released, "rows_withheld_noisy": r.rows_withheld,
                           "classes": r.classes, "levels": r.levels, "checks": [c["measured"] for c in r.checks],
                           "bytes_to_client": r.bytes_to_client, "bytes_to_databases": r.bytes_to_databases,
                           "bytes_between_databases": 0, "parties": r.parties,
                           "kl_sum": round(kl_sum(original, [x[:6] for x in answer.rows], cov), 4)}

        with sqlanon.connect(single, policy(h, {"qi": "", "sa": ""}), catalog=False, unrestricted=True) as s:
            for method in (None, "mondrian"):  # auto's choice, else Mondrian (it keeps t with fewer rows withheld)
                t0 = time.perf_counter()
                try:
                    res = s.execute(f"SELECT {SELECT} FROM adult_qi q JOIN adult_sa s ON s.pid = q.pid",
                                    method=method)
                    break
                except ReleaseRefused as e:
                    results.setdefault("single_refused", []).append(f"{method or 'auto'}: {e.message}")
            wall = time.perf_counter() - t0
        results["single"] = {"seconds": round(wall, 2), "method": res.report.method,
                             "rows_released": res.report.rows_released, "classes": res.report.classes,
                             "bytes_to_client": size(res.rows),
                             "kl_sum": round(kl_sum(original, [x[:6] for x in res.rows], cov), 4)}
    finally:
        for stop in stops:
            stop()
    print(json.dumps(results, indent=2, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
