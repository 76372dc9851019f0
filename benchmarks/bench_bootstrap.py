"""Benchmark: bootstrap bands of a PR curve, prdist against a naive loop, 1 against 2 workers.

Claims measured (in one run, on the same sample):

1. ``prdist.bootstrap.bootstrap_bands`` in one process is >= 10x faster than the obvious loop
   (numpy resample of (score, label) pairs + ``sklearn.metrics.precision_recall_curve`` +
   interpolation onto the recall grid, then the same sup-norm quantile);
2. the ``client=`` path is >= 1.8x faster on 2 Dask workers than on 1
   (``LocalCluster(n_workers=1 or 2, threads_per_worker=1)``), with bit-identical bands.

Usage::

    python benchmarks/bench_bootstrap.py                 # n = 1e5 items, B = 1000 replicates
    python benchmarks/bench_bootstrap.py --n 20000 --replicates 200 --repeats 1   # a quick look

Every timing is the best of ``--repeats`` runs (other processes on a shared machine only ever
slow a run down); the median is printed too. The load average is printed before and after each
block: numbers taken under a load above the number of cores are contaminated, rerun then.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pandas as pd
from distributed import Client, LocalCluster
from sklearn.metrics import precision_recall_curve

from prdist import population
from prdist.bootstrap import METHODS, bootstrap_bands, recall_grid, weighted_quantile


def naive_loop_bands(scores, labels, *, replicates, seed, delta=0.05):
    """The obvious bootstrap: resample pairs, sklearn's PR curve, interpolate onto the grid."""
    beta = recall_grid()
    rng = np.random.default_rng(seed)
    n = scores.size
    precision, recall, _ = precision_recall_curve(labels, scores)
    centre = np.interp(beta, recall[::-1], precision[::-1])
    curves = np.empty((replicates, beta.size))
    for b in range(replicates):
        idx = rng.integers(0, n, n)
        precision, recall, _ = precision_recall_curve(labels[idx], scores[idx])
        curves[b] = np.interp(beta, recall[::-1], precision[::-1])
    radius = weighted_quantile(np.abs(curves - centre).max(axis=1), np.ones(replicates), 1 - delta)
    return centre - radius, centre + radius


def _import_kernel() -> None:
    import prdist.bootstrap  # noqa: F401  (worker warm-up)


def timed(fn, repeats):
    """Best and median wall time, best CPU time of this process, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), statistics.median(walls), min(cpus), result


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="labeled items (default 1e5)")
    parser.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates B")
    parser.add_argument("--prevalence", type=float, default=0.2)
    parser.add_argument(
        "--repeats", type=int, default=3, help="timings per measurement (best kept)"
    )
    parser.add_argument("--naive-repeats", type=int, default=1, help="timings of the naive loop")
    args = parser.parse_args(argv)

    model = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=args.prevalence)
    scores, labels = model.sample(args.n, seed=0)
    B = args.replicates
    print(f"n = {args.n:,} labeled items ({int(labels.sum()):,} positives), B = {B} replicates, "
          f"{os.cpu_count()} CPUs")
    rows = []

    print(f"[naive loop]   {load()}", flush=True)
    best_naive, med, cpu_naive, _ = timed(
        lambda: naive_loop_bands(scores, labels, replicates=B, seed=0), args.naive_repeats
    )
    rows.append(("naive loop (numpy + sklearn PR curve)", "1 process", best_naive, med, cpu_naive))

    core = {}
    for method in METHODS:
        print(f"[{method}]   {load()}", flush=True)
        best, med, cpu, core[method] = timed(
            lambda: bootstrap_bands(scores, labels, replicates=B, method=method, seed=0),
            args.repeats,
        )
        rows.append((f"prdist {method}", "1 process", best, med, cpu))

    dask_best = {}
    for workers in (1, 2):
        with LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster, Client(cluster) as client:
            # Warm-up: worker imports and the first scatter are not part of the steady state.
            client.run(_import_kernel)
            print(f"[dask {workers} worker(s)]   {load()}", flush=True)
            best, med, _, remote = timed(
                lambda: bootstrap_bands(scores, labels, replicates=B, seed=0, client=client),
                args.repeats,
            )
            pd.testing.assert_frame_equal(remote, core["smoothed-importance"], check_exact=True)
            dask_best[workers] = best
            where = f"{workers} worker(s)"
            rows.append(("prdist smoothed-importance, client=", where, best, med, None))
    print(f"[done]   {load()}\n")

    width = max(len(r[0]) for r in rows)
    print(
        f"{'bootstrap':<{width}}  {'where':<12} {'best s':>7} {'median s':>8} {'ms/rep':>7} "
        f"{'vs naive':>8} {'CPU s':>7} {'CPU vs naive':>12}"
    )
    for name, where, best, med, cpu in rows:
        if cpu is None:
            cpu_text = f"{'-':>7} {'-':>12}"
        else:
            cpu_text = f"{cpu:7.2f} {cpu_naive / cpu:11.1f}x"
        print(
            f"{name:<{width}}  {where:<12} {best:7.2f} {med:8.2f} {1e3 * best / B:7.2f} "
            f"{best_naive / best:7.1f}x {cpu_text}"
        )
    by_name = {r[0]: r for r in rows}
    smoothed, naive = by_name["prdist smoothed-importance"], by_name["prdist naive"]
    print()
    print(f"speed-up of prdist (smoothed-importance) over the naive loop, 1 process: "
          f"{best_naive / smoothed[2]:.1f}x wall, {cpu_naive / smoothed[4]:.1f}x CPU (goal >= 10x)")
    print(f"speed-up of prdist (naive resampling, the loop's own scheme), 1 process: "
          f"{best_naive / naive[2]:.1f}x wall, {cpu_naive / naive[4]:.1f}x CPU")
    print(
        f"speed-up of 2 workers over 1 worker: {dask_best[1] / dask_best[2]:.2f}x (goal >= 1.8x); "
        "bands bit-identical to the in-process result"
    )


if __name__ == "__main__":
    main()
