"""The one way prdist runs work on Dask.

DESIGN. Stage functions never see the engine: a step (order, extract, select, compare) hands
this module a plain function and the items to map it over; this module decides where it runs.

- ``client=None`` always means *in-process*, with no Dask at all (not "Dask's current
  scheduler"): the same function over the same items, so the Dask path equals the in-memory one
  by construction. The passes (:func:`run_tasks`, :func:`map_reduce`) and the writers
  (:func:`run_all`) run their tasks on a few threads of this process (:data:`THREADS`): Parquet
  decoding and encoding and the NumPy kernels release the GIL for much of a task, and results are
  taken in item order, so they are the same on any number of threads.
- :func:`map_partitions` submits one task per item; objects shared by many tasks (the Parquet
  footers of :class:`~prdist.dataflow.io.parquet.Partition`, kilobytes each) are scattered to the
  cluster once, not embedded in every task.
- :func:`run_tasks` maps, reports progress, gathers, and raises the first task's exception
  (``client.gather`` does), releasing every future either way.
- :func:`run_all` and :func:`compute_all` (writers) wait for every task to end before raising
  the first error: a scheduler stops waiting at the first task that raises while the others
  keep writing, and the caller must see every write end before it removes what a failed one
  left.
- :func:`start_all` starts the tasks and returns at once, for a caller with work of its own
  meanwhile; its results are handed out as tasks end (copied into place while the rest still
  compute). With workers on this machine it scatters and gathers directly, not through the
  scheduler (:func:`gathers_directly`).
- :func:`map_reduce` merges the results in a tree (a histogram over every partition);
  :func:`map_shuffle` hashes every task's output into buckets and reduces each bucket in one
  task (the support shuffle of a comparison).

Runs once, in the user's session: the wiring here (scatter, submit, gather). Runs many times,
in tasks: the step's function and :func:`_call_with_footers`, which puts the footer back.
"""

from __future__ import annotations

import collections
import dataclasses
import ipaddress
import os
from concurrent.futures import ThreadPoolExecutor

from prdist.dataflow.io.parquet import Footer, Partition
from prdist.dataflow.engine.progress import ProgressLine, report_progress

__all__ = [
    "Started",
    "compute_all",
    "gathers_directly",
    "map_partitions",
    "map_reduce",
    "map_shuffle",
    "run_all",
    "run_tasks",
    "start_all",
    "worker_threads",
]

#: How many partial results one merge task combines in :func:`map_reduce`'s tree.
FAN_IN = 8

#: Threads of an in-process pass: one per core available to this process, at most 4 (a local
#: cluster's default number of workers).
THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _in_order(function, items, *args, **kwargs):
    """Yield ``function(item, *args, **kwargs)`` for every item, in item order, computed on
    :data:`THREADS` threads; at most two results per thread wait to be taken, so a caller that
    folds them holds a bounded number at once."""
    items = list(items)
    progress = ProgressLine(len(items), _label(function))
    threads = min(THREADS, len(items))
    pool = ThreadPoolExecutor(threads, thread_name_prefix="prdist-pass") if threads > 1 else None
    pending = collections.deque()
    try:
        for item in items:
            if pool is None:
                yield function(item, *args, **kwargs)
                progress.tick()
                continue
            pending.append(pool.submit(function, item, *args, **kwargs))
            if len(pending) >= 2 * threads:
                yield _taken(pending.popleft(), progress)
        while pending:
            yield _taken(pending.popleft(), progress)
    finally:
        progress.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)  # on an error: the queued tasks never start


def _taken(future, progress: ProgressLine):
    result = future.result()
    progress.tick()
    return result


def _all_in_process(function, items, *args, **kwargs) -> list:
    """``[function(item, *args, **kwargs) for item in items]`` on :data:`THREADS` threads; every
    task ends before the first failure in item order is raised (writers: see :func:`run_all`)."""
    items = list(items)
    threads = min(THREADS, len(items))
    if threads <= 1:
        return [function(item, *args, **kwargs) for item in items]
    with ThreadPoolExecutor(threads, thread_name_prefix="prdist-write") as pool:
        futures = [pool.submit(function, item, *args, **kwargs) for item in items]
    return [future.result() for future in futures]  # every task has ended: the pool was shut down


def _label(function) -> str:
    """The progress label of a step: ``_histogram_task`` -> "histogram"."""
    return function.__name__.strip("_").replace("_task", "").replace("_", " ")


def run_tasks(client, function, partitions, *args, broadcast=None):
    """Run ``function(partition, *args, **broadcast)`` for every partition: on ``client``, or in-process.

    Returns the results in the order of ``partitions``; the first failed task's exception is
    raised (after every future is released). ``broadcast``: keyword arguments every task
    shares, sent to every worker once (each worker then holds one object for all its tasks).
    """
    broadcast = dict(broadcast or {})
    if client is None:
        return list(_in_order(function, partitions, *args, **broadcast))
    shared = {name: client.scatter(value, broadcast=True, hash=False) for name, value in broadcast.items()}
    futures, shipped = map_partitions(client, function, partitions, *args, **shared)
    try:
        report_progress(futures, _label(function))
        return client.gather(futures)
    finally:
        for future in [*futures, *shipped, *shared.values()]:
            future.release()


