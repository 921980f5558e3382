"""The SQL:2003 statistics aggregates of John's Rostock thesis (Tables 7–8) over released rows, computed here
in Python from the released rows themselves (Mondrian is deterministic: the query that reads the
rows and the one that aggregates them get the same release). An interval-generalized quasi-
identifier stands for its midpoint, as in AVG and SUM (test_aggregates.py)."""
from __future__ import annotations

import math
import random
import statistics as st

import pytest

import sqlanon
from tests.backends.test_aggregates import midpoint
from tests.helpers import assert_alpha_k, connect, load_table, restricted

K = 7
POLICY = {"tables": {"t": {
    "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 40]}, "zip": {"type": "mask", "levels": [2]}},
    "sensitive": {"s": {}},
    "insensitive": ["visits", "w"],
    "privacy": {"k": K, "method": "mondrian", "max_suppression": 0.3}}}}

AGE, S, VISITS, W = range(4)  # columns of the released rows below
BIVARIATE = ["COVAR_POP", "COVAR_SAMP", "CORR", "REGR_SLOPE", "REGR_INTERCEPT", "REGR_R2", "REGR_COUNT",
             "REGR_AVGX", "REGR_AVGY", "REGR_SXX", "REGR_SYY", "REGR_SXY"]


def python(name: str, y: list, x: list | None = None) -> float | None:
    """What the standard says, over the pairs (or values) without NULL."""
    if x is None:
        v = [a for a in y if a is not None]
        fn = {"VAR_POP": st.pvariance, "VAR_SAMP": st.variance, "STDDEV_POP": st.pstdev, "STDDEV_SAMP": st.stdev}
        return fn[name](v)
    pairs = [(a, b) for a, b in zip(y, x) if a is not None and b is not None]
    ys, xs = [a for a, _ in pairs], [b for _, b in pairs]
    n = len(pairs)
    slope, intercept = st.linear_regression(xs, ys)
    return {"COVAR_POP": st.covariance(ys, xs) * (n - 1) / n, "COVAR_SAMP": st.covariance(ys, xs),
            "CORR": st.correlation(ys, xs), "REGR_SLOPE": slope, "REGR_INTERCEPT": intercept,
            "REGR_R2": st.correlation(ys, xs) ** 2, "REGR_COUNT": n, "REGR_AVGX": st.mean(xs),
            "REGR_AVGY": st.mean(ys), "REGR_SXX": st.pvariance(xs) * n, "REGR_SYY": st.pvariance(ys) * n,
            "REGR_SXY": st.covariance(ys, xs) * (n - 1)}[name]


def close(got, want: float) -> bool:
    """MariaDB answers the variance of integers as a DECIMAL of 4 decimals (div_precision_increment)."""
    return float(got) == pytest.approx(want, rel=1e-9, abs=1e-4)


def data() -> list[tuple]:
    rng = random.Random(7)
    rows = []
    for _ in range(240):
        age = rng.randint(18, 80)
        rows.append((age, rng.choice(["10115", "10117", "20095"]), rng.choice("ab"), rng.randint(0, 9),
                     round(age * 0.5 + rng.gauss(0, 3), 2) if rng.random() > 0.1 else None))
    return rows


@pytest.fixture
def session(db_url):
    load_table(db_url, "t", [("age", "int"), ("zip", "text"), ("s", "text"), ("visits", "int"), ("w", "float")],
               data())
    with connect(db_url, policy=POLICY) as db:
        yield db


@pytest.fixture
def released(session):
    """The rows every query below reads: zip is not among them, so age is the one quasi-
    identifier of each release, and each is the same."""
    res = session.execute("SELECT age, s, visits, w FROM t")
    rows = res.rows
    assert_alpha_k(rows, qi=[0], sens=1, k=K, alpha=None)
    # a row released as '*' tells nothing of its age: the report counts it as suppressed
    assert res.report.rows_generalized == sum(a == "*" for a, *_ in rows)
    assert any(a.startswith("[") for a, *_ in rows)
    return [(midpoint(a), s, v, w) for a, s, v, w in rows]


