"""Counts that are not released, read only through noise.

A refusal or a report that depends on the exact size of a selection answers a question about
rows the release does not show: "refused below min_rows" asked for two selections that differ in
one person tells whether that person is in it, and "3 of 3 rows would be suppressed" is a count.
So every such count is read with noise from the discrete Laplace (two-sided geometric)
mechanism, as differentially private systems compare their thresholds (OpenDP's
``make_laplace`` over integers; sensitivity 1: one person changes a count by one): each use
is ε = 1/``SCALE``-differentially private with respect to the rows behind it.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

#: the noise's scale: a threshold decision or a reported count is ε = 0.5 private
SCALE = 2.0


@lru_cache(maxsize=1)
def _mechanism() -> Any:
    # imported on first use: OpenDP and the NumPy it loads cost ~0.09 s of CPU. Its modules, not
    # opendp.prelude, which also loads its extras (NumPy's, scikit-learn's, Polars' front-ends:
    # 0.02-0.03 s more of a CLI query whose release withholds rows)
    from opendp.domains import atom_domain
    from opendp.measurements import make_laplace
    from opendp.metrics import absolute_distance
    from opendp.mod import enable_features

    enable_features("contrib")
    return make_laplace(atom_domain(T=int), absolute_distance(T=int), scale=SCALE)


def noise() -> int:
    """One draw of the noise: what a count of sensitivity 1 is read with."""
    return int(_mechanism()(0))


def noisy(count: int) -> int:
    """``count`` with fresh discrete Laplace noise, never below 0."""
    return max(0, count + noise())
