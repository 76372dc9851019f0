"""Tests of prdist.importance.two_phase: the precision as gold says it from verdicts and a gold audit.

Oracles: the joint estimator with gold as the labels (every key audited), exact expectations by
enumerating every audit of a small sample, the Horvitz-Thompson estimator written from the
label coefficients (found by labeling one key at a time), and a coverage study against the true
labels of synthetic systems (slow tier).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prdist.errors import DataError
from prdist.importance import JointSample, SystemOutput, estimate_precision
from prdist.importance.two_phase import estimate_precision_two_phase

KEYS = [f"k{i}" for i in range(30)]


def _small_sample(seed: int = 1):
    """Two overlapping systems, a few draws each; gold labels and arbitrary verdicts in [0, 1]."""
    rng = np.random.default_rng(seed)
    a = SystemOutput.from_scores("A", KEYS[:20], rng.random(20))
    b = SystemOutput.from_scores("B", KEYS[10:], rng.random(20))
    truth = dict(zip(KEYS, (rng.random(30) < 0.6).astype(float)))
    sample = JointSample.from_draws([a, b], [list(rng.choice(KEYS[:20], 6)), list(rng.choice(KEYS[10:], 5))])
    gold = np.array([truth[k] for k in sample.keys])
    return sample, gold, rng.random(sample.keys.size)


def _coefficients(sample: JointSample) -> np.ndarray:
    """c[x, i]: the joint estimate of system i with key x labeled 1 and every other key 0."""
    d = sample.keys.size
    return np.array([estimate_precision(sample.with_labels(sample.keys, np.eye(d)[x])).precision for x in range(d)])


def _audits(d: int, m: int):
    for chosen in itertools.combinations(range(d), m):
        audit = np.zeros(d, bool)
        audit[list(chosen)] = True
        yield audit


def test_every_key_audited_gives_the_joint_estimate_with_gold_labels():
    sample, gold, verdicts = _small_sample()
    ref = estimate_precision(sample.with_labels(sample.keys, gold))
    for lam in (None, 0.0, 0.6, 1.0):
        est = estimate_precision_two_phase(sample, verdicts, gold, np.ones(gold.size, bool), lam=lam).estimate
        for name in ("precision", "variance", "simple_precision", "simple_variance", "ci_low", "ci_high"):
            np.testing.assert_allclose(getattr(est, name), getattr(ref, name), rtol=0, atol=1e-12, err_msg=name)


def test_unbiased_over_every_audit_with_the_variance_it_estimates():
    """Over all C(D, m) audits: the estimate averages π̂(g); the audit's Horvitz-Thompson variance
    estimate averages the audit's variance of the estimate, and V̂₂ (floored) is never below it;
    V̂₁ averages at least Theorem 1's estimate with gold labels (conservative)."""
    sample, gold, verdicts = _small_sample()
    ref = estimate_precision(sample.with_labels(sample.keys, gold))
    c = _coefficients(sample)
    d, m = gold.size, 4
    runs, unfloored = [], []
    for audit in _audits(d, m):
        runs.append(estimate_precision_two_phase(sample, verdicts, gold, audit, lam=0.7))
        residual = c[audit] * (gold[audit, None] - 0.7 * verdicts[audit, None])
        unfloored.append(d**2 * (1 - m / d) * residual.var(axis=0, ddof=1) / m)
    estimates = np.array([r.estimate.precision for r in runs])
    np.testing.assert_allclose(estimates.mean(axis=0), ref.precision, atol=1e-12)
    np.testing.assert_allclose(np.mean(unfloored, axis=0), estimates.var(axis=0), atol=1e-12)
    assert (np.array([r.second_phase_variance for r in runs]) >= np.array(unfloored) - 1e-15).all()
    first = np.array([r.first_phase_variance for r in runs])
    assert (first.mean(axis=0) >= ref.variance).all() and (first >= 0).all()
    simple = np.array([r.estimate.simple_precision for r in runs])
    np.testing.assert_allclose(simple.mean(axis=0), ref.simple_precision, atol=1e-12)


def test_lambda_zero_is_the_gold_only_horvitz_thompson_estimator():
    sample, gold, verdicts = _small_sample(3)
    c = _coefficients(sample)
    d = gold.size
    audit = np.zeros(d, bool)
    audit[[0, 2, 3, 5, 7]] = True
    m = int(audit.sum())
    est = estimate_precision_two_phase(sample, verdicts, gold, audit, lam=0.0)
    terms = c[audit] * gold[audit, None]
    np.testing.assert_allclose(est.estimate.precision, d / m * terms.sum(axis=0), atol=1e-12)
    # The Horvitz-Thompson variance, its s² floored with two pseudo-observations at ± c̄/2 about the mean.
    spread = ((terms - terms.mean(axis=0)) ** 2).sum(axis=0)
    s2 = np.maximum(spread / (m - 1), (spread + c[audit].mean(axis=0) ** 2 / 2) / (m + 1))
    np.testing.assert_allclose(est.second_phase_variance, d**2 * (1 - m / d) * s2 / m, atol=1e-12)
    # The verdicts do not enter at λ = 0.
    other = estimate_precision_two_phase(sample, 1 - verdicts, gold, audit, lam=0.0)
    np.testing.assert_allclose(other.estimate.variance, est.estimate.variance, atol=1e-12)


