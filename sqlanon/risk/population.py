"""Population uniqueness: how many people of the population the sample's uniques stand for.

Three models estimate the number of population uniques from the class-size frequency table of
the sample alone, as ARX implements them (arx-deidentifier/arx, ``risk/ModelPitman``,
``ModelZayatz``, ``ModelSNB``), and Dankar et al.'s decision rule picks one
(``RiskModelPopulationUniqueness``): with a sampling fraction of at most 10 % Pitman's model
(Zayatz's where Pitman's finds no estimate), above it the smaller of Zayatz's and SNB's.

- Pitman: Hoshino (2001), "Applying Pitman's sampling formula to microdata disclosure risk
  assessment", J. Official Statistics 17(4). θ and α by maximum likelihood, then
  Γ(θ+1)/Γ(θ+α) · N^α.
- Zayatz: Zayatz (1991), "Estimation of the number of unique population elements using a
  sample", Census Bureau SRD report: the sample uniques scaled by 1/f and by the chance that a
  sample unique is a population unique, from hypergeometric draws.
- SNB: Chen & Keller-McNulty (1998), "Estimation of identification disclosure risk in
  microdata", J. Official Statistics 14(1): a shifted negative binomial; the number of
  non-empty classes of the population by Haas et al.'s (1995) Shlosser-type estimator.
- Dankar, El Emam, Neisa, Roffey (2012), "Estimating the re-identification risk of clinical
  data sets", BMC Med. Inform. Decis. Mak. 12:66.

Input: ``histogram`` = {class size: number of classes of that size}. Plain Python math.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from sqlanon.risk.numerics import (
    Pair,
    digamma,
    hypergeometric_one,
    newton,
    numeric_jacobian,
    trigamma,
)

#: populations of ARX's regions (``ARXPopulationModel.Region``), for ``--population usa`` etc.
REGIONS = {"usa": 317_238_626, "uk": 63_705_000, "germany": 80_767_000, "france": 65_820_916,
           "canada": 34_834_841, "australia": 23_130_900, "european_union": 507_420_000,
           "europe": 740_000_000, "north_america": 565_265_000, "south_america": 385_742_554,
           "africa": 1_100_000_000, "brasil": 202_656_788, "china": 1_366_040_000, "india": 1_210_569_573}
#: ARX's default sampling fraction: the population is a hundred times the sample
DEFAULT_FRACTION = 0.01
#: the solver's start values after the first: ARX's prepared grid over [0, 1)²
GRID = [(i * 0.33, j * 0.33) for i in range(4) for j in range(4)]


@dataclass(frozen=True)
class PopulationUniqueness:
    population: int
    sampling_fraction: float
    #: estimated number of population uniques per model (None: the model found no estimate)
    pitman: float | None
    zayatz: float | None
    snb: float | None
    #: the model Dankar et al.'s rule chose, and its estimate
    model: str
    uniques: float

    @property
    def share(self) -> float:
        """Estimated share of the population that is unique on the quasi-identifiers."""
        return self.uniques / self.population if self.population else 0.0

    def to_dict(self) -> dict:
        return {"population": self.population, "sampling_fraction": self.sampling_fraction,
                "pitman": self.pitman, "zayatz": self.zayatz, "snb": self.snb, "model": self.model,
                "uniques": self.uniques, "share": self.share}


def population_size(rows: int, population: int | str | None) -> int:
    """``population``: a number, one of ARX's region names, or None for ARX's default (1 %)."""
    if population is None:
        return int(round(rows / DEFAULT_FRACTION))
    if isinstance(population, str):
        key = population.strip().lower().replace(" ", "_").replace("-", "_")
        if key in REGIONS:
            return REGIONS[key]
        try:
            return int(key)
        except ValueError:
            raise ValueError(f"population {population!r}: a number or one of {', '.join(sorted(REGIONS))}") from None
    return int(population)


def _valid(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) and v != 0 else None


def estimate(histogram: dict[int, int], population: int) -> PopulationUniqueness:
    n = sum(size * count for size, count in histogram.items())
    f = n / population if population else 1.0
    c1 = histogram.get(1, 0)
    if c1 == 0 or n == 0:
        return PopulationUniqueness(population, f, 0.0, 0.0, 0.0, "none (no sample uniques)", 0.0)
    pitman = _valid(pitman_uniques(histogram, population))
    zayatz = _valid(zayatz_uniques(histogram, population))
    snb = _valid(snb_uniques(histogram, population))
    if f <= 0.1:
        model, value = ("pitman", pitman) if pitman is not None else ("zayatz", zayatz or 0.0)
    elif snb is not None and (zayatz is None or zayatz >= snb):
        model, value = "snb", snb
    else:
        model, value = "zayatz", zayatz or 0.0
    return PopulationUniqueness(population, f, pitman, zayatz, snb, model, value)


# -- Pitman -----------------------------------------------------------------------------------
def pitman_uniques(histogram: dict[int, int], population: int) -> float | None:
    """Hoshino's estimate under Pitman's sampling formula; None where the likelihood has no
    admissible maximum (θ ≥ 0) or the estimate falls outside [0, N]."""
    u = float(sum(histogram.values()))
    n = float(sum(size * count for size, count in histogram.items()))
    c1 = float(histogram.get(1, 0))
    c2 = float(histogram.get(2, 0)) or 1.0
    repeated = [(size, count) for size, count in histogram.items() if size > 1]

    # log-likelihood L(θ, α) = Σ_{i<u} log(θ + iα) − Σ_{i<n} log(θ + i) + Σ_j c_j Σ_{l<j} log(l − α);
    # its gradient (Σ over i written with ψ: Σ_{i=1}^{u-1} 1/(θ+iα) = (ψ(θ/α+u) − ψ(θ/α+1))/α)
    def sums(t: float, a: float) -> tuple[float, float]:
        s1 = (digamma(t / a + u) - digamma(t / a + 1)) / a          # Σ 1/(θ+iα)
        s2 = (trigamma(t / a + 1) - trigamma(t / a + u)) / (a * a)  # Σ 1/(θ+iα)²
        return s1, s2

    def equations(p: Pair) -> Pair:
        t, a = p
        s1, _ = sums(t, a)
        g_t = s1 - (digamma(n + t) - digamma(t + 1))
        g_a = ((u - 1) - t * s1) / a - sum(c * (digamma(j - a) - digamma(1 - a)) for j, c in repeated)
        return g_t, g_a

    def jacobian(p: Pair) -> tuple[float, float, float, float]:
        t, a = p
        s1, s2 = sums(t, a)
        h_tt = -s2 + (trigamma(t + 1) - trigamma(n + t))
        h_ta = -(s1 - t * s2) / a                                                   # −Σ i/(θ+iα)²
        h_aa = -((u - 1) - 2 * t * s1 + t * t * s2) / (a * a) \
            - sum(c * (trigamma(1 - a) - trigamma(j - a)) for j, c in repeated)     # −Σ i²/(θ+iα)² − …
        return h_tt, h_ta, h_ta, h_aa

    # Hoshino's moment-type start values, then ARX's grid
    c = c1 * (c1 - 1) / c2
    denominator = 2 * c1 * u + c1 * c - n * c
    starts: list[Pair] = []
    if denominator:
        t0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / denominator
        starts.append((t0, (t0 * (c1 - n) + (n - 1) * c1) / (n * u)))
    starts += GRID
    root = newton(equations, jacobian, starts, admissible=lambda p: p[0] >= 0 and 0 < p[1] < 1)
    if root is None:
        return None
    t, a = root
    try:
        value = math.exp(math.lgamma(t + 1) - math.lgamma(t + a) + a * math.log(population))
    except (ValueError, OverflowError):
        return None
    return value if 0 <= value <= population else None


# -- Zayatz -----------------------------------------------------------------------------------
def zayatz_uniques(histogram: dict[int, int], population: int) -> float:
    """The sample uniques over f, times P(population unique | sample unique) = share of the
    sample's classes that are uniques drawn once, over the share of all classes drawn once."""
    u = sum(histogram.values())
    n = sum(size * count for size, count in histogram.items())
    c1 = histogram.get(1, 0)
    drawn_once = sum(count / u * hypergeometric_one(population, size, n) for size, count in histogram.items())
    if drawn_once == 0:
        return math.nan
    conditional = c1 / u * hypergeometric_one(population, 1, n) / drawn_once
    return c1 * conditional / (n / population)


