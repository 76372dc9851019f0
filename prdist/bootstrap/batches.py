"""Seeded batches of bootstrap replicates: the pure kernel every runner of :mod:`prdist.bootstrap.replicates` calls.

A :class:`BootstrapSetup` holds the two class laws (:mod:`prdist.bootstrap.laws`) and the
tuning; :func:`run_replicate_batch` draws a batch of replicates from its own seed, exactly in law
and in O(k) random numbers per replicate whatever the sample size (the derivation is in
:mod:`prdist.bootstrap.replicates`, "Speed"). Batch sizes depend on the number of replicates only
(:func:`replicate_batch_sizes`), so the bits are the same however many workers run the batches:
this process (:func:`map_batches_in_process`) or a Dask cluster (:mod:`prdist.dataflow.run.bands`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from prdist._validation import check_int
from prdist.bootstrap.laws import EmpiricalLaw, LawSource, SmoothedLaw
from prdist.curves import floor_fraction_of

__all__ = [
    "BootstrapSetup",
    "ReplicateBatch",
    "join_batches",
    "map_batches_in_process",
    "replicate_batch_sizes",
    "run_replicate_batch",
    "run_replicate_batches",
    "tabulate_laws",
]

#: A batch (one Dask task) holds at most this many replicates: some 10 ms of work, which
#: amortises a task's overhead (about a millisecond) (see replicate_batch_sizes).
_MAX_BATCH_REPLICATES = 512


def replicate_batch_sizes(replicates) -> tuple[int, ...]:
    """Sizes of the seeded replicate batches: a function of ``replicates`` only.

    A batch is the unit of randomness: it draws from its own seed, so the batches, and with them
    the bits of every replicate, depend on ``replicates`` only, never on the number of workers (a
    Dask task runs a share of consecutive batches, see :mod:`prdist.dataflow.run.bands`). A batch
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

    Built by :func:`prdist.bootstrap.replicates.bootstrap_replicates` with the laws' sources, tabulated where the replicates
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
        One of :data:`prdist.bootstrap.replicates.METHODS`.
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
    abandons them. :func:`prdist.dataflow.run.bands.submit_replicate_batches` is the Dask one.
    """
    return _InProcessBatches(setup, sizes, seeds)