def test_variance_and_standard_deviation(session, released):
    (vp, vs, sp, ss), = session.execute(
        "SELECT VAR_POP(age), VAR_SAMP(visits), STDDEV_POP(w), STDDEV_SAMP(age) FROM t").rows
    age, visits, w = [r[AGE] for r in released], [r[VISITS] for r in released], [r[W] for r in released]
    assert close(vp, python("VAR_POP", age))
    assert close(vs, python("VAR_SAMP", visits))
    assert close(sp, python("STDDEV_POP", w))
    assert close(ss, python("STDDEV_SAMP", age))


def test_per_group_with_the_minimum_group_size(session, released):
    answer = session.execute("SELECT s, VAR_SAMP(w), STDDEV_POP(age), COUNT(*) FROM t GROUP BY s").rows
    assert {s for s, *_ in answer} == {"a", "b"}
    for s, var, sd, n in answer:
        mine = [r for r in released if r[S] == s]
        assert n == len(mine) >= K
        assert close(var, python("VAR_SAMP", [r[W] for r in mine]))
        assert close(sd, python("STDDEV_POP", [r[AGE] for r in mine]))


def test_covariance_correlation_and_regression(session, released, backend):
    select = ", ".join(f"{f}(w, age)" for f in BIVARIATE)
    if backend == "mysql":
        for f in BIVARIATE:  # MariaDB and MySQL have none of them: named before anything runs
            with pytest.raises(sqlanon.QueryRejected, match="(MariaDB|MySQL) has no such aggregate") as e:
                session.execute(f"SELECT {f}(w, age) FROM t")
            assert e.value.construct == f"function {f}"
        return
    answer = session.execute(f"SELECT {select} FROM t").rows[0]
    y, x = [r[W] for r in released], [r[AGE] for r in released]
    for f, got in zip(BIVARIATE, answer):
        assert close(got, python(f, y, x)), f


def test_over_a_join_with_an_unprotected_table(db_url, session, released, backend):
    load_table(db_url, "labels", [("s", "text"), ("name", "text")], [("a", "alpha"), ("b", "beta")])
    restricted(db_url, session.policy)  # the administrator grants the new table to the login
    session.db.refresh_schema()
    answer = session.execute("SELECT l.name, VAR_POP(t.visits) FROM t JOIN labels l ON l.s = t.s GROUP BY l.name")
    expected = {"alpha": python("VAR_POP", [r[VISITS] for r in released if r[S] == "a"]),
                "beta": python("VAR_POP", [r[VISITS] for r in released if r[S] == "b"])}
    assert {n for n, _ in answer.rows} == set(expected)
    assert all(close(v, expected[n]) for n, v in answer.rows)


def test_over_other_hierarchies_rejected_by_name(session):
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute("SELECT STDDEV_POP(zip) FROM t")
    assert e.value.construct == "STDDEV_POP over generalized column"
    with pytest.raises(sqlanon.QueryRejected) as e:
        session.execute("SELECT VAR_SAMP(visits + zip) FROM t")
    assert e.value.construct == "ADD over generalized column"


def test_nothing_to_aggregate_is_null(session):
    (v, s), = session.execute("SELECT VAR_SAMP(w), STDDEV_SAMP(age) FROM t WHERE visits < 0").rows
    assert v is None and s is None
    assert not math.isnan(float(session.execute("SELECT VAR_POP(visits) FROM t").rows[0][0]))


def test_a_whole_table_deviation_selects_rows_in_the_pushdown(session):
    """As ``WHERE age < (SELECT AVG(age) FROM adult)`` (John's thesis, Figure 31), on the stored values."""
    answer = session.execute("SELECT COUNT(visits) FROM t WHERE visits > (SELECT STDDEV_POP(visits) FROM t)")
    sd = st.pstdev([r[3] for r in data()])
    assert answer.report.rows_in == sum(1 for r in data() if r[3] > sd) > 0
