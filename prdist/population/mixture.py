"""Finite mixtures of score distributions and the solver of their quantile function.

A model's score cdf F = pi G + (1 - pi) H is such a mixture, which
:meth:`prdist.population.ScoreModel.score_quantile` inverts. Private to :mod:`prdist.population`.
"""

from __future__ import annotations

import math

import numpy as np

from prdist.population.distributions import _SNAP, _Uniform

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
