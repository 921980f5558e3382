"""Suppression as the field counts it: rows withheld plus rows released with every
quasi-identifier at its hierarchy's root (they tell nothing of their quasi-identifiers; ARX and
sdcMicro count them as suppressed). sqlanon's report gives both, and ``max_suppression`` limits
their sum.

On the 30,162 complete rows of UCI Adult (QI age, education, marital_status, race, sex,
native_country; ARX hierarchies), per configuration:
- the method's release with no limit (max_suppression 1): withheld, fully generalized, their
  share, KL sum, wall seconds — each fully generalized row also counted here from the released
  rows, by this script, not by sqlanon, and under t the largest distance of a class too;
- the same requirement under the limit given, with ``method: auto`` (the planner falls back to
  Mondrian when (α,k), SABRE or slicing suppress more than the limit allows) and with the method
  named (refused when it cannot fit).

Usage:  python benchmarks/suppression.py [--backends sqlite,postgresql,mysql] [--size adult|1m]
Servers as benchmarks/methods.py finds them.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import sqlalchemy as sa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import methods  # noqa: E402

import sqlanon  # noqa: E402
from tests.helpers import connect, load_table  # noqa: E402

#: (name, sensitive column, privacy without method, the method, the limit to fit)
CONFIGS = [
    ("(α,k) k=5 α=0.5 on >50K", "income", {"k": 5, "alpha": {"value": 0.5, "protect": [">50K"]}}, "alpha_k", 0.04),
    ("k=5", "occupation", {"k": 5}, "mondrian", 0.04),
    ("k=5 local recoding", "occupation", {"k": 5}, "local", 0.04),
    ("(α,k) k=5 α=0.5 on >50K, local recoding", "income", {"k": 5, "alpha": {"value": 0.5, "protect": [">50K"]}},
     "local", 0.04),
    ("SABRE k=5 t=0.2 (equal)", "occupation", {"k": 5, "t": {"value": 0.2, "distance": "equal"}}, "sabre", 0.04),
    ("k=5 t=0.2 (equal), local recoding", "occupation", {"k": 5, "t": {"value": 0.2, "distance": "equal"}}, "local",
     0.04),
]


def load(url: str, size: str) -> str:
    """Adult's complete rows (no '?'), or a 1 M-row table of them with ages shifted -2..+2."""
    engine = sa.create_engine(url)
    if not sa.inspect(engine).has_table("adult_complete"):
        rows = [r for r in methods.read_adult_raw() if "?" not in r]
        if size == "1m":
            rows = [(max(17, min(90, r[0] + i % 5 - 2)), *r[1:]) for i in range(34) for r in rows][:1_000_000]
        load_table(url, "adult_complete", methods.ADULT_COLUMNS, rows)
    engine.dispose()
    return "adult_complete"


def release(url: str, pol: dict, sql: str) -> sqlanon.Result | str:
    try:  # as deployed: a login the database keeps from the table (tests.helpers.connect)
        with connect(url, pol) as db:
            return db.execute(sql)
    except sqlanon.ReleaseRefused as e:
        return f"refused: {e.message[:60]}…"


def largest_distance(rows: list, qis: int) -> float:
    """t as this script measures it on the released rows: the largest equal-distance EMD (half
    the L1 distance) of a class's sensitive values from the whole release's."""
    whole, n = Counter(r[qis] for r in rows), len(rows)
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        classes[tuple(r[:qis])][r[qis]] += 1
    return max((0.5 * sum(abs(c[v] / sum(c.values()) - whole[v] / n) for v in whole) for c in classes.values()),
               default=0.0)


def measure(url: str, table: str, hdir: Path) -> list[dict]:
    engine = sa.create_engine(url)
    with engine.connect() as c:  # the administrator's count (an answer reports it with noise)
        rows = int(c.execute(sa.select(sa.func.count()).select_from(sa.table(table))).scalar())
    engine.dispose()
    out = []
    for name, sensitive, privacy, method, limit in CONFIGS:
        cols = methods.QIS + [sensitive]
        sql = f"SELECT {', '.join(cols)} FROM {table}"

        def pol(sensitive: str = sensitive, privacy: dict = privacy, **extra: object) -> dict:
            p = methods.policy({c: hdir / f"{c}.csv" for c in methods.QIS}, sensitive, {**privacy, **extra})
            p["tables"] = {table: next(iter(p["tables"].values()))}
            return p

        began = time.perf_counter()
        free = release(url, pol(method=method, max_suppression=1), sql)
        seconds = time.perf_counter() - began
        assert not isinstance(free, str), free
        at_root = sum(all(v == "*" for v in row[:len(methods.QIS)]) for row in free.rows)
        assert at_root == free.report.rows_generalized, (at_root, free.report.rows_generalized)
        fitted = release(url, pol(max_suppression=limit), sql)
        named = release(url, pol(method=method, max_suppression=limit), sql)
        out.append({
            "config": name, "method": method, "rows": rows,
            "withheld": rows - len(free.rows), "fully_generalized": at_root,
            "suppressed_share": round((rows - len(free.rows) + at_root) / rows, 4),
            "kl_sum": round(free.report.kl_sum, 4), "seconds": round(seconds, 2), "limit": limit,
            **({"t_measured": round(largest_distance(free.rows, len(methods.QIS)), 4)} if "t" in privacy else {}),
            "auto_under_limit": fitted if isinstance(fitted, str) else {
                "method": fitted.report.method, "suppressed": fitted.report.rows_suppressed,
                "kl_sum": round(fitted.report.kl_sum, 4)},
            "named_under_limit": named if isinstance(named, str) else {
                "method": named.report.method, "suppressed": named.report.rows_suppressed},
        })
        print(json.dumps(out[-1], ensure_ascii=False), file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="sqlite")
    ap.add_argument("--size", default="adult", choices=["adult", "1m"])
    args = ap.parse_args()
    stops: list = []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        hdir = Path(tmp)
        methods.hierarchies(hdir)
        for backend in args.backends.split(","):
            url = methods.backend_url(backend, hdir / "bench.db", stops)
            if backend == "sqlite":
                sa.create_engine(url).connect().close()
            table = load(url, args.size)
            results.append({"backend": backend, "size": args.size, "configs": measure(url, table, hdir)})
    methods.finish(results, stops, None)


if __name__ == "__main__":
    main()
