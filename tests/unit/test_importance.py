"""Tests of prdist.importance: joint estimators over several systems sharing labels.

Oracles: slow loop implementations written straight from the appendix formulas, exact
expectations by enumerating every possible draw, brute force over all labelings, and
simulations with fixed seed ranges. The ReVerb validation lives in test_reverb.py.
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from prdist.errors import AwaitingLabels, DataError, ParameterError
from prdist.importance import (
    JointSample,
    SamplingDistribution,
    SystemOutput,
    draw_joint_sample,
    estimate_precision,
    estimate_recall,
    missing_labels,
    mixture_weights,
    pool_membership,
    required_sample_size,
)
from prdist.importance.sample_size import _worst_case_variance
from prdist.ranking import rank_order

Z95 = stats.norm.ppf(0.975)


# --------------------------------------------------------------------------------------------
# Loop references, written from the appendix with dicts and lists only
# --------------------------------------------------------------------------------------------


def _dist(system):
    return dict(zip(system.keys.tolist(), system.probabilities.tolist()))


def _mixture(weights, p, x):
    """q(x) = Σ_k w_k p_k(x): the mixture of the systems' distributions ``p`` at item ``x``."""
    return sum(w_k * p_k.get(x, 0.0) for w_k, p_k in zip(weights, p))


def reference_weights(systems, draws, scheme):
    p = [_dist(s) for s in systems]
    rows = []
    for i in range(len(systems)):
        raw = []
        for j in range(len(systems)):
            overlap = sum(p[i][x] * p[j].get(x, 0.0) for x in p[i])
            raw.append(len(draws[j]) * (overlap if scheme == "overlap" else 1.0))
        rows.append([r / sum(raw) for r in raw])
    return rows


def reference_precision(systems, draws, labels, weights):
    """π̂_i = Σ_j (w_ij/n_j) Σ_{x∈X̂_j} p_i f / q_i and Σ_j w_ij²/n_j · s²_j (ddof=1)."""
    p = [_dist(s) for s in systems]
    m = len(systems)
    estimates, variances = [], []
    for i in range(m):
        total = variance = 0.0
        for j in range(m):
            if weights[i][j] == 0:
                continue
            values = []
            for x in draws[j]:
                q = _mixture(weights[i], p, x)
                values.append(p[i][x] * labels[x] / q if p[i].get(x, 0.0) > 0 else 0.0)
            total += weights[i][j] * statistics.fmean(values)
            variance += weights[i][j] ** 2 / len(values) * statistics.variance(values)
        estimates.append(total)
        variances.append(variance)
    simple = [statistics.fmean(labels[x] for x in d) for d in draws]
    simple_var = [statistics.variance([labels[x] for x in d]) / len(d) for d in draws]
    return estimates, variances, simple, simple_var


def reference_pooled_recall(systems, draws, labels, w):
    """Self-normalised ν̂_i with one pool mixture q = Σ_j w_j p_j; delta-method variance."""
    p = [_dist(s) for s in systems]
    m = len(systems)
    q = {x: _mixture(w, p, x) for d in draws for x in d}  # one pool mixture for every system
    nus, variances = [], []
    for i in range(m):
        numerator = denominator = 0.0
        for j in range(m):
            for x in draws[j]:
                numerator += w[j] / len(draws[j]) * labels[x] * (p[i].get(x, 0.0) > 0) / q[x]
                denominator += w[j] / len(draws[j]) * labels[x] / q[x]
        nu = numerator / denominator
        variance = 0.0
        for j in range(m):
            residuals = []
            for x in draws[j]:
                residuals.append(labels[x] * ((p[i].get(x, 0.0) > 0) - nu) / q[x])
            variance += w[j] ** 2 / len(draws[j]) * statistics.variance(residuals)
        nus.append(nu)
        variances.append(variance / denominator**2)
    return nus, variances


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _uniform(name, keys):
    keys = np.asarray(keys, dtype=object)
    return SystemOutput.from_scores(name, keys, np.ones(keys.size))


def _expand(sample):
    """The draws of every system as key lists (with repeats)."""
    return [sample.keys.repeat(sample.counts[:, j]).tolist() for j in range(len(sample.systems))]


