"""Differentially private aggregates on UCI Adult: sqlanon's DP path against SmartNoise SQL on
the same queries, data and total ε per query, in the same run.

Per query and ε (0.1, 0.5, 1.0): the median relative error over every figure of every run (a
group the answer leaves out counts as error 1), and the median wall time of a query. Each row
of Adult is one person (rows_per_person 1, SmartNoise's row_privacy with max_ids 1); ages are
bounded by [17, 90], hours by [1, 99]; δ = 1e-6 for keys without a public domain. sqlanon
releases sex and race as public keys (their domains are listed in the policy), education only
above its threshold; SmartNoise thresholds every key (censor_dims). SmartNoise's ε is per
measurement: it is scaled so that its privacy cost for the query (``get_privacy_cost``) equals
the ε sqlanon spends on the whole query.

SmartNoise SQL needs OpenDP < 0.15, sqlanon 0.16: it runs in a virtual environment of its own,
as a child process (``--smartnoise-python``; make one with
``python3 -m venv .sn && .sn/bin/pip install smartnoise-sql psycopg2-binary``); without it only
sqlanon is measured. On SQLite SmartNoise reads a pandas DataFrame of the table (it has no SQLite
reader), on PostgreSQL the database.

``--size 1m``: a 1,000,000-row table of Adult's rows, ages shifted by -2..+2 (as
benchmarks/suppression.py makes it).

``--mwem``: instead, synthetic tables of Adult's age (bounds [17, 90], ten bins), sex and race by
``sqlanon synthesize`` and by smartnoise-synth's MWEM (same venv: ``pip install smartnoise-synth``)
at each ε: the mean total variation distance of the synthetic table's 1- and 2-way marginals from
Adult's, and the seconds per synthesis.

Usage:  python benchmarks/dp.py [--backends sqlite,postgresql] [--epsilons 0.1,0.5,1.0] [--size adult|1m]
                                [--repeat 20] [--smartnoise-python .sn/bin/python] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import methods  # noqa: E402

from tests.helpers import ADULT_COLUMNS, connect, load_table  # noqa: E402

TABLE = "adult"
#: (name, query with {t} for the table); the thesis's Adult queries as aggregates, and COUNT,
#: SUM and AVG by one and two quasi-identifiers
QUERIES = [
    ("count by sex", "SELECT sex, COUNT(*) AS n FROM {t} GROUP BY sex"),
    ("count by race", "SELECT race, COUNT(*) AS n FROM {t} GROUP BY race"),
    ("count by sex, race", "SELECT sex, race, COUNT(*) AS n FROM {t} GROUP BY sex, race"),
    ("avg age by education", "SELECT education, AVG(age) AS a FROM {t} GROUP BY education"),
    ("sum hours by sex", "SELECT sex, SUM(hours_per_week) AS h FROM {t} GROUP BY sex"),
    ("Masters: count, avg age by sex",
     "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM {t} WHERE education = 'Masters' GROUP BY sex"),
    ("age < 30: count", "SELECT COUNT(*) AS n FROM {t} WHERE age < 30"),
]
SEX = ["Male", "Female"]
RACE = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]
DELTA = 1e-6


def policy(epsilon: float) -> dict:
    return {"tables": {TABLE: {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "sex": {"type": "suppress"},
                              "race": {"type": "suppress"}, "education": {"type": "suppress"}},
        "insensitive": ["hours_per_week"],
        "privacy": {"k": 2, "epsilon": {"per_query": epsilon, "budget": 1e9, "window": "1d"}, "delta": DELTA,
                    "bounds": {"age": [17, 90], "hours_per_week": [1, 99]},
                    "groups": {"public": {"sex": SEX, "race": RACE}}}}}}


def exact(url: str, sql: str) -> dict[tuple, list[float]]:
    engine = sa.create_engine(url)
    with engine.connect() as c:
        rows = c.exec_driver_sql(sql).all()
    engine.dispose()
    return _keyed(rows)


def _keyed(rows: list) -> dict[tuple, list[float]]:
    """Rows by their keys (the text columns), figures as floats."""
    out = {}
    for r in rows:
        keys = tuple(v for v in r if isinstance(v, str))
        out[keys] = [float(v) if v is not None else float("nan") for v in r if not isinstance(v, str)]
    return out


def error(truth: dict[tuple, list[float]], answers: list[dict[tuple, list[float]]]) -> float:
    errs = []
    for got in answers:
        for key, values in truth.items():
            noisy = got.get(key)
            for i, v in enumerate(values):
                if noisy is None or noisy[i] != noisy[i]:  # left out, or NULL
                    errs.append(1.0)
                else:
                    errs.append(abs(noisy[i] - v) / abs(v) if v else abs(noisy[i]))
    return statistics.median(errs)


def measure_sqlanon(url: str, sql: str, epsilon: float, repeat: int) -> tuple[list, list[float]]:
    answers, times = [], []
    with connect(url, policy(epsilon), catalog=True, client=f"bench-{epsilon}") as db:
        for _ in range(repeat):
            t0 = time.perf_counter()
            res = db.execute(sql)
            times.append(time.perf_counter() - t0)
            answers.append(_keyed(res.rows))
    return answers, times


#: run by SmartNoise's python: reads a job on stdin, prints the answers and times as JSON
CHILD = r'''
import json, sys, time
import snsql
from snsql import Privacy
job = json.load(sys.stdin)
cols = {"age": {"type": "int", "lower": 17, "upper": 90}, "hours_per_week": {"type": "int", "lower": 1, "upper": 99},
        "sex": {"type": "string"}, "race": {"type": "string"}, "education": {"type": "string"}}
if job["engine"] == "pandas":
    import pandas as pd, sqlalchemy as sa
    frame = pd.read_sql_table("adult", sa.create_engine(job["url"]))[list(cols)]
    meta = {"Adult": {"Adult": {"adult": {"row_privacy": True, "max_ids": 1, "censor_dims": True, **cols}}}}
    table, source = "Adult.adult", frame
else:
    import psycopg2
    meta = {"db": {"public": {"adult": {"row_privacy": True, "max_ids": 1, "censor_dims": True, **cols}}}}
    table, source = "public.adult", psycopg2.connect(job["url"])
out = []
for sql in job["queries"]:
    q = sql.replace("{t}", table)
    probe = snsql.from_connection(source, privacy=Privacy(epsilon=1.0, delta=job["delta"]), metadata=meta)
    cost = probe.get_privacy_cost(q)[0]
    per = {}
    for eps in job["epsilons"]:
        reader = snsql.from_connection(source, privacy=Privacy(epsilon=eps / cost, delta=job["delta"]), metadata=meta)
        rows, times = [], []
        for _ in range(job["repeat"]):
            t0 = time.perf_counter()
            res = reader.execute(q)
            times.append(time.perf_counter() - t0)
            rows.append([list(r) for r in res[1:]])
        per[str(eps)] = {"rows": rows, "times": times, "cost_at_1": cost}
    out.append(per)
print(json.dumps(out, default=str))
'''


def measure_smartnoise(python: str, url: str, backend: str, epsilons: list[float], repeat: int) -> list[dict] | str:
    if backend == "sqlite":
        engine, target = "pandas", url
    else:
        u = sa.engine.make_url(url)
        engine = "postgres"
        target = f"host={u.host} port={u.port} dbname={u.database} user={u.username} password={u.password}"
    job = {"engine": engine, "url": target, "queries": [q for _, q in QUERIES], "epsilons": epsilons,
           "repeat": repeat, "delta": DELTA}
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
    out = subprocess.run([python, f.name], input=json.dumps(job), capture_output=True, text=True)
    if out.returncode != 0:
        return "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(out.stdout.strip().splitlines()[-1])


MWEM_COLUMNS = ["age", "sex", "race"]
AGE_LO, AGE_WIDTH = 17, (90 - 17) / 10


def _age_bin(age: float) -> int:
    return min(9, max(0, int((float(age) - AGE_LO) // AGE_WIDTH)))


def marginal_error(synthetic: list[tuple], truth: list[tuple]) -> float:
    """Mean total variation distance of the 1- and 2-way marginals (age as its bin)."""
    import itertools
    from collections import Counter

    errs = []
    for cols in [(0,), (1,), (2,), *itertools.combinations(range(3), 2)]:
        a = Counter(tuple(r[i] for i in cols) for r in synthetic)
        b = Counter(tuple(r[i] for i in cols) for r in truth)
        na, nb = max(sum(a.values()), 1), sum(b.values())
        errs.append(0.5 * sum(abs(a[k] / na - b[k] / nb) for k in set(a) | set(b)))
    return sum(errs) / len(errs)


#: run by smartnoise-synth's python: fits MWEM to the rows on stdin, prints samples and times
SYNTH_CHILD = r'''
import json, sys, time
import pandas as pd
from snsynth import Synthesizer
job = json.load(sys.stdin)
frame = pd.DataFrame(job["rows"], columns=["age", "sex", "race"]).astype(str)
out = {}
for eps in job["epsilons"]:
    runs = []
    for _ in range(job["repeat"]):
        t0 = time.perf_counter()
        s = Synthesizer.create("mwem", epsilon=eps, verbose=False)
        s.fit(frame, categorical_columns=["age", "sex", "race"], preprocessor_eps=0.0)
        sample = s.sample(len(frame))
        runs.append({"seconds": time.perf_counter() - t0, "rows": sample.values.tolist()})
    out[str(eps)] = runs
print(json.dumps(out))
'''


def measure_mwem(url: str, backend: str, epsilons: list[float], repeat: int, python: str | None) -> list[dict]:
    engine = sa.create_engine(url)
    with engine.connect() as c:
        truth = [(_age_bin(a), s, r) for a, s, r in c.exec_driver_sql("SELECT age, sex, race FROM adult").all()]
    pol = policy(1.0)
    pol["tables"][TABLE]["privacy"]["epsilon"]["per_query"] = min(epsilons)
    out = []
    smart: dict | str = "not measured (no --smartnoise-python)"
    if python:
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(SYNTH_CHILD)
        job = {"rows": [list(map(str, r)) for r in truth], "epsilons": epsilons, "repeat": repeat}
        done = subprocess.run([python, f.name], input=json.dumps(job), capture_output=True, text=True)
        smart = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else \
            "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    for eps in epsilons:
        errors, times = [], []
        with connect(url, pol, catalog=True, client=f"bench-mwem-{time.time()}") as db:
            for i in range(repeat):
                into = f"adult_syn_{str(eps).replace('.', '_')}_{i}"
                t0 = time.perf_counter()
                db.synthesize(TABLE, into, epsilon=eps, bins=10)
                times.append(time.perf_counter() - t0)
                with engine.begin() as c:
                    rows = c.exec_driver_sql(f"SELECT age, sex, race FROM {into}").all()
                    c.exec_driver_sql(f"DROP TABLE {into}")
                errors.append(marginal_error([(_age_bin(a), s, r) for a, s, r in rows], truth))
        row: dict[str, Any] = {"backend": backend, "mwem": "age (10 bins), sex, race", "epsilon": eps,
                               "sqlanon_tvd": round(statistics.median(errors), 4),
                               "sqlanon_seconds": round(statistics.median(times), 3)}
        if isinstance(smart, str):
            row["smartnoise"] = smart
        else:
            runs = smart[str(eps)]
            row["smartnoise_tvd"] = round(statistics.median(
                marginal_error([(int(a), s, r) for a, s, r in run["rows"]], truth) for run in runs), 4)
            row["smartnoise_seconds"] = round(statistics.median(run["seconds"] for run in runs), 3)
        out.append(row)
        print(json.dumps(row), file=sys.stderr)
    engine.dispose()
    return out


def _convert(rows: list[list]) -> dict[tuple, list[float]]:
    return _keyed([tuple(float(v) if isinstance(v, (int, float)) else v for v in r) for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="sqlite")
    ap.add_argument("--epsilons", default="0.1,0.5,1.0")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--size", default="adult", choices=["adult", "1m"])
    ap.add_argument("--smartnoise-python", default=None)
    ap.add_argument("--json")
    ap.add_argument("--mwem", action="store_true", help="synthetic tables (MWEM) instead of queries")
    a = ap.parse_args()
    epsilons = [float(e) for e in a.epsilons.split(",")]
    stops: list = []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in a.backends.split(","):
            url = methods.backend_url(backend, Path(tmp) / "bench.db", stops)
            if backend == "sqlite":
                sa.create_engine(url).connect().close()
            if not sa.inspect(sa.create_engine(url)).has_table(TABLE):
                rows = methods.read_adult_raw()
                if a.size == "1m":
                    rows = [(max(17, min(90, r[0] + i % 5 - 2)), *r[1:]) for i in range(31) for r in rows][:1_000_000]
                load_table(url, TABLE, ADULT_COLUMNS, rows)
            if a.mwem:
                results.extend(measure_mwem(url, backend, epsilons, a.repeat, a.smartnoise_python))
                continue
            smart = measure_smartnoise(a.smartnoise_python, url, backend, epsilons, a.repeat) \
                if a.smartnoise_python else "not measured (no --smartnoise-python)"
            for i, (name, template) in enumerate(QUERIES):
                sql = template.format(t=TABLE)
                truth = exact(url, sql)
                for eps in epsilons:
                    answers, times = measure_sqlanon(url, sql, eps, a.repeat)
                    row: dict[str, Any] = {"backend": backend, "size": a.size, "query": name, "epsilon": eps,
                                           "sqlanon_error": round(error(truth, answers), 5),
                                           "sqlanon_seconds": round(statistics.median(times), 4)}
                    if isinstance(smart, str):
                        row["smartnoise"] = smart
                    else:
                        got = smart[i][str(eps)]
                        row["smartnoise_error"] = round(error(truth, [_convert(r) for r in got["rows"]]), 5)
                        row["smartnoise_seconds"] = round(statistics.median(got["times"]), 4)
                    results.append(row)
                    print(json.dumps(row), file=sys.stderr)
    methods.finish(results, stops, a.json)


if __name__ == "__main__":
    main()
