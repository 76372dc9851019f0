"""Coverage of the bootstrap bands of ``prdist.bootstrap_bands`` over models, sizes and prevalences.

Claim (issue 26): the README states the bands' coverage; this script measures it on a grid of
population models (the truth: ``model.pr`` on the recall grid of the bands) x sample size n x
prevalence x resampling method, at nominal 90 % and 95 %. For each cell it draws ``reps``
i.i.d. labeled samples (``model.sample(n, seed=s)``), bootstraps each once with B replicates
(``prdist.bootstrap.replicates.bootstrap_replicates``, the replicates behind ``bootstrap_bands``; sample s
is drawn with seed s and bootstrapped with seed 10^6 + s) and takes the
bands at both levels from the same replicates (``BootstrapReplicates.bands(delta)``, which is what
``bootstrap_bands(..., delta=delta)`` returns for the same seed). It reports

- sup-norm coverage: the share of samples whose sup-norm band contains the population curve at
  every grid recall (101 levels on [0.05, 0.95], the default band);
- pointwise coverage: the share whose pointwise interval contains the curve at the grid recalls
  nearest 0.05, 0.5 and 0.9 (0.05, 0.5 and 0.896: the grid has no 0.9);

each with its Monte-Carlo standard error sqrt(c (1 - c) / samples). A sample with fewer than 2
positives or no negative has no bands (``bootstrap_bands`` refuses it); such samples are skipped
and counted, so a cell's coverage is conditional on the sample having bands.

Models: binormal with separation 1.5 and 0.75 (neg N(0, 1), pos N(mu, 1)), bibeta (neg Beta(2, 5),
pos Beta(5, 2)), bilognormal (underlying neg N(0, 1), pos N(1, 1)) and a discrete model with ties
(10 entries per class on {0, 0.1, ..., 0.9}; the functional empirical PR curve is not consistent
for tied scores, so its bands need not cover the population curve at any n).

Usage::

    python benchmarks/bench_band_coverage.py --json docs/band_coverage.json --docs docs/coverage.md
    python benchmarks/bench_band_coverage.py --render docs/band_coverage.json --docs docs/coverage.md
    python benchmarks/bench_band_coverage.py --quick       # 2 cells, 5 samples, B = 50

The default run (120 cells, 200 samples each, B = 500) took 745 s on 2 shared cores. Prints the
load average and the wall time; writes the results as JSON (``--json``), the tables as Markdown
(``--markdown``) and into a page between its markers (``--docs``), after every cell.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from prdist.bootstrap.replicates import BootstrapWarning, bootstrap_replicates, recall_grid
from prdist.curves import TiedScoresWarning
from prdist.errors import DataError
from prdist.population import bibeta, bilognormal, binormal, discrete

LEVELS = (0.90, 0.95)
POINT_RECALLS = (0.05, 0.5, 0.9)
METHODS = ("smoothed-importance", "stratified", "naive")
BOOTSTRAP_SEED_OFFSET = 1_000_000  # sample s is drawn with seed s, bootstrapped with seed 10^6 + s


def _models(prevalence):
    """The population models of the grid at one prevalence, by the name the tables show."""
    return {
        "binormal 1.5": binormal(neg=(0, 1), pos=(1.5, 1), prevalence=prevalence),
        "binormal 0.75": binormal(neg=(0, 1), pos=(0.75, 1), prevalence=prevalence),
        "bibeta": bibeta(neg=(2, 5), pos=(5, 2), prevalence=prevalence),
        "bilognormal": bilognormal(neg=(0, 1), pos=(1, 1), prevalence=prevalence),
        "discrete (ties)": discrete(
            neg=[0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            pos=[0.3, 0.5, 0.6, 0.7, 0.7, 0.8, 0.8, 0.9, 0.9, 0.9],
            prevalence=prevalence,
        ),
    }


MODEL_NAMES = tuple(_models(0.5))


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a model at a prevalence, a sample size and a resampling method."""

    model: str
    prevalence: float
    n: int
    method: str


def point_indices(beta):
    """Indices of the grid recalls nearest each of POINT_RECALLS."""
    return [int(np.argmin(np.abs(beta - r))) for r in POINT_RECALLS]


