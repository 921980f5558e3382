"""Differentially private aggregates on every backend: contribution bounding and clamping run in
the database, public keys are all released and other keys only above the threshold, unsupported
aggregates are refused by name, and the catalog's ledger keeps the budget — also against
concurrent queries of one analyst.

Where a test checks what the database computed, ε is large (noise of scale well below 1 on
counts), so that the bounded aggregate shows through the noise."""
from __future__ import annotations

import random
import threading
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import sqlanon
from sqlanon.cli import main
from tests.helpers import connect, load_table, restricted

#: person 0 has HEAVY visits, all alike; everyone else one or two (so which rows bounding keeps is known)
HEAVY = 200


def visits(n: int = 300, seed: int = 11) -> list[tuple]:
    rnd = random.Random(seed)
    rows = [(0, 50, "Female", "flu", 40.0) for _ in range(HEAVY)]
    for p in range(1, n):
        for _ in range(rnd.randint(1, 2)):
            rows.append((p, rnd.randint(0, 100), rnd.choice(["Male", "Female"]),
                         rnd.choice(["flu", "cold", "asthma"]), round(rnd.uniform(0, 80), 1)))
    rows.append((n, 44, "Male", "rare disease", 10.0))  # one person's group
    return rows


def load(url: str, rows: list[tuple]) -> None:
    load_table(url, "visits", [("patient", "int"), ("age", "int"), ("sex", "text"), ("disease", "text"),
                               ("hours", "float")], rows)


def policy(per_query: float = 300.0, budget: float = 10_000.0, **privacy: Any) -> dict:
    spec = {"k": 2, "epsilon": {"per_query": per_query, "budget": budget, "per": "client", "window": "30d"},
            "delta": 1e-6, "contributions": {"rows_per_person": 2}, "bounds": {"age": [20, 60], "hours": [0, 50]},
            "groups": {"public": {"sex": ["Male", "Female", "Other"]}}}
    spec.update(privacy)
    for k in [k for k, v in spec.items() if v is None]:
        spec.pop(k)
    return {"tables": {"visits": {
        "identifiers": ["patient"], "person": "patient",
        "quasi_identifiers": {"age": {"type": "interval", "levels": [10, 20]}, "sex": {"type": "suppress"}},
        "sensitive": {"disease": {}}, "insensitive": ["hours"], "privacy": spec}}}


def bounded(rows: list[tuple], keep: int = 2) -> list[tuple]:
    """At most ``keep`` rows per person (HEAVY's rows are all alike, so which ones does not matter)."""
    seen: dict[int, int] = {}
    out = []
    for r in rows:
        seen[r[0]] = seen.get(r[0], 0) + 1
        if seen[r[0]] <= keep:
            out.append(r)
    return out


def clamp(v: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, v))


def test_a_person_counts_at_most_rows_per_person_and_values_are_clamped(db_url):
    rows = visits()
    load(db_url, rows)
    mine = bounded(rows)
    assert all(r[0] != 0 for r in rows[HEAVY:])  # person 0's rows are all alike
    with connect(db_url, policy(), catalog=True) as db:
        res = db.execute("SELECT COUNT(*), SUM(age), AVG(hours) FROM visits")
    (n, total, avg_hours), = res.rows
    assert res.report.method == "dp" and res.columns == ["COUNT(*)", "SUM(age)", "AVG(hours)"]
    # ε = 300 over 4 measurements: counts get noise of scale 2/75, sums of scale 60·2/75 = 1.6
    assert n == len(mine) != len(rows)
    exact = sum(clamp(r[1], 20, 60) for r in mine)
    assert abs(total - exact) < 40 and abs(sum(r[1] for r in mine) - exact) > 200
    assert avg_hours == pytest.approx(sum(clamp(r[4], 0, 50) for r in mine) / len(mine), abs=0.5)
    dp = res.report.dp
    assert dp["epsilon_spent"] == 300 and dp["measurements"] == 4 and dp["budget_left"] == 10_000 - 300
    assert dp["noise"]["SUM(age)"]["sensitivity"] == 2 * 60 and dp["noise"]["COUNT(*)"]["sensitivity"] == 2
    assert dp["noise"]["COUNT(*)"]["mechanism"] == "discrete Laplace"
    assert dp["noise"]["SUM(hours)"]["mechanism"].startswith("Laplace")
    (n_span, sum_span, avg_span), = dp["intervals"]
    # each interval is around its noisy figure (coverage is tested in tests/unit/test_dp_mechanisms.py)
    assert n_span[0] <= n <= n_span[1] and sum_span[0] < total < sum_span[1] and avg_span[0] <= avg_hours <= avg_span[1]
    text = str(res.report)
    assert "method dp" in text and "9700 left" in text and "95 % intervals" in text
    # the statement that ran bounds and clamps in the database: only the aggregates came back
    assert res.report.rows_released == 1


