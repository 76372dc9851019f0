"""Benchmark: writing a synthetic resource, prdist's Dask writer against a plain single process.

Claim measured (in one run, same model, same n): ``prdist.dataflow.synth.write_synthetic`` on a
``LocalCluster`` of 2 single-threaded worker processes writes more rows per second than the
obvious single-process writer — ``model.sample(n)`` in numpy, ``np.argsort`` for the sorted
layout, one ``pyarrow.parquet.write_table`` — while holding only about one row group per worker
in memory (the plain writer holds the whole resource, and its sort, in memory).

Columns:

- ``plain``: the obvious writer with pyarrow's default Parquet options;
- ``plain*``: the same with prdist's Parquet options (dictionary encoding only for ``label``),
  so that the ratio against it isolates generation and parallelism from the file format;
- ``1 proc``: ``write_synthetic`` in this process on Dask's synchronous scheduler;
- ``dask``: ``write_synthetic`` on the cluster; ``x plain`` / ``x plain*`` are its speed-ups.

Both write the same columns (key int64, score float64, label int8) with the same row-group size
to local disk under ``--dir``; outputs are removed after each measurement.

Usage::

    python benchmarks/bench_synth.py                      # n = 1e7, sorted and shuffled
    python benchmarks/bench_synth.py --n 10000000 --n 100000000 --repeats 1

Every timing is the best of ``--repeats`` runs (other processes on a shared machine only ever
slow a run down). The 1-minute load average is printed with each row: a load above the number of
cores means the numbers are contaminated by other work.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from distributed import Client, LocalCluster

from prdist import population
from prdist.dataflow.synth import DEFAULT_ROW_GROUP_ROWS, synthetic_keys, write_synthetic

MODEL = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)


def plain_writer(model, n: int, path: str, *, order: str, seed: int, tuned: bool) -> None:
    """The obvious way: sample everything, sort it if asked, write one Parquet file."""
    scores, labels = model.sample(n, seed=seed)
    if order == "sorted":
        idx = np.argsort(scores)[::-1]
        scores, labels = scores[idx], labels[idx]
    table = pa.table({"key": synthetic_keys(0, n), "score": scores, "label": labels})
    options = {"use_dictionary": ["label"]} if tuned else {}
    pq.write_table(table, path, row_group_size=DEFAULT_ROW_GROUP_ROWS, **options)


def peak_rss_mib() -> float:
    """Peak resident memory of the calling process so far (Linux: ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_time(fn, repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - started)
    return min(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="rows (repeatable; default 1e7)")
    parser.add_argument("--order", action="append", choices=("sorted", "shuffled"), help="layouts (default both)")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes (default 2)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per timing, best kept (default 2)")
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    args = parser.parse_args()
    sizes = args.n or [10_000_000]
    orders = args.order or ["sorted", "shuffled"]
    scratch = tempfile.mkdtemp(prefix="bench-synth-", dir=args.dir)
    counter = iter(range(10**9))

    def fresh(name: str) -> str:
        return os.path.join(scratch, f"{name}-{next(counter)}")

    print(f"model: {MODEL!r}; cores: {os.cpu_count()}; row group: {DEFAULT_ROW_GROUP_ROWS} rows")
    started = time.perf_counter()
    with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster, set_as_default=False) as client:
        print(f"LocalCluster start-up ({args.workers} worker processes): {time.perf_counter() - started:.1f} s")
        # Warm-up: imports on the workers, the model's quantile table in this process.
        write_synthetic(MODEL, n=1000, out=fresh("warm"), seed=0, client=client)
        columns = ("plain", "plain*", "1 proc", "dask")
        print(f"{'n':>12} {'order':>9} " + " ".join(f"{c + ' s':>9}" for c in columns)
              + f" {'dask Mrow/s':>12} {'x plain':>8} {'x plain*':>8}  load")  # fmt: skip
        for n in sizes:
            for order in orders:

                def run_plain(tuned):
                    out = fresh("plain")
                    os.makedirs(out)
                    plain_writer(MODEL, n, os.path.join(out, "part-0.parquet"), order=order, seed=1, tuned=tuned)
                    shutil.rmtree(out)

                def run_prdist(on_cluster):
                    out = fresh("prdist")
                    if on_cluster:
                        write_synthetic(MODEL, n=n, out=out, order=order, seed=1, client=client)
                    else:
                        with dask.config.set(scheduler="sync"):
                            write_synthetic(MODEL, n=n, out=out, order=order, seed=1)
                    shutil.rmtree(out)

                times = [
                    best_time(lambda: run_plain(False), args.repeats),
                    best_time(lambda: run_plain(True), args.repeats),
                    best_time(lambda: run_prdist(False), args.repeats),
                    best_time(lambda: run_prdist(True), args.repeats),
                ]
                dask_s = times[-1]
                print(
                    f"{n:>12,} {order:>9} " + " ".join(f"{t:>9.2f}" for t in times)
                    + f" {n / dask_s / 1e6:>12.2f} {times[0] / dask_s:>8.2f} {times[1] / dask_s:>8.2f}"
                    + f"  {os.getloadavg()[0]:.1f}",
                    flush=True,
                )  # fmt: skip
        # Peak resident memory since start: this process ran the plain writer (and the 1-process
        # prdist writer), the workers only prdist's partition tasks.
        worker_peak = max(client.run(peak_rss_mib).values())
        print(f"peak RSS: this process {peak_rss_mib():,.0f} MiB; largest worker {worker_peak:,.0f} MiB")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
