"""Tests of prdist.bootstrap: bootstrap confidence bands for the functional PR curve.

Oracles: a literal, one-recall-level-at-a-time evaluation of a bootstrap sample's PR curve from
the definition (G^-1 as an infimum over the sample, exact rational levels), a weighted quantile by
repeating values, the closed-form binomial moments of the importance weights, and population
models whose PR curve is known exactly. Statistical tests use fixed seeds and tolerances derived
from the binomial law of what they count.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from prdist import bootstrap, population
from prdist.bootstrap import (
    BootstrapWarning,
    bootstrap_bands,
    bootstrap_replicates,
    default_instrumental_rate,
    expected_ess_fraction,
    normal_pointwise_bands,
    plugin_asymptotic_variance,
    recall_grid,
    replicate_batch_sizes,
    run_replicate_batch,
    silverman_bandwidth,
    weighted_quantile,
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
    """The BootstrapSetup that bootstrap_bands would scatter for this sample."""
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
    return setup


# ---------------------------------------------------------------------------------------------
# The replicate kernel against the definition
# ---------------------------------------------------------------------------------------------


def reference_precision(positives, negatives, levels):
    """PR(beta) of one sample straight from the definition, one recall level at a time.

    G^-1(1 - beta) = inf{x : G(x) >= 1 - beta} with G(x) = #{positives <= x} / m in exact
    rationals; false positives are the negatives strictly above that threshold.
    """
    positives = [float(x) for x in positives]
    m = len(positives)
    out = []
    for level in levels:
        beta = Fraction(level)
        threshold = min(
            x for x in positives if Fraction(sum(p <= x for p in positives), m) >= 1 - beta
        )
        false_positives = sum(v > threshold for v in negatives)
        b = float(beta)
        out.append(m * b / (m * b + false_positives))
    return np.array(out)


# Recall levels i/40: exact rationals whose floats the kernel must read the same way.
LEVELS = [Fraction(i, 40) for i in range(1, 40)]
BETA = np.array([float(f) for f in LEVELS])

# Small integer scores: many ties inside and across the classes.
positive_scores = st.lists(st.integers(0, 6), min_size=2, max_size=25)
negative_scores = st.lists(st.integers(0, 6), min_size=1, max_size=25)
seeds = st.integers(0, 2**32)


@settings(max_examples=60, deadline=None)
@given(pos=positive_scores, neg=negative_scores, seed=seeds)
def test_unsmoothed_kernel_matches_definition(pos, neg, seed):
    assume(len(set(pos + neg)) > 1)  # all-equal scores are rejected (tested below)
    scores = np.array(pos + neg, dtype=float)
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setup = make_setup(scores, labels, method="naive", beta=BETA)
    rng = np.random.default_rng(seed)
    n_pos = rng.integers(1, setup.n + 1, size=4)
    sample = bootstrap._draw_sample(setup, rng, n_pos, bootstrap._Scratch())
    got = bootstrap._evaluate(sample, setup)
    for r in range(n_pos.size):
        pos_counts = np.diff(sample.positive_cumcounts[r], prepend=0)
        neg_counts = np.diff(sample.negative_cumcounts[r], prepend=0)
        assert pos_counts.sum() == n_pos[r] and neg_counts.sum() == setup.n - n_pos[r]
        resampled_pos = np.repeat(setup.positive_scores, pos_counts)
        resampled_neg = np.repeat(setup.negative_scores, neg_counts)
        expected = reference_precision(resampled_pos, resampled_neg, LEVELS)
        np.testing.assert_allclose(got[r], expected, rtol=1e-14)


@settings(max_examples=60, deadline=None)
@given(pos=positive_scores, neg=negative_scores, seed=seeds)
def test_smoothed_kernel_matches_definition(pos, neg, seed):
    assume(len(set(pos + neg)) > 1)  # all-equal scores are rejected (tested below)
    scores = np.array(pos + neg, dtype=float)
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setup = make_setup(scores, labels, beta=BETA, bandwidth=0.5)
    rng = np.random.default_rng(seed)
    n_pos = rng.integers(1, setup.n + 1, size=4)
    sample = bootstrap._draw_sample(setup, rng, n_pos, bootstrap._Scratch())
    got = bootstrap._evaluate(sample, setup)
    for r in range(n_pos.size):
        n_neg = setup.n - n_pos[r]
        row_pos, row_neg = sample.positives[r], sample.negatives[r]
        # Rows: the drawn scores, sorted, then +inf padding.
        assert np.isfinite(row_pos[: n_pos[r]]).all() and np.isinf(row_pos[n_pos[r] :]).all()
        assert np.isfinite(row_neg[:n_neg]).all() and np.isinf(row_neg[n_neg:]).all()
        assert np.all(np.diff(row_pos[: n_pos[r]]) >= 0) and np.all(np.diff(row_neg[:n_neg]) >= 0)
        expected = reference_precision(row_pos[: n_pos[r]], row_neg[:n_neg], LEVELS)
        np.testing.assert_allclose(got[r], expected, rtol=1e-14)


def test_identity_resample_reproduces_the_empirical_curve_exactly():
    scores, labels = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3).sample(700, seed=5)
    beta = recall_grid()
    setup = make_setup(scores, labels, method="stratified", beta=beta)
    identity = bootstrap._CountedSample(
        n_positive=np.array([setup.n_positive]),
        n_negative=np.array([setup.n_negative]),
        positive_cumcounts=np.arange(1, setup.n_positive + 1)[None, :],
        negative_cumcounts=np.arange(1, setup.n_negative + 1)[None, :],
    )
    expected = empirical_pr(scores, labels, beta)
    np.testing.assert_array_equal(bootstrap._evaluate(identity, setup)[0], expected)
    np.testing.assert_array_equal(setup.precision, empirical_pr(scores, labels, beta))


def test_smoothing_adds_gaussian_noise_of_the_bandwidth():
    # Constant classes: every smoothed positive is 1 + N(0, h^2).
    scores = np.r_[np.ones(400), np.zeros(600)]
    labels = np.r_[np.ones(400), np.zeros(600)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tied positives: TiedScoresWarning by design
        setup = make_setup(scores, labels, bandwidth=0.1)
    rng = np.random.default_rng(3)
    n_pos = np.array([400, 400, 400])
    sample = bootstrap._draw_sample(setup, rng, n_pos, bootstrap._Scratch())
    assert sample.positives.dtype == np.float32  # range 10 h: float32 draws
    # Draws are centred on the middle of the score range.
    noise = (sample.positives.astype(float) + setup.draw_centre - 1.0).ravel() / 0.1
    # Kolmogorov-Smirnov at level 1e-4: fails only if the noise is not N(0, h^2).
    assert stats.kstest(noise, "norm").pvalue > 1e-4


def test_draws_are_float32_only_where_rounding_is_negligible():
    # A score range of a few bandwidths: float32; an outlier 1e4 bandwidths away: float64.
    rng = np.random.default_rng(0)
    scores, labels = rng.normal(size=2000), rng.random(2000) < 0.3
    setup = make_setup(scores, labels, bandwidth=0.1)
    assert setup.draw_positive.dtype == setup.draw_negative.dtype == np.float32
    np.testing.assert_allclose(
        setup.draw_negative + setup.draw_centre, setup.negative_scores, rtol=0, atol=1e-6
    )
    with_outlier = np.r_[scores, 1e3]
    setup = make_setup(with_outlier, np.r_[labels, False], bandwidth=0.1)
    assert setup.draw_positive.dtype == setup.draw_negative.dtype == np.float64
    # Huge scores: centring keeps float32 usable whenever the *spread* is small.
    setup = make_setup(scores + 1e9, labels, bandwidth=0.1)
    assert setup.draw_negative.dtype == np.float32
    assert abs(setup.draw_centre - 1e9) < 10
    # Without smoothing nothing is drawn in float32.
    assert bootstrap.smoothed_draw_dtype(1.0, 0.0) is np.float64


def test_float32_draws_give_the_band_distribution_of_float64_draws():
    # The same sample drawn both ways: the sup-deviations agree in distribution (two-sample KS
    # at level 1e-4 on 500 replicates each).
    scores, labels = binormal(0.3).sample(3000, seed=2)
    setup = make_setup(scores, labels)
    assert setup.draw_positive.dtype == np.float32
    in_float64 = dataclasses.replace(
        setup,
        draw_positive=setup.positive_scores - setup.draw_centre,
        draw_negative=setup.negative_scores - setup.draw_centre,
    )
    sups = [
        np.abs(run_replicate_batch(s, 500, np.random.SeedSequence(seed)).precision
               - setup.precision).max(axis=1)
        for s, seed in ((setup, 11), (in_float64, 12))
    ]
    assert stats.ks_2samp(*sups).pvalue > 1e-4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_muller_normals_are_standard_normal(dtype):
    rng = np.random.default_rng(5)
    z = bootstrap._normal(rng, 999_999, 2.5, bootstrap._Scratch(), dtype=dtype) / 2.5  # odd
    assert z.dtype == dtype and z.shape == (999_999,) and np.isfinite(z).all()
    # KS at level 1e-4 on 1e6 draws detects a cdf error of ~0.002; the transform's float32 angle
    # errs by < 1e-6, so only a wrong transform fails.
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-4
    # The two halves of each pair (cos and sin) are independent: no correlation between them.
    flat = z.ravel()
    half = (flat.size + 1) // 2
    assert abs(np.corrcoef(flat[: flat.size - half], flat[half:])[0, 1]) < 4.5 / math.sqrt(half)


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
        bands = bootstrap_bands(scores, labels, replicates=300, seed=1, instrumental_rate=0.5)
    assert bands.attrs["ess"] < 5
    assert bands.attrs["expected_ess_fraction"] < 1e-20


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


def test_bands_are_nested_and_centred():
    scores, labels = population.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.2).sample(1500, seed=4)
    bands = bootstrap_bands(scores, labels, replicates=300, seed=5)
    assert list(bands.columns[:6]) == BAND_COLUMNS
    assert all(bands[c].dtype == np.float64 for c in bands.columns)
    assert not bands.isna().any().any()
    order = ["band_lower", "pointwise_lower", "precision", "pointwise_upper", "band_upper"]
    lo, plo, pr, phi, hi = (bands[c].to_numpy() for c in order)
    assert np.all((0 <= lo) & (lo <= plo) & (plo <= pr) & (pr <= phi) & (phi <= hi) & (hi <= 1))
    np.testing.assert_array_equal(bands.recall, recall_grid())
    np.testing.assert_array_equal(bands.precision, empirical_pr(scores, labels, recall_grid()))
    attrs = bands.attrs
    assert attrs["method"] == "smoothed-importance" and attrs["replicates"] == 300
    assert attrs["bandwidth"] == pytest.approx(silverman_bandwidth(scores, labels))
    assert 0 < attrs["ess"] <= 300 and attrs["n"] == 1500


def test_radius_is_the_weighted_quantile_of_the_sup_deviation():
    scores, labels = binormal(0.04).sample(800, seed=1)
    reps = bootstrap_replicates(scores, labels, replicates=400, seed=2)
    bands = reps.bands(0.1)
    sup = np.abs(reps.replicate_precision - reps.precision).max(axis=1)
    order = np.argsort(sup)
    cum = np.cumsum(reps.weights[order])
    expected = sup[order][np.searchsorted(cum, 0.9 * cum[-1] * (1 - 1e-12))]
    assert bands.attrs["sup_radius"] == pytest.approx(expected, rel=1e-12)
    # Clipped to [0, 1], never wider than the radius.
    assert np.all(bands.band_upper - bands.precision <= expected + 1e-15)


def test_same_seed_same_bands_and_seed_none_is_reproducible():
    scores, labels = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3).sample(600, seed=3)
    a = bootstrap_bands(scores, labels, replicates=100, seed=42)
    b = bootstrap_bands(scores, labels, replicates=100, seed=42)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = bootstrap_bands(scores, labels, replicates=100, seed=43)
    assert not np.array_equal(a.band_lower, c.band_lower)
    fresh = bootstrap_bands(scores, labels, replicates=100)
    again = bootstrap_bands(scores, labels, replicates=100, seed=fresh.attrs["seed_entropy"])
    pd.testing.assert_frame_equal(fresh, again, check_exact=True)
    ss = np.random.SeedSequence(7)
    pd.testing.assert_frame_equal(
        bootstrap_bands(scores, labels, replicates=100, seed=ss),
        bootstrap_bands(scores, labels, replicates=100, seed=ss),
        check_exact=True,
    )


def test_replicates_are_the_seeded_batches_in_order():
    scores, labels = binormal(0.3).sample(50_000, seed=3)
    reps = bootstrap_replicates(scores, labels, replicates=100, seed=5)
    sizes = replicate_batch_sizes(100, 50_000)
    assert reps.batch_sizes == sizes and len(sizes) > 1
    setup = make_setup(scores, labels)
    seeds = np.random.SeedSequence(5).spawn(len(sizes))
    manual = np.concatenate(
        [run_replicate_batch(setup, k, s).precision for k, s in zip(sizes, seeds)]
    )
    np.testing.assert_array_equal(reps.replicate_precision, manual)


@settings(max_examples=50, deadline=None)
@given(replicates=st.integers(1, 5000), n=st.integers(1, 10**7))
def test_batch_sizes_cover_the_replicates(replicates, n):
    sizes = replicate_batch_sizes(replicates, n)
    assert sum(sizes) == replicates and all(s >= 1 for s in sizes)
    assert max(sizes) - min(sizes) <= 1 and list(sizes) == sorted(sizes, reverse=True)
    # The fewest batches within the limits, in multiples of 8 (or one replicate each).
    most = max(1, min(64, (1 << 22) // n))
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
        bands = bootstrap_bands(rng.normal(labels), labels, replicates=400, seed=1)
    assert bands.attrs["instrumental_rate"] > 8 / 300  # importance resampling is active
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
        bootstrap_bands(
            rng.normal(labels * 1.0), labels, replicates=10, client="tcp://localhost:8786"
        )


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
            bands = replicated.bands(delta)
        covered += bool(np.all((bands.band_lower <= truth) & (truth <= bands.band_upper)))
        lower, upper = bands.pointwise_lower[middle], bands.pointwise_upper[middle]
        covered_middle += bool(lower <= truth[middle] <= upper)
        radii.append(bands.attrs["sup_radius"])
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
