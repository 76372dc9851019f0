"""PAULA bounds that hold on noisy labels, with a confidence level (issue 9).

The paper's assumption A.2 is a statement about one fixed label sequence. Real labels are noisy:
even when the rate of positives falls smoothly with rank, a window of Δ = 100 labels scatters by
about 0.05 around its rate, A.2 fails at small scales, and the deterministic bounds miss the truth
at many ranks. This module states a model for the noise and widens Algorithm 2's grid-point yield
bounds just enough to hold, under that model, with a chosen probability at every rank at once.

Model (M)
---------
The labels v_1..v_n are independent Bernoulli(ρ_i) draws, and the rate ρ_i is non-increasing in
the rank i from the first rank of the window at g_ℓ on (i > g_ℓ - Δ; the same ranks A.2 speaks
about). The plan's windows must lie inside their grid intervals, g_{k+1} - g_k >= Δ, which holds
whenever ``plan.precondition_met``. Nothing is assumed about the ranks before g_ℓ - Δ.

Claim. Under (M), ``paula_bounds(plan, labels, confidence=c)`` gives ``lower(r) <= p(r) <=
upper(r)`` (and the same for the yield) at EVERY rank r = 1..n simultaneously with probability at
least c. Unknown labels (NaN) count as 0 in everything that builds a lower bound and as 1 in
everything that builds an upper bound (Y±, the rate intervals, the tail rate), so the claim holds
whatever their true values.

Proof. Write y(r) for the yield, I_k = (g_k, g_{k+1}] (length s_k), W_k = (g_k - Δ, g_k] and
ρ̄(S) for the mean rate over a set of ranks S; α = 1 - c.

1. Lemma 3 in expectation. W_{k+1} is the end of I_k and W_k lies before I_k, so a non-increasing
   rate gives ρ̄(W_{k+1}) <= ρ̄(I_k) <= ρ̄(W_k). Substituting v_i = ρ_i + (v_i - ρ_i) in
   y(g_K) - Y-_K = Σ_{k<K} [Σ_{I_k} v_i - s_k p_Δ(g_{k+1})] and using that inequality,

       y(g_K) >= Y-_K - X-_K,   X-_K = Σ_i a-_{K,i} (v_i - ρ_i),
       y(g_K) <= Y+_K + X+_K,   X+_K = Σ_i a+_{K,i} (v_i - ρ_i),

   with coefficients fixed by the plan: a-_{K,i} = s_k/Δ - 1 on W_{k+1} (k < K), -1 on the
   other ranks of (g_ℓ, g_K]; a+_{K,i} = 1 on (g_ℓ, g_K] minus s_k/Δ on W_k (k < K). The noise
   of the windows enters through weighted SUMS, which average it away.
2. Chernoff for each X_K. log E exp(x (v - ρ)) = ψ(x; ρ) = log(1 - ρ + ρ e^x) - x ρ is concave
   in ρ, so on a stretch of ranks with a common coefficient a the stretch contributes at most
   |S| ψ(λ a; ρ̄(S)) to log E exp(λ X_K), and at most |S| max_{ρ in [lo, hi]} ψ(λ a; ρ) when
   ρ̄(S) lies in [lo, hi]. With Λ_K(λ) the sum of these maxima and c_2 = log(E_2/α_2),
   t_K = min_λ (Λ_K(λ) + c_2)/λ gives P(X_K > t_K) <= α_2/E_2 (any λ > 0 is valid, so an
   inexact minimiser only loosens the bound).
3. The intervals [lo, hi] (stage 1). By monotonicity, the pooled mean rate of the h windows
   ending at W_k is >= ρ̄ of every stretch after W_k (and of W_k), and the pooled mean of the h
   windows starting at W_k is <= ρ̄ of every stretch before them (and of W_k). Chernoff's KL
   bound holds for any independent Bernoulli rates with a given mean (the same concavity), so a
   KL confidence bound on each of the 2G pools, each at level α_1/(2G), makes every interval
   hold with probability >= 1 - α_1 (and, the window rates being non-increasing, so do the
   running minimum of the upper and maximum of the lower bounds). A data-dependent interval is
   harmless: on this event every t_K is at least the one computed from the true rates, which is
   a fixed number with the stated tail probability.
4. The tail past g_L (J = n - g_L ranks, no labels). E[y(g_L + j) - y(g_L)] <= j ρ̄(W_L), so
   y(g_L + j) <= Y+_L + j p_Δ(g_L) + X+_L + (j/Δ)(ρ̄(W_L) Δ - C_L) + B_j with B_j the centred
   tail count. X+_L + (j/Δ)(...) is linear in j: it is <= t+_L + j κ_1 for all j in [0, J] once
   it is at j = 0 (step 2) and at j = J (one more Chernoff event). B_j <= j κ_2 for every
   j in [f, J] by Ville's maximal inequality for the martingale exp(λ B_j - j max ψ(λ; ρ)),
   ρ in [0, ρ̄(W_L)'s upper bound]. As the yield is non-decreasing, y(g_L + j) <=
   Y+_L + t+_L + max(j, f) (p_Δ(g_L) + κ_1 + κ_2) for every j <= J.
5. Union bound: α_1 + α_2 = α over the 2G stage-1 events and the E_2 = 2(G - 1) + 2 stage-2
   events (two sides at G - 1 grid points, two tail events). On the intersection every
   grid-point yield bound and the tail cap hold; :class:`prdist.paula.bounds.PaulaBounds` extends
   grid-point yield bounds to every rank using only that the yield is non-decreasing, grows by
   at most one per rank, and the labels it holds (exact on 1..g_ℓ). QED.

Where the slack is: the noise itself is what it is (Δ labels stand for s_k ≈ ε g_k ranks, so the
margin on the precision is about z sqrt(ε ρ(1-ρ)/(2Δ)), whatever n). The union over grid points
costs little, because deviations at neighbouring grid points are strongly correlated but the
variance grows by (1+ε)² per step, so each grid point is nearly its own test: by simulation
(constant rate, 78 grid points) the probability that some deviation exceeds 3.9 sd is 0.0045,
against a Bonferroni sum of Gaussian tails of 0.0037, i.e. the union bound is nearly exact. Chernoff's exponential bound is
the conservative part: at the levels used its tail bound is ~10x the Gaussian tail, so the
realised rate of misses is well below 1 - c (see benchmarks/bench_confidence_coverage.py).

What holds against the deterministic bounds: at each grid point Y-_K - t-_K <= Y-_K and
Y+_K + t+_K >= Y+_K, and the tail cap is at least A.2's. So the confidence bounds contain the
deterministic ones at every rank, except where the deterministic mode found a contradiction
(Y- > Y+) and fell back to assumption-free bounds, or past g_L when g_L + m > n (the
deterministic mode has no tail cap there, the confidence mode has one).

Evidence against (M): :func:`monotone_rate_test` fits a non-increasing weighted isotonic
regression to the window means and compares it with the unconstrained fit by a binomial
likelihood-ratio statistic, with a seeded parametric-bootstrap p-value under the fitted rates.
A small p-value means neither the deterministic nor the confidence bounds can be trusted. The test
is conservative on decreasing rates and slightly liberal on a constant rate (the least favourable
monotone case: 6-8 % rejections at level 5 % by simulation); it sees rises that span a few windows
(a rate that climbs by ~0.2 over 4-5 windows is flagged about half the time at n = 1e5), not a
single window's worth of noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prdist.frames.arrays import distinct
from prdist._validation import as_label_array, check_confidence, check_int
from prdist.errors import DataError, ParameterError
from prdist.params import SEED
from prdist.paula.plan import PaulaPlan

__all__ = [
    "ConfidenceDiagnostics",
    "ConfidenceMargins",
    "MonotoneRateTest",
    "confidence_margins",
    "monotone_rate_test",
]

# Share of α spent on the rate intervals of stage 1. They only set the variance proxies, so a
# small share suffices: moving it from 0 to 0.1 changes log(1/δ) of stage 2 by about 1 %.
RATE_INTERVAL_SHARE = 0.1
# Labels pooled per rate interval (stage 1): ~1000 labels pin a rate to about ±0.05 at the levels
# used, while the pool spans few enough grid steps that the rate drifts little across it. (Pools
# of 500..16000 labels, alone or several at once, change the mean margin by under 5 %.)
POOL_LABELS = 1000
# The λ grid of the Chernoff bounds: a factor 50 either side of the sub-Gaussian optimum, in
# steps of 5 %.
_BRACKET = math.log(50.0)
_GRID_STEP = math.log(1.05)
_MAX_CENTRE = 1e8  # caps λ's sub-Gaussian centre; see _chernoff_margins


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ConfidenceMargins:
    """How far Algorithm 2's grid-point yields move to hold with probability ``confidence``.

    Attributes
    ----------
    confidence : float
    lower, upper : ndarray of shape (G,)
        Yield margins t-_k, t+_k >= 0 at the grid points g_ℓ..g_L (0 at g_ℓ, which is labeled):
        the confidence bounds are Y-_k - t-_k and Y+_k + t+_k.
    tail_floor : int
        Past g_L the yield is capped by Y+_L + t+_L + max(r - g_L, tail_floor) * tail_rate;
        0 when n = g_L (no tail).
    tail_rate : float
        Slope of that cap (NaN when there is no tail).
    rate_lower, rate_upper : ndarray of shape (G,)
        Stage-1 bounds on the mean rate of the pooled windows starting (lower) and ending (upper)
        at each grid point; they set the variance proxies.
    guarantee_applies : bool
        Whether every window lies inside its grid interval (g_{k+1} - g_k >= Δ), the condition
        of the coverage guarantee besides the model.
    """

    confidence: float
    lower: np.ndarray
    upper: np.ndarray
    tail_floor: int
    tail_rate: float
    rate_lower: np.ndarray
    rate_upper: np.ndarray
    guarantee_applies: bool

    def tail_cap(self, anchor: float, yield_upper_at_last: float) -> tuple[int, float] | None:
        """Return (floor, rate) with y(g_L + j) <= yield_upper_at_last + max(j, floor) * rate.

        ``anchor`` is Y+_L + t+_L, the value the cap was derived from; when the grid-point
        bound was tightened below it (by the labels), the rate grows so that the cap does not.
        """
        if self.tail_floor == 0:
            return None
        shortfall = max(0.0, anchor - yield_upper_at_last)
        return self.tail_floor, min(1.0, self.tail_rate + shortfall / self.tail_floor)


@dataclass(frozen=True, eq=False)
class MonotoneRateTest:
    """Likelihood-ratio test of a non-increasing label rate across the PAULA windows.

    Attributes
    ----------
    statistic : float
        2 Σ_k [C_k log(p̂_k/μ_k) + (n_k - C_k) log((1 - p̂_k)/(1 - μ_k))] over the windows
        at g_ℓ..g_L, where p̂ are the window means and μ their non-increasing isotonic fit.
    p_value : float
        Share of parametric-bootstrap replicates (counts drawn from Binomial(n_k, μ_k)) whose
        statistic reaches the observed one, (1 + hits)/(1 + replicates).
    replicates, seed : int
    windows : int
        Windows with at least one known label (the test uses known labels only).
    fitted_rates : ndarray
        μ, the isotonic fit.
    """

    statistic: float
    p_value: float
    replicates: int
    seed: int
    windows: int
    fitted_rates: np.ndarray

    def to_dict(self) -> dict:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "replicates": self.replicates,
            "seed": self.seed,
            "windows": self.windows,
        }


@dataclass(frozen=True, eq=False)
class ConfidenceDiagnostics:
    """What a confidence-mode run reports about its noise model and its price.

    Attributes
    ----------
    confidence : float
    margins : ConfidenceMargins
    test : MonotoneRateTest
        Evidence against the monotone-rate model (M).
    widening_mean, widening_max : float
        Width of the confidence bounds on the precision minus the width of the deterministic
        bounds, averaged and maximised over the grid ranks g_ℓ..g_L (0 when there is no grid).
    """

    confidence: float
    margins: ConfidenceMargins
    test: MonotoneRateTest
    widening_mean: float
    widening_max: float

    @property
    def model_rejected(self) -> bool:
        """The monotone-rate test rejects at level 1 - confidence."""
        return self.test.p_value < 1.0 - self.confidence

    def to_dict(self) -> dict:
        """JSON-ready summary (for manifests and reports)."""
        m = self.margins
        return {
            "confidence": self.confidence,
            "guarantee_applies": m.guarantee_applies,
            "monotone_rate_test": self.test.to_dict(),
            "model_rejected": self.model_rejected,
            "widening_mean": self.widening_mean,
            "widening_max": self.widening_max,
            "max_yield_margin_lower": float(m.lower.max()) if m.lower.size else 0.0,
            "max_yield_margin_upper": float(m.upper.max()) if m.upper.size else 0.0,
            "tail_floor": m.tail_floor,
            "tail_rate": None if math.isnan(m.tail_rate) else m.tail_rate,
        }


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------
def confidence_margins(plan: PaulaPlan, labels, *, confidence) -> ConfidenceMargins:
    """Yield margins that make Algorithm 2's grid-point bounds hold with probability ``confidence``.

    Under the model of this module (independent Bernoulli labels, rate non-increasing from the
    window at g_ℓ on), with probability at least ``confidence`` simultaneously: y(g_k) >=
    Y-_k - lower[k] and y(g_k) <= Y+_k + upper[k] at every grid point, and the tail cap holds
    (see :meth:`ConfidenceMargins.tail_cap`). :func:`prdist.paula_bounds` with ``confidence=``
    applies them; call this directly only to inspect the margins.

    Parameters
    ----------
    plan : PaulaPlan
        From :func:`prdist.plan_paula`.
    labels : array-like of float, shape (plan.size,)
        Labels aligned with ``plan.ranks``; NaN = unknown (0 for lower, 1 for upper bounds).
    confidence : float in (0, 1)
        Probability that every bound holds at once.

    Returns
    -------
    ConfidenceMargins

    Examples
    --------
    >>> from prdist import plan_paula
    >>> plan = plan_paula(50_000, eps=0.1, window=50)
    >>> rate = np.linspace(0.9, 0.2, plan.n)
    >>> labels = (np.random.default_rng(0).random(plan.n) < rate)[plan.ranks - 1]
    >>> m = confidence_margins(plan, labels, confidence=0.9)
    >>> bool(m.lower[0] == m.upper[0] == 0 and np.all(m.upper[1:] > 0))
    True
    """
    owner = "confidence_margins"
    confidence = check_confidence(confidence, owner=owner)
    v = _plan_labels(plan, labels, owner)
    return _margins(plan, v, confidence)


def monotone_rate_test(plan: PaulaPlan, labels, *, replicates=199, seed=0) -> MonotoneRateTest:
    """Test whether the label rate is non-increasing across the PAULA windows.

    Fits a non-increasing weighted isotonic regression to the window means p̂_k (windows at
    g_ℓ..g_L, weights = known labels per window), measures its binomial deviance from the
    unconstrained fit, and calibrates it by a parametric bootstrap under the fitted rates.

    Parameters
    ----------
    plan : PaulaPlan
    labels : array-like of float, shape (plan.size,)
        Labels aligned with ``plan.ranks``; unknown (NaN) labels are left out.
    replicates : int, default=199
        Bootstrap replicates (each is one isotonic fit of G points: 199 take a few milliseconds).
    seed : int, default=0
        Seed of the bootstrap; the p-value is a deterministic function of labels and seed.

    Returns
    -------
    MonotoneRateTest

    Examples
    --------
    >>> from prdist import plan_paula
    >>> plan = plan_paula(50_000, eps=0.1, window=50)
    >>> falling = np.repeat([1.0, 0.0], [30_000, 20_000])[plan.ranks - 1]
    >>> monotone_rate_test(plan, falling).p_value
    1.0
    >>> rising = 1.0 - falling
    >>> monotone_rate_test(plan, rising).p_value
    0.005
    """
    owner = "monotone_rate_test"
    replicates = check_int(replicates, name="replicates", owner=owner, low=1)
    seed = SEED.check(seed, owner=owner)
    v = _plan_labels(plan, labels, owner)
    counts = _window_counts(plan, v)
    known_ones, known = counts.known_ones, counts.known
    keep = known > 0
    c, n = known_ones[keep], known[keep]
    if c.size < 2:
        return MonotoneRateTest(0.0, 1.0, replicates, seed, int(c.size), c / np.maximum(n, 1))
    # Here, not at the top: scipy.optimize takes a fifth of a second to import, and a run without
    # labels yet (the first run of a release) fits nothing.
    from scipy.optimize import isotonic_regression

    mu = isotonic_regression(c / n, weights=n, increasing=False).x
    observed = _deviance(c, n, mu)
    rng = np.random.default_rng(seed)
    draws = rng.binomial(n.astype(np.int64), np.clip(mu, 0.0, 1.0), size=(replicates, n.size))
    boot = np.array([_deviance(d, n, isotonic_regression(d / n, weights=n, increasing=False).x) for d in draws])
    # A relative tolerance so that replicates tied with the observation count as reaching it.
    hits = int(np.sum(boot >= observed - 1e-9 * max(1.0, observed)))
    return MonotoneRateTest(float(observed), (1 + hits) / (1 + replicates), replicates, seed, int(c.size), mu)


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------
def _plan_labels(plan, labels, owner: str) -> np.ndarray:
    if not isinstance(plan, PaulaPlan):
        raise ParameterError(
            f"The 'plan' parameter of {owner} must be a PaulaPlan from plan_paula. Got {type(plan).__name__} instead."
        )
    v = as_label_array(labels, owner=owner)
    if v.size != plan.size:
        raise DataError(
            f"{owner} needs one label per planned rank: the plan has {plan.size} ranks but "
            f"{v.size} labels were given. Align the labels with plan.ranks (NaN for unknown)."
        )
    return v


@dataclass(frozen=True)
class _WindowCounts:
    width: np.ndarray  # w_k = min(Δ, g_k)
    known_ones: np.ndarray  # labels known to be 1 in W_k
    maybe_ones: np.ndarray  # labels not known to be 0 in W_k
    known: np.ndarray  # labels known in W_k


def _window_counts(plan: PaulaPlan, v: np.ndarray) -> _WindowCounts:
    grid = plan.grid
    unknown = np.isnan(v)
    cum = lambda x: np.concatenate(([0.0], np.cumsum(x)))  # noqa: E731
    ones, maybe, known = cum(np.where(unknown, 0.0, v)), cum(np.where(unknown, 1.0, v)), cum(~unknown)
    width = np.minimum(plan.window, grid)
    top = np.searchsorted(plan.ranks, grid, side="right")
    bottom = np.searchsorted(plan.ranks, grid - width, side="right")
    return _WindowCounts(
        width.astype(np.float64), ones[top] - ones[bottom], maybe[top] - maybe[bottom], known[top] - known[bottom]
    )


def _margins(plan: PaulaPlan, v: np.ndarray, confidence: float) -> ConfidenceMargins:
    grid = plan.grid.astype(np.int64)
    G = grid.size
    if G == 0:
        empty = np.zeros(0)
        return ConfidenceMargins(confidence, empty, empty, 0, math.nan, empty, empty, True)
    alpha = 1.0 - confidence
    counts = _window_counts(plan, v)
    width = counts.width
    steps = np.diff(grid).astype(np.float64)
    tail = int(plan.n - grid[-1])

    # Stage 1: simultaneous KL bounds on the pooled window rates.
    alpha_rates = RATE_INTERVAL_SHARE * alpha
    c1 = math.log(2 * G / alpha_rates)
    h = max(1, math.ceil(POOL_LABELS / plan.window))
    cw = lambda x: np.concatenate(([0.0], np.cumsum(x)))  # noqa: E731
    c_ones, c_maybe, c_size = cw(counts.known_ones), cw(counts.maybe_ones), cw(width)
    k = np.arange(G)
    first, last = np.maximum(k - h + 1, 0), np.minimum(k + h, G)
    size_end, size_start = c_size[k + 1] - c_size[first], c_size[last] - c_size[k]
    # Every window's rate is at most that of any earlier window, so the bound ending at W_k also
    # holds for every later window: keep the tightest (running minimum / maximum).
    rate_upper = np.minimum.accumulate(_kl_upper((c_maybe[k + 1] - c_maybe[first]) / size_end, size_end, c1))
    rate_lower = np.maximum.accumulate(_kl_lower((c_ones[last] - c_ones[k]) / size_start, size_start, c1)[::-1])[::-1]

    seg = _stretches(plan)
    # Rate interval of a stretch: above it, the pool ending at the last window that precedes it
    # (or the window it is); below it, the pool starting at the first window after it.
    seg_upper = np.where(seg.before >= 0, rate_upper[np.clip(seg.before, 0, G - 1)], 1.0)
    seg_lower = np.where(seg.after < G, rate_lower[np.clip(seg.after, 0, G - 1)], 0.0)

    # Stage 2: Chernoff margins at every grid point, both sides, plus two tail events.
    events = 2 * (G - 1) + (2 if tail > 0 else 0)
    c2 = math.log(events / (alpha - alpha_rates)) if events else 0.0
    lower, upper = np.zeros(G), np.zeros(G)
    coef_upper_last = np.zeros(seg.sizes.size)
    if G > 1:
        coef_lower, coef_upper = _coefficients(plan, seg)
        lower[1:] = _chernoff_margins(coef_lower, seg.sizes, seg_lower, seg_upper, c2)
        upper[1:] = _chernoff_margins(coef_upper, seg.sizes, seg_lower, seg_upper, c2)
        coef_upper_last = coef_upper[:, -1]

    tail_floor, tail_rate = 0, math.nan
    if tail > 0:
        # (a) the linear part at j = J; (b) the tail's own count, uniformly over j >= floor.
        coef_tail = coef_upper_last - (tail / width[-1]) * seg.in_window[:, -1]
        t_linear = _chernoff_margins(coef_tail[:, None], seg.sizes, seg_lower, seg_upper, c2)[0]
        tail_floor = _tail_floor(plan, tail)
        t_count = _chernoff_margins(np.ones((1, 1)), np.array([float(tail_floor)]), np.zeros(1), rate_upper[-1:], c2)[0]
        kappa = max(0.0, t_linear - upper[-1]) / tail + t_count / tail_floor
        tail_rate = float(min(1.0, counts.maybe_ones[-1] / width[-1] + kappa))

    guarantee = bool(np.all(steps >= plan.window))
    for a in (lower, upper, rate_lower, rate_upper):
        a.setflags(write=False)
    return ConfidenceMargins(confidence, lower, upper, tail_floor, tail_rate, rate_lower, rate_upper, guarantee)


@dataclass(frozen=True)
class _Stretches:
    """The ranks (lo, hi] cut at every window start, grid point and n: every coefficient of the
    proof is constant on each stretch."""

    lo: np.ndarray
    hi: np.ndarray
    sizes: np.ndarray
    in_window: np.ndarray  # (S, G): stretch inside W_k
    before: np.ndarray  # last window preceding the stretch (or the window it is); -1 if none
    after: np.ndarray  # first window following the stretch (or the window it is); G if none


def _stretches(plan: PaulaPlan) -> _Stretches:
    grid = plan.grid.astype(np.int64)
    starts = grid - np.minimum(plan.window, grid)
    edges = distinct(np.concatenate((starts, grid, [plan.n])))
    lo, hi = edges[:-1], edges[1:]
    in_window = (starts[None, :] <= lo[:, None]) & (hi[:, None] <= grid[None, :])
    exact = (starts[None, :] == lo[:, None]) & (hi[:, None] == grid[None, :])
    has_exact, own = exact.any(axis=1), np.argmax(exact, axis=1)
    before = np.where(has_exact, own, np.searchsorted(grid, lo, side="right") - 1)
    after = np.where(has_exact, own, np.searchsorted(starts, hi, side="left"))
    return _Stretches(lo, hi, (hi - lo).astype(np.float64), in_window, before, after)


def _coefficients(plan: PaulaPlan, seg: _Stretches) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of X-_K and X+_K (columns K = ℓ+1..L) on every stretch (rows).

    X-_K = Σ_{k<K} (s_k/w_{k+1}) E(W_{k+1}) - Σ_{(g_ℓ, g_K]} (v - ρ),
    X+_K = Σ_{(g_ℓ, g_K]} (v - ρ) - Σ_{k<K} (s_k/w_k) E(W_k), with E(S) = Σ_S (v - ρ).
    """
    grid = plan.grid.astype(np.int64)
    width = np.minimum(plan.window, grid).astype(np.float64)
    steps = np.diff(grid).astype(np.float64)
    in_interval = (seg.lo[:, None] >= grid[0]) & (seg.hi[:, None] <= grid[None, 1:])
    coef_lower = np.cumsum(seg.in_window[:, 1:] * (steps / width[1:]), axis=1) - in_interval
    coef_upper = in_interval - np.cumsum(seg.in_window[:, :-1] * (steps / width[:-1]), axis=1)
    return coef_lower, coef_upper


