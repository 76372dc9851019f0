"""Tests of prdist.bootstrap.replicates: bootstrap confidence bands for the functional PR curve.

Oracles: the slow, obvious per-item bootstrap (draw the items, add the kernel noise, fit the
empirical curve) whose law the replicate kernel must have, the smoothed cdf summed term by term
(the kernel reads it from a table), the class distribution by brute force, a weighted quantile by
repeating values, the closed-form binomial moments of the importance weights, and population
models whose PR curve is known exactly. Statistical tests use fixed seeds and tolerances derived
from the binomial law of what they count.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

import prdist
from prdist.bootstrap import replicates as bootstrap, batches as bootstrap_batches, laws as bootstrap_laws
from prdist import population
from prdist.bootstrap.replicates import (
    BootstrapWarning,
    bootstrap_band_result,
    bootstrap_bands,
    bootstrap_replicates,
    default_instrumental_rate,
    expected_ess_fraction,
    recall_grid,
    weighted_quantile,
)
from prdist.bootstrap.batches import replicate_batch_sizes, run_replicate_batch
from prdist.bootstrap.asymptotics import (
    normal_pointwise_bands,
    plugin_asymptotic_variance,
    silverman_bandwidth,
)
from prdist.curves import EmpiricalPR, empirical_pr
from prdist.errors import DataError, ParameterError

BAND_COLUMNS = [
    "recall",
    "precision",
    "band_lower",
    "band_upper",
    "pointwise_lower",
    "pointwise_upper",
]


def binormal(prevalence, *, shift=1.0):
    """Unit-variance normal classes, the positives shifted up by ``shift``."""
    return population.binormal(neg=(0, 1), pos=(shift, 1), prevalence=prevalence)


def make_setup(scores, labels, *, method="smoothed-importance", beta=None, bandwidth=None):
    """The BootstrapSetup that bootstrap_bands would draw replicates from, its laws tabulated."""
    setup, _, _, _ = bootstrap._prepare(
        scores,
        labels,
        owner="test",
        replicates=1,
        method=method,
        seed=0,
        beta=beta,
        eps_beta=None,
        bandwidth=bandwidth,
        instrumental_rate=None,
    )
    return bootstrap_batches.tabulate_laws(setup)


# ---------------------------------------------------------------------------------------------
# The class laws and the replicate kernel against the per-item bootstrap
# ---------------------------------------------------------------------------------------------

# Small integer scores: many ties inside and across the classes.
positive_scores = st.lists(st.integers(0, 6), min_size=2, max_size=25)
negative_scores = st.lists(st.integers(0, 6), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(scores=positive_scores, u=st.lists(st.floats(1e-9, 1 - 1e-9), min_size=1, max_size=10))
def test_empirical_law_is_the_distribution_of_the_scores(scores, u):
    x = np.sort(np.array(scores, dtype=float))
    law = bootstrap_laws.EmpiricalLaw.fit(x)
    # Levels i/m hit the cdf's steps exactly: the quantile is the smallest x with F(x) >= u.
    levels = np.r_[u, np.arange(1, x.size) / x.size]
    expected = [min(v for v in x if np.count_nonzero(x <= v) / x.size >= level) for level in levels]
    np.testing.assert_array_equal(law.quantile(levels), expected)
    points = np.arange(-1.0, 8.0, 0.5)
    np.testing.assert_array_equal(law.cdf(points), [np.mean(x <= t) for t in points])


def exact_smoothed_cdf(scores, h, t):
    """mean_j Phi((t - x_j) / h), term by term."""
    t = np.asarray(t, dtype=float)
    return special.ndtr((t.reshape(-1, 1) - scores) / h).mean(axis=1).reshape(t.shape)


SMOOTHED_SAMPLES = {
    "binormal": (binormal(0.3).sample(3000, seed=1)[0], None),
    "far clusters": (np.r_[np.zeros(50), np.full(30, 40.0), np.linspace(100, 101, 20)], 0.05),
    "one score": (np.array([3.0]), 0.2),
}


@pytest.mark.parametrize("name", list(SMOOTHED_SAMPLES))
def test_smoothed_law_is_within_its_error_bound(name):
    scores, h = SMOOTHED_SAMPLES[name]
    scores = np.sort(scores)
    h = h or 0.9 * scores.std() * scores.size ** (-0.2)
    n = 2000  # the far clusters then fit in a table of full resolution
    law = bootstrap_laws.SmoothedLaw.fit(scores, h, total_items=n)
    assert n * law.error_bound <= 1e-3
    tolerance = law.error_bound + 1e-12
    t = np.random.default_rng(0).uniform(scores[0] - 10 * h, scores[-1] + 10 * h, 3000)
    assert np.abs(law.cdf(t) - exact_smoothed_cdf(scores, h, t)).max() <= tolerance
    u = np.random.default_rng(1).uniform(0.001, 0.999, 3000)
    assert np.abs(exact_smoothed_cdf(scores, h, law.quantile(u)) - u).max() <= tolerance


def test_smoothed_law_pickles_without_its_nodes_and_comes_back_bit_for_bit():
    scores = np.sort(binormal(0.3).sample(3000, seed=1)[0])
    law = bootstrap_laws.SmoothedLaw.fit(scores, 0.1, total_items=100_000)
    blob = pickle.dumps(law, protocol=5)
    assert len(blob) < law.nodes.nbytes + law.cumulative.nbytes / 2  # what a cluster ships
    copy = pickle.loads(blob)
    for field in ("nodes", "cumulative"):
        np.testing.assert_array_equal(getattr(copy, field), getattr(law, field))
    assert (copy.step, copy.error_bound) == (law.step, law.error_bound)


@pytest.mark.parametrize("bandwidth", [0.0, 0.1])
def test_a_law_source_tabulates_the_law_and_knows_its_error_bound_before(bandwidth):
    scores = np.sort(binormal(0.3).sample(3000, seed=1)[0])
    source = bootstrap_laws.LawSource(scores, bandwidth, 100_000)
    law = source.tabulate()
    if bandwidth:
        fitted = bootstrap_laws.SmoothedLaw.fit(scores, bandwidth, total_items=100_000)
        assert source.error_bound == law.error_bound == fitted.error_bound > 0.0
        np.testing.assert_array_equal(law.cumulative, fitted.cumulative)
    else:
        assert isinstance(law, bootstrap_laws.EmpiricalLaw) and source.error_bound == 0.0
    setup = make_setup(*binormal(0.3).sample(500, seed=2))
    assert bootstrap_batches.tabulate_laws(setup) is setup  # tabulated laws are kept as they are


def test_scores_spread_over_millions_of_bandwidths_warn_and_keep_the_table_small():
    scores, labels = binormal(0.3).sample(2000, seed=2)
    scores[0] = 1e7  # an outlier some 10^8 bandwidths away
    with pytest.warns(BootstrapWarning, match="tabulated coarsely"):
        bands = bootstrap_bands(scores, labels, replicates=100, seed=1)
        setup = make_setup(scores, labels)
    for law in (setup.positive_law, setup.negative_law):
        assert law.nodes.size < 1.01 * 2**20  # 2^20 nodes and the kernel's margins
    assert bands[BAND_COLUMNS].notna().all().all()


def per_item_replicates(setup, pos, neg, rng, replicates):
    """The obvious bootstrap: draw the items (plus kernel noise), then the empirical curve."""
    curves = np.empty((replicates, setup.beta.size))
    for b in range(replicates):
        n_pos = bootstrap_batches._draw_positive_counts(setup, rng, 1)[0][0]
        drawn = [rng.choice(pos, n_pos), rng.choice(neg, setup.n - n_pos)]
        if setup.bandwidth > 0:
            drawn = [x + setup.bandwidth * rng.standard_normal(x.size) for x in drawn]
        labels = np.r_[np.ones(n_pos), np.zeros(setup.n - n_pos)]
        curves[b] = EmpiricalPR.fit(np.concatenate(drawn), labels, warn_ties=False).precision(
            setup.beta
        )
    return curves


@pytest.mark.parametrize("method", ["smoothed-importance", "stratified", "naive"])
def test_replicates_follow_the_law_of_the_per_item_bootstrap(method):
    # Tied integer scores (the unsmoothed laws have atoms) and a sample of 150 items.
    rng = np.random.default_rng(4)
    labels = rng.random(150) < 0.4
    scores = np.round(rng.normal(labels * 1.0, 1.0) * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setup = make_setup(scores, labels, method=method)
    reference = per_item_replicates(
        setup, scores[labels], scores[~labels], np.random.default_rng(5), 4000
    )
    drawn = run_replicate_batch(setup, 4000, np.random.SeedSequence(6)).precision
    # Two-sample KS at level 1e-4 on 4000 replicates each, at five recall levels and for the sup
    # deviation: detects a cdf difference of ~0.045; the laws are the same, so only a wrong
    # kernel fails (on atoms KS is conservative).
    for column in (5, 30, 50, 70, 95):
        assert stats.ks_2samp(drawn[:, column], reference[:, column]).pvalue > 1e-4
    sups = [np.abs(c - setup.precision).max(axis=1) for c in (drawn, reference)]
    assert stats.ks_2samp(*sups).pvalue > 1e-4


class ExactSmoothedLaw:
    """The smoothed law without a table: the cdf term by term, the quantile by Newton's method."""

    def __init__(self, scores, h, start):
        self.scores, self.h, self.start = scores, h, start

    def cdf(self, t):
        return exact_smoothed_cdf(self.scores, self.h, t)

    def quantile(self, u):
        t = self.start.quantile(u)  # within the table's error: Newton converges in a few steps
        for _ in range(4):
            z = (t.reshape(-1, 1) - self.scores) / self.h
            density = np.exp(-0.5 * z * z).mean(axis=1).reshape(t.shape) / math.sqrt(2 * math.pi)
            t = t - (self.cdf(t) - u) / (density / self.h)
        assert np.abs(self.cdf(t) - u).max() < 1e-13
        return t


