"""Benchmark: how fast the ``prdist`` command answers, end to end, as a user times it.

Cases (wall time of the whole process, median of ``--repeats``):

- ``--help``; ``budget --n 1e9``;
- ``labels import`` of 10,000 labels into a new local store;
- a rerun of a committed run (``run`` on a 2e6-item resource whose run exists);
- a fresh run on an existing 2e6-item resource (labels from its oracle column, a new ``--out``);
- 8 fresh runs started at once (the time until the last ends, and how many succeeded).

``--before DIR`` also times the checkout in DIR with its own ``.venv`` (e.g. /work/main, read
only) in the same session, each case beside the new one; the resource is written once (by this
checkout's ``prdist synth``) and read by both. Goals of issue 18: --help <= 0.5 s, budget <= 0.8 s,
10,000 labels <= 2 s, committed rerun <= 2 s, fresh 2e6 run <= 12 s, 8 at once all succeed.

``--without-bytecode`` also times this checkout without ``.pyc`` files. The Makefile now installs
the dependencies' bytecode (``uv pip sync --compile-bytecode``; uv, unlike pip, does not by
default) and that of prdist and flows (``compileall`` after the editable install), and where
``PYTHONDONTWRITEBYTECODE`` is set (as on the development machine) a venv built without it
compiles every imported module on every start. The column separates that gain from the code's.

No Prefect API is configured (``PREFECT_API_URL`` is removed from the environment): the default of
a new user. The 1-minute load average is printed beside every row: above the number of cores,
the figures are contaminated by other work.

Usage::

    python benchmarks/bench_cli.py --before /work/main --without-bytecode
    python benchmarks/bench_cli.py --repeats 1 --skip once
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1]
N = 2_000_000
CONCURRENT = 8
GOALS = {"--help": 0.5, "budget": 0.8, "labels import 10,000": 2.0, "committed rerun": 2.0, "fresh run 2e6": 12.0}


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return {**env, **extra}


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env or environment(), capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    ours = [line for line in lines if line.startswith("prdist")]  # the command's message, not a log record
    # A failure names its error line (exit code first), not the in-process note printed after it.
    errors = [line for line in ours if line.startswith(("prdist: error", "prdist: failed"))]
    last = (errors or ours or lines or [""])[-1]
    return time.perf_counter() - started, done.returncode, last if done.returncode == 0 else f"exit {done.returncode}: {last}"


class Checkout:
    """One checkout's ``prdist``, its environment and a scratch directory for its outputs."""

    def __init__(self, name: str, root: Path, scratch: Path, **env: str):
        self.name, self.prdist = name, str(root / ".venv" / "bin" / "prdist")
        self.scratch = scratch / name
        self.scratch.mkdir(parents=True)
        self.env = environment(**env)
        self._fresh = 0

    def fresh(self, what: str) -> Path:
        self._fresh += 1
        return self.scratch / f"{what}-{self._fresh}"

    def cmd(self, *args: str) -> list[str]:
        return [self.prdist, *args]


def case_commands(co: Checkout, resource: str, labels_file: str):
    """{case: function() -> (seconds, ok, note)} for one checkout."""
    committed_out = str(co.scratch / "committed")
    run_args = ["run", "--resource", resource, "--oracle-column", "label"]

    def single(argv_of):
        def go():
            seconds, code, last = timed(argv_of(), co.scratch, co.env)
            return seconds, code == 0, "" if code == 0 else last
        return go

    def concurrent():
        outs = [str(co.fresh("concurrent")) for _ in range(CONCURRENT)]
        started = time.perf_counter()
        with ThreadPoolExecutor(CONCURRENT) as pool:
            results = list(pool.map(lambda out: timed(co.cmd(*run_args, "--out", out), co.scratch, co.env), outs))
        failures = [last for _, code, last in results if code != 0]
        note = f"{CONCURRENT - len(failures)}/{CONCURRENT} succeeded" + (f"; e.g. {failures[0][:90]}" if failures else "")
        return time.perf_counter() - started, not failures, note

    return {
        "--help": single(lambda: co.cmd("--help")),
        "budget": single(lambda: co.cmd("budget", "--n", "1000000000")),
        "labels import 10,000": single(lambda: co.cmd("labels", "import", "--store", str(co.fresh("store")), labels_file)),
        "committed rerun": (lambda: timed(co.cmd(*run_args, "--out", committed_out), co.scratch, co.env),
                            single(lambda: co.cmd(*run_args, "--out", committed_out))),
        "fresh run 2e6": single(lambda: co.cmd(*run_args, "--out", str(co.fresh("fresh")))),
        "8 runs at once": concurrent,
    }


def measure(case, repeats: int) -> tuple[float, bool, str]:
    if isinstance(case, tuple):  # (set-up, measured)
        case[0]()
        case = case[1]
    results = [case() for _ in range(repeats)]
    notes = sorted({note for _, _, note in results if note})
    return statistics.median(r[0] for r in results), all(r[1] for r in results), "; ".join(notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=None, help="a checkout with its own .venv to time beside this one")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--without-bytecode", action="store_true",
        help="also time this checkout as installed without .pyc files (an empty PYTHONPYCACHEPREFIX): "
             "the Makefile now installs bytecode, a checkout built before did not",
    )  # fmt: skip
    parser.add_argument("--skip", action="append", default=[], help="leave out the cases whose name holds this text (e.g. once: the 8 runs at once)")
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-cli-", dir=args.dir))
    try:
        checkouts = [Checkout("new", HERE, scratch)]
        if args.without_bytecode:
            (scratch / "no-pyc").mkdir()
            checkouts.append(Checkout("new, no .pyc", HERE, scratch, PYTHONPYCACHEPREFIX=str(scratch / "no-pyc"),
                                      PYTHONDONTWRITEBYTECODE="1"))
        if args.before is not None:
            checkouts.append(Checkout("before", args.before, scratch))
        resource = str(scratch / "resource")
        subprocess.run(checkouts[0].cmd("synth", "--n", str(N), "--seed", "1", "--out", resource), check=True,
                       env=environment(), capture_output=True)
        rng = np.random.default_rng(0)
        labels_file = str(scratch / "labels.csv")
        pd.DataFrame({"key": rng.permutation(10**6)[:10_000], "label": rng.integers(0, 2, 10_000)}).to_csv(labels_file, index=False)

        commands = {co.name: case_commands(co, resource, labels_file) for co in checkouts}
        print(f"prdist command timings, median of {args.repeats} (s); {os.cpu_count()} cores; no Prefect API configured")
        others = [co.name for co in checkouts[1:]]
        print(f"{'case':<22} {'new':>8} {'goal':>6}" + "".join(f" {name:>12} {'x':>5}" for name in others) + f" {'load':>5}  notes")
        for case in commands["new"]:
            if any(word in case for word in args.skip):
                continue
            row = {name: measure(commands[name][case], args.repeats) for name in commands}
            new_s, new_ok, _ = row["new"]
            goal = GOALS.get(case)
            line = f"{case:<22} {new_s:>8.2f} {goal if goal else 'all ok':>6}"
            line += "".join(f" {row[name][0]:>12.2f} {row[name][0] / new_s:>5.1f}" for name in others)
            notes = [f"{name}: {note}" for name, (_, _, note) in row.items() if note]
            line += f" {os.getloadavg()[0]:>5.1f}  " + ("; ".join(notes) if notes else ("ok" if new_ok else "FAILED"))
            print(line, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
