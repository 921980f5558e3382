"""The SQL:2003 statistics aggregates (John's thesis, Tables 7–8) for SQLite, which has none.

SQLite lets the connection define aggregates; these compute what PostgreSQL's do, with the
same NULL rules: rows where an argument is NULL are skipped, an empty input gives NULL (REGR_COUNT
gives 0), the sample variants need two rows, and CORR, REGR_SLOPE, REGR_INTERCEPT and REGR_R2 are
NULL when X does not vary. Moments are accumulated with Welford's updates (no cancellation of
``SUM(x*x) - SUM(x)^2/n``), so results agree with the other engines to rounding. The names are
those sqlglot's SQLite generator writes (``VAR_POP`` becomes ``VARIANCE_POP``); the two-argument
functions take (Y, X) as in the standard. One difference remains: SQLite never calls an aggregate
that saw no rows, so REGR_COUNT of no rows is NULL here where the others say 0.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


class _Moments:
    """Running means and co-moments of (y, x) pairs; one-argument functions pass x = y."""

    def __init__(self) -> None:
        self.n = 0
        self.mean_x = self.mean_y = 0.0
        self.sxx = self.syy = self.sxy = 0.0

    def step(self, y: Any, x: Any = 0.0) -> None:
        if y is None or x is None:
            return
        y, x = float(y), float(x)
        self.n += 1
        dx, dy = x - self.mean_x, y - self.mean_y
        self.mean_x += dx / self.n
        self.mean_y += dy / self.n
        self.sxx += dx * (x - self.mean_x)
        self.syy += dy * (y - self.mean_y)
        self.sxy += dx * (y - self.mean_y)


def _var(m: _Moments, ddof: int) -> float | None:
    return m.syy / (m.n - ddof) if m.n > ddof else None


def _sqrt(v: float | None) -> float | None:
    return None if v is None else math.sqrt(max(v, 0.0))


def _corr(m: _Moments) -> float | None:
    if m.n < 1 or m.sxx == 0 or m.syy == 0:
        return None
    return m.sxy / math.sqrt(m.sxx * m.syy)


def _slope(m: _Moments) -> float | None:
    return m.sxy / m.sxx if m.n and m.sxx != 0 else None


def _r2(m: _Moments) -> float | None:
    if m.n < 1 or m.sxx == 0:
        return None
    return 1.0 if m.syy == 0 else m.sxy * m.sxy / (m.sxx * m.syy)


def _intercept(m: _Moments) -> float | None:
    slope = _slope(m)
    return None if slope is None else m.mean_y - slope * m.mean_x


def _if_rows(value: Callable[[_Moments], float]) -> Callable[[_Moments], float | None]:
    return lambda m: value(m) if m.n else None


#: SQL name → result of the accumulated moments
_RESULTS: dict[str, Callable[[_Moments], float | int | None]] = {
    "VARIANCE_POP": lambda m: _var(m, 0),
    "VARIANCE": lambda m: _var(m, 1),
    "STDDEV_POP": lambda m: _sqrt(_var(m, 0)),
    "STDDEV_SAMP": lambda m: _sqrt(_var(m, 1)),
    "STDDEV": lambda m: _sqrt(_var(m, 1)),
    "COVAR_POP": lambda m: m.sxy / m.n if m.n else None,
    "COVAR_SAMP": lambda m: m.sxy / (m.n - 1) if m.n > 1 else None,
    "CORR": _corr,
    "REGR_SLOPE": _slope,
    "REGR_INTERCEPT": _intercept,
    "REGR_R2": _r2,
    "REGR_COUNT": lambda m: m.n,
    "REGR_AVGX": _if_rows(lambda m: m.mean_x),
    "REGR_AVGY": _if_rows(lambda m: m.mean_y),
    "REGR_SXX": _if_rows(lambda m: m.sxx),
    "REGR_SYY": _if_rows(lambda m: m.syy),
    "REGR_SXY": _if_rows(lambda m: m.sxy),
}

#: SQL name → number of arguments
ARITY = {name: 1 if name.startswith(("VAR", "STDDEV")) else 2 for name in _RESULTS}


def _aggregate(result: Callable[[_Moments], float | int | None],
               guard: Callable[[Callable[..., Any]], Callable[..., Any]]) -> type[_Moments]:
    class Aggregate(_Moments):
        step = guard(_Moments.step)  # type: ignore[assignment]

        @guard
        def finalize(self) -> float | int | None:
            return result(self)

    return Aggregate


def register(connection: Any, guard: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda f: f) -> None:
    """Define every aggregate on a sqlite3 connection; ``guard`` wraps each of its methods
    (the backend's note of a Ctrl-C inside them)."""
    for name, result in _RESULTS.items():
        connection.create_aggregate(name, ARITY[name], _aggregate(result, guard))