def _tail_floor(plan: PaulaPlan, tail: int) -> int:
    """Ranks past g_L over which the tail cap stays flat.

    A longer flat stretch makes the count part of the cap tighter (Ville's bound for j >= floor
    needs a slack ~ sqrt(ρ/floor) per rank) but overshoots the yield just past g_L by floor * rate.
    An eighth of the tail balances the two for tails of 10^3..10^6 ranks; never below m, the
    floor of A.2's deterministic cap, and never beyond the tail.
    """
    return int(min(tail, max(plan.m, math.ceil(tail / 8))))


# --------------------------------------------------------------------------------------------
# Bernoulli log-moment-generating function and Chernoff bounds
# --------------------------------------------------------------------------------------------
def _log_mgf(x: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """ψ(x; ρ) = log E exp(x (v - ρ)) for v ~ Bernoulli(ρ), stable for every x and ρ in [0, 1]."""
    x, rho = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(rho, dtype=np.float64))
    out = np.zeros(x.shape)  # 0 where ρ is 0 or 1: v is constant
    inner = (rho > 0.0) & (rho < 1.0)
    small = inner & (np.abs(x) <= 1.0)
    large = inner & ~small
    # Each form only where it applies: evaluating both everywhere doubled the cost of ψ, which is
    # most of the cost of a run's bounds.
    xs, rs = x[small], rho[small]
    out[small] = np.log1p(rs * np.expm1(xs)) - xs * rs
    xl, rl = x[large], rho[large]
    with np.errstate(over="ignore", divide="ignore"):
        out[large] = np.logaddexp(np.log1p(-rl), np.log(rl) + xl) - xl * rl
    return out


