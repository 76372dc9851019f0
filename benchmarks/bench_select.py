"""Benchmark: the PAULA plan's items of an unsorted resource, sort-free selection against a Dask sort.

Claim measured (in one run, on identical clusters, the same Parquet files): extracting the items at
the ranks of a PAULA plan (eps 0.03, window 100) from an *unsorted* resource with
``prdist.dataflow.ranks.select.select_ranks`` (radix selection: a few streaming passes, no sort, no
shuffle) is >= 8x faster than the obvious way with Dask —
``dask.dataframe.read_parquet(...).sort_values("score", ascending=False)``, persisted, then the
same ranks taken from the sorted partitions (partition lengths give every partition's first
rank) — and holds far less memory per worker.

The resource is a shuffled synthetic one (``write_synthetic(order="shuffled")``: binormal
scores, continuous, so ties have probability ~0 and both methods must return the same item at
every planned rank; the script checks it, and tells apart a mismatch caused by a tied score).
Both methods read the key, score and label columns.

Cluster: ``LocalCluster`` of 2 worker processes x 1 thread, configured as prdist configures its
own local clusters (``prdist.dataflow.engine.cluster.WORKER_MALLOC_CONFIG``: a 32 MiB glibc mmap
threshold, which both methods get), ``--memory-limit`` per worker (the
nanny restarts a worker above 95 % of it; Dask gives up on a task after 3 such deaths). Every
measured phase gets a new cluster of that configuration, started (and its workers' imports done)
before the clock starts, so every phase starts from idle workers. Peak memory
is the resident set size of each worker process, sampled from this process with psutil every
0.2 s (the workers are not disturbed: a busy worker's event loop would delay ``client.run``).
The sort gets ``--timeout`` seconds; a timeout or failure is recorded as its result.

Usage::

    python benchmarks/bench_select.py                  # n = 1e7 and 1e8 (~2.4 GB of Parquet)
    python benchmarks/bench_select.py --quick          # n = 1e6, to try it out
    python benchmarks/bench_select.py --n 10000000 --repeats 3 --data-dir /var/tmp/bench

The load average is printed with every phase: with 2 cores, a load well above 2 means other
processes took CPU from the run, and its times are contaminated (rerun then; ``--data-dir``
keeps the written resources for a rerun).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import threading
import time

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
from distributed import Client, LocalCluster

from prdist import population
from prdist.dataflow.engine.cluster import WORKER_MALLOC_CONFIG
from prdist.dataflow import open_resource
from prdist.dataflow.ranks.select import selection
from prdist.dataflow.synth import SYNTH_MARKER, write_synthetic
from prdist.paula.plan import plan_paula

MODEL = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)
COLUMNS = ["key", "score", "label"]
#: Parquet bytes per row of a synthetic resource (key, score, label; measured: 16.2), with room.
BYTES_PER_ROW = 20


class PeakRSS:
    """Sample the resident set size of some processes in a background thread; keep the peaks."""

    def __init__(self, pids, interval=0.2):
        self.processes = [psutil.Process(pid) for pid in pids]
        self.interval = interval
        self.peaks = [0] * len(self.processes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        for i, process in enumerate(self.processes):
            try:
                self.peaks[i] = max(self.peaks[i], process.memory_info().rss)
            except psutil.NoSuchProcess:  # a worker killed by its nanny: its peak is kept
                pass

    def _run(self):
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def _warm_up():
    import dask.dataframe  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import prdist.dataflow.ranks.select  # noqa: F401


@contextlib.contextmanager
def fresh_cluster(workers: int, memory_limit: str):
    """A new LocalCluster of single-threaded worker processes, workers warmed up; yields (client, pids).

    A new cluster for every phase, so that each starts from idle workers with nothing left over
    from the phase before (``Client.restart`` would do the same, but it hung now and then here:
    restarted workers did not reconnect within its 120 s timeout).
    """
    with dask.config.set(WORKER_MALLOC_CONFIG), LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, memory_limit=memory_limit, dashboard_address=":0"
    ) as cluster, Client(cluster) as client:
        client.run(_warm_up)
        yield client, sorted(client.run(os.getpid).values())


def load() -> float:
    return os.getloadavg()[0]


def resource_path(data_dir: str, n: int, seed: int) -> str:
    return os.path.join(data_dir, f"shuffled-n{n}-seed{seed}")


def ensure_resource(client, data_dir: str, n: int, seed: int) -> tuple[str, float | None]:
    """The shuffled resource of n rows: reused if a complete one exists, else written now."""
    path = resource_path(data_dir, n, seed)
    if os.path.exists(os.path.join(path, SYNTH_MARKER)):
        return path, None
    if os.path.exists(path):
        shutil.rmtree(path)  # an interrupted write
    need, free = n * BYTES_PER_ROW, shutil.disk_usage(data_dir).free
    if need > free * 0.8:
        raise SystemExit(f"n = {n:,} needs about {need / 1e9:.1f} GB and {data_dir} has {free / 1e9:.1f} GB free.")
    started = time.perf_counter()
    write_synthetic(MODEL, n=n, out=path, order="shuffled", seed=seed, client=client)
    return path, time.perf_counter() - started


def paula_select(path: str, client):
    """PAULA's way: open (metadata only), plan, select the planned ranks without a sort."""
    resource = open_resource(path, label="label")
    plan = plan_paula(resource.n, eps=0.03, window=100)
    return plan, selection(resource, plan.ranks, client=client)


