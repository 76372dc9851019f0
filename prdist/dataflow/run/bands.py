"""Bootstrap replicates of the PR curve scattered over a Dask cluster.

The core (:mod:`prdist.bootstrap.replicates`) prepares a :class:`~prdist.bootstrap.batches.BootstrapSetup` (the
class laws and the tuning) and a list of seeded batches, and hands them to a ``map_batches``
function; :func:`submit_replicate_batches` is the one that runs them on the workers of a
``distributed.Client``, through :func:`prdist.dataflow.engine.executor.start_all`:

1. each class's scores (a :class:`~prdist.bootstrap.laws.LawSource`) are sent to one worker, which
   tabulates that class's law: the two laws side by side on two workers, and the client, which
   would otherwise tabulate both before any worker starts, does neither. Every worker then fetches
   the law it lacks (a smoothed law pickles without its evenly spaced nodes: 8 MB at n = 10^6);
   the rest of the setup (the grid, the tuning) is sent once to every worker;
2. the batches are dealt, in order, into :data:`TASKS_PER_THREAD` tasks per worker thread; a task
   runs :func:`prdist.bootstrap.batches.run_replicate_batches` on its share, batch i drawing from child i
   of ``SeedSequence(seed).spawn(k)`` (the same pure function the core calls in-process);
3. each share's curves, positive counts and log-weights are copied into place as its task ends,
   while the other tasks still compute, and the core turns them into bands (meanwhile the client
   computes the normal-approximation columns).

Batch boundaries depend only on ``replicates``, never on the number of workers or tasks, and every
batch is computed by the same deterministic code from its own seed, so the bands are bit-for-bit
the same on 1, 2 or N workers and in a single process (on one platform: see
:mod:`prdist.bootstrap.replicates`). Only the grouping of batches into tasks follows the cluster: per-task
costs on the scheduler and client (milliseconds each) stay small, 1e5 replicates on one worker
being 8 tasks, not 200.

Users reach this through :func:`bootstrap_bands`, :func:`bootstrap_band_result` and
:func:`bootstrap_replicates` here (also ``prdist.bootstrap_bands`` etc.): the core's functions with a ``client`` parameter. The core never
imports this module; ``prdist`` imports it on first use of those names.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Sequence

from typing import TYPE_CHECKING

import numpy as np

from prdist.bootstrap import replicates as bootstrap
from prdist.bootstrap.replicates import Bands, BootstrapReplicates
from prdist.bootstrap.batches import BootstrapSetup, ReplicateBatch, run_replicate_batches, tabulate_laws
from prdist.bootstrap.laws import LawSource
from prdist.errors import ParameterError

if TYPE_CHECKING:  # imported where a cluster is used: a call without one loads no distributed
    import pandas as pd
    from distributed import Client

    from prdist.dataflow.engine.executor import Started

__all__ = [
    "TASKS_PER_THREAD",
    "PendingBatches",
    "bootstrap_band_result",
    "bootstrap_bands",
    "bootstrap_replicates",
    "submit_replicate_batches",
]

#: Tasks per worker thread. Few: each task costs milliseconds of scheduler and client work (200
#: tasks of one batch each cost the client some 0.3 s of CPU). Not one: the workers must end
#: together on a shared machine, and each result is fetched while later tasks compute, so what
#: is left to fetch at the end is one task's share.
TASKS_PER_THREAD = 8


def bootstrap_bands(
    scores,
    labels,
    *,
    delta=0.05,
    replicates=1000,
    method=bootstrap.SMOOTHED_IMPORTANCE,
    seed=None,
    client: Client | None = None,
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
        Miscoverage: the sup-norm band covers the curve on the grid with probability ~1 - delta,
        as measured in docs/coverage.md (short of it with few positives or tied scores).
    replicates : int, default=1000
        Number of bootstrap replicates B.
    method : {"smoothed-importance", "stratified", "naive"}, default="smoothed-importance"
        Resampling scheme (see :mod:`prdist.bootstrap.replicates`).
    seed : None, int or numpy.random.SeedSequence, default=None
        Seed of the replicates. None draws fresh entropy, reported by
        :func:`bootstrap_band_result` in ``statistics.seed_entropy`` (pass it back as ``seed``
        to reproduce the bands).
    client : distributed.Client, optional
        Run the replicate batches on this Dask cluster; None (the default) runs them in this
        process and imports no Dask. The result is bit-for-bit the same either way.
    beta : array-like of shape (k,), optional
        Strictly increasing recall grid in (0, 1). Default: 101 levels on
        [eps_beta, 1 - eps_beta].
    eps_beta : float, optional
        Half-width of the excluded recall ends of the default grid, in (0, 0.5); default 0.05.
        Not allowed together with ``beta``.
    bandwidth : float, optional
        Smoothing bandwidth h >= 0 of the smoothed bootstrap (0: no smoothing). Default:
        :func:`prdist.bootstrap.asymptotics.silverman_bandwidth`. Smoothed importance bootstrap only.
    instrumental_rate : float, optional
        Instrumental positive rate p~ in (0, 1). Default: :func:`prdist.bootstrap.replicates.default_instrumental_rate`.
        Smoothed importance bootstrap only.

    Returns
    -------
    pandas.DataFrame
        One row per grid recall, float64 columns ``recall``, ``precision`` (PR^), ``band_lower``,
        ``band_upper`` (sup-norm band), ``pointwise_lower``, ``pointwise_upper`` (pointwise
        bootstrap intervals) and ``normal_lower``, ``normal_upper`` (normal approximation with
        the plug-in asymptotic variance, a cross-check). The diagnostics (effective sample size,
        bandwidth, seed entropy, ...) come with the same table from :func:`bootstrap_band_result`.

    Raises
    ------
    DataError
        Bad scores or labels, fewer than 2 positives, no negative, all scores equal.
    ParameterError
        A parameter outside its domain.

    Warns
    -----
    prdist.BootstrapWarning
        Fewer than 20 positives, or too few effective replicates beyond the quantile.
    prdist.TiedScoresWarning
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
    """
    mapper = _batch_mapper(client, "bootstrap_bands")
    return bootstrap.bootstrap_bands(
        scores, labels, delta=delta, replicates=replicates, method=method, seed=seed, map_batches=mapper,
        beta=beta, eps_beta=eps_beta, bandwidth=bandwidth, instrumental_rate=instrumental_rate,
    )