# -- SNB --------------------------------------------------------------------------------------
def snb_uniques(histogram: dict[int, int], population: int) -> float | None:
    """K·β^α, with K the estimated number of the population's classes and (α, β) the shifted
    negative binomial's parameters fitted to the numbers of sample classes of size 1 and 2."""
    u = sum(histogram.values())
    n = sum(size * count for size, count in histogram.items())
    f = n / population
    c1 = float(histogram.get(1, 0))
    c2 = float(histogram.get(2, 0))
    k = _population_classes(histogram, u, c1, f)

    def equations(p: Pair) -> Pair:
        a, b = p
        d = (1 - f) * (1 - b)
        e1 = k * f * math.pow(b / (1 - d), a) * (a * d / (1 - d) + 1) - c1
        # the second equation as ARX writes it (its factor (1−d)^(α+2) multiplies)
        e2 = k * a * math.pow(b, a) * f * f * (1 - b) / 2 * math.pow(1 - d, a + 2) * (2 - (1 - a) * d) - c2
        return e1, e2

    root = newton(equations, numeric_jacobian(equations), [(1.0, 1.0), *GRID])
    if root is None:
        return None
    a, b = root
    try:
        return k * math.pow(b, a)
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


def _population_classes(histogram: dict[int, int], u: int, c1: float, f: float) -> float:
    """The number of non-empty classes in the population, Shlosser-type (Haas et al. 1995), in
    ARX's form: its second sum subtracts 1 per distinct class size (``ModelSNB``), which is
    kept so that the figures are ARX's."""
    v1 = v2 = v3 = v4 = 0.0
    for size, count in histogram.items():
        v1 += size * f * f * (1 - f * f) ** (size - 1) * count
        v2 += (1 - f) ** size * count * (1 + f) ** size - 1
        v3 += (1 - f) ** size * count
        v4 += size * f * (1 - f) ** (size - 1) * count
    if v2 == 0 or v4 == 0:
        return float(u)
    return u + c1 * (v1 / v2) * (v3 / v4) ** 2
