"""Bootstrap confidence bands for the functional PR curve (Clémençon & Vayatis 2009, Algorithm 1).

From an i.i.d. labeled sample (scores, 0/1 labels) the functional empirical PR curve

    PR^(beta) = p^ beta / (p^ beta + (1 - p^) alpha^(beta)),  alpha^(beta) = 1 - H^(G^-1(1 - beta))

(:mod:`prdist.curves`) is surrounded by a band that covers the population curve PR over
beta in [eps_beta, 1 - eps_beta] with probability about 1 - delta, uniformly (a sup-norm band), and
by pointwise intervals at every grid recall.

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

**Speed.** The bands need, per replicate and recall level, only the order statistic
k = n*+ - floor(beta n*+) of the positive bootstrap scores (the threshold G*^-1(1 - beta)) and the
number of negative bootstrap scores above it. No Python loop runs over items: replicates are drawn
as rows of a 2-d array (one generator call per class for a chunk of replicates), each row is
sorted once, the thresholds are a gather and the negatives above them one binary search per row.
Smoothing noise breaks the order of a resample, so a smoothed replicate costs n normal draws and
a sort of n scores; that is the floor of Algorithm 1 as written. The normals come from a
Box-Muller transform with SIMD trigonometry (:func:`_normal`), twice as fast as numpy's
ziggurat, which would otherwise be half the cost of a replicate; and the draws are made in
float32, which halves the memory traffic and the sort, whenever the rounding is under 1/16000
of the bandwidth (:func:`smoothed_draw_dtype`; otherwise float64). Without smoothing no sort is
needed at all: the multinomial counts of a resample over the once-sorted classes (a histogram of
the drawn indices) and their cumulative sums give the order statistics and the counts in O(n).

**Determinism.** Replicates are grouped into batches whose sizes depend only on (replicates, n)
(:func:`replicate_batch_sizes`); batch i draws from child i of
``numpy.random.SeedSequence(seed).spawn(k)``. The result is therefore bit-for-bit the same whether
the batches run in this process or on any number of Dask workers (``client=``, see
:mod:`prdist.dataflow.bands`), on one platform: workers on CPUs with other SIMD extensions or with
other numpy builds may round the logarithm and trigonometry of the smoothing noise differently in
the last bit.

The normal-approximation columns (:func:`plugin_asymptotic_variance`) are a cross-check: the
corrected asymptotic pointwise variance (Clémençon & Vayatis Eq. 9 as corrected by Hughes-Oliver)
with kernel density estimates plugged in.
"""

from __future__ import annotations

import math
import numbers
import threading
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from ._validation import check_choice, check_float, check_int
from .curves import EmpiricalPR, as_recall_levels, floor_fraction_of
from .errors import DataError, ParameterError