@st.composite
def scenarios(draw):
    """Small random systems over the keys a..h, their draws and labels."""
    pool = list("abcdefgh")
    m = draw(st.integers(1, 4))
    systems = []
    for i in range(m):
        keys = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=6, unique=True))
        scores = draw(st.lists(st.floats(0.1, 5.0), min_size=len(keys), max_size=len(keys)))
        kind = draw(st.sampled_from(["uniform", "top_k", "score_power"]))
        if kind == "top_k":
            dist = SamplingDistribution.top_k(draw(st.integers(1, len(keys))))
        elif kind == "score_power":
            dist = SamplingDistribution.score_power(draw(st.sampled_from([0.5, 1.0, 2.0])))
        else:
            dist = SamplingDistribution.uniform()
        systems.append(SystemOutput.from_scores(f"s{i}", keys, scores, dist))
    sizes = draw(st.lists(st.integers(2, 6), min_size=m, max_size=m))
    seed = draw(st.integers(0, 2**32 - 1))
    labels = dict(zip(pool, draw(st.lists(st.integers(0, 1), min_size=8, max_size=8))))
    rng = np.random.default_rng(seed)
    draws = [
        rng.choice(s.keys, size=n, p=s.probabilities).tolist() for s, n in zip(systems, sizes)
    ]
    weight_seed = draw(st.integers(0, 2**32 - 1))
    return systems, draws, labels, weight_seed


def _labeled(systems, draws, labels):
    return JointSample.from_draws(systems, draws).with_labels(list(labels), list(labels.values()))


# --------------------------------------------------------------------------------------------
# Sampling distributions and systems
# --------------------------------------------------------------------------------------------


def test_distributions_match_their_definitions():
    scores = np.array([0.3, 0.9, 0.3, 0.1, 0.6])
    keys = np.array(list("vwxyz"), dtype=object)
    assert np.allclose(SamplingDistribution.uniform().probabilities(scores, keys), 0.2)
    top = SamplingDistribution.top_k(3).probabilities(scores, keys)
    # The top 3 in rank order (which breaks the 0.3 tie by key hash) get 1/3 each.
    assert set(np.flatnonzero(top)) == set(rank_order(scores, keys)[:3])
    assert np.allclose(top[top > 0], 1 / 3)
    power = SamplingDistribution.score_power(2.5).probabilities(scores, keys)
    assert np.allclose(power, scores**2.5 / (scores**2.5).sum())


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: SamplingDistribution("top_k"), "required for kind='top_k'"),
        (lambda: SamplingDistribution("uniform", k=3), "only applies to kind='top_k'"),
        (lambda: SamplingDistribution("uniform", power=2.0), "only applies to kind='score_power'"),
        (lambda: SamplingDistribution.score_power(0.0), "'power' parameter"),
        (lambda: SamplingDistribution("random"), "'kind' parameter"),
        (lambda: SamplingDistribution.top_k(0), "'k' parameter"),
        (lambda: SamplingDistribution.top_k(4).probabilities([1.0, 2.0], ["a", "b"]), "at most"),
        (lambda: SamplingDistribution.score_power().probabilities([-1.0, 2.0], ["a", "b"]),
         "non-negative"),
        (lambda: SamplingDistribution.score_power().probabilities([0.0, 0.0], ["a", "b"]),
         "finite and positive"),
        (lambda: SamplingDistribution().probabilities([np.nan, 1.0], ["a", "b"]), "finite"),
        (lambda: SamplingDistribution().probabilities([1.0], ["a", "b"]), "one length"),
        (lambda: SystemOutput("A", ["a", "a"], [0.5, 0.5]), "more than once"),
        (lambda: SystemOutput("A", ["a", "b"], [0.5, 0.6]), "sum to 1"),
        (lambda: SystemOutput("", ["a"], [1.0]), "non-empty str"),
        (lambda: SystemOutput.from_scores("A", ["a"], [1.0], "uniform"), "SamplingDistribution"),
    ],
)
def test_distribution_and_system_errors(make, message):
    with pytest.raises((ParameterError, DataError), match=message):
        make()


def test_system_output_lookup_and_support():
    system = SystemOutput.from_scores("A", ["a", "b", "c"], [3.0, 2.0, 1.0],
                                      SamplingDistribution.top_k(2))
    assert system.support.tolist() == ["a", "b"]
    assert system.probability_of(["c", "b", "zz"]).tolist() == [0.0, 0.5, 0.0]
    with pytest.raises(ValueError):
        system.keys[0] = "q"  # read-only


# --------------------------------------------------------------------------------------------
# Joint samples, labels, draws
# --------------------------------------------------------------------------------------------


