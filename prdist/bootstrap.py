"""Bootstrap confidence bands for the functional PR curve (Clémençon & Vayatis 2009, Algorithm 1).

From an i.i.d. labeled sample (scores, 0/1 labels) the functional empirical PR curve

    PR^(beta) = p^ beta / (p^ beta + (1 - p^) alpha^(beta)),  alpha^(beta) = 1 - H^(G^-1(1 - beta))

(:mod:`prdist.curves`) is surrounded by a band that covers the population curve PR over
beta in [eps_beta, 1 - eps_beta] with probability about 1 - delta, uniformly (a sup-norm band), and
by pointwise intervals at every grid recall. "About" is asymptotic. Measured coverage
(docs/coverage.md, benchmarks/bench_band_coverage.py: 5 models, n = 50 to 5,000, prevalence 0.1
and 0.5, all three methods below, B = 500): on continuous scores with n >= 1,000 the sup-norm band
covered the population curve in 90.5-99.5 % of 200 samples at nominal 90 % and 95.5-100 % at
nominal 95 %; it falls short with about 5 positives and on tied scores, and the pointwise
intervals fall short most at low recall. The slow tests in tests/unit/test_bootstrap.py keep
coverage above a floor and the band radius within [0.8, 1.4] times the true sup quantile.

**Resampling.** Three ways to draw a bootstrap sample D*_n of size n:

``"smoothed-importance"`` (the paper's Algorithm 1, the default)
    The class label of each bootstrap item is positive with an *instrumental* rate p~, so the
    number of positives is n*+ ~ Binomial(n, p~); each item's score is a draw with replacement
    from its class plus N(0, h^2) noise, i.e. a draw from the Gaussian-kernel smoothed class cdf
    (Remark 4). Replicate b carries the importance weight
    gamma_b = (p^/p~)^(n*+) ((1-p^)/(1-p~))^(n-n*+), computed in log space and self-normalised;
    weighting turns the Binomial(n, p~) count back into the Binomial(n, p^) of plain resampling.
``"stratified"``
    The plain stratified bootstrap: n+ positives and n- negatives resampled with replacement
    within their class, no smoothing, equal weights. Holding n+ fixed leaves out the sampling
    noise of the prevalence (the first term of the asymptotic variance), so its bands are
    narrower than the truth where that term matters, at high recall.
``"naive"``
    Resampling (score, label) pairs with replacement, no smoothing, equal weights. It is drawn
    as n*+ ~ Binomial(n, p^) followed by resampling within each class, which has exactly the law
    of resampling pairs.

A bootstrap sample with no positive has no PR curve; such draws of n*+ are redrawn, so every
method conditions on n*+ >= 1 (for weighted replicates the condition rescales every weight by the
same constant, which self-normalisation removes). The number of redraws is reported.

**Band.** With D_b(beta) = PR*_b(beta) - PR^(beta) (the paper's R*_n / sqrt(n); the sqrt(n) factor
cancels between the root and the band, so it is never applied), the sup-norm radius r(delta) is the
weighted (1 - delta) quantile of sup_beta |D_b(beta)| over the grid, and the band is
PR^ +/- r(delta). The pointwise radius at beta is the weighted (1 - delta) quantile of |D_b(beta)|,
so the pointwise band always lies inside the sup-norm band. Bands are clipped to [0, 1], where
every precision lies. A weighted quantile is the inverse of the weighted empirical cdf: the
smallest value v with sum_{b: value_b <= v} w_b >= (1 - delta) sum_b w_b (Algorithm 1, step 4).

**Bandwidth.** h = c n^(-1/5) (Remark 5) with Silverman's constant c = 0.9 min(sd, IQR/1.349)
computed on the *class-centred* pooled scores (each class minus its median): the spread within
the classes, which is what the kernel smooths, without the separation between the classes that
would inflate a pooled rule (:func:`silverman_bandwidth`).

**Instrumental rate.** The weights of a Binomial(n, p~) count have the closed-form second moment
E[gamma^2] = rho^n with rho = p^^2/p~ + (1-p^)^2/(1-p~) = 1 + (p~-p^)^2 / (p~(1-p~)), so the
expected effective-sample-size fraction is rho^(-n) (:func:`expected_ess_fraction`). It collapses
exponentially in n: the paper's example p~ = 1/2 leaves about one effective replicate as soon as
n is in the hundreds and p^ is small. The default p~ (:func:`default_instrumental_rate`) raises
p^ to min_positives/n (30 expected positives) but no further than the largest p~ that keeps the
expected ESS fraction >= 1/2, found by solving rho(p~)^(-n) = 1/2 (a quadratic in p~). For samples
with many positives p~ = p^ and the weights are all equal.

**Speed.** The bands need, per replicate and recall level, only the order statistic of rank
r = n*+ - floor(beta n*+) of the positive bootstrap scores (the threshold G*^-1(1 - beta)) and the
number of negative bootstrap scores above it: k + 1 numbers, not a sample. They are drawn
directly, exactly in law, without drawing, smoothing or sorting a single item
(:func:`_draw_false_positives`): n*+ i.i.d. draws from the positives' resampling law F+ have the
order statistics F+^-1(U_(r)), and the uniform order statistics U_(r) at k ranks are ratios of
sums of k + 1 independent Gamma variables; the negatives, independent of them, fall into the
k + 1 cells cut by the thresholds with multinomial counts. A replicate therefore costs O(k)
random numbers (tens of microseconds) whatever n. The resampling law of a class is its
empirical distribution (:class:`EmpiricalLaw`, exact) or, smoothed, that distribution convolved
with N(0, h^2) (:class:`SmoothedLaw`): a table built once in O(n + nodes) whose error is at most
phi(1) / (4 R^2) in every probability, R nodes per bandwidth chosen so that no expected count of
a replicate moves by more than a thousandth of an item: the bands move by far less than 1 % of
their width (the derivation is in :class:`SmoothedLaw`). The two laws are tabulated side by side
where the replicates are drawn, from their :class:`LawSource` (on a cluster, each on a worker).
What remains of a call is O(n) work on the sample (fitting the empirical curve, the bandwidth)
and, for the bands, weighted quantiles over the replicates (a selection when the weights are
equal, as they are unless the importance sampling reweights).

**Determinism.** Replicates are grouped into batches whose sizes depend only on ``replicates``
(:func:`replicate_batch_sizes`); batch i draws from child i of
``numpy.random.SeedSequence(seed).spawn(k)``. The result is therefore bit-for-bit the same whether
the batches run in this process or on any number of Dask workers (``map_batches``; the Dask one is
:mod:`prdist.dataflow.bands`, reached as ``prdist.bootstrap_bands(..., client=client)``), on one
platform: workers with other numpy builds may round the logarithms of the Gamma draws
differently in the last bit.

The normal-approximation columns (:func:`plugin_asymptotic_variance`) are a cross-check: the
corrected asymptotic pointwise variance (Clémençon & Vayatis Eq. 9 as corrected by Hughes-Oliver)
with kernel density estimates plugged in.
"""

from __future__ import annotations

import math
import numbers
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import fft, special

from ._validation import check_choice, check_float, check_int
from .curves import EmpiricalPR, as_recall_levels, floor_fraction_of
from .errors import DataError, ParameterError

