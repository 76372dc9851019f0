"""The classical sampling baselines of the PAULA paper (Sabharwal & Sedghi, UAI 2017).

Two ways to estimate the precision function p(r) of a ranked resource of n items from sampled
labels, against which PAULA's deterministic plan is measured:

- **Uniform random sampling** (sections 2.1 and 3): label ``size`` ranks drawn uniformly without
  replacement and use the precision of the sampled items at or above rank r as the surrogate
  p'(rs/n) of p(r), with pointwise Hoeffding (Eq. 3) or exact Clopper–Pearson intervals. Its
  budgets are Eq. 2 (:func:`point_estimate_budget`), Eq. 4 (:func:`random_sampling_reliable_from`)
  and Eq. 5 (:func:`random_sampling_budget`).
- **Logarithmic stratified sampling** (section 4.4.1, Algorithm 1): label the prefix 1..g_l and
  keep, for every grid point g_k, a sample X_k of s draws from 1..g_k that reuses most draws of
  X_{k-1}; q(g_k) = S_k / s. Its budget is Theorem 2 (:func:`stratified_budget`).

Everything here is pure NumPy/SciPy; randomness comes only from an explicit ``seed``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ._validation import as_label_array, check_choice, check_float, check_int
from .errors import DataError, ParameterError
from .grid import GridParameters, exact_eps
from .params import ALPHA, DELTA, R_TILDE, WINDOW
from .plan import plan_paula

__all__ = [
    "RandomPlan",
    "RandomEstimate",
    "StratifiedPlan",
    "StratifiedEstimate",
    "StratifiedBudget",
    "plan_random",
    "estimate_random",
    "point_estimate_budget",
    "random_sampling_reliable_from",
    "random_sampling_budget",
    "plan_stratified",
    "estimate_stratified",
    "stratified_budget",
]

RANDOM = "random"
PREFIX = "prefix"
STRATUM = "stratum"
_METHODS = ("clopper-pearson", "hoeffding")
# A stratified plan keeps 16 bytes per draw; beyond this a typo in beta (say 1.0001) would
# exhaust memory instead of failing with a message.
_MAX_DRAWS = 10**8


# --------------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------------


def _rng(seed, *, owner: str) -> np.random.Generator:
    """Return the generator of an explicit seed: a non-negative int or a SeedSequence."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ParameterError(
            f"The 'seed' parameter of {owner} must be a non-negative int or a "
            f"numpy.random.SeedSequence. Got {seed!r} instead."
        )
    return np.random.default_rng(int(seed))


def _check_delta(delta, *, owner: str) -> float:
    return DELTA.check(delta, owner=owner)


def _check_precision(p, *, name: str, owner: str) -> float:
    return check_float(p, name=name, owner=owner, low=0.0, high=1.0, low_open=True)


def _check_guarantee(alpha, p, delta, *, owner: str) -> tuple[float, float, float]:
    """The relative error ``alpha`` > 0, precision bound ``p`` in (0, 1] and failure probability
    ``delta`` in (0, 1) of a uniform-sampling budget, checked in that order."""
    alpha = check_float(alpha, name="alpha", owner=owner, **ALPHA.bounds)  # required here
    return alpha, _check_precision(p, name="p", owner=owner), _check_delta(delta, owner=owner)


def _check_ranks(ranks, *, n: int, owner: str, name: str = "ranks") -> np.ndarray:
    """Return ``ranks`` as a 1-D int64 array after checking every value is an integer in [1, n]."""
    arr = np.atleast_1d(np.asarray(ranks))
    expectation = f"The {name!r} parameter of {owner} must hold integer ranks in [1, {n}]"
    if arr.ndim != 1:
        raise ParameterError(f"{expectation} (a rank or a 1-D array). Got shape {arr.shape} instead.")
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    else:
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ParameterError(f"{expectation}. Got values of type {arr.dtype} instead.") from None
        not_integer = ~np.isfinite(as_float) | (as_float != np.floor(as_float))
        if not_integer.any():
            i = int(np.flatnonzero(not_integer)[0])
            raise ParameterError(f"{expectation}. Position {i} holds {arr[i]!r} instead.")
        out = as_float.astype(np.int64)
    bad = (out < 1) | (out > n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"{expectation} (n is the resource size). Position {i} holds {int(out[i])} instead."
        )
    return out


def _check_labels(labels, *, size: int, owner: str) -> np.ndarray:
    arr = as_label_array(labels, owner=owner)
    if arr.size != size:
        raise DataError(
            f"The 'labels' argument of {owner} must hold one label per planned rank "
            f"(aligned with plan.ranks, {size} values). Got {arr.size} values instead."
        )
    return arr