def test_public_keys_are_all_released_other_keys_only_above_the_threshold(db_url):
    rows = visits()
    load(db_url, rows)
    mine = bounded(rows)
    with connect(db_url, policy(), catalog=True) as db:
        by_sex = db.execute("SELECT sex, COUNT(*) AS n FROM visits GROUP BY sex ORDER BY sex")
        by_disease = db.execute("SELECT disease, COUNT(*) AS n FROM visits WHERE age > 10 GROUP BY disease")
    assert by_sex.rows == [("Female", sum(r[2] == "Female" for r in mine)), ("Male", sum(r[2] == "Male" for r in mine)),
                           ("Other", 0)]
    assert by_sex.report.dp["threshold"] is None and by_sex.report.dp["delta_spent"] == 0
    released = dict(by_disease.rows)
    # one person's group stays out however small the noise; the others are released
    assert set(released) == {"flu", "cold", "asthma"}
    assert released["cold"] == sum(r[3] == "cold" and r[1] > 10 for r in mine)
    assert by_disease.report.dp["threshold"] > 2 and by_disease.report.dp["delta_spent"] == 1e-6


def test_keys_without_a_public_domain_need_delta(db_url):
    load(db_url, visits())
    with connect(db_url, policy(delta=None), catalog=True) as db:
        with pytest.raises(sqlanon.QueryRejected, match="GROUP BY without a public domain under differential "
                                                        "privacy.*disease.*privacy.delta"):
            db.execute("SELECT disease, COUNT(*) FROM visits GROUP BY disease")
        assert db.budget() == []  # refused before anything was spent


@pytest.mark.parametrize("sql,construct", [
    ("SELECT MAX(age) FROM visits", "MAX under differential privacy"),
    ("SELECT sex, MIN(hours) FROM visits GROUP BY sex", "MIN under differential privacy"),
    ("SELECT COUNT(DISTINCT disease) FROM visits", "COUNT(DISTINCT) under differential privacy"),
    ("SELECT sex, COUNT(*) FROM visits GROUP BY sex HAVING COUNT(*) > 5", "HAVING under differential privacy"),
    ("SELECT SUM(age + 1) FROM visits", "SUM over an expression under differential privacy"),
    ("SELECT COUNT(*) * 2 FROM visits", "expression over aggregates under differential privacy"),
    ("SELECT STDDEV(age) FROM visits", "under differential privacy"),
    ("SELECT age, COUNT(*) FROM visits GROUP BY age + 1", "under differential privacy"),
    ("SELECT COUNT(*) FROM visits WHERE age > (SELECT AVG(age) FROM visits)", "subquery under differential privacy"),
    ("SELECT ROW_NUMBER() OVER (ORDER BY age) FROM visits", "window function"),
    ("SELECT age, sex, disease, hours FROM visits", "row query under method dp"),
])
def test_unsupported_constructs_are_refused_by_name(db_url, sql, construct):
    load(db_url, visits(30))
    with connect(db_url, policy(method="dp"), catalog=True) as db:
        with pytest.raises(sqlanon.QueryRejected, match=construct.replace("(", r"\(").replace(")", r"\)")):
            db.execute(sql)
        assert db.budget() == []


def test_sums_need_bounds_and_joins_are_refused(db_url):
    load(db_url, visits(30))
    load_table(db_url, "wards", [("sex", "text"), ("ward", "text")], [("Male", "A"), ("Female", "B")])
    with connect(db_url, policy(bounds=None), catalog=True) as db:
        with pytest.raises(sqlanon.QueryRejected, match="AVG without bounds under differential privacy.*visits.age"):
            db.execute("SELECT AVG(age) FROM visits")
        with pytest.raises(sqlanon.QueryRejected, match="join under differential privacy"):
            db.execute("SELECT w.ward, COUNT(*) FROM visits v JOIN wards w ON w.sex = v.sex GROUP BY w.ward")


def test_row_queries_are_anonymized_and_explain_says_which_and_why(db_url):
    load(db_url, visits(40))
    with connect(db_url, policy(max_suppression=1.0), catalog=True) as db:
        rows = db.execute("SELECT age, sex, disease FROM visits")
        assert rows.report.method != "dp"
        aggregate = db.plan("SELECT sex, COUNT(*) FROM visits GROUP BY sex")
        assert aggregate.method == "dp" and "privacy.epsilon" in aggregate.rule and "differential privacy" in aggregate.rule
        text = db.explain("SELECT sex, AVG(age) FROM visits GROUP BY sex")
        assert db.budget() == []  # a static explain spends nothing
    assert "plan: dp" in text and "ROW_NUMBER() OVER (PARTITION BY" in text and "CASE WHEN" in text


def test_without_a_catalog_differential_privacy_is_refused(db_url):
    load(db_url, visits(30))
    with connect(db_url, policy(), catalog=False) as db:
        with pytest.raises(sqlanon.QueryRejected, match="without a catalog.*budget ledger"):
            db.execute("SELECT COUNT(*) FROM visits")


