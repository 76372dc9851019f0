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
would inflate a pooled rule (:func:`~prdist.bootstrap.asymptotics.silverman_bandwidth`).

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
(:func:`prdist.bootstrap.batches._draw_false_positives`): n*+ i.i.d. draws from the positives' resampling law F+ have the
order statistics F+^-1(U_(r)), and the uniform order statistics U_(r) at k ranks are ratios of
sums of k + 1 independent Gamma variables; the negatives, independent of them, fall into the
k + 1 cells cut by the thresholds with multinomial counts. A replicate therefore costs O(k)
random numbers (tens of microseconds) whatever n. The resampling law of a class is its
empirical distribution (:class:`~prdist.bootstrap.laws.EmpiricalLaw`, exact) or, smoothed, that distribution convolved
with N(0, h^2) (:class:`~prdist.bootstrap.laws.SmoothedLaw`): a table built once in O(n + nodes) whose error is at most
phi(1) / (4 R^2) in every probability, R nodes per bandwidth chosen so that no expected count of
a replicate moves by more than a thousandth of an item: the bands move by far less than 1 % of
their width (the derivation is in :class:`~prdist.bootstrap.laws.SmoothedLaw`). The two laws are tabulated side by side
where the replicates are drawn, from their :class:`LawSource` (on a cluster, each on a worker).
What remains of a call is O(n) work on the sample (fitting the empirical curve, the bandwidth)
and, for the bands, weighted quantiles over the replicates (a selection when the weights are
equal, as they are unless the importance sampling reweights).

**Determinism.** Replicates are grouped into batches whose sizes depend only on ``replicates``
(:func:`replicate_batch_sizes`); batch i draws from child i of
``numpy.random.SeedSequence(seed).spawn(k)``. The result is therefore bit-for-bit the same whether
the batches run in this process or on any number of Dask workers (``map_batches``; the Dask one is
:mod:`prdist.dataflow.run.bands`, reached as ``prdist.bootstrap_bands(..., client=client)``), on one
platform: workers with other numpy builds may round the logarithms of the Gamma draws
differently in the last bit.

The normal-approximation columns (:func:`~prdist.bootstrap.asymptotics.plugin_asymptotic_variance`) are a cross-check: the
corrected asymptotic pointwise variance (Clémençon & Vayatis Eq. 9 as corrected by Hughes-Oliver)
with kernel density estimates plugged in.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from prdist._validation import check_choice, check_float, check_int
from prdist.bootstrap.batches import (
    BootstrapSetup,
    join_batches,
    map_batches_in_process,
    replicate_batch_sizes,
)
from prdist.bootstrap.laws import _COUNT_ERROR, LawSource
from prdist.curves import EmpiricalPR, as_recall_levels
from prdist.errors import DataError, ParameterError
from prdist.bootstrap.asymptotics import _plugin_variance, _silverman, normal_pointwise_bands

