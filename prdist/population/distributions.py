"""The score distributions of one class: normal, lognormal, Beta, uniform and discrete.

Each has cdf, sf (= 1 - cdf, accurate in the upper tail), logpdf, ppf (generalised inverse of
cdf), isf (generalised inverse of sf: inf{x : sf(x) <= t}), lower/upper support ends and
draw(rng, size); arguments are float64 arrays. Private to :mod:`prdist.population`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

_EPS = np.finfo(np.float64).eps
# Cumulative masses of discrete models are sums of rounded fractions; a probability level within
# this many units in the last place of a cumulative mass is taken to reach it (so that recall 0.8
# reaches the atom that carries the last 80% of the mass, whatever the rounding of 1 - 0.2).
_SNAP = 8 * _EPS
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class _Normal:
    __slots__ = ("mu", "sd", "lower", "upper")

    def __init__(self, mu: float, sd: float):
        self.mu, self.sd = mu, sd
        self.lower, self.upper = -math.inf, math.inf

    def cdf(self, x):
        return special.ndtr((x - self.mu) / self.sd)

    def sf(self, x):
        return special.ndtr((self.mu - x) / self.sd)

    def logpdf(self, x):
        z = (x - self.mu) / self.sd
        return -0.5 * z * z - math.log(self.sd) - _LOG_SQRT_2PI

    def pdf(self, x):
        z = (x - self.mu) / self.sd
        return np.exp(-0.5 * z * z) / (self.sd * math.sqrt(2.0 * math.pi))

    def ppf(self, u):
        return self.mu + self.sd * special.ndtri(u)

    def isf(self, t):
        return self.mu - self.sd * special.ndtri(t)

    def draw(self, rng, size):
        return rng.normal(self.mu, self.sd, size)

    def normal_tail_ratio(self, mu: float, sd: float) -> float:
        """lim phi_{mu,sd}(x) / this density(x) as x -> +inf."""
        if (sd, mu) == (self.sd, self.mu):
            return 1.0
        return math.inf if (sd, mu) > (self.sd, self.mu) else 0.0


class _LogNormal:
    """exp(N(mu, sd^2)); parameters are those of the underlying normal."""

    __slots__ = ("mu", "sd", "lower", "upper", "_normal")

    def __init__(self, mu: float, sd: float):
        self.mu, self.sd = mu, sd
        self.lower, self.upper = 0.0, math.inf
        self._normal = _Normal(mu, sd)

    def _log(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.where(x > 0, x, 0.0))  # log 0 = -inf for x <= 0

    def cdf(self, x):
        return self._normal.cdf(self._log(x))

    def sf(self, x):
        return self._normal.sf(self._log(x))

    def logpdf(self, x):
        logx = self._log(x)
        with np.errstate(invalid="ignore"):
            out = self._normal.logpdf(logx) - logx
        return np.where(x > 0, out, -np.inf)

    def pdf(self, x):
        return np.exp(self.logpdf(x))

    def ppf(self, u):
        return np.exp(self._normal.ppf(u))

    def isf(self, t):
        return np.exp(self._normal.isf(t))

    def draw(self, rng, size):
        return np.exp(rng.normal(self.mu, self.sd, size))

    def normal_tail_ratio(self, mu: float, sd: float) -> float:
        # A lognormal tail is heavier than any normal tail.
        return 0.0


class _Beta:
    __slots__ = ("a", "b", "lower", "upper", "_log_norm")

    def __init__(self, a: float, b: float):
        self.a, self.b = a, b
        self.lower, self.upper = 0.0, 1.0
        self._log_norm = special.betaln(a, b)

    def cdf(self, x):
        return special.betainc(self.a, self.b, np.clip(x, 0.0, 1.0))

    def sf(self, x):
        return special.betaincc(self.a, self.b, np.clip(x, 0.0, 1.0))

    def logpdf(self, x):
        inside = (x >= 0.0) & (x <= 1.0)
        xc = np.clip(x, 0.0, 1.0)
        with np.errstate(divide="ignore"):
            out = (
                special.xlogy(self.a - 1.0, xc)
                + special.xlog1py(self.b - 1.0, -xc)
                - self._log_norm
            )
        return np.where(inside, out, -np.inf)

    def pdf(self, x):
        return np.exp(self.logpdf(x))

    def ppf(self, u):
        return special.betaincinv(self.a, self.b, u)

    def isf(self, t):
        return special.betainccinv(self.a, self.b, t)

    def draw(self, rng, size):
        return rng.beta(self.a, self.b, size)


class _Uniform:
    __slots__ = ("lo", "hi", "lower", "upper", "_width")

    def __init__(self, lo: float, hi: float):
        self.lo, self.hi = lo, hi
        self.lower, self.upper = lo, hi
        self._width = hi - lo

    def cdf(self, x):
        return np.clip((x - self.lo) / self._width, 0.0, 1.0)

    def sf(self, x):
        return np.clip((self.hi - x) / self._width, 0.0, 1.0)

    def logpdf(self, x):
        return np.where((x >= self.lo) & (x <= self.hi), -math.log(self._width), -np.inf)

    def pdf(self, x):
        return np.where((x >= self.lo) & (x <= self.hi), 1.0 / self._width, 0.0)

    def ppf(self, u):
        return self.lo + u * self._width

    def isf(self, t):
        return self.hi - t * self._width

    def draw(self, rng, size):
        return rng.uniform(self.lo, self.hi, size)




class _Discrete:
    """Distribution on finitely many values with the given weights (counts or masses)."""

    def __init__(self, values, weights):
        values = np.asarray(values, dtype=np.float64)
        weights = np.asarray(weights)
        order = np.argsort(values, kind="stable")
        values, weights = values[order], weights[order]
        uniq, start = np.unique(values, return_index=True)
        w = np.add.reduceat(weights, start)
        keep = w > 0
        self.values, w = uniq[keep], w[keep]
        total = w.sum()
        # Integer counts give exactly rounded cumulative fractions.
        cum = np.cumsum(w)
        self.masses = w / total
        self.cum = cum / total
        self.cum[-1] = 1.0
        self.above = (total - cum) / total  # P(X > values[k])
        self.above[-1] = 0.0
        self.lower, self.upper = float(self.values[0]), float(self.values[-1])

    def cdf(self, x):
        k = np.searchsorted(self.values, x, side="right")
        return np.where(k > 0, self.cum[np.maximum(k - 1, 0)], 0.0)

    def sf(self, x):
        k = np.searchsorted(self.values, x, side="right")
        return np.where(k > 0, self.above[np.maximum(k - 1, 0)], 1.0)

    def mass(self, x):
        """P(X = x), 0 off the support."""
        k = np.minimum(np.searchsorted(self.values, x, side="left"), self.values.size - 1)
        return np.where(self.values[k] == x, self.masses[k], 0.0)

    def ppf(self, u):
        k = np.searchsorted(self.cum, np.asarray(u) * (1.0 - _SNAP), side="left")
        return self.values[np.minimum(k, self.values.size - 1)]

    def isf(self, t):
        k = np.searchsorted(-self.above, -np.asarray(t) * (1.0 + _SNAP), side="left")
        return self.values[np.minimum(k, self.values.size - 1)]


class _DiscreteClass(_Discrete):
    """One class of a discrete model: drawn uniformly from its list (repeats are weights)."""

    def __init__(self, listed: np.ndarray):
        super().__init__(listed, np.ones(listed.size, dtype=np.int64))
        self._listed = listed

    def draw(self, rng, size):
        return self._listed[rng.integers(self._listed.size, size=size)]
