"""The Dask cluster a run computes on: a local one by default, any scheduler by address."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator

import dask
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from ..errors import InputError, PrdistError

__all__ = ["LOCAL_CLUSTER_FROM_ITEMS", "WORKER_MALLOC_CONFIG", "QuietPrdistErrors", "dask_client", "one_cluster"]


#: Dask configuration for local clusters. distributed starts workers with
#: MALLOC_TRIM_THRESHOLD_=65536: glibc then hands freed memory back to the system at once, and
#: every large temporary NumPy array comes back as fresh pages, each a page fault (measured:
#: kernels 6-10x slower, a pass over a resource 1.6x slower than in a plain process). A 32 MiB
#: mmap threshold and a 128 MiB trim threshold restore in-process speed; a worker keeps at most
#: 128 MiB of freed memory for reuse. (deploy/dask.yaml sets the same for a deployed cluster.)
WORKER_MALLOC_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 1 << 25,
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 1 << 27,
}


def _error_names(cls=PrdistError) -> set[str]:
    return {cls.__name__}.union(*(_error_names(sub) for sub in cls.__subclasses__()))


class _NoComputeFailedForPrdistErrors(logging.Filter):
    """Drop a worker's "Compute Failed" record of a prdist error (its text and traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Compute Failed") or not isinstance(record.args, tuple) or len(record.args) < 4:
            return True
        return str(record.args[3]).split("(", 1)[0] not in _error_names()


class QuietPrdistErrors(WorkerPlugin):
    """Keep the workers of a local cluster from logging prdist's own errors.

    A task raising a prdist error (bad input found in the data) is reported by the driver, as one
    line; the worker's log of it, a multi-line record with the traceback on the user's terminal,
    only repeats it. Other failures are still logged by the workers.
    """

    name = "prdist-quiet-errors"

    def setup(self, worker) -> None:
        logger = logging.getLogger("distributed.worker")
        if not any(isinstance(f, _NoComputeFailedForPrdistErrors) for f in logger.filters):
            logger.addFilter(_NoComputeFailedForPrdistErrors())

    def teardown(self, worker) -> None:
        logger = logging.getLogger("distributed.worker")
        for f in [f for f in logger.filters if isinstance(f, _NoComputeFailedForPrdistErrors)]:
            logger.removeFilter(f)


#: Below this many items a pass runs in-process (``client=None``) unless a scheduler is named:
#: starting a local cluster (3-5 s of worker processes) costs more than the pass saves. Both paths
#: run the same kernels and give identical results (tests/test_runners.py).
LOCAL_CLUSTER_FROM_ITEMS = 8_000_000

# The clients of the innermost one_cluster() block, by (scheduler, workers).
_SHARED: list[tuple[dict, contextlib.ExitStack]] = []


@contextlib.contextmanager
def one_cluster() -> Iterator[None]:
    """Within this block, every :func:`dask_client` of one scheduler yields one client.

    A flow enters it once: its steps each ask for a client, and a local cluster starts at most
    once per run (when a step first needs it, so a run that needs none starts none) and stops at
    the end of the block.
    """
    with contextlib.ExitStack() as stack:
        _SHARED.append(({}, stack))
        try:
            yield
        finally:
            _SHARED.pop()


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, *, workers: int | None = None, items: int | None = None) -> Iterator[Client | None]:
    """Yield a ``distributed.Client``, or None where in-process computing is faster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``). Without one, Dask's own
        ``scheduler-address`` setting (``DASK_SCHEDULER_ADDRESS``) is used when set, as on a
        Kubernetes work pool; otherwise a local cluster of one single-threaded worker process per
        core is started and closed afterwards (single-threaded because the kernels are NumPy
        loops that hold the GIL between calls).
    workers : int, optional
        Number of local workers (default: the number of cores, at most 4).
    items : int, optional
        Size of the pass. Without a scheduler and below :data:`LOCAL_CLUSTER_FROM_ITEMS` items,
        None is yielded: the caller computes in-process.
    """
    scheduler = scheduler or dask.config.get("scheduler-address", None)
    if not scheduler and items is not None and items < LOCAL_CLUSTER_FROM_ITEMS:
        yield None
        return
    if not _SHARED:
        with _new_client(scheduler, workers) as client:
            yield client
        return
    clients, stack = _SHARED[-1]
    if (scheduler, workers) not in clients:
        clients[scheduler, workers] = stack.enter_context(_new_client(scheduler, workers))
    yield clients[scheduler, workers]


@contextlib.contextmanager
def _new_client(scheduler: str | None, workers: int | None) -> Iterator[Client]:
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise InputError(
                f"Could not reach the Dask scheduler at {scheduler!r} ({exc}). "
                "Check the address, or leave --scheduler out to use a local cluster."
            ) from None
        with client:  # its owner knows its dashboard: only a cluster started here announces one
            yield client
        return
    n = workers or max(1, min(4, os.cpu_count() or 1))
    # A local cluster's start/stop chatter is not news to the user; warnings still show.
    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        # The dashboard needs bokeh, an optional dependency: served (on a free port) when it is installed.
        dashboard = importlib.util.find_spec("bokeh") is not None
        with dask.config.set(WORKER_MALLOC_CONFIG), LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", scheduler_kwargs={"dashboard": dashboard}, silence_logs=logging.WARNING) as cluster, Client(cluster) as client:
            client.register_plugin(QuietPrdistErrors())
            if dashboard:
                print(f"prdist: Dask dashboard at {client.dashboard_link}", file=sys.stderr)
            yield client
    finally:
        quiet.setLevel(level)