def _check_plan_labels(plan, labels, plan_type: type, *, maker: str, owner: str) -> np.ndarray:
    """Check ``plan`` is a ``plan_type`` (made by the function ``maker``); return its labels checked."""
    if not isinstance(plan, plan_type):
        raise ParameterError(
            f"The 'plan' argument of {owner} must be a {plan_type.__name__} from {maker}. "
            f"Got {type(plan).__name__} instead."
        )
    return _check_labels(labels, size=plan.size, owner=owner)


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


# --------------------------------------------------------------------------------------------
# Uniform random sampling (sections 2.1 and 3)
# --------------------------------------------------------------------------------------------


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


def point_estimate_budget(*, alpha, p, delta) -> int:
    """Samples needed for one (1 + alpha)-approximate point estimate of p(r) (Eq. 2).

    z = ceil(ln(2/delta) / (2 alpha^2 p^2)) draws from 1..r give |p~(r) - p(r)| < alpha p(r)
    with probability at least 1 - delta when p(r) >= p (two-sided Hoeffding bound).

    Parameters
    ----------
    alpha : float
        Relative error, > 0.
    p : float
        A lower bound on the precision p(r) being estimated, in (0, 1].
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    int

    Examples
    --------
    >>> point_estimate_budget(alpha=0.08, p=0.7, delta=0.05)
    589
    """
    owner = "point_estimate_budget"
    alpha, p, delta = _check_guarantee(alpha, p, delta, owner=owner)
    return math.ceil(math.log(2.0 / delta) / (2.0 * alpha**2 * p**2))


def random_sampling_reliable_from(n, *, size, alpha, p, delta) -> int:
    """The rank n_{alpha,s} from which a uniform sample of ``size`` is reliable (Eq. 4).

    With s = ``size`` uniform samples of a resource of n items, p'(rs/n) is a (1 + alpha)-
    approximation of p(r) at every rank r >= n_{alpha,s} = n ln(2n/delta) / (2 s alpha^2 p^2)
    at once with probability at least 1 - delta (Eq. 2 at each of the n ranks with delta/n,
    and the union bound). The value is rounded up to a rank.

    Parameters
    ----------
    n : int
        Number of items, >= 1.
    size : int
        Number s of uniform samples, in [1, n].
    alpha : float
        Relative error, > 0.
    p : float
        A lower bound on the precision, in (0, 1].
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    int
        The first reliable rank. A value above ``n`` means that no rank is covered.

    Examples
    --------
    >>> random_sampling_reliable_from(217_077, size=17_392, alpha=0.08, p=0.7, delta=0.05)
    31795
    """
    owner = "random_sampling_reliable_from"
    n = check_int(n, name="n", owner=owner, low=1)
    size = check_int(size, name="size", owner=owner, low=1, high=n)
    alpha, p, delta = _check_guarantee(alpha, p, delta, owner=owner)
    return math.ceil(n * math.log(2.0 * n / delta) / (2.0 * size * alpha**2 * p**2))


def random_sampling_budget(n, *, alpha, p, delta) -> int:
    """Labels random sampling needs for a (1 + alpha)-approximation of all of p (Eq. 5).

    Labeling the prefix 1..n_{alpha,s} plus s uniform samples costs s + n_{alpha,s}, which is
    smallest at s = n_{alpha,s}, for a total of sqrt(2n ln(2n/delta) / (alpha^2 p^2)).

    Rounding: the paper reports 47,030 for n = 217,077, alpha = 0.08, p = 0.7, delta = 0.05,
    where Eq. 5 evaluates to 47,030.54, so the paper truncates; this function does the same
    (``floor``) to reproduce the published figure. Eq. 5 itself already ignores the overlap
    between the prefix and the sample (the paper's footnote 1), so it is approximate to a few
    labels either way. The result is capped at ``n``: labeling every item always suffices.

    Parameters
    ----------
    n : int
        Number of items, >= 1.
    alpha, p, delta : float
        As in :func:`random_sampling_reliable_from`. To match PAULA's guarantee use
        alpha = gamma (1 + eps) - 1.

    Returns
    -------
    int

    Examples
    --------
    >>> random_sampling_budget(217_077, alpha=0.08, p=0.7, delta=0.05)
    47030
    """
    owner = "random_sampling_budget"
    n = check_int(n, name="n", owner=owner, low=1)
    alpha, p, delta = _check_guarantee(alpha, p, delta, owner=owner)
    total = math.sqrt(2.0 * n * math.log(2.0 * n / delta) / (alpha**2 * p**2))
    return min(n, math.floor(total))