def bootstrap_band_result(scores, labels, *, client: Client | None = None, **options) -> Bands:
    """The bands of :func:`bootstrap_bands` with their statistics (``prdist.bootstrap_band_result``).

    Parameters
    ----------
    scores, labels, client, **options
        Every parameter of :func:`prdist.bootstrap_bands` (``delta``, ``replicates``, ``method``,
        ``seed``, ``beta``, ``eps_beta``, ``bandwidth``, ``instrumental_rate``), as it takes them.

    Returns
    -------
    prdist.Bands
        ``table``: the DataFrame :func:`bootstrap_bands` returns; ``statistics``: a
        :class:`prdist.BandStatistics` (method, delta, replicates, sup_radius, ess, ess_fraction,
        expected_ess_fraction, bandwidth, instrumental_rate, prevalence, n, n_positive,
        seed_entropy, batches, zero_positive_redraws, recall_min, recall_max).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.random(500) < 0.3
    >>> scores = rng.normal(labels * 1.5, 1.0)
    >>> result = bootstrap_band_result(scores, labels, replicates=200, seed=1)
    >>> result.statistics.ess_fraction          # 150 positives: no reweighting needed
    1.0
    >>> result.table.equals(bootstrap_bands(scores, labels, replicates=200, seed=1))
    True
    """
    mapper = _batch_mapper(client, "bootstrap_band_result")
    return bootstrap.bootstrap_band_result(scores, labels, map_batches=mapper, **options)


def bootstrap_replicates(
    scores, labels, *, client: Client | None = None, **options
) -> BootstrapReplicates:
    """Draw the bootstrap replicates of the PR curve of a labeled sample (``prdist.bootstrap_replicates``).

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
        The labeled i.i.d. sample, as :func:`prdist.bootstrap_bands` takes it.
    client : distributed.Client, optional
        Run the replicate batches on this Dask cluster; None runs them in this process.
    **options
        ``replicates``, ``method``, ``seed``, ``beta``, ``eps_beta``, ``bandwidth``,
        ``instrumental_rate``: as :func:`prdist.bootstrap_bands` takes them.

    Returns
    -------
    prdist.BootstrapReplicates
    """
    mapper = _batch_mapper(client, "bootstrap_replicates")
    return bootstrap.bootstrap_replicates(scores, labels, map_batches=mapper, **options)


def _batch_mapper(client, owner: str):
    if client is None:
        return None
    _check_client(client, owner)
    return functools.partial(submit_replicate_batches, client, owner=owner)


def _check_client(client, owner: str) -> None:
    from distributed import Client  # here, like every import of distributed

    if not isinstance(client, Client):
        raise ParameterError(
            f"The 'client' parameter of {owner} must be a distributed.Client (or None to run "
            f"in this process). Got {type(client).__name__} instead."
        )


