"""Benchmark of a joined release (analyze/linked.py) against the same release of one table.

UCI Adult is split into two protected tables linked one to one by a person id, ``persons``
(id, age, race, sex, native_country) and ``census`` (person_id, education, marital_status,
occupation), and a one-to-many pair is made by giving every person one to three ``stays``
(person_id, occupation). The same Mondrian release (k=5, sensitive occupation, ARX hierarchies)
is measured three ways, each in a fresh process:

- ``single``: the query over ``adult`` itself, the baseline;
- ``joined``: the same columns through ``persons JOIN census`` (m = 1: the same classes);
- ``one_to_many``: ``persons JOIN stays``, where classes need (k−1)·m + 1 rows (m = 3);
- ``diff_single`` and ``diff_joined``: with the catalog, six selections (``age >= 20``, 25, …,
  45) of ``adult`` and of ``persons JOIN census`` one after the other; the figure is the
  differencing check of the sixth, which compares it with the five before (a joined selection
  is compared table by table, each earlier one a subquery over the join).

Usage:  python benchmarks/joins.py [--backends sqlite,postgresql,mysql] [--json out.json]
Servers: SQLANON_TEST_POSTGRESQL_URL / SQLANON_TEST_MYSQL_URL, else local servers as the tests
start them.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.methods import QIS, backend_url, hierarchies, read_adult_raw  # noqa: E402
from tests.helpers import ADULT_COLUMNS, connect, load_table  # noqa: E402

PERSON = ["age", "race", "sex", "native_country"]
CENSUS = ["education", "marital_status", "occupation"]
PRIVACY = {"method": "mondrian", "k": 5, "max_suppression": 0}
QUERIES = {
    "single": "SELECT age, education, marital_status, race, sex, native_country, occupation, COUNT(*) AS n "
              "FROM adult GROUP BY age, education, marital_status, race, sex, native_country, occupation",
    "joined": "SELECT p.age, c.education, c.marital_status, p.race, p.sex, p.native_country, c.occupation, "
              "COUNT(*) AS n FROM persons p JOIN census c ON c.person_id = p.id "
              "GROUP BY p.age, c.education, c.marital_status, p.race, p.sex, p.native_country, c.occupation",
    "one_to_many": "SELECT p.age, p.race, p.sex, p.native_country, s.occupation, COUNT(*) AS n "
                   "FROM persons p JOIN stays s ON s.person_id = p.id "
                   "GROUP BY p.age, p.race, p.sex, p.native_country, s.occupation",
}


def prepare(url: str) -> None:
    engine = sa.create_engine(url)
    insp = sa.inspect(engine)
    rows = read_adult_raw()
    index = {c: i for i, (c, _) in enumerate(ADULT_COLUMNS)}
    if not insp.has_table("adult"):
        load_table(url, "adult", ADULT_COLUMNS, rows)
    types = dict(ADULT_COLUMNS)
    if not insp.has_table("persons"):
        load_table(url, "persons", [("id", "int")] + [(c, types[c]) for c in PERSON],
                   [(i, *[r[index[c]] for c in PERSON]) for i, r in enumerate(rows)])
        load_table(url, "census", [("person_id", "int")] + [(c, types[c]) for c in CENSUS],
                   [(i, *[r[index[c]] for c in CENSUS]) for i, r in enumerate(rows)])
        occupations = sorted({r[index["occupation"]] for r in rows})
        load_table(url, "stays", [("person_id", "int"), ("occupation", "text")],
                   [(i, occupations[(i * 7 + j) % len(occupations)]) for i in range(len(rows)) for j in range(i % 3 + 1)])
    engine.dispose()


def policy(hdir: str) -> dict:
    taxonomy = {c: {"type": "taxonomy", "file": str(Path(hdir) / f"{c}.csv")} for c in QIS}
    sensitive = {"occupation": {"type": "categorical"}}
    return {"tables": {
        "adult": {"quasi_identifiers": taxonomy, "sensitive": sensitive, "privacy": PRIVACY,
                  "insensitive": [c for c, _ in ADULT_COLUMNS if c not in QIS and c != "occupation"]},
        "persons": {"identifiers": ["id"], "quasi_identifiers": {c: taxonomy[c] for c in PERSON}, "privacy": PRIVACY},
        "census": {"identifiers": ["person_id"], "quasi_identifiers": {c: taxonomy[c] for c in CENSUS if c in QIS},
                   "sensitive": sensitive, "privacy": PRIVACY},
        "stays": {"identifiers": ["person_id"], "sensitive": sensitive, "privacy": PRIVACY},
    }}


DIFFERENCING = {
    "diff_single": "SELECT occupation, COUNT(*) AS n FROM adult WHERE age >= {} GROUP BY occupation",
    "diff_joined": "SELECT c.occupation, COUNT(*) AS n FROM persons p JOIN census c ON c.person_id = p.id "
                   "WHERE p.age >= {} GROUP BY c.occupation",
}


def measure_differencing(url: str, hdir: str, which: str) -> dict:

    with connect(url, policy(hdir), catalog=True) as db:
        assert db.catalog is not None
        with db.catalog.db.engine.begin() as c:
            c.execute(db.catalog.t.releases.delete())
        for age in (20, 25, 30, 35, 40, 45):
            t0 = time.perf_counter()
            res = db.execute(DIFFERENCING[which].format(age))
            wall = time.perf_counter() - t0
    rep = res.report
    return {"wall": round(wall, 3), "guard": round(rep.seconds.get("guard", 0.0), 3), "rows_in": rep.rows_in,
            "classes": rep.classes, "k": rep.requirement["k"], "kl_sum": round(rep.kl_sum, 4),
            "statements": rep.statements}


def measure(url: str, hdir: str, which: str) -> dict:

    if which in DIFFERENCING:
        return measure_differencing(url, hdir, which)
    with connect(url, policy(hdir)) as db:
        t0 = time.perf_counter()
        res = db.execute(QUERIES[which])
        wall = time.perf_counter() - t0
    rep = res.report
    return {"wall": round(wall, 3), "rows_in": rep.rows_in, "classes": rep.classes, "k": rep.requirement["k"],
            "kl_sum": round(rep.kl_sum, 4), "statements": rep.statements}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="sqlite,postgresql,mysql")
    ap.add_argument("--json")
    ap.add_argument("--child", nargs=3)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    out: dict[str, dict] = {}
    stops: list = []
    with tempfile.TemporaryDirectory() as tmp:
        hdir = Path(tmp)
        hierarchies(hdir)
        for backend in args.backends.split(","):
            url = backend_url(backend, hdir / "joins.db", stops)
            prepare(url)
            for which in [*QUERIES, *DIFFERENCING]:
                run = subprocess.run([sys.executable, __file__, "--child", url, str(hdir), which], check=True,
                                     capture_output=True, text=True)
                out[f"{backend}/{which}"] = figures = json.loads(run.stdout)
                base = out[f"{backend}/{'diff_single' if which in DIFFERENCING else 'single'}"]
                guard = f"  differencing {figures['guard']:.2f} s (×{figures['guard'] / max(base['guard'], 1e-3):.1f})" \
                    if which in DIFFERENCING else ""
                print(f"{backend:10s} {which:12s} {figures['wall']:7.2f} s  ×{figures['wall'] / base['wall']:4.2f}{guard}  "
                      f"k={figures['k']} classes={figures['classes']} KL={figures['kl_sum']} "
                      f"rows={figures['rows_in']} statements={figures['statements']}", flush=True)
    for stop in stops:
        stop()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