def coverage_cell(cell: Cell, *, reps: int, replicates: int) -> dict:
    """Draw ``reps`` samples of a cell and count how often each band contains the truth."""
    model = _models(cell.prevalence)[cell.model]
    beta = recall_grid()
    truth = model.pr(beta)
    points = point_indices(beta)
    hits = {level: np.zeros(1 + len(points), dtype=np.int64) for level in LEVELS}
    used = 0
    for seed in range(reps):
        scores, labels = model.sample(cell.n, seed=seed)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BootstrapWarning)
                warnings.simplefilter("ignore", TiedScoresWarning)
                replicated = bootstrap_replicates(
                    scores, labels, replicates=replicates, method=cell.method, seed=BOOTSTRAP_SEED_OFFSET + seed
                )
                frames = {level: replicated.bands(1.0 - level) for level in LEVELS}
        except DataError:
            continue  # fewer than 2 positives or no negative: no bands for this sample
        used += 1
        for level, bands in frames.items():
            inside = (bands.band_lower.to_numpy() <= truth) & (truth <= bands.band_upper.to_numpy())
            pointwise = (bands.pointwise_lower.to_numpy() <= truth) & (
                truth <= bands.pointwise_upper.to_numpy()
            )
            hits[level] += np.concatenate(([inside.all()], pointwise[points]))
    return {
        "model": cell.model,
        "prevalence": cell.prevalence,
        "n": cell.n,
        "method": cell.method,
        "samples": used,
        "skipped": reps - used,
        "levels": {
            f"{level:.2f}": {
                "sup": _share(hits[level][0], used),
                "pointwise": {
                    f"{beta[i]:.3f}": _share(hits[level][1 + j], used) for j, i in enumerate(points)
                },
            }
            for level in LEVELS
        },
    }


def _share(count, total) -> dict:
    """Coverage and its Monte-Carlo standard error (None without samples)."""
    if total == 0:
        return {"coverage": None, "se": None}
    c = float(count) / total
    return {"coverage": c, "se": math.sqrt(c * (1.0 - c) / total)}


def shortfall(share: dict, level: float) -> float | None:
    """Nominal minus coverage when that exceeds 2 Monte-Carlo standard errors, else None."""
    if share["coverage"] is None:
        return None
    gap = level - share["coverage"]
    return gap if gap > 2 * max(share["se"], 1e-12) else None


def format_share(share: dict, level: float) -> str:
    """'0.934 ± 0.020', in bold when more than 2 standard errors below nominal."""
    if share["coverage"] is None:
        return "–"
    text = f"{share['coverage']:.3f} ± {share['se']:.3f}"
    return f"**{text}**" if shortfall(share, level) is not None else text


def _measures(cell: dict, key: str) -> dict:
    """The cell's shares at one level, by measure name: 'sup-norm band', 'pointwise at recall r'."""
    shares = cell["levels"][key]
    named = {"sup-norm band": shares["sup"]}
    named.update({f"pointwise at recall {r}": v for r, v in shares["pointwise"].items()})
    return named


def shortfall_lines(results: dict) -> list[str]:
    """One bullet per level and measure: how many cells fall short of nominal, and the worst."""
    out = []
    for level in LEVELS:
        key = f"{level:.2f}"
        for measure in _measures(results["cells"][0], key):
            measured = [c for c in results["cells"] if c["samples"] > 0]
            short = [(shortfall(_measures(c, key)[measure], level), c) for c in measured]
            short = [(gap, c) for gap, c in short if gap is not None]
            line = (f"- nominal {level:.0%}, {measure}: {len(short)} of {len(measured)} cells more "
                    "than 2 standard errors below nominal")
            if short:
                gap, c = max(short, key=lambda pair: pair[0])
                line += (f"; the worst {gap:.3f} below ({c['model']}, prevalence "
                         f"{c['prevalence']:g}, n = {c['n']}, {c['method']})")
            out.append(line)
    return out


def markdown_tables(results: dict) -> str:
    """The shortfalls, then one Markdown table per nominal level (a row per cell), from the JSON."""
    out = []
    for level in LEVELS:
        key = f"{level:.2f}"
        recalls = list(results["cells"][0]["levels"][key]["pointwise"])
        out.append(f"**Nominal {level:.0%}** (coverage ± Monte-Carlo standard error; bold: more "
                   "than 2 standard errors below nominal)")
        out.append("")
        out.append("| model | prevalence | n | method | samples | sup-norm band | "
                   + " | ".join(f"pointwise at recall {r}" for r in recalls) + " |")
        out.append("|---|---:|---:|---|---:|---:|" + "---:|" * len(recalls))
        for cell in results["cells"]:
            shares = cell["levels"][key]
            row = [cell["model"], f"{cell['prevalence']:g}", str(cell["n"]), cell["method"],
                   str(cell["samples"]), format_share(shares["sup"], level)]
            row += [format_share(shares["pointwise"][r], level) for r in recalls]
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(shortfall_lines(results) + [""] + out)