def test_tabulated_laws_move_the_bands_by_under_one_percent_of_their_width():
    # The same random numbers through the tables and through the exact smoothed cdfs.
    scores, labels = binormal(0.3).sample(1000, seed=7)
    setup = make_setup(scores, labels)
    pos, neg = np.sort(scores[labels == 1]), np.sort(scores[labels == 0])
    exact = dataclasses.replace(
        setup,
        positive_law=ExactSmoothedLaw(pos, setup.bandwidth, setup.positive_law),
        negative_law=ExactSmoothedLaw(neg, setup.bandwidth, setup.negative_law),
    )
    radii, curves = [], []
    for s in (setup, exact):
        curves.append(run_replicate_batch(s, 300, np.random.SeedSequence(8)).precision)
        deviation = np.abs(curves[-1] - setup.precision)
        weights = np.ones(300)
        radii.append(
            (weighted_quantile(deviation.max(axis=1), weights, 0.95),
             weighted_quantile(deviation, weights, 0.95))
        )
    # Every count moves by <= n error_bound = 0.001 items in expectation: a whole item rarely.
    assert np.mean(curves[0] != curves[1]) < 0.01
    (sup, pointwise), (exact_sup, exact_pointwise) = radii
    # Band widths are twice the radii: the difference is under 1 % of the width at every recall.
    assert abs(sup - exact_sup) <= 0.01 * 2 * exact_sup
    assert np.all(np.abs(pointwise - exact_pointwise) <= 0.01 * 2 * exact_pointwise)