def test_from_draws_counts_probabilities_and_summaries():
    a = _uniform("A", ["x", "y"])
    b = SystemOutput.from_scores("B", ["y", "z", "w"], [3.0, 1.0, 0.0],
                                 SamplingDistribution.score_power())
    sample = JointSample.from_draws([a, b], [["x", "x", "y"], ["z", "y"]])
    assert sample.keys.tolist() == ["x", "y", "z"]
    assert sample.counts.tolist() == [[2, 0], [1, 1], [0, 1]]
    assert sample.probabilities.tolist() == [[0.5, 0.0], [0.5, 0.75], [0.0, 0.25]]
    assert sample.sizes.tolist() == [3, 2]
    assert np.allclose(sample.overlaps, [[0.5, 0.375], [0.375, 0.625]])
    # "w" has score 0, so it is outside B's support: patterns {A}, {A,B}, {B}.
    assert sorted(map(tuple, sample.support_patterns.tolist())) == [
        (False, True), (True, False), (True, True)]
    assert np.isnan(sample.labels).all()


def test_from_draws_rejects_bad_draws():
    a = _uniform("A", ["x", "y"])
    with pytest.raises(DataError, match="outside its support"):
        JointSample.from_draws([a], [["x", "q"]])
    with pytest.raises(ParameterError, match="one array per system"):
        JointSample.from_draws([a], [["x"], ["y"]])
    with pytest.raises(ParameterError, match="unique"):
        JointSample.from_draws([a, a], [["x"], ["y"]])
    empty = JointSample.from_draws([a, _uniform("B", ["y"])], [[], ["y"]])
    assert empty.sizes.tolist() == [0, 1]


def test_labels_round_trip_and_conflicts():
    a = _uniform("A", ["x", "y", "z"])
    sample = JointSample.from_draws([a], [["x", "y", "z", "x"]])
    assert missing_labels(sample).tolist() == ["x", "y", "z"]
    partial = sample.with_labels(["y", "unrelated", "x"], [1, 0, np.nan])
    assert missing_labels(partial).tolist() == ["x", "z"]
    with pytest.raises(AwaitingLabels, match="2 drawn item") as info:
        estimate_precision(partial)
    assert info.value.missing == 2
    full = partial.with_labels(["x", "z", "y"], [0, 1, 1])
    assert missing_labels(full).size == 0
    assert full.labels.tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(DataError, match="already has label"):
        full.with_labels(["y"], [0])
    with pytest.raises(DataError, match="both 0 and 1"):
        sample.with_labels(["x", "x"], [0, 1])
    with pytest.raises(DataError, match="only 0, 1"):
        sample.with_labels(["x"], [2])


def test_draws_follow_the_distribution_and_the_seed():
    scores = np.arange(1.0, 6.0)
    a = SystemOutput.from_scores("A", list("abcde"), scores, SamplingDistribution.score_power())
    b = _uniform("B", list("cdefg"))
    sample = draw_joint_sample([a, b], [20_000, 5], seed=7)
    freq = sample.counts[:, 0] / 20_000
    expected = a.probability_of(sample.keys)
    # Multinomial frequencies: 5 standard errors per cell (never fails by chance in practice).
    assert np.all(np.abs(freq - expected) <= 5 * np.sqrt(expected * (1 - expected) / 20_000))
    again = draw_joint_sample([a, b], [20_000, 5], seed=7)
    assert np.array_equal(again.counts, sample.counts)
    # A system appended later (a new release) leaves the earlier systems' draws unchanged.
    c = _uniform("C", list("xyz"))
    extended = draw_joint_sample([a, b, c], [20_000, 5, 3], seed=7)
    for j in range(2):
        assert sorted(_expand(extended)[j]) == sorted(_expand(sample)[j])
    with pytest.raises(ParameterError, match="'seed'"):
        draw_joint_sample([a], 3, seed=-1)
    with pytest.raises(ParameterError, match="one size per system"):
        draw_joint_sample([a, b], [3], seed=0)
    with pytest.raises(ParameterError, match="'sizes'"):
        draw_joint_sample([a], -1, seed=0)


