"""Where a run computes: in this process by default, on any Dask scheduler named by address.

Without a scheduler the passes run in-process on a few threads (:mod:`prdist.dataflow.engine.executor`);
a local cluster of worker processes starts only for passes of :data:`LOCAL_CLUSTER_FROM_ITEMS`
items or more. Dask and distributed are imported only where a cluster is used.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator

from prdist.errors import InputError, PrdistError

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


def _quiet_plugin_class():
    from distributed.diagnostics.plugin import WorkerPlugin  # here: a run without a cluster never imports distributed

    class QuietPrdistErrors(WorkerPlugin):
        """Keep the workers of a local cluster from logging prdist's own errors.

        A task raising a prdist error (bad input found in the data) is reported by the driver, as
        one line; the worker's log of it, a multi-line record with the traceback on the user's
        terminal, only repeats it. Other failures are still logged by the workers.
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

    QuietPrdistErrors.__module__ = __name__
    return QuietPrdistErrors


def __getattr__(name: str):
    # QuietPrdistErrors subclasses distributed's WorkerPlugin: made on first use (PEP 562).
    if name == "QuietPrdistErrors":
        globals()[name] = value = _quiet_plugin_class()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Below this many items a pass runs in-process, on a few threads (``client=None``;
#: :data:`prdist.dataflow.engine.executor.THREADS`), unless a scheduler is named. Measured on 2 cores
#: (benchmarks/README.md): at 10^8 items two threads select the plan's items in 2.9-3.0 s and
#: extract them from a sorted resource in 0.6-0.7 s, where a cluster of two single-threaded
#: worker processes takes 3.3-3.7 s and 0.8-0.9 s plus 0.9 s to start (and its imports): worker
#: processes did not pay at any size measured. Above 2^31 items a pass takes minutes, the start
#: is noise, and worker processes escape the GIL. Both paths run the same kernels and give
#: identical results (tests/integration/test_runners.py).
LOCAL_CLUSTER_FROM_ITEMS = 1 << 31

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
def dask_client(scheduler: str | None = None, *, workers: int | None = None, items: int | None = None) -> Iterator:
    """Yield a ``distributed.Client``, or None where in-process computing is faster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``). Without one, Dask's own
        ``scheduler-address`` setting (``DASK_SCHEDULER_ADDRESS``) is used when set, as on a
        Kubernetes work pool; otherwise, for a pass of :data:`LOCAL_CLUSTER_FROM_ITEMS` items or
        more, a local cluster of one single-threaded worker process per core is started and
        closed afterwards (single-threaded workers: a pass's parallelism is its tasks, spread over
        the worker processes).
    workers : int, optional
        Number of local workers (default: the number of cores, at most 4).
    items : int, optional
        Size of the pass. Without a scheduler, and without ``items`` or below
        :data:`LOCAL_CLUSTER_FROM_ITEMS` of them, None is yielded: the caller computes in-process.
    """
    scheduler = scheduler or _configured_scheduler()
    if not scheduler and (items is None or items < LOCAL_CLUSTER_FROM_ITEMS):
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


def _configured_scheduler() -> str | None:
    """Dask's ``scheduler-address`` setting; Dask is imported to read it only where a ``DASK_*``
    variable or a Dask configuration directory may set it (importing it costs a tenth of a second)."""
    directories = [os.environ.get("DASK_ROOT_CONFIG", "/etc/dask"), os.path.join(sys.prefix, "etc", "dask"),
                   os.path.join(os.path.expanduser("~"), ".config", "dask")]
    if not any(name.startswith("DASK_") for name in os.environ) and not any(os.path.isdir(d) for d in directories):
        return None
    import dask

    return dask.config.get("scheduler-address", None)


@contextlib.contextmanager
def _new_client(scheduler: str | None, workers: int | None):
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise InputError(
                f"Could not reach the Dask scheduler at {scheduler!r} ({exc}). "
                "Check the address, or leave --scheduler out to compute locally."
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
            client.register_plugin(__getattr__("QuietPrdistErrors")())  # the one class, made on first use
            if dashboard:
                print(f"prdist: Dask dashboard at {client.dashboard_link}", file=sys.stderr)
            yield client
    finally:
        quiet.setLevel(level)

