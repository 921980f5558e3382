"""Two checkouts of sqlanon side by side on one configuration of benchmarks/methods.py.

On a shared machine the absolute seconds drift by more than most changes gain (the same
statement took 1.1 s and, an hour later, 2.4 s), so a change is judged by a ratio: the runs of
both checkouts alternate, each in a fresh process through its own ``methods.py --child``, and
the fastest of each side is compared, by wall time and by the server's CPU time where the
server runs here (server_cpu.py), which the load moves far less. The releases must agree too
(rows suppressed, classes, KL sum): a speed-up that changes the release is reported as such.
Each round also measures the floor on the same server and rows (methods.py's measure_floor: a
temp copy of the selection, one GROUP BY of its QIs), and each side's stage (pushdown +
anonymize + verify) is reported as a multiple of the fastest floor (stage_to_floor).

``--answer``: the whole query instead — a released table read whole as the answer (methods.py's
``answer`` child, Mondrian k=5, ``SELECT *``, ``execute``), both sides measured by this
checkout's benchmark code on the other's package, split at the answer's statement; each round
also measures the floor of such an answer (methods.py's ``fetch``: every row into Python with
the driver) and each side's whole query is reported as a multiple of it (``whole_to_fetch``).

Usage:  git worktree add ../base <commit>
        python benchmarks/compare.py ../base [--backend postgresql] [--size adult|1m|10m]
               [--config spec|occupation|mondrian_k5|mondrian_l3_t02|sabre_l3_t02|slicing_l3]
               [--rounds 3] [--repeat 1] [--answer]
The tables must exist (``python benchmarks/methods.py`` loads them); servers as methods.py finds
them (SQLANON_TEST_POSTGRESQL_URL / SQLANON_TEST_MYSQL_URL, else local ones started here).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import methods  # noqa: E402


def configuration(name: str) -> tuple[str, dict]:
    """The sensitive column and the privacy block of one of methods.py's configurations."""
    if name == "spec":
        return "income", methods.alpha_k([">50K"])
    if name == "occupation":
        return "occupation", methods.alpha_k("all")
    for configs in methods.PARTITIONS.values():
        if name in configs:
            return "occupation", configs[name]
    raise SystemExit(f"unknown configuration {name!r}")