__all__ = [
    "METHODS",
    "BootstrapWarning",
    "BootstrapSetup",
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
    "run_replicate_batch",
    "silverman_bandwidth",
    "smoothed_draw_dtype",
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
#: Scores drawn per batch (replicates x n) stay under about this many (see replicate_batch_sizes).
_BATCH_ELEMENTS = 1 << 22
_MAX_BATCH_REPLICATES = 64
#: Within a batch, replicates are drawn and evaluated in chunks of about this many scores
#: (1 MB per float64 array), which keeps the working set in cache.
_CHUNK_ELEMENTS = 1 << 17
#: float32 draws when the score range is at most this many bandwidths: 3 x 2^-24 x 2^10 h
#: = 2^-14 h, the largest rounding error (see smoothed_draw_dtype).
_FLOAT32_MAX_RANGE = 1 << 10


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


def smoothed_draw_dtype(half_range: float, bandwidth: float) -> type[np.floating]:
    """Precision a smoothed replicate is drawn in: float32 when rounding is negligible.

    A smoothed draw is (x - centre) + h z with |x - centre| <= ``half_range`` and |z| < 5.8
    (:func:`_normal`). Evaluated in float32, it is off by at most a few units in the last place
    of R = half_range + 6h, i.e. about 3 R 2^-24. float32 is chosen when that is at most
    2^-14 h, so the kernel is perturbed by under 1/16000 of its own width (invisible against the
    bootstrap's Monte Carlo noise); float32 halves the memory traffic and the sort, the two
    costs of a smoothed replicate. Otherwise (scores spread over more than about a thousand
    bandwidths, or h = 0) the draws stay in float64.

    Examples
    --------
    >>> smoothed_draw_dtype(4.0, 0.1).__name__, smoothed_draw_dtype(4e3, 0.1).__name__
    ('float32', 'float64')
    """
    if bandwidth > 0.0 and half_range + 6.0 * bandwidth <= bandwidth * _FLOAT32_MAX_RANGE:
        return np.float32
    return np.float64


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


def replicate_batch_sizes(replicates, n) -> tuple[int, ...]:
    """Sizes of the seeded replicate batches: a function of (replicates, n) only.

    Batches hold at most about 2^22 drawn scores and 64 replicates: a batch is one Dask task,
    and that many scores take some tens of milliseconds, enough to amortise a task's overhead
    (about a millisecond) while leaving tens of tasks to share out. The number of batches is
    the smallest multiple of 8 that respects both limits (or ``replicates``, if smaller), and
    the replicates are spread over them as evenly as possible (sizes differ by at most one,
    larger first): 1, 2, 4 or 8 workers then get equal shares that end together. Never depends
    on the number of workers.

    Examples
    --------
    >>> sizes = replicate_batch_sizes(1000, 100_000)
    >>> len(sizes), sizes[0], sizes[-1]
    (32, 32, 31)
    >>> replicate_batch_sizes(100, 1000)
    (13, 13, 13, 13, 12, 12, 12, 12)
    >>> replicate_batch_sizes(5, 10**8)
    (1, 1, 1, 1, 1)
    """
    replicates = check_int(replicates, name="replicates", owner="replicate_batch_sizes", low=1)
    n = check_int(n, name="n", owner="replicate_batch_sizes", low=1)
    most = max(1, min(_MAX_BATCH_REPLICATES, _BATCH_ELEMENTS // n))
    batches = min(replicates, -(-replicates // (8 * most)) * 8)
    size, larger = divmod(replicates, batches)
    return (size + 1,) * larger + (size,) * (batches - larger)


# --------------------------------------------------------------------------------------------
# The replicate kernel
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BootstrapSetup:
    """Everything a worker needs to draw replicates: the sorted sample and the tuning.

    Built by :func:`bootstrap_replicates`; small enough to scatter once to every worker.

    Attributes
    ----------
    positive_scores, negative_scores : ndarray
        Each class's scores sorted increasingly (shapes (n+,) and (n-,)).
    draw_positive, draw_negative : ndarray
        The same scores minus ``draw_centre``, in the precision the smoothed kernel draws in
        (see :func:`smoothed_draw_dtype`): what a smoothed replicate resamples and adds noise to.
    draw_centre : float
        Midpoint of the score range, subtracted so that float32 draws keep their precision.
    negatives_at_or_below : ndarray of shape (n+,), int64
        Number of negative scores <= each positive score.
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

    positive_scores: np.ndarray
    negative_scores: np.ndarray
    draw_positive: np.ndarray
    draw_negative: np.ndarray
    draw_centre: float
    negatives_at_or_below: np.ndarray
    beta: np.ndarray
    precision: np.ndarray
    method: str
    bandwidth: float
    draw_rate: float | None
    log_ratio_positive: float
    log_ratio_negative: float

    @property
    def n_positive(self) -> int:
        return int(self.positive_scores.size)

    @property
    def n_negative(self) -> int:
        return int(self.negative_scores.size)

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


@dataclass(frozen=True, eq=False)
class _SortedSample:
    """Bootstrap scores of b replicates, one row each, sorted, padded with +inf."""

    n_positive: np.ndarray
    n_negative: np.ndarray
    positives: np.ndarray  # (b, max n*+)
    negatives: np.ndarray  # (b, max n*-)


@dataclass(frozen=True, eq=False)
class _CountedSample:
    """Unsmoothed resamples as cumulative multiplicities over the sorted original classes."""

    n_positive: np.ndarray
    n_negative: np.ndarray
    positive_cumcounts: np.ndarray  # (b, n+): resampled positives with index <= i
    negative_cumcounts: np.ndarray  # (b, n-)


def run_replicate_batch(
    setup: BootstrapSetup, size: int, seed: np.random.SeedSequence
) -> ReplicateBatch:
    """Draw ``size`` bootstrap replicates from ``seed`` and evaluate their PR curves.

    Pure and deterministic: the same (setup, size, seed) gives the same bits in any process of
    the same platform. The replicates are processed in chunks of about 2^17 drawn scores, so that
    the arrays of a chunk stay in cache, and the chunks reuse one set of buffers.

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
    rng = np.random.default_rng(seed)
    n_pos, redraws = _draw_positive_counts(setup, rng, size)
    precision = np.empty((size, setup.beta.size))
    rows = max(1, _CHUNK_ELEMENTS // setup.n)
    scratch = _thread_scratch()
    for start in range(0, size, rows):
        chunk = slice(start, start + rows)
        sample = _draw_sample(setup, rng, n_pos[chunk], scratch)
        precision[chunk] = _evaluate(sample, setup)
    scratch.release_if_large()
    log_weight = n_pos * setup.log_ratio_positive + (setup.n - n_pos) * setup.log_ratio_negative
    return ReplicateBatch(n_pos, log_weight, precision, redraws)


_SCRATCH = threading.local()


def _thread_scratch() -> _Scratch:
    """This thread's scratch buffers, kept from batch to batch (see :class:`_Scratch`)."""
    scratch = getattr(_SCRATCH, "buffers", None)
    if scratch is None:
        scratch = _SCRATCH.buffers = _Scratch()
    return scratch


class _Scratch:
    """Named buffers reused from chunk to chunk of a batch, and from batch to batch of a thread.

    A fresh large temporary costs a page fault per 4 kB page whenever the allocator hands memory
    back to the system after each free, as glibc does on Dask workers (their nanny sets
    MALLOC_TRIM_THRESHOLD_=65536); allocating every temporary anew made the kernel 1.7 (smoothed)
    to 2.2 (unsmoothed) times slower there than in a plain process, and fresh buffers for every
    batch still cost a worker 10 % against a plain process.
    """

    #: Buffers are kept for the thread's next batch only up to this many bytes in all: a
    #: chunk of 2^17 scores needs a few MB, a single replicate of a huge sample far more.
    KEEP_BYTES = 32 << 20

    def __init__(self):
        self._buffers: dict[str, np.ndarray] = {}

    def release_if_large(self) -> None:
        """Free the buffers if they hold more than :attr:`KEEP_BYTES`."""
        if sum(b.nbytes for b in self._buffers.values()) > self.KEEP_BYTES:
            self._buffers.clear()

    def array(self, name: str, size: int, dtype) -> np.ndarray:
        """A 1-d array of ``size`` elements, valid until the next request of ``name``."""
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size or buffer.dtype != dtype:
            # Sizes vary with the binomial count of positives: grow with headroom, so that a
            # new largest count does not mean a new buffer every time.
            buffer = self._buffers[name] = np.empty(size + size // 4, dtype=dtype)
        return buffer[:size]


def _draw_sample(
    setup: BootstrapSetup, rng: np.random.Generator, n_pos: np.ndarray, scratch: _Scratch
) -> _SortedSample | _CountedSample:
    """Draw the bootstrap samples with the given numbers of positives, one per replicate.

    The sample lives in ``scratch``: it is valid until the next draw with the same scratch.
    """
    n_neg = setup.n - n_pos
    if setup.bandwidth > 0.0:
        h = setup.bandwidth
        return _SortedSample(
            n_pos,
            n_neg,
            _smoothed_rows(setup.draw_positive, n_pos, h, rng, scratch, name="positives"),
            _smoothed_rows(setup.draw_negative, n_neg, h, rng, scratch, name="negatives"),
        )
    return _CountedSample(
        n_pos,
        n_neg,
        _resample_cumcounts(setup.n_positive, n_pos, rng, scratch, name="positives"),
        _resample_cumcounts(setup.n_negative, n_neg, rng, scratch, name="negatives"),
    )


def _evaluate(sample: _SortedSample | _CountedSample, setup: BootstrapSetup) -> np.ndarray:
    """Bootstrap curves PR*(beta) of the samples on the grid, shape (b, k)."""
    if isinstance(sample, _SortedSample):
        return _precision_from_sorted(sample, setup.beta)
    return _precision_from_counts(sample, setup)


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


def _smoothed_rows(values, counts, bandwidth, rng, scratch: _Scratch, *, name: str) -> np.ndarray:
    """Row r: counts[r] draws with replacement from ``values`` plus N(0, h^2) noise, sorted.

    Rows are padded with +inf up to the largest count. Every cell of the rectangle is drawn and
    the padding then overwritten: one pass per array instead of a scatter of the draws into
    ragged rows (the waste is a few binomial standard deviations per row). The rows have the
    dtype of ``values`` (float32 or float64, see :func:`smoothed_draw_dtype`).
    """
    b, width = counts.size, int(counts.max())
    index = _integers(rng, values.size, b * width, scratch)
    flat = scratch.array(name, b * width, values.dtype)
    # Indices are in range; mode="clip" spares the buffered copy that mode="raise" makes.
    np.take(values, index, out=flat, mode="clip")
    flat += _normal(rng, b * width, bandwidth, scratch, dtype=values.dtype)
    rows = flat.reshape(b, width)
    for r, count in enumerate(counts.tolist()):
        rows[r, count:] = np.inf
    rows.sort(axis=1)
    return rows


#: Bounded integers are drawn this many at a time into a reused buffer (numpy's
#: ``Generator.integers`` has no ``out``): 64 kB blocks stay clear of the page-fault cost above.
_INTEGER_BLOCK = 8192


def _integers(rng: np.random.Generator, high: int, size: int, scratch: _Scratch) -> np.ndarray:
    """``size`` uniform integers in [0, high), in the scratch buffer "index"."""
    out = scratch.array("index", size, np.int64)
    for start in range(0, size, _INTEGER_BLOCK):
        stop = min(size, start + _INTEGER_BLOCK)
        out[start:stop] = rng.integers(0, high, stop - start)
    return out


def _normal(
    rng: np.random.Generator, size: int, scale: float, scratch: _Scratch, *, dtype=np.float64
) -> np.ndarray:
    """N(0, scale^2) draws of ``dtype`` by the Box-Muller transform, twice the ziggurat's speed.

    z = scale sqrt(-2 log(1 - u)) (cos 2 pi v, sin 2 pi v) with u and v uniform on [0, 1). numpy
    evaluates float32 cos, sin and log with SIMD but float64 trigonometry one value at a time, so
    the angle v is always float32 (it moves a draw by under 1e-6 of itself, far below any
    smoothing bandwidth). For float64 draws u is float64, so the radius reaches 8.5 scale; for
    float32 draws everything is float32 and the radius stops at sqrt(2 log 2^24) = 5.77 scale:
    the kernel is then a Gaussian truncated at 5.77 standard deviations, which leaves out a mass
    of 8e-9. Returns a view of the scratch buffer "normal".
    """
    dtype = np.dtype(dtype)
    half = (size + 1) // 2
    radius = scratch.array("radius", half, dtype)
    rng.random(out=radius, dtype=dtype)
    np.subtract(1, radius, out=radius)
    np.log(radius, out=radius)
    radius *= -2
    np.sqrt(radius, out=radius)
    radius *= dtype.type(scale)
    angle = scratch.array("angle", half, np.float32)
    rng.random(out=angle, dtype=np.float32)
    angle *= np.float32(2.0 * np.pi)
    trig = scratch.array("trig", half, np.float32)
    z = scratch.array("normal", 2 * half, dtype)
    np.multiply(np.cos(angle, out=trig), radius, out=z[:half])
    np.multiply(np.sin(angle, out=trig), radius, out=z[half:])
    return z[:size]


def _resample_cumcounts(size, counts, rng, scratch: _Scratch, *, name: str) -> np.ndarray:
    """Row r: cumulative multiplicities of counts[r] draws with replacement from range(size)."""
    b = counts.size
    drawn = _integers(rng, size, int(counts.sum()), scratch)
    # One histogram for the whole chunk: offset each row's indices into its own block.
    start = 0
    for r, count in enumerate(counts.tolist()):
        drawn[start : start + count] += r * size
        start += count
    # np.add.at into a reused buffer: as fast as bincount, without a fresh array per chunk.
    cumcounts = scratch.array(name, b * size, np.int64)
    cumcounts.fill(0)
    np.add.at(cumcounts, drawn, 1)
    cumcounts = cumcounts.reshape(b, size)
    return np.cumsum(cumcounts, axis=1, out=cumcounts)


def _order_statistic_rank(n_pos: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """1-based rank k = n*+ - floor(beta n*+) of the threshold G*^-1(1 - beta), shape (b, k).

    The same rounding as :class:`prdist.curves.EmpiricalPR` (products within rounding of an
    integer count as that integer), so replicate 'the sample itself' reproduces PR^ exactly.
    """
    n_pos = n_pos[:, None]
    return np.maximum(n_pos - floor_fraction_of(beta, n_pos), 1)


def _precision_from_sorted(sample: _SortedSample, beta: np.ndarray) -> np.ndarray:
    n_pos = sample.n_positive
    rank = _order_statistic_rank(n_pos, beta)
    threshold = np.take_along_axis(sample.positives, rank - 1, axis=1)
    at_or_below = np.empty(threshold.shape, dtype=np.int64)
    for r in range(n_pos.size):  # one binary search per replicate, over its k thresholds
        # Padding (+inf) is never <= a finite threshold, so only real negatives are counted.
        at_or_below[r] = np.searchsorted(sample.negatives[r], threshold[r], side="right")
    false_positives = sample.n_negative[:, None] - at_or_below
    return _precision(n_pos, beta, false_positives)


def _precision_from_counts(sample: _CountedSample, setup: BootstrapSetup) -> np.ndarray:
    n_pos = sample.n_positive
    rank = _order_statistic_rank(n_pos, setup.beta)
    # The threshold of rank k is x+_(i) for the first i whose cumulative count reaches k.
    threshold_index = np.empty(rank.shape, dtype=np.int64)
    for r in range(n_pos.size):  # one binary search per replicate, over its k ranks
        threshold_index[r] = np.searchsorted(sample.positive_cumcounts[r], rank[r], side="left")
    # Negatives of the resample at or below x+_(i): the resampled copies of the original
    # negatives with index < negatives_at_or_below[i].
    below = setup.negatives_at_or_below[threshold_index]
    at_or_below = np.take_along_axis(sample.negative_cumcounts, np.maximum(below - 1, 0), axis=1)
    at_or_below[below == 0] = 0
    false_positives = sample.n_negative[:, None] - at_or_below
    return _precision(n_pos, setup.beta, false_positives)


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
    client=None,
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
    replicated, _ = _run(setup, seed_seq, sizes, client, owner="bootstrap_replicates")
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

    pos, neg = curve.positive_scores, curve.negative_scores
    lowest, highest = min(pos[0], neg[0]), max(pos[-1], neg[-1])
    centre = float(lowest + 0.5 * (highest - lowest))  # no overflow near the float64 limits
    dtype = smoothed_draw_dtype(max(centre - lowest, highest - centre), h)
    setup = BootstrapSetup(
        positive_scores=pos,
        negative_scores=neg,
        draw_positive=(pos - centre).astype(dtype),
        draw_negative=(neg - centre).astype(dtype),
        draw_centre=centre,
        negatives_at_or_below=curve.n_negative - curve.false_positives,
        beta=beta,
        precision=curve.precision(beta),
        method=method,
        bandwidth=h,
        draw_rate=rate,
        log_ratio_positive=log_pos,
        log_ratio_negative=log_neg,
    )
    return setup, seed_seq, replicate_batch_sizes(replicates, n), curve


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


def _run(setup, seed_seq, sizes, client, *, owner: str, meanwhile=None):
    """Run the batches, here or on ``client``; return (replicates, ``meanwhile()``).

    ``meanwhile`` is client-side work that runs while the cluster computes the batches.
    """
    seeds = seed_seq.spawn(len(sizes))
    if client is None:
        batches = [run_replicate_batch(setup, size, s) for size, s in zip(sizes, seeds)]
        extra = meanwhile() if meanwhile is not None else None
    else:
        # Imported here so that the core never imports Dask: the caller chose a cluster.
        from .dataflow.bands import submit_replicate_batches

        pending = submit_replicate_batches(client, setup, sizes, seeds, owner=owner)
        try:
            extra = meanwhile() if meanwhile is not None else None
        except BaseException:
            pending.cancel()
            raise
        batches = pending.result()
    n_pos = np.concatenate([b.n_positive for b in batches])
    log_weight = np.concatenate([b.log_weight for b in batches])
    result = BootstrapReplicates(
        beta=setup.beta,
        precision=setup.precision,
        replicate_precision=np.concatenate([b.precision for b in batches]),
        n_positive=n_pos,
        log_weight=log_weight,
        method=setup.method,
        bandwidth=setup.bandwidth,
        instrumental_rate=setup.draw_rate if setup.method == SMOOTHED_IMPORTANCE else None,
        prevalence=setup.n_positive / setup.n,
        n=setup.n,
        n_positive_sample=setup.n_positive,
        seed_entropy=int(seed_seq.entropy),
        batch_sizes=tuple(sizes),
        redraws=sum(b.redraws for b in batches),
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
    client=None,
    beta=None,
    eps_beta=None,
    bandwidth=None,
    instrumental_rate=None,
) -> pd.DataFrame:
    """Bootstrap confidence bands for the PR curve of a labeled i.i.d. sample.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite scores; higher means more likely positive.
    labels : array-like of shape (n,)
        0/1 labels, no missing value; at least 2 positives and 1 negative.
    delta : float, default=0.05
        Miscoverage: the sup-norm band covers the curve on the grid with probability ~1 - delta.
    replicates : int, default=1000
        Number of bootstrap replicates B.
    method : {"smoothed-importance", "stratified", "naive"}, default="smoothed-importance"
        Resampling scheme (see the module docstring).
    seed : None, int or numpy.random.SeedSequence, default=None
        Seed of the replicates. None draws fresh entropy, reported in ``attrs["seed_entropy"]``
        (pass it back as ``seed`` to reproduce the bands).
    client : distributed.Client, optional
        Run the replicate batches on this Dask cluster (:mod:`prdist.dataflow.bands`). The result
        is bit-for-bit the one computed without it.
    beta : array-like of shape (k,), optional
        Strictly increasing recall grid in (0, 1). Default: 101 levels on
        [eps_beta, 1 - eps_beta].
    eps_beta : float, optional
        Half-width of the excluded recall ends of the default grid, in (0, 0.5); default 0.05.
        Not allowed together with ``beta``.
    bandwidth : float, optional
        Smoothing bandwidth h >= 0 of the smoothed bootstrap (0: no smoothing). Default:
        :func:`silverman_bandwidth`. Smoothed importance bootstrap only.
    instrumental_rate : float, optional
        Instrumental positive rate p~ in (0, 1). Default: :func:`default_instrumental_rate`.
        Smoothed importance bootstrap only.

    Returns
    -------
    pandas.DataFrame
        One row per grid recall, float64 columns ``recall``, ``precision`` (PR^), ``band_lower``,
        ``band_upper`` (sup-norm band), ``pointwise_lower``, ``pointwise_upper`` (pointwise
        bootstrap intervals) and ``normal_lower``, ``normal_upper`` (normal approximation with
        the plug-in asymptotic variance, a cross-check). ``attrs`` holds the diagnostics: method,
        delta, replicates, sup_radius, ess, ess_fraction, expected_ess_fraction, bandwidth,
        instrumental_rate, prevalence, n, n_positive, seed_entropy, batches,
        zero_positive_redraws, recall_min, recall_max.

    Raises
    ------
    DataError
        Bad scores or labels, fewer than 2 positives, no negative, all scores equal.
    ParameterError
        A parameter outside its domain.

    Warns
    -----
    BootstrapWarning
        Fewer than 20 positives, or too few effective replicates beyond the quantile.
    prdist.curves.TiedScoresWarning
        Many tied positive scores (the empirical curve is then inconsistent).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.random(500) < 0.3
    >>> scores = rng.normal(labels * 1.5, 1.0)
    >>> bands = bootstrap_bands(scores, labels, replicates=200, seed=1)
    >>> list(bands.columns[:6])
    ['recall', 'precision', 'band_lower', 'band_upper', 'pointwise_lower', 'pointwise_upper']
    >>> bool((bands.band_lower <= bands.pointwise_lower).all())
    True
    >>> bands.attrs["ess_fraction"]          # 150 positives: no reweighting needed
    1.0
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
        client,
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
    order = np.argsort(values, axis=0, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=0)
    cumulative = np.cumsum(weights[order], axis=0)
    reached = cumulative >= level * cumulative[-1]
    first = np.argmax(reached, axis=0)  # the last row always reaches the level
    return np.take_along_axis(sorted_values, np.expand_dims(first, 0), axis=0)[0]


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
    chunk = max(1, _CHUNK_ELEMENTS // sample.size)
    for start in range(0, flat.size, chunk):
        z = (flat[start : start + chunk, None] - sample[None, :]) / h
        kernel = np.exp(np.multiply(z, z, out=z).astype(np.float32) * np.float32(-0.5))
        out[start : start + chunk] = kernel.sum(axis=1, dtype=np.float64)
    return (out / (sample.size * h * math.sqrt(2.0 * math.pi))).reshape(points.shape)
