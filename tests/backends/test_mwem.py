"""MWEM on every backend: a synthetic table drawn from a protected table's histogram (computed in
the database over the bounded rows), readable by the login, fitted to its marginals, paid for in
the ledger; columns without a known domain are refused by name."""
from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

import sqlanon
from sqlanon.cli import main
from tests.backends.test_dp import bounded, load, policy, visits
from tests.helpers import connect, restricted


def test_synthetic_table_fits_the_marginals_and_is_paid_for(db_url):
    rows = visits()
    load(db_url, rows)
    mine = bounded(rows)
    with connect(db_url, policy(budget=1_000.0), catalog=True, client="alice") as db:
        made = db.synthesize("visits", "visits_syn", epsilon=200.0, rounds=30)
        by_sex = dict(db.execute("SELECT sex, COUNT(*) FROM visits_syn GROUP BY sex").rows)  # as the login
        ages = db.execute("SELECT MIN(age), MAX(age) FROM visits_syn").rows[0]
        spent = db.budget("alice")
        with pytest.raises(sqlanon.QueryRejected, match="existing table"):
            db.synthesize("visits", "visits_syn", epsilon=1.0)
    assert made.columns == ["age", "sex"] and made.rounds == 30 and made.budget_left == 800.0
    assert abs(made.rows - len(mine)) <= 5
    for sex in ("Male", "Female"):
        truth = sum(r[2] == sex for r in mine)
        assert abs(by_sex.get(sex, 0) - truth) <= 0.1 * truth
    assert by_sex.get("Other", 0) <= 0.05 * len(mine)
    # ages are the midpoints of ten bins of the bounds [20, 60]
    assert 20 < float(ages[0]) and float(ages[1]) < 60
    assert [(r["queries"], r["epsilon"]) for r in spent] == [(1, 200.0)]


def test_columns_need_a_known_domain_and_a_catalog(db_url):
    load(db_url, visits(30))
    with connect(db_url, policy(), catalog=True) as db:
        with pytest.raises(sqlanon.QueryRejected, match="column without a known domain.*visits.disease"):
            db.synthesize("visits", "v_syn", epsilon=1.0, workload=[["sex", "disease"]])
        assert db.budget() == []
    with connect(db_url, policy(), catalog=False) as db:
        with pytest.raises(sqlanon.QueryRejected, match="without a catalog"):
            db.synthesize("visits", "v_syn", epsilon=1.0)


def test_synthesize_command(db_url, tmp_path):
    load(db_url, visits(30))
    path = tmp_path / "policy.yml"
    path.write_text(yaml.safe_dump(policy(per_query=1.0, budget=10.0)))
    work = tmp_path / "workload.yml"
    work.write_text(yaml.safe_dump([["sex"], ["age", "sex"]]))
    connect(db_url, str(path), catalog=True).close()
    login, reader = restricted(db_url, str(path))
    out = CliRunner().invoke(main, ["--reader-role", reader, "synthesize", "visits", "--into", "v_syn", "--epsilon",
                                    "2", "--workload", str(work), "--db", login, "--policy", str(path)])
    assert out.exit_code == 0, out.output
    assert "v_syn:" in out.output and "ε 2 spent, 8 left" in out.output
