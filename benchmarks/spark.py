"""Benchmark: the same pipelines on Spark SQL (local[2], this machine) and on PostgreSQL, at 1 M and
10 M Adult-like rows (Adult repeated with ages shifted by -2..+2, as benchmarks/methods.py builds
it), for (α,k) (k=5, α=0.5 on income '>50K') and Mondrian (k=5, sensitive occupation).

Each measurement runs in a fresh subprocess (benchmarks/methods.py's ``measure_sqlanon``): the
query releases every quasi-identifier with a count per released combination, so the time is the
anonymization, not the transfer. Reported: the stages' seconds (pushdown + anonymize + verify),
the wall time, statements sent, and the client's peak resident memory — for Spark both the
Python process and the driver JVM (local mode: the driver is also the executors; its heap is
``spark.driver.memory``), and the bytes its shuffles wrote and read. Spark's tables are Parquet in a warehouse directory, registered in each
child with ``?parquet=DIR``.

Usage:  python benchmarks/spark.py [--sizes 1m,10m] [--backends spark,postgresql] [--methods alpha_k,mondrian]
        [--json out.json]
Needs ``pip install -e '.[bench,spark]'`` and Java 17.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import methods  # noqa: E402

#: the measured configurations
CONFIGS = {"alpha_k": ("income", methods.alpha_k([">50K"])),
           "mondrian": ("occupation", {"method": "mondrian", "k": 5, "max_suppression": 0})}
SIZES = {"1m": 1_000_000, "10m": 10_000_000}
#: Spark as measured: two cores, few shuffle partitions, no UI
SETTINGS = {"master": "local[2]", "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false",
            "spark.driver.memory": "3g"}


def spark_url(warehouse: Path) -> str:
    query = "&".join(f"{k}={v}" for k, v in {**SETTINGS, "parquet": f"{warehouse}/bench.db",
                                             "spark.sql.warehouse.dir": str(warehouse)}.items())
    return f"spark:///bench?{query}"


def prepare_spark(warehouse: Path, sizes: list[str]) -> None:
    """Adult and its enlargements as Parquet tables of database ``bench``, built by Spark."""
    from pyspark.sql import SparkSession

    from tests.helpers import ADULT_COLUMNS

    builder = SparkSession.builder.master("local[2]").config("spark.sql.warehouse.dir", str(warehouse))
    for k, v in SETTINGS.items():
        if k != "master":
            builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    schema = ", ".join(f"{c} {'int' if t == 'int' else 'string'}" for c, t in ADULT_COLUMNS)
    if not spark.catalog.tableExists("adult", "bench"):
        spark.createDataFrame(methods.read_adult_raw(), schema).write.format("parquet").saveAsTable("bench.adult")
    for size in sizes:
        name, n = f"adult{size}", SIZES[size]
        if spark.catalog.tableExists(name, "bench"):
            continue
        copies = -(-n // 32561)
        age = "LEAST(90, GREATEST(17, age + CAST(r.id % 5 AS INT) - 2))"
        others = ", ".join(c for c, _ in ADULT_COLUMNS if c != "age")
        spark.sql(f"CREATE TABLE bench.{name} USING PARQUET AS SELECT {age} AS age, {others} "
                  f"FROM bench.adult CROSS JOIN range({copies}) AS r LIMIT {n}")
    spark.stop()


def prepare_postgres(url: str, sizes: list[str]) -> None:
    """Adult and its 1 M enlargement as benchmarks/methods.py builds them; 10 M likewise."""
    import sqlalchemy as sa

    methods.prepare(url)
    if "10m" in sizes:
        engine = sa.create_engine(url)
        with engine.begin() as c:
            if not sa.inspect(c).has_table("adult10m"):
                c.exec_driver_sql(
                    "CREATE TABLE adult10m AS SELECT LEAST(90, GREATEST(17, age + MOD(g, 5) - 2)) AS age, "
                    "workclass, fnlwgt, education, education_num, marital_status, occupation, relationship, race, "
                    "sex, capital_gain, capital_loss, hours_per_week, native_country, income "
                    "FROM adult CROSS JOIN generate_series(0, 307) AS g LIMIT 10000000")
        engine.dispose()


def _jvm_rss_mb() -> int | None:
    """Peak resident memory of this process's Java children (the Spark driver), in MB."""
    out = subprocess.run(["ps", "--ppid", str(os.getpid()), "-o", "pid=,comm="], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        pid, comm = line.split(None, 1)
        if "java" in comm:
            found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
            return int(found.group(1)) // 1024 if found else None
    return None


def _shuffled() -> dict:
    """The bytes the run's jobs wrote to and read from shuffles, from the JVM's status store
    (pyspark's status tracker has no shuffle figures): the executors' totals, which count every
    stage, where the stage list keeps only the last ``spark.ui.retainedStages``."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    summaries = session.sparkContext._jsc.sc().statusStore().executorList(True)
    executors = [summaries.apply(i) for i in range(summaries.size())]
    return {"shuffle_write_mb": round(sum(e.totalShuffleWrite() for e in executors) / 2**20, 1),
            "shuffle_read_mb": round(sum(e.totalShuffleRead() for e in executors) / 2**20, 1)}


def measure(url: str, table: str, hdir: str, method: str) -> dict:
    sensitive, privacy = CONFIGS[method]
    adult_policy = methods.policy

    def policy(hpaths: dict, sens: str, priv: dict, *_: str) -> dict:  # the measured table alone (adult10m too)
        return {"tables": {table: adult_policy(hpaths, sens, priv)["tables"]["adult"]}}

    methods.policy = policy
    out = methods.measure_sqlanon(url, table, hdir, sensitive, privacy)
    if url.startswith("spark"):
        out["driver_jvm_peak_rss_mb"] = _jvm_rss_mb()
        out.update(_shuffled())
    out.pop("checks", None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1m")
    ap.add_argument("--backends", default="spark,postgresql")
    ap.add_argument("--methods", default="alpha_k,mondrian")
    ap.add_argument("--json")
    ap.add_argument("--child", nargs=4)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(*a.child)))
        return
    sizes = a.sizes.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-spark-bench-"))
    hdir = tmp / "hier"
    hdir.mkdir()
    methods.hierarchies(hdir)
    results, stops = [], []
    for backend in a.backends.split(","):
        if backend == "spark":
            warehouse = tmp / "warehouse"
            prepare_spark(warehouse, sizes)
            url = spark_url(warehouse)
        else:
            url = methods.backend_url(backend, tmp / "unused.db", stops)
            prepare_postgres(url, sizes)
        for size in sizes:
            for method in a.methods.split(","):
                proc = subprocess.run([sys.executable, __file__, "--child", url, f"adult{size}", str(hdir), method],
                                      capture_output=True, text=True)
                last = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
                row = json.loads(last[0]) if last else {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
                results.append({"backend": backend, "size": size, "method": method, **row})
                print(json.dumps(results[-1]), flush=True)
    methods.finish(results, stops, a.json)


if __name__ == "__main__":
    main()
