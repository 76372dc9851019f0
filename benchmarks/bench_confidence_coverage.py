"""Coverage and width of PAULA's deterministic bounds and of its confidence mode on noisy labels.

Claim (issue 9): on a resource whose labels are independent draws from a smoothly decreasing rate,
the paper's bounds miss the exact precision at many grid ranks, while ``paula_bounds(...,
confidence=c)`` contains it at every rank simultaneously in at least a share c of the resources,
at a modest widening. A deliberately non-monotone model shows what happens when the model fails,
and how often the monotone-rate test flags it.

Each resource lays a population model out in rank order (the score of rank i is the
(1 - (i - 1/2)/n) quantile of the score distribution) and draws label i from Bernoulli(P(Y = 1 |
score_i)), independently per seed; this is the model of :mod:`prdist.paula.confidence`, conditionally on
the scores. Models: bibeta (neg Beta(2, 5), pos Beta(5, 2), prevalence 0.3) and binormal (neg
N(0, 1), pos N(1.5, 1), prevalence 0.3) have decreasing rates; "bibeta+bump" moves 30 % of the
positives into a N(0.3, 0.03²) bump of scores (the rate rises from 0.08 to 0.45 between ranks
0.75e6 and 1.08e6 of 2e6); "spiked windows" adds 0.3 to the rate inside every third PAULA window,
an adversary aimed at the plan.

Usage::

    python benchmarks/bench_confidence_coverage.py                 # n = 2e6, 100 seeds
    python benchmarks/bench_confidence_coverage.py --n 200000 --seeds 20 --confidence 0.8 0.95

Prints one Markdown table row per (model, confidence): the share of resources whose bounds contain
p(r) at every rank r = 1..n, the share of grid ranks the deterministic bounds miss and by how
much, the mean width of both kinds of bounds on the precision (over the grid ranks and over all
ranks past g_l), and the rejection rate of the monotone-rate test at level 1 - c.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from prdist import paula_bounds, plan_paula
from prdist.population import bibeta, binormal, bumped

def _bibeta():
    return bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.3)


def population_rates(model):
    """Rates in rank order: the score of rank i is the (1 - (i - 1/2)/n) quantile of the scores."""

    def rates(plan):
        levels = 1.0 - (np.arange(plan.n) + 0.5) / plan.n
        return model().positive_probability(model().score_quantile(levels))

    return rates


def spiked_windows(plan):
    """bibeta's rates plus 0.3 inside every third window past rank n/100: an adversary of PAULA."""
    rho = population_rates(_bibeta)(plan)
    for g in plan.grid[1::3][plan.grid[1::3] > plan.n // 100]:
        rho[g - plan.window : g] = np.minimum(1.0, rho[g - plan.window : g] + 0.3)
    return rho


MODELS = {
    "bibeta": population_rates(_bibeta),
    "binormal": population_rates(lambda: binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.3)),
    "bibeta+bump (non-monotone)": population_rates(lambda: bumped(_bibeta(), bump=(0.3, 0.03, 0.3))),
    "spiked windows (non-monotone)": spiked_windows,
}


def run(n, seeds, confidences, eps, window, models):
    plan = plan_paula(n, eps=eps, window=window)
    ranks = np.arange(1, n + 1)
    past = ranks > plan.g_l
    grid = plan.grid[1:]
    print(f"n={n} eps={eps} window={window}: {plan.size} labels, {plan.grid.size} grid points, "
          f"g_l={plan.g_l}, seeds {seeds[0]}..{seeds[-1]}")
    print()
    print("| model | confidence | covers all ranks: confidence mode | covers all ranks: paper | "
          "paper: grid ranks missed | paper: largest miss | width at grid ranks: paper / confidence | "
          "width past g_l: paper / confidence | widening (grid ranks) mean / max | monotone-rate test rejects |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in models:
        rho = MODELS[name](plan)
        started = time.perf_counter()
        stats = {c: {"cover": 0, "width_grid": [], "width_all": [], "widen_mean": [], "widen_max": [], "reject": 0}
                 for c in confidences}
        det = {"cover": 0, "missed": [], "miss": [], "width_grid": [], "width_all": []}
        for seed in seeds:
            v = (np.random.default_rng(seed).random(n) < rho).astype(np.float64)
            p = np.cumsum(v) / ranks
            labels = v[plan.ranks - 1]
            b = paula_bounds(plan, labels)
            lo, hi = b.lower(ranks), b.upper(ranks)
            det["cover"] += bool(np.all(lo <= p + 1e-12) and np.all(p <= hi + 1e-12))
            miss = np.maximum(lo[grid - 1] - p[grid - 1], p[grid - 1] - hi[grid - 1])
            det["missed"].append(np.mean(miss > 1e-12))
            det["miss"].append(max(0.0, float(miss.max())))
            det["width_grid"].append(np.mean(hi[grid - 1] - lo[grid - 1]))
            det["width_all"].append(np.mean((hi - lo)[past]))
            for c in confidences:
                bc = paula_bounds(plan, labels, confidence=c)
                lo, hi = bc.lower(ranks), bc.upper(ranks)
                s = stats[c]
                s["cover"] += bool(np.all(lo <= p + 1e-12) and np.all(p <= hi + 1e-12))
                s["width_grid"].append(np.mean(hi[grid - 1] - lo[grid - 1]))
                s["width_all"].append(np.mean((hi - lo)[past]))
                noise = bc.diagnostics.confidence
                s["widen_mean"].append(noise.widening_mean)
                s["widen_max"].append(noise.widening_max)
                s["reject"] += noise.model_rejected
        k = len(seeds)
        for c in confidences:
            s = stats[c]
            print(f"| {name} | {c} | {s['cover'] / k:.3f} | {det['cover'] / k:.3f} | "
                  f"{np.mean(det['missed']):.2f} | {np.max(det['miss']):.4f} | "
                  f"{np.mean(det['width_grid']):.4f} / {np.mean(s['width_grid']):.4f} | "
                  f"{np.mean(det['width_all']):.4f} / {np.mean(s['width_all']):.4f} | "
                  f"{np.mean(s['widen_mean']):.4f} / {np.max(s['widen_max']):.4f} | {s['reject'] / k:.2f} |")
        print(f"<!-- {name}: {time.perf_counter() - started:.0f} s -->", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--seeds", type=int, default=100, help="resources per model (seeds 0..seeds-1)")
    parser.add_argument("--confidence", type=float, nargs="+", default=[0.95])
    parser.add_argument("--eps", type=float, default=0.05)
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    run(args.n, list(range(args.seeds)), args.confidence, args.eps, args.window, args.models)


if __name__ == "__main__":
    main()