def _take(frame: pd.DataFrame, positions: np.ndarray) -> pd.DataFrame:
    return frame.iloc[positions]


def dask_sort_select(path: str, ranks: np.ndarray, client) -> pd.DataFrame:
    """The peer: a Dask sort by descending score, persisted, then the ranks by position."""
    frame = dd.read_parquet(path, columns=COLUMNS)
    ordered = client.persist(frame.sort_values("score", ascending=False))
    lengths = np.asarray(ordered.map_partitions(len).compute(), dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)))
    positions = ranks - 1
    owner = np.searchsorted(starts, positions, side="right") - 1
    parts = ordered.to_delayed()
    takes = [dask.delayed(_take)(parts[p], positions[owner == p] - starts[p]) for p in np.unique(owner).tolist()]
    taken = pd.concat(client.compute(takes, sync=True), ignore_index=True)
    taken.insert(0, "rank", ranks)
    return taken


def run_with_timeout(fn, timeout: float):
    """Run fn() in a thread; return (result, None) or (None, what went wrong).

    On timeout the thread is left behind: the caller then closes the cluster, which fails the
    thread's computation and ends it.
    """
    outcome = {}

    def target():
        try:
            outcome["result"] = fn()
        except BaseException as exc:  # recorded as the result: a sort that cannot finish is a finding
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return None, f"timed out after {timeout:.0f} s"
    if "error" in outcome:
        exc = outcome["error"]
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        return None, f"failed: {type(exc).__name__}: {first_line}"[:300]
    return outcome["result"], None


def compare(paula: pd.DataFrame, peer: pd.DataFrame) -> str:
    """Same item at every planned rank? Mismatches at tied scores are tie-break differences."""
    if len(paula) != len(peer) or not np.array_equal(paula["rank"].to_numpy(), peer["rank"].to_numpy()):
        return "DIFFERENT ranks returned"
    same_key = paula["key"].to_numpy() == peer["key"].to_numpy()
    same_score = paula["score"].to_numpy() == peer["score"].to_numpy()
    same_label = paula["label"].to_numpy() == peer["label"].to_numpy()
    if same_key.all() and same_label.all():
        return f"identical keys, scores and labels at all {len(paula):,} ranks"
    if not same_score.all():
        return f"DIFFERENT: {int((~same_score).sum())} ranks hold different scores"
    return (f"same scores at all ranks; {int((~same_key).sum())} ranks hold other keys of a tied score "
            "(the tie-breaks differ: prdist by key hash, the sort arbitrarily)")


