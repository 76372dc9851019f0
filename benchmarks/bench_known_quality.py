"""Coverage and width of the bounds on the gold precision, with a judge or annotators and a gold
audit, beside the gold-only bounds from the same gold labels (issue 30).

Claim: ``gold_bounds(plan, verdicts, gold, confidence=c, judge=...)`` contains the exact gold
precision at every reported rank at once (the rows of ``bounds.parquet``: 1..g_l, every grid
rank, n) in at least a share c - 0.01 of the resources, whatever the judge; and with a judge of
accuracy 0.9 and gold on 10 % of the planned items its mean width is at most 0.6x that of the
gold-only bounds from the same gold labels (``gold_bounds`` without verdicts).

Each resource: n items in rank order, gold label i ~ Bernoulli(rho_i) independently, rho falling
linearly from 0.95 at rank 1 to 0.35 at rank n (model (M) of ``prdist.paula.confidence``); a PAULA plan
(eps 0.03, window 100 by default); a gold audit of 10 % of the planned items
(``plan_gold_audit``); the verdicts of one setting on every planned item:

- ``judge a`` (a = 0.6, 0.8, 0.9, 0.99): a 0/1 judge right with probability a, independently;
- ``judge 0.9 prob``: a probability judge, P(g = 1 | s) for a signal s ~ N(+-1.2816, 1) (so its
  0.5 threshold is right 90 % of the time);
- ``judge biased``: right 97 % of the time in the top 10 % of ranks, lenient below (says 1 on
  every gold 1 and on half the gold 0s);
- ``judge adversarial``: says the opposite of gold 90 % of the time;
- ``annotators 0.9``: the run's verdicts (no judge) from one annotator right 90 % of the time.

The gold-only baseline is computed on the same resource and audit. For every setting with a judge
the bounds are also computed from an audit of the same size drawn half and half from the judge's
two classes in every segment (``plan_gold_audit(..., judge=...)``, analysed with
``audit_judge``), the design ``prdist run --judge-column`` uses. Widths are the mean of
precision_upper - precision_lower over the reported ranks ("all"), and over the grid ranks past
g_l alone ("grid"). Prints one Markdown row per setting and the load average.

The floor. The prediction-powered part of the bounds estimates each functional Θ = Σ_s b_s T_s
(``prdist.verdicts.known_quality``, step 2) with variance Σ_s b_s² K_s S_s²(λ), K_s = N_s² (1 - n_s/N_s) / n_s
and S_s²(λ) the within-segment variance of g - λ f over the planned items; λ = 0 is gold alone.
The smallest standard deviation any λ reaches - the one an oracle knowing every S_s² and
choosing λ in [0, 1] (the construction's range, as PPI++'s clipping) per functional would get,
with the interval of a central limit theorem - is at λ* = Σ b² K cov_s(g, f) / Σ b² K var_s(f),
clipped to [0, 1]. "sd floor" is sqrt(V(λ*) / V(0)) from the true
labels and the predictor on *all* planned items, averaged over the functionals; "sd built" is
the construction's own estimated standard error over gold alone's (its λ tuned on the audit, its
variances estimated there and floored by the pooled variance), averaged alike: tuned and
estimated on the same audit, it can sit a little below the floor of the true standard deviations. The width ratio cannot fall below
about the sd floor: the monotone-rate margins of the grid points and the clamping to what gold
proves do not shrink with a better predictor.

Usage::

    python benchmarks/bench_known_quality.py                     # n = 1e5, 500 resources
    python benchmarks/bench_known_quality.py --n 30000 --resources 50
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np

from prdist import plan_paula
from prdist.verdicts.audit import plan_gold_audit, segments
from prdist.verdicts.known_quality import (
    NEUTRAL,
    _coefficients,
    _estimate,
    _predictor,
    _StrataStats,
    gold_bounds,
)

SETTINGS = (
    "judge 0.6",
    "judge 0.8",
    "judge 0.9",
    "judge 0.99",
    "judge 0.9 prob",
    "judge biased",
    "judge adversarial",
    "annotators 0.9",
)
SIGNAL = 1.2815515655446004  # the 0.9 quantile of N(0, 1)


@dataclass(frozen=True)
class Outcome:
    """One resource under one setting: coverage and mean widths, of the method and gold alone;
    for a setting with a judge, also those of the audit stratified by the judge's classes."""

    covered: bool
    width_all: float
    width_grid: float
    sd_built: float = float("nan")
    sd_floor: float = float("nan")
    by_judge: "Outcome | None" = None