# --------------------------------------------------------------------------------------------
# Precision: reference equality, exact unbiasedness, validation
# --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(scenarios(), st.sampled_from(["overlap", "balance", "random"]))
def test_precision_equals_the_loop_reference(scenario, scheme):
    systems, draws, labels, weight_seed = scenario
    m = len(systems)
    if scheme == "random":
        raw = np.random.default_rng(weight_seed).uniform(0.05, 1.0, size=(m, m))
        weights = (raw / raw.sum(axis=1, keepdims=True)).tolist()
    else:
        weights = reference_weights(systems, draws, scheme)
    sample = _labeled(systems, draws, labels)
    est = estimate_precision(sample, weights=weights if scheme == "random" else scheme)
    ref, ref_var, simple, simple_var = reference_precision(systems, draws, labels, weights)
    np.testing.assert_allclose(est.weights, weights, rtol=1e-12)
    np.testing.assert_allclose(est.precision, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.variance, ref_var, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.simple_precision, simple, rtol=1e-12)
    np.testing.assert_allclose(est.simple_variance, simple_var, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(est.half_width, Z95 * np.sqrt(ref_var), rtol=1e-9, atol=1e-12)


def _enumerate(systems, sizes, labels, weights):
    """Exact E[π̂], Var[π̂] and E[Var̂] over every ordered outcome of the draws."""
    supports = [s.support.tolist() for s in systems]
    slots = [(j, supports[j]) for j, n in enumerate(sizes) for _ in range(n)]
    mean = second = mean_var = 0.0
    for outcome in itertools.product(*(keys for _, keys in slots)):
        prob = math.prod(systems[j].probability_of([x])[0] for (j, _), x in zip(slots, outcome))
        draws = [[x for (j, _), x in zip(slots, outcome) if j == i] for i in range(len(systems))]
        est = estimate_precision(_labeled(systems, draws, labels), weights=weights)
        mean = mean + prob * est.precision
        second = second + prob * est.precision**2
        mean_var = mean_var + prob * est.variance
    return mean, second - mean**2, mean_var


def _theorem1_variance(systems, sizes, labels, weights):
    """Σ_j w_ij²/n_j Var_{p_j}[p_i f / q_i], computed over the items (not the draws)."""
    p = [_dist(s) for s in systems]
    out = []
    for i in range(len(systems)):
        total = 0.0
        for j in range(len(systems)):
            h = {x: p[i][x] * labels[x]
                 / _mixture(weights[i], p, x)
                 if p[i].get(x, 0.0) > 0 else 0.0
                 for x in p[j]}
            mean = sum(p[j][x] * h[x] for x in p[j])
            total += weights[i][j] ** 2 / sizes[j] * sum(p[j][x] * (h[x] - mean) ** 2 for x in p[j])
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("weights", ["overlap", "balance", [[0.7, 0.3, 0.0], [0.2, 0.5, 0.3],
                                                             [0.0, 0.4, 0.6]]])
def test_estimator_and_variance_estimate_are_exactly_unbiased(weights):
    """Theorem 1 by enumeration: E[π̂] = π, Var[π̂] = the theorem's value = E[Var̂]."""
    labels = {"a": 1, "b": 0, "c": 1, "d": 0, "e": 1}
    systems = [
        SystemOutput.from_scores("A", ["a", "b", "c"], [1.0, 2.0, 3.0],
                                 SamplingDistribution.score_power()),
        _uniform("B", ["c", "d"]),
        SystemOutput.from_scores("C", ["b", "d", "e"], [0.5, 1.0, 2.0],
                                 SamplingDistribution.top_k(2)),
    ]
    sizes = [2, 2, 2]
    truth = [sum(s.probability_of([x])[0] * labels[x] for x in s.keys) for s in systems]
    if isinstance(weights, str):
        # Scheme weights depend on the sizes and overlaps only, not on the draws.
        some = draw_joint_sample(systems, sizes, seed=0)
        matrix = mixture_weights(some, weights).tolist()
    else:
        matrix = weights
    mean, variance, mean_var = _enumerate(systems, sizes, labels, matrix)
    np.testing.assert_allclose(mean, truth, rtol=1e-12)
    np.testing.assert_allclose(variance, _theorem1_variance(systems, sizes, labels, matrix),
                               rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(mean_var, variance, rtol=1e-9, atol=1e-15)


@pytest.mark.slow  # a coverage study over 400 seeds: 8 s at load 8-10
def test_joint_estimator_is_unbiased_and_covers_on_a_synthetic_universe():
    """400 seeds, three overlapping systems with different distributions and precisions."""
    rng = np.random.default_rng(2024)
    keys = np.array([f"k{i}" for i in range(600)], dtype=object)
    scores = rng.uniform(0.05, 1.0, keys.size)
    labels = (rng.random(keys.size) < scores).astype(float)  # higher score, more often correct
    systems = [
        _uniform("uniform", keys[:400]),
        SystemOutput.from_scores("top", keys[200:], scores[200:], SamplingDistribution.top_k(250)),
        SystemOutput.from_scores("power", keys[100:500], scores[100:500],
                                 SamplingDistribution.score_power(2.0)),
    ]
    truth = np.array([s.probability_of(keys) @ labels for s in systems])  # π_i = E_{p_i}[f]
    seeds = range(400)
    est = [estimate_precision(draw_joint_sample(systems, [60, 40, 50], seed=s)
                              .with_labels(keys, labels)) for s in seeds]
    values = np.array([e.precision for e in est])
    half = np.array([e.half_width for e in est])
    # Mean of 400 i.i.d. estimates: 4 standard errors (two-sided p ≈ 6e-5 per system).
    se = values.std(axis=0, ddof=1) / math.sqrt(len(seeds))
    assert np.all(np.abs(values.mean(axis=0) - truth) <= 4 * se)
    covered = (np.abs(values - truth) <= half).mean(axis=0)
    # Binomial(400, 0.95) acceptance region at level 1e-4 (normal approximation may shift the
    # true rate slightly; the region is ±0.04 around 0.95).
    low, high = stats.binom.ppf([5e-5, 1 - 5e-5], len(seeds), 0.95) / len(seeds)
    assert np.all((covered >= low) & (covered <= high)), covered


@pytest.mark.parametrize(
    "weights, message",
    [
        ([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], r"\(2, 2\) matrix"),
        ([[1.0, 0.2], [0.5, 0.5]], "row of system 'A' sums to"),
        ([[1.0, 0.0], [-0.5, 1.5]], "non-negative"),
        ([[1.0, 0.0], [np.nan, 1.0]], "finite"),
        ("optimal", "'weights' parameter"),
        # B's items outside A are only covered by B itself.
        ([[1.0, 0.0], [1.0, 0.0]], "mixture q of system 'B' is zero on items that only \\['B'\\]"),
    ],
)
def test_precision_weight_errors(weights, message):
    a, b = _uniform("A", ["x", "y"]), _uniform("B", ["y", "z"])
    sample = _labeled([a, b], [["x", "y"], ["y", "z"]], {"x": 1, "y": 0, "z": 1})
    with pytest.raises(ParameterError, match=message):
        estimate_precision(sample, weights=weights)


def test_precision_needs_draws_where_it_puts_weight():
    a, b = _uniform("A", ["x", "y"]), _uniform("B", ["y", "z"])
    labels = {"x": 1, "y": 0, "z": 1}
    no_b = _labeled([a, b], [["x", "y"], []], labels)
    # B's item z is in no sampled system: the default weights cannot cover it.
    with pytest.raises(ParameterError, match="system 'B' is zero on items that only \\['B'\\]"):
        estimate_precision(no_b)
    with pytest.raises(ParameterError, match="has no draws"):
        estimate_precision(no_b, weights=[[0.5, 0.5], [0.5, 0.5]])
    one_b = _labeled([a, b], [["x", "y"], ["z"]], labels)
    with pytest.raises(DataError, match="'B' has 1 draw"):
        estimate_precision(one_b)
    # A system with no draws of its own is still estimated when others cover its output.
    c = _uniform("C", ["y"])
    est = estimate_precision(_labeled([a, c], [["x", "y", "y"], []], labels))
    assert est.precision[1] == 0.0 and est.n_samples.tolist() == [3, 0]
    assert np.isnan(est.simple_precision[1]) and np.isnan(est.simple_variance[1])
    with pytest.raises(ParameterError, match="'confidence'"):
        estimate_precision(one_b, confidence=1.0)
    with pytest.raises(DataError, match="no system with draws shares any item with system 'B'"):
        mixture_weights(_labeled([a, _uniform("B", ["q"])], [["x", "y"], []], labels))


def test_precision_frame_and_intervals():
    a, b = _uniform("A", ["x", "y", "z"]), _uniform("B", ["y", "z"])
    sample = _labeled([a, b], [["x", "y", "z", "x"], ["y", "z", "z"]], {"x": 1, "y": 1, "z": 0})
    est = estimate_precision(sample, confidence=0.9)
    frame = est.to_frame()
    assert frame.columns.tolist()[:6] == ["system", "precision", "precision_se",
                                          "precision_ci_low", "precision_ci_high", "n_samples"]
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(frame["precision_ci_low"],
                               np.clip(est.precision - z * est.se, 0, 1))
    np.testing.assert_allclose(frame["precision_ci_high"],
                               np.clip(est.precision + z * est.se, 0, 1))
    assert frame["system"].tolist() == ["A", "B"]


# --------------------------------------------------------------------------------------------
# Recall
# --------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_pooled_recall_equals_the_loop_reference(scenario):
    systems, draws, labels, _ = scenario
    sample = _labeled(systems, draws, labels)
    if not any(labels[x] for d in draws for x in d):
        with pytest.raises(DataError, match="no correct item"):
            estimate_recall(sample, exhaustive_in_pool=np.array([True, False]))
        return
    w = (sample.sizes / sample.sizes.sum()).tolist()
    nus, variances = reference_pooled_recall(systems, draws, labels, w)
    est = estimate_recall(sample, exhaustive_in_pool=np.array([True, True, False]))
    np.testing.assert_allclose(est.pooled_recall, nus, rtol=1e-10)
    np.testing.assert_allclose(est.pooled_recall_variance, variances, rtol=1e-8, atol=1e-14)
    theta, theta_var = 2 / 3, (2 / 3) * (1 / 3) / 2
    assert est.pool_recall == pytest.approx(theta)
    assert est.pool_recall_variance == pytest.approx(theta_var)
    nu, nu_var = np.array(nus), np.array(variances)
    # Lemma 1: Var(xy) = σx²σy² + μx²σy² + σx²μy² for independent x, y (plug-in means).
    np.testing.assert_allclose(est.recall, theta * nu)
    np.testing.assert_allclose(est.variance, theta_var * nu_var + theta**2 * nu_var
                               + nu**2 * theta_var, rtol=1e-10)


@pytest.mark.slow  # a coverage study over 300 seeds: 10 s at load 8-10
def test_recall_is_consistent_and_covers_on_a_synthetic_universe():
    """Correct items: 900 in the pool of three systems, 100 outside it. 300 seeds."""
    rng = np.random.default_rng(99)
    keys = np.array([f"k{i}" for i in range(1600)], dtype=object)
    labels = np.zeros(keys.size)
    labels[rng.choice(1500, 900, replace=False)] = 1.0  # pool items 0..1499
    labels[1500:] = 1.0  # 100 correct items no system found
    systems = [_uniform("A", keys[:700]), _uniform("B", keys[500:1200]),
               SystemOutput.from_scores("C", keys[1000:1500], rng.uniform(0.5, 1, 500),
                                        SamplingDistribution.score_power())]
    correct = keys[labels == 1]
    in_pool = pool_membership(correct, systems)
    theta = in_pool.mean()
    truth = theta * np.array([np.isin(correct[in_pool], s.support).mean() for s in systems])
    recalls, halves = [], []
    for seed in range(300):
        sample = draw_joint_sample(systems, 150, seed=seed).with_labels(keys, labels)
        exhaustive = np.random.default_rng(10_000 + seed).choice(correct.size, 200)
        est = estimate_recall(sample, exhaustive_in_pool=in_pool[exhaustive])
        recalls.append(est.recall)
        halves.append(est.half_width)
    recalls, halves = np.array(recalls), np.array(halves)
    # r̂ is a ratio (consistent, O(1/n) bias far below its 0.03 standard deviation): 4 standard
    # errors of the mean of 300 estimates, plus 0.005 for that bias.
    se = recalls.std(axis=0, ddof=1) / math.sqrt(300)
    assert np.all(np.abs(recalls.mean(axis=0) - truth) <= 4 * se + 0.005)
    covered = (np.abs(recalls - truth) <= halves).mean(axis=0)
    low, high = stats.binom.ppf([5e-5, 1 - 5e-5], 300, 0.95) / 300
    assert np.all((covered >= low) & (covered <= high)), covered


def test_recall_errors():
    a, b = _uniform("A", ["x", "y"]), _uniform("B", ["y", "z"])
    sample = _labeled([a, b], [["x", "y"], ["y", "z"]], {"x": 1, "y": 0, "z": 1})
    with pytest.raises(DataError, match="boolean array of at least 2"):
        estimate_recall(sample, exhaustive_in_pool=[1, 0])
    with pytest.raises(DataError, match="boolean array of at least 2"):
        estimate_recall(sample, exhaustive_in_pool=np.array([True]))
    with pytest.raises(ParameterError, match="summing to 1"):
        estimate_recall(sample, exhaustive_in_pool=np.array([True, False]), weights=[0.5, 0.6])
    with pytest.raises(ParameterError, match="only \\['B'\\] output"):
        estimate_recall(sample, exhaustive_in_pool=np.array([True, False]), weights=[1.0, 0.0])
    with pytest.raises(ParameterError, match="'weights'"):
        estimate_recall(sample, exhaustive_in_pool=np.array([True, False]), weights="overlap")
    with pytest.raises(ParameterError, match="'weights'"):
        estimate_recall(sample, exhaustive_in_pool=np.array([True, False]), weights=["a", "b"])
    with pytest.raises(DataError, match="no draws"):
        estimate_recall(JointSample.from_draws([a, b], [[], []]),
                        exhaustive_in_pool=np.array([True, False]))


# --------------------------------------------------------------------------------------------
# Sample size for a new system
# --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=9),
       st.lists(st.floats(0.01, 1.0), min_size=9, max_size=9))
def test_worst_case_variance_bounds_every_labeling_tightly(g, p):
    g = np.array(g)
    p = np.array(p[: g.size])
    p = p / p.sum()

    def var(f):
        return float(p @ (g * f) ** 2 - (p @ (g * f)) ** 2)

    binary = max(var(np.array(f)) for f in itertools.product([0.0, 1.0], repeat=g.size))
    worst = _worst_case_variance(p, g)
    # At least every 0/1 labeling's variance, at most one fractional item (p g)²/4 above.
    assert binary - 1e-12 <= worst <= binary + (p * g).max() ** 2 / 4 + 1e-12
    # And attained: a random search over fractional labelings never beats it.
    rng = np.random.default_rng(0)
    assert max(var(f) for f in rng.random((500, g.size))) <= worst + 1e-12


def _brute_force_variance(sample, systems, new, sampler, size, bound):
    """B.4's V(n) with loops and the overlap weights, for a single existing system."""
    (old,) = systems
    p_old, p_new, p_r = _dist(old), _dist(new), _dist(sampler)
    n_old = len(_expand(sample)[0])
    c_old = sum(p_new[x] * p_old.get(x, 0.0) for x in p_new)
    c_r = sum(p_new[x] * p_r.get(x, 0.0) for x in p_new)
    labels = dict(zip(sample.keys.tolist(), sample.labels.tolist()))

    def d(x):
        return n_old * c_old * p_old.get(x, 0.0) + size * c_r * p_r.get(x, 0.0)

    if any(d(x) <= 0 for x in p_new if p_new[x] > 0):
        return math.inf
    old_values = [p_new.get(x, 0.0) * labels[x] / d(x) if p_new.get(x, 0.0) > 0 else 0.0
                  for x in _expand(sample)[0]]
    total = n_old * c_old**2 * statistics.variance(old_values)
    if size:
        support = [x for x in p_r if p_r[x] > 0]
        g = [p_new.get(x, 0.0) / d(x) for x in support]
        weights = [p_r[x] for x in support]
        if bound == "second-moment":
            spread = sum(w * v * v for w, v in zip(weights, g))
        else:  # checked against brute force in its own test
            spread = _worst_case_variance(np.array(weights), np.array(g))
        total += size * c_r**2 * spread
    return total


@pytest.mark.parametrize("bound", ["second-moment", "worst-case"])
@pytest.mark.parametrize("use_diff", [False, True])
def test_sample_size_is_the_smallest_that_meets_the_target(bound, use_diff):
    old_keys = [f"o{i}" for i in range(8)]
    # The new output holds the old one (else draws of the difference alone cannot reach the
    # target: old draws outside the new output add variance no new draw removes).
    new_keys = old_keys + ["n1", "n2", "n3"]
    labels = dict(zip(old_keys, [1, 0, 1, 1, 0, 1, 1, 0]))
    old = _uniform("old", old_keys)
    new = SystemOutput.from_scores("new", new_keys, np.linspace(1, 2, len(new_keys)),
                                   SamplingDistribution.score_power())
    diff = _uniform("diff", ["n1", "n2", "n3"])
    sampler = diff if use_diff else new
    sample = draw_joint_sample([old], 200, seed=3).with_labels(list(labels), list(labels.values()))
    half_width = 0.1
    plan = required_sample_size(sample, [old], new, half_width=half_width, bound=bound,
                                draw_from=diff if use_diff else None)
    target = (half_width / Z95) ** 2
    curve = [_brute_force_variance(sample, [old], new, sampler, n, bound)
             for n in range(plan.size + 2)]
    assert plan.variance == pytest.approx(curve[plan.size], rel=1e-9)
    assert plan.half_width == pytest.approx(Z95 * math.sqrt(curve[plan.size]), rel=1e-9)
    assert curve[plan.size] <= target
    assert all(v > target for v in curve[: plan.size])  # nothing smaller meets the target


def test_sample_size_bounds_expected_labels_and_shortcuts():
    keys = [f"k{i}" for i in range(50)]
    labels = np.arange(50) % 2
    old = _uniform("old", keys)
    sample = draw_joint_sample([old], 400, seed=1).with_labels(keys, labels)
    # The same output, densely labeled already: no new draws needed.
    same = _uniform("same", keys)
    assert required_sample_size(sample, [old], same, half_width=0.1).size == 0
    fresh = _uniform("fresh", [f"f{i}" for i in range(200)])
    moment = required_sample_size(sample, [old], fresh, half_width=0.08)
    worst = required_sample_size(sample, [old], fresh, half_width=0.08, bound="worst-case")
    assert worst.size <= moment.size
    # Expected distinct items among n uniform draws from 200: 200 (1 - (1 - 1/200)^n).
    assert moment.expected_new_labels == pytest.approx(200 * (1 - (1 - 1 / 200) ** moment.size))
    half = required_sample_size(sample, [old], fresh, half_width=0.08,
                                labeled_keys=[f"f{i}" for i in range(100)])
    assert half.expected_new_labels == pytest.approx(moment.expected_new_labels / 2)


def test_sample_size_errors():
    old = _uniform("old", ["a", "b"])
    sample = _labeled([old], [["a", "b", "a"]], {"a": 1, "b": 0})
    new = _uniform("new", ["b", "c"])
    with pytest.raises(ParameterError, match="'c' of 'new' is in no sampled system"):
        required_sample_size(sample, [old], new, half_width=0.1, draw_from=_uniform("d", ["b"]))
    with pytest.raises(ParameterError, match="sample's systems in order"):
        required_sample_size(sample, [_uniform("other", ["a"])], new, half_width=0.1)
    with pytest.raises(ParameterError, match="not already in the sample"):
        required_sample_size(sample, [old], _uniform("old", ["c"]), half_width=0.1)
    with pytest.raises(ParameterError, match="'half_width'"):
        required_sample_size(sample, [old], new, half_width=0.0)
    with pytest.raises(ParameterError, match="'bound'"):
        required_sample_size(sample, [old], new, half_width=0.1, bound="exact")
    with pytest.raises(ParameterError, match="even 10 draws"):
        required_sample_size(sample, [old], new, half_width=0.01, max_size=10)
    unlabeled = JointSample.from_draws([old], [["a", "b"]])
    with pytest.raises(AwaitingLabels):
        required_sample_size(unlabeled, [old], new, half_width=0.1)
    single = _labeled([old], [["a"]], {"a": 1})
    with pytest.raises(DataError, match="'old' has 1 draw"):
        required_sample_size(single, [old], new, half_width=0.1)


# Release 2 keeps release 1's 9,000 items and adds 1,000 (90 % of it is shared). Release 1 was
# evaluated with N1 = 400 uniform draws; the target is the half-width that evaluation reached.
# Release 2 is sampled on its 1,000 new items only (uniform over the difference), the joint
# estimator reusing release 1's labels for the shared part.
N_OLD, N_NEW, N1, RELEASE_SEEDS = 9_000, 1_000, 400, 40


@pytest.fixture(scope="module")
def release_runs():
    rng = np.random.default_rng(12345)
    old = np.array([f"o{i}" for i in range(N_OLD)], dtype=object)
    new = np.array([f"n{i}" for i in range(N_NEW)], dtype=object)
    keys = np.concatenate([old, new])
    # Shared items 70 % correct, new items 50 % (the variance-maximising rate).
    labels = np.concatenate([rng.random(old.size) < 0.7, rng.random(new.size) < 0.5]) * 1.0
    release1, release2 = _uniform("release1", old), _uniform("release2", keys)
    added = _uniform("added", new)
    runs = []
    for seed in range(RELEASE_SEEDS):
        first = draw_joint_sample([release1], N1, seed=seed).with_labels(keys, labels)
        target = float(estimate_precision(first).simple_half_width[0])
        plan = required_sample_size(first, [release1], release2, half_width=target,
                                    bound="worst-case", draw_from=added)
        drawn = np.random.default_rng([seed, 1]).choice(new, size=plan.size)
        joint = JointSample.from_draws(
            [release1, added, release2], [_expand(first)[0], drawn, []]
        ).with_labels(keys, labels)
        est = estimate_precision(joint)
        runs.append((target, plan.expected_new_labels, np.unique(drawn).size,
                     est.precision[2], est.half_width[2]))
    return np.array(runs), labels.mean()


def test_release_needs_at_most_a_fifth_of_the_labels(release_runs):
    runs, _ = release_runs
    # Every seed's plan, and the labels the simulated draws actually needed.
    assert np.all(runs[:, 1] <= 0.2 * N1), runs[:, 1].max()
    assert np.all(runs[:, 2] <= 0.2 * N1), runs[:, 2].max()


def test_release_reaches_the_same_interval_width_without_bias(release_runs):
    runs, truth = release_runs
    # The plan bounds the variance conservatively, so the realised half-width of release 2 is at
    # most release 1's on average; 2 % covers the seed-to-seed spread of the 40-run means.
    assert runs[:, 4].mean() <= 1.02 * runs[:, 0].mean()
    se = runs[:, 3].std(ddof=1) / math.sqrt(RELEASE_SEEDS)
    assert abs(runs[:, 3].mean() - truth) <= 4 * se
