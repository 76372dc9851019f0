"""Benchmark: bootstrap bands of a PR curve, prdist against a naive loop, 1 against 2 workers.

Claims measured (in one run, on the same sample):

1. ``prdist.bootstrap_bands`` in one process is >= 10x faster than the obvious loop (numpy
   resample of (score, label) pairs + ``sklearn.metrics.precision_recall_curve`` + interpolation
   onto the recall grid, then the same sup-norm quantile);
2. its ``client=`` path is >= 1.8x faster on 2 Dask workers than on 1
   (``LocalCluster(n_workers=1 or 2, threads_per_worker=1)``, configured as prdist's own local
   clusters: ``prdist.dataflow.cluster.WORKER_MALLOC_CONFIG``), with bit-identical bands.

Usage::

    python benchmarks/bench_bootstrap.py                 # n = 1e5 items, B = 1000 replicates
    python benchmarks/bench_bootstrap.py --n 20000 --replicates 200 --rounds 1   # a quick look

The machine may be shared, so the competitors are interleaved: each of ``--rounds`` rounds times
one block of B/rounds naive-loop replicates (the blocks add up to one run of B replicates) and
then one full run of every prdist variant; the two clusters are alive together and timed
alternately. Ratios use the median prdist run; wall-clock and CPU time (this process) are both
shown, CPU time being less sensitive to other processes. The load average is printed per round:
a load above the number of cores contaminates the numbers, rerun then.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import dask
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster
from sklearn.metrics import precision_recall_curve

from prdist import population
from prdist.bootstrap import METHODS, bootstrap_bands, recall_grid, weighted_quantile
from prdist.dataflow.cluster import WORKER_MALLOC_CONFIG


def naive_loop_curves(scores, labels, beta, rng, replicates):
    """The obvious bootstrap: resample pairs, sklearn's PR curve, interpolate onto the grid."""
    n = scores.size
    curves = np.empty((replicates, beta.size))
    for b in range(replicates):
        idx = rng.integers(0, n, n)
        precision, recall, _ = precision_recall_curve(labels[idx], scores[idx])
        curves[b] = np.interp(beta, recall[::-1], precision[::-1])
    return curves


def naive_loop_radius(scores, labels, beta, curves, delta=0.05):
    precision, recall, _ = precision_recall_curve(labels, scores)
    centre = np.interp(beta, recall[::-1], precision[::-1])
    sup = np.abs(curves - centre).max(axis=1)
    return float(weighted_quantile(sup, np.ones(sup.size), 1 - delta))


def _import_kernel() -> None:
    import prdist.bootstrap  # noqa: F401  (worker warm-up)


