"""The worst case over items nobody can judge is the worst over every assignment of their verdicts.

Oracle: brute force. For compare, the joint estimator's interval on every one of the 2^k
assignments (k <= 10) of correct / incorrect to the unjudged items; ``precision_worst_low`` must be
the least lower limit and ``precision_worst_high`` the greatest upper one. For bands, the bootstrap
bands of every assignment (same seed), plus the missing-at-random band. The code before issue 26
took only "all incorrect" and "all correct" and fails both (the audit's case: system B with 5
draws, its only unjudged item drawn by B alone, reported a lower limit 0.080 above the one with
that item correct). Beyond exact enumeration, compare's outer bound must enclose the brute force.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from prdist.bootstrap.replicates import BootstrapWarning, bootstrap_bands
from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.compare.estimation import LabeledSample
from prdist.dataflow.compare.params import CompareParams, open_systems
from prdist.dataflow.compare.sampling import DrawnSample, system_weights
from prdist.dataflow.labels.unjudged import estimate_labeled, limits_over_assignments
from prdist.importance import SamplingDistribution, SystemOutput, draw_joint_sample, estimate_precision
from tests.support.reverb_parquet import write_frame

DISTRIBUTIONS = {"uniform": SamplingDistribution.uniform(), "score_power": SamplingDistribution.score_power(1.0)}


def brute_force(sample, unknown, **options):
    """Least lower and greatest upper limit of every system over every assignment of ``unknown``."""
    where = np.flatnonzero(unknown)
    low, high = np.inf, -np.inf
    for bits in itertools.product((0.0, 1.0), repeat=where.size):
        labels = sample.labels.copy()
        labels[where] = bits
        est = estimate_precision(replace(sample, labels=labels), **options)
        low, high = np.minimum(low, est.ci_low), np.maximum(high, est.ci_high)
    return low, high


def drawn_sample(tmp_path, frames, sizes, seed, distribution):
    """A DrawnSample of the dataflow's types: the systems' real weights, the core's draws."""
    urls = {name: write_frame(frame, str(tmp_path / name)) for name, frame in frames.items()}
    systems = open_systems(urls)
    weights = tuple(system_weights(s, distribution) for s in systems)
    outputs = [SystemOutput.from_scores(name, f["key"].to_numpy(), f["score"].to_numpy(), distribution)
               for name, f in frames.items()]
    sample = draw_joint_sample(outputs, sizes, seed=seed)
    scores = np.column_stack([f.set_index("key")["score"].reindex(sample.keys).to_numpy() for f in frames.values()])
    return DrawnSample(sample, scores, weights, np.asarray(sizes), None, {})


def labeled(drawn, truth, unknown):
    sample = drawn.sample.with_labels(drawn.sample.keys, np.where(unknown, np.nan, truth))
    return LabeledSample(sample, 0, 0, (), cannot_judge=unknown)


def test_compare_audit_case_item_drawn_only_by_the_five_draw_system(tmp_path):
    """Two systems over 25 items each, 10 shared; B has 5 draws and its only unjudged item is one
    that B alone outputs. With that item correct B's lower limit is 0.0078; the old code reported
    0.0878 (the limit with it incorrect)."""
    keys = np.arange(40)
    frames = {"A": pd.DataFrame({"key": keys[:25], "score": np.linspace(1.0, 0.5, 25)}),
              "B": pd.DataFrame({"key": keys[15:], "score": np.linspace(1.0, 0.5, 25)})}
    drawn = drawn_sample(tmp_path, frames, [19, 5], 1685, SamplingDistribution.uniform())
    sample = drawn.sample
    truth = (np.random.default_rng(182).random(sample.keys.size) < 0.5).astype(float)
    only_b = np.flatnonzero((sample.probabilities[:, 0] == 0) & (sample.counts[:, 1] > 0))
    unknown = np.isin(np.arange(sample.keys.size), only_b[:1])
    params = CompareParams(budget=24, seed=1685)
    frame, diagnostics = estimate_labeled(labeled(drawn, truth, unknown), drawn, params)
    low, high = brute_force(replace(sample, labels=truth), unknown)
    incorrect = estimate_precision(replace(sample, labels=np.where(unknown, 0.0, truth))).ci_low
    assert (incorrect[1], low[1]) == (pytest.approx(0.0878, abs=1e-4), pytest.approx(0.0078, abs=1e-4))
    np.testing.assert_allclose(frame["precision_worst_low"], low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame["precision_worst_high"], high, rtol=0, atol=1e-12)
    assert diagnostics["cannot_judge"]["worst_case"] == ["exact", "exact"]
    assert any("every assignment" in note for note in diagnostics["notes"])