def _flip(truth: np.ndarray, right: np.ndarray, rng) -> np.ndarray:
    return np.where(rng.random(truth.size) < right, truth, 1.0 - truth)


def verdicts_of(setting: str, truth: np.ndarray, ranks: np.ndarray, n: int, rng) -> tuple[np.ndarray, np.ndarray | None]:
    """(verdicts, judge) aligned with the planned ranks for one setting."""
    if setting.startswith("annotators"):
        return _flip(truth, float(setting.split()[1]), rng), None
    if setting == "judge 0.9 prob":
        signal = np.where(truth == 1.0, SIGNAL, -SIGNAL) + rng.standard_normal(truth.size)
        judge = 1.0 / (1.0 + np.exp(-2.0 * SIGNAL * signal))
    elif setting == "judge biased":
        top = ranks <= n // 10
        lenient = np.where(truth == 1.0, 1.0, (rng.random(truth.size) < 0.5).astype(float))
        judge = np.where(top, _flip(truth, 0.97, rng), lenient)
    elif setting == "judge adversarial":
        judge = _flip(truth, 0.1, rng)
    else:
        judge = _flip(truth, float(setting.split()[1]), rng)
    return np.where(judge >= 0.5, 1.0, 0.0), judge


def _outcome(bounds, exact: np.ndarray, grid_rows: np.ndarray) -> Outcome:
    t = bounds.table()
    r = t["rank"].to_numpy()
    lo, hi = t.precision_lower.to_numpy(), t.precision_upper.to_numpy()
    p = exact[r - 1]
    covered = bool(np.all((lo <= p + 1e-12) & (p <= hi + 1e-12)))
    width = hi - lo
    return Outcome(covered, float(width.mean()), float(width[grid_rows].mean()))


def _functionals(plan):
    seg = segments(plan)
    return seg, np.vstack(_coefficients(plan, seg))


def sd_ratios(plan, truth: np.ndarray, gold: np.ndarray, verdicts: np.ndarray, judge) -> tuple[float, float]:
    """(construction's se / gold alone's, oracle floor sqrt(V(λ*)/V(0))), each averaged over the
    functionals with an audited segment (see the module notes)."""
    f, _ = _predictor(verdicts, judge)
    seg, B = _functionals(plan)
    index, count = seg.index(plan.size), seg.sizes.size
    built = _estimate(B, _StrataStats.of(index, count, gold, f), tune=True).se
    alone = _estimate(B, _StrataStats.of(index, count, gold, np.full(plan.size, NEUTRAL)), tune=False).se
    n = _StrataStats.of(index, count, gold, f).audited
    N = seg.sizes.astype(float)
    K = np.where(n > 0, N**2 * (1 - n / N) / np.maximum(n, 1), 0.0)

    def within(x, y):  # within-segment covariance over all planned items (ddof 1)
        mx, my = (np.bincount(index, v, seg.sizes.size) / N for v in (x, y))
        return np.bincount(index, (x - mx[index]) * (y - my[index]), seg.sizes.size) / np.maximum(N - 1, 1)

    W = B**2 * K
    gg, gf, ff = W @ within(truth, truth), W @ within(truth, f), W @ within(f, f)
    lam = np.clip(np.where(ff > 0, gf / np.where(ff > 0, ff, 1), 0.0), 0.0, 1.0)
    keep = (gg > 0) & (alone > 0)
    floor = np.sqrt(np.maximum(gg - 2 * lam * gf + lam**2 * ff, 0)[keep] / gg[keep])
    return float(np.mean(built[keep] / alone[keep])), float(np.mean(floor))


def simulate(seed: int, *, n: int, settings=SETTINGS, eps=0.03, window=100, gold_share=0.1, confidence=0.95):
    """One resource: {setting: Outcome} and the gold-only Outcome."""
    plan = plan_paula(n, eps=eps, window=window)
    rng = np.random.default_rng(seed)
    truth_all = (rng.random(n) < np.linspace(0.95, 0.35, n)).astype(float)
    exact = np.cumsum(truth_all) / np.arange(1, n + 1)
    truth = truth_all[plan.ranks - 1]
    gold = np.full(plan.size, np.nan)
    audit = np.searchsorted(plan.ranks, plan_gold_audit(plan, round(gold_share * plan.size), seed=seed))
    gold[audit] = truth[audit]
    rows = np.unique(np.concatenate((np.arange(1, plan.prefix_end + 1), plan.grid, [n])))
    grid_rows = (rows > plan.prefix_end) & np.isin(rows, plan.grid)
    alone = _outcome(gold_bounds(plan, np.full(plan.size, np.nan), gold, confidence=confidence), exact, grid_rows)
    out = {}
    for setting in settings:
        verdicts, judge = verdicts_of(setting, truth, plan.ranks, n, rng)
        measured = _outcome(gold_bounds(plan, verdicts, gold, confidence=confidence, judge=judge), exact, grid_rows)
        built, floor = sd_ratios(plan, truth, gold, verdicts, judge)
        by_judge = None
        if judge is not None:  # the same number of gold labels, drawn half and half from the judge's classes
            chosen = np.isin(plan.ranks, plan_gold_audit(plan, round(gold_share * plan.size), seed=seed, judge=judge))
            stratified = np.where(chosen, truth, np.nan)
            by_judge = _outcome(gold_bounds(plan, verdicts, stratified, confidence=confidence, judge=judge,
                                            audit_judge=judge), exact, grid_rows)
        out[setting] = Outcome(measured.covered, measured.width_all, measured.width_grid, built, floor, by_judge)
    return out, alone


