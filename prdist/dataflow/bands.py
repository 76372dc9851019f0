"""Bootstrap replicates of the PR curve scattered over a Dask cluster.

The core (:mod:`prdist.bootstrap`) prepares a :class:`~prdist.bootstrap.BootstrapSetup` (the
sorted labeled sample and the tuning) and a list of seeded batches; this module runs those batches
on the workers of a ``distributed.Client``:

1. the setup is scattered once to every worker (``broadcast=True``), so each batch task carries
   only its size and its ``SeedSequence``;
2. batch i runs :func:`prdist.bootstrap.run_replicate_batch` with child i of
   ``SeedSequence(seed).spawn(k)`` — the same pure function the core calls in-process;
3. the per-replicate curves, positive counts and log-weights are gathered in batch order and the
   core turns them into bands (meanwhile the client computes the normal-approximation columns).

Batch boundaries depend only on (replicates, n), never on the number of workers, and every batch
is computed by the same deterministic code from its own seed, so the bands are bit-for-bit the same
on 1, 2 or N workers and in a single process (on one platform: see :mod:`prdist.bootstrap`).

Users reach this through ``prdist.bootstrap_bands(..., client=client)``; the core imports this
module only when a client is passed, so ``import prdist`` never imports Dask.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from distributed import Client

from ..bootstrap import BootstrapSetup, ReplicateBatch, run_replicate_batch
from ..errors import ParameterError

__all__ = ["PendingBatches", "submit_replicate_batches"]


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
    if not isinstance(client, Client):
        raise ParameterError(
            f"The 'client' parameter of {owner} must be a distributed.Client (or None to run "
            f"in this process). Got {type(client).__name__} instead."
        )
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