def test_positive_counts_follow_each_method():
    scores, labels = binormal(0.2).sample(1000, seed=1)
    n_pos = int(labels.sum())
    strat = bootstrap_replicates(scores, labels, replicates=300, method="stratified", seed=2)
    assert np.all(strat.n_positive == n_pos)
    naive = bootstrap_replicates(scores, labels, replicates=2000, method="naive", seed=2)
    # n*+ ~ Binomial(n, p^): its mean over 2000 replicates is within 4.5 standard errors.
    p = n_pos / 1000
    assert abs(naive.n_positive.mean() - n_pos) < 4.5 * math.sqrt(1000 * p * (1 - p) / 2000)
    assert naive.ess == pytest.approx(2000) and naive.instrumental_rate is None


def test_zero_positive_draws_are_redrawn():
    # 3 positives in 600: P(n*+ = 0) = (1 - 1/200)^600 ~ 5%, so ~100 of 2000 draws are redrawn.
    rng = np.random.default_rng(0)
    scores = rng.normal(size=600)
    labels = np.zeros(600)
    labels[:3] = 1
    with pytest.warns(BootstrapWarning, match="only 3 positives"):
        reps = bootstrap_replicates(scores, labels, replicates=2000, method="naive", seed=4)
    assert reps.n_positive.min() >= 1
    assert 50 < reps.redraws < 200


# ---------------------------------------------------------------------------------------------
# Importance weights and the instrumental rate
# ---------------------------------------------------------------------------------------------


def test_weights_are_self_normalised_and_ess_in_range():
    scores, labels = binormal(0.02, shift=2).sample(1000, seed=4)
    assert 20 <= labels.sum() < bootstrap.DEFAULT_MIN_POSITIVES
    reps = bootstrap_replicates(scores, labels, replicates=500, seed=8)
    assert reps.instrumental_rate > reps.prevalence  # too few positives: the default raises p~
    assert reps.ess < reps.replicates
    w = reps.weights
    assert w.sum() == pytest.approx(1.0, abs=1e-12) and np.all(w > 0)
    assert 0 < reps.ess <= reps.replicates
    # log weights are exactly the binomial likelihood ratio
    p, q = reps.prevalence, reps.instrumental_rate
    k = reps.n_positive
    expected = k * math.log(p / q) + (reps.n - k) * math.log((1 - p) / (1 - q))
    np.testing.assert_allclose(reps.log_weight, expected, rtol=1e-12)


