"""Benchmark of ``discover`` and ``risk`` inside the database (issue 26's targets on PostgreSQL:
at 1 M rows and 15 columns, discover up to combinations of 3 columns in under 30 s, risk in
under 5 s).

Tables, built inside the database: benchmarks/methods.py's ``adult1m`` (UCI Adult repeated with
ages shifted by -2..+2 up to 1,000,000 rows, 15 columns; Adult itself as ``adult``) and
``wide1m``, 1,000,000 rows of 15 integer columns c1..c15 with 2 to 1,000,000 values each
(((n · p) mod 1,000,003) mod m: a permutation of the row number, folded), whose pairs and
triples are spread like independent columns — the lattice search cannot settle them by the
bound and must measure them. Per backend and table it times:

- ``discover``: ``sqlanon.discover.discover(table, max_size=3, threshold=0.95)`` — the lattice of
  575 combinations (a random sample of 100,000 rows first) — with the whole-table measurements
  of a level two at a time on connections of their own (the default), and in turn, in the same
  run, one at a time on one connection (``discover_one_connection``; ``speedup`` = its best time
  over the default's);
- ``risk``: ``sqlanon.api.risk`` over the six usual quasi-identifiers (age, education,
  marital_status, race, sex, native_country; on wide1m c1..c6), population 'usa'.

Measured (PostgreSQL, 2 cores shared with other jobs; two runs): adult1m discover 7.5–9.3 s (78
of 575 combinations measured, all on the sample; 497 settled by the bound), risk 0.3–0.7 s;
wide1m discover 77–87 s on one connection (89 measured on the sample, 70 confirmed on the whole
table by a GROUP BY of about a million groups, 0.8–1.2 s each: 45 minimal nearly unique
combinations and 25 that qualified on the sample only: 88 % of the time), risk 0.8 s; Adult
discover 2.9–3.0 s, risk 0.05–0.08 s. With two connections (``--repeat 2``, load average ~10
on the 2 cores): wide1m 96–104 s against 151–176 s on one connection (1.57×), adult1m 18.8–19.9
s against 17.9–19.6 s (0.95×: one whole-table measurement, nothing to send side by side), risk
1.3–1.5 s. Tried on wide1m and not kept (no clear win): GROUPING SETS over five combinations in
one statement (1.2–1.5× slower than five statements), one combined integer key instead of
three columns (1.09×), sort instead of hash aggregation (one run, 1.2×).

Usage:  python benchmarks/discover_risk.py [--backends postgresql] [--sizes adult,1m,wide] [--max-size 3]
        [--repeat N] [--json out.json]
Servers: SQLANON_TEST_POSTGRESQL_URL / SQLANON_TEST_MYSQL_URL, else local servers as the tests
start them.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from benchmarks.methods import QIS, backend_url, finish, prepare  # noqa: E402

#: values per column of wide1m
MODULI = [2, 3, 5, 7, 12, 31, 50, 100, 365, 1000, 5000, 20000, 100000, 500000, 1000000]
PRIME = 1_000_003


def prepare_wide(url: str) -> None:
    """wide1m: row n of 1,000,000 (a cross join of two 1,000-row number tables), column c_k =
    ((n · p_k) mod 1,000,003) mod m_k with a different multiplier p_k per column."""
    engine = sa.create_engine(url)
    if sa.inspect(engine).has_table("wide1m"):
        engine.dispose()
        return
    md = sa.MetaData()
    numbers = sa.Table("numbers1k", md, sa.Column("i", sa.BigInteger))
    wide = sa.Table("wide1m", md, *[sa.Column(f"c{k + 1}", sa.BigInteger) for k in range(len(MODULI))])
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(numbers.insert(), [{"i": i} for i in range(1000)])
        a, b = numbers.alias("a"), numbers.alias("b")
        n = sa.cast(a.c.i * 1000 + b.c.i, sa.BigInteger)
        cols = [(n * (7919 + 104729 * k) % PRIME) % m for k, m in enumerate(MODULI)]
        conn.execute(wide.insert().from_select([c.name for c in wide.columns], sa.select(*cols).select_from(
            a.join(b, sa.true()))))
    engine.dispose()


def discover(url: str, table: str, max_size: int, workers: int):  # noqa: ANN201 - a Discovery
    """``discover`` with ``workers`` exact measurements at a time (1: one connection, as before)."""
    from sqlanon.backends.connect import open_database
    from sqlanon.discover import discover as search

    db = open_database(url)
    try:
        return search(db, table, max_size=max_size, threshold=0.95, workers=workers)
    finally:
        db.dispose()


def measure(url: str, table: str, max_size: int, repeat: int) -> dict:
    from sqlanon import api
    from sqlanon.discover.find import WORKERS

    out: dict = {}
    walls, ones = [], []
    for _ in range(repeat):  # one connection and side by side in turn, in the same run
        t0 = time.perf_counter()
        discover(url, table, max_size, 1)
        ones.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        d = discover(url, table, max_size, WORKERS)
        walls.append(time.perf_counter() - t0)
    out["discover_one_connection"] = {"seconds": round(min(ones), 2), "walls": [round(w, 2) for w in ones]}
    out["discover"] = {"seconds": round(min(walls), 2), "walls": [round(w, 2) for w in walls], "rows": d.rows,
                       "workers": WORKERS, "speedup": round(min(ones) / min(walls), 2),
                       "sample_rows": d.sample_rows, "lattice": d.lattice, "measured": d.measured,
                       "settled_by_bound": d.bounded, "on_sample": d.on_sample, "on_table": d.on_table,
                       "statements": d.statements,
                       "found": [list(c) for c, _ in d.found],
                       "identifier_like": [i.column for i in d.identifiers]}
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = api.risk(url, table, qi=QIS if table != "wide1m" else [f"c{k}" for k in range(1, 7)],
                     population="usa")
        walls.append(time.perf_counter() - t0)
    out["risk"] = {"seconds": round(min(walls), 2), "walls": [round(w, 2) for w in walls],
                   "records": r.sample.records, "classes": r.sample.classes, "sample_uniques": r.sample.uniques,
                   "population_model": r.population.model, "population_uniques": round(r.population.uniques)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="postgresql")
    ap.add_argument("--sizes", default="adult,1m,wide")
    ap.add_argument("--max-size", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-bench-"))
    results, stops = [], []
    try:
        for backend in a.backends.split(","):
            url = backend_url(backend, tmp / "bench.db", stops)
            t0 = time.perf_counter()
            prepare(url)
            if "wide" in a.sizes:
                prepare_wide(url)
            print(f"[{backend}] data ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            for size in a.sizes.split(","):
                table = {"adult": "adult", "1m": "adult1m", "wide": "wide1m"}[size]
                row = {"backend": backend, "table": table, **measure(url, table, a.max_size, a.repeat)}
                print(json.dumps(row), file=sys.stderr)
                results.append(row)
    finally:
        finish(results, stops, a.json)


if __name__ == "__main__":
    main()
