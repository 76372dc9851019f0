"""Benchmark: a ``prdist run`` with a judge column against the same run without one.

Claim measured (issue 30's goal "a 10⁸-item run with a judge column within 1.5× of the same run
without one"): on one synthetic resource with a ``judge`` column (``prdist synth
--judge-accuracy``), the wall time of the whole ``prdist run`` process (plan, selection of the
planned items, labels, bounds, report, manifest) with ``--judge-column judge``, and with
``--judge-column judge --gold-budget B`` (the judge plus a gold audit, the oracle column playing
gold: bounds that certify gold), against the same run with neither. Each run writes into a fresh
``--out`` (so nothing is reused from an earlier run); rounds are interleaved; the best and the
median of ``--repeats`` rounds are printed, with the ratios to the run without a judge and the
load average before and after.

    .venv/bin/python benchmarks/bench_judge_column.py                       # n = 1e8, sorted and shuffled
    .venv/bin/python benchmarks/bench_judge_column.py --n 10000000 --orders shuffled --repeats 3

The resource is written under ``--data-dir`` (default /var/tmp; about 1.6 GB per order at 10⁸)
and deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRDIST = ROOT / ".venv" / "bin" / "prdist"
VARIANTS = {
    "without judge": [],
    "judge column": ["--judge-column", "judge"],
    "judge + gold audit": ["--judge-column", "judge", "--gold-budget", "2000"],
}


def _synthesise(n: int, order: str, where: Path) -> str:
    out = where / f"resource-{order}-{n}"
    if not out.exists():
        subprocess.run([str(PRDIST), "synth", "--n", str(n), "--seed", "1", "--order", order, "--judge-accuracy", "0.9",
                        "--prevalence", "0.3", "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return str(out)


def _timed_run(resource: str, extra: list[str], where: Path) -> float:
    """Seconds of one whole ``prdist run`` process into a fresh run root (exit 0 or 3 accepted)."""
    out = tempfile.mkdtemp(prefix="runs-", dir=where)
    start = time.perf_counter()
    done = subprocess.run([str(PRDIST), "run", "--resource", resource, "--oracle-column", "label", "--out", out, *extra],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(out)
    if done.returncode not in (0, 3):
        raise SystemExit(f"prdist run {' '.join(extra)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000_000)
    parser.add_argument("--orders", default="sorted,shuffled", help="comma-separated: sorted, shuffled")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default="/var/tmp")
    parser.add_argument("--keep", action="store_true", help="keep the synthetic resources")
    args = parser.parse_args(argv)
    where = Path(tempfile.mkdtemp(prefix="bench-judge-", dir=args.data_dir))
    try:
        for order in args.orders.split(","):
            print(f"n = {args.n:,} ({order}); load before synth {_load()}", flush=True)
            resource = _synthesise(args.n, order, where)
            print(f"  load before runs {_load()}", flush=True)
            times = {name: [] for name in VARIANTS}
            for _ in range(args.repeats):
                for name, extra in VARIANTS.items():
                    times[name].append(_timed_run(resource, extra, where))
            base = min(times["without judge"])
            for name, got in times.items():
                print(f"  {name:<20} best {min(got):7.2f} s  median {statistics.median(got):7.2f} s  "
                      f"best ratio {min(got) / base:5.2f}x", flush=True)
            print(f"  load after runs {_load()}", flush=True)
            if not args.keep:
                shutil.rmtree(resource)
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