def test_weights_turn_instrumental_counts_into_the_plain_bootstrap_law():
    # p~ = 1.6 p^: the weighted law of n*+ must be Binomial(n, p^), not Binomial(n, p~).
    scores, labels = binormal(0.05).sample(400, seed=3)
    p = labels.mean()
    with pytest.warns(BootstrapWarning, match="positives"):
        reps = bootstrap_replicates(
            scores, labels, replicates=20_000, seed=9, instrumental_rate=1.6 * p
        )
    w = reps.weights
    mean = float(np.dot(w, reps.n_positive))
    var = float(np.dot(w, (reps.n_positive - mean) ** 2))
    sd = math.sqrt(400 * p * (1 - p))
    # Self-normalised estimates from ESS effective draws: 4.5 standard errors for the mean; the
    # variance estimate of ESS draws has relative sd ~ sqrt(2 / ESS) < 3%: allow 15%.
    assert abs(mean - 400 * p) < 4.5 * sd / math.sqrt(reps.ess)
    assert var == pytest.approx(sd**2, rel=0.15)
    # Unweighted, the counts follow the instrumental law.
    assert abs(reps.n_positive.mean() - 400 * 1.6 * p) < 4.5 * sd


@pytest.mark.parametrize(
    ("n", "p", "q"),
    [(400, 0.05, 0.065), (1000, 0.02, 0.026), (200, 0.3, 0.325), (5000, 0.01, 0.0115)],
)
def test_expected_ess_fraction_matches_simulated_weights(n, p, q):
    counts = np.random.default_rng(11).binomial(n, q, 200_000)
    log_w = counts * math.log(p / q) + (n - counts) * math.log((1 - p) / (1 - q))
    w = np.exp(log_w - log_w.max())
    simulated = w.sum() ** 2 / np.dot(w, w) / counts.size
    # Expected fractions 0.23-0.57: the weights' higher moments are then small enough that the ESS
    # of 2e5 draws is within ~1% of B rho^-n (its relative sd); 5% is a > 4-sigma margin.
    assert simulated == pytest.approx(expected_ess_fraction(n, p, q), rel=0.05)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 10**7), p=st.floats(1e-6, 0.999), target=st.floats(0.05, 0.99))
def test_default_instrumental_rate_keeps_enough_positives_and_ess(n, p, target):
    q = default_instrumental_rate(n, p, min_ess_fraction=target)
    assert p <= q < 1
    if n * p >= bootstrap.DEFAULT_MIN_POSITIVES:
        assert q == p
    else:
        # Either the positives target is reached or the ESS constraint binds exactly.
        ess = expected_ess_fraction(n, p, q)
        assert ess >= target * (1 - 1e-9)
        reached = n * q >= bootstrap.DEFAULT_MIN_POSITIVES * (1 - 1e-12)
        assert reached or ess == pytest.approx(target, rel=1e-6)


def test_paper_rate_one_half_collapses_the_ess_and_warns():
    scores, labels = binormal(0.05, shift=2).sample(500, seed=2)
    with pytest.warns(BootstrapWarning, match="effective replicates"):
        stats = bootstrap_band_result(scores, labels, replicates=300, seed=1, instrumental_rate=0.5).statistics
    assert stats.ess < 5
    assert stats.expected_ess_fraction < 1e-20


# ---------------------------------------------------------------------------------------------
# Quantiles and bands
# ---------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(-5, 5), st.integers(0, 4)), min_size=1, max_size=30),
    level=st.sampled_from([0.05, 0.5, 0.9, 0.95, 1.0]),
)
def test_weighted_quantile_equals_quantile_of_repeated_values(data, level):
    values = np.array([float(v) for v, _ in data])
    weights = np.array([float(w) for _, w in data])
    if weights.sum() == 0:
        weights[0] = 1.0
    repeated = np.sort(np.repeat(values, weights.astype(int)))
    expected = repeated[math.ceil(level * repeated.size) - 1]
    assert weighted_quantile(values, weights, level) == expected
    # Column-wise on a 2-d array
    both = weighted_quantile(np.c_[values, -values], weights, level)
    assert both[0] == expected
    negated = np.sort(np.repeat(-values, weights.astype(int)))
    assert both[1] == negated[math.ceil(level * repeated.size) - 1]


