"""The noise: OpenDP's measurements, never a hand-written sampler (floating-point Laplace
samplers leak through their low bits: Mironov 2012).

- integer counts and sums of integer columns: the discrete Laplace mechanism
  (``make_laplace`` over integers; Canonne, Kamath & Steinke 2020);
- sums of other columns: OpenDP's ``make_laplace`` over floats, which samples on a discrete
  grid and rounds, as its proof requires, instead of drawing a float Laplace;
- GROUP BY keys without a public domain: ``make_laplace_threshold`` (Rogers 2023), which
  releases a key only when its noisy count reaches a threshold set so that a group made by
  one person's rows appears with probability at most δ.

Sensitivities come from the policy: one person changes at most ``rows_per_person`` rows,
spread over up to as many groups, so a vector of counts moves by at most ``rows_per_person``
in L1, and a vector of sums of values clamped into [lo, hi] by ``rows_per_person`` ×
max(|lo|, |hi|). A measurement with budget ε gets the scale sensitivity / ε.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

#: the significance of every reported interval (95 %)
ALPHA = 0.05


@lru_cache(maxsize=1)
def _dp() -> Any:
    """What this module uses of OpenDP, under opendp.prelude's names. Imported on first use:
    OpenDP and the NumPy it loads cost ~0.09 s of CPU; its modules alone, not the prelude, which
    also loads its extras (NumPy's, scikit-learn's, Polars' front-ends: 0.02-0.03 s more)."""
    from opendp import accuracy, domains, measurements, measures, metrics
    from opendp.mod import enable_features

    enable_features("contrib")
    return SimpleNamespace(
        m=measurements, atom_domain=domains.atom_domain, vector_domain=domains.vector_domain,
        map_domain=domains.map_domain, absolute_distance=metrics.absolute_distance,
        l1_distance=metrics.l1_distance, l01inf_distance=metrics.l01inf_distance,
        linf_distance=metrics.linf_distance, max_divergence=measures.max_divergence,
        laplacian_scale_to_accuracy=accuracy.laplacian_scale_to_accuracy,
        discrete_laplacian_scale_to_accuracy=accuracy.discrete_laplacian_scale_to_accuracy)


@dataclass(frozen=True)
class Noise:
    """A measurement's distribution: what the report says of it."""

    mechanism: str
    scale: float
    epsilon: float
    sensitivity: float
    #: half-width of the interval that holds the noise with probability ``1 - ALPHA``
    accuracy: float

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "epsilon": self.epsilon, "sensitivity": self.sensitivity,
                "scale": self.scale}


def accuracy(scale: float, integer: bool, alpha: float = ALPHA) -> float:
    dp = _dp()
    if integer:
        # integer noise: the floor keeps the coverage (OpenDP's documentation of this function)
        return float(math.floor(dp.discrete_laplacian_scale_to_accuracy(scale, alpha)))
    return float(dp.laplacian_scale_to_accuracy(scale, alpha))


def laplace(values: list[Any], sensitivity: float, epsilon: float, integer: bool) -> tuple[list[Any], Noise]:
    """``values`` (one per group) with Laplace noise of scale ``sensitivity / epsilon``: the
    vector changes by at most ``sensitivity`` in L1 when one person comes or goes, so the
    release is ε-differentially private (checked against OpenDP's own privacy map)."""
    dp = _dp()
    scale = sensitivity / epsilon
    if integer:
        space = (dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int))
        data: list[Any] = [int(v) for v in values]
        d_in: Any = int(sensitivity)
    else:
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float))
        data = [float(v) for v in values]
        d_in = float(sensitivity)
    m = dp.m.make_laplace(*space, scale=scale)
    assert m.map(d_in) <= epsilon * (1 + 1e-9), "the noise is weaker than the budget asks"
    noisy = list(m(data)) if data else []
    kind = "discrete Laplace" if integer else "Laplace (OpenDP, floating-point safe)"
    return noisy, Noise(kind, scale, epsilon, sensitivity, accuracy(scale, integer))


def threshold(counts: dict[str, int], rows_per_person: int, epsilon: float,
              delta: float) -> tuple[dict[str, int], Noise, int]:
    """Noisy counts of the groups whose noisy count reaches the threshold; the threshold
    is the smallest for which OpenDP's privacy map gives at most ``delta`` when one person
    touches ``rows_per_person`` groups with ``rows_per_person`` rows in each (L0, L1, L∞)."""
    dp = _dp()
    n = rows_per_person
    scale = n / epsilon
    space = (dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int)),
             dp.l01inf_distance(dp.absolute_distance(T=int)))

    def made(t: int) -> Any:
        return dp.m.make_laplace_threshold(*space, scale=scale, threshold=t)

    def ok(t: int) -> bool:
        eps, dlt = made(t).map((n, n, n))
        return eps <= epsilon * (1 + 1e-9) and dlt <= delta

    high = n + 1
    while not ok(high):
        high *= 2
    low = n
    while high - low > 1:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid
    released = dict(made(high)(counts)) if counts else {}
    return released, Noise("discrete Laplace, thresholded", scale, epsilon, n, accuracy(scale, True)), high
