"""Benchmark: bytes read to extract a PAULA plan from a sorted resource, against a full scan.

Claim measured (in one run, the same files on local disk and on S3): on a resource sorted by
descending score, ``prdist.dataflow.ranks.extract.extract_ranks`` reads only the row groups that hold
the ranks of a PAULA plan (eps 0.03, window 100) — the goal is under 1 % of the resource's bytes
at n = 1e8 — where the obvious way, ``dask.dataframe.read_parquet`` of the key, score and label
columns with the same ranks taken by position (one pass, one partition per file), reads all of
them. The share depends
on the row-group size (a window of 100 ranks costs a whole row group), so several are measured.

Bytes are reported four ways:

- accounted: ``sorted_extraction(...).bytes_read``, the compressed bytes of the column
  chunks it read, from the Parquet metadata, against the same columns' bytes in the whole
  resource (the full scan's bytes);
- measured: the bytes the Parquet reader actually got from storage, counted at the file object
  of an in-process run of ``extract_ranks`` (``client=None``), against the total size of the
  files. This includes the footer every extraction task reads again when it opens a file;
- footers: the bytes of all files' footers, which ``open_resource`` reads once;
- predicted, from the plan alone (rows of the row groups holding a planned rank / n), which is
  all that can be said at sizes not written (``--predict``; 1e9 rows are ~15 GB per copy).

The resource is a sorted synthetic one (``write_synthetic(order="sorted")``: binormal scores,
continuous, so both methods must return the same item at every planned rank; checked), written
once per row-group size to local disk, then copied file by file to a SeaweedFS S3 server started
on loopback for it (as the test suite's fixture starts one, with larger volumes).
Timings are wall times on a ``LocalCluster`` of 2 worker processes x 1 thread, metadata reads
included (open_resource and read_parquet), the best of ``--repeats`` (other processes on a shared
machine only ever slow a run down).

Usage::

    python benchmarks/bench_sorted_bytes.py             # n = 1e8; row groups 2**20, 2**17, 2**14, 2**11
    python benchmarks/bench_sorted_bytes.py --quick     # n = 1e6, to try it out
    python benchmarks/bench_sorted_bytes.py --storage local --row-group-rows 131072 --predict 1000000000

The load average is printed with every row: with 2 cores, a load well above 2 means other
processes took CPU from the run and its times are contaminated (the bytes are not).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import shutil
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dask
import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import s3fs
from distributed import Client, LocalCluster

from prdist import population
from prdist.dataflow.engine.cluster import WORKER_MALLOC_CONFIG
from prdist.dataflow import extract_ranks, open_resource
from prdist.dataflow.ranks.extract import sorted_extraction
from prdist.dataflow.synth import write_synthetic
from prdist.paula.plan import plan_paula

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from seaweed import admin_identity, running_s3  # noqa: E402  (shared with tests/conftest.py)

MODEL = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)
COLUMNS = ["key", "score", "label"]
EPS, WINDOW = 0.03, 100
BUCKET = "prdist-bench"


# --------------------------------------------------------------------------------------------
# An S3 server on loopback (tests/support/seaweed.py, with room for gigabytes: the test fixture's 32
# volumes of 64 MB hold 2 GB)


@contextlib.contextmanager
def seaweed_s3(workdir: Path, *, timeout: float = 60.0):
    """Run ``weed server`` with S3 on loopback; yield (s3fs storage options, a filesystem).

    Stopped (SIGTERM, then SIGKILL) and its data directory deleted afterwards.
    """
    key, secret = "prdist-bench-key", f"prdist-bench-secret-{uuid.uuid4().hex}"
    identities = {"identities": [admin_identity(key, secret)]}
    with running_s3(workdir, identities, key, secret, timeout=timeout, volume_mb=1024, volumes=64) as endpoint:
        options = {"key": key, "secret": secret, "endpoint_url": endpoint}
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
        fs.mkdir(BUCKET)
        yield options, fs


# --------------------------------------------------------------------------------------------
# Counting the bytes the Parquet reader gets from storage


class CountingFile:
    """A read-only file object that adds the length of every read to its filesystem's count."""

    def __init__(self, handle, counter):
        self._handle, self._counter = handle, counter

    def read(self, size=-1):
        data = self._handle.read(size)
        self._counter.bytes += len(data)
        self._counter.reads += 1
        return data

    def readinto(self, buffer):
        got = self._handle.readinto(buffer)
        self._counter.bytes += got or 0
        self._counter.reads += 1
        return got

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()

    def __getattr__(self, name):
        return getattr(self._handle, name)


class CountingFS:
    """Wraps an fsspec filesystem; files opened through it count the bytes read from them."""

    def __init__(self, fs):
        self._fs = fs
        self.bytes = 0
        self.reads = 0

    def open(self, path, mode="rb", **kwargs):
        return CountingFile(self._fs.open(path, mode, **kwargs), self)

    def __getattr__(self, name):
        return getattr(self._fs, name)


# --------------------------------------------------------------------------------------------
# The two methods