def test_power_tuning_takes_a_perfect_predictor_whole_and_an_adversarial_one_not_at_all():
    sample, gold, _ = _small_sample(5)
    audit = np.arange(gold.size) % 2 == 0
    perfect = estimate_precision_two_phase(sample, gold, gold, audit)
    assert perfect.lam.tolist() == [1.0, 1.0]
    assert (perfect.second_phase_variance > 0).all()  # agreeing with every audited gold verdict proves no exactness
    assert estimate_precision_two_phase(sample, 1 - gold, gold, audit).lam.tolist() == [0.0, 0.0]


def test_unaudited_gold_and_missing_gold_are_not_used():
    sample, gold, verdicts = _small_sample(2)
    audit = np.arange(gold.size) < 5
    est = estimate_precision_two_phase(sample, verdicts, gold, audit)
    elsewhere = np.where(audit, gold, 1 - gold)  # gold outside the audit changes nothing
    np.testing.assert_array_equal(estimate_precision_two_phase(sample, verdicts, elsewhere, audit).estimate.precision,
                                  est.estimate.precision)
    without = np.where(np.arange(gold.size) == 0, np.nan, gold)  # a key without gold counts as not audited
    assert estimate_precision_two_phase(sample, verdicts, without, audit).audited == 4
    with pytest.raises(DataError, match="at least 2"):
        estimate_precision_two_phase(sample, verdicts, np.full(gold.size, np.nan), audit)


# --------------------------------------------------------------------------------------------
# Coverage of the true precision (slow tier)
# --------------------------------------------------------------------------------------------

UNIVERSE = 1200
SPANS = {"A": (0, 700), "B": (300, 1000), "C": (600, 1200)}  # the systems' outputs in the universe
DRAWS = 60  # per system
AUDIT = 50  # gold audit of the distinct drawn keys
JUDGES = {"accuracy 0.6": 0.6, "accuracy 0.9": 0.9, "adversarial (accuracy 0.1)": 0.1}


def _systems():
    keys = np.arange(UNIVERSE)
    return [SystemOutput.from_scores(name, keys[lo:hi], np.ones(hi - lo)) for name, (lo, hi) in SPANS.items()]


def coverage_study(replicates: int, *, confidence: float = 0.95, seed: int = 0) -> dict:
    """Coverage of every system's true precision and mean width, with the judge (tuned λ) and gold alone (λ = 0)."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(UNIVERSE) < np.linspace(0.9, 0.3, UNIVERSE)).astype(float)
    systems = _systems()
    true_precision = np.array([truth[lo:hi].mean() for lo, hi in SPANS.values()])
    out = {}
    for name, accuracy in JUDGES.items():
        hits = {"judge": np.zeros(3), "gold alone": np.zeros(3)}
        widths = {"judge": [], "gold alone": []}
        for _ in range(replicates):
            draws = [rng.choice(np.arange(lo, hi), DRAWS) for lo, hi in SPANS.values()]
            sample = JointSample.from_draws(systems, draws)
            gold = truth[sample.keys]
            verdicts = np.where(rng.random(gold.size) < accuracy, gold, 1 - gold)
            audit = np.zeros(gold.size, bool)
            audit[rng.choice(gold.size, AUDIT, replace=False)] = True
            for arm, lam in (("judge", None), ("gold alone", 0.0)):
                est = estimate_precision_two_phase(sample, verdicts, gold, audit, lam=lam, confidence=confidence).estimate
                hits[arm] += (est.ci_low <= true_precision) & (true_precision <= est.ci_high)
                widths[arm].append(est.ci_high - est.ci_low)
        out[name] = {arm: {"coverage": (hits[arm] / replicates).tolist(), "mean_width": float(np.mean(widths[arm]))}
                     for arm in hits}
    return out


@pytest.mark.slow
def test_intervals_cover_the_true_precision_at_any_judge_quality():
    confidence = 0.95
    study = coverage_study(500, confidence=confidence)
    print(study)
    for name, arms in study.items():
        for arm, result in arms.items():
            assert min(result["coverage"]) >= confidence - 0.02, (name, arm, result)
    good = study["accuracy 0.9"]
    assert good["judge"]["mean_width"] < 0.85 * good["gold alone"]["mean_width"]
    bad = study["adversarial (accuracy 0.1)"]
    assert bad["judge"]["mean_width"] <= 1.02 * bad["gold alone"]["mean_width"]
