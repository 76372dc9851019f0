"""Population score models with exact ROC and PR curves (Hughes-Oliver; Clémençon & Vayatis 2009).

A score model fixes the prevalence pi = P(Y = 1), the cdf G of the scores of positives and the
cdf H of the scores of negatives. Its curves are

    ROC(alpha) = 1 - G(H^-1(1 - alpha))            true-positive rate at false-positive rate alpha
    alpha(beta) = 1 - H(G^-1(1 - beta))            false-positive rate at recall beta
    PR(beta) = pi beta / (pi beta + (1 - pi) alpha(beta))

with the generalised inverse F^-1(u) = inf{x : F(x) >= u}. Both 1 - G and 1 - H count scores
*strictly above* the threshold, so for discrete scores negatives tied with the threshold count as
below it, exactly as in :func:`prdist.curves.empirical_pr`. At the ends of the unit interval the
inverses take their one-sided limits: F^-1(0) is the lower end of the support of F and F^-1(1) the
upper end (possibly infinite). So ``pr(1)`` is the limit of PR(beta) as beta -> 1; for example a
positive class whose scores start above the lowest negative scores ends at a precision above pi
(Hughes-Oliver, Case D).

The models are the test oracles of the empirical estimators and the generators of synthetic
resources with a known truth: :meth:`ScoreModel.sample` draws labeled scores,
:meth:`ScoreModel.score_quantile` inverts the score cdf F = pi G + (1 - pi) H (to lay out a sorted
resource without sorting), :meth:`ScoreModel.positive_probability` gives P(Y = 1 | score) and
:meth:`ScoreModel.precision_at_fraction` the precision of the top fraction of a resource.

Constructors: :func:`binormal`, :func:`bilognormal`, :func:`bibeta`, :func:`uniform`,
:func:`discrete`, :func:`bumped` (a non-monotone P(Y = 1 | score)), and :func:`chance`,
:func:`perfect_separation`, :func:`reverse_separation` with :func:`reference_curves` and
:func:`pr_lower_bound` for the reference curves of Hughes-Oliver's properties P4-P6.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ._validation import check_float, check_int
from .errors import DataError, ParameterError
from .params import PREVALENCE

__all__ = [
    "ScoreModel",
    "ContinuousScoreModel",
    "DiscreteScoreModel",
    "ReferenceCurves",
    "binormal",
    "bilognormal",
    "bibeta",
    "uniform",
    "discrete",
    "bumped",
    "chance",
    "perfect_separation",
    "reverse_separation",
    "reference_curves",
    "pr_lower_bound",
]

_EPS = np.finfo(np.float64).eps
# Cumulative masses of discrete models are sums of rounded fractions; a probability level within
# this many units in the last place of a cumulative mass is taken to reach it (so that recall 0.8
# reaches the atom that carries the last 80% of the mass, whatever the rounding of 1 - 0.2).
_SNAP = 8 * _EPS
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------------------
# Distributions of one class's scores. Each has cdf, sf (= 1 - cdf, accurate in the upper tail),
# logpdf, ppf (generalised inverse of cdf), isf (generalised inverse of sf: inf{x : sf(x) <= t}),
# lower/upper support ends and draw(rng, size). Arguments are float64 arrays.


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


# Cells of the quantile table of a mixture; beyond its first and last cell the solver works
# from brackets given by the component quantiles.
_TABLE_CELLS = 2**16
_CHUNK = 2**14
_MAX_SOLVER_STEPS = 200
_NEWTON_ONLY_STEPS = 8


def _float_midpoint(lo, hi):
    """The float halfway between lo <= hi in float order (the median of the floats between).

    Bisecting this way takes at most 64 steps for any bracket, e.g. from [0, 1] down to a root
    at 1e-155 where halving the interval would take 500 steps; inside one binade it is the
    ordinary midpoint. Brackets that straddle 0 are split at 0.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    # Non-negative floats are ordered like their bit patterns read as int64; negative ones are
    # mirrored.
    sign = np.where(hi <= 0, -1.0, 1.0)
    # Adding +0.0 turns -0.0, whose bit pattern is the sign bit, into +0.0.
    a = np.where(sign > 0, np.maximum(lo, 0.0), -hi) + 0.0
    b = np.where(sign > 0, hi, -lo) + 0.0
    ia, ib = a.view(np.int64), b.view(np.int64)
    mid = (ia + (ib - ia) // 2).view(np.float64)
    return np.where((lo < 0) & (hi > 0), 0.0, sign * mid)


class _Mixture:
    """Finite mixture sum_i w_i F_i of continuous distributions (nested mixtures are flattened).

    The quantile has a closed form for one component and for mixtures of uniforms (piecewise
    linear cdf). Otherwise it is solved: a cubic Hermite table of the quantile function gives a
    first guess that one Newton step settles; points in the extreme tails, and any the check
    rejects, go to a safeguarded Newton solver inside a bracket given by the component quantiles.
    """

    def __init__(self, weights, components):
        flat_w, flat_c = [], []
        for w, c in zip(weights, components):
            if w <= 0:
                continue
            if isinstance(c, _Mixture):
                flat_w.extend(w * c.weights)
                flat_c.extend(c.components)
            else:
                flat_w.append(w)
                flat_c.append(c)
        self.weights = np.asarray(flat_w, dtype=np.float64)
        self.weights /= self.weights.sum()
        self.components = tuple(flat_c)
        self.lower = min(c.lower for c in self.components)
        self.upper = max(c.upper for c in self.components)
        self._table = None
        self._breakpoints = None
        if all(isinstance(c, _Uniform) for c in self.components):
            b = np.unique([v for c in self.components for v in (c.lo, c.hi)])
            # The cdf is linear between consecutive endpoints of the uniforms.
            self._breakpoints = (b, self.cdf(b), self.sf(b))

    # Weighted sums; a single component is returned untouched to keep its exact arithmetic.
    def _sum(self, method: str, x):
        x = np.asarray(x, dtype=np.float64)
        if len(self.components) == 1:
            return getattr(self.components[0], method)(x)
        out = np.zeros(x.shape)
        for w, c in zip(self.weights, self.components):
            out += w * getattr(c, method)(x)
        return out

    def cdf(self, x):
        return self._sum("cdf", x)

    def sf(self, x):
        return self._sum("sf", x)

    def logpdf(self, x):
        x = np.asarray(x, dtype=np.float64)
        if len(self.components) == 1:
            return self.components[0].logpdf(x)
        out = np.full(x.shape, -np.inf)
        for w, c in zip(self.weights, self.components):
            out = np.logaddexp(out, math.log(w) + c.logpdf(x))
        return out

    def pdf(self, x):
        return self._sum("pdf", x)

    def draw(self, rng, size: int):
        if len(self.components) == 1:
            return self.components[0].draw(rng, size)
        which = rng.choice(len(self.components), size=size, p=self.weights)
        out = np.empty(size)
        for i, c in enumerate(self.components):
            mask = which == i
            out[mask] = c.draw(rng, int(mask.sum()))
        return out

    def ppf(self, u):
        return self._invert(np.asarray(u, dtype=np.float64), upper_tail=False)

    def isf(self, t):
        return self._invert(np.asarray(t, dtype=np.float64), upper_tail=True)

    def _invert(self, p: np.ndarray, *, upper_tail: bool) -> np.ndarray:
        """inf{x : cdf(x) >= p} (upper_tail=False) or inf{x : sf(x) <= p} (upper_tail=True)."""
        if len(self.components) == 1:
            c = self.components[0]
            return c.isf(p) if upper_tail else c.ppf(p)
        if self._breakpoints is not None:
            flat = p.ravel()
            out = np.empty(flat.size)
            # In cache-sized chunks, like the numerical path.
            for start in range(0, flat.size, _CHUNK):
                part = slice(start, start + _CHUNK)
                out[part] = self._invert_piecewise_linear(flat[part], upper_tail=upper_tail)
            return out.reshape(p.shape)
        return self._invert_numerically(p, upper_tail=upper_tail)

    def _invert_piecewise_linear(self, p, *, upper_tail: bool):
        b, cdf_b, sf_b = self._breakpoints
        if upper_tail:
            # First breakpoint whose survival is <= p; the root is in the segment before it.
            k = np.searchsorted(-sf_b, -p, side="left")
        else:
            k = np.searchsorted(cdf_b, p, side="left")
        k = np.minimum(k, b.size - 1)
        prev = np.maximum(k - 1, 0)
        if upper_tail:
            drop = sf_b[prev] - sf_b[k]
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(drop > 0, (sf_b[prev] - p) / drop, 0.0)
        else:
            rise = cdf_b[k] - cdf_b[prev]
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(rise > 0, (p - cdf_b[prev]) / rise, 0.0)
        x = b[prev] + np.clip(frac, 0.0, 1.0) * (b[k] - b[prev])
        # k = 0 means p is at (or beyond) the lower end: the generalised inverse is b[0].
        return np.where(k == 0, b[0], x)

    def _inversion_table(self):
        # Quantiles at u = k / K with the slopes dx/du = 1/f there: a cubic Hermite interpolant
        # of the quantile function, exact to about 1e-12 in the bulk, so one Newton step lands
        # on the float root. The nodes themselves come from the robust solver.
        if self._table is None:
            levels = np.arange(1, _TABLE_CELLS) / _TABLE_CELLS
            lo, hi = self._component_bracket(levels, upper_tail=False)
            inner = self._safeguarded_newton(levels, 0.5 * (lo + hi), lo, hi, upper_tail=False)
            nodes = np.concatenate(([self.lower], inner, [self.upper]))
            with np.errstate(divide="ignore"):
                slopes = 1.0 / self.pdf(nodes)
            # A vanishing density inside the table would make the slope infinite: use the
            # secant there (the Newton step and the check below still settle the root).
            secant = np.diff(nodes) * _TABLE_CELLS
            bad = ~np.isfinite(slopes)
            slopes[bad] = np.concatenate((secant, [np.nan]))[bad]
            self._table = (nodes, slopes / _TABLE_CELLS)
        return self._table

    def _component_bracket(self, p, *, upper_tail: bool):
        # At the smallest component quantile every component cdf is <= p, so the mixture's is
        # too; at the largest every one is >= p. The mixture quantile lies between them.
        # Where a component quantile is not computable (scipy's betaincinv gives NaN below about
        # 1e-300), that component's support end keeps the bracket valid.
        qs = [(c.isf(p) if upper_tail else c.ppf(p)) for c in self.components]
        lows = np.stack([np.where(np.isnan(q), c.lower, q) for q, c in zip(qs, self.components)])
        highs = np.stack([np.where(np.isnan(q), c.upper, q) for q, c in zip(qs, self.components)])
        lo, hi = lows.min(axis=0), highs.max(axis=0)
        # Near the underflow limit scipy's quantiles can also be merely inaccurate (betaincinv
        # returns the smallest normal float for a root far below it): check the bracket and
        # widen it to the support where it fails.
        lo = np.where(self._residual(lo, p, upper_tail=upper_tail) > 0, self.lower, lo)
        hi = np.where(self._residual(hi, p, upper_tail=upper_tail) < 0, self.upper, hi)
        return lo, hi

    def _residual(self, x, p, *, upper_tail: bool):
        # Increasing in x and zero at the root: cdf(x) - p, or p - sf(x).
        return (p - self.sf(x)) if upper_tail else (self.cdf(x) - p)

    def _invert_numerically(self, p, *, upper_tail: bool):
        shape = p.shape
        p = p.ravel()
        out = np.empty(p.size)
        # Chunks small enough for the temporaries to stay in cache: the fast path is a long
        # chain of elementwise operations, memory-bound on whole large arrays.
        rest = [
            start + self._fast_inverse(p[start : start + _CHUNK], out[start : start + _CHUNK],
                                       upper_tail=upper_tail)
            for start in range(0, p.size, _CHUNK)
        ]
        rest = np.concatenate(rest) if rest else np.empty(0, dtype=np.intp)
        if rest.size:
            pr = p[rest]
            lo, hi = self._component_bracket(pr, upper_tail=upper_tail)
            start = _float_midpoint(lo, hi)
            root = self._safeguarded_newton(pr, start, lo, hi, upper_tail=upper_tail)
            flat = self.pdf(root) == 0
            if flat.any():
                root[flat] = self._left_end(pr[flat], lo[flat], root[flat], upper_tail=upper_tail)
            out[rest] = root
        return out.reshape(shape)

    def _fast_inverse(self, p, out, *, upper_tail: bool) -> np.ndarray:
        """Solve one chunk into ``out`` where the table allows; return the indices left over.

        Left over: the extreme tails, the end cells of the table and the rare points the check
        rejects.
        """
        low_end = (p >= 1.0) if upper_tail else (p <= 0.0)
        high_end = (p <= 0.0) if upper_tail else (p >= 1.0)
        out[low_end] = self.lower
        out[high_end] = self.upper
        nodes, slopes = self._inversion_table()
        scaled = ((1.0 - p) if upper_tail else p) * _TABLE_CELLS
        k = scaled.astype(np.intp)
        fast = (k >= 1) & (k <= _TABLE_CELLS - 2)
        if fast.all():
            idx, pf = None, p
        else:
            idx = np.flatnonzero(fast)
            k, scaled, pf = k[idx], scaled[idx], p[idx]
        # Hermite guess, one Newton step, and a check.
        x0, x1 = nodes[k], nodes[k + 1]
        theta = scaled - k
        one_minus = 1.0 - theta
        guess = (
            (1.0 + 2.0 * theta) * one_minus**2 * x0
            + theta * one_minus**2 * slopes[k]
            + theta**2 * (3.0 - 2.0 * theta) * x1
            - theta**2 * one_minus * slopes[k + 1]
        )
        guess = np.clip(guess, x0, x1)
        r = self._residual(guess, pf, upper_tail=upper_tail)
        density = self.pdf(guess)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = guess - r / density
        guess = np.where(np.isfinite(step), np.clip(step, x0, x1), guess)
        r = self._residual(guess, pf, upper_tail=upper_tail)
        # Zero density: possibly inside a flat part of the cdf, where the solver must find the
        # left end.
        ok = (np.abs(r) <= _SNAP * pf) & (density > 0)
        if idx is None:
            out[...] = guess
            return np.flatnonzero(~ok)
        out[idx] = guess
        return np.flatnonzero(~(fast | low_end | high_end)) if ok.all() else np.sort(
            np.concatenate((np.flatnonzero(~(fast | low_end | high_end)), idx[~ok]))
        )

    def _left_end(self, p, lo, hi, *, upper_tail: bool):
        """Smallest x in [lo, hi] with cdf(x) >= p (or sf(x) <= p), by bisection.

        A root where the density vanishes may lie inside a flat part of the cdf (a gap between
        components); the generalised inverse is the left end of that flat part.
        """
        for _ in range(_MAX_SOLVER_STEPS):
            if np.all((hi - lo) <= 4 * np.spacing(np.maximum(np.abs(lo), np.abs(hi)))):
                break
            mid = _float_midpoint(lo, hi)
            if upper_tail:
                reached = self.sf(mid) <= p * (1.0 + _SNAP)
            else:
                reached = self.cdf(mid) >= p * (1.0 - _SNAP)
            hi = np.where(reached, mid, hi)
            lo = np.where(reached, lo, mid)
        return hi

    def _safeguarded_newton(self, p, x, lo, hi, *, upper_tail: bool):
        """Root of the residual in the valid bracket [lo, hi], vectorised.

        Newton steps, replaced by bisection in float order whenever a step would leave the
        bracket or fails to halve the step before last (Numerical Recipes' rtsafe), and on every
        other step after the first few, so every point converges within ~140 steps: to
        |residual| <= 8 eps p, or to a bracket a few units in the last place wide (then hi).
        """
        tol = _SNAP * p
        out = np.empty(p.size)
        idx = np.arange(p.size)
        last = before = hi - lo
        for step in range(_MAX_SOLVER_STEPS):
            r = self._residual(x, p, upper_tail=upper_tail)
            converged = np.abs(r) <= tol
            narrow = (hi - lo) <= 4 * np.spacing(np.maximum(np.abs(lo), np.abs(hi)))
            done = converged | narrow
            if done.any():
                out[idx[done]] = np.where(converged[done], x[done], hi[done])
                keep = ~done
                if not keep.any():
                    return out
                idx, p, x, lo, hi, tol, r, last, before = (
                    a[keep] for a in (idx, p, x, lo, hi, tol, r, last, before)
                )
            lo = np.where(r < 0, x, lo)
            hi = np.where(r > 0, x, hi)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                newton_step = r / self.pdf(x)
            candidate = x - newton_step
            use = (
                np.isfinite(candidate)
                & (candidate > lo)
                & (candidate < hi)
                & (np.abs(newton_step) <= 0.5 * before)
                # Newton converges only linearly on a power-law tail (x -> x/2 on F ~ x^2);
                # after a few steps every other step bisects in float order, which bounds the
                # work by about 2 x 64 steps.
                & ((step < _NEWTON_ONLY_STEPS) | (step % 2 == 0))
            )
            before = last
            x = np.where(use, candidate, _float_midpoint(lo, hi))
            last = np.where(use, np.abs(newton_step), np.maximum(x - lo, hi - x))
        # Not reached (see above); return the side of the bracket where cdf >= p.
        out[idx] = hi
        return out


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


# ---------------------------------------------------------------------------------------------
# Models


@dataclass(frozen=True, eq=False, repr=False)
class ScoreModel(ABC):
    """A population model of scores: prevalence pi, positive-score cdf G, negative-score cdf H.

    Build one with a constructor of this module (:func:`binormal`, :func:`discrete`, ...); all
    methods are vectorised over their first argument and return float64 arrays of its shape.

    Attributes
    ----------
    family : str
        Name of the constructor ("binormal", "uniform", ...).
    parameters : dict
        The constructor's arguments, for reports and manifests.
    prevalence : float
        pi = P(Y = 1), in (0, 1).
    """

    family: str
    parameters: dict
    prevalence: float
    _positive: object = field(repr=False)
    _negative: object = field(repr=False)
    _shape: str = field(repr=False)
    # The score distribution pi G + (1 - pi) H, built by the subclass.
    _mixture: object = field(init=False, repr=False, default=None)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{self.family}({args})"

    def plot(self, ax=None, *, kind: str = "pr"):
        """Draw the exact PR (or ROC, ``kind="roc"``) curve; see :func:`prdist.plotting.plot_population`."""
        from .plotting import plot_population

        return plot_population(self, ax=ax, kind=kind)

    @property
    def score_support(self) -> tuple[float, float]:
        """(lowest, highest) score the model produces; ends of unbounded supports are +-inf."""
        return float(self._mixture.lower), float(self._mixture.upper)

    # --- class distributions ------------------------------------------------------------------
    def positive_cdf(self, x) -> np.ndarray:
        """G(x) = P(score <= x | Y = 1)."""
        return self._positive.cdf(_as_scores(x, owner=f"{self.family}.positive_cdf"))

    def negative_cdf(self, x) -> np.ndarray:
        """H(x) = P(score <= x | Y = 0)."""
        return self._negative.cdf(_as_scores(x, owner=f"{self.family}.negative_cdf"))

    def score_cdf(self, x) -> np.ndarray:
        """F(x) = pi G(x) + (1 - pi) H(x), the cdf of the score of a random item."""
        return self._mixture.cdf(_as_scores(x, owner=f"{self.family}.score_cdf"))

    # --- curves -------------------------------------------------------------------------------
    def alpha_at(self, beta) -> np.ndarray:
        """False-positive rate alpha(beta) = 1 - H(G^-1(1 - beta)) at recall levels in (0, 1].

        Examples
        --------
        >>> float(uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5).alpha_at(1.0))
        0.5
        """
        beta = _unit_values(beta, name="beta", owner=f"{self.family}.alpha_at")
        return self._alpha(beta)

    def _alpha(self, beta):
        # G^-1(1 - beta) is the generalised inverse of the survival function at beta; solving on
        # the survival side avoids the rounding of 1 - beta at small recall.
        return self._negative.sf(self._positive.isf(beta))

    def pr(self, beta) -> np.ndarray:
        """Population precision PR(beta) at recall levels in (0, 1].

        ``pr(1.0)`` is the left limit at beta = 1 (see the module notes); use :meth:`pr_limits`
        for the limit at beta -> 0.

        Examples
        --------
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> float(model.pr(1.0))
        0.6666666666666666
        """
        beta = _unit_values(beta, name="beta", owner=f"{self.family}.pr")
        return self._pr(beta, self._alpha(beta))

    def _pr(self, beta, alpha):
        pi = self.prevalence
        return pi * beta / (pi * beta + (1.0 - pi) * alpha)

    def roc(self, alpha) -> np.ndarray:
        """True-positive rate ROC(alpha) = 1 - G(H^-1(1 - alpha)) at false-positive rates in [0, 1].

        Examples
        --------
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> model.roc([0.0, 0.5, 1.0]).tolist()
        [0.5, 1.0, 1.0]
        """
        alpha = _unit_values(alpha, name="alpha", owner=f"{self.family}.roc", include_zero=True)
        return self._positive.sf(self._negative.isf(alpha))

    def pr_limits(self) -> tuple[float, float]:
        """(lim PR(beta) as beta -> 0, PR(1)): where the PR curve starts and ends (Property P2).

        Examples
        --------
        >>> uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=1 / 11).pr_limits()
        (1.0, 0.1667)
        """
        return self._pr_start(), float(self._pr(1.0, self._alpha(np.float64(1.0))))

    @abstractmethod
    def _pr_start(self) -> float:
        """lim PR(beta) as beta -> 0."""

    def roc_shape(self) -> str:
        """Shape of the ROC curve: "concave", "convex", "linear" (both) or "neither".

        The ROC curve is concave exactly when the likelihood ratio g/h is non-decreasing in the
        score, and then the PR curve is non-increasing (Hughes-Oliver, Property P3); convex when
        g/h is non-increasing. For discrete models the shape is that of the ROC polygon through
        the achievable points (the ratio of the class masses at each value).

        Examples
        --------
        >>> bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5).roc_shape()
        'concave'
        """
        return self._shape

    # --- resources ------------------------------------------------------------------------------
    def sample(self, n, *, seed=None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` i.i.d. labeled items.

        Parameters
        ----------
        n : int
            Number of items, >= 0.
        seed : None, int, SeedSequence or Generator, default=None
            Seed of ``numpy.random.default_rng``; the same seed gives the same sample.

        Returns
        -------
        scores : ndarray of shape (n,), float64
        labels : ndarray of shape (n,), int8
            Bernoulli(pi) labels; the scores of positives are drawn from G, of negatives from H.

        Examples
        --------
        >>> scores, labels = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3).sample(5, seed=1)
        >>> scores.shape, labels.dtype
        ((5,), dtype('int8'))
        """
        n = check_int(n, name="n", owner=f"{self.family}.sample", low=0)
        rng = np.random.default_rng(seed)
        labels = (rng.random(n) < self.prevalence).astype(np.int8)
        positive = labels == 1
        scores = np.empty(n)
        scores[positive] = self._positive.draw(rng, int(positive.sum()))
        scores[~positive] = self._negative.draw(rng, int(n - positive.sum()))
        return scores, labels

    def score_quantile(self, u) -> np.ndarray:
        """Generalised inverse F^-1(u) = inf{x : F(x) >= u} of the score cdf, u in [0, 1].

        ``score_quantile(0)`` and ``score_quantile(1)`` are the ends of the support (possibly
        infinite). Feeding sorted probability levels gives sorted scores: a resource laid out in
        rank order without a sort. Exact (up to float rounding) for discrete, uniform and
        single-family cdfs; otherwise solved to within a few units in the last place of F.

        Examples
        --------
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> model.score_quantile([0.0, 0.25, 0.5, 1.0]).tolist()
        [0.0, 0.5, 0.75, 1.5]
        """
        u = _unit_values(u, name="u", owner=f"{self.family}.score_quantile", include_zero=True)
        return self._mixture.ppf(u)

    @abstractmethod
    def positive_probability(self, scores) -> np.ndarray:
        """P(Y = 1 | score): pi g / (pi g + (1 - pi) h), or the ratio of masses for discrete models.

        Raises
        ------
        DataError
            A score that is not finite or outside the support of both classes (where the
            probability is undefined).
        """

    def precision_at_fraction(self, t) -> np.ndarray:
        """Expected precision of the top fraction ``t`` in (0, 1] of a resource from this model.

        The top fraction t holds the items above the score x with P(score > x) <= t <=
        P(score >= x); when x is an atom (discrete models) the part of its tie group inside the
        fraction is a random draw from it, as with the hashed tie-break of
        :func:`prdist.ranking.rank_order`. For a resource of N items, p(r) is close to
        ``precision_at_fraction(r / N)``.

        Examples
        --------
        >>> float(uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5).precision_at_fraction(0.25))
        1.0
        """
        t = _unit_values(t, name="t", owner=f"{self.family}.precision_at_fraction")
        return self._precision_at_fraction(t)

    @abstractmethod
    def _precision_at_fraction(self, t):
        """precision_at_fraction after validation."""

    @abstractmethod
    def asymptotic_variance(self, beta) -> np.ndarray:
        """Asymptotic variance of sqrt(n) (PR^(beta) - PR(beta)), for continuous models."""


@dataclass(frozen=True, eq=False, repr=False)
class ContinuousScoreModel(ScoreModel):
    """A score model whose classes have densities g and h (every family except :func:`discrete`).

    Attributes
    ----------
    top_likelihood_ratio : float
        lim g(x)/h(x) as x rises to the common upper end of the supports (inf allowed); decides
        where the PR curve starts when both classes reach the same top score.
    """

    top_likelihood_ratio: float = math.nan

    def __post_init__(self):
        pi = self.prevalence
        mixture = _Mixture((pi, 1.0 - pi), (self._positive, self._negative))
        object.__setattr__(self, "_mixture", mixture)

    def positive_density(self, x) -> np.ndarray:
        """g(x), the density of the scores of positives."""
        return self._positive.pdf(_as_scores(x, owner=f"{self.family}.positive_density"))

    def negative_density(self, x) -> np.ndarray:
        """h(x), the density of the scores of negatives."""
        return self._negative.pdf(_as_scores(x, owner=f"{self.family}.negative_density"))

    def _pr_start(self) -> float:
        top_pos, top_neg = self._positive.upper, self._negative.upper
        if top_pos != top_neg:
            # Near recall 0 the threshold approaches the top positive score: above every negative
            # (alpha -> 0, precision -> 1) or below some of them (alpha stays positive -> 0).
            return 1.0 if top_pos > top_neg else 0.0
        ratio = self.top_likelihood_ratio
        if math.isinf(ratio):
            return 1.0
        pi = self.prevalence
        # beta / alpha(beta) -> lim g/h at the top (l'Hôpital), so PR -> pi l / (pi l + 1 - pi).
        return pi * ratio / (pi * ratio + 1.0 - pi)

    def positive_probability(self, scores) -> np.ndarray:
        """P(Y = 1 | score) = pi g / (pi g + (1 - pi) h), computed in log space.

        Examples
        --------
        >>> model = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
        >>> model.positive_probability([0.25, 0.75, 1.25]).tolist()
        [0.0, 0.5, 1.0]
        """
        owner = f"{self.family}.positive_probability"
        x = _as_scores(scores, owner=owner, finite=True)
        shape, x = x.shape, x.ravel()
        prior_logit = math.log(self.prevalence) - math.log1p(-self.prevalence)

        def logit_at(points):
            with np.errstate(invalid="ignore"):
                return prior_logit + (self._positive.logpdf(points) - self._negative.logpdf(points))

        logit = logit_at(x)
        # 0/0 or inf/inf: at a finite end of the support both densities can vanish (Beta shapes
        # above 1, a lognormal at 0) or blow up (Beta shapes below 1); the probability there is
        # the limit from inside, read one float inside the support.
        undefined = np.isnan(logit)
        if undefined.any():
            lower, upper = self._mixture.lower, self._mixture.upper
            inward = np.where(x <= lower, np.inf, np.where(x >= upper, -np.inf, x))
            at_end = undefined & ((x == lower) | (x == upper)) & np.isfinite(x)
            logit[at_end] = logit_at(np.nextafter(x[at_end], inward[at_end]))
            undefined = np.isnan(logit)
        if undefined.any():
            bad = float(x[undefined].flat[0])
            raise DataError(
                f"The score {bad!r} passed to {owner} lies outside the support of both classes of "
                f"{self!r}, where P(Y = 1 | score) is undefined. Pass scores the model can produce."
            )
        return special.expit(logit).reshape(shape)

    def _precision_at_fraction(self, t):
        # The top fraction t is everything above x = F^-1(1 - t) (no atoms): pi (1 - G(x)) / t.
        x = self._mixture.isf(t)
        return np.minimum(self.prevalence * self._positive.sf(x) / t, 1.0)

    def asymptotic_variance(self, beta) -> np.ndarray:
        """Asymptotic variance sigma^2(beta) of sqrt(n) (PR^(beta) - PR(beta)), beta in (0, 1).

        Clémençon & Vayatis (2009), Eq. 9, as corrected by Hughes-Oliver (every term carries
        PR^4 / beta^2):

            sigma^2 = PR^4 / beta^2 [ (1 - pi) alpha^2 / pi^3
                                      + (1 - pi)^2 s^2 beta (1 - beta) / pi^3
                                      + (1 - pi) alpha (1 - alpha) / pi^2 ],

        s(beta) = h(t) / g(t) at t = G^-1(1 - beta). The three terms are the sampling noise of
        the prevalence, of the positive-score quantile and of the negative-score cdf.

        Raises
        ------
        ParameterError
            beta outside (0, 1).

        Examples
        --------
        >>> model = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
        >>> round(float(model.asymptotic_variance(0.5)), 4)
        0.7327
        """
        owner = f"{self.family}.asymptotic_variance"
        beta = _unit_values(beta, name="beta", owner=owner, include_one=False)
        # t is the left end of any flat part of G, where g > 0: s is finite for beta in (0, 1).
        t = self._positive.isf(beta)
        s = np.exp(self._negative.logpdf(t) - self._positive.logpdf(t))
        alpha = self._negative.sf(t)
        pr = self._pr(beta, alpha)
        pi = self.prevalence
        bracket = (
            (1.0 - pi) * alpha**2 / pi**3
            + (1.0 - pi) ** 2 * s**2 * beta * (1.0 - beta) / pi**3
            + (1.0 - pi) * alpha * (1.0 - alpha) / pi**2
        )
        return pr**4 / beta**2 * bracket


@dataclass(frozen=True, eq=False, repr=False)
class DiscreteScoreModel(ScoreModel):
    """A score model whose classes take finitely many values (:func:`discrete`).

    Its PR curve consists of non-decreasing pieces separated by downward jumps, and the
    functional empirical PR curve is not consistent for it (Hughes-Oliver, Case F), which is why
    it has no :meth:`asymptotic_variance`.
    """

    def __post_init__(self):
        pi = self.prevalence
        pos, neg = self._positive, self._negative
        values = np.concatenate((pos.values, neg.values))
        masses = np.concatenate((pi * pos.masses, (1.0 - pi) * neg.masses))
        object.__setattr__(self, "_mixture", _Discrete(values, masses))

    @property
    def values(self) -> np.ndarray:
        """Every score value the model can produce, increasing."""
        return self._mixture.values

    def _pr_start(self) -> float:
        # For recall below the mass of the top positive value the threshold is that value; the
        # curve tends to 1 if no negative lies strictly above it, and to 0 otherwise.
        return 1.0 if self._negative.sf(self._positive.upper) == 0.0 else 0.0

    def positive_probability(self, scores) -> np.ndarray:
        """P(Y = 1 | score = x) = pi P(x | 1) / P(score = x), at values the model produces.

        Examples
        --------
        >>> model = discrete(neg=[0.1, 0.2], pos=[0.2, 0.3], prevalence=0.5)
        >>> model.positive_probability([0.1, 0.2, 0.3]).tolist()
        [0.0, 0.5, 1.0]
        """
        owner = f"{self.family}.positive_probability"
        x = _as_scores(scores, owner=owner, finite=True)
        mass = self._mixture.mass(x)
        if np.any(mass == 0.0):
            bad = float(x[mass == 0.0].flat[0])
            raise DataError(
                f"The score {bad!r} passed to {owner} is not one of the values of {self!r}, where "
                "P(Y = 1 | score) is undefined. Pass scores from model.values."
            )
        return np.minimum(self.prevalence * self._positive.mass(x) / mass, 1.0)

    def _precision_at_fraction(self, t):
        pi = self.prevalence
        mix = self._mixture
        # Atom x with P(score > x) <= t <= P(score >= x); the top fraction takes everything above
        # x plus a share t - P(score > x) of x's tie group, whose positive rate is eta(x).
        x = mix.isf(t)
        above = mix.sf(x)
        eta = pi * self._positive.mass(x) / mix.mass(x)
        return np.minimum((pi * self._positive.sf(x) + (t - above) * eta) / t, 1.0)

    def asymptotic_variance(self, beta) -> np.ndarray:
        """Not defined for discrete scores: raises :class:`ParameterError`."""
        raise ParameterError(
            f"asymptotic_variance needs class densities, but {self!r} is discrete: the functional "
            "empirical PR curve is not even consistent for discrete scores (Hughes-Oliver, "
            "section 3.2). Use a continuous model (binormal, bibeta, ...) or a bootstrap."
        )


# ---------------------------------------------------------------------------------------------
# Constructors


def binormal(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Normal scores in each class (Hughes-Oliver, Case A).

    Parameters
    ----------
    neg, pos : tuple of (mean, standard deviation)
        Parameters of the negative and positive score distributions; sd > 0.
    prevalence : float
        pi = P(Y = 1), in (0, 1).

    Returns
    -------
    ContinuousScoreModel
        Its ROC curve is concave (PR non-increasing) when the standard deviations are equal and
        the positive mean is the larger one.

    Examples
    --------
    >>> model = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
    >>> model.roc_shape(), model.pr_limits()
    ('concave', (1.0, 0.5))
    """
    return _normal_family("binormal", _Normal, neg=neg, pos=pos, prevalence=prevalence)


def _normal_family(owner: str, component, *, neg, pos, prevalence) -> ContinuousScoreModel:
    """A model whose classes are ``component(mu, sigma)`` (normal, or lognormal: an increasing
    transform of one, hence the same binormal ROC shape and tail ratio)."""
    pi = _prevalence(prevalence, owner)
    mu_n, sd_n = _location_scale(neg, "neg", owner)
    mu_p, sd_p = _location_scale(pos, "pos", owner)
    return ContinuousScoreModel(
        family=owner,
        parameters={"neg": (mu_n, sd_n), "pos": (mu_p, sd_p), "prevalence": pi},
        prevalence=pi,
        _positive=_Mixture((1.0,), (component(mu_p, sd_p),)),
        _negative=_Mixture((1.0,), (component(mu_n, sd_n),)),
        _shape=_binormal_shape(mu_n, sd_n, mu_p, sd_p),
        top_likelihood_ratio=_Normal(mu_n, sd_n).normal_tail_ratio(mu_p, sd_p),
    )


def bilognormal(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Lognormal scores in each class (Hughes-Oliver, Case A*).

    ``neg`` and ``pos`` are (mu, sigma) of the underlying normal: the score is exp(N(mu,
    sigma^2)). Since log is increasing, the ROC and PR curves equal those of
    ``binormal(neg=neg, pos=pos, prevalence=prevalence)`` (Property P7).

    Examples
    --------
    >>> a = bilognormal(neg=(0, 1), pos=(1, 1), prevalence=0.2)
    >>> b = binormal(neg=(0, 1), pos=(1, 1), prevalence=0.2)
    >>> bool(np.allclose(a.pr([0.1, 0.5, 0.9]), b.pr([0.1, 0.5, 0.9]), rtol=1e-12))
    True
    """
    return _normal_family("bilognormal", _LogNormal, neg=neg, pos=pos, prevalence=prevalence)


def bibeta(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Beta-distributed scores in each class (Hughes-Oliver, Case C).

    Parameters
    ----------
    neg, pos : tuple of (a, b)
        Shape parameters of the negative and positive Beta(a, b) distributions, both > 0.
    prevalence : float
        pi, in (0, 1).

    Examples
    --------
    >>> model = bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5)
    >>> model.pr_limits()
    (1.0, 0.5)
    """
    owner = "bibeta"
    pi = _prevalence(prevalence, owner)
    a_n, b_n = _shapes(neg, "neg", owner)
    a_p, b_p = _shapes(pos, "pos", owner)
    # The log likelihood ratio (a_p - a_n) log x + (b_p - b_n) log(1 - x) is monotone on (0, 1)
    # exactly when its two slopes push the same way.
    da, db = a_p - a_n, b_p - b_n
    if da == 0 and db == 0:
        shape = "linear"
    elif da >= 0 and db <= 0:
        shape = "concave"
    elif da <= 0 and db >= 0:
        shape = "convex"
    else:
        shape = "neither"
    # Near x = 1 the densities behave as (1 - x)^(b - 1) / B(a, b).
    if b_p != b_n:
        top = math.inf if b_p < b_n else 0.0
    else:
        top = math.exp(special.betaln(a_n, b_n) - special.betaln(a_p, b_p))
    return ContinuousScoreModel(
        family=owner,
        parameters={"neg": (a_n, b_n), "pos": (a_p, b_p), "prevalence": pi},
        prevalence=pi,
        _positive=_Mixture((1.0,), (_Beta(a_p, b_p),)),
        _negative=_Mixture((1.0,), (_Beta(a_n, b_n),)),
        _shape=shape,
        top_likelihood_ratio=top,
    )


def uniform(*, neg, pos, prevalence) -> ContinuousScoreModel:
    """Uniform scores in each class: overlapping, nested, disjoint or reversed ranges.

    Hughes-Oliver's Case D is ``uniform(neg=(0, 1), pos=(0.5, 1.5), ...)`` and Case E its
    reverse ``uniform(neg=(0.5, 1.5), pos=(0, 1), ...)``.

    Parameters
    ----------
    neg, pos : tuple of (low, high)
        Ranges of the negative and positive scores, low < high.
    prevalence : float
        pi, in (0, 1).

    Examples
    --------
    >>> case_d = uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
    >>> case_d.pr_limits(), case_d.roc_shape()
    ((1.0, 0.6666666666666666), 'concave')
    >>> case_e = uniform(neg=(0.5, 1.5), pos=(0, 1), prevalence=0.5)
    >>> case_e.roc_shape(), float(case_e.roc(1.0))
    ('convex', 0.5)
    """
    owner = "uniform"
    pi = _prevalence(prevalence, owner)
    lo_n, hi_n = _interval(neg, "neg", owner)
    lo_p, hi_p = _interval(pos, "pos", owner)
    positive, negative = _Uniform(lo_p, hi_p), _Uniform(lo_n, hi_n)
    # The likelihood ratio is constant between consecutive range ends; read it at the middles
    # where some class has mass.
    ends = np.unique([lo_n, hi_n, lo_p, hi_p])
    middles = 0.5 * (ends[1:] + ends[:-1])
    log_g, log_h = positive.logpdf(middles), negative.logpdf(middles)
    covered = ~(np.isneginf(log_g) & np.isneginf(log_h))
    shape = _shape_of_ratio(log_g[covered], log_h[covered])
    return ContinuousScoreModel(
        family=owner,
        parameters={"neg": (lo_n, hi_n), "pos": (lo_p, hi_p), "prevalence": pi},
        prevalence=pi,
        _positive=_Mixture((1.0,), (positive,)),
        _negative=_Mixture((1.0,), (negative,)),
        _shape=shape,
        # Used only when both ranges end at the same score: the ratio of the two densities.
        top_likelihood_ratio=(hi_n - lo_n) / (hi_p - lo_p),
    )


def discrete(*, neg, pos, prevalence) -> DiscreteScoreModel:
    """Scores from finitely many values (Hughes-Oliver, Case F).

    Parameters
    ----------
    neg, pos : sequence of float
        Each class's score is uniform over the entries of its list; a value listed k times has
        k times the mass.
    prevalence : float
        pi, in (0, 1).

    Examples
    --------
    >>> case_f = discrete(neg=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7],
    ...                   pos=[0.2, 0.35, 0.5, 0.75, 0.9], prevalence=0.5)
    >>> case_f.pr_limits(), case_f.roc_shape()
    ((1.0, 0.625), 'neither')
    """
    owner = "discrete"
    pi = _prevalence(prevalence, owner)
    neg_values = _value_list(neg, "neg", owner)
    pos_values = _value_list(pos, "pos", owner)
    negative = _DiscreteClass(neg_values)
    positive = _DiscreteClass(pos_values)
    values = np.union1d(negative.values, positive.values)
    shape = _shape_of_ratio(
        _log_or_neginf(positive.mass(values)), _log_or_neginf(negative.mass(values))
    )
    return DiscreteScoreModel(
        family=owner,
        parameters={"neg": neg_values.tolist(), "pos": pos_values.tolist(), "prevalence": pi},
        prevalence=pi,
        _positive=positive,
        _negative=negative,
        _shape=shape,
    )


class _DiscreteClass(_Discrete):
    """One class of a discrete model: drawn uniformly from its list (repeats are weights)."""

    def __init__(self, listed: np.ndarray):
        super().__init__(listed, np.ones(listed.size, dtype=np.int64))
        self._listed = listed

    def draw(self, rng, size):
        return self._listed[rng.integers(self._listed.size, size=size)]


def bumped(base: ContinuousScoreModel, *, bump) -> ContinuousScoreModel:
    """Move a share of the positives of ``base`` into a normal bump: a non-monotone model.

    The positive scores follow (1 - w) G_base + w N(mu, sd^2); the negatives and the prevalence
    are those of ``base``. A bump of positives at low scores makes P(Y = 1 | score) rise again
    where ``base`` has mostly negatives, so precision is not monotone in rank and the PAULA
    monotonicity assumptions fail: the model for testing the assumption diagnostics.

    Parameters
    ----------
    base : ContinuousScoreModel
        Any continuous model (including another bumped one).
    bump : tuple of (mu, sd, weight)
        Location and scale (sd > 0) of the bump on the score scale, and the share w in (0, 1) of
        positives it holds.

    Examples
    --------
    >>> base = binormal(neg=(0, 1), pos=(2, 1), prevalence=0.3)
    >>> model = bumped(base, bump=(-2.5, 0.3, 0.2))
    >>> eta = model.positive_probability([-2.5, -1.0, 2.0])
    >>> bool(eta[0] > eta[1] < eta[2]), model.roc_shape()
    (True, 'neither')
    """
    owner = "bumped"
    if not isinstance(base, ContinuousScoreModel):
        raise ParameterError(
            f"The 'base' parameter of {owner} must be a continuous score model (binormal, "
            f"bilognormal, bibeta, uniform or bumped). Got {base!r} instead."
        )
    try:
        mu, sd, weight = bump
    except (TypeError, ValueError):
        raise ParameterError(
            f"The 'bump' parameter of {owner} must be a tuple (mu, sd, weight). Got {bump!r} "
            "instead."
        ) from None
    mu = check_float(mu, name="bump[0] (mu)", owner=owner)
    sd = check_float(sd, name="bump[1] (sd)", owner=owner, low=0.0, low_open=True)
    weight = check_float(
        weight, name="bump[2] (weight)", owner=owner,
        low=0.0, high=1.0, low_open=True, high_open=True,
    )
    positive = _Mixture((1.0 - weight, weight), (base._positive, _Normal(mu, sd)))
    negative = base._negative
    if math.isinf(negative.upper):
        # Both classes reach +inf; the bump adds w * lim phi/h to the base's ratio at the top.
        (neg_component,) = negative.components
        top = (1.0 - weight) * base.top_likelihood_ratio + weight * neg_component.normal_tail_ratio(
            mu, sd
        )
    else:
        top = math.inf  # the bump's normal tail outlasts every bounded negative score
    model = ContinuousScoreModel(
        family=owner,
        parameters={"base": base, "bump": (mu, sd, weight)},
        prevalence=base.prevalence,
        _positive=positive,
        _negative=negative,
        _shape="neither",
        top_likelihood_ratio=top,
    )
    object.__setattr__(model, "_shape", _numeric_shape(model))
    return model


def chance(*, prevalence) -> ContinuousScoreModel:
    """A useless scorer: both classes uniform on [0, 1] (Property P4).

    Its ROC curve is the diagonal ROC(alpha) = alpha and its PR curve the constant pi.

    Examples
    --------
    >>> model = chance(prevalence=0.2)
    >>> model.pr([0.1, 0.9]).tolist(), model.roc_shape()
    ([0.2, 0.2], 'linear')
    """
    return uniform(neg=(0.0, 1.0), pos=(0.0, 1.0), prevalence=prevalence)


def perfect_separation(*, prevalence) -> ContinuousScoreModel:
    """Every positive scores above every negative: positives U[1, 2], negatives U[0, 1] (P5).

    ``pr`` is 1 at every recall in (0, 1] and ``roc`` is 1 at every rate in [0, 1]: as functions
    of recall and false-positive rate the perfect curves are constant. The vertical parts of the
    curves traced by the threshold are in :func:`reference_curves`.
    """
    return uniform(neg=(0.0, 1.0), pos=(1.0, 2.0), prevalence=prevalence)


def reverse_separation(*, prevalence) -> ContinuousScoreModel:
    """Every positive scores below every negative: positives U[0, 1], negatives U[1, 2] (P6).

    ``pr`` is the achievable lower bound :func:`pr_lower_bound` pi beta / (pi beta + 1 - pi)
    and ``roc`` is 0 at every rate in [0, 1].

    Examples
    --------
    >>> model = reverse_separation(prevalence=0.5)
    >>> model.pr([0.5, 1.0]).round(4).tolist()
    [0.3333, 0.5]
    """
    return uniform(neg=(1.0, 2.0), pos=(0.0, 1.0), prevalence=prevalence)


def pr_lower_bound(beta, *, prevalence) -> np.ndarray:
    """The lowest precision any scorer achieves at recall beta: pi beta / (pi beta + 1 - pi).

    Reached when every negative is ranked above every positive (the reverse-separation PR curve,
    Hughes-Oliver P6; Boyd et al. 2012).

    Examples
    --------
    >>> pr_lower_bound([0.5, 1.0], prevalence=0.5).round(4).tolist()
    [0.3333, 0.5]
    """
    pi = _prevalence(prevalence, "pr_lower_bound")
    beta = _unit_values(beta, name="beta", owner="pr_lower_bound", include_zero=True)
    return pi * beta / (pi * beta + 1.0 - pi)


@dataclass(frozen=True, eq=False)
class ReferenceCurves:
    """Chance, perfect-separation and reverse-separation curves for one prevalence (P4-P6).

    Every curve is an (m, 2) array of (x, y) vertices traced as the threshold falls from +inf to
    -inf: ROC curves as (false-positive rate, true-positive rate), PR curves as (recall,
    precision). Separation curves have vertical segments, which is why they are given as traced
    point sequences and not as functions. ``reverse_pr`` (the achievable lower bound) is sampled
    at the recall levels of ``beta``.
    """

    prevalence: float
    chance_roc: np.ndarray
    chance_pr: np.ndarray
    perfect_roc: np.ndarray
    perfect_pr: np.ndarray
    reverse_roc: np.ndarray
    reverse_pr: np.ndarray


def reference_curves(prevalence, *, points: int = 101) -> ReferenceCurves:
    """Chance, perfect-separation and reverse-separation ROC and PR curves (Hughes-Oliver P4-P6).

    Parameters
    ----------
    prevalence : float
        pi, in (0, 1).
    points : int, default=101
        Number of recall levels (from 0 to 1) at which the curved reverse-separation PR curve is
        sampled; >= 2.

    Returns
    -------
    ReferenceCurves

    Examples
    --------
    >>> curves = reference_curves(0.25, points=3)
    >>> curves.perfect_pr.tolist()
    [[0.0, 1.0], [1.0, 1.0], [1.0, 0.25]]
    >>> curves.reverse_pr.round(4).tolist()
    [[0.0, 0.0], [0.5, 0.1429], [1.0, 0.25]]
    """
    pi = _prevalence(prevalence, "reference_curves")
    points = check_int(points, name="points", owner="reference_curves", low=2)
    beta = np.linspace(0.0, 1.0, points)
    return ReferenceCurves(
        prevalence=pi,
        chance_roc=np.array([[0.0, 0.0], [1.0, 1.0]]),
        chance_pr=np.array([[0.0, pi], [1.0, pi]]),
        # Positives first: recall rises at precision 1, then the negatives pull precision to pi.
        perfect_roc=np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        perfect_pr=np.array([[0.0, 1.0], [1.0, 1.0], [1.0, pi]]),
        # Negatives first: precision is 0 until the first positive, then climbs to pi.
        reverse_roc=np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]),
        reverse_pr=np.column_stack((beta, pi * beta / (pi * beta + 1.0 - pi))),
    )


# ---------------------------------------------------------------------------------------------
# Validation and shape helpers


def _prevalence(value, owner: str) -> float:
    return PREVALENCE.check(value, owner=owner)


def _pair(value, name: str, owner: str, expectation: str) -> tuple[float, float]:
    try:
        first, second = value
        pair = (float(first), float(second))
    except (TypeError, ValueError):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair {expectation}. "
            f"Got {value!r} instead."
        ) from None
    if not all(math.isfinite(v) for v in pair) or any(isinstance(v, bool) for v in value):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair {expectation} of finite numbers. "
            f"Got {value!r} instead."
        )
    return pair


def _location_scale(value, name: str, owner: str) -> tuple[float, float]:
    mu, sd = _pair(value, name, owner, "(mean, sd) with sd > 0")
    if sd <= 0:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair (mean, sd) with sd > 0. Got "
            f"{value!r} instead."
        )
    return mu, sd


def _shapes(value, name: str, owner: str) -> tuple[float, float]:
    a, b = _pair(value, name, owner, "(a, b) of Beta shape parameters > 0")
    if a <= 0 or b <= 0:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair (a, b) of Beta shape parameters "
            f"> 0. Got {value!r} instead."
        )
    return a, b


def _interval(value, name: str, owner: str) -> tuple[float, float]:
    lo, hi = _pair(value, name, owner, "(low, high) with low < high")
    if not lo < hi:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair (low, high) with low < high. Got "
            f"{value!r} instead."
        )
    return lo, hi


def _value_list(value, name: str, owner: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a non-empty list of finite score values. "
            f"Got {value!r} instead."
        )
    return arr


def _unit_values(values, *, name: str, owner: str, include_zero: bool = False,
                 include_one: bool = True) -> np.ndarray:
    try:
        # Booleans are not probabilities.
        arr = None if isinstance(values, bool) else np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    lower = "[0" if include_zero else "(0"
    upper = "1]" if include_one else "1)"
    if arr is None:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be floats in {lower}, {upper}. Got "
            f"{values!r} instead."
        )
    ok = (arr >= 0.0) if include_zero else (arr > 0.0)
    ok &= (arr <= 1.0) if include_one else (arr < 1.0)
    if not ok.all():
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be floats in {lower}, {upper}; it holds "
            f"{float(arr[~ok].flat[0])!r}."
        )
    return arr


def _as_scores(values, *, owner: str, finite: bool = False) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            f"The scores passed to {owner} must be numbers. Got {values!r} instead."
        ) from None
    if np.isnan(arr).any():
        raise DataError(f"The scores passed to {owner} hold NaN. Drop or impute them first.")
    if finite and not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        raise DataError(f"The scores passed to {owner} must be finite; got {bad!r}.")
    return arr


def _log_or_neginf(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _shape_of_ratio(log_g, log_h, *, rtol: float = 0.0) -> str:
    """Classify the ROC from the log likelihood ratio read at increasing scores."""
    with np.errstate(invalid="ignore"):
        ratio = log_g - log_h  # +inf / -inf where one class has no mass
    with np.errstate(invalid="ignore"):
        slack = rtol * np.maximum(np.abs(ratio[1:]), np.abs(ratio[:-1]))
    slack = np.where(np.isfinite(slack), slack, 0.0)
    up = np.all(ratio[:-1] <= ratio[1:] + slack)
    down = np.all(ratio[:-1] >= ratio[1:] - slack)
    if up and down:
        return "linear"
    if up:
        return "concave"
    if down:
        return "convex"
    return "neither"


def _binormal_shape(mu_n, sd_n, mu_p, sd_p) -> str:
    if sd_n != sd_p:
        # The log likelihood ratio is a parabola: it turns once, so the ROC has a hook.
        return "neither"
    if mu_p == mu_n:
        return "linear"
    return "concave" if mu_p > mu_n else "convex"


def _numeric_shape(model: ContinuousScoreModel) -> str:
    # The likelihood ratio at the score quantiles 1e-6 .. 1 - 1e-6, up to rounding.
    x = model._mixture.ppf(np.linspace(1e-6, 1.0 - 1e-6, 4001))
    return _shape_of_ratio(model._positive.logpdf(x), model._negative.logpdf(x), rtol=1e-9)