def paula_extract(url, storage_options, client):
    """PAULA's way: open (footers only), plan, read the row groups holding the planned ranks."""
    resource = open_resource(url, storage_options=storage_options, label="label")
    plan = plan_paula(resource.n, eps=EPS, window=WINDOW)
    return resource, plan, sorted_extraction(resource, plan.ranks, client=client)


def measured_bytes(resource, ranks):
    """Bytes the reader got from storage for an in-process extract_ranks, and that run's wall time."""
    counting = CountingFS(resource.fs)
    started = time.perf_counter()
    frame = extract_ranks(dataclasses.replace(resource, fs=counting), ranks)
    return counting.bytes, counting.reads, time.perf_counter() - started, frame


def _take(frame: pd.DataFrame, positions: np.ndarray) -> pd.DataFrame:
    return frame.iloc[positions]


def full_scan(url, storage_options, ranks, client) -> pd.DataFrame:
    """The peer: read every row of the three columns once, taking the ranks by position.

    ``dask.dataframe.read_parquet`` with one partition per file (the files in storage order);
    every file's row count comes from its footer, which gives each partition's first rank, so one
    pass over the data suffices and a task holds one file: it works at any n. Files holding no
    planned rank are read too (a full scan is the peer; skipping them would be extract_ranks at
    file granularity).
    """
    frame = dd.read_parquet(url, columns=COLUMNS, storage_options=storage_options, split_row_groups=False)
    fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
    paths = sorted(fs.find(root))
    paths = [p for p in paths if p.endswith(".parquet")]
    if frame.npartitions != len(paths):
        raise RuntimeError(f"read_parquet made {frame.npartitions} partitions of {len(paths)} files")

    def rows_of(path):
        with fs.open(path, "rb") as handle:
            return pq.ParquetFile(handle).metadata.num_rows

    with ThreadPoolExecutor(16) as pool:
        lengths = np.fromiter(pool.map(rows_of, paths), dtype=np.int64, count=len(paths))
    starts = np.concatenate(([0], np.cumsum(lengths)))
    positions = ranks - 1
    owner = np.searchsorted(starts, positions, side="right") - 1
    # Every partition is read, also those holding no planned rank: a full scan.
    takes = [dask.delayed(_take)(part, positions[owner == p] - starts[p]) for p, part in enumerate(frame.to_delayed())]
    taken = pd.concat(client.compute(takes, sync=True), ignore_index=True)
    taken.insert(0, "rank", ranks)
    return taken


def footer_bytes(resource) -> int:
    """Bytes of the Parquet footers of all files: what open_resource reads, once."""
    total = 0
    for path in resource.files:
        with resource.fs.open(path, "rb") as handle:
            total += pq.ParquetFile(handle).metadata.serialized_size + 8  # + length and magic
    return total