@pytest.mark.parametrize("seed", [*range(12), 26, 39, 47])  # 26, 39, 47: the old all-0 / all-1 limits fail
def test_compare_worst_case_equals_brute_force_over_every_assignment(tmp_path, seed):
    rng = np.random.default_rng(seed)
    kind = sorted(DISTRIBUTIONS)[seed % 2]
    frames = {}
    for name in ("A", "B", "C"):
        chosen = rng.choice(30, size=int(rng.integers(8, 20)), replace=False)
        frames[name] = pd.DataFrame({"key": chosen, "score": rng.random(chosen.size) + 0.1})
    drawn = drawn_sample(tmp_path, frames, [int(n) for n in rng.integers(5, 10, size=3)], seed, DISTRIBUTIONS[kind])
    sample = drawn.sample
    truth = (rng.random(sample.keys.size) < 0.6).astype(float)
    unknown = np.zeros(sample.keys.size, bool)
    for x in rng.permutation(sample.keys.size):  # k items, each system keeping 2 judged draws
        if unknown.sum() < (1, 3, 5, 7, 9, 10)[seed % 6] and (sample.counts[~unknown].sum(0) - sample.counts[x] >= 2).all():
            unknown[x] = True
    assert unknown.sum() == (1, 3, 5, 7, 9, 10)[seed % 6]
    weights = ("overlap", "balance")[seed % 2]
    params = CompareParams(budget=int(sample.sizes.sum()), seed=seed, distribution=DISTRIBUTIONS[kind], weights=weights,
                           confidence=0.9)
    frame, _ = estimate_labeled(labeled(drawn, truth, unknown), drawn, params)
    low, high = brute_force(replace(sample, labels=truth), unknown, weights=weights, confidence=0.9)
    np.testing.assert_allclose(frame["precision_worst_low"], low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame["precision_worst_high"], high, rtol=0, atol=1e-12)
    # The outer bound (no enumeration at all) encloses the brute force, within its stated slack.
    bound = limits_over_assignments(replace(sample, labels=truth), unknown, weights=weights, confidence=0.9,
                                    max_assignments=0)
    assert (bound.assignments <= 1).all()  # enumerated nothing (1: no unjudged item weighs in)
    assert np.all(bound.low <= low + 1e-12) and np.all(bound.high >= high - 1e-12)
    assert np.all(low <= bound.low + bound.slack + 1e-12) and np.all(bound.high - bound.slack <= high + 1e-12)


def test_compare_groups_exchangeable_items_and_bounds_beyond(tmp_path):
    """Uniform sampling: 40 unjudged items fall in few groups (support pattern, draws), so the
    exact worst case is enumerated (some 10^4 count vectors, not 2^40); with the enumeration capped
    the outer bound encloses it."""
    rng = np.random.default_rng(7)
    keys = np.arange(300)
    frames = {"A": pd.DataFrame({"key": keys[:200], "score": rng.random(200)}),
              "B": pd.DataFrame({"key": keys[100:], "score": rng.random(200)})}
    drawn = drawn_sample(tmp_path, frames, [60, 60], 7, SamplingDistribution.uniform())
    sample = drawn.sample
    truth = (rng.random(sample.keys.size) < 0.7).astype(float)
    unknown = np.isin(np.arange(sample.keys.size), rng.choice(sample.keys.size, size=40, replace=False))
    exact = limits_over_assignments(replace(sample, labels=truth), unknown)
    assert exact.exact.all() and exact.assignments.max() <= 2**16
    bound = limits_over_assignments(replace(sample, labels=truth), unknown, max_assignments=0)
    assert np.all(bound.low <= exact.low + 1e-12) and np.all(bound.high >= exact.high - 1e-12)
    assert np.all(bound.slack >= exact.low - bound.low - 1e-12)