def _worst_rate(x: np.ndarray) -> np.ndarray:
    """argmax over ρ of ψ(x; ρ): 1/x - 1/(e^x - 1), which is 1/2 at x = 0."""
    x = np.asarray(x, dtype=np.float64)
    tiny = np.abs(x) < 1e-4
    safe = np.where(tiny, 1.0, x)
    with np.errstate(over="ignore"):
        exact = 1.0 / safe - 1.0 / np.expm1(safe)
    return np.where(tiny, 0.5 - x / 12.0, exact)


def _max_log_mgf(x, lo, hi):
    """max over ρ in [lo, hi] of ψ(x; ρ); ψ is concave in ρ, so clip the unconstrained argmax."""
    return _log_mgf(x, np.clip(_worst_rate(x), lo, hi))


def _chernoff_margins(coef, sizes, lo, hi, c) -> np.ndarray:
    """For each column K: min over λ > 0 of (Σ_q sizes_q max_ρ ψ(λ coef_qK; ρ) + c) / λ.

    That is the t with P(Σ_i a_i (v_i - ρ_i) > t) <= e^-c for any independent Bernoulli labels
    whose stretch means lie in [lo, hi]. Any λ gives a valid t; the minimum is taken over a
    geometric grid of λ (ratio 1.05) spanning a factor 50 either side of each column's
    sub-Gaussian optimum sqrt(2c/V). Near its minimum the objective is flat in log λ (relative
    curvature 1), so the grid costs under 0.05 % of the margin.

    A stretch's coefficient changes only a few times as K grows, so log E exp(λ X_K) is built as
    a cumulative sum over K of the changes, for all λ of the grid at once.
    """
    coef = np.asarray(coef, dtype=np.float64)
    peak = np.clip(0.5, lo, hi)
    var = ((sizes * peak * (1.0 - peak))[:, None] * coef**2).sum(axis=0)
    out = np.zeros(coef.shape[1])
    live = var > 0
    if not live.any():
        return out
    # A variance near the smallest float (a stretch mean within a denormal of 0 or 1) would put
    # the sub-Gaussian centre at infinity; any λ gives a valid margin, and past _MAX_CENTRE the
    # Bernoulli tail, not the Gaussian one, sets the optimum (λ of order log(1/ρ) / coef).
    with np.errstate(over="ignore", divide="ignore"):
        centre = np.minimum(np.sqrt(2.0 * c / var[live]), _MAX_CENTRE)
    lam = np.exp(np.arange(math.log(centre.min()) - _BRACKET, math.log(centre.max()) + _BRACKET, _GRID_STEP))
    coef = coef[:, live]
    previous = np.concatenate((np.zeros((coef.shape[0], 1)), coef[:, :-1]), axis=1)
    rows, cols = np.nonzero(coef != previous)  # row by row, each row's changes in column order
    after = _max_log_mgf(coef[rows, cols][:, None] * lam, lo[rows, None], hi[rows, None])
    # Before a change a stretch has the coefficient its previous change set (0 before its first,
    # and ψ(0; ρ) = 0): its term is that change's, not evaluated twice.
    before = np.zeros_like(after)
    same_row = rows[1:] == rows[:-1]
    before[1:][same_row] = after[:-1][same_row]
    change = sizes[rows, None] * (after - before)
    log_mgf = np.zeros((coef.shape[1], lam.size))
    np.add.at(log_mgf, cols, change)
    log_mgf = np.cumsum(log_mgf, axis=0)
    out[live] = ((log_mgf + c) / lam).min(axis=1)
    return out