def same_items(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Same rank, key, score and label in every row (dtypes aside)."""
    return len(a) == len(b) and all(np.array_equal(a[c].to_numpy(), b[c].to_numpy()) for c in ("rank", *COLUMNS))


def predicted_fraction(n: int, row_group_rows: int) -> tuple[int, float]:
    """Planned ranks, and the share of rows in the row groups that hold one (equal row groups)."""
    ranks = plan_paula(n, eps=EPS, window=WINDOW).ranks
    first_rows = np.unique((ranks - 1) // row_group_rows) * row_group_rows
    rows = int(np.minimum(first_rows + row_group_rows, n).sum() - first_rows.sum())
    return ranks.size, rows / n


def measure(storage: str, url: str, options, client, *, group_rows: int, repeats: int) -> dict:
    """Both methods on one copy of the resource: bytes (accounted, measured, footers) and best times."""
    load_before = load()
    paula_s = peer_s = inprocess_s = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        resource, plan, found = paula_extract(url, options, client)
        paula_s = min(paula_s, time.perf_counter() - started)
        got, reads, seconds, counted_frame = measured_bytes(resource, plan.ranks)
        inprocess_s = min(inprocess_s, seconds)
        started = time.perf_counter()
        peer = full_scan(url, options, plan.ranks, client)
        peer_s = min(peer_s, time.perf_counter() - started)
    total_columns = resource.bytes_of(range(len(resource.row_groups)), COLUMNS)
    total_files = sum(resource.fs.size(path) for path in resource.files)
    row = dict(
        storage=storage, n=resource.n, group_rows=group_rows, planned=plan.size,
        groups_read=found.row_groups_read, groups=len(resource.row_groups),
        accounted=found.bytes_read, total_columns=total_columns,
        measured=got, reads=reads, total_files=total_files, footers=footer_bytes(resource),
        paula_s=paula_s, inprocess_s=inprocess_s, peer_s=peer_s,
        same=same_items(found.items, peer) and same_items(found.items, counted_frame),
        load=f"{load_before:.1f}-{load():.1f}",
    )
    print(f"  {storage}: {row['groups_read']}/{row['groups']} row groups, accounted "
          f"{row['accounted'] / total_columns:.3%}, measured {got / total_files:.3%} ({reads} reads); "
          f"prdist {paula_s:.1f} s (in-process {inprocess_s:.1f} s), full scan {peer_s:.1f} s; "
          f"same items: {row['same']}; load {row['load']}", flush=True)
    return row


def load() -> float:
    return os.getloadavg()[0]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="rows (repeatable; default 1e8)")
    parser.add_argument("--quick", action="store_true", help="n = 1e6 only (overrides --n)")
    parser.add_argument("--row-group-rows", type=int, action="append",
                        help="rows per row group (repeatable; default 2**20, 2**17 = the synth default, 2**14, 2**11)")
    parser.add_argument("--storage", choices=("local", "s3"), action="append", help="default both")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, 1 thread each (default 2)")
    parser.add_argument("--memory-limit", default="4GiB", help="memory limit per worker (default 4GiB)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic resource (default 1)")
    parser.add_argument("--repeats", type=int, default=1, help="timings of each method, best kept (default 1)")
    parser.add_argument("--predict", type=int, action="append", default=[],
                        help="also print the predicted fraction at this n, without writing it (repeatable)")
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    sizes = [1_000_000] if args.quick else (args.n or [100_000_000])
    group_sizes = args.row_group_rows or [1 << 20, 1 << 17, 1 << 14, 1 << 11]
    storages = args.storage or ["local", "s3"]
    scratch = Path(tempfile.mkdtemp(prefix="bench-sorted-bytes-", dir=args.dir))

    print(f"model: {MODEL!r}; plan eps {EPS}, window {WINDOW}; {os.cpu_count()} cores; scratch {scratch}")
    rows = []
    try:
        with dask.config.set(WORKER_MALLOC_CONFIG), LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          memory_limit=args.memory_limit, dashboard_address=":0") as cluster, Client(cluster) as client:
            print(f"cluster: {args.workers} worker processes x 1 thread, memory limit {args.memory_limit} per worker")
            for n in sizes:
                for group_rows in group_sizes:
                    local = scratch / f"sorted-n{n}-rg{group_rows}"
                    started = time.perf_counter()
                    write_synthetic(MODEL, n=n, out=str(local), order="sorted", seed=args.seed, client=client,
                                    row_group_size=group_rows)
                    file_bytes = sum(p.stat().st_size for p in local.glob("*.parquet"))
                    print(f"\nn = {n:,}, row groups of {group_rows:,} rows: {file_bytes / 1e9:.2f} GB of Parquet "
                          f"written in {time.perf_counter() - started:.0f} s", flush=True)
                    if "local" in storages:
                        rows.append(measure("local", str(local), None, client, group_rows=group_rows, repeats=args.repeats))
                    if "s3" in storages:
                        # A server per resource: SeaweedFS keeps deleted objects on disk until a
                        # vacuum, and its data directory goes with it.
                        started = time.perf_counter()
                        with seaweed_s3(scratch / f"seaweedfs-{local.name}") as (options, fs):
                            url = f"s3://{BUCKET}/{local.name}"
                            # One file at a time: fs.put of a directory uploads all files at once,
                            # buffering them (22 GB of memory for the 239 files of n = 1e9).
                            for path in sorted(local.iterdir()):
                                fs.put_file(str(path), f"{BUCKET}/{local.name}/{path.name}")
                            print(f"  SeaweedFS started, resource copied to {url}: {time.perf_counter() - started:.0f} s",
                                  flush=True)
                            rows.append(measure("s3", url, options, client, group_rows=group_rows, repeats=args.repeats))
                    shutil.rmtree(local)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print("\n| storage | n | row-group rows | row groups read | bytes read, accounted | bytes read, measured | "
          "footers (open_resource) | prdist extract s | full scan s | speed-up | same items | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['storage']} | {r['n']:,} | {r['group_rows']:,} | {r['groups_read']:,} / {r['groups']:,} | "
              f"{r['accounted'] / 1e6:,.1f} MB / {r['total_columns'] / 1e6:,.0f} MB = {r['accounted'] / r['total_columns']:.3%} | "
              f"{r['measured'] / 1e6:,.1f} MB / {r['total_files'] / 1e6:,.0f} MB = {r['measured'] / r['total_files']:.3%} | "
              f"{r['footers'] / 1e6:,.1f} MB = {r['footers'] / r['total_files']:.3%} | "
              f"{r['paula_s']:.1f} | {r['peer_s']:.1f} | {r['peer_s'] / r['paula_s']:.1f}x | "
              f"{'yes' if r['same'] else 'NO'} | {r['load']} |")
    print("\ngoal: bytes read < 1 % of the resource. Full scan = dask read_parquet of key, score, label "
          "(one partition per file), ranks taken by position: it reads 100 % of those columns.")
    predict = sorted(set(args.predict) | set(sizes))
    print("\npredicted from the plan alone (rows of the row groups holding a planned rank / n):")
    print("| n | planned ranks | " + " | ".join(f"row groups of {g:,}" for g in group_sizes) + " |")
    print("|---:|---:|" + "---:|" * len(group_sizes))
    for n in predict:
        cells = [predicted_fraction(n, g) for g in group_sizes]
        print(f"| {n:,} | {cells[0][0]:,} | " + " | ".join(f"{share:.3%}" for _, share in cells) + " |")


if __name__ == "__main__":
    main()
