"""Differentially private aggregates on Spark SQL, whose ε ledger is a catalog in a database of
its own (``connect(catalog=URL)``): the bounded aggregate is computed in Spark and noised as on
the other backends, the spend is committed in the ledger's database before the answer leaves,
an exhausted budget refuses with the same words as elsewhere, and without a ledger (or with one
that has no tables) the refusal says how to make one — advice that is followed here and works."""
from __future__ import annotations

import getpass
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import sqlanon
from sqlanon.cli import main
from tests.backends.test_dp import bounded, clamp, load, policy, visits
from tests.helpers import connect


def _ledger(tmp_path: Path) -> str:
    """A SQLite ledger made as the refusal advises ('sqlanon db upgrade --catalog URL')."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    out = CliRunner().invoke(main, ["db", "upgrade", "--catalog", url])
    assert out.exit_code == 0, out.output
    return url


def _policy_file(tmp_path: Path) -> str:
    import yaml

    path = tmp_path / "policy.yml"
    path.write_text(yaml.safe_dump(policy()), encoding="utf-8")
    return str(path)


def _spends(url: str) -> list[tuple]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return [tuple(r) for r in c.exec_driver_sql(
                "SELECT client, table_name, epsilon, delta FROM sqlanon_dp_spends ORDER BY id")]
    finally:
        engine.dispose()


@pytest.mark.backends("spark")
def test_spark_answers_are_bounded_in_spark_noised_and_spent_in_a_sqlite_ledger(db_url, tmp_path):
    rows = visits(30)
    load(db_url, rows)
    mine = bounded(rows)
    ledger = _ledger(tmp_path)
    pol = policy(per_query=300.0, budget=300.5)
    with connect(db_url, pol, catalog=ledger, client="alice") as db:
        # ε = 300 over 3 measurements: the count's noise is of scale 2/100, the sum's 60·2/100
        res = db.execute("SELECT COUNT(*), SUM(age) FROM visits")
        assert _spends(ledger) == [("alice", "visits", 300.0, 0.0)]  # committed when the answer came
        with pytest.raises(sqlanon.ReleaseRefused) as refused:
            db.execute("SELECT COUNT(*), SUM(age) FROM visits")
    (n, total), = res.rows
    exact = sum(clamp(r[1], 20, 60) for r in mine)
    assert res.report.method == "dp" and n == len(mine) != len(rows)  # at most two rows per person, in Spark
    assert abs(total - exact) < 40 and abs(sum(r[1] for r in mine) - exact) > 100  # about the clamped sum
    assert res.report.dp["noise"]["SUM(age)"]["sensitivity"] == 2 * 60
    assert res.report.dp["budget_left"] == pytest.approx(0.5)
    # the refusal says what any backend's says (the policy's figures and the ledger's), nothing of the table
    assert refused.value.message == ("privacy budget exhausted: visits's ε budget is 300.5 per 30 days for client "
                                     "alice; 300 is spent and this query needs 300 (nothing ran)")
    assert _spends(ledger) == [("alice", "visits", 300.0, 0.0)]


@pytest.mark.backends("spark")
def test_small_epsilon_noise_on_spark_and_the_audit_log_in_the_ledger(db_url, tmp_path):
    load(db_url, visits(30))
    ledger = _ledger(tmp_path)
    with connect(db_url, policy(per_query=0.5, budget=1.5), catalog=ledger, client="bob") as db:
        answers = [db.execute("SELECT sex, COUNT(*) AS n FROM visits GROUP BY sex ORDER BY sex") for _ in range(2)]
        # keys without a public domain: released above a noisy threshold, computed as elsewhere
        by_disease = db.execute("SELECT disease, COUNT(*) FROM visits WHERE age > 10 GROUP BY disease")
        with pytest.raises(sqlanon.ReleaseRefused, match="privacy budget exhausted"):
            db.execute("SELECT COUNT(*) FROM visits")
        spent = db.budget("bob")
        audit = [(a["client"], a["decision"], a["method"]) for a in db.ledger.audit(10)]
    exact = {sex: sum(1 for r in bounded(visits(30)) if r[2] == sex) for sex in ("Female", "Male", "Other")}
    # the public keys are all released; noise of scale 2/0.5·2 on each count: all six counts equal
    # to the truth has probability below 0.2⁶ (discrete Laplace at scale 8)
    assert [r[0] for r in answers[0].rows] == ["Female", "Male", "Other"]
    assert any(n != exact[sex] for a in answers for sex, n in a.rows)
    assert by_disease.report.dp["threshold"] > 2 and by_disease.report.dp["delta_spent"] == 1e-6
    assert set(dict(by_disease.rows)) <= {"flu", "cold", "asthma"}  # one person's group never
    assert [(r["queries"], r["epsilon"]) for r in spent] == [(3, 1.5)]
    assert audit == [("bob", "refused", None)] + [("bob", "anonymized", "dp")] * 3


@pytest.mark.backends("spark")
def test_without_a_ledger_spark_refuses_and_the_advice_works(db_url, tmp_path):
    load(db_url, visits(30))
    with connect(db_url, policy()) as db:
        with pytest.raises(sqlanon.QueryRejected, match="differential privacy without a catalog") as refused:
            db.execute("SELECT COUNT(*) FROM visits")
    assert "Spark SQL cannot keep the catalog" in refused.value.message
    assert "catalog=URL" in refused.value.message and "--catalog URL" in refused.value.message
    out = CliRunner().invoke(main, ["db", "upgrade", "--db", db_url])  # the catalog beside the tables: no
    assert out.exit_code == 2 and "cannot keep sqlanon's catalog" in out.output and "--catalog URL" in out.output
    # a ledger database without tables (a mistyped path too) is not silently an empty ledger
    empty = sa.create_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    with empty.connect():
        empty.dispose()
    for missing in ("empty.db", "nowhere.db"):
        with pytest.raises(sqlanon.BackendError, match="sqlanon db upgrade --catalog sqlite:///") as advice:
            connect(db_url, policy(), catalog=f"sqlite:///{tmp_path / missing}")
    assert not (tmp_path / "nowhere.db").exists()
    command = advice.value.message.split("'")[-2].split()  # what the advice says to run, run
    assert command[:3] == ["sqlanon", "db", "upgrade"]
    out = CliRunner().invoke(main, command[1:])
    assert out.exit_code == 0, out.output
    # the CLI's --catalog: the query is answered and its spend is in the ledger
    out = CliRunner().invoke(main, ["query", "--db", db_url, "--policy", _policy_file(tmp_path), "--catalog",
                                    f"sqlite:///{tmp_path / 'nowhere.db'}", "SELECT COUNT(*) FROM visits"])
    assert out.exit_code == 0, out.output
    assert "method dp" in out.output
    assert [s[:2] for s in _spends(f"sqlite:///{tmp_path / 'nowhere.db'}")] == [(getpass.getuser(), "visits")]
    out = CliRunner().invoke(main, ["budget", "--db", db_url, "--policy", _policy_file(tmp_path), "--catalog",
                                    f"sqlite:///{tmp_path / 'nowhere.db'}", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert '"table": "visits"' in out.output and '"queries": 1' in out.output
    # a ledger that cannot record the spend: no answer (fail closed)
    broken = sa.create_engine(f"sqlite:///{tmp_path / 'nowhere.db'}")
    with broken.begin() as c:
        c.exec_driver_sql("DROP TABLE sqlanon_dp_spends")
    broken.dispose()
    with connect(db_url, policy(), catalog=f"sqlite:///{tmp_path / 'nowhere.db'}") as db:
        with pytest.raises(sqlanon.BackendError, match="dp_spends"):
            db.execute("SELECT COUNT(*) FROM visits")


@pytest.mark.backends("sqlite")
def test_a_database_that_keeps_the_catalog_takes_no_catalog_apart(db_url, tmp_path):
    load(db_url, visits(5))
    ledger = _ledger(tmp_path)
    with pytest.raises(sqlanon.BackendError, match="keeps sqlanon's catalog itself"):
        sqlanon.connect(db_url, policy(), catalog=ledger)
    with pytest.raises(sqlanon.BackendError, match="not several"):
        sqlanon.connect({"a": db_url, "b": db_url}, policy(), catalog=ledger)
    out = CliRunner().invoke(main, ["db", "upgrade"], env={"SQLANON_DB": None})
    assert out.exit_code == 2 and "--catalog" in out.output


@pytest.mark.backends("spark")
def test_concurrent_spark_queries_cannot_overspend_a_postgresql_ledger(db_url, servers, tmp_path):
    """The ledger's row lock (PostgreSQL) orders the reservations of concurrent queries."""
    from tests.conftest import fresh_database

    load(db_url, visits(30))
    with fresh_database("postgresql", servers, tmp_path) as ledger:
        out = CliRunner().invoke(main, ["db", "upgrade", "--catalog", ledger])
        assert out.exit_code == 0, out.output
        with connect(db_url, policy(per_query=1.0, budget=2.0), catalog=ledger, client="alice") as db:
            outcomes: list[str] = []
            start = threading.Barrier(4)

            def ask() -> None:
                session = db.as_client("alice", "library")
                start.wait()
                try:
                    session.execute("SELECT COUNT(*) FROM visits")
                    outcomes.append("answered")
                except sqlanon.ReleaseRefused as e:
                    outcomes.append("refused" if "budget exhausted" in e.message else e.message)

            threads = [threading.Thread(target=ask) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            (row,) = db.budget("alice")
        assert sorted(outcomes) == ["answered"] * 2 + ["refused"] * 2
        assert row["queries"] == 2 and row["epsilon"] == pytest.approx(2.0)


@pytest.mark.backends("spark")
def test_a_synthetic_table_on_spark_is_paid_for_in_the_ledger(db_url, tmp_path):
    """MWEM (sqlanon/dp/synthesize.py): the histogram computed in Spark, the synthetic rows written
    there as a table, the ε reserved in the ledger apart first."""
    rows = visits(30)
    load(db_url, rows)
    mine = bounded(rows)
    ledger = _ledger(tmp_path)
    with connect(db_url, policy(budget=300.0), catalog=ledger, client="carol") as db:
        made = db.synthesize("visits", "visits_syn", epsilon=200.0, workload=[["sex"]], rounds=5)
        by_sex = dict(db.execute("SELECT sex, COUNT(*) FROM visits_syn GROUP BY sex").rows)
        with pytest.raises(sqlanon.ReleaseRefused, match="privacy budget exhausted"):
            db.synthesize("visits", "visits_syn2", epsilon=200.0, workload=[["sex"]], rounds=5)
        assert "visits_syn2" not in db.db.tables  # refused before anything was written
    assert made.columns == ["sex"] and made.budget_left == 100.0
    for sex in ("Male", "Female"):
        truth = sum(r[2] == sex for r in mine)
        assert abs(by_sex.get(sex, 0) - truth) <= 0.2 * truth
    assert _spends(ledger) == [("carol", "visits", 200.0, 0.0)]