def gib(value: float) -> str:
    return f"{value / 2**30:.2f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="rows (repeatable; default 1e7 and 1e8)")
    parser.add_argument("--quick", action="store_true", help="n = 1e6 only (overrides --n)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, 1 thread each (default 2)")
    parser.add_argument("--memory-limit", default="4GiB", help="memory limit per worker (default 4GiB)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each method per size, best kept (default 1)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds the sort may take (default 1200)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic resource (default 1)")
    parser.add_argument("--data-dir", default=None,
                        help="keep the resources here and reuse them on the next run (default: a temporary directory, removed)")
    args = parser.parse_args(argv)
    sizes = [1_000_000] if args.quick else (args.n or [10_000_000, 100_000_000])
    scratch = args.data_dir or tempfile.mkdtemp(prefix="bench-select-")
    os.makedirs(scratch, exist_ok=True)

    print(f"model: {MODEL!r}; {os.cpu_count()} cores; {psutil.virtual_memory().total / 2**30:.0f} GiB RAM; "
          f"data in {scratch}")
    print(f"dask {dask.__version__}, shuffle method: {dask.config.get('dataframe.shuffle.method', None) or 'default (p2p)'}")
    print(f"cluster per phase: {args.workers} worker processes x 1 thread, memory limit {args.memory_limit} per worker")
    rows = []
    try:
        for n in sizes:
            with fresh_cluster(args.workers, args.memory_limit) as (client, _):
                path, wrote = ensure_resource(client, scratch, n, args.seed)
            size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
            print(f"\nn = {n:,}: {size / 1e9:.2f} GB of Parquet "
                  f"({'written in %.0f s' % wrote if wrote is not None else 'reused'}), load {load():.1f}", flush=True)
            best = {}
            for method in ("prdist select_ranks", "dask sort_values"):
                for attempt in range(args.repeats):
                    with fresh_cluster(args.workers, args.memory_limit) as (client, pids):
                        load_before = load()
                        with PeakRSS(pids) as rss:
                            started = time.perf_counter()
                            if method == "prdist select_ranks":
                                plan, result = paula_select(path, client)
                                error, note = None, f"{result.passes} passes, {result.candidates:,} candidates"
                                result = result.items
                            else:
                                result, error = run_with_timeout(
                                    lambda: dask_sort_select(path, plan.ranks, client), args.timeout)
                                note = error or ""
                            seconds = time.perf_counter() - started
                    print(f"  {method:<20} run {attempt + 1}: {seconds:8.1f} s  peak worker RSS "
                          f"{' / '.join(gib(p) for p in rss.peaks)} GiB  load {load_before:.1f} -> {load():.1f}  {note}",
                          flush=True)
                    peak = max(max(rss.peaks), best[method][1] if method in best else 0)
                    if method not in best or (error is None and seconds < best[method][0]):
                        best[method] = (seconds, peak, result, error)
                    else:
                        best[method] = (*best[method][:1], peak, *best[method][2:])
                    if error is not None:
                        break
            mine, peer = best["prdist select_ranks"], best["dask sort_values"]
            verdict = compare(mine[2], peer[2]) if peer[2] is not None else "not compared (the sort did not finish)"
            print(f"  check: {verdict}", flush=True)
            rows.append((n, plan.size, mine, peer, verdict))
            if args.data_dir is None:
                shutil.rmtree(path)
    finally:
        if args.data_dir is None:
            shutil.rmtree(scratch, ignore_errors=True)

    print("\n| n | planned ranks | prdist select_ranks s | dask sort_values + take s | speed-up | "
          "peak worker RSS prdist GiB | peak worker RSS dask GiB | same items |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for n, planned, mine, peer, verdict in rows:
        if peer[3] is None:
            peer_s, ratio = f"{peer[0]:.1f}", f"{peer[0] / mine[0]:.1f}x"
        else:
            peer_s, ratio = peer[3], f"> {peer[0] / mine[0]:.1f}x"
        print(f"| {n:,} | {planned:,} | {mine[0]:.1f} | {peer_s} | {ratio} | {gib(mine[1])} | {gib(peer[1])} | "
              f"{'yes' if verdict.startswith(('identical', 'same scores')) else verdict} |")
    print("\ngoal: speed-up >= 8x. Times: best of the runs. Peak worker RSS: the largest of any worker in any run.")


if __name__ == "__main__":
    main()
