"""Benchmark: writing a synthetic resource, prdist's Dask writer against a plain single process.

Claim measured (in one run, same model, same n): ``prdist.dataflow.synth.write_synthetic`` on a
``LocalCluster`` of 2 single-threaded worker processes writes more rows per second than the
obvious single-process writer — ``model.sample(n)`` in numpy, ``np.argsort`` for the sorted
layout, one ``pyarrow.parquet.write_table`` — while holding only about one row group per worker
in memory (the plain writer holds the whole resource, and its sort, in memory).

Both write the same columns (key int64, score float64, label int8) with the same row-group size
to local disk under ``--dir``; outputs are removed after each measurement.

Usage::

    python benchmarks/bench_synth.py                      # n = 1e7, sorted and shuffled
    python benchmarks/bench_synth.py --n 10000000 --n 100000000 --repeats 1

Every timing is the best of ``--repeats`` runs (other processes on a shared machine only ever
slow a run down). The load average is printed with each row: a load above the number of cores
means the numbers are contaminated by other work.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from distributed import Client, LocalCluster

from prdist import population
from prdist.dataflow.synth import DEFAULT_ROW_GROUP_ROWS, synthetic_keys, write_synthetic

MODEL = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)


def plain_writer(model, n: int, path: str, *, order: str, seed: int) -> None:
    """The obvious way: sample everything, sort it if asked, write one Parquet file."""
    scores, labels = model.sample(n, seed=seed)
    if order == "sorted":
        idx = np.argsort(scores)[::-1]
        scores, labels = scores[idx], labels[idx]
    table = pa.table({"key": synthetic_keys(0, n), "score": scores, "label": labels})
    pq.write_table(table, path, row_group_size=DEFAULT_ROW_GROUP_ROWS)


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
    ) as cluster, Client(cluster) as client:
        print(f"LocalCluster start-up ({args.workers} worker processes): {time.perf_counter() - started:.1f} s")
        # Warm-up: imports on the workers, the model's quantile table in this process.
        write_synthetic(MODEL, n=1000, out=fresh("warm"), seed=0, client=client)
        header = f"{'n':>12} {'order':>9} {'plain s':>9} {'plain Mrow/s':>13} {'dask s':>8} {'dask Mrow/s':>12} {'ratio':>6}  load"
        print(header)
        for n in sizes:
            for order in orders:

                def run_plain():
                    out = fresh("plain")
                    os.makedirs(out)
                    plain_writer(MODEL, n, os.path.join(out, "part-0.parquet"), order=order, seed=1)
                    shutil.rmtree(out)

                def run_dask():
                    out = fresh("dask")
                    write_synthetic(MODEL, n=n, out=out, order=order, seed=1, client=client)
                    shutil.rmtree(out)

                plain = best_time(run_plain, args.repeats)
                dask_s = best_time(run_dask, args.repeats)
                load = os.getloadavg()[0]
                print(
                    f"{n:>12,} {order:>9} {plain:>9.2f} {n / plain / 1e6:>13.2f} {dask_s:>8.2f} "
                    f"{n / dask_s / 1e6:>12.2f} {plain / dask_s:>6.2f}  {load:.1f}",
                    flush=True,
                )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