def sorted_weighted_quantile(values, weights, level):
    """The definition, column by column: sort, accumulate the weights, first to reach the level."""
    order = np.argsort(values, axis=0, kind="stable")
    cumulative = np.cumsum(weights[order], axis=0)
    first = np.argmax(cumulative >= level * cumulative[-1], axis=0)
    return np.take_along_axis(np.take_along_axis(values, order, axis=0), first[None], axis=0)[0]


@pytest.mark.parametrize("weight", ["ones", "all 0.7", "unequal", "some zero"])
def test_weighted_quantile_equals_the_sorted_definition_bit_for_bit(weight):
    # Equal weights take a selection, unequal ones a sort of contiguous rows: both must give
    # exactly the value the definition gives, ties and float sums of the weights included
    # (2000 weights of 0.7 reach 0.95 of their float sum at the 1901st value, not the 1900th).
    rng = np.random.default_rng(4)
    values = np.r_[rng.integers(0, 40, (1000, 7)) / 40.0, rng.random((1000, 7))]
    weights = {
        "ones": np.ones(values.shape[0]),
        "all 0.7": np.full(values.shape[0], 0.7),
        "unequal": rng.exponential(size=values.shape[0]),
        "some zero": rng.exponential(size=values.shape[0]) * (rng.random(values.shape[0]) < 0.5),
    }[weight]
    for level in (0.05, 0.5, 0.9, 0.95, 0.999, 1.0):
        expected = sorted_weighted_quantile(values, weights, level)
        np.testing.assert_array_equal(weighted_quantile(values, weights, level), expected)
        assert weighted_quantile(values[:, 3], weights, level) == expected[3]


def test_bands_are_nested_and_centred():
    scores, labels = population.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.2).sample(1500, seed=4)
    result = bootstrap_band_result(scores, labels, replicates=300, seed=5)
    bands = result.table
    assert list(bands.columns[:6]) == BAND_COLUMNS
    assert all(bands[c].dtype == np.float64 for c in bands.columns)
    assert not bands.isna().any().any()
    order = ["band_lower", "pointwise_lower", "precision", "pointwise_upper", "band_upper"]
    lo, plo, pr, phi, hi = (bands[c].to_numpy() for c in order)
    assert np.all((0 <= lo) & (lo <= plo) & (plo <= pr) & (pr <= phi) & (phi <= hi) & (hi <= 1))
    np.testing.assert_array_equal(bands.recall, recall_grid())
    np.testing.assert_array_equal(bands.precision, empirical_pr(scores, labels, recall_grid()))
    stats = result.statistics
    assert stats.method == "smoothed-importance" and stats.replicates == 300
    assert stats.bandwidth == pytest.approx(silverman_bandwidth(scores, labels))
    assert 0 < stats.ess <= 300 and stats.n == 1500
    assert stats.to_dict()["n_positive"] == stats.n_positive == int(labels.sum())


def test_radius_is_the_weighted_quantile_of_the_sup_deviation():
    scores, labels = binormal(0.04).sample(800, seed=1)
    reps = bootstrap_replicates(scores, labels, replicates=400, seed=2)
    result = reps.band_result(0.1)
    bands = result.table
    pd.testing.assert_frame_equal(bands, reps.bands(0.1), check_exact=True)
    sup = np.abs(reps.replicate_precision - reps.precision).max(axis=1)
    order = np.argsort(sup)
    cum = np.cumsum(reps.weights[order])
    expected = sup[order][np.searchsorted(cum, 0.9 * cum[-1] * (1 - 1e-12))]
    assert result.statistics.sup_radius == pytest.approx(expected, rel=1e-12)
    # Clipped to [0, 1], never wider than the radius.
    assert np.all(bands.band_upper - bands.precision <= expected + 1e-15)


def test_same_seed_same_bands_and_seed_none_is_reproducible():
    scores, labels = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3).sample(600, seed=3)
    a = bootstrap_bands(scores, labels, replicates=100, seed=42)
    b = bootstrap_bands(scores, labels, replicates=100, seed=42)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = bootstrap_bands(scores, labels, replicates=100, seed=43)
    assert not np.array_equal(a.band_lower, c.band_lower)
    fresh = bootstrap_band_result(scores, labels, replicates=100)
    again = bootstrap_bands(scores, labels, replicates=100, seed=fresh.statistics.seed_entropy)
    pd.testing.assert_frame_equal(fresh.table, again, check_exact=True)
    ss = np.random.SeedSequence(7)
    pd.testing.assert_frame_equal(
        bootstrap_bands(scores, labels, replicates=100, seed=ss),
        bootstrap_bands(scores, labels, replicates=100, seed=ss),
        check_exact=True,
    )