# --------------------------------------------------------------------------------------------
# Logarithmic stratified sampling (section 4.4.1, Algorithm 1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StratifiedSetup(GridParameters):
    """Validated parameters shared by :func:`plan_stratified` and :func:`stratified_budget`."""

    beta: float
    delta: float
    p_min: float
    samples_per_point: int
    grid: np.ndarray


def _stratified_setup(n, *, eps, window, r_tilde, delta, p_min, beta, owner: str) -> _StratifiedSetup:
    # Validate here, before plan_paula, so that messages name the function the user called.
    n = check_int(n, name="n", owner=owner, low=1)
    exact_eps(eps, owner=owner)
    window = WINDOW.check(window, owner=owner)
    r_tilde = R_TILDE.check(r_tilde, owner=owner)
    delta = _check_delta(delta, owner=owner)
    p_min = _check_precision(p_min, name="p_min", owner=owner)
    if beta is not None:
        beta = check_float(beta, name="beta", owner=owner, low=1.0, low_open=True)
    base = plan_paula(n, eps=eps, window=window, r_tilde=r_tilde)
    if beta is None:
        if not math.isfinite(base.gamma):
            raise ParameterError(
                f"The 'beta' parameter of {owner} defaults to PAULA's gamma, which is infinite "
                f"here (m={base.m} <= 0 for r_tilde={base.r_tilde}). Pass beta > 1 explicitly "
                "or raise r_tilde."
            )
        beta = base.gamma
    strata = base.L - base.l if n > base.g_l else 0
    if strata > 0:
        s = math.ceil(math.log(strata / (delta / 2.0)) / (2.0 * (beta - 1.0) ** 2 * p_min**2))
    else:
        s = 0  # no grid point beyond g_l: the labeled prefix is all Algorithm 1 uses
    return _StratifiedSetup(
        n=n,
        eps=base.eps,
        window=window,
        r_tilde=base.r_tilde,
        l=base.l,
        L=base.L,
        g_l=base.g_l,
        m=base.m,
        gamma=base.gamma,
        beta=beta,
        delta=delta,
        p_min=p_min,
        samples_per_point=s,
        grid=base.grid,
    )


def _expected_distinct(setup: _StratifiedSetup) -> float:
    """Exact expected number of distinct ranks a stratified plan labels.

    Stratum (g_k, g_{k+1}] of width w receives M ~ Bin(s, 1 - g_k/g_{k+1}) uniform draws, all at
    step k -> k+1, so a given rank of it stays unlabeled with probability
    E[(1 - 1/w)^M] = (1 - (1 - g_k/g_{k+1}) / w)^s.
    """
    prefix = min(setup.g_l, setup.n)
    if setup.samples_per_point == 0:
        return float(prefix)
    lo = setup.grid[:-1].astype(np.float64)
    hi = setup.grid[1:].astype(np.float64)
    width = hi - lo
    # Coinciding grid points (only when r_tilde is below its minimum) make empty strata.
    per_rank = np.divide(1.0 - lo / hi, width, out=np.zeros_like(width), where=width > 0)
    missed = np.exp(setup.samples_per_point * np.log1p(-per_rank))
    return float(prefix + np.sum(width * (1.0 - missed)))