__all__ = [
    "METHODS",
    "BootstrapWarning",
    "BootstrapSetup",
    "EmpiricalLaw",
    "LawSource",
    "ReplicateBatch",
    "BootstrapReplicates",
    "bootstrap_bands",
    "bootstrap_replicates",
    "default_instrumental_rate",
    "expected_ess_fraction",
    "normal_pointwise_bands",
    "plugin_asymptotic_variance",
    "recall_grid",
    "replicate_batch_sizes",
    "join_batches",
    "run_replicate_batch",
    "run_replicate_batches",
    "SmoothedLaw",
    "tabulate_laws",
    "map_batches_in_process",
    "silverman_bandwidth",
    "weighted_quantile",
]

SMOOTHED_IMPORTANCE = "smoothed-importance"
STRATIFIED = "stratified"
NAIVE = "naive"
METHODS = (SMOOTHED_IMPORTANCE, STRATIFIED, NAIVE)

#: Default half-width of the excluded recall ends: the band covers [0.05, 0.95]. Near recall 0
#: the curve rests on a handful of top positives and near recall 1 on the bottom ones, where the
#: paper's asymptotics (Theorem 1, assumptions H1-H2) do not hold uniformly.
DEFAULT_EPS_BETA = 0.05
#: Number of recall levels of the default grid (spacing 0.009 on [0.05, 0.95]).
DEFAULT_GRID_SIZE = 101
#: Default instrumental rate: raise the expected number of bootstrap positives to this ...
DEFAULT_MIN_POSITIVES = 30
#: ... while the expected effective sample size stays at least this fraction of the replicates.
DEFAULT_MIN_ESS_FRACTION = 0.5
#: Below this many positives the bands are computed but flagged unreliable.
SMALL_SAMPLE_POSITIVES = 20
#: Fewer than this many effective replicates beyond the (1 - delta) quantile makes it unstable.
MIN_TAIL_REPLICATES = 5
#: A batch (one Dask task) holds at most this many replicates: some 10 ms of work, which
#: amortises a task's overhead (about a millisecond) (see replicate_batch_sizes).
_MAX_BATCH_REPLICATES = 512
#: Smoothed class laws are tabulated finely enough that n times their error bound is at most
#: this many items (see SmoothedLaw) ...
_COUNT_ERROR = 1e-3
#: ... on at most this many nodes (8 MB per array).
_MAX_TABLE_NODES = 1 << 20
#: The Gaussian kernel is cut at this many bandwidths: Phi(-9) = 1e-19.
_KERNEL_REACH = 9.0
#: phi(1) = max |z phi(z)|, the largest slope of the standard normal density.
_PHI_AT_ONE = math.exp(-0.5) / math.sqrt(2.0 * math.pi)
#: The kernel density estimates of the normal cross-check work on chunks of this many values.
_KDE_CHUNK_ELEMENTS = 1 << 17


class BootstrapWarning(UserWarning):
    """The bootstrap ran, but its bands rest on little information (few positives, low ESS)."""


def _open_unit(value, *, name: str, owner: str) -> float:
    """Check a float in the open interval (0, 1)."""
    return check_float(
        value, name=name, owner=owner, low=0.0, high=1.0, low_open=True, high_open=True
    )


# --------------------------------------------------------------------------------------------
# Tuning parameters
# --------------------------------------------------------------------------------------------


def silverman_bandwidth(scores, labels) -> float:
    """Default smoothing bandwidth h = 0.9 min(sd, IQR/1.349) n^(-1/5) on class-centred scores.

    Silverman's rule of thumb, with the spread measured on the pooled scores after subtracting
    each class's median, so that the distance between the classes does not count as spread.
    When the interquartile range is 0 the standard deviation alone is used; when every class is
    constant, the standard deviation of the raw scores.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite scores.
    labels : array-like of shape (n,)
        0/1 labels with both classes present.

    Returns
    -------
    float
        The bandwidth h > 0.

    Raises
    ------
    DataError
        Bad scores or labels, one class only, or all scores equal.

    Examples
    --------
    >>> scores = np.r_[np.arange(10.0), np.arange(10.0) + 100.0]
    >>> labels = np.r_[np.zeros(10), np.ones(10)]
    >>> round(silverman_bandwidth(scores, labels), 4)   # the shift of 100 does not count
    1.4568
    """
    curve = EmpiricalPR.fit(scores, labels, warn_ties=False)
    return _silverman(curve)


def _silverman(curve: EmpiricalPR) -> float:
    pos, neg = curve.positive_scores, curve.negative_scores
    n = pos.size + neg.size
    if pos[-1] == pos[0] and neg[-1] == neg[0] and pos[0] == neg[0]:
        raise DataError(
            "All scores are equal: a PR curve needs scores that vary. Check that the score "
            "column is the system's confidence and not a constant."
        )
    centred = np.concatenate((pos - np.median(pos), neg - np.median(neg)))
    sd = float(np.std(centred, ddof=1))
    q75, q25 = np.percentile(centred, [75.0, 25.0])
    iqr = float(q75 - q25)
    spread = min(sd, iqr / 1.349) if iqr > 0.0 else sd
    if spread == 0.0:
        spread = float(np.std(np.concatenate((pos, neg)), ddof=1))
    return 0.9 * spread * n ** (-0.2)


def expected_ess_fraction(n, prevalence, instrumental_rate) -> float:
    """Expected effective-sample-size fraction of the importance weights, rho^(-n).

    With n*+ ~ Binomial(n, p~) and weights gamma = (p^/p~)^(n*+) ((1-p^)/(1-p~))^(n-n*+),
    E[gamma] = 1 and E[gamma^2] = rho^n, rho = 1 + (p~ - p^)^2 / (p~ (1 - p~)); the effective
    sample size (sum w)^2 / sum w^2 of B replicates is about B E[gamma]^2 / E[gamma^2].

    Parameters
    ----------
    n : int
        Sample size, >= 1.
    prevalence : float
        Empirical prevalence p^ in (0, 1).
    instrumental_rate : float
        Instrumental rate p~ in (0, 1).

    Returns
    -------
    float
        In (0, 1]; 1 exactly when p~ = p^.

    Examples
    --------
    >>> expected_ess_fraction(1000, 0.1, 0.1)
    1.0
    >>> f"{expected_ess_fraction(1000, 0.1, 0.5):.1e}"   # the paper's p~ = 1/2: collapse
    '1.4e-215'
    """
    owner = "expected_ess_fraction"
    n = check_int(n, name="n", owner=owner, low=1)
    p = _open_unit(prevalence, name="prevalence", owner=owner)
    q = _open_unit(instrumental_rate, name="instrumental_rate", owner=owner)
    return math.exp(-n * math.log1p((q - p) ** 2 / (q * (1.0 - q))))