def test_replicates_are_the_seeded_batches_in_order():
    scores, labels = binormal(0.3).sample(50_000, seed=3)
    reps = bootstrap_replicates(scores, labels, replicates=100, seed=5)
    sizes = replicate_batch_sizes(100)
    assert reps.batch_sizes == sizes and len(sizes) > 1
    setup = make_setup(scores, labels)
    seeds = np.random.SeedSequence(5).spawn(len(sizes))
    manual = np.concatenate(
        [run_replicate_batch(setup, k, s).precision for k, s in zip(sizes, seeds)]
    )
    np.testing.assert_array_equal(reps.replicate_precision, manual)
    # A cluster task runs a share of consecutive batches, joined: the same rows.
    shares = [bootstrap_batches.run_replicate_batches(setup, sizes[i:i + 3], seeds[i:i + 3])
              for i in range(0, len(sizes), 3)]
    joined = bootstrap_batches.join_batches(shares)
    np.testing.assert_array_equal(joined.precision, manual)
    np.testing.assert_array_equal(joined.n_positive, reps.n_positive)
    np.testing.assert_array_equal(joined.log_weight, reps.log_weight)


@settings(max_examples=50, deadline=None)
@given(replicates=st.integers(1, 50_000))
def test_batch_sizes_cover_the_replicates(replicates):
    sizes = replicate_batch_sizes(replicates)
    assert sum(sizes) == replicates and all(s >= 1 for s in sizes)
    assert max(sizes) - min(sizes) <= 1 and list(sizes) == sorted(sizes, reverse=True)
    # The fewest batches within the limit, in multiples of 8 (or one replicate each).
    most = bootstrap_batches._MAX_BATCH_REPLICATES
    assert max(sizes) <= most
    assert len(sizes) == replicates or (len(sizes) % 8 == 0 and (len(sizes) - 8) * most < replicates)


def test_silverman_bandwidth_ignores_class_separation_and_scales():
    rng = np.random.default_rng(0)
    labels = rng.random(2000) < 0.4
    scores = rng.normal(size=2000)
    h = silverman_bandwidth(scores, labels)
    assert silverman_bandwidth(scores + 7.0 * labels, labels) == pytest.approx(h, rel=1e-12)
    assert silverman_bandwidth(3.0 * scores, labels) == pytest.approx(3.0 * h, rel=1e-12)
    assert h == pytest.approx(0.9 * 2000 ** (-0.2), rel=0.1)  # unit-variance classes


# ---------------------------------------------------------------------------------------------
# Normal approximation cross-check
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5),
        population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=1 / 11),
    ],
    ids=["binormal-balanced", "binormal-1:10"],
)
def test_plugin_variance_approaches_the_population_variance(model):
    beta = np.array([0.3, 0.5, 0.7])
    scores, labels = model.sample(50_000, seed=1)
    ratio = plugin_asymptotic_variance(scores, labels, beta) / model.asymptotic_variance(beta)
    # At n = 5e4 the plug-in (kernel density ratio, empirical alpha and p) is within a few % of the
    # truth in the middle of the curve; 20% leaves room for the density estimate's bias.
    np.testing.assert_allclose(ratio, 1.0, rtol=0.2)


def test_normal_bands_from_model_variance():
    model = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
    beta = np.array([0.25, 0.5])
    variance = model.asymptotic_variance(beta)
    lo, hi = normal_pointwise_bands(model.pr(beta), variance, 1000, delta=0.1)
    half = stats.norm.ppf(0.95) * np.sqrt(variance / 1000)
    np.testing.assert_allclose(hi - lo, 2 * half)
    with pytest.raises(ParameterError, match="variance"):
        normal_pointwise_bands([0.5], [-1.0], 10)


# ---------------------------------------------------------------------------------------------
# Degenerate input
# ---------------------------------------------------------------------------------------------