__all__ = [
    "METHODS",
    "BandStatistics",
    "Bands",
    "BootstrapReplicates",
    "BootstrapWarning",
    "bootstrap_band_result",
    "bootstrap_bands",
    "bootstrap_replicates",
    "default_instrumental_rate",
    "expected_ess_fraction",
    "recall_grid",
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


class BootstrapWarning(UserWarning):
    """The bootstrap ran, but its bands rest on little information (few positives, low ESS)."""


def _open_unit(value, *, name: str, owner: str) -> float:
    """Check a float in the open interval (0, 1)."""
    return check_float(
        value, name=name, owner=owner, low=0.0, high=1.0, low_open=True, high_open=True
    )


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


@dataclass(frozen=True, eq=False)
class BootstrapReplicates:
    """All bootstrap replicates of one sample, with their importance weights.

    Built by :func:`bootstrap_replicates`; :meth:`bands` turns them into confidence bands at any
    level without resampling, and :meth:`band_result` into the bands with their statistics.

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
        """Confidence bands at level 1 - delta: the table of :meth:`band_result`.

        Parameters
        ----------
        delta : float, default=0.05
            Miscoverage in (0, 1).
        normal_variance : array-like of shape (k,), optional
            Asymptotic variance of sqrt(n)(PR^ - PR) on the grid (a population model's, or
            :func:`~prdist.bootstrap.asymptotics.plugin_asymptotic_variance`); when given, the normal-approximation columns
            ``normal_lower`` and ``normal_upper`` are added.

        Returns
        -------
        pandas.DataFrame
            See :func:`prdist.bootstrap_bands`.
        """
        return self.band_result(delta, normal_variance=normal_variance).table

    def band_result(self, delta=0.05, *, normal_variance=None) -> Bands:
        """Confidence bands at level 1 - delta and their :class:`BandStatistics`.

        Parameters are those of :meth:`bands`; the statistics say how the bands were drawn and
        how much information they rest on (the effective sample size, the seed's entropy, ...).

        Returns
        -------
        Bands
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
        return Bands(frame, self._statistics(delta, radius, ess))

    def _statistics(self, delta: float, radius: float, ess: float) -> BandStatistics:
        return BandStatistics(
            method=self.method,
            delta=delta,
            replicates=self.replicates,
            sup_radius=radius,
            ess=ess,
            ess_fraction=ess / self.replicates,
            expected_ess_fraction=(
                expected_ess_fraction(self.n, self.prevalence, self.instrumental_rate)
                if self.instrumental_rate is not None
                else 1.0
            ),
            bandwidth=self.bandwidth,
            instrumental_rate=self.instrumental_rate,
            prevalence=self.prevalence,
            n=self.n,
            n_positive=self.n_positive_sample,
            seed_entropy=self.seed_entropy,
            batches=len(self.batch_sizes),
            zero_positive_redraws=self.redraws,
            recall_min=float(self.beta.min()),
            recall_max=float(self.beta.max()),
        )


@dataclass(frozen=True)
class BandStatistics:
    """How a set of bootstrap bands was drawn and how much information it rests on.

    ``prdist run --bands`` writes them into the manifest's ``bands`` (:meth:`to_dict`).

    Attributes
    ----------
    method : str
        The resampling scheme (:data:`METHODS`).
    delta : float
        Miscoverage of the bands.
    replicates : int
        Bootstrap replicates B.
    sup_radius : float
        Radius r(delta) of the sup-norm band (before clipping to [0, 1]).
    ess, ess_fraction : float
        Effective sample size of the importance weights, and its fraction of B.
    expected_ess_fraction : float
        What :func:`expected_ess_fraction` expected of it (1 without importance).
    bandwidth : float
        Smoothing bandwidth h (0: no smoothing).
    instrumental_rate : float or None
        p~ of the smoothed importance bootstrap; None for the other methods.
    prevalence : float
        Empirical prevalence p^ of the sample.
    n, n_positive : int
        Sample size and its positives.
    seed_entropy : int
        The seed's entropy: pass it back as ``seed`` to draw the same bands.
    batches : int
        Seeded replicate batches (:func:`replicate_batch_sizes`).
    zero_positive_redraws : int
        Bootstrap samples without a positive that were redrawn.
    recall_min, recall_max : float
        The ends of the recall grid.
    """

    method: str
    delta: float
    replicates: int
    sup_radius: float
    ess: float
    ess_fraction: float
    expected_ess_fraction: float
    bandwidth: float
    instrumental_rate: float | None
    prevalence: float
    n: int
    n_positive: int
    seed_entropy: int
    batches: int
    zero_positive_redraws: int
    recall_min: float
    recall_max: float

    def to_dict(self) -> dict:
        """The statistics as a JSON-ready dict, keyed by the attribute names."""
        return asdict(self)


@dataclass(frozen=True, eq=False)
class Bands:
    """Bootstrap bands and their statistics (:meth:`BootstrapReplicates.band_result`).

    Attributes
    ----------
    table : pandas.DataFrame
        The bands, one row per grid recall (the table :func:`prdist.bootstrap_bands` returns).
    statistics : BandStatistics
        How they were drawn and what they rest on.
    """

    table: pd.DataFrame
    statistics: BandStatistics


def bootstrap_replicates(scores, labels, *, map_batches=None, **options) -> BootstrapReplicates:
    """Draw the bootstrap replicates of the PR curve of a labeled sample.

    Parameters are those of :func:`bootstrap_band_result` except ``delta``.

    Returns
    -------
    BootstrapReplicates
    """
    owner = "bootstrap_replicates"
    setup, seed_seq, sizes, _ = _prepare(scores, labels, owner=owner, **options)
    replicated, _ = _run(setup, seed_seq, sizes, map_batches, owner=owner)
    return replicated


def _prepare(
    scores,
    labels,
    *,
    owner,
    replicates=1000,
    method=SMOOTHED_IMPORTANCE,
    seed=None,
    beta=None,
    eps_beta=None,
    bandwidth=None,
    instrumental_rate=None,
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


def bootstrap_band_result(scores, labels, *, delta=0.05, map_batches=None, **options) -> Bands:
    """The in-process engine of :func:`prdist.bootstrap_band_result`: the bands and their statistics.

    Users call ``prdist.bootstrap_band_result`` or ``prdist.bootstrap_bands``
    (:mod:`prdist.dataflow.run.bands`, which documents the parameters): the same bands, their
    replicate batches on a Dask cluster if given one. This function takes the same parameters,
    except that the batches run through ``map_batches`` instead of a client.

    Parameters
    ----------
    map_batches : callable, optional
        Runs the seeded replicate batches (:func:`map_batches_in_process`, the default);
        the result is bit-for-bit the same whatever runs them.

    Returns
    -------
    Bands
    """
    return _band_result(scores, labels, "bootstrap_band_result", delta, map_batches, options)


def bootstrap_bands(scores, labels, *, delta=0.05, map_batches=None, **options) -> pd.DataFrame:
    """The table of :func:`bootstrap_band_result` (same parameters): what
    :func:`prdist.bootstrap_bands` returns, computed in this process or through ``map_batches``."""
    return _band_result(scores, labels, "bootstrap_bands", delta, map_batches, options).table


def _band_result(scores, labels, owner: str, delta, map_batches, options: dict) -> Bands:
    delta = _open_unit(delta, name="delta", owner=owner)
    setup, seed_seq, sizes, curve = _prepare(scores, labels, owner=owner, **options)
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
    return replicated.band_result(delta, normal_variance=variance)


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