BEGIN = "<!-- begin: written by benchmarks/bench_band_coverage.py from docs/band_coverage.json -->"
END = "<!-- end: written by benchmarks/bench_band_coverage.py -->"


def embedded_tables(document: str) -> str:
    """The text between the BEGIN and END markers of a document (raises ValueError without them)."""
    head, found, rest = document.partition(BEGIN + "\n")
    tables, found_end, _ = rest.partition(END)
    if not (found and found_end):
        raise ValueError(f"the document has no {BEGIN!r} ... {END!r} markers")
    return tables


def embed(path: str, results: dict) -> None:
    """Replace the tables between the markers of the Markdown file ``path`` by the results'."""
    with open(path) as f:
        document = f.read()
    old = BEGIN + "\n" + embedded_tables(document) + END
    with open(path, "w") as f:
        f.write(document.replace(old, BEGIN + "\n" + markdown_tables(results) + "\n" + END))


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes), for the log."""
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def run(cells, *, reps, replicates, save) -> dict:
    """Measure every cell in turn; ``save`` gets the results so far after each cell."""
    started = time.perf_counter()
    print(f"{os.cpu_count()} CPUs; {load()}; {len(cells)} cells, {reps} samples each, "
          f"B = {replicates}", flush=True)
    results = {
        "settings": {"samples_per_cell": reps, "replicates": replicates,
                     "recall_grid": "101 levels on [0.05, 0.95]", "levels": list(LEVELS),
                     "seeds": f"sample s: model.sample(n, seed=s), s = 0..{reps - 1}; its "
                              f"bootstrap: seed {BOOTSTRAP_SEED_OFFSET} + s"},
        "cells_planned": len(cells),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "cells": [],
    }
    for cell in cells:
        t0 = time.perf_counter()
        results["cells"].append(coverage_cell(cell, reps=reps, replicates=replicates))
        sup = {k: v["sup"]["coverage"] for k, v in results["cells"][-1]["levels"].items()}
        print(f"{cell.model:16} pi={cell.prevalence:<4g} n={cell.n:<5} {cell.method:20} "
              f"sup {sup}  {time.perf_counter() - t0:.1f} s  ({load()})", flush=True)
        results["wall_seconds"] = round(time.perf_counter() - started, 1)
        results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        save(results)
    print(f"wall time {results['wall_seconds']:.0f} s; {load()}")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200, help="samples per cell (seeds 0..reps-1)")
    parser.add_argument("--replicates", type=int, default=500, help="bootstrap replicates B")
    parser.add_argument("--n", type=int, nargs="+", default=[50, 200, 1000, 5000])
    parser.add_argument("--prevalence", type=float, nargs="+", default=[0.1, 0.5])
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES), choices=MODEL_NAMES)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: binormal 1.5, n = 200, prevalence 0.5, 2 methods, "
                             "5 samples, B = 50")
    parser.add_argument("--json", help="write the results here (rewritten after each cell)")
    parser.add_argument("--markdown", help="write the tables here (rewritten after each cell)")
    parser.add_argument("--docs", help="a Markdown file whose tables between the markers "
                                       "(docs/coverage.md) the results replace, after each cell")
    parser.add_argument("--render", metavar="JSON",
                        help="measure nothing: write the tables of this earlier run's JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.replicates, args.n, args.prevalence = 5, 50, [200], [0.5]
        args.models, args.methods = ["binormal 1.5"], ["smoothed-importance", "naive"]
    cells = [Cell(m, p, n, method) for m in args.models for p in args.prevalence
             for n in args.n for method in args.methods]

    def save(results):
        if args.docs:
            embed(args.docs, results)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
                f.write("\n")
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown_tables(results))

    if args.render:
        with open(args.render) as f:
            results = json.load(f)
        save(results)
    else:
        results = run(cells, reps=args.reps, replicates=args.replicates, save=save)
    print(markdown_tables(results))
    return results


if __name__ == "__main__":
    main()