def run_all(client, function, items, *args, broadcast=None) -> list:
    """``[function(item, *args, **broadcast) for item in items]``; every task ends before an error is raised.

    ``broadcast``: keyword arguments every task shares, sent to every worker once (and then
    unpickled once per worker, not per task).
    """
    broadcast = dict(broadcast or {})
    if client is None:
        return _all_in_process(function, items, *args, **broadcast)
    shared = {name: client.scatter(value, broadcast=True, hash=False) for name, value in broadcast.items()}
    futures = [client.submit(function, item, *args, **shared, pure=False) for item in items]
    try:
        return _gather_then_raise(client, futures)
    finally:
        for future in [*futures, *shared.values()]:
            future.release()


class Started:
    """Tasks started by :func:`start_all`: :meth:`as_completed` hands out their results."""

    def __init__(self, client, work, futures=(), shared=(), direct=False):
        self._client, self._work, self._direct = client, work, direct
        self._futures, self._shared = list(futures), list(shared)

    def as_completed(self):
        """Yield ``(index, result)`` as the tasks end (in-process: in order, each run when asked).

        The first failed task's exception is raised. Every task is released once the results
        are all out, or on :meth:`cancel`.
        """
        if self._client is None:
            function, items, args, broadcast = self._work
            for index, item in enumerate(items):
                yield index, function(item, *args, **broadcast)
            return
        from distributed import as_completed

        position = {future.key: index for index, future in enumerate(self._futures)}
        try:
            for future in as_completed(self._futures):
                yield position[future.key], self._client.gather(future, direct=self._direct)
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Release the tasks (those not started never run) and the shared arguments."""
        for future in [*self._futures, *self._shared]:
            future.release()


def start_all(client, function, items, *args, broadcast=None) -> Started:
    """Start ``function(item, *args, **broadcast)`` for every item; return without waiting.

    ``broadcast``: keyword arguments every task shares, sent to every worker once; a
    ``distributed.Future`` among them (a task's result, already on the cluster) is passed as it
    is, and released with the tasks. ``client=None`` starts nothing: each item runs in this
    process when :meth:`Started.as_completed` reaches it. Tasks are named after the function
    (``_replicate_batches`` -> "replicate_batches-...").
    """
    broadcast = dict(broadcast or {})
    items = list(items)
    if client is None:
        return Started(None, (function, items, args, broadcast))
    from distributed import Future  # here, like every import of distributed

    direct = gathers_directly(client)
    shared = {
        name: value if isinstance(value, Future)
        else client.scatter(value, broadcast=True, hash=False, direct=direct)
        for name, value in broadcast.items()
    }
    futures = client.map(function, items, *[[a] * len(items) for a in args],
                         key=function.__name__.strip("_"), pure=False, **shared)
    return Started(client, None, futures, shared.values(), direct)


def worker_threads(client) -> int:
    """Threads of every worker of ``client``'s cluster together (1 in-process)."""
    return 1 if client is None else max(1, sum(client.nthreads().values()))


def gathers_directly(client) -> bool:
    """Whether this client should send data to and fetch results from the workers directly.

    Dask's default for a client outside the cluster is through the scheduler, which a client can
    always reach, unlike the workers. A result then crosses two connections; with a local cluster
    both ends of the second one are in this process, which spends about 0.1 s of CPU per 80 MB
    (10^5 bootstrap curves) on that extra hop alone. So: the client's own
    ``direct_to_workers`` when set, otherwise directly when the scheduler and every worker
    listen on a loopback (or in-process) address, i.e. run on this machine.
    """
    if client.direct_to_workers is not None:
        return bool(client.direct_to_workers)
    return all(_on_this_machine(a) for a in [client.scheduler.address, *client.nthreads()])


def _on_this_machine(address: str) -> bool:
    from distributed.comm import parse_address  # here, like every import of distributed

    protocol, location = parse_address(address)
    if protocol == "inproc":
        return True
    host = location.rsplit(":", 1)[0].strip("[]")
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


def compute_all(client, graph) -> list:
    """Compute a Dask collection's partitions (``graph()`` returns delayed objects); every task
    ends before an error is raised.

    ``graph`` is called here, where the engine is chosen: ``client=None`` is in-process (Dask's
    synchronous scheduler, and a task-based shuffle, which needs no cluster), like every
    function of this module.
    """
    import dask  # here: reading a resource or a run (a committed rerun) does not import Dask

    if client is None:
        with dask.config.set({"dataframe.shuffle.method": "tasks"}):
            return list(dask.compute(*graph(), scheduler="sync"))
    futures = client.compute(graph())
    try:
        return _gather_then_raise(client, futures)
    finally:
        for future in futures:
            future.release()


def _gather_then_raise(client, futures) -> list:
    for future in futures:
        future.exception()  # waits for the task to end (on the future's own client), raises nothing
    return client.gather(futures)  # raises the first failed task's error, all of them ended


def map_reduce(client, function, merge, partitions, *, broadcast=None, **kwargs):
    """``merge`` of ``function(partition, **kwargs, **broadcast)`` over every partition.

    ``merge(*parts)`` must be associative and commutative in effect (counts, minima, maxima):
    in-process the parts are folded one at a time in partition order, on a cluster merged in a tree of
    :data:`FAN_IN` parts per task, so that no single task or the client holds them all.
    ``broadcast``: keyword arguments every task shares (a table of intervals), sent to every
    worker once.
    """
    broadcast = dict(broadcast or {})
    if client is None:
        total = None
        for part in _in_order(function, partitions, **kwargs, **broadcast):
            total = part if total is None else merge(total, part)
        return total
    shared = {name: client.scatter(value, broadcast=True, hash=False) for name, value in broadcast.items()}
    futures, footers = map_partitions(client, function, partitions, **kwargs, **shared)
    try:
        report_progress(futures, _label(function))
        while len(futures) > 1:
            futures = [client.submit(merge, *futures[i:i + FAN_IN], pure=False) for i in range(0, len(futures), FAN_IN)]
        return futures[0].result()
    finally:
        for future in [*futures, *footers, *shared.values()]:
            future.release()


def map_shuffle(client, groups, reduce, buckets: int, *, reduce_args=(), broadcast=None):
    """Map, then shuffle by bucket: per-item results, and one reduction per bucket.

    Parameters
    ----------
    client : distributed.Client or None
        None: in-process.
    groups : sequence of (function, items, args)
        ``function(item, *args, **broadcast)`` returns ``(result, pieces)``, ``pieces`` holding
        one piece per bucket (None for an empty one).
    reduce : callable
        ``reduce(*reduce_args, *pieces_of_bucket_b)``, the pieces in the order of the items.
    buckets : int
    broadcast : dict, optional
        Keyword arguments every task shares, sent to every worker once.

    Returns
    -------
    results : list
        Every item's result, groups in order.
    reduced : list
        One reduction per bucket.
    """
    broadcast = dict(broadcast or {})
    if client is None:
        outputs = [function(item, *args, **broadcast) for function, items, args in groups for item in items]
        return [o[0] for o in outputs], [reduce(*reduce_args, *[o[1][b] for o in outputs]) for b in range(buckets)]
    shared = {name: client.scatter(value, broadcast=True, hash=False) for name, value in broadcast.items()}
    futures, footers = [], []
    for function, items, args in groups:
        mapped, shipped = map_partitions(client, function, items, *args, **shared)
        futures += mapped
        footers += shipped
    results = [client.submit(_result, f, pure=False) for f in futures]
    reduced = [
        client.submit(reduce, *reduce_args, *[client.submit(_piece, f, b, pure=False) for f in futures], pure=False)
        for b in range(buckets)
    ]
    try:
        return client.gather(results), client.gather(reduced)
    finally:
        for future in [*futures, *results, *reduced, *footers, *shared.values()]:
            future.release()


def _result(output):
    return output[0]


def _piece(output, b: int):
    return output[1][b]


def map_partitions(client, function, items, *args, **kwargs):
    """``client.map`` of ``function(item, *args, **kwargs)`` over ``items``, footers sent once.

    A :class:`Partition` carries its file's footer (kilobytes; half a megabyte with row groups of
    2**11 rows), and a task graph with one copy per task grew to tens of megabytes. So each
    distinct footer is scattered to the cluster once, and every task gets its partition and the
    footer's future apart. Also for items ``(payload, {path: Footer})``. Returns (futures, the
    scattered footers' futures): release both when done.
    """
    footers: dict[int, Footer] = {}
    for item in items:
        for footer in _footers_in(item):
            footers.setdefault(id(footer), footer)
    shipped = dict(zip(footers, client.scatter(list(footers.values()), hash=False))) if footers else {}
    bare = [_without_footers(item, shipped) for item in items]
    # Tasks named after the function, not the wrapper: the dashboard and logs show the step.
    futures = client.map(_call_with_footers, [function] * len(bare), [b for b, _ in bare], [f for _, f in bare],
                         *[[a] * len(bare) for a in args], key=function.__name__.strip("_"), pure=False, **kwargs)
    return futures, list(shipped.values())


def _footers_in(item) -> list:
    if isinstance(item, Partition):
        return [] if item.footer is None else [item.footer]
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
        return [f for f in item[1].values() if isinstance(f, Footer)]
    return []


def _without_footers(item, shipped: dict):
    """(item with its footers taken out, what replaces them: a future, a dict of futures or None)."""
    if isinstance(item, Partition) and item.footer is not None:
        return dataclasses.replace(item, footer=None), shipped[id(item.footer)]
    if _footers_in(item):
        return (item[0], None), {path: shipped[id(f)] for path, f in item[1].items()}
    return item, None


def _call_with_footers(function, item, footers, *args, **kwargs):
    if isinstance(item, Partition) and footers is not None:
        item = dataclasses.replace(item, footer=footers)
    elif isinstance(item, tuple) and footers is not None:
        item = (item[0], footers)
    return function(item, *args, **kwargs)
