"""Logarithmic stratified sampling (PAULA paper, section 4.4.1, Algorithm 1): plan, estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prdist._validation import check_float, check_int
from prdist.errors import ParameterError
from prdist.params import R_TILDE, WINDOW
from prdist.paula.grid import GridParameters, exact_eps
from prdist.paula.plan import plan_paula
from prdist.sampling.checks import (
    _check_delta,
    _check_plan_labels,
    _check_precision,
    _check_ranks,
    _frozen,
    _rng,
)

PREFIX = "prefix"
STRATUM = "stratum"
# A stratified plan keeps 16 bytes per draw; beyond this a typo in beta (say 1.0001) would
# exhaust memory instead of failing with a message.
_MAX_DRAWS = 10**8


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
    n, eps, window, r_tilde, l, L, g_l, m, gamma : as in :func:`prdist.paula.plan.plan_paula`.
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

    The grid is PAULA's (:func:`prdist.paula.plan.plan_paula`): l = ceil(log_{1+eps} r_tilde) and
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