@dataclass(frozen=True, eq=False)
class StratifiedPlan(GridParameters):
    """A logarithmic stratified sample (Algorithm 1), built by :func:`plan_stratified`.

    Draws are made with replacement: X_k is a multiset of s draws that are independent and
    uniform on 1..g_k. Each draw belongs to an interval of samples X_first..X_last (once dropped,
    a draw never returns), so membership is stored as two indices per draw.

    Attributes
    ----------
    n, eps, window, r_tilde, l, L, g_l, m, gamma : as in :func:`prdist.plan.plan_paula`.
    beta : float
        Per-grid-point approximation factor of q(g_k).
    factor : float
        beta (1 + eps), the guarantee of Theorem 2.
    delta, p_min : float
        Failure probability and assumed minimum precision the sample was sized for.
    samples_per_point : int
        s = ceil(ln((L - l) / (delta/2)) / (2 (beta - 1)^2 p_min^2)); 0 when n < g_{l+1}.
    seed : int or numpy.random.SeedSequence
        The seed the draws were made with.
    grid : ndarray of int64, read-only
        g_l..g_L (empty when n <= g_l).
    ranks : ndarray of int64, read-only
        Sorted distinct ranks to label: 1..min(g_l, n) and every drawn rank.
    draw_ranks : ndarray of int64, read-only
        Rank of each draw (a rank may be drawn several times), ordered by (draw_first, rank).
    draw_first, draw_last : ndarray of int32, read-only
        The draw belongs to X_k exactly for draw_first <= k <= draw_last.
    expected_size : float
        Exact expected number of distinct ranks to label, over the randomness of the seed.
    """

    beta: float
    factor: float
    delta: float
    p_min: float
    samples_per_point: int
    seed: object
    grid: np.ndarray
    ranks: np.ndarray
    draw_ranks: np.ndarray
    draw_first: np.ndarray
    draw_last: np.ndarray
    expected_size: float

    @property
    def size(self) -> int:
        """Number of distinct ranks to label."""
        return int(self.ranks.size)

    def members(self, k: int) -> np.ndarray:
        """Ranks of the draws in X_k (sorted, with repetitions), for k in [l, L]."""
        k = check_int(k, name="k", owner="StratifiedPlan.members", low=self.l, high=self.L)
        inside = (self.draw_first <= k) & (k <= self.draw_last)
        return np.sort(self.draw_ranks[inside])

    def roles(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (role, grid_index) aligned with :attr:`ranks`.

        ``role`` is "prefix" for ranks <= g_l and "stratum" otherwise; ``grid_index`` is the k
        of the stratum (g_{k-1}, g_k] that holds a stratum rank, and -1 for prefix ranks.
        """
        role = np.where(self.ranks <= self.g_l, PREFIX, STRATUM)
        grid_index = np.full(self.ranks.size, -1, dtype=np.int32)
        in_stratum = role == STRATUM
        pos = np.searchsorted(self.grid, self.ranks[in_stratum], side="left")
        grid_index[in_stratum] = (self.l + pos).astype(np.int32)
        return role, grid_index


def plan_stratified(
    n, *, eps=0.03, window=100, r_tilde=None, delta=0.05, p_min=0.5, beta=None, seed
) -> StratifiedPlan:
    """Plan the labels of logarithmic stratified sampling (the paper's Algorithm 1).

    The grid is PAULA's (:func:`prdist.plan.plan_paula`): l = ceil(log_{1+eps} r_tilde) and
    L = floor(log_{1+eps} n), with every g_k exact. (Algorithm 1 prints L = ceil(log n); the
    floor keeps g_L <= n, as in Section 4.2.) Then, with
    s = ceil(ln((L - l) / (delta/2)) / (2 (beta - 1)^2 p_min^2)):

    1. X_l = s draws uniform on 1..g_l (inside the labeled prefix);
    2. for k = l..L-1: keep each draw of X_k with probability g_k / g_{k+1} and replace the
       others by draws uniform on (g_k, g_{k+1}], giving X_{k+1}.

    Draws are with replacement: s usually exceeds the width of the first strata, and with
    replacement every X_k is exactly s independent uniform draws from 1..g_k, which is what
    Lemma 1's Hoeffding argument needs.

    Parameters
    ----------
    n : int
        Number of items, >= 1.
    eps : float, default=0.03
        Grid spacing, in (0, 1].
    window : int, default=100
        Used only for the default r_tilde = ceil((window + 2) / eps), as in PAULA.
    r_tilde : int, optional
        Rank beyond which p is assumed m-monotone (assumption A.1).
    delta : float, default=0.05
        Probability that some grid estimate misses its beta-approximation, in (0, 1).
    p_min : float, default=0.5
        Assumed minimum of p over the grid points, in (0, 1].
    beta : float, optional
        Per-grid-point approximation factor, > 1. Default: PAULA's gamma for the same
        parameters, so that the final factor beta (1 + eps) equals PAULA's gamma (1 + eps)
        and the two plans guarantee the same approximation.
    seed : int or numpy.random.SeedSequence
        Seed of the draws (required: a plan must be reproducible).

    Returns
    -------
    StratifiedPlan

    Raises
    ------
    ParameterError
        For a parameter outside its domain, for beta=None when PAULA's gamma is infinite
        (m <= 0), and when the plan would need more than 1e8 draws.

    Examples
    --------
    >>> plan = plan_stratified(20_000, eps=0.1, r_tilde=200, beta=1.3, seed=0)
    >>> plan.l, plan.L, plan.g_l, plan.samples_per_point
    (56, 103, 208, 168)
    >>> all(plan.members(k).size == 168 for k in range(plan.l, plan.L + 1))
    True
    """
    owner = "plan_stratified"
    setup = _stratified_setup(
        n, eps=eps, window=window, r_tilde=r_tilde, delta=delta, p_min=p_min, beta=beta, owner=owner
    )
    rng = _rng(seed, owner=owner)
    s, l, L, grid = setup.samples_per_point, setup.l, setup.L, setup.grid
    if s > 0:
        expected_draws = s * (1.0 + float(np.sum(1.0 - grid[:-1] / grid[1:])))
        if expected_draws > _MAX_DRAWS:
            raise ParameterError(
                f"plan_stratified would make about {expected_draws:.3g} draws (s = {s} per grid "
                f"point), more than the {_MAX_DRAWS:.0e} it allows. Raise beta, p_min or delta."
            )
    prefix = np.arange(1, min(setup.g_l, setup.n) + 1, dtype=np.int64)

    if s == 0:
        draw_ranks = np.empty(0, dtype=np.int64)
        draw_first = np.empty(0, dtype=np.int32)
        draw_last = np.empty(0, dtype=np.int32)
        ranks = prefix
    else:
        # slot_draw[j] is the draw currently in slot j of the sample; a slot keeps its draw with
        # probability g_k/g_{k+1} at each step and otherwise gets a fresh one.
        new_ranks = [rng.integers(1, setup.g_l + 1, size=s, dtype=np.int64)]
        new_first = [np.full(s, l, dtype=np.int32)]
        slot_draw = np.arange(s, dtype=np.int64)
        dropped_draws, dropped_at = [], []
        n_draws = s
        for k in range(l, L):
            low, high = int(grid[k - l]), int(grid[k - l + 1])
            replaced = rng.random(s) >= low / high
            count = int(replaced.sum())
            dropped_draws.append(slot_draw[replaced])
            dropped_at.append(np.full(count, k, dtype=np.int32))
            slot_draw[replaced] = np.arange(n_draws, n_draws + count)
            n_draws += count
            new_ranks.append(rng.integers(low + 1, high + 1, size=count, dtype=np.int64))
            new_first.append(np.full(count, k + 1, dtype=np.int32))
        draw_ranks = np.concatenate(new_ranks)
        draw_first = np.concatenate(new_first)
        draw_last = np.full(n_draws, L, dtype=np.int32)
        draw_last[np.concatenate(dropped_draws)] = np.concatenate(dropped_at)
        order = np.lexsort((draw_ranks, draw_first))
        draw_ranks, draw_first, draw_last = draw_ranks[order], draw_first[order], draw_last[order]
        ranks = np.union1d(prefix, draw_ranks)

    return StratifiedPlan(
        n=setup.n,
        eps=setup.eps,
        window=setup.window,
        r_tilde=setup.r_tilde,
        l=l,
        L=L,
        g_l=setup.g_l,
        m=setup.m,
        gamma=setup.gamma,
        beta=setup.beta,
        factor=setup.beta * (1.0 + setup.eps),
        delta=setup.delta,
        p_min=setup.p_min,
        samples_per_point=s,
        seed=seed,
        grid=grid,
        ranks=_frozen(ranks),
        draw_ranks=_frozen(draw_ranks),
        draw_first=_frozen(draw_first),
        draw_last=_frozen(draw_last),
        expected_size=_expected_distinct(setup),
    )


@dataclass(frozen=True, eq=False)
class StratifiedEstimate:
    """Algorithm 1's estimate q and its confidence bounds, built by :func:`estimate_stratified`.

    Grid arrays have one entry per grid point g_l..g_L. At g_l the value is exact (the prefix is
    fully labeled); at g_k, k > l, it comes from the s draws of X_k. With probability at least
    1 - delta, p(g_k) lies in [grid_lower, grid_upper] at every grid point at once (Hoeffding
    at each of the L - l sampled points with delta / (L - l), and the union bound).

    Methods take a rank or a 1-D array of ranks in [1, n] and return 1-D float64 arrays.

    Attributes
    ----------
    n, eps, l, L, g_l : as in the plan.
    grid : ndarray of int64
        g_l..g_L.
    q : ndarray of float64
        q(g_k) = S_k / s: the mean of the known labels of X_k (of 1..g_l at k = l). NaN only
        where every label involved is unknown.
    grid_lower, grid_upper : ndarray of float64
        Simultaneous (1 - delta) bounds on p(g_k); unknown labels count as 0 for the lower and
        as 1 for the upper bound.
    n_unknown : ndarray of int64
        Unknown labels among the draws of X_k (among 1..g_l at k = l).
    halfwidth : float
        sqrt(ln(2 (L - l) / delta) / (2 s)), the Hoeffding half-width at sampled grid points
        (0 when nothing is sampled).
    delta : float
        The simultaneous failure probability of the grid bounds.
    ranks : ndarray of int64
        The plan's labeled ranks.
    known_ones, maybe_ones : ndarray of int64, shape (len(ranks) + 1,)
        Cumulative counts, over ``ranks``, of labels known to be 1 and of labels not known to
        be 0.
    """

    n: int
    eps: float
    l: int
    L: int
    g_l: int
    grid: np.ndarray
    q: np.ndarray
    grid_lower: np.ndarray
    grid_upper: np.ndarray
    n_unknown: np.ndarray
    halfwidth: float
    delta: float
    ranks: np.ndarray
    known_ones: np.ndarray
    maybe_ones: np.ndarray

    def _counts(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels known to be 1 among ranks <= r, and ranks <= r not known to be 0."""
        idx = np.searchsorted(self.ranks, r, side="right")
        known_zeros = idx - self.maybe_ones[idx]
        return self.known_ones[idx], r - known_zeros

    def _locate(self, r, owner):
        """Checked ranks, whether each lies in the labeled prefix, and its grid position j - l."""
        r = _check_ranks(r, n=self.n, owner=owner, name="r")
        in_prefix = r <= self.g_l
        j = np.searchsorted(self.grid, r, side="right") - 1  # floor(log_{1+eps} r) - l
        return r, in_prefix, j

    def step(self, r) -> np.ndarray:
        """Definition 5's step function of q: p(r) for r <= g_l, q(g_j) for j = floor(log r).

        Under assumption A.1, when q is a beta-approximation of p at the grid points it is a
        beta (1 + eps)-approximation of p at every rank (Corollary 1). Below g_l the value is the
        mean of the known labels of 1..r (NaN if none is known).
        """
        r, in_prefix, j = self._locate(r, "StratifiedEstimate.step")
        out = np.empty(r.size, dtype=np.float64)
        ones, maybe = self._counts(r[in_prefix])
        known = r[in_prefix] - (maybe - ones)
        out[in_prefix] = np.where(known > 0, ones / np.maximum(known, 1), np.nan)
        out[~in_prefix] = self.q[j[~in_prefix]]
        return out

    def step_lower(self, r) -> np.ndarray:
        """Definition 5's step function of ``grid_lower`` (exact conservative p below g_l).

        Whenever the grid bounds hold, step_lower(r) / (1 + eps) <= p(r) at every rank; under A.1
        also p(r) <= (1 + eps) step_upper(r). :meth:`lower` and :meth:`upper` are tighter and
        need no assumption.
        """
        return self._step_bound(r, lower=True, owner="StratifiedEstimate.step_lower")

    def step_upper(self, r) -> np.ndarray:
        """Definition 5's step function of ``grid_upper`` (exact conservative p below g_l)."""
        return self._step_bound(r, lower=False, owner="StratifiedEstimate.step_upper")

    def _step_bound(self, r, *, lower, owner):
        r, in_prefix, j = self._locate(r, owner)
        out = np.empty(r.size, dtype=np.float64)
        ones, maybe = self._counts(r[in_prefix])
        out[in_prefix] = (ones if lower else maybe) / r[in_prefix]
        out[~in_prefix] = (self.grid_lower if lower else self.grid_upper)[j[~in_prefix]]
        return out

    def yield_lower(self, r) -> np.ndarray:
        """A lower bound on the yield y(r) at every rank, valid whenever the grid bounds hold.

        No monotonicity is needed: for every grid point g_i <= r, y(r) >= y(g_i) + (labels known
        to be 1 in (g_i, r]), and for every g_i > r, y(r) >= y(g_i) - (ranks in (r, g_i] not
        known to be 0); the bound is the best of these with y(g_i) >= grid_lower_i g_i.
        """
        return self._yield_bounds(r, "StratifiedEstimate.yield_lower")[1]

    def yield_upper(self, r) -> np.ndarray:
        """An upper bound on the yield y(r) at every rank, valid whenever the grid bounds hold.

        The mirror image of :meth:`yield_lower`: y(r) <= y(g_i) + (ranks in (g_i, r] not known
        to be 0) for g_i <= r, and y(r) <= y(g_i) - (labels known to be 1 in (r, g_i]) for
        g_i > r.
        """
        return self._yield_bounds(r, "StratifiedEstimate.yield_upper")[2]

    def lower(self, r) -> np.ndarray:
        """A lower bound on p(r) at every rank, valid whenever the grid bounds hold."""
        r, lo, _ = self._yield_bounds(r, "StratifiedEstimate.lower")
        return lo / r

    def upper(self, r) -> np.ndarray:
        """An upper bound on p(r) at every rank, valid whenever the grid bounds hold."""
        r, _, hi = self._yield_bounds(r, "StratifiedEstimate.upper")
        return hi / r

    def _yield_bounds(self, r, owner):
        r, _, j = self._locate(r, owner)
        ones, maybe = self._counts(r)
        lo, hi = ones.astype(np.float64), maybe.astype(np.float64)
        if self.grid.size:
            g_ones, g_maybe = self._counts(self.grid)
            y_lo, y_hi = self.grid_lower * self.grid, self.grid_upper * self.grid
            beyond = j >= 0  # r >= g_l: some grid point lies at or below r
            jb = j[beyond]
            # From grid points at or below r: best over i <= j, by running max / min.
            lo[beyond] = np.maximum(lo[beyond], np.maximum.accumulate(y_lo - g_ones)[jb] + ones[beyond])
            hi[beyond] = np.minimum(hi[beyond], np.minimum.accumulate(y_hi - g_maybe)[jb] + maybe[beyond])
            # From grid points above r: best over i > j, by running max / min from the right.
            ahead = j + 1 < self.grid.size
            ja = j[ahead] + 1
            after_lo = np.maximum.accumulate((y_lo - g_maybe)[::-1])[::-1]
            after_hi = np.minimum.accumulate((y_hi - g_ones)[::-1])[::-1]
            lo[ahead] = np.maximum(lo[ahead], after_lo[ja] + maybe[ahead])
            hi[ahead] = np.minimum(hi[ahead], after_hi[ja] + ones[ahead])
        lo = np.clip(lo, 0.0, r)
        return r, lo, np.clip(hi, lo, r)

    def table(self):
        """The bounds at ranks 1..g_l, every grid rank and n, as a pandas DataFrame.

        Columns: rank, precision_lower, precision_upper, yield_lower, yield_upper (the rows of
        ``bounds.parquet``).
        """
        import pandas as pd

        ranks = np.unique(np.concatenate((np.arange(1, min(self.g_l, self.n) + 1), self.grid, [self.n])))
        ranks, lo, hi = self._yield_bounds(ranks, "StratifiedEstimate.table")
        return pd.DataFrame(
            {
                "rank": ranks,
                "precision_lower": lo / ranks,
                "precision_upper": hi / ranks,
                "yield_lower": lo,
                "yield_upper": hi,
            }
        )


def estimate_stratified(plan, labels, *, delta=None) -> StratifiedEstimate:
    """Compute Algorithm 1's q(g_k) = S_k / s and simultaneous bounds from a stratified plan.

    Parameters
    ----------
    plan : StratifiedPlan
        The plan the labels belong to.
    labels : array-like of shape (plan.size,)
        Labels aligned with ``plan.ranks``: 1, 0 or NaN (unknown). Unknown labels count as 0 for
        lower bounds and as 1 for upper bounds; q uses the known labels only.
    delta : float, optional
        Simultaneous failure probability of the grid bounds, in (0, 1). Default: the plan's.

    Returns
    -------
    StratifiedEstimate

    Examples
    --------
    >>> plan = plan_stratified(20_000, eps=0.1, r_tilde=200, beta=1.3, seed=0)
    >>> est = estimate_stratified(plan, (plan.ranks % 4 != 0).astype(float))
    >>> float(est.q[0]), round(est.halfwidth, 4)
    (0.75, 0.1498)
    >>> bool(np.all(est.lower(est.grid) <= est.upper(est.grid)))
    True
    """
    owner = "estimate_stratified"
    labels = _check_plan_labels(plan, labels, StratifiedPlan, maker="plan_stratified", owner=owner)
    delta = plan.delta if delta is None else _check_delta(delta, owner=owner)
    known_ones = np.concatenate(([0], np.cumsum(labels == 1.0))).astype(np.int64)
    maybe_ones = np.concatenate(([0], np.cumsum(labels != 0.0))).astype(np.int64)  # NaN != 0

    n_points = plan.grid.size
    s = plan.samples_per_point
    positive = np.zeros(n_points, dtype=np.int64)
    unknown = np.zeros(n_points, dtype=np.int64)
    if s > 0:
        draw_labels = labels[np.searchsorted(plan.ranks, plan.draw_ranks)]
        # A draw adds to S_k for draw_first <= k <= draw_last: difference arrays over k.
        start, stop = plan.draw_first - plan.l, plan.draw_last - plan.l + 1
        for total, counted in ((positive, draw_labels == 1.0), (unknown, np.isnan(draw_labels))):
            steps = np.bincount(start[counted], minlength=n_points + 1)
            steps -= np.bincount(stop[counted], minlength=n_points + 1)
            total[:] = np.cumsum(steps[:-1])

    q = np.empty(n_points, dtype=np.float64)
    lower = np.empty(n_points, dtype=np.float64)
    upper = np.empty(n_points, dtype=np.float64)
    halfwidth = 0.0
    if n_points:
        # g_l: exact, from the fully labeled prefix (plan.ranks starts with 1..g_l).
        g_l = plan.g_l
        positive[0] = known_ones[g_l]
        unknown[0] = maybe_ones[g_l] - known_ones[g_l]
        known = g_l - unknown[0]
        q[0] = positive[0] / known if known > 0 else np.nan
        lower[0] = positive[0] / g_l
        upper[0] = (positive[0] + unknown[0]) / g_l
    if n_points > 1:
        halfwidth = math.sqrt(math.log(2.0 * (plan.L - plan.l) / delta) / (2.0 * s))
        known = s - unknown[1:]
        q[1:] = np.where(known > 0, positive[1:] / np.maximum(known, 1), np.nan)
        lower[1:] = np.maximum(0.0, positive[1:] / s - halfwidth)
        upper[1:] = np.minimum(1.0, (positive[1:] + unknown[1:]) / s + halfwidth)

    return StratifiedEstimate(
        n=plan.n,
        eps=plan.eps,
        l=plan.l,
        L=plan.L,
        g_l=plan.g_l,
        grid=plan.grid,
        q=_frozen(q),
        grid_lower=_frozen(lower),
        grid_upper=_frozen(upper),
        n_unknown=_frozen(unknown),
        halfwidth=halfwidth,
        delta=delta,
        ranks=plan.ranks,
        known_ones=_frozen(known_ones),
        maybe_ones=_frozen(maybe_ones),
    )


@dataclass(frozen=True)
class StratifiedBudget:
    """The label budget of logarithmic stratified sampling, from :func:`stratified_budget`.

    Attributes
    ----------
    annotations : int
        Theorem 2's count, g_l + eps (L - l) ln((L - l)/(delta/2)) / (2 (beta-1)^2 (1+eps)
        p_min^2), rounded up and capped at n.
    prefix : int
        min(g_l, n), the fully labeled prefix.
    draws_per_grid_point : float
        The factor multiplying L - l in Theorem 2 (the paper's Section 4.4.4 compares it with
        PAULA's window).
    samples_per_point : int
        s, the size of every X_k (rounded up, as Algorithm 1 does).
    expected_distinct : float
        Exact expected number of distinct ranks :func:`plan_stratified` labels with these
        parameters (draws with replacement repeat ranks in narrow strata, so this is usually
        below ``annotations``: 26,752 against 31,750 at the paper's N = 217,077).
    beta, factor : float
        beta and the guaranteed approximation factor beta (1 + eps).
    """

    annotations: int
    prefix: int
    draws_per_grid_point: float
    samples_per_point: int
    expected_distinct: float
    beta: float
    factor: float


def stratified_budget(
    n, *, eps=0.03, window=100, r_tilde=None, delta=0.05, p_min=0.5, beta=None
) -> StratifiedBudget:
    """Labels logarithmic stratified sampling needs for a beta (1 + eps) guarantee (Theorem 2).

    Parameters
    ----------
    n, eps, window, r_tilde, delta, p_min, beta
        As in :func:`plan_stratified` (beta defaults to PAULA's gamma).

    Returns
    -------
    StratifiedBudget

    Examples
    --------
    >>> budget = stratified_budget(217_077, eps=0.03, window=100)
    >>> budget.annotations, budget.samples_per_point
    (31750, 6980)
    """
    owner = "stratified_budget"
    setup = _stratified_setup(
        n, eps=eps, window=window, r_tilde=r_tilde, delta=delta, p_min=p_min, beta=beta, owner=owner
    )
    prefix = min(setup.g_l, setup.n)
    strata = setup.L - setup.l if setup.n > setup.g_l else 0
    if strata > 0:
        per_point = (
            setup.eps
            * math.log(strata / (setup.delta / 2.0))
            / (2.0 * (setup.beta - 1.0) ** 2 * (1.0 + setup.eps) * setup.p_min**2)
        )
    else:
        per_point = 0.0
    return StratifiedBudget(
        annotations=min(setup.n, prefix + math.ceil(strata * per_point)),
        prefix=prefix,
        draws_per_grid_point=per_point,
        samples_per_point=setup.samples_per_point,
        expected_distinct=_expected_distinct(setup),
        beta=setup.beta,
        factor=setup.beta * (1.0 + setup.eps),
    )
