"""Benchmark: selecting a PAULA plan's items against the floor of one full scan of the resource.

Claim measured (issue "Faster than the tools users reach for"): on an *unsorted* resource of 10^8
items, ``select_ranks`` as ``prdist run`` runs it (in-process, the passes on a few threads)
takes at most 3x one full read of the key, score and label columns with pyarrow (file by file,
pyarrow's own threads), in the same process, on the same files. Interleaved rounds, the best of
each printed with the load average, the selection's passes and bytes read (compressed Parquet
bytes of the columns read, per pass).

Usage::

    python benchmarks/bench_select_floor.py --data-dir /var/tmp/bench          # n = 1e8
    python benchmarks/bench_select_floor.py --n 1000000 --data-dir /tmp/x       # to try it out

The resource is written by ``prdist synth`` (binormal, 30 % positives, seed 1, shuffled) into
``--data-dir`` as ``unsorted-<n>`` unless it is there (the name ``bench_peers.py`` uses).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq

from prdist.dataflow.engine.executor import THREADS
from prdist.dataflow.io.parquet import open_resource
from prdist.dataflow.ranks.select import selection
from prdist.paula.plan import plan_paula

ROOT = Path(__file__).resolve().parent.parent


def scan_floor(resource: Path) -> float:
    started = time.perf_counter()
    for path in sorted(resource.glob("*.parquet")):
        pq.read_table(path, columns=["key", "score", "label"])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args()
    path = Path(args.data_dir) / f"unsorted-{args.n}"
    if not path.exists():
        subprocess.run([str(ROOT / ".venv" / "bin" / "prdist"), "synth", "--n", str(args.n), "--order", "shuffled",
                        "--seed", "1", "--prevalence", "0.3", "--out", str(path)], check=True, capture_output=True)
    resource = open_resource(str(path), label="label")
    ranks = plan_paula(resource.n, eps=0.03, window=100).ranks
    total = resource.bytes_of(range(len(resource.row_groups)), ["key", "score", "label"])
    floors, selects = [], []
    for _ in range(args.repeats):
        floors.append(scan_floor(path))
        started = time.perf_counter()
        found = selection(resource, ranks)
        selects.append(time.perf_counter() - started)
        print(f"  round: floor {floors[-1]:.2f} s, select {selects[-1]:.2f} s (load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"\n## n = {resource.n:,} unsorted, {ranks.size:,} planned ranks, {THREADS} threads"
          f"  (load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print(f"floor, one pyarrow read of key, score and label: best {min(floors):.2f} s ({total / 1e9:.2f} GB)")
    print(f"select_ranks: best {min(selects):.2f} s, {found.passes} passes, {found.candidates:,} candidates, "
          f"{found.bytes_read / 1e9:.2f} GB read ({found.bytes_read / total:.2f}x the resource)")
    print(f"select / floor: {min(selects) / min(floors):.2f}x (goal <= 3x)")


if __name__ == "__main__":
    main()
