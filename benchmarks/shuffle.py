"""What the answer's random order costs on PostgreSQL, and whether paying it elsewhere is cheaper.

Every answer is ordered at random (pushdown/fragment.py: no order that follows the source), so
a ``SELECT *`` of 10 M released rows is a sort of all of them before the first row is sent.
This times, by the server's CPU seconds (server_cpu.py) and wall, on one session set up as a
run's (work_mem 256 MB): a temp copy of the table standing for the release, written in source
order and in random order (the order paid once, at the write), then the answer read without
an order and with ``ORDER BY random()`` — spilled as a run spills it, in memory (work_mem of
4 GB), and on a 4-byte integer key; and a bucketed shuffle: each row written into one of
BUCKETS tables (the partitions of one) at random, the answer their rows bucket by bucket, each
bucket ``ORDER BY random()`` in memory — as uniform a permutation as one sort on a random key,
its first row after one bucket's sort. The answers run under ``EXPLAIN ANALYZE``: every row is
produced and sorted, none is sent, so the figures are the server's alone. The fewest seconds
of each over the rounds are reported.

Usage:  python benchmarks/shuffle.py [--size 1m|10m] [--rounds 2]
The table must exist (``python benchmarks/methods.py --sizes 10m`` loads it); the server as
methods.py finds it (SQLANON_TEST_POSTGRESQL_URL, else a local one started here).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import methods  # noqa: E402
import server_cpu  # noqa: E402

#: the bucketed shuffle's tables
BUCKETS = 16
#: made before the statements timed: the bucketed release's partitioned table
SETUP = ("CREATE TEMPORARY TABLE rel_buckets (b INTEGER, LIKE {t}) PARTITION BY LIST (b)",
         *(f"CREATE TEMPORARY TABLE rel_bucket_{i} PARTITION OF rel_buckets FOR VALUES IN ({i})"
           for i in range(BUCKETS)))
#: (name, statement, work_mem): ``{t}`` is the table, ``rel`` the release standing in for it
STATEMENTS = (
    ("write", "CREATE TEMPORARY TABLE rel AS SELECT * FROM {t}", None),
    ("write_shuffled", "CREATE TEMPORARY TABLE rel_shuffled AS SELECT * FROM {t} ORDER BY random()", None),
    ("answer_unordered", "EXPLAIN ANALYZE SELECT * FROM rel", None),
    ("answer_random", "EXPLAIN ANALYZE SELECT * FROM rel ORDER BY random()", None),
    ("answer_random_in_memory", "EXPLAIN ANALYZE SELECT * FROM rel ORDER BY random()", "4GB"),
    ("answer_random_int4", "EXPLAIN ANALYZE SELECT * FROM rel ORDER BY (random() * 2147483647)::int4", None),
    ("write_bucketed", f"INSERT INTO rel_buckets SELECT floor(random() * {BUCKETS})::int, s.* FROM {{t}} s", None),
    ("answer_bucketed", "EXPLAIN ANALYZE " + " UNION ALL ".join(
        f"(SELECT * FROM rel_bucket_{i} ORDER BY random())" for i in range(BUCKETS)), None),
)


def measure(url: str, table: str) -> dict:
    """One round in a fresh session: each statement's server CPU and wall seconds."""
    from sqlanon.backends.connect import open_database

    db = open_database(url)  # its connections are set up as a run's are
    cpu = server_cpu.reader(url)
    assert cpu is not None, "the server's CPU is read from /proc: run it on this machine"
    out: dict = {}
    with db.engine.connect() as conn:
        cur = conn.connection.dbapi_connection.cursor()
        for sql in SETUP:
            cur.execute(sql.format(t=table))
        for name, sql, work_mem in STATEMENTS:
            cur.execute(f"SET work_mem = '{work_mem or '256MB'}'")
            start, server = time.perf_counter(), cpu()
            cur.execute(sql.format(t=table))
            plan = cur.fetchall() if sql.startswith("EXPLAIN") else []
            out[name] = {"server_cpu": round(cpu() - server, 2), "wall": round(time.perf_counter() - start, 2)}
            out[name].update(("sort", line.strip()) for (line,) in plan if "Sort Method" in line)
            if name.startswith("write"):  # its hint bits set, as verification leaves them
                cur.execute(f"SELECT COUNT(*) FROM {'rel_buckets' if name == 'write_bucketed' else 'rel'}")
                cur.fetchall()
        cur.close()
    db.engine.dispose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="10m", choices=sorted(methods.TABLES))
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    stops: list = []
    url = methods.backend_url("postgresql", Path(tempfile.gettempdir()) / "unused.db", stops)
    try:
        methods.prepare(url, (a.size,))
        rounds = [measure(url, methods.TABLES[a.size]) for _ in range(a.rounds)]
    finally:
        for stop in stops:
            stop()
    best = {name: min((r[name] for r in rounds), key=lambda m: m["server_cpu"]) for name, _, _ in STATEMENTS}
    print(json.dumps({"size": a.size, "rounds": a.rounds, "best": best, "all": rounds}, indent=2))


if __name__ == "__main__":
    main()
