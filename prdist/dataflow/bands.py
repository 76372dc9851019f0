"""Bootstrap replicates of the PR curve scattered over a Dask cluster.

The core (:mod:`prdist.bootstrap`) prepares a :class:`~prdist.bootstrap.BootstrapSetup` (the
class laws and the tuning) and a list of seeded batches, and hands them to a ``map_batches``
function; :func:`submit_replicate_batches` is the one that runs them on the workers of a
``distributed.Client``:

1. the setup is scattered once to every worker (``broadcast=True``), so each batch task carries
   only its size and its ``SeedSequence``;
2. batch i runs :func:`prdist.bootstrap.run_replicate_batch` with child i of
   ``SeedSequence(seed).spawn(k)`` — the same pure function the core calls in-process;
3. the per-replicate curves, positive counts and log-weights are gathered in batch order and the
   core turns them into bands (meanwhile the client computes the normal-approximation columns).

Batch boundaries depend only on (replicates, n), never on the number of workers, and every batch
is computed by the same deterministic code from its own seed, so the bands are bit-for-bit the same
on 1, 2 or N workers and in a single process (on one platform: see :mod:`prdist.bootstrap`).

Users reach this through :func:`bootstrap_bands` and :func:`bootstrap_replicates` here (also
``prdist.bootstrap_bands``): the core's functions with a ``client`` parameter. The core never
imports this module; ``prdist`` imports it on first use of those names.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from distributed import Client

from .. import bootstrap
from ..bootstrap import BootstrapReplicates, BootstrapSetup, ReplicateBatch, run_replicate_batch
from ..errors import ParameterError

__all__ = ["PendingBatches", "bootstrap_bands", "bootstrap_replicates", "submit_replicate_batches"]


def bootstrap_bands(scores, labels, *, client: Client | None = None, **options) -> pd.DataFrame:
    """:func:`prdist.bootstrap.bootstrap_bands`, its batches on ``client``'s workers if given.

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
        The labeled i.i.d. sample.
    client : distributed.Client, optional
        Run the replicate batches on this Dask cluster; None runs them in this process. The
        result is bit-for-bit the same either way.
    **options
        ``delta``, ``replicates``, ``method``, ``seed``, ``beta``, ``eps_beta``, ``bandwidth``,
        ``instrumental_rate``: see :func:`prdist.bootstrap.bootstrap_bands`.
    """
    mapper = _batch_mapper(client, "bootstrap_bands")
    return bootstrap.bootstrap_bands(scores, labels, map_batches=mapper, **options)


def bootstrap_replicates(
    scores, labels, *, client: Client | None = None, **options
) -> BootstrapReplicates:
    """:func:`prdist.bootstrap.bootstrap_replicates`, its batches on ``client`` if given."""
    mapper = _batch_mapper(client, "bootstrap_replicates")
    return bootstrap.bootstrap_replicates(scores, labels, map_batches=mapper, **options)


def _batch_mapper(client, owner: str):
    if client is None:
        return None
    _check_client(client, owner)
    return functools.partial(submit_replicate_batches, client, owner=owner)


def _check_client(client, owner: str) -> None:
    if not isinstance(client, Client):
        raise ParameterError(
            f"The 'client' parameter of {owner} must be a distributed.Client (or None to run "
            f"in this process). Got {type(client).__name__} instead."
        )


class PendingBatches:
    """Replicate batches running on a cluster; :meth:`result` gathers them in batch order."""

    def __init__(self, client: Client, setup_future, futures):
        self._client = client
        self._futures = [*futures, setup_future]

    def result(self) -> list[ReplicateBatch]:
        """Wait for every batch; ``result()[i]`` is batch i exactly as computed in-process."""
        try:
            return self._client.gather(self._futures[:-1])
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Release the batches and the scattered sample on the cluster."""
        self._client.cancel(self._futures)


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
        The sample and tuning, scattered once to every worker.
    sizes : sequence of int
        Replicates per batch (:func:`prdist.bootstrap.replicate_batch_sizes`).
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
    _check_client(client, owner)
    if len(sizes) != len(seeds):
        raise ParameterError(
            f"{owner} needs one seed per batch: got {len(sizes)} batch sizes and "
            f"{len(seeds)} seeds."
        )
    setup_future = client.scatter(setup, broadcast=True, hash=False)
    futures = client.map(
        run_replicate_batch,
        [setup_future] * len(sizes),
        list(sizes),
        list(seeds),
        pure=False,
    )
    return PendingBatches(client, setup_future, futures)
