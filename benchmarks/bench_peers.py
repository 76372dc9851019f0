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

At 10⁹ items (about 17 GB on disk) the peers' in-memory sorts need more than this machine's memory.
``--cap-gib`` stops any method whose process tree grows past that resident size (instead of letting
the kernel's OOM killer pick a process on the machine), and the row says so; Polars' streaming
engine is one of its forms, and ``--duckdb-memory-limit`` lets DuckDB spill to disk::

    .venv/bin/python benchmarks/bench_peers.py --n 1000000000 --order unsorted --repeats 1 \
        --cap-gib 18 --duckdb-memory-limit 12GB --data-dir /var/tmp/billion
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

from prdist.paula.plan import plan_paula

ROOT = Path(__file__).resolve().parent.parent
PRDIST = ROOT / ".venv" / "bin" / "prdist"
PEER_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
PEER_SCRIPT = ROOT / "benchmarks" / "peer_select.py"
ORDERS = {"unsorted": "shuffled", "sorted": "sorted"}


class TreePeak:
    """Peak resident memory of a process and all its descendants, sampled every 0.1 s; the tree is
    killed (``capped``) when its resident total passes ``cap`` bytes."""

    def __init__(self, pid: int, cap: float = float("inf")):
        self.root = psutil.Process(pid)
        self.total = self.largest = 0
        self.cap, self.capped = cap, False
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
            if sum(rss) > self.cap:
                self._kill_tree()
            self._stop.wait(0.1)

    def _kill_tree(self):
        self.capped = True
        try:
            processes = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        for process in processes:
            try:
                process.kill()
            except psutil.Error:
                pass

    def stop(self):
        self._stop.set()
        self._thread.join()


def timed(argv: list[str], ok=(0,), cap: float = float("inf")) -> tuple[float, TreePeak, str, str | None]:
    """Run a whole process: its wall time, peak memory, stdout and why it failed (None when it did not)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = TreePeak(process.pid, cap)
    out, err = process.communicate()
    elapsed = time.perf_counter() - started
    peak.stop()
    failure = None
    if peak.capped:
        failure = f"stopped at {cap / 2**30:g} GiB resident after {elapsed:.0f} s"
    elif process.returncode not in ok:
        last = (err.strip().splitlines() or [""])[-1]
        failure = f"exit {process.returncode} after {elapsed:.0f} s: {last[:120]}"
    return elapsed, peak, out, failure


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


def bench_case(resource: Path, n: int, repeats: int, work: Path, *, cap: float = float("inf"),
               duckdb_memory_limit: str | None = None) -> list[dict]:
    ranks = plan_paula(n, eps=0.03, window=100).ranks
    ranks_file = work / "ranks.npy"
    np.save(ranks_file, ranks.astype(np.int64))
    methods = {"prdist run": None}
    for engine, forms in (("polars", ("join", "filter", "streaming")), ("duckdb", ("join", "filter"))):
        for form in forms:
            methods[f"{engine} ({form})"] = (engine, form)
    times = {name: [] for name in methods}
    peaks = {name: (0, 0) for name in methods}
    failures, keys = {}, {}
    for round_ in range(repeats):
        for name, peer in methods.items():
            if name in failures:
                continue  # a method that failed once is not run again
            if peer is None:
                out = work / f"runs-{round_}"
                argv = [str(PRDIST), "run", "--resource", str(resource), "--out", str(out)]
                elapsed, peak, stdout, failure = timed(argv, ok=(0, 3), cap=cap)
                produced = None if failure else Path(stdout.strip().splitlines()[-1]) / "plan.parquet"
            else:
                produced = work / f"{peer[0]}-{peer[1]}-{round_}.parquet"
                argv = [str(PEER_PYTHON), str(PEER_SCRIPT), "--engine", peer[0], "--form", peer[1]]
                if peer[0] == "duckdb" and duckdb_memory_limit:
                    argv += ["--memory-limit", duckdb_memory_limit]
                elapsed, peak, _, failure = timed([*argv, str(resource), str(ranks_file), str(produced)], cap=cap)
            peaks[name] = (max(peaks[name][0], peak.total), max(peaks[name][1], peak.largest))
            if failure:
                failures[name] = failure
                continue
            times[name].append(elapsed)
            keys.setdefault(name, planned_keys(produced))
    if "prdist run" in failures:
        raise RuntimeError(f"prdist run failed: {failures['prdist run']}")
    reference = keys["prdist run"]
    rows = []
    for name in methods:
        if name in keys and not np.array_equal(keys[name], reference):
            raise AssertionError(f"{name} returned other items than prdist at some planned rank")
        rows.append({"method": name, "median": statistics.median(times[name]) if times[name] else None,
                     "times": times[name], "failure": failures.get(name),
                     "peak_total": peaks[name][0], "peak_process": peaks[name][1]})
    return rows


def report(n: int, order: str, rows: list[dict], floor: float) -> None:
    prdist = rows[0]["median"]
    print(f"\n## n = {n:,}, {order}  (load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print(f"floor: key, score and label of every file read once with pyarrow, in process: {floor:.2f} s")
    print(f"{'method':<18} {'median s':>9} {'peer / prdist':>14} {'peak RSS tree':>14} {'largest process':>16}  times")
    for row in rows:
        memory = f"{row['peak_total'] / 2**30:>11.2f} GiB {row['peak_process'] / 2**30:>13.2f} GiB"
        if row["failure"]:
            print(f"{row['method']:<18} {'failed':>9} {'':>14} {memory}  {row['failure']}")
            continue
        ratio = row["median"] / prdist
        print(f"{row['method']:<18} {row['median']:>9.2f} {ratio:>13.2f}x {memory}  {', '.join(f'{t:.2f}' for t in row['times'])}")
    for engine in ("polars", "duckdb"):
        done = [r for r in rows if r["method"].startswith(engine) and not r["failure"]]
        if not done:
            print(f"prdist run vs {engine}: every form failed")
            continue
        best = min(done, key=lambda r: r["median"])
        print(f"prdist run vs {engine}'s best form ({best['method']}): {best['median'] / prdist:.2f}x"
              f" {'faster' if best['median'] > prdist else 'SLOWER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="resource size (repeatable; default 1e7 and 1e8)")
    parser.add_argument("--order", choices=sorted(ORDERS), action="append", help="default: both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 1e6, 1 round")
    parser.add_argument("--data-dir", default=None, help="keep the resources here for reruns")
    parser.add_argument("--cap-gib", type=float, default=None,
                        help="stop a method whose process tree passes this resident size (GiB); default no cap")
    parser.add_argument("--duckdb-memory-limit", default=None, help="DuckDB's memory_limit, e.g. 12GB (default DuckDB's)")
    args = parser.parse_args()
    cap = float("inf") if args.cap_gib is None else args.cap_gib * 2**30
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
                    rows = bench_case(resource, n, repeats, work, cap=cap, duckdb_memory_limit=args.duckdb_memory_limit)
                    report(n, order, rows, scan_floor(resource))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