def _xlogy(x, y) -> np.ndarray:
    """x log(y), and 0 where x == 0 unless y is NaN: ``scipy.special.xlogy``, bit for bit.

    Not scipy's own: importing ``scipy.special`` costs a run a sixth of a second. Not
    ``np.log`` either: NumPy's SIMD logarithm (AVX-512) differs from the C library's in the last
    bit, and a bound's bisection could then land one ulp apart; ``math.log`` is the C library's,
    as in scipy.
    """
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    positive = y > 0.0
    log_y = np.where(y == 0.0, -np.inf, np.nan)  # log of a negative or NaN y is NaN
    log_y[positive] = np.fromiter(map(math.log, y[positive].tolist()), np.float64, np.count_nonzero(positive))
    with np.errstate(all="ignore"):  # scipy's xlogy warns about nothing either (0 * inf, overflow)
        return np.where((x == 0.0) & ~np.isnan(y), 0.0, x * log_y)


def _kl(p, q):
    """Bernoulli Kullback-Leibler divergence KL(p || q)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _xlogy(p, p / q) + _xlogy(1.0 - p, (1.0 - p) / (1.0 - q))


def _kl_upper(p, n, c):
    """Largest q >= p with n KL(p || q) <= c (Chernoff's upper confidence bound on a mean rate)."""
    lo, hi = np.array(p, dtype=np.float64), np.ones_like(p, dtype=np.float64)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        ok = n * _kl(p, mid) <= c
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return hi


def _kl_lower(p, n, c):
    """Smallest q <= p with n KL(p || q) <= c."""
    return 1.0 - _kl_upper(1.0 - np.asarray(p, dtype=np.float64), n, c)


def _deviance(c, n, mu) -> float:
    """Binomial deviance of the fitted rates mu against the window means c/n (0 log 0 = 0)."""
    p = c / n
    terms = _xlogy(c, p) - _xlogy(c, mu) + _xlogy(n - c, 1.0 - p) - _xlogy(n - c, 1.0 - mu)
    return float(2.0 * terms.sum())