@pytest.fixture(scope="module")
def arm():
    rng = np.random.default_rng(34)
    labels = (rng.random(60) < 0.4).astype(float)
    return rng.normal(labels * 1.2, 1.0), labels


def band_brute_force(scores, labels, never, **options):
    """Lowest lower / highest upper simultaneous band over the missing-at-random band and every assignment."""
    mar = bootstrap_bands(scores[~never], labels[~never], **options)
    low, high = mar["band_lower"].to_numpy(), mar["band_upper"].to_numpy()
    for bits in itertools.product((0.0, 1.0), repeat=int(never.sum())):
        filled = labels.copy()
        filled[never] = bits
        b = bootstrap_bands(scores, filled, **options)
        low, high = np.minimum(low, b["band_lower"]), np.maximum(high, b["band_upper"])
    return low, high


def arm_bands(scores, labels, never, replicates, seed, delta=0.1):
    """ev.bands on a plan whose band arm is the whole sample."""
    n = scores.size
    ranks = np.arange(1, n + 1)
    planned = ev.PlannedRanks("paula", None, ranks, np.full(n, "random"), np.full(n, -1, np.int32),
                              np.zeros(n, bool), np.ones(n, bool))
    params = ev.EvaluationParams(bands=True, replicates=replicates, seed=seed, confidence=1 - delta)
    items = pd.DataFrame({"rank": ranks, "key": ranks, "score": scores})
    return ev.bands(planned, items, np.where(never, np.nan, labels), params, settled=never)


@pytest.mark.parametrize("k", [2, 5, pytest.param(10, marks=pytest.mark.slow)])  # 10: 2 x 1,024 bootstraps, ~20 s
def test_bands_worst_case_equals_brute_force_over_every_assignment(arm, k):
    scores, labels = arm
    never = np.zeros(scores.size, bool)
    never[np.random.default_rng(k).choice(scores.size, size=k, replace=False)] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapWarning)  # a small arm: few positives
        got = arm_bands(scores, labels, never, replicates=20 if k == 10 else 40, seed=k)
        low, high = band_brute_force(scores, labels, never, delta=0.1, replicates=20 if k == 10 else 40, seed=k)
    np.testing.assert_array_equal(got.table["precision_worst_low"], low)
    np.testing.assert_array_equal(got.table["precision_worst_high"], high)
    assert got.worst_case.computed and got.worst_case.assignments == 2**k
    assert "every assignment" in got.worst_case.text and "exact" in got.worst_case.text


def test_bands_items_of_equal_score_are_interchangeable(arm):
    """Unjudged items tied in score: only how many are correct matters (3 x 3 count vectors for
    two tied pairs, not 16 assignments), with the brute force's result."""
    scores, labels = arm
    scores = scores.copy()
    never = np.zeros(scores.size, bool)
    never[[3, 9, 20, 41]] = True
    scores[9], scores[41] = scores[3], scores[20]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapWarning)
        got = arm_bands(scores, labels, never, replicates=40, seed=1)
        low, high = band_brute_force(scores, labels, never, delta=0.1, replicates=40, seed=1)
    assert got.worst_case.assignments == 9
    np.testing.assert_array_equal(got.table["precision_worst_low"], low)
    np.testing.assert_array_equal(got.table["precision_worst_high"], high)


def test_bands_worst_case_beyond_the_limit_is_not_computed_and_says_so(arm):
    scores, labels = arm
    never = np.zeros(scores.size, bool)
    never[:12] = True  # 4,096 assignments x 40 replicates > 2^15
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapWarning)
        got = arm_bands(scores, labels, never, replicates=40, seed=2)
    assert got.table["precision_worst_low"].isna().all() and got.table["precision_worst_high"].isna().all()
    assert not got.worst_case.computed and got.worst_case.worst_mean_width is None
    assert got.worst_case.text.startswith("precision_worst_low / precision_worst_high: not computed (NaN)")
    assert "4,096 distinct assignments" in got.worst_case.text