def test_degenerate_samples_raise_clear_errors():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=50)
    with pytest.raises(DataError, match="no positive"):
        bootstrap_bands(scores, np.zeros(50))
    with pytest.raises(DataError, match="no negative"):
        bootstrap_bands(scores, np.ones(50))
    one = np.zeros(50)
    one[0] = 1
    with pytest.raises(DataError, match="at least 2 positives"):
        bootstrap_bands(scores, one)
    with pytest.raises(DataError, match="All scores are equal"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tie warning comes first
        bootstrap_bands(np.ones(50), np.r_[np.ones(25), np.zeros(25)])
    with pytest.raises(DataError, match="missing"):
        bootstrap_bands(scores, np.r_[np.nan, np.ones(24), np.zeros(25)])
    with pytest.raises(DataError, match="finite"):
        bootstrap_bands(np.r_[np.inf, scores[1:]], np.r_[np.ones(25), np.zeros(25)])


def test_few_positives_warn():
    rng = np.random.default_rng(0)
    labels = np.zeros(300)
    labels[:8] = 1
    with pytest.warns(BootstrapWarning, match="only 8 positives"):
        result = bootstrap_band_result(rng.normal(labels), labels, replicates=400, seed=1)
    bands = result.table
    assert result.statistics.instrumental_rate > 8 / 300  # importance resampling is active
    assert not bands.isna().any().any()


def test_constant_classes_are_smoothed_on_the_between_class_scale():
    scores = np.r_[np.ones(30), np.zeros(70)]
    labels = np.r_[np.ones(30), np.zeros(70)]
    expected = 0.9 * np.std(scores, ddof=1) * 100 ** (-0.2)
    assert silverman_bandwidth(scores, labels) == pytest.approx(expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tied positives: TiedScoresWarning by design
        bands = bootstrap_bands(scores, labels, replicates=50, seed=1)
    assert not bands.isna().any().any()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "'delta'"),
        ({"replicates": 0}, "'replicates'"),
        ({"method": "bayes"}, "'method'"),
        ({"seed": -1}, "'seed'"),
        ({"beta": [0.5, 0.3]}, "strictly increasing"),
        ({"beta": [0.5, 1.0]}, "'beta'"),
        ({"beta": [0.5], "eps_beta": 0.1}, "not both"),
        ({"eps_beta": 0.5}, "'eps_beta'"),
        ({"method": "stratified", "bandwidth": 0.1}, "'bandwidth'"),
        ({"method": "naive", "instrumental_rate": 0.5}, "'instrumental_rate'"),
        ({"instrumental_rate": 1.0}, "'instrumental_rate'"),
        ({"bandwidth": -1.0}, "'bandwidth'"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    rng = np.random.default_rng(0)
    labels = rng.random(200) < 0.5
    with pytest.raises(ParameterError, match=match):
        bootstrap_bands(rng.normal(labels * 1.0), labels, **kwargs)


def test_client_must_be_a_distributed_client():
    rng = np.random.default_rng(0)
    labels = rng.random(200) < 0.5
    with pytest.raises(ParameterError, match="distributed.Client"):
        prdist.bootstrap_bands(
            rng.normal(labels * 1.0), labels, replicates=10, client="tcp://localhost:8786"
        )
    with pytest.raises(ParameterError, match="'map_batches'"):
        bootstrap_bands(rng.normal(labels * 1.0), labels, replicates=10, map_batches="dask")


def test_batches_run_where_map_batches_says():
    scores, labels = binormal(0.3).sample(500, seed=1)
    calls = []

    def recording(setup, sizes, seeds):
        calls.append(tuple(sizes))
        return bootstrap_batches.map_batches_in_process(setup, sizes, seeds)

    mapped = bootstrap_bands(scores, labels, replicates=100, seed=3, map_batches=recording)
    assert calls == [replicate_batch_sizes(100)]
    pd.testing.assert_frame_equal(mapped, bootstrap_bands(scores, labels, replicates=100, seed=3))


def test_core_never_imports_the_dataflow_layer():
    # Imports point down: prdist.bootstrap.replicates (and prdist) import neither Dask nor prdist.dataflow.
    code = (
        "import sys, prdist, prdist.bootstrap.replicates; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed') "
        "or m.startswith('prdist.dataflow')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# Coverage on population models
# ---------------------------------------------------------------------------------------------

MODELS = {
    "binormal-balanced": population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5),
    "binormal-1:10": population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=1 / 11),
    "bibeta-balanced": population.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5),
    "bibeta-1:10": population.bibeta(neg=(2, 5), pos=(5, 2), prevalence=1 / 11),
}


def true_sup_quantile(model, n, level, *, samples, beta):
    """Monte-Carlo (level) quantile of sup_beta |PR^(beta) - PR(beta)| over fresh samples."""
    truth = model.pr(beta)
    sups = [
        np.abs(EmpiricalPR.fit(*model.sample(n, seed=10_000 + s)).precision(beta) - truth).max()
        for s in range(samples)
    ]
    return float(np.quantile(sups, level))


