"""Uniform random sampling (the PAULA paper's sections 2.1 and 3): the plan and its estimates."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prdist._validation import check_choice, check_int
from prdist.sampling.checks import _check_delta, _check_plan_labels, _check_ranks, _frozen, _rng

RANDOM = "random"
_METHODS = ("clopper-pearson", "hoeffding")


@dataclass(frozen=True, eq=False)
class RandomPlan:
    """A uniform random sample of ranks to label, built by :func:`plan_random`.

    Attributes
    ----------
    n : int
        Number of items in the resource.
    size : int
        Number of sampled ranks, ``len(ranks)``.
    seed : int or numpy.random.SeedSequence
        The seed the sample was drawn with; the same seed gives the same ranks.
    ranks : ndarray of shape (size,), int64, read-only
        Sorted, distinct 1-based ranks to label.
    """

    n: int
    size: int
    seed: object
    ranks: np.ndarray

    def roles(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (role, grid_index) aligned with :attr:`ranks`: "random" and -1 throughout."""
        return np.full(self.size, RANDOM), np.full(self.size, -1, dtype=np.int32)


@dataclass(frozen=True, eq=False)
class RandomEstimate:
    """Pointwise estimates of p(r) from a uniform random sample, built by :func:`estimate_random`.

    Every array has the shape of ``ranks``. Entry i describes the z = ``n_sampled[i]`` sampled
    items of rank <= ``ranks[i]``.

    Attributes
    ----------
    ranks : ndarray of int64
        The ranks r the estimates are for.
    estimate : ndarray of float64
        Mean of the known labels among the sampled items of rank <= r: the surrogate p'(z) of the
        paper, z ~ r s / n. NaN exactly where no such item has a known label (in particular where
        ``n_sampled == 0``); ``lower`` and ``upper`` are always defined.
    lower, upper : ndarray of float64
        Pointwise (1 - delta) confidence interval of p(r): each holds with probability at least
        1 - delta on its own, not simultaneously over ranks. Unknown labels count as 0 for
        ``lower`` and as 1 for ``upper``; ranks with no sampled item get [0, 1].
    n_sampled, n_positive, n_unknown : ndarray of int64
        z, the number of known positives and the number of unknown (NaN) labels among them.
    delta : float
        One minus the pointwise confidence.
    method : str
        "clopper-pearson" or "hoeffding".
    """

    ranks: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_sampled: np.ndarray
    n_positive: np.ndarray
    n_unknown: np.ndarray
    delta: float
    method: str


def plan_random(n, *, size, seed) -> RandomPlan:
    """Draw ``size`` distinct ranks of a resource of ``n`` items uniformly at random.

    The sample is drawn without replacement: every subset of ``size`` ranks is equally likely.
    Given how many sampled ranks fall in 1..r, those ranks are a uniform sample of 1..r, which
    is what :func:`estimate_random` relies on.

    Parameters
    ----------
    n : int
        Number of items in the resource, >= 1.
    size : int
        Number of ranks to sample, in [1, n].
    seed : int or numpy.random.SeedSequence
        Seed of the draw (required: a plan must be reproducible).

    Returns
    -------
    RandomPlan
        ``ranks`` holds the sorted 1-based ranks to label.

    Examples
    --------
    >>> plan = plan_random(1000, size=5, seed=0)
    >>> plan.ranks.size, bool((plan.ranks >= 1).all() and (plan.ranks <= 1000).all())
    (5, True)
    >>> bool((plan_random(1000, size=5, seed=0).ranks == plan.ranks).all())
    True
    """
    owner = "plan_random"
    n = check_int(n, name="n", owner=owner, low=1)
    size = check_int(size, name="size", owner=owner, low=1, high=n)
    rng = _rng(seed, owner=owner)
    # Floyd's algorithm inside choice() keeps memory O(size) when size << n.
    ranks = np.sort(rng.choice(n, size=size, replace=False, shuffle=False).astype(np.int64)) + 1
    return RandomPlan(n=n, size=size, seed=seed, ranks=_frozen(ranks))