def run(*, n: int, resources: int, settings=SETTINGS, confidence=0.95, eps=0.03, window=100) -> dict:
    """Aggregate over seeds 0..resources-1: per setting coverage and mean widths, and gold alone's."""
    per = {s: [] for s in settings}
    alone = []
    for seed in range(resources):
        outcomes, base = simulate(seed, n=n, settings=settings, eps=eps, window=window, confidence=confidence)
        alone.append(base)
        for s in settings:
            per[s].append(outcomes[s])

    def summary(items):
        judged = [o.by_judge for o in items if o.by_judge is not None]
        return {
            "by_judge": summary(judged) if judged else None,
            "coverage": float(np.mean([o.covered for o in items])),
            "width_all": float(np.mean([o.width_all for o in items])),
            "width_grid": float(np.mean([o.width_grid for o in items])),
            "sd_built": float(np.mean([o.sd_built for o in items])),
            "sd_floor": float(np.mean([o.sd_floor for o in items])),
        }

    return {"gold alone": summary(alone), **{s: summary(per[s]) for s in settings}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--resources", type=int, default=500)
    parser.add_argument("--confidence", type=float, default=0.95)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run(n=args.n, resources=args.resources, confidence=args.confidence)
    elapsed = time.perf_counter() - start
    plan = plan_paula(args.n)
    goal = args.confidence - 0.01
    base = result["gold alone"]
    print(f"n = {args.n:,}, plan of {plan.size:,} items, gold on {round(0.1 * plan.size):,} (10 %), "
          f"{args.resources} resources, confidence {args.confidence:g} (coverage goal >= {goal:.2f})")
    print("| setting | audit | coverage | width (all rows) | width (grid) | ratio to gold alone (all / grid) | sd built / sd floor | Neyman floor |")
    print("|---|---|---|---|---|---|---|---|")

    def row(name, design, s, sd="", neyman=""):
        below = "" if s["coverage"] >= goal else " (below goal)"
        print(f"| {name} | {design} | {s['coverage']:.3f}{below} | {s['width_all']:.4f} | {s['width_grid']:.4f} | "
              f"{s['width_all'] / base['width_all']:.2f} / {s['width_grid'] / base['width_grid']:.2f} | {sd} | {neyman} |")

    for name, s in result.items():
        sd = "" if np.isnan(s["sd_floor"]) else f"{s['sd_built']:.2f} / {s['sd_floor']:.2f}"
        row(name, "proportional", s, sd)
        if s.get("by_judge"):
            accuracy = name.split()[1] if name.split()[-1][0].isdigit() and "prob" not in name else None
            neyman = f"{2 * np.sqrt(float(accuracy) * (1 - float(accuracy))):.2f}" if accuracy else ""
            row(name, "by judge class", s["by_judge"], "", neyman)
    print("\nsd floor: the smallest ratio of the audit's standard deviation to gold alone's that any λ reaches "
          "(oracle λ in [0, 1], true within-segment variances) with a proportional audit; sd built: the construction's "
          "estimated standard error over gold alone's. Neyman floor: 2 sqrt(a (1 - a)), the ratio of the standard "
          "deviations of the best estimate an audit of a 0/1 judge of accuracy a (sensitivity = specificity) allows, half "
          "the gold in each of its classes (prdist.verdicts.audit), and of gold alone's, with every variance known: the "
          "goal of 0.6x at a = 0.9 is that floor itself, and measured widths add each construction's finite-sample "
          "costs (variances estimated from about five audited items per class and segment, floored by a local pool; the "
          "monotone-rate margins of the grid points, which do not shrink with a better judge).")
    print(f"\n{elapsed:.0f} s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