def coverage_study(model, *, n, replicates, seeds, method, delta=0.05):
    beta = recall_grid()
    truth = model.pr(beta)
    covered, covered_middle, radii = 0, 0, []
    middle = beta.size // 2  # recall 0.5
    for seed in seeds:
        scores, labels = model.sample(n, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BootstrapWarning)
            replicated = bootstrap_replicates(
                scores, labels, replicates=replicates, method=method, seed=seed
            )
            result = replicated.band_result(delta)
            bands = result.table
        covered += bool(np.all((bands.band_lower <= truth) & (truth <= bands.band_upper)))
        lower, upper = bands.pointwise_lower[middle], bands.pointwise_upper[middle]
        covered_middle += bool(lower <= truth[middle] <= upper)
        radii.append(result.statistics.sup_radius)
    true_q = true_sup_quantile(model, n, 1 - delta, samples=600, beta=beta)
    return covered / len(seeds), covered_middle / len(seeds), float(np.mean(radii)), true_q


# Tolerances. Coverage: with S seeds and a true coverage of 0.95 the count is Binomial(S, 0.95);
# the lower limit is 0.95 minus 3.5 binomial standard deviations (a false alarm rate < 3e-4)
# minus 0.02 for the bootstrap's own finite-sample error. The bands are conservative on these
# models: observed coverage 0.97-1.0 at n = 2000. The sup is reached near recall eps, where only
# a handful of negatives lie above the threshold; the bootstrap matches the pointwise standard
# deviations there on average, but each sample's estimate of them is noisy, and the sup of a
# process with noisy scales is larger (standardised sup quantile 3.2-3.3 against 2.95 for the
# truth on binormal-balanced). So coverage alone could not catch a band that is too wide: the
# mean radius must also be within [0.8, 1.4] times the Monte-Carlo 95% quantile of the true sup
# deviation (observed ratios 1.10-1.29 at n = 2000, 1.23 at n = 1000).
RADIUS_RATIO = (0.8, 1.4)


def coverage_floor(seeds: int, delta: float = 0.05) -> float:
    return 1 - delta - 3.5 * math.sqrt(delta * (1 - delta) / seeds) - 0.02


@pytest.mark.parametrize("name", ["binormal-balanced", "bibeta-1:10"])
def test_sup_band_covers_population_curve_fast(name):
    coverage, _, radius, true_q = coverage_study(
        MODELS[name], n=1000, replicates=200, seeds=range(40), method="smoothed-importance"
    )
    assert coverage >= coverage_floor(40)
    assert RADIUS_RATIO[0] <= radius / true_q <= RADIUS_RATIO[1]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["smoothed-importance", "stratified", "naive"])
@pytest.mark.parametrize("name", list(MODELS))
def test_sup_band_covers_population_curve(name, method):
    coverage, pointwise, radius, true_q = coverage_study(
        MODELS[name], n=2000, replicates=400, seeds=range(150), method=method
    )
    assert coverage >= coverage_floor(150)
    # Pointwise at recall 0.5 (observed 0.92-0.98 at these seeds): the same binomial floor.
    assert pointwise >= coverage_floor(150)
    assert RADIUS_RATIO[0] <= radius / true_q <= RADIUS_RATIO[1]


def test_band_result_is_typed_and_the_table_carries_no_attrs():
    """The statistics travel in a frozen BandStatistics beside the table, never in DataFrame.attrs."""
    scores, labels = binormal(0.3).sample(400, seed=8)
    result = bootstrap_band_result(scores, labels, replicates=64, seed=9, delta=0.1)
    assert result.table.attrs == {} and bootstrap_bands(scores, labels, replicates=64, seed=9, delta=0.1).attrs == {}
    stats = result.statistics
    assert isinstance(stats, bootstrap.BandStatistics) and stats.delta == 0.1 and stats.seed_entropy == 9
    assert list(stats.to_dict()) == [
        "method", "delta", "replicates", "sup_radius", "ess", "ess_fraction", "expected_ess_fraction",
        "bandwidth", "instrumental_rate", "prevalence", "n", "n_positive", "seed_entropy", "batches",
        "zero_positive_redraws", "recall_min", "recall_max",
    ]  # fmt: skip
    assert stats.batches == len(replicate_batch_sizes(64)) and (stats.recall_min, stats.recall_max) == (0.05, 0.95)
    with pytest.raises(AttributeError):
        stats.delta = 0.2  # frozen
    assert prdist.Bands is bootstrap.Bands and prdist.BandStatistics is bootstrap.BandStatistics
    via_api = prdist.bootstrap_band_result(scores, labels, replicates=64, seed=9, delta=0.1)
    pd.testing.assert_frame_equal(via_api.table, result.table, check_exact=True)
    assert via_api.statistics == stats
