"""Benchmark: ``prdist run`` end to end against the Polars script and the DuckDB query a user writes.

Claim measured (issue "Faster than the tools users reach for"): on the same Parquet files, the
whole ``prdist run`` process (plan, selection of the planned items, label lookup, bounds, report,
manifest) against whole processes of Polars and DuckDB doing *only* the selection of the same
items (``benchmarks/peer_select.py``: sort by score, number the rows, keep the planned ranks;
each engine in its faster form, join or filter, 2 threads). Ratios are peer time / prdist time
from the same run, medians of ``--repeats`` interleaved rounds, with the load average.

Also printed: the floor of any method, reading the key, score and label columns of every file
once with pyarrow in this process, and every method's peak resident memory (the process tree:
prdist's Dask workers included).

Every method must return the same key at every planned rank: the script checks it (continuous
binormal scores, so there are no ties).

Needs the benchmark environment (Polars and DuckDB, not prdist's dependencies)::

    make bench-env                                            # .venv-bench
    .venv/bin/python benchmarks/bench_peers.py --quick        # n = 1e6, to try it out
    .venv/bin/python benchmarks/bench_peers.py                # n = 1e7 and 1e8, unsorted and sorted
    .venv/bin/python benchmarks/bench_peers.py --n 100000000 --order unsorted --data-dir /var/tmp/peers

``prdist run`` has no labels here: it plans, selects, writes the annotation task and exits 3 (a
complete run with conservative bounds), which is what a team's first run of a release does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow.parquet as pq

from prdist.plan import plan_paula

ROOT = Path(__file__).resolve().parent.parent
PRDIST = ROOT / ".venv" / "bin" / "prdist"
PEER_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
PEER_SCRIPT = ROOT / "benchmarks" / "peer_select.py"
ORDERS = {"unsorted": "shuffled", "sorted": "sorted"}


class TreePeak:
    """Peak resident memory of a process and all its descendants, sampled every 0.1 s."""

    def __init__(self, pid: int):
        self.root = psutil.Process(pid)
        self.total = self.largest = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            rss = []
            try:
                for process in [self.root, *self.root.children(recursive=True)]:
                    rss.append(process.memory_info().rss)
            except psutil.Error:
                pass
            if rss:
                self.total, self.largest = max(self.total, sum(rss)), max(self.largest, max(rss))
            self._stop.wait(0.1)

    def stop(self):
        self._stop.set()
        self._thread.join()


def timed(argv: list[str], ok=(0,)) -> tuple[float, TreePeak, str]:
    """Run a whole process; its wall time, peak memory and stdout. Raise on an unexpected exit code."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = TreePeak(process.pid)
    out, err = process.communicate()
    elapsed = time.perf_counter() - started
    peak.stop()
    if process.returncode not in ok:
        raise RuntimeError(f"{argv[0]} exited {process.returncode}: {err.strip()[-500:]}")
    return elapsed, peak, out


def make_resource(data_dir: Path, n: int, order: str) -> Path:
    out = data_dir / f"{order}-{n}"
    if not out.exists():
        subprocess.run([str(PRDIST), "synth", "--n", str(n), "--order", ORDERS[order], "--seed", "1",
                        "--prevalence", "0.3", "--out", str(out)], check=True, capture_output=True)
    return out


def scan_floor(resource: Path) -> float:
    started = time.perf_counter()
    for path in sorted(resource.glob("*.parquet")):
        pq.read_table(path, columns=["key", "score", "label"])
    return time.perf_counter() - started


def planned_keys(path: Path) -> np.ndarray:
    table = pq.read_table(path, columns=["rank", "key"]).to_pandas().sort_values("rank")
    return table["key"].to_numpy()


def bench_case(resource: Path, n: int, repeats: int, work: Path) -> list[dict]:
    ranks = plan_paula(n, eps=0.03, window=100).ranks
    ranks_file = work / "ranks.npy"
    np.save(ranks_file, ranks.astype(np.int64))
    methods = {"prdist run": None}
    for engine in ("polars", "duckdb"):
        for form in ("join", "filter"):
            methods[f"{engine} ({form})"] = (engine, form)
    times = {name: [] for name in methods}
    peaks = {name: (0, 0) for name in methods}
    keys = {}
    for round_ in range(repeats):
        for name, peer in methods.items():
            if peer is None:
                out = work / f"runs-{round_}"
                elapsed, peak, stdout = timed([str(PRDIST), "run", "--resource", str(resource), "--out", str(out)], ok=(0, 3))
                produced = Path(stdout.strip().splitlines()[-1]) / "plan.parquet"
            else:
                produced = work / f"{peer[0]}-{peer[1]}-{round_}.parquet"
                elapsed, peak, _ = timed([str(PEER_PYTHON), str(PEER_SCRIPT), "--engine", peer[0], "--form", peer[1],
                                       str(resource), str(ranks_file), str(produced)])
            times[name].append(elapsed)
            peaks[name] = (max(peaks[name][0], peak.total), max(peaks[name][1], peak.largest))
            keys.setdefault(name, planned_keys(produced))
    reference = keys["prdist run"]
    rows = []
    for name in methods:
        if not np.array_equal(keys[name], reference):
            raise AssertionError(f"{name} returned other items than prdist at some planned rank")
        rows.append({"method": name, "median": statistics.median(times[name]), "times": times[name],
                     "peak_total": peaks[name][0], "peak_process": peaks[name][1]})
    return rows


def report(n: int, order: str, rows: list[dict], floor: float) -> None:
    prdist = rows[0]["median"]
    print(f"\n## n = {n:,}, {order}  (load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print(f"floor: key, score and label of every file read once with pyarrow, in process: {floor:.2f} s")
    print(f"{'method':<18} {'median s':>9} {'peer / prdist':>14} {'peak RSS tree':>14} {'largest process':>16}  times")
    for row in rows:
        ratio = row["median"] / prdist
        print(f"{row['method']:<18} {row['median']:>9.2f} {ratio:>13.2f}x {row['peak_total'] / 2**30:>11.2f} GiB"
              f" {row['peak_process'] / 2**30:>13.2f} GiB  {', '.join(f'{t:.2f}' for t in row['times'])}")
    for engine in ("polars", "duckdb"):
        best = min((r for r in rows if r["method"].startswith(engine)), key=lambda r: r["median"])
        print(f"prdist run vs {engine}'s best form ({best['method']}): {best['median'] / prdist:.2f}x"
              f" {'faster' if best['median'] > prdist else 'SLOWER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="resource size (repeatable; default 1e7 and 1e8)")
    parser.add_argument("--order", choices=sorted(ORDERS), action="append", help="default: both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 1e6, 1 round")
    parser.add_argument("--data-dir", default=None, help="keep the resources here for reruns")
    args = parser.parse_args()
    if not PEER_PYTHON.exists():
        sys.exit(f"bench_peers: {PEER_PYTHON} is missing; run 'make bench-env' first")
    sizes = [1_000_000] if args.quick else (args.n or [10_000_000, 100_000_000])
    repeats = 1 if args.quick else args.repeats
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="prdist-peers-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    print(f"# prdist run vs Polars / DuckDB, {os.cpu_count()} cores, medians of {repeats} interleaved rounds")
    try:
        for n in sizes:
            for order in args.order or ["unsorted", "sorted"]:
                resource = make_resource(data_dir, n, order)
                work = Path(tempfile.mkdtemp(prefix="work-", dir=data_dir))
                try:
                    rows = bench_case(resource, n, repeats, work)
                    report(n, order, rows, scan_floor(resource))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
