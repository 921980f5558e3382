"""The few special functions the population models need, in plain Python (no numpy at run time).

``digamma`` and ``trigamma`` (ψ and ψ′) by the recurrences ψ(x) = ψ(x+1) − 1/x and
ψ′(x) = ψ′(x+1) + 1/x², then the asymptotic series in 1/x (Abramowitz & Stegun 6.3.18, 6.4.12),
and the reflection formulas for negative arguments (6.3.7, 6.4.7); ``hypergeometric_one``, the
probability of exactly one success; ``newton`` for two equations in two unknowns.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable

Pair = tuple[float, float]
Matrix = tuple[float, float, float, float]  # row-major: d f1/dx, d f1/dy, d f2/dx, d f2/dy


def digamma(x: float) -> float:
    if math.isnan(x) or math.isinf(x) or x == 0:
        return math.nan
    if x < 0:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 8:
        shift -= 1 / x
        x += 1
    r = 1 / (x * x)
    series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r / 132))))
    return shift + math.log(x) - 0.5 / x - series


def trigamma(x: float) -> float:
    if math.isnan(x) or math.isinf(x) or x == 0:
        return math.nan
    if x < 0:
        return -trigamma(1 - x) + (math.pi / math.sin(math.pi * x)) ** 2
    shift = 0.0
    while x < 8:
        shift += 1 / (x * x)
        x += 1
    r = 1 / (x * x)
    series = (1 + r * (1 / 6 - r * (1 / 30 - r * (1 / 42 - r * (1 / 30 - r * 5 / 66))))) / x
    return shift + series + r / 2


def log_choose(n: float, k: float) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def hypergeometric_one(population: float, successes: float, draws: float) -> float:
    """P(X = 1) for X ~ Hypergeometric(population, successes, draws): one of ``draws`` taken
    without replacement from ``population`` items, ``successes`` of them marked."""
    if successes < 1 or draws < 1 or population - successes < draws - 1:
        return 0.0
    return math.exp(math.log(successes) + log_choose(population - successes, draws - 1)
                    - log_choose(population, draws))


def newton(equations: Callable[[Pair], Pair], jacobian: Callable[[Pair], Matrix], starts: Iterable[Pair], *,
           accuracy: float = 1e-6, iterations: int = 1000,
           admissible: Callable[[Pair], bool] = lambda p: True) -> Pair | None:
    """A root of two equations by Newton-Raphson: from each start in turn, steps until both
    equations are within ``accuracy`` of 0 (ARX's solver settings: 1e-6, 1000 steps a try); a
    try ends on a non-finite or inadmissible point. None when no start leads to a root."""
    for start in starts:
        x, y = start
        for _ in range(iterations):
            try:
                f1, f2 = equations((x, y))
            except (ValueError, OverflowError, ZeroDivisionError):
                break
            if not (math.isfinite(f1) and math.isfinite(f2)):
                break
            if abs(f1) <= accuracy and abs(f2) <= accuracy:
                return x, y
            try:
                a, b, c, d = jacobian((x, y))
            except (ValueError, OverflowError, ZeroDivisionError):
                break
            det = a * d - b * c
            if det == 0 or not math.isfinite(det):
                break
            x, y = x - (d * f1 - b * f2) / det, y - (a * f2 - c * f1) / det
            if not (math.isfinite(x) and math.isfinite(y)) or not admissible((x, y)):
                break
    return None


def numeric_jacobian(equations: Callable[[Pair], Pair]) -> Callable[[Pair], Matrix]:
    """The Jacobian of ``equations`` by central differences (steps relative to the point)."""
    def jacobian(p: Pair) -> Matrix:
        x, y = p
        hx, hy = 1e-7 * max(abs(x), 1e-3), 1e-7 * max(abs(y), 1e-3)
        fx1, fx2 = equations((x + hx, y))
        bx1, bx2 = equations((x - hx, y))
        fy1, fy2 = equations((x, y + hy))
        by1, by2 = equations((x, y - hy))
        return (fx1 - bx1) / (2 * hx), (fy1 - by1) / (2 * hy), (fx2 - bx2) / (2 * hx), (fy2 - by2) / (2 * hy)
    return jacobian