class Clock:
    """Wall-clock and CPU seconds of one call."""

    def __init__(self):
        self.wall, self.cpu = [], []

    def __call__(self, fn):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)
        return result


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="labeled items (default 1e5)")
    parser.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates B")
    parser.add_argument("--prevalence", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=8, help="interleaved timing rounds")
    args = parser.parse_args(argv)

    model = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=args.prevalence)
    scores, labels = model.sample(args.n, seed=0)
    B, rounds = args.replicates, args.rounds
    beta = recall_grid()
    print(
        f"n = {args.n:,} labeled items ({int(labels.sum()):,} positives), B = {B} replicates, "
        f"{os.cpu_count()} CPUs, {rounds} interleaved rounds"
    )

    clocks = {name: Clock() for name in ["naive loop", *METHODS, "1 worker", "2 workers"]}
    naive_rng = np.random.default_rng(0)
    naive_curves, results = [], {}
    with dask.config.set(WORKER_MALLOC_CONFIG):  # as prdist's own local clusters
        clusters = {
            workers: LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            )
            for workers in (1, 2)
        }
    clients = {workers: Client(cluster) for workers, cluster in clusters.items()}
    try:
        for client in clients.values():
            client.run(_import_kernel)  # worker start-up is not part of the steady state
        for r in range(rounds):
            print(f"[round {r + 1}/{rounds}]   {load()}", flush=True)
            block = B // rounds + (1 if r < B % rounds else 0)
            naive_curves.append(
                clocks["naive loop"](
                    lambda: naive_loop_curves(scores, labels, beta, naive_rng, block)
                )
            )
            for method in METHODS:
                results[method] = clocks[method](
                    lambda: bootstrap_bands(scores, labels, replicates=B, method=method, seed=0)
                )
            for workers, client in clients.items():
                name = f"{workers} worker" + ("s" if workers > 1 else "")
                remote = clocks[name](
                    lambda: bootstrap_bands(scores, labels, replicates=B, seed=0, client=client)
                )
                local = results["smoothed-importance"]
                pd.testing.assert_frame_equal(remote, local, check_exact=True)
    finally:
        for workers in clusters:
            clients[workers].close()
            clusters[workers].close()
    print(f"[done]   {load()}\n")
    radius = naive_loop_radius(scores, labels, beta, np.concatenate(naive_curves))
    print(f"naive loop radius {radius:.4f}; prdist smoothed-importance radius "
          f"{results['smoothed-importance'].attrs['sup_radius']:.4f}\n")

    _print_table(clocks, B)


def _print_table(clocks: dict, B: int) -> None:
    """The timings, best and median over the rounds, and the ratios the claims are about."""
    naive_wall, naive_cpu = sum(clocks["naive loop"].wall), sum(clocks["naive loop"].cpu)
    rows = [
        ("naive loop (numpy + sklearn PR curve)", "1 process", naive_wall, naive_wall, naive_cpu)
    ]
    for method in METHODS:
        c = clocks[method]
        rows.append((f"prdist {method}", "1 process", min(c.wall), statistics.median(c.wall),
                     statistics.median(c.cpu)))
    for name in ("1 worker", "2 workers"):
        c = clocks[name]
        rows.append(("prdist smoothed-importance, client=", name, min(c.wall),
                     statistics.median(c.wall), None))

    width = max(len(row[0]) for row in rows)
    print(
        f"{'bootstrap (B = ' + str(B) + ')':<{width}}  {'where':<10} {'best s':>7} {'median s':>8} "
        f"{'ms/rep':>7} {'vs naive':>8} {'CPU s':>6} {'CPU vs naive':>12}"
    )
    for name, where, best, median, cpu in rows:
        cpu_text = f"{'-':>6} {'-':>12}" if cpu is None else f"{cpu:6.2f} {naive_cpu / cpu:11.1f}x"
        print(
            f"{name:<{width}}  {where:<10} {best:7.2f} {median:8.2f} {1e3 * median / B:7.2f} "
            f"{naive_wall / median:7.1f}x {cpu_text}"
        )
    by_name = {(row[0], row[1]): row for row in rows}
    smoothed = by_name[("prdist smoothed-importance", "1 process")]
    naive = by_name[("prdist naive", "1 process")]
    one = by_name[("prdist smoothed-importance, client=", "1 worker")]
    two = by_name[("prdist smoothed-importance, client=", "2 workers")]
    print()
    print(
        "prdist smoothed-importance over the naive loop, 1 process: "
        f"{naive_wall / smoothed[3]:.1f}x wall, {naive_cpu / smoothed[4]:.1f}x CPU (goal >= 10x)"
    )
    print(
        "prdist naive (the loop's own resampling scheme) over the naive loop, 1 process: "
        f"{naive_wall / naive[3]:.1f}x wall, {naive_cpu / naive[4]:.1f}x CPU"
    )
    print(
        f"2 workers over 1 worker: {one[3] / two[3]:.2f}x median, {one[2] / two[2]:.2f}x best "
        "(goal >= 1.8x); bands bit-identical to the in-process result"
    )


if __name__ == "__main__":
    main()