def estimate_random(plan, labels, *, ranks=None, delta=0.05, method="clopper-pearson") -> RandomEstimate:
    """Estimate p(r) at the requested ranks from the labels of a uniform random sample.

    The estimate at rank r is the precision of the z sampled items whose rank is <= r (the
    paper's surrogate p'(rs/n), evaluated at the realised z rather than its expectation rs/n).
    Given z, those items are a uniform sample of 1..r, so the intervals hold conditionally on z
    and hence unconditionally.

    - ``"hoeffding"``: Eq. 3 of the paper, p' +- sqrt(ln(2/delta) / (2z)), clipped to [0, 1]
      (Hoeffding's bound also holds for sampling without replacement).
    - ``"clopper-pearson"``: the exact binomial interval from the Beta quantiles, which treats the
      z items as drawn with replacement; drawing without replacement only concentrates the count
      further (finite-population correction; the tests check the exact hypergeometric coverage).

    Both are pointwise: each rank's interval has coverage >= 1 - delta on its own. For one
    guarantee over k ranks at once, pass delta / k (union bound, as in the paper's Eq. 4).

    Parameters
    ----------
    plan : RandomPlan
        The plan the labels belong to.
    labels : array-like of shape (plan.size,)
        Labels aligned with ``plan.ranks``: 1, 0 or NaN (unknown). Unknown labels are treated
        conservatively: as 0 for the lower bound and as 1 for the upper bound; the point
        estimate uses the known labels only.
    ranks : array-like of int, optional
        Ranks in [1, n] to estimate at, in any order. Default: ``plan.ranks`` (the estimate
        changes only there).
    delta : float, default=0.05
        One minus the pointwise confidence, in (0, 1).
    method : {"clopper-pearson", "hoeffding"}, default="clopper-pearson"
        The interval.

    Returns
    -------
    RandomEstimate
        Arrays aligned with ``ranks``. Where no sampled item lies at or above rank r
        (``n_sampled == 0``) nothing is known: the estimate is NaN and the interval is [0, 1].

    Examples
    --------
    >>> plan = plan_random(10, size=4, seed=1)
    >>> est = estimate_random(plan, [1, 1, 0, 1], ranks=[10], method="hoeffding")
    >>> int(est.n_sampled[0]), float(est.estimate[0])
    (4, 0.75)
    >>> round(float(est.lower[0]), 4), float(est.upper[0])
    (0.0709, 1.0)
    """
    owner = "estimate_random"
    labels = _check_plan_labels(plan, labels, RandomPlan, maker="plan_random", owner=owner)
    delta = _check_delta(delta, owner=owner)
    method = check_choice(method, name="method", owner=owner, choices=_METHODS)
    r = plan.ranks.copy() if ranks is None else _check_ranks(ranks, n=plan.n, owner=owner)

    unknown = np.isnan(labels)
    cum_positive = np.concatenate(([0], np.cumsum(labels == 1.0)))
    cum_unknown = np.concatenate(([0], np.cumsum(unknown)))
    z = np.searchsorted(plan.ranks, r, side="right").astype(np.int64)
    k_pos = cum_positive[z].astype(np.int64)
    k_unk = cum_unknown[z].astype(np.int64)

    known = z - k_unk
    estimate = np.where(known > 0, k_pos / np.maximum(known, 1), np.nan)
    if method == "hoeffding":
        lower, upper = _hoeffding_interval(k_pos, k_pos + k_unk, z, delta)
    else:
        lower = _clopper_pearson_lower(k_pos, z, delta / 2)
        upper = _clopper_pearson_upper(k_pos + k_unk, z, delta / 2)
    return RandomEstimate(
        ranks=_frozen(r),
        estimate=_frozen(estimate),
        lower=_frozen(lower),
        upper=_frozen(upper),
        n_sampled=_frozen(z),
        n_positive=_frozen(k_pos),
        n_unknown=_frozen(k_unk),
        delta=delta,
        method=method,
    )


def _hoeffding_interval(k_low, k_high, z, delta):
    """Eq. 3 around k_low/z (lower end) and k_high/z (upper end); [0, 1] where z == 0."""
    lower = np.zeros(z.shape, dtype=np.float64)
    upper = np.ones(z.shape, dtype=np.float64)
    has = z > 0
    half = np.sqrt(math.log(2.0 / delta) / (2.0 * z[has]))
    lower[has] = np.maximum(0.0, k_low[has] / z[has] - half)
    upper[has] = np.minimum(1.0, k_high[has] / z[has] + half)
    return lower, upper


def _clopper_pearson_lower(k, z, tail):
    """Largest p with P[Bin(z, p) >= k] <= tail: the Beta(k, z-k+1) quantile; 0 when k == 0."""
    from scipy import stats  # here: `prdist budget` plans with this module and needs no SciPy

    out = np.zeros(z.shape, dtype=np.float64)
    has = k > 0
    out[has] = stats.beta.ppf(tail, k[has], z[has] - k[has] + 1)
    return out


def _clopper_pearson_upper(k, z, tail):
    """Smallest p with P[Bin(z, p) <= k] <= tail: the Beta(k+1, z-k) quantile; 1 when k == z."""
    from scipy import stats

    out = np.ones(z.shape, dtype=np.float64)
    has = k < z
    out[has] = stats.beta.ppf(1.0 - tail, k[has] + 1, z[has] - k[has])
    return out