def default_instrumental_rate(
    n, prevalence, *, min_positives=DEFAULT_MIN_POSITIVES, min_ess_fraction=DEFAULT_MIN_ESS_FRACTION
) -> float:
    """Default instrumental rate p~ of the importance bootstrap.

    p~ = min(max(p^, min_positives / n), p_max), where p_max is the largest rate whose expected
    ESS fraction (:func:`expected_ess_fraction`) is still ``min_ess_fraction``: with
    c = min_ess_fraction^(-1/n) - 1 it is the upper root of (p - p^)^2 = c p (1 - p), i.e. of
    (1 + c) p^2 - (2 p^ + c) p + p^2 = 0.

    Parameters
    ----------
    n : int
        Sample size, >= 1.
    prevalence : float
        Empirical prevalence p^ in (0, 1).
    min_positives : float, default=30
        Expected number of positives n p~ to aim for.
    min_ess_fraction : float, default=0.5
        Lowest expected ESS fraction allowed, in (0, 1].

    Returns
    -------
    float
        p~ in [p^, 1).

    Examples
    --------
    >>> default_instrumental_rate(10_000, 0.2)      # plenty of positives: no importance
    0.2
    >>> q = default_instrumental_rate(400, 0.02)    # 8 positives: raised, capped by the ESS
    >>> round(q, 4), round(expected_ess_fraction(400, 0.02, q), 4)
    (0.0267, 0.5)
    """
    owner = "default_instrumental_rate"
    n = check_int(n, name="n", owner=owner, low=1)
    p = _open_unit(prevalence, name="prevalence", owner=owner)
    min_positives = check_float(min_positives, name="min_positives", owner=owner, low=0.0)
    f = check_float(
        min_ess_fraction, name="min_ess_fraction", owner=owner, low=0.0, high=1.0, low_open=True
    )
    target = max(p, min_positives / n)
    if target == p or f == 1.0:
        return p
    c = math.expm1(-math.log(f) / n)
    b = 2.0 * p + c
    cap = (b + math.sqrt(b * b - 4.0 * (1.0 + c) * p * p)) / (2.0 * (1.0 + c))
    return min(target, cap)


def recall_grid(eps_beta=DEFAULT_EPS_BETA, size=DEFAULT_GRID_SIZE) -> np.ndarray:
    """The default recall grid: ``size`` equally spaced levels on [eps_beta, 1 - eps_beta].

    Examples
    --------
    >>> recall_grid(0.1, 5).tolist()
    [0.1, 0.3, 0.5, 0.7, 0.9]
    """
    owner = "recall_grid"
    eps_beta = check_float(
        eps_beta, name="eps_beta", owner=owner, low=0.0, high=0.5, low_open=True, high_open=True
    )
    size = check_int(size, name="size", owner=owner, low=1)
    return np.linspace(eps_beta, 1.0 - eps_beta, size)