def test_the_ledger_refuses_a_query_beyond_the_budget_before_it_runs(db_url):
    load(db_url, visits(30))
    with connect(db_url, policy(per_query=1.0, budget=2.5), catalog=True, client="alice") as db:
        for _ in range(2):
            db.execute("SELECT sex, COUNT(*) FROM visits GROUP BY sex")
        with pytest.raises(sqlanon.ReleaseRefused, match="privacy budget exhausted.*2.5 per 30 days for client alice"):
            db.execute("SELECT sex, COUNT(*) FROM visits GROUP BY sex")
        bob = db.as_client("bob", "library")
        bob.execute("SELECT COUNT(*) FROM visits")  # per client: bob has his own budget
        spent = {(r["client"], r["queries"], r["epsilon"], r["budget"]) for r in db.budget()}
        audit = [(a["client"], a["decision"], a["method"], a["message"]) for a in db.catalog.audit(10)]
    assert spent == {("alice", 2, 2.0, 2.5), ("bob", 1, 1.0, 2.5)}
    # every spend is in the audit log, and so is the refusal
    assert audit[0] == ("bob", "anonymized", "dp", "differential privacy: ε 1 spent; 1.5 of 2.5 left (per client)")
    assert audit[1][:2] == ("alice", "refused") and "budget exhausted" in audit[1][3]
    assert audit[2] == ("alice", "anonymized", "dp", "differential privacy: ε 1 spent; 0.5 of 2.5 left (per client)")


def test_per_table_budgets_are_shared_by_all_clients(db_url):
    load(db_url, visits(30))
    pol = policy(per_query=1.0, budget=2.0)
    pol["tables"]["visits"]["privacy"]["epsilon"]["per"] = "table"
    with connect(db_url, pol, catalog=True, client="alice") as db:
        db.execute("SELECT COUNT(*) FROM visits")
        db.as_client("bob", "library").execute("SELECT COUNT(*) FROM visits")
        with pytest.raises(sqlanon.ReleaseRefused, match="all clients together"):
            db.as_client("carol", "library").execute("SELECT COUNT(*) FROM visits")


def test_concurrent_queries_of_one_analyst_cannot_overspend(db_url):
    load(db_url, visits(30))
    with connect(db_url, policy(per_query=1.0, budget=3.0), catalog=True, client="alice") as db:
        outcomes: list[str] = []
        start = threading.Barrier(6)

        def ask() -> None:
            session = db.as_client("alice", "library")
            start.wait()
            try:
                session.execute("SELECT sex, COUNT(*) FROM visits GROUP BY sex")
                outcomes.append("answered")
            except sqlanon.ReleaseRefused as e:
                outcomes.append("refused" if "budget exhausted" in e.message else e.message)

        threads = [threading.Thread(target=ask) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        (row,) = db.budget("alice")
    assert sorted(outcomes) == ["answered"] * 3 + ["refused"] * 3
    assert row["queries"] == 3 and row["epsilon"] == pytest.approx(3.0)


def test_budget_command_shows_what_each_analyst_spent(db_url, tmp_path):
    load(db_url, visits(30))
    import yaml

    path = tmp_path / "policy.yml"
    path.write_text(yaml.safe_dump(policy(per_query=0.5, budget=4.0)))
    with connect(db_url, str(path), catalog=True, client="alice") as db:
        db.execute("SELECT COUNT(*) FROM visits")
    login, reader = restricted(db_url, str(path))
    out = CliRunner().invoke(main, ["--reader-role", reader, "budget", "--db", login, "--policy", str(path),
                                    "--client", "alice", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert '"client": "alice"' in out.output and '"epsilon": 0.5' in out.output and '"budget": 4.0' in out.output


def test_the_catalog_keeps_every_spend(db_url):
    load(db_url, visits(30))
    with connect(db_url, policy(per_query=0.5, budget=4.0), catalog=True, client="alice") as db:
        db.execute("SELECT COUNT(*) FROM visits")
        t = db.catalog.t.dp_spends
        with db.db.engine.connect() as c:
            spends = c.execute(sa.select(t.c.client, t.c.table_name, t.c.epsilon, t.c.delta)).all()
        assert db.releases() == []  # no rows were released
    assert [tuple(s) for s in spends] == [("alice", "visits", 0.5, 0.0)]


def test_a_key_that_is_also_summed_is_clamped_in_the_sum(db_url):
    rows = visits()
    load(db_url, rows)
    pol = policy(groups={"public": {"sex": ["Male", "Female", "Other"], "age": list(range(101))}})
    with connect(db_url, pol, catalog=True) as db:
        res = db.execute("SELECT age, SUM(age) AS s, COUNT(*) AS n FROM visits WHERE age >= 80 GROUP BY age")
    assert len(res.rows) == 101  # the public domain, also the ages the WHERE leaves empty
    mine = bounded(rows)
    for age, s, n in res.rows:
        exact = sum(r[1] == age and r[1] >= 80 for r in mine)
        assert n == exact
        assert abs(s - 60 * exact) < 15  # clamped into [20, 60]: not age × n