class PendingBatches:
    """Replicate batches running on a cluster; :meth:`result` joins them in batch order."""

    def __init__(self, started: Started, share_sizes: Sequence[int]):
        self._started = started
        self._offsets = np.cumsum([0, *share_sizes])

    def result(self) -> list[ReplicateBatch]:
        """Wait for every task; one :class:`ReplicateBatch` of every batch, exactly as in-process."""
        try:
            return [self._joined()]
        finally:
            self.cancel()

    def _joined(self) -> ReplicateBatch:
        joined, redraws = None, 0
        for index, share in self._started.as_completed():
            if joined is None:
                joined = _allocated_like(share, int(self._offsets[-1]))
            rows = slice(self._offsets[index], self._offsets[index + 1])
            joined.n_positive[rows] = share.n_positive
            joined.log_weight[rows] = share.log_weight
            joined.precision[rows] = share.precision
            redraws += share.redraws
        return dataclasses.replace(joined, redraws=redraws)

    def cancel(self) -> None:
        """Release the batches, the laws and the scattered setup on the cluster."""
        self._started.cancel()


def _allocated_like(share: ReplicateBatch, replicates: int) -> ReplicateBatch:
    def rows_like(values):
        return np.empty((replicates, *values.shape[1:]), dtype=values.dtype)

    return ReplicateBatch(
        rows_like(share.n_positive), rows_like(share.log_weight), rows_like(share.precision), 0
    )


def submit_replicate_batches(
    client: Client,
    setup: BootstrapSetup,
    sizes: Sequence[int],
    seeds: Sequence[np.random.SeedSequence],
    *,
    owner: str = "submit_replicate_batches",
) -> PendingBatches:
    """Start seeded replicate batches on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
        A connected (synchronous) client.
    setup : BootstrapSetup
        The sample and tuning; its laws tabulated on the workers if it holds their sources.
    sizes : sequence of int
        Replicates per batch (:func:`prdist.bootstrap.batches.replicate_batch_sizes`).
    seeds : sequence of numpy.random.SeedSequence
        One seed per batch, aligned with ``sizes``.
    owner : str
        Name of the public function, for error messages.

    Returns
    -------
    PendingBatches

    Raises
    ------
    ParameterError
        ``client`` is not a ``distributed.Client``, or sizes and seeds differ in length.
    """
    from prdist.dataflow.engine.executor import start_all, worker_threads  # reads Parquet footers: pyarrow, fsspec

    _check_client(client, owner)
    if len(sizes) != len(seeds):
        raise ParameterError(
            f"{owner} needs one seed per batch: got {len(sizes)} batch sizes and "
            f"{len(seeds)} seeds."
        )
    shares = _shares(len(sizes), TASKS_PER_THREAD * worker_threads(client))
    laws = _tabulated_on_workers(client, setup)
    started = start_all(
        client,
        _replicate_batches,
        [(tuple(sizes[share]), tuple(seeds[share])) for share in shares],
        broadcast={"setup": dataclasses.replace(setup, positive_law=None, negative_law=None), **laws},
    )
    return PendingBatches(started, [sum(sizes[share]) for share in shares])


def _tabulated_on_workers(client: Client, setup: BootstrapSetup) -> dict:
    """The two class laws as futures, each tabulated on the worker its source is sent to.

    A setup whose laws are tabulated already has them sent to every worker as they are.
    """
    names = ("positive", "negative")
    laws = (setup.positive_law, setup.negative_law)
    if not all(isinstance(law, LawSource) for law in laws):
        tabulated = tabulate_laws(setup)
        return {f"{name}_law": getattr(tabulated, f"{name}_law") for name in names}
    from prdist.dataflow.engine.executor import gathers_directly

    sources = client.scatter(  # a list is dealt round-robin: one class per worker
        list(laws), hash=False, direct=gathers_directly(client)
    )
    futures = {
        f"{name}_law": client.submit(LawSource.tabulate, source, key=f"tabulate_{name}_law-{uuid.uuid4()}")
        for source, name in zip(sources, names)
    }
    for source in sources:
        source.release()  # kept on the cluster while its tabulation needs it
    return futures


def _shares(batches: int, tasks: int) -> list[slice]:
    """``batches`` consecutive batches dealt into min(batches, tasks) runs, sizes within one."""
    tasks = min(batches, tasks)
    bounds = [batches * i // tasks for i in range(tasks + 1)]
    return [slice(start, stop) for start, stop in zip(bounds, bounds[1:])]


def _replicate_batches(share, *, setup: BootstrapSetup, positive_law, negative_law) -> ReplicateBatch:
    """One task: a share (sizes, seeds) of consecutive batches, joined."""
    sizes, seeds = share
    setup = dataclasses.replace(setup, positive_law=positive_law, negative_law=negative_law)
    return run_replicate_batches(setup, sizes, seeds)