def replicate_batch_sizes(replicates) -> tuple[int, ...]:
    """Sizes of the seeded replicate batches: a function of ``replicates`` only.

    A batch is the unit of randomness: it draws from its own seed, so the batches, and with them
    the bits of every replicate, depend on ``replicates`` only, never on the number of workers (a
    Dask task runs a share of consecutive batches, see :mod:`prdist.dataflow.bands`). A batch
    holds at most 512 replicates (a replicate costs tens of microseconds whatever the sample
    size, see :func:`run_replicate_batch`). The number of batches is the smallest multiple of 8
    within that limit (or ``replicates``, if smaller), and the replicates are spread over them as
    evenly as possible (sizes differ by at most one, larger first).

    Examples
    --------
    >>> replicate_batch_sizes(1000)
    (125, 125, 125, 125, 125, 125, 125, 125)
    >>> sizes = replicate_batch_sizes(10_000)
    >>> len(sizes), sizes[0], sizes[-1]
    (24, 417, 416)
    >>> replicate_batch_sizes(5)
    (1, 1, 1, 1, 1)
    """
    replicates = check_int(replicates, name="replicates", owner="replicate_batch_sizes", low=1)
    batches = min(replicates, -(-replicates // (8 * _MAX_BATCH_REPLICATES)) * 8)
    size, larger = divmod(replicates, batches)
    return (size + 1,) * larger + (size,) * (batches - larger)


# --------------------------------------------------------------------------------------------
# The laws a replicate draws from, and the replicate kernel
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class EmpiricalLaw:
    """The empirical distribution of one class's scores: what an unsmoothed resample draws from.

    Attributes
    ----------
    values : ndarray of shape (m,)
        The distinct scores, increasing.
    cumulative : ndarray of shape (m + 1,)
        0, then F(values[i]), the fraction of the scores <= values[i] (the last is 1).

    Examples
    --------
    >>> law = EmpiricalLaw.fit(np.array([1.0, 2.0, 2.0, 5.0]))
    >>> law.quantile(np.array([0.2, 0.25, 0.5, 0.9])).tolist()
    [1.0, 1.0, 2.0, 5.0]
    >>> law.cdf(np.array([0.0, 2.0, 4.9])).tolist()
    [0.0, 0.75, 0.75]
    """

    values: np.ndarray
    cumulative: np.ndarray

    @classmethod
    def fit(cls, sorted_scores: np.ndarray) -> EmpiricalLaw:
        values, counts = np.unique(sorted_scores, return_counts=True)
        return cls(values, np.r_[0.0, np.cumsum(counts) / sorted_scores.size])

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """F^-1(u) = min{x : F(x) >= u}, elementwise, for u in (0, 1)."""
        index = np.searchsorted(self.cumulative[1:], u, side="left")
        return self.values[np.minimum(index, self.values.size - 1)]

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """F(t), the fraction of the scores <= t, elementwise."""
        return self.cumulative[np.searchsorted(self.values, t, side="right")]


@dataclass(frozen=True, eq=False)
class SmoothedLaw:
    """One class's scores convolved with N(0, h^2), tabulated: what a smoothed resample draws from.

    The law of a draw with replacement plus N(0, h^2) noise has the cdf
    F(x) = mean_j Phi((x - x_j) / h). It is tabulated at nodes spaced step = h / R and read by
    linear interpolation (:meth:`cdf`, and :meth:`quantile`, the inverse of that interpolant).

    **Error bound.** The table is built in O(m + nodes) by linear binning of the scores onto the
    nodes and one FFT convolution with the kernel's cdf increments. Linear binning replaces each
    x_j's term Phi((x - x_j)/h) by its linear interpolation between the two nodes around x_j,
    which errs by at most step^2/8 times max |d^2/dy^2 Phi((x - y)/h)| = phi(1)/h^2; reading the
    table between nodes errs by at most step^2/8 max |F''| <= step^2/8 phi(1)/h^2 again. So
    |F_table(x) - F(x)| <= ``error_bound`` = phi(1) / (4 R^2) for every x (plus float rounding,
    ~1e-13, and the kernel's cut at 9h, 1e-19). In a replicate this means: each threshold is the
    exact quantile F+^-1(u') of a uniform order statistic moved by |u' - u| <= error_bound, and
    each cumulative probability of the negatives is moved by at most error_bound, so the
    expected count of items behind every point of the curve moves by at most n error_bound.
    R is chosen so that n error_bound <= 0.001 (a thousandth of an item, against counts whose
    standard deviations are about an item or more wherever the curve is not flat): drawn with
    the same random numbers as from the exact cdf, a replicate's counts then almost never differ
    by even one item, and the bands differ by far less than 1 % of their width
    (tests/unit/test_bootstrap.py checks both against the exact cdf). Tables hold at most 2^20 nodes,
    which caps R for very large samples (at n = 10^6, n error_bound = 0.002); if scores spread
    over so many bandwidths that the cap leaves n error_bound > 1, :func:`bootstrap_bands` warns.

    Examples
    --------
    >>> law = SmoothedLaw.fit(np.array([0.0]), 1.0, total_items=100)   # one score: N(0, 1)
    >>> float(abs(law.cdf(np.array([1.0]))[0] - 0.8413447)) < law.error_bound + 1e-7
    True
    >>> round(float(law.quantile(np.array([0.975]))[0]), 3)
    1.96
    """

    nodes: np.ndarray
    step: float
    cumulative: np.ndarray
    error_bound: float

    @classmethod
    def fit(cls, sorted_scores: np.ndarray, bandwidth: float, *, total_items: int) -> SmoothedLaw:
        """Tabulate the smoothed law of ``sorted_scores`` for a bootstrap of ``total_items``."""
        lowest, highest = float(sorted_scores[0]), float(sorted_scores[-1])
        per_bandwidth = _nodes_per_bandwidth(lowest, highest, bandwidth, total_items)
        step = bandwidth / per_bandwidth
        reach = math.ceil(_KERNEL_REACH * per_bandwidth)
        start = lowest - (reach + 1) * step
        size = int((highest - start) / step) + reach + 3
        # Linear binning: the mass of each score split between its two neighbouring nodes.
        position = (sorted_scores - start) / step
        left = position.astype(np.int64)
        right_share = position - left
        mass = np.bincount(left, 1.0 - right_share, size) + np.bincount(left + 1, right_share, size)
        # F at node i = sum_l mass_l Phi((i - l) / R): the cumulative sum of the convolution
        # with the kernel's cdf increments over offsets -reach .. reach + 1 (Phi := 1 beyond).
        kernel_cdf = np.r_[special.ndtr(np.arange(-reach, reach + 1) / per_bandwidth), 1.0]
        increments = np.diff(kernel_cdf, prepend=0.0)
        cdf = np.cumsum(_convolved(mass, increments))[reach : reach + size]
        # FFT rounding (~1e-13) must not break the monotonicity the inverse relies on.
        cdf = np.clip(np.maximum.accumulate(cdf / sorted_scores.size), 0.0, 1.0)
        return _smoothed_law(start, step, cdf, _PHI_AT_ONE / (4.0 * per_bandwidth**2))

    def __reduce__(self):
        # The nodes are evenly spaced: a pickle (what a cluster ships to every worker) carries
        # the first node and the step, not the array, and the copy rebuilds the same bits.
        return _smoothed_law, (float(self.nodes[0]), self.step, self.cumulative, self.error_bound)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """F^-1(u) of the tabulated cdf, elementwise, for u in (0, 1)."""
        return np.interp(u, self.cumulative, self.nodes)

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """F(t), elementwise: the interpolation of ``np.interp``, its node found in O(1)."""
        position = np.clip((t - self.nodes[0]) / self.step, 0.0, self.nodes.size - 1.0)
        left = np.minimum(position.astype(np.int64), self.nodes.size - 2)
        below = self.cumulative[left]
        return below + (position - left) * (self.cumulative[left + 1] - below)


def _convolved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The full linear convolution of two real 1-d arrays through real FFTs.

    What ``scipy.signal.fftconvolve(a, b)`` computes, the same way, without importing
    ``scipy.signal`` (about 0.5 s: the first ``prdist.bootstrap_bands`` call would pay for it).

    >>> _convolved(np.array([1.0, 2.0]), np.array([1.0, 1.0, 1.0])).round(12).tolist()
    [1.0, 3.0, 3.0, 2.0]
    """
    size = a.size + b.size - 1
    length = fft.next_fast_len(size, real=True)
    return fft.irfft(fft.rfft(a, length) * fft.rfft(b, length), length)[:size]


def _nodes_per_bandwidth(lowest: float, highest: float, bandwidth: float, total_items: int):
    """The table resolution R of :class:`SmoothedLaw` (nodes per bandwidth)."""
    spread = (highest - lowest) / bandwidth + 2.0 * (_KERNEL_REACH + 1.0)  # in bandwidths
    per_bandwidth = math.ceil(math.sqrt(_PHI_AT_ONE * total_items / (4.0 * _COUNT_ERROR)))
    # Capped by the table size: for scores spread over more than 2^20 bandwidths, R < 1.
    return min(per_bandwidth, _MAX_TABLE_NODES / spread)


def _smoothed_law(start: float, step: float, cumulative: np.ndarray, error_bound: float):
    """The :class:`SmoothedLaw` with nodes ``start + step * i`` (how it is built and unpickled)."""
    return SmoothedLaw(start + step * np.arange(cumulative.size), step, cumulative, error_bound)


@dataclass(frozen=True, eq=False)
class LawSource:
    """What one class's resampling law is tabulated from: its sorted scores, h and n.

    A :class:`BootstrapSetup` holds the two sources until :func:`tabulate_laws`. They are the
    lighter thing to ship (8 bytes per item; at n = 10^6 half the bytes of the smoothed tables),
    so a cluster sends each to one worker and tabulates the two laws there side by side
    (:mod:`prdist.dataflow.bands`).

    Attributes
    ----------
    sorted_scores : ndarray of shape (m,)
        The class's scores, increasing.
    bandwidth : float
        Smoothing bandwidth h: a :class:`SmoothedLaw` if > 0, else the :class:`EmpiricalLaw`.
    total_items : int
        Size n of the bootstrap samples: it sets the smoothed table's resolution.
    """

    sorted_scores: np.ndarray
    bandwidth: float
    total_items: int

    def tabulate(self) -> EmpiricalLaw | SmoothedLaw:
        """The law (the same bits wherever it is tabulated)."""
        if self.bandwidth > 0.0:
            return SmoothedLaw.fit(self.sorted_scores, self.bandwidth, total_items=self.total_items)
        return EmpiricalLaw.fit(self.sorted_scores)

    @property
    def error_bound(self) -> float:
        """The tabulated cdf's error bound (:class:`SmoothedLaw`), known before tabulating."""
        if self.bandwidth == 0.0:
            return 0.0
        lowest, highest = float(self.sorted_scores[0]), float(self.sorted_scores[-1])
        per_bandwidth = _nodes_per_bandwidth(lowest, highest, self.bandwidth, self.total_items)
        return _PHI_AT_ONE / (4.0 * per_bandwidth**2)


def tabulate_laws(setup: BootstrapSetup) -> BootstrapSetup:
    """``setup`` with its class laws tabulated, the two side by side; as it is if they are."""
    laws = (setup.positive_law, setup.negative_law)
    if not any(isinstance(law, LawSource) for law in laws):
        return setup
    # Independent tables whose FFTs and cumulative sums release the GIL.
    with ThreadPoolExecutor(max_workers=2) as pool:
        positive, negative = pool.map(_tabulated, laws)
    return replace(setup, positive_law=positive, negative_law=negative)


def _tabulated(law):
    return law.tabulate() if isinstance(law, LawSource) else law


@dataclass(frozen=True, eq=False)
class BootstrapSetup:
    """Everything a worker needs to draw replicates: the two class laws and the tuning.

    Built by :func:`bootstrap_replicates` with the laws' sources, tabulated where the replicates
    are drawn (:func:`tabulate_laws`).

    Attributes
    ----------
    positive_law, negative_law : LawSource, EmpiricalLaw or SmoothedLaw
        What a resampled positive (negative) score is drawn from: ``quantile(u)`` and ``cdf(t)``
        once tabulated.
    n_positive, n_negative : int
        Class sizes of the sample.
    beta : ndarray of shape (k,)
        Recall grid.
    precision : ndarray of shape (k,)
        The empirical curve PR^ on the grid, the centre of the bands.
    method : str
        One of :data:`METHODS`.
    bandwidth : float
        Smoothing bandwidth h (0: no smoothing).
    draw_rate : float or None
        Rate p of the Binomial(n, p) count of bootstrap positives; None when it is fixed at n+
        (stratified).
    log_ratio_positive, log_ratio_negative : float
        log(p^/p~) and log((1-p^)/(1-p~)): the log weight of a replicate with n*+ positives is
        n*+ log_ratio_positive + (n - n*+) log_ratio_negative (both 0 without importance).
    """

    positive_law: EmpiricalLaw | SmoothedLaw | LawSource
    negative_law: EmpiricalLaw | SmoothedLaw | LawSource
    n_positive: int
    n_negative: int
    beta: np.ndarray
    precision: np.ndarray
    method: str
    bandwidth: float
    draw_rate: float | None
    log_ratio_positive: float
    log_ratio_negative: float

    @property
    def n(self) -> int:
        return self.n_positive + self.n_negative


@dataclass(frozen=True, eq=False)
class ReplicateBatch:
    """The replicates of one seeded batch.

    Attributes
    ----------
    n_positive : ndarray of shape (b,), int64
        Positives n*+ of each bootstrap sample.
    log_weight : ndarray of shape (b,)
        Unnormalised log importance weight of each replicate.
    precision : ndarray of shape (b, k)
        Bootstrap curve PR*_b on the recall grid.
    redraws : int
        Draws of n*+ = 0 that were redrawn.
    """

    n_positive: np.ndarray
    log_weight: np.ndarray
    precision: np.ndarray
    redraws: int


def run_replicate_batch(
    setup: BootstrapSetup, size: int, seed: np.random.SeedSequence
) -> ReplicateBatch:
    """Draw ``size`` bootstrap replicates from ``seed`` and evaluate their PR curves.

    Pure and deterministic: the same (setup, size, seed) gives the same bits in any process of
    the same platform. A setup holding the laws' sources has them tabulated first (for many
    batches, :func:`run_replicate_batches` tabulates once).

    Parameters
    ----------
    setup : BootstrapSetup
    size : int
        Number of replicates, >= 1.
    seed : numpy.random.SeedSequence
        The batch's own seed.

    Returns
    -------
    ReplicateBatch
    """
    setup = tabulate_laws(setup)
    rng = np.random.default_rng(seed)
    n_pos, redraws = _draw_positive_counts(setup, rng, size)
    false_positives = _draw_false_positives(setup, rng, n_pos)
    precision = _precision(n_pos, setup.beta, false_positives)
    log_weight = n_pos * setup.log_ratio_positive + (setup.n - n_pos) * setup.log_ratio_negative
    return ReplicateBatch(n_pos, log_weight, precision, redraws)


def run_replicate_batches(setup: BootstrapSetup, sizes, seeds) -> ReplicateBatch:
    """The seeded batches ``run_replicate_batch(setup, sizes[i], seeds[i])``, joined in order.

    What one cluster task runs: a share of consecutive batches, so that the number of tasks can
    follow the number of workers while the batches, and so the bits, follow ``replicates`` only.
    The laws are tabulated once for all of them if ``setup`` holds their sources.
    """
    setup = tabulate_laws(setup)
    return join_batches([run_replicate_batch(setup, k, seed) for k, seed in zip(sizes, seeds)])


def join_batches(batches) -> ReplicateBatch:
    """Consecutive :class:`ReplicateBatch` objects as one (a single one as it is: no copy)."""
    batches = list(batches)
    if len(batches) == 1:
        return batches[0]
    return ReplicateBatch(
        n_positive=np.concatenate([b.n_positive for b in batches]),
        log_weight=np.concatenate([b.log_weight for b in batches]),
        precision=np.concatenate([b.precision for b in batches]),
        redraws=sum(b.redraws for b in batches),
    )


def _draw_positive_counts(
    setup: BootstrapSetup, rng: np.random.Generator, size: int
) -> tuple[np.ndarray, int]:
    if setup.draw_rate is None:
        return np.full(size, setup.n_positive, dtype=np.int64), 0
    n_pos = rng.binomial(setup.n, setup.draw_rate, size).astype(np.int64)
    redraws = 0
    # Condition on n*+ >= 1: a sample without positives has no PR curve.
    while (empty := np.flatnonzero(n_pos == 0)).size:
        redraws += int(empty.size)
        n_pos[empty] = rng.binomial(setup.n, setup.draw_rate, empty.size)
    return n_pos, redraws


def _draw_false_positives(
    setup: BootstrapSetup, rng: np.random.Generator, n_pos: np.ndarray
) -> np.ndarray:
    """Bootstrap negatives above each replicate's thresholds, shape (b, k), exactly in law.

    Ranks r_1 <= ... <= r_k (the grid read from high recall to low) of n*+ i.i.d. uniforms have
    the order statistics U_(r_i) = S_i / S_(k+1), S the cumulative sums of independent
    Gamma(r_1), Gamma(r_2 - r_1), ..., Gamma(n*+ + 1 - r_k) variables; the thresholds are
    F+^-1(U_(r_i)). The n*- negatives, independent of them, fall into the k + 1 cells the
    thresholds cut with Multinomial(n*-, cell probabilities from F-) counts.
    """
    rank = _order_statistic_rank(n_pos, setup.beta)[:, ::-1]  # increasing along the row
    shapes = np.diff(rank, prepend=0, append=n_pos[:, None] + 1)  # equal ranks: Gamma(0) = 0
    sums = np.cumsum(rng.standard_gamma(shapes), axis=1)
    threshold = setup.positive_law.quantile(sums[:, :-1] / sums[:, -1:])
    # Rounding may leave a cell at -1 ulp where two thresholds straddle a table node.
    cells = np.maximum(np.diff(setup.negative_law.cdf(threshold), prepend=0.0, append=1.0), 0.0)
    n_neg = setup.n - n_pos
    at_or_below = np.cumsum(rng.multinomial(n_neg, cells)[:, :-1], axis=1)
    return (n_neg[:, None] - at_or_below)[:, ::-1]


def _order_statistic_rank(n_pos: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """1-based rank k = n*+ - floor(beta n*+) of the threshold G*^-1(1 - beta), shape (b, k).

    The same rounding as :class:`prdist.curves.EmpiricalPR` (products within rounding of an
    integer count as that integer).
    """
    n_pos = n_pos[:, None]
    return np.maximum(n_pos - floor_fraction_of(beta, n_pos), 1)


def _precision(n_pos: np.ndarray, beta: np.ndarray, false_positives: np.ndarray) -> np.ndarray:
    # p* beta / (p* beta + (1 - p*) alpha*) with the common factor 1/n cancelled, exactly as in
    # prdist.curves.EmpiricalPR.precision.
    true_positive_mass = n_pos[:, None] * beta
    return true_positive_mass / (true_positive_mass + false_positives)


# --------------------------------------------------------------------------------------------
# Replicates and bands
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BootstrapReplicates:
    """All bootstrap replicates of one sample, with their importance weights.

    Built by :func:`bootstrap_replicates`; :meth:`bands` turns them into confidence bands at any
    level without resampling.

    Attributes
    ----------
    beta : ndarray of shape (k,)
        Recall grid.
    precision : ndarray of shape (k,)
        Empirical curve PR^ on the grid.
    replicate_precision : ndarray of shape (B, k)
        Bootstrap curves PR*_b.
    n_positive : ndarray of shape (B,), int64
        Positives n*+ of each bootstrap sample.
    log_weight : ndarray of shape (B,)
        Unnormalised log importance weights (all 0 without importance).
    method, bandwidth, instrumental_rate, prevalence, n, n_positive_sample, seed_entropy,
    batch_sizes, redraws :
        How the replicates were drawn (``instrumental_rate`` is p~ of the smoothed importance
        bootstrap, None for the other methods, whose weights are all equal).
    """

    beta: np.ndarray
    precision: np.ndarray
    replicate_precision: np.ndarray
    n_positive: np.ndarray
    log_weight: np.ndarray
    method: str
    bandwidth: float
    instrumental_rate: float | None
    prevalence: float
    n: int
    n_positive_sample: int
    seed_entropy: int
    batch_sizes: tuple[int, ...]
    redraws: int

    @property
    def replicates(self) -> int:
        return int(self.log_weight.size)

    @property
    def weights(self) -> np.ndarray:
        """Self-normalised importance weights, shape (B,), summing to 1."""
        w = np.exp(self.log_weight - self.log_weight.max())
        return w / w.sum()

    @property
    def ess(self) -> float:
        """Effective sample size (sum w)^2 / sum w^2, in [1, B]."""
        w = np.exp(self.log_weight - self.log_weight.max())
        return float(w.sum() ** 2 / np.dot(w, w))

    @property
    def deviation(self) -> np.ndarray:
        """D_b(beta) = PR*_b(beta) - PR^(beta), shape (B, k)."""
        return self.replicate_precision - self.precision

    @property
    def sup_deviation(self) -> np.ndarray:
        """sup over the grid of |D_b(beta)|, shape (B,)."""
        return np.abs(self.deviation).max(axis=1)

    def bands(self, delta=0.05, *, normal_variance=None) -> pd.DataFrame:
        """Confidence bands at level 1 - delta.

        Parameters
        ----------
        delta : float, default=0.05
            Miscoverage in (0, 1).
        normal_variance : array-like of shape (k,), optional
            Asymptotic variance of sqrt(n)(PR^ - PR) on the grid (a population model's, or
            :func:`plugin_asymptotic_variance`); when given, the normal-approximation columns
            ``normal_lower`` and ``normal_upper`` are added.

        Returns
        -------
        pandas.DataFrame
            See :func:`bootstrap_bands`.
        """
        owner = "BootstrapReplicates.bands"
        delta = _open_unit(delta, name="delta", owner=owner)
        w = np.exp(self.log_weight - self.log_weight.max())
        abs_dev = np.abs(self.deviation)
        radius = float(weighted_quantile(abs_dev.max(axis=1), w, 1.0 - delta))
        pointwise = weighted_quantile(abs_dev, w, 1.0 - delta)
        ess = self.ess
        if ess * delta < MIN_TAIL_REPLICATES:
            warnings.warn(
                BootstrapWarning(
                    f"Only {ess * delta:.1f} effective replicates lie beyond the {1 - delta:g} "
                    f"quantile (ESS {ess:.0f} of {self.replicates}); the band radius is unstable. "
                    "Increase 'replicates' or raise 'delta'."
                ),
                stacklevel=2,
            )
        centre = self.precision
        frame = pd.DataFrame(
            {
                "recall": self.beta.astype(np.float64),
                "precision": centre,
                "band_lower": np.clip(centre - radius, 0.0, 1.0),
                "band_upper": np.clip(centre + radius, 0.0, 1.0),
                "pointwise_lower": np.clip(centre - pointwise, 0.0, 1.0),
                "pointwise_upper": np.clip(centre + pointwise, 0.0, 1.0),
            }
        )
        if normal_variance is not None:
            lower, upper = normal_pointwise_bands(centre, normal_variance, self.n, delta=delta)
            frame["normal_lower"] = lower
            frame["normal_upper"] = upper
        frame.attrs.update(
            {
                "method": self.method,
                "delta": delta,
                "replicates": self.replicates,
                "sup_radius": radius,
                "ess": ess,
                "ess_fraction": ess / self.replicates,
                "expected_ess_fraction": (
                    expected_ess_fraction(self.n, self.prevalence, self.instrumental_rate)
                    if self.instrumental_rate is not None
                    else 1.0
                ),
                "bandwidth": self.bandwidth,
                "instrumental_rate": self.instrumental_rate,
                "prevalence": self.prevalence,
                "n": self.n,
                "n_positive": self.n_positive_sample,
                "seed_entropy": self.seed_entropy,
                "batches": len(self.batch_sizes),
                "zero_positive_redraws": self.redraws,
                "recall_min": float(self.beta.min()),
                "recall_max": float(self.beta.max()),
            }
        )
        return frame


def bootstrap_replicates(
    scores,
    labels,
    *,
    replicates=1000,
    method=SMOOTHED_IMPORTANCE,
    seed=None,
    map_batches=None,
    beta=None,
    eps_beta=None,
    bandwidth=None,
    instrumental_rate=None,
) -> BootstrapReplicates:
    """Draw the bootstrap replicates of the PR curve of a labeled sample.

    Parameters are those of :func:`bootstrap_bands` except ``delta``.

    Returns
    -------
    BootstrapReplicates
    """
    setup, seed_seq, sizes, _ = _prepare(
        scores,
        labels,
        owner="bootstrap_replicates",
        replicates=replicates,
        method=method,
        seed=seed,
        beta=beta,
        eps_beta=eps_beta,
        bandwidth=bandwidth,
        instrumental_rate=instrumental_rate,
    )
    replicated, _ = _run(setup, seed_seq, sizes, map_batches, owner="bootstrap_replicates")
    return replicated


def _prepare(
    scores, labels, *, owner, replicates, method, seed, beta, eps_beta, bandwidth, instrumental_rate
):
    replicates = check_int(replicates, name="replicates", owner=owner, low=1)
    method = check_choice(method, name="method", owner=owner, choices=METHODS)
    seed_seq = _seed_sequence(seed, owner=owner)
    if beta is None:
        beta = recall_grid(DEFAULT_EPS_BETA if eps_beta is None else eps_beta)
    else:
        if eps_beta is not None:
            raise ParameterError(
                f"The 'eps_beta' parameter of {owner} only shapes the default grid; pass either "
                "'beta' (an explicit recall grid) or 'eps_beta', not both."
            )
        beta = as_recall_levels(beta, owner=owner, include_one=False)
        if beta.ndim != 1 or beta.size == 0 or np.any(np.diff(beta) <= 0.0):
            raise ParameterError(
                f"The 'beta' parameter of {owner} must be a non-empty, strictly increasing 1-d "
                f"grid of recall levels in (0, 1). Got {beta!r} instead."
            )
    if method != SMOOTHED_IMPORTANCE:
        for name, value in (("bandwidth", bandwidth), ("instrumental_rate", instrumental_rate)):
            if value is not None:
                raise ParameterError(
                    f"The {name!r} parameter of {owner} applies to method='smoothed-importance' "
                    f"only; method={method!r} neither smooths nor reweights. Drop {name!r} or use "
                    "the smoothed importance bootstrap."
                )

    curve = EmpiricalPR.fit(scores, labels)
    n_pos, n = curve.n_positive, curve.n_positive + curve.n_negative
    if n_pos < 2:
        raise DataError(
            f"The sample of {owner} holds {n_pos} positive label; a bootstrap of the PR curve "
            "needs at least 2 positives (and far more for a useful band). Label more items."
        )
    default_h = _silverman(curve)  # also rejects a sample whose scores are all equal
    if n_pos < SMALL_SAMPLE_POSITIVES:
        warnings.warn(
            BootstrapWarning(
                f"The sample holds only {n_pos} positives: each bootstrap curve moves in steps "
                f"of 1/{n_pos} in recall and the bands are unreliable. Label more items."
            ),
            stacklevel=3,
        )
    prevalence = curve.prevalence
    log_pos = log_neg = 0.0
    if method == SMOOTHED_IMPORTANCE:
        if bandwidth is None:
            h = default_h
        else:
            h = check_float(bandwidth, name="bandwidth", owner=owner, low=0.0)
        if instrumental_rate is None:
            rate = default_instrumental_rate(n, prevalence)
        else:
            rate = _open_unit(instrumental_rate, name="instrumental_rate", owner=owner)
        log_pos = math.log(prevalence / rate)
        log_neg = math.log((1.0 - prevalence) / (1.0 - rate))
    else:
        h = 0.0
        rate = None if method == STRATIFIED else prevalence

    laws = [LawSource(s, h, n) for s in (curve.positive_scores, curve.negative_scores)]
    _warn_if_coarse(laws, n)
    setup = BootstrapSetup(
        positive_law=laws[0],
        negative_law=laws[1],
        n_positive=n_pos,
        n_negative=curve.n_negative,
        beta=beta,
        precision=curve.precision(beta),
        method=method,
        bandwidth=h,
        draw_rate=rate,
        log_ratio_positive=log_pos,
        log_ratio_negative=log_neg,
    )
    return setup, seed_seq, replicate_batch_sizes(replicates), curve


def _warn_if_coarse(laws: list[LawSource], n: int) -> None:
    moved = n * max(law.error_bound for law in laws)
    if moved > 1.0:
        warnings.warn(
            BootstrapWarning(
                f"The scores spread over so many smoothing bandwidths that the smoothed kernel is "
                f"tabulated coarsely: its error bound on the replicates' counts is {moved:.3g} items "
                f"(the goal is {_COUNT_ERROR:g}). "
                "Transform the scores (e.g. to ranks or logits), pass a larger 'bandwidth', or "
                "bandwidth=0 for the unsmoothed bootstrap."
            ),
            stacklevel=4,
        )


def _seed_sequence(seed, *, owner: str) -> np.random.SeedSequence:
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, np.random.SeedSequence):
        # A fresh copy: spawning mutates a SeedSequence, and a rerun must see the same children.
        return np.random.SeedSequence(
            seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ParameterError(
            f"The 'seed' parameter of {owner} must be None, a non-negative int or a "
            f"numpy.random.SeedSequence. Got {seed!r} instead."
        )
    return np.random.SeedSequence(int(seed))


class _InProcessBatches:
    """Replicate batches computed in this process when their result is asked for."""

    def __init__(self, setup, sizes, seeds):
        self._work = (setup, sizes, seeds)

    def result(self) -> list[ReplicateBatch]:
        return [run_replicate_batches(*self._work)]

    def cancel(self) -> None:
        """Nothing runs before :meth:`result`: nothing to release."""


def map_batches_in_process(setup: BootstrapSetup, sizes, seeds) -> _InProcessBatches:
    """The default ``map_batches``: every batch in this process, in order.

    A ``map_batches`` function starts the seeded batches ``run_replicate_batch(setup, sizes[i],
    seeds[i])`` and returns a handle whose ``result()`` waits for them and returns
    :class:`ReplicateBatch` objects holding them in batch order (one object may hold several
    consecutive batches, as :func:`run_replicate_batches` returns them), and whose ``cancel()``
    abandons them. :func:`prdist.dataflow.bands.submit_replicate_batches` is the Dask one.
    """
    return _InProcessBatches(setup, sizes, seeds)


def _run(setup, seed_seq, sizes, map_batches, *, owner: str, meanwhile=None):
    """Run the batches with ``map_batches``; return (replicates, ``meanwhile()``).

    ``meanwhile`` is work for this process while the batches run elsewhere.
    """
    if map_batches is None:
        map_batches = map_batches_in_process
    elif not callable(map_batches):
        raise ParameterError(
            f"The 'map_batches' parameter of {owner} must be a function (setup, sizes, seeds) "
            f"-> pending batches, or None to run in this process. Got {map_batches!r} instead."
        )
    pending = map_batches(setup, sizes, seed_seq.spawn(len(sizes)))
    try:
        extra = meanwhile() if meanwhile is not None else None
    except BaseException:
        pending.cancel()
        raise
    joined = join_batches(pending.result())
    result = BootstrapReplicates(
        beta=setup.beta,
        precision=setup.precision,
        replicate_precision=joined.precision,
        n_positive=joined.n_positive,
        log_weight=joined.log_weight,
        method=setup.method,
        bandwidth=setup.bandwidth,
        instrumental_rate=setup.draw_rate if setup.method == SMOOTHED_IMPORTANCE else None,
        prevalence=setup.n_positive / setup.n,
        n=setup.n,
        n_positive_sample=setup.n_positive,
        seed_entropy=int(seed_seq.entropy),
        batch_sizes=tuple(sizes),
        redraws=joined.redraws,
    )
    return result, extra


def bootstrap_bands(
    scores,
    labels,
    *,
    delta=0.05,
    replicates=1000,
    method=SMOOTHED_IMPORTANCE,
    seed=None,
    map_batches=None,
    beta=None,
    eps_beta=None,
    bandwidth=None,
    instrumental_rate=None,
) -> pd.DataFrame:
    """The in-process engine of :func:`prdist.bootstrap_bands`, which documents the parameters.

    Users call ``prdist.bootstrap_bands`` (:func:`prdist.dataflow.bands.bootstrap_bands`): the
    same bands, its replicate batches on a Dask cluster if given one. This function takes the
    same parameters, except that the batches run through ``map_batches`` instead of a client.

    Parameters
    ----------
    map_batches : callable, optional
        Runs the seeded replicate batches (:func:`map_batches_in_process`, the default);
        the result is bit-for-bit the same whatever runs them.

    Returns
    -------
    pandas.DataFrame
        The bands, as :func:`prdist.bootstrap_bands` describes them.
    """
    owner = "bootstrap_bands"
    delta = _open_unit(delta, name="delta", owner=owner)
    setup, seed_seq, sizes, curve = _prepare(
        scores,
        labels,
        owner=owner,
        replicates=replicates,
        method=method,
        seed=seed,
        beta=beta,
        eps_beta=eps_beta,
        bandwidth=bandwidth,
        instrumental_rate=instrumental_rate,
    )
    # The normal cross-check smooths with the bootstrap's kernel when there is one; on a cluster
    # it is computed while the workers draw the replicates.
    h = setup.bandwidth if setup.bandwidth > 0.0 else _silverman(curve)
    replicated, variance = _run(
        setup,
        seed_seq,
        sizes,
        map_batches,
        owner=owner,
        meanwhile=lambda: _plugin_variance(curve, setup.beta, h),
    )
    return replicated.bands(delta, normal_variance=variance)


# --------------------------------------------------------------------------------------------
# Weighted quantiles and the normal approximation
# --------------------------------------------------------------------------------------------


def weighted_quantile(values, weights, level):
    """Inverse of the weighted empirical cdf, along the first axis.

    The smallest value v such that the weights of the values <= v sum to at least
    ``level`` times the total weight. With equal weights this is the ceil(level B)-th smallest
    value.

    Parameters
    ----------
    values : array-like of shape (B,) or (B, k)
    weights : array-like of shape (B,)
        Non-negative, not all zero; need not be normalised.
    level : float
        In (0, 1].

    Returns
    -------
    float or ndarray of shape (k,)

    Examples
    --------
    >>> float(weighted_quantile([3.0, 1.0, 2.0, 4.0], [1, 1, 1, 1], 0.5))
    2.0
    >>> float(weighted_quantile([3.0, 1.0, 2.0, 4.0], [0, 0, 0, 1], 0.5))
    4.0
    """
    owner = "weighted_quantile"
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    level = check_float(level, name="level", owner=owner, low=0.0, high=1.0, low_open=True)
    if weights.ndim != 1 or values.shape[:1] != weights.shape or values.ndim not in (1, 2):
        raise ParameterError(
            f"The 'values' and 'weights' arguments of {owner} must have shapes (B,) or (B, k) and "
            f"(B,). Got {values.shape} and {weights.shape} instead."
        )
    if not (np.all(weights >= 0.0) and weights.sum() > 0.0 and np.isfinite(weights).all()):
        raise ParameterError(
            f"The 'weights' argument of {owner} must be finite, >= 0 and not all 0."
        )
    if np.all(weights == weights[0]):
        # Equal weights sum up alike in every order, so the quantile is one order statistic,
        # found by selection in O(B) instead of a sort.
        cumulative = np.cumsum(weights)
        first = int(np.argmax(cumulative >= level * cumulative[-1]))
        return np.partition(values, first, axis=0)[first]
    # Each column sorted as a contiguous row: sorting down the columns of a (B, k) array in
    # place is about twice as slow (strided reads), with the same result.
    rows = np.atleast_2d(values.T).copy()
    order = np.argsort(rows, axis=1, kind="stable")
    cumulative = np.cumsum(weights[order], axis=1)
    reached = cumulative >= level * cumulative[:, -1:]
    first = np.argmax(reached, axis=1)  # the last value always reaches the level
    quantile = np.take_along_axis(rows, order[np.arange(rows.shape[0]), first][:, None], axis=1)
    return quantile[0, 0] if values.ndim == 1 else quantile[:, 0]


def normal_pointwise_bands(precision, variance, n, *, delta=0.05) -> tuple[np.ndarray, np.ndarray]:
    """Normal-approximation pointwise intervals PR^ -/+ z_{1-delta/2} sqrt(variance / n).

    Parameters
    ----------
    precision : array-like of shape (k,)
        Centre (the empirical curve).
    variance : array-like of shape (k,)
        Asymptotic variance of sqrt(n) (PR^ - PR) at each recall: from a population model
        (``model.asymptotic_variance(beta)``) or :func:`plugin_asymptotic_variance`.
    n : int
        Sample size.
    delta : float, default=0.05
        Miscoverage of each interval.

    Returns
    -------
    (lower, upper) : tuple of ndarray of shape (k,), clipped to [0, 1]

    Examples
    --------
    >>> lo, hi = normal_pointwise_bands([0.5], [0.25], 100)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.402, 0.598)
    """
    owner = "normal_pointwise_bands"
    n = check_int(n, name="n", owner=owner, low=1)
    delta = _open_unit(delta, name="delta", owner=owner)
    precision = np.asarray(precision, dtype=np.float64)
    variance = np.asarray(variance, dtype=np.float64)
    if precision.shape != variance.shape or not np.all(np.isfinite(variance) & (variance >= 0.0)):
        raise ParameterError(
            f"The 'variance' argument of {owner} must be finite, >= 0 and shaped like "
            f"'precision' {precision.shape}. Got shape {variance.shape}."
        )
    half = special.ndtri(1.0 - delta / 2.0) * np.sqrt(variance / n)
    return np.clip(precision - half, 0.0, 1.0), np.clip(precision + half, 0.0, 1.0)


def plugin_asymptotic_variance(scores, labels, beta, *, bandwidth=None) -> np.ndarray:
    """Plug-in asymptotic variance of sqrt(n) (PR^(beta) - PR(beta)).

    sigma^2(beta) = PR^4/beta^2 [ (1-p)alpha^2/p^3 + (1-p)^2 s^2 beta(1-beta)/p^3
    + (1-p)alpha(1-alpha)/p^2 ] (Clémençon & Vayatis Eq. 9 as corrected by Hughes-Oliver), with
    the empirical PR^, alpha^ and p^ and the density ratio s(beta) = h(t)/g(t) at
    t = G^-1(1 - beta) from Gaussian kernel density estimates of both classes with the same
    bandwidth.

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
        The labeled sample.
    beta : array-like of shape (k,)
        Recall levels in (0, 1).
    bandwidth : float, optional
        Kernel bandwidth > 0; default :func:`silverman_bandwidth`.

    Returns
    -------
    ndarray of shape (k,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.random(4000) < 0.5
    >>> scores = rng.normal(labels * 1.0, 1.0)
    >>> plugin_asymptotic_variance(scores, labels, [0.5]).round(1).tolist()  # population: 0.73
    [0.7]
    """
    owner = "plugin_asymptotic_variance"
    beta = as_recall_levels(beta, owner=owner, include_one=False)
    curve = EmpiricalPR.fit(scores, labels)
    if bandwidth is None:
        h = _silverman(curve)
    else:
        h = check_float(bandwidth, name="bandwidth", owner=owner, low=0.0, low_open=True)
    return _plugin_variance(curve, beta, h)


def _plugin_variance(curve: EmpiricalPR, beta: np.ndarray, h: float) -> np.ndarray:
    p = curve.prevalence
    threshold = curve.threshold(beta)
    alpha = curve.alpha(beta)
    pr = curve.precision(beta)
    # The kernel estimate of g at a positive score includes that score's own kernel: never 0.
    slope = _kde(curve.negative_scores, threshold, h) / _kde(curve.positive_scores, threshold, h)
    return (pr**4 / beta**2) * (
        (1.0 - p) * alpha**2 / p**3
        + (1.0 - p) ** 2 * slope**2 * beta * (1.0 - beta) / p**3
        + (1.0 - p) * alpha * (1.0 - alpha) / p**2
    )


def _kde(sample: np.ndarray, points: np.ndarray, h: float) -> np.ndarray:
    """Gaussian kernel density estimate of ``sample`` at ``points`` (chunked to bound memory).

    The standardised distances are computed in float64 (nearby large scores keep their
    difference) and the kernel in float32, whose SIMD exp is some 30 times faster than numpy's
    float64 one; the relative error, ~1e-7, is far below the estimate's own.
    """
    points = np.asarray(points, dtype=np.float64)
    flat = points.ravel()
    out = np.empty(flat.size)
    chunk = max(1, _KDE_CHUNK_ELEMENTS // sample.size)
    for start in range(0, flat.size, chunk):
        z = (flat[start : start + chunk, None] - sample[None, :]) / h
        kernel = np.exp(np.multiply(z, z, out=z).astype(np.float32) * np.float32(-0.5))
        out[start : start + chunk] = kernel.sum(axis=1, dtype=np.float64)
    return (out / (sample.size * h * math.sqrt(2.0 * math.pi))).reshape(points.shape)
