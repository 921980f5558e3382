"""Benchmark of the catalog: stored releases with and without it, and the release-log checks.

For each backend, on UCI Adult and on the 1,000,000-row Adult-like table of ``methods.py`` (both
copied with a primary key, which the row-by-row memory of stored releases needs):

- ``materialize``: the whole table released with the default method (``auto``), k=5, into a new
  table, without a catalog (the baseline of the same run), with the catalog (release log, memory
  of every row, union of all releases measured), and a ``--refresh`` of it after 1 % of the rows
  changed;
- ``log_checks``: a release log of 10,000 releases of the table (written directly, with 10,000
  distinct predicates, 400 of them inside the difference window), then a selective query answered again and
  again: the catalog's lookup of earlier selections alone, the whole differencing check (lookup +
  one pass over the table comparing the 50 newest other selections), and the query's time
  without a catalog;
- ``answers``: the memory of the rows each answer selected: a selection, the same rows again,
  another selection, with and without the catalog.

Usage:  python benchmarks/catalog.py [--backends sqlite,postgresql,mysql] [--sizes adult,1m] [--json out.json]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
from sqlglot import exp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.methods import QIS, backend_url, finish, hierarchies, prepare  # noqa: E402
from sqlanon.backends.connect import open_database  # noqa: E402
from sqlanon.catalog import migrate  # noqa: E402
from sqlanon.catalog.schema import Names, tables  # noqa: E402
from sqlanon.catalog.store import fingerprint  # noqa: E402
from tests.helpers import ADULT_COLUMNS, connect  # noqa: E402

LOG_SIZE = 10_000
#: log entries inside the difference window (below differencing.MAX_SELECTIONS)
IN_WINDOW = 400
REPEAT = 20


def keyed(url: str, source: str) -> str:
    """``source`` copied with a primary key ``rid`` (row number)."""
    name = source + "_pk"
    engine = sa.create_engine(url)
    if not sa.inspect(engine).has_table(name):
        md = sa.MetaData()
        src = sa.Table(source, md, autoload_with=engine)
        dst = sa.Table(name, md, sa.Column("rid", sa.Integer, primary_key=True, autoincrement=False),
                       *[sa.Column(c.name, c.type) for c in src.columns])
        md.create_all(engine, tables=[dst])
        rn = sa.func.row_number().over(order_by=[src.c.age, src.c.fnlwgt, src.c.education])
        with engine.begin() as c:
            c.execute(dst.insert().from_select(["rid", *[c.name for c in src.columns]],
                                               sa.select(rn, *src.columns)))
    engine.dispose()
    return name


def policy(hdir: Path, table: str, **privacy: object) -> dict:
    others = [c for c, _ in ADULT_COLUMNS if c not in QIS and c != "occupation"]
    return {"tables": {table: {
        "identifiers": ["rid"],
        "quasi_identifiers": {c: {"type": "taxonomy", "file": str(hdir / f"{c}.csv")} for c in QIS},
        "sensitive": {"occupation": {"type": "categorical"}},
        "insensitive": others,
        "privacy": {"k": 5, "max_suppression": 0.05, **privacy},
    }}}


def drop(url: str, *names: str) -> None:
    engine = sa.create_engine(url)
    md = sa.MetaData()
    for n in names:
        sa.Table(n, md).drop(engine, checkfirst=True)
    engine.dispose()


def reset_catalog(url: str) -> None:
    db = open_database(url)
    try:
        if migrate.current(db) is not None:
            migrate.downgrade(db, "base")
        names = Names.of(db.backend)
        insp = sa.inspect(db.engine)
        md = sa.MetaData(schema=names.schema)
        for t in insp.get_table_names(schema=names.schema):
            if t.startswith(names("rows_")):
                sa.Table(t, md).drop(db.engine)
    finally:
        db.dispose()


def measure_materialize(url: str, table: str, hdir: Path) -> dict:
    out: dict = {}
    drop(url, "bench_plain", "bench_kept")
    reset_catalog(url)
    with connect(url, policy(hdir, table), catalog=False) as db:
        t0 = time.perf_counter()
        rep = db.materialize(table, "bench_plain")
        out["without_catalog"] = {"seconds": round(time.perf_counter() - t0, 3), "method": rep.method,
                                  "released": rep.rows_released}
    with connect(url, policy(hdir, table), catalog=True) as db:
        t0 = time.perf_counter()
        rep = db.materialize(table, "bench_kept")
        out["with_catalog"] = {"seconds": round(time.perf_counter() - t0, 3), "released": rep.rows_released}
        engine = sa.create_engine(url)
        t = sa.Table(table, sa.MetaData(), autoload_with=engine)
        with engine.begin() as c:  # 1 % of the rows change their hours (an insensitive column)
            c.execute(t.update().where(t.c.rid % 100 == 0).values(hours_per_week=t.c.hours_per_week + 1))
        engine.dispose()
        t0 = time.perf_counter()
        rep = db.materialize(table, "bench_kept", refresh=True)
        out["refresh"] = {"seconds": round(time.perf_counter() - t0, 3), "released": rep.rows_released,
                          "notes": [n for n in rep.notes if "together" in n or "consistent" in n]}
    base = out["without_catalog"]["seconds"]
    out["ratio_with_catalog"] = round(out["with_catalog"]["seconds"] / base, 2)
    out["ratio_refresh"] = round(out["refresh"]["seconds"] / base, 2)
    drop(url, "bench_plain", "bench_kept")
    return out


def fill_log(url: str, table: str) -> None:
    db = open_database(url)
    try:
        migrate.upgrade(db)
        names = Names.of(db.backend)
        releases = tables(names).releases
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        rows = []
        fnlwgt = exp.column("fnlwgt", table=table, quoted=True)
        for i in range(LOG_SIZE):
            pred = db.backend.render(exp.GT(this=fnlwgt.copy(), expression=exp.Literal.number(100_000 + 50 * i)))
            # the newest below the cap of distinct selections in the window (differencing refuses
            # beyond it), the rest older than the window: the log is large, the window full
            age = dt.timedelta(seconds=LOG_SIZE - i) if i >= LOG_SIZE - IN_WINDOW else dt.timedelta(days=2, seconds=-i)
            rows.append(dict(at=now - age, client="bench", front_end="library",
                             table_name=table, predicate=pred, fingerprint=fingerprint(pred), method="mondrian",
                             parameters="{}", rows_in=0, rows_released=0, rows_suppressed=0, classes=0, report="{}"))
        with db.engine.begin() as c:
            for i in range(0, len(rows), 2000):
                c.execute(releases.insert(), rows[i:i + 2000])
    finally:
        db.dispose()


def measure_log_checks(url: str, table: str, hdir: str) -> dict:
    reset_catalog(url)
    fill_log(url, table)
    sql = f"SELECT education, COUNT(*) AS n FROM {table} WHERE age >= 40 GROUP BY education"
    pol = policy(Path(hdir), table, method="mondrian")
    out: dict = {"log_size": LOG_SIZE}
    with connect(url, pol, catalog=True) as db:
        since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(days=1)
        lookups, guards, totals = [], [], []
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            db.catalog.earlier(table, since, "x", 50)
            lookups.append(time.perf_counter() - t0)
        for _ in range(REPEAT // 4):
            t0 = time.perf_counter()
            rep = db.execute(sql).report
            totals.append(time.perf_counter() - t0)
            guards.append(rep.seconds.get("guard", 0.0))
    with connect(url, pol, catalog=False) as db:
        plain = []
        for _ in range(REPEAT // 4):
            t0 = time.perf_counter()
            db.execute(sql)
            plain.append(time.perf_counter() - t0)
    ms = lambda xs: round(1000 * statistics.median(xs), 2)  # noqa: E731
    out.update(lookup_ms=ms(lookups), differencing_check_ms=ms(guards), query_with_catalog_ms=ms(totals),
               query_without_catalog_ms=ms(plain))
    out["ratio"] = round(statistics.median(totals) / statistics.median(plain), 2)
    reset_catalog(url)
    return out


def measure_answers(url: str, table: str, hdir: str) -> dict:
    """The catalog's memory of the rows each answer selected (the temporal attack's defence): a
    selection answered, the same rows asked again, another selection — with and without the
    catalog, each the median of three rounds from an empty catalog (milliseconds)."""
    pol = policy(Path(hdir), table, method="mondrian")
    queries = {"first": f"SELECT age, education, occupation FROM {table} WHERE age >= 30",
               "again": f"SELECT age, education, occupation FROM {table} WHERE age >= 30",
               "other": f"SELECT age, education, occupation FROM {table} WHERE age >= 40"}
    out: dict = {}
    for label, catalog in (("without_catalog", False), ("with_catalog", True)):
        runs: dict[str, list[float]] = {q: [] for q in queries}
        guards: dict[str, list[float]] = {q: [] for q in queries}
        for _ in range(3):
            reset_catalog(url)
            with connect(url, pol, catalog=catalog) as db:
                for name, sql in queries.items():
                    t0 = time.perf_counter()
                    rep = db.execute(sql).report
                    runs[name].append(time.perf_counter() - t0)
                    guards[name].append(rep.seconds.get("guard", 0.0))
        out[label] = {q: round(1000 * statistics.median(v), 1) for q, v in runs.items()}
        out[label]["guard_other"] = round(1000 * statistics.median(guards["other"]), 1)
    reset_catalog(url)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="sqlite,postgresql,mysql")
    ap.add_argument("--sizes", default="adult,1m")
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-bench-"))
    hierarchies(tmp)
    results, stops = [], []
    for backend in a.backends.split(","):
        url = backend_url(backend, tmp / "bench.db", stops)
        prepare(url)
        for size in a.sizes.split(","):
            table = keyed(url, "adult" if size == "adult" else "adult1m")
            row = {"backend": backend, "table": table, "materialize": measure_materialize(url, table, tmp),
                   "log_checks": measure_log_checks(url, table, str(tmp)),
                   "answers": measure_answers(url, table, str(tmp))}
            print(json.dumps(row), file=sys.stderr)
            results.append(row)
    finish(results, stops, a.json)


if __name__ == "__main__":
    main()
