"""SQLite's statistics aggregates (backends/sqlite_statistics.py) follow PostgreSQL's NULL rules,
and every aggregate the analyzer accepts is defined under the name sqlglot writes for SQLite."""
from __future__ import annotations

import sqlite3
import statistics as st

import pytest
from sqlglot import exp

from sqlanon.analyze.allowlist import STATISTICS
from sqlanon.backends import SQLiteBackend, sqlite_statistics


@pytest.fixture
def con():
    c = sqlite3.connect(":memory:")
    sqlite_statistics.register(c)
    c.execute("CREATE TABLE t (y, x)")
    yield c
    c.close()


def test_every_accepted_aggregate_is_defined_under_its_written_name():
    for cls in STATISTICS:
        if cls in SQLiteBackend.missing_aggregates:
            continue
        node = cls(this=exp.column("y"), expression=exp.column("x")) if cls.arg_types.get("expression") is not None \
            else cls(this=exp.column("y"))
        assert node.sql("sqlite").split("(")[0] in sqlite_statistics.ARITY, cls


def test_values_and_nulls(con):
    rows = [(1.0, 2.0), (2.5, None), (None, 1.0), (4.0, 7.0), (3.0, 3.5), (10.0, 9.0)]
    con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    ys = [y for y, _ in rows if y is not None]
    pairs = [(y, x) for y, x in rows if y is not None and x is not None]
    py, px = [y for y, _ in pairs], [x for _, x in pairs]
    got = con.execute("SELECT VARIANCE_POP(y), VARIANCE(y), STDDEV_POP(y), STDDEV_SAMP(y), STDDEV(y), "
                      "COVAR_POP(y, x), COVAR_SAMP(y, x), CORR(y, x), REGR_SLOPE(y, x), REGR_INTERCEPT(y, x), "
                      "REGR_COUNT(y, x), REGR_SXY(y, x) FROM t").fetchone()
    slope, intercept = st.linear_regression(px, py)
    n = len(pairs)
    want = (st.pvariance(ys), st.variance(ys), st.pstdev(ys), st.stdev(ys), st.stdev(ys),
            st.covariance(py, px) * (n - 1) / n, st.covariance(py, px), st.correlation(py, px), slope, intercept,
            n, st.covariance(py, px) * (n - 1))
    assert got == pytest.approx(want)


def test_too_few_rows_and_no_variation(con):
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1.0, 5.0), (3.0, 5.0)])
    assert con.execute("SELECT VARIANCE(y) FROM t WHERE y < 2").fetchone() == (None,)  # samp needs two rows
    assert con.execute("SELECT VARIANCE_POP(y) FROM t WHERE y < 2").fetchone() == (0.0,)
    # X does not vary: no slope, intercept, correlation or R²
    assert con.execute("SELECT CORR(y, x), REGR_SLOPE(y, x), REGR_INTERCEPT(y, x), REGR_R2(y, x), "
                       "REGR_AVGX(y, x) FROM t").fetchone() == (None, None, None, None, 5.0)
    assert con.execute("SELECT REGR_R2(x, y) FROM t").fetchone() == (1.0,)  # Y constant: a perfect fit