def run(checkout: Path, url: str, table: str, hdir: str, sensitive: str, privacy: dict, repeat: int) -> dict:
    out = subprocess.run([sys.executable, str(checkout / "benchmarks" / "methods.py"), "--child", "sqlanon", url,
                          table, hdir, sensitive, json.dumps(privacy)],
                         capture_output=True, text=True, check=False,
                         env={**os.environ, methods.REPEAT: str(repeat)})
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise SystemExit(f"{checkout}: {lines[-1] if lines else 'failed'}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def answer(checkout: Path, url: str, table: str, hdir: str) -> dict:
    """One whole query through ``checkout``'s package, measured by this checkout's methods.py."""
    out = subprocess.run([sys.executable, str(HERE / "methods.py"), "--child", "answer", url, table, hdir, "execute"],
                         capture_output=True, text=True, check=False, env={**os.environ, methods.CHECKOUT: str(checkout)})
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise SystemExit(f"{checkout}: {lines[-1] if lines else 'failed'}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare_answers(sides: dict[str, Path], url: str, table: str, hdir: str, rounds: int) -> dict:
    """Alternating whole queries of both sides and the fetch floor, ``rounds`` times; of each
    side the run of fewest CPU seconds (server and client), its wall time beside; the fewest
    server CPU seconds apart."""
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    fetches = []
    for r in range(rounds):
        for side, checkout in sides.items():
            m = answer(checkout, url, table, hdir)
            runs[side].append(m)
            print(f"round {r + 1} {side:5} {m['total']:.3f} s  server CPU {m['server_cpu']} s  stage {m.get('stage')}  "
                  f"answer {m.get('answer')}", flush=True)
        fetches.append(methods.child("fetch", url, table))
        print(f"round {r + 1} fetch {fetches[-1]}", flush=True)
    fetch = min(fetches, key=lambda f: _cpu(f) or f["wall"])
    best = {s: min(v, key=lambda m: _cpu(m) or m["total"]) for s, v in runs.items()}
    cpu = {s: min(m["server_cpu"] for m in v) for s, v in runs.items() if all(m["server_cpu"] is not None for m in v)}
    fastest = {s: min(m["total"] for m in v) for s, v in runs.items()}
    return {"table": table, "fastest": fastest, "ratio_this_to_other": round(fastest["this"] / fastest["other"], 3),
            "server_cpu": cpu, "cpu_ratio_this_to_other": round(cpu["this"] / cpu["other"], 3) if len(cpu) == 2 else None,
            "same_release": len({m.get("digest") for v in runs.values() for m in v}) == 1,
            "breakdown": {s: {k: m.get(k) for k in ("stage", "answer")} for s, m in best.items()},
            "fetch": fetch, "fetch_server_cpu": min(f["server_cpu"] for f in fetches)
            if all(f.get("server_cpu") is not None for f in fetches) else None,
            "whole_to_fetch": {s: round(v / min(f["wall"] for f in fetches), 2) for s, v in fastest.items()},
            "cpu": {s: round(_cpu(m) or 0, 3) for s, m in best.items()},
            # where the load stretches every wall time: the CPU seconds of server and client,
            # which a quiet machine would spend one after the other (no part of a run overlaps)
            "cpu_to_fetch": {s: round(_cpu(m) / _cpu(fetch), 2) for s, m in best.items() if _cpu(m) and _cpu(fetch)}}


def _cpu(m: dict) -> float | None:
    """Server plus client CPU seconds of a measurement (a whole query: of its parts)."""
    parts = [m[k] for k in ("stage", "finish_before_answer", "answer") if k in m] or [m]
    if any(p.get("server_cpu") is None for p in parts):
        return None
    return sum(p["server_cpu"] + p["client_cpu"] for p in parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("other", type=Path, help="the checkout to compare this one with")
    ap.add_argument("--backend", default="postgresql")
    ap.add_argument("--size", default="adult", choices=["adult", *methods.TABLES])
    ap.add_argument("--config", default="spec")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="warm runs per process; the fastest counts")
    ap.add_argument("--answer", action="store_true", help="the whole query with every row as the answer")
    a = ap.parse_args()
    sensitive, privacy = configuration(a.config)
    table = methods.table_of(a.size)
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-compare-"))
    methods.hierarchies(tmp)
    stops: list = []
    url = methods.backend_url(a.backend, tmp / "bench.db", stops)
    methods.prepare(url, (a.size,))
    sides = {"other": a.other.resolve(), "this": HERE.parent}
    if a.answer:
        try:
            print(json.dumps({"backend": a.backend, **compare_answers(sides, url, table, str(tmp), a.rounds)}))
        finally:
            for stop in stops:
                stop()
        return
    walls: dict[str, list[float]] = {s: [] for s in sides}
    cpus: dict[str, list[float]] = {s: [] for s in sides}  # the server's CPU seconds (server_cpu.py)
    releases: dict[str, set] = {s: set() for s in sides}
    stages: dict[str, list[float]] = {s: [] for s in sides}  # pushdown + anonymize + verify
    floors: list[dict] = []
    try:
        for r in range(a.rounds):
            for side, checkout in sides.items():
                m = run(checkout, url, table, str(tmp), sensitive, privacy, a.repeat)
                walls[side].append(m["wall"])
                stages[side].append(m["seconds"])
                if m.get("server_cpu") is not None:
                    cpus[side].append(m["server_cpu"])
                releases[side].add((m["suppressed"], m["classes"], m["kl_sum"]))
                print(f"round {r + 1} {side:5} {m['wall']:.3f} s  server CPU {m.get('server_cpu')} s  "
                      f"{m['statements']} statements", flush=True)
            floors.append(methods.child("floor", url, table, sensitive))
            print(f"round {r + 1} floor {floors[-1]}", flush=True)
    finally:
        for stop in stops:
            stop()
    best = {s: min(w) for s, w in walls.items()}
    cpu = {s: min(c) for s, c in cpus.items() if c}
    floor = {"seconds": min(f["seconds"] for f in floors)} if all("seconds" in f for f in floors) else floors[-1]
    if floor.get("seconds") and all(f.get("server_cpu") is not None for f in floors):
        floor["server_cpu"] = min(f["server_cpu"] for f in floors)
    stage = {s: min(v) for s, v in stages.items()}
    print(json.dumps({"backend": a.backend, "table": table, "config": a.config, "fastest": best,
                      "ratio_this_to_other": round(best["this"] / best["other"], 3),
                      # less sensitive to the machine's load than the wall time
                      "server_cpu": cpu, "cpu_ratio_this_to_other": round(cpu["this"] / cpu["other"], 3)
                      if len(cpu) == 2 and cpu["other"] else None,
                      "same_release": releases["this"] == releases["other"] and len(releases["this"]) == 1,
                      "stage": stage, "floor": floor,
                      "stage_to_floor": {s: round(v / floor["seconds"], 2) for s, v in stage.items()}
                      if floor.get("seconds") else None}))


if __name__ == "__main__":
    main()
