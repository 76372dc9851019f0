import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special, stats

from prdist import population as P
from prdist.curves import EmpiricalPR, empirical_pr
from prdist.errors import DataError, ParameterError

CASE_F = dict(
    neg=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7],
    pos=[0.2, 0.35, 0.5, 0.75, 0.9],
)
TEN_TO_ONE = 1 / 11  # "the negative class is ten times as likely as the positive class"


def continuous_models():
    base = P.binormal(neg=(0.0, 1.0), pos=(2.0, 1.0), prevalence=0.3)
    return {
        "binormal": P.binormal(neg=(0.0, 1.0), pos=(1.5, 1.3), prevalence=0.1),
        "binormal-equal-sd": base,
        "bilognormal": P.bilognormal(neg=(0.0, 0.5), pos=(1.0, 0.8), prevalence=0.2),
        "bibeta": P.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5),
        "bibeta-small-shapes": P.bibeta(neg=(0.7, 1.5), pos=(1.2, 0.6), prevalence=0.25),
        "uniform-case-d": P.uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=TEN_TO_ONE),
        "uniform-disjoint-gap": P.uniform(neg=(0, 1), pos=(2, 3), prevalence=0.4),
        "uniform-nested": P.uniform(neg=(0, 4), pos=(1, 2), prevalence=0.3),
        "bumped": P.bumped(base, bump=(-2.5, 0.3, 0.2)),
    }


CONTINUOUS = continuous_models()


# ---------------------------------------------------------------------------------------------
# The paper's published numbers (Hughes-Oliver, section 2.3)


def test_case_d_uniform_ends_at_two_thirds_balanced_and_one_sixth_at_ten_to_one():
    balanced = P.uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
    skewed = P.uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=TEN_TO_ONE)
    assert balanced.pr_limits() == pytest.approx((1.0, 2 / 3), abs=1e-15)
    assert skewed.pr_limits() == pytest.approx((1.0, 1 / 6), abs=1e-15)
    assert float(balanced.pr(1.0)) == pytest.approx(2 / 3, abs=1e-15)
    # "the ROC curve starts at (0, 0.5)", ends at (1, 1), is concave; PR starts at (0, 1).
    assert balanced.roc([0.0, 1.0]).tolist() == [0.5, 1.0]
    assert balanced.roc_shape() == "concave"


def test_case_f_discrete_ends_at_0625_balanced_and_0143_at_ten_to_one():
    balanced = P.discrete(**CASE_F, prevalence=0.5)
    skewed = P.discrete(**CASE_F, prevalence=TEN_TO_ONE)
    assert balanced.pr_limits() == pytest.approx((1.0, 0.625), abs=1e-15)
    start, end = skewed.pr_limits()
    assert start == 1.0 and round(end, 3) == 0.143
    # "the ROC curve is neither concave or convex", and the PR curve is not monotone.
    assert balanced.roc_shape() == "neither"
    values = balanced.pr(np.linspace(0.01, 1.0, 500))
    assert np.any(np.diff(values) > 0) and np.any(np.diff(values) < 0)


def test_case_e_reversed_uniform():
    case_e = P.uniform(neg=(0.5, 1.5), pos=(0, 1), prevalence=0.5)
    # "starts at (0, 0) and ends at (1, 0.5)", convex; the PR curve starts at (0, 0), rises.
    assert case_e.roc([0.0, 1.0]).tolist() == [0.0, 0.5]
    assert case_e.roc_shape() == "convex"
    assert case_e.pr_limits() == (0.0, 0.5)
    assert np.all(np.diff(case_e.pr(np.linspace(0.01, 1, 100))) >= 0)


def test_cases_a_and_c_are_concave_and_run_from_one_to_the_prevalence():
    for model in (
        P.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5),
        P.binormal(neg=(0, 1), pos=(1, 1), prevalence=TEN_TO_ONE),
        P.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5),
    ):
        assert model.roc_shape() == "concave"
        assert model.pr_limits() == pytest.approx((1.0, model.prevalence), abs=1e-15)
        assert np.all(np.diff(model.pr(np.linspace(0.001, 1, 400))) <= 1e-15)


@pytest.mark.parametrize(
    ("neg", "pos"), [((0, 1), (1, 1)), ((0.3, 0.5), (1.2, 1.4)), ((1, 2), (0, 1))]
)
def test_bilognormal_has_the_binormal_curves(neg, pos):
    a = P.bilognormal(neg=neg, pos=pos, prevalence=0.2)
    b = P.binormal(neg=neg, pos=pos, prevalence=0.2)
    beta = np.linspace(0.01, 1.0, 100)
    alpha = np.linspace(0.0, 1.0, 101)
    np.testing.assert_allclose(a.pr(beta), b.pr(beta), rtol=1e-10)
    np.testing.assert_allclose(a.roc(alpha), b.roc(alpha), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(
        a.asymptotic_variance(beta[:-1]), b.asymptotic_variance(beta[:-1]), rtol=1e-8
    )
    assert a.pr_limits() == b.pr_limits() and a.roc_shape() == b.roc_shape()


# ---------------------------------------------------------------------------------------------
# Curves against independent oracles


def scipy_pr(neg, pos, pi, beta):
    """PR from scipy.stats frozen distributions: alpha = H.sf(G.isf(beta))."""
    alpha = neg.sf(pos.isf(beta))
    return pi * beta / (pi * beta + (1 - pi) * alpha)


def test_pr_and_roc_match_scipy_stats():
    beta = np.linspace(0.01, 1.0, 50)
    alpha = np.linspace(0.01, 0.99, 50)
    cases = [
        (
            P.binormal(neg=(0, 1), pos=(1.5, 1.3), prevalence=0.1),
            stats.norm(0, 1),
            stats.norm(1.5, 1.3),
        ),
        (P.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.3), stats.beta(2, 5), stats.beta(5, 2)),
        (
            P.bilognormal(neg=(0, 0.5), pos=(1, 0.8), prevalence=0.2),
            stats.lognorm(0.5, scale=1.0),
            stats.lognorm(0.8, scale=math.e),
        ),
        (
            P.uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.4),
            stats.uniform(0, 1),
            stats.uniform(0.5, 1),
        ),
    ]
    for model, neg, pos in cases:
        expected = scipy_pr(neg, pos, model.prevalence, beta)
        np.testing.assert_allclose(model.pr(beta), expected, rtol=1e-9)
        np.testing.assert_allclose(model.roc(alpha), pos.sf(neg.isf(alpha)), rtol=1e-9, atol=1e-14)


def top_fraction(model, beta):
    """pi beta + (1 - pi) alpha(beta): the top fraction of the population that holds recall beta at
    false-positive rate alpha(beta), of which the share pi beta is positive."""
    pi = model.prevalence
    return pi * beta + (1 - pi) * model.alpha_at(beta)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_pr_is_consistent_with_roc(name):
    model = CONTINUOUS[name]
    beta = np.linspace(0.02, 1.0, 50)
    expected = model.prevalence * beta / top_fraction(model, beta)
    np.testing.assert_allclose(model.pr(beta), expected, rtol=1e-14)
    # Walking the ROC curve: at false-positive rate a the recall is ROC(a), and the false-positive
    # rate at that recall is a again wherever both class cdfs are strictly increasing there.
    rates = np.linspace(0.05, 0.95, 19)
    recall = model.roc(rates)
    usable = (recall > 0.01) & (recall < 0.99)
    if usable.any():
        back = model.alpha_at(recall[usable])
        np.testing.assert_allclose(back, rates[usable], rtol=1e-7, atol=1e-9)


def test_roc_endpoints_follow_property_p1():
    # ROC(0) = 1 - G(upper end of H), ROC(1) = 1 - G(lower end of H).
    nested = CONTINUOUS["uniform-nested"]  # negatives U[0, 4], positives U[1, 2]
    assert nested.roc([0.0, 1.0]).tolist() == [0.0, 1.0]
    gap = CONTINUOUS["uniform-disjoint-gap"]
    assert gap.roc([0.0, 0.5, 1.0]).tolist() == [1.0, 1.0, 1.0]
    f = P.discrete(**CASE_F, prevalence=0.5)
    pos = np.array(CASE_F["pos"])
    assert f.roc([0.0, 1.0]).tolist() == [np.mean(pos > 0.7), np.mean(pos > 0.05)]


def test_pr_limits_at_recall_zero():
    # Same top score: PR(0+) = pi l / (pi l + 1 - pi), l = lim g/h at the top.
    uni = P.uniform(neg=(0, 1), pos=(0.5, 1), prevalence=0.3)  # l = 1 / 0.5
    assert uni.pr_limits()[0] == pytest.approx(2 * 0.3 / (2 * 0.3 + 0.7))
    np.testing.assert_allclose(uni.pr([1e-6, 0.3]), uni.pr_limits()[0], rtol=1e-9)
    beta_model = P.bibeta(neg=(2, 3), pos=(4, 3), prevalence=0.5)  # equal b: finite ratio
    assert beta_model.top_likelihood_ratio == pytest.approx(special.beta(2, 3) / special.beta(4, 3))
    assert float(beta_model.pr(1e-7)) == pytest.approx(beta_model.pr_limits()[0], rel=1e-3)
    narrow = P.binormal(neg=(0, 2), pos=(3, 1), prevalence=0.5)
    assert narrow.pr_limits()[0] == 0.0  # sd_pos < sd_neg: the negatives own the top
    same = P.binormal(neg=(0, 1), pos=(0, 1), prevalence=0.2)
    assert same.pr_limits() == pytest.approx((0.2, 0.2))
    assert P.bumped(narrow, bump=(0, 3, 0.1)).pr_limits()[0] == 1.0  # the wide bump dominates
    assert P.bumped(narrow, bump=(0, 1, 0.1)).pr_limits()[0] == 0.0


def test_chance_perfect_and_reverse_separation():
    beta = np.linspace(0.01, 1, 30)
    alpha = np.linspace(0, 1, 30)
    chance = P.chance(prevalence=0.3)
    np.testing.assert_allclose(chance.pr(beta), 0.3, rtol=1e-14)
    np.testing.assert_allclose(chance.roc(alpha), alpha, atol=1e-15)
    assert chance.roc_shape() == "linear"
    perfect = P.perfect_separation(prevalence=0.3)
    assert np.all(perfect.pr(beta) == 1.0) and np.all(perfect.roc(alpha) == 1.0)
    reverse = P.reverse_separation(prevalence=0.3)
    np.testing.assert_allclose(reverse.pr(beta), P.pr_lower_bound(beta, prevalence=0.3), rtol=1e-14)
    assert np.all(reverse.roc(alpha) == 0.0)
    # No model goes below the achievable lower bound.
    for model in CONTINUOUS.values():
        bound = P.pr_lower_bound(beta, prevalence=model.prevalence)
        assert np.all(model.pr(beta) >= bound * (1 - 1e-12))
    curves = P.reference_curves(0.3, points=11)
    assert curves.perfect_roc.tolist() == [[0, 0], [0, 1], [1, 1]]
    assert curves.reverse_roc.tolist() == [[0, 0], [1, 0], [1, 1]]
    assert curves.chance_pr.tolist() == [[0, 0.3], [1, 0.3]]
    recall, precision = curves.reverse_pr.T
    np.testing.assert_allclose(precision, P.pr_lower_bound(recall, prevalence=0.3))


# ---------------------------------------------------------------------------------------------
# ROC shape and PR monotonicity (Property P3)


@pytest.mark.parametrize(
    ("model", "shape"),
    [
        (P.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5), "concave"),
        (P.binormal(neg=(1, 1), pos=(0, 1), prevalence=0.5), "convex"),
        (P.binormal(neg=(0, 1), pos=(1, 2), prevalence=0.5), "neither"),
        (P.binormal(neg=(0, 1), pos=(0, 1), prevalence=0.5), "linear"),
        (P.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5), "concave"),
        (P.bibeta(neg=(5, 2), pos=(2, 5), prevalence=0.5), "convex"),
        (P.bibeta(neg=(2, 2), pos=(3, 3), prevalence=0.5), "neither"),
        (P.uniform(neg=(0, 4), pos=(1, 2), prevalence=0.5), "neither"),
        (P.uniform(neg=(0, 1), pos=(2, 3), prevalence=0.5), "concave"),
        (P.discrete(neg=[0, 1, 2], pos=[1, 2, 2, 3], prevalence=0.5), "concave"),
        (CONTINUOUS["bumped"], "neither"),
    ],
)
def test_roc_shape(model, shape):
    assert model.roc_shape() == shape
    if isinstance(model, P.ContinuousScoreModel):
        # The ROC curve itself: second differences of one sign (up to rounding) or both.
        alpha = np.linspace(0.001, 0.999, 999)
        second = np.diff(model.roc(alpha), 2)
        concave, convex = np.all(second <= 1e-12), np.all(second >= -1e-12)
        if shape == "neither":
            assert not (concave or convex)
        else:
            assert concave or shape == "convex"
            assert convex or shape == "concave"
        # Property P3: a concave ROC curve makes the PR curve non-increasing.
        beta = np.linspace(0.001, 1, 500)
        steps = np.diff(model.pr(beta))
        if shape == "concave":
            assert np.all(steps <= 1e-14)
        if model.family == "bumped":
            assert np.any(steps > 0) and np.any(steps < 0)


# ---------------------------------------------------------------------------------------------
# Sampling, quantiles, P(Y = 1 | score), precision of a top fraction


def test_sample_is_reproducible_per_seed_and_has_the_prevalence():
    model = CONTINUOUS["bumped"]
    s1, l1 = model.sample(10_000, seed=3)
    s2, l2 = model.sample(10_000, seed=3)
    s3, _ = model.sample(10_000, seed=4)
    assert np.array_equal(s1, s2) and np.array_equal(l1, l2)
    assert not np.array_equal(s1, s3)
    assert s1.dtype == np.float64 and l1.dtype == np.int8
    # Binomial(10000, 0.3): 5 standard deviations.
    assert abs(l1.mean() - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 10_000)
    scores, labels = P.discrete(**CASE_F, prevalence=0.5).sample(0, seed=1)
    assert scores.shape == labels.shape == (0,)
    discrete_scores, discrete_labels = P.discrete(**CASE_F, prevalence=0.5).sample(1000, seed=1)
    assert set(discrete_scores[discrete_labels == 1]) <= set(CASE_F["pos"])


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_empirical_pr_of_a_sample_converges_to_the_population_curve(name):
    model = CONTINUOUS[name]
    n = 200_000
    scores, labels = model.sample(n, seed=11)
    beta = np.linspace(0.1, 0.9, 9)
    error = np.abs(empirical_pr(scores, labels, beta) - model.pr(beta))
    # Five asymptotic standard deviations at each of the nine recall levels, plus the O(1/n+)
    # step of the estimator; a seed-independent bound.
    sd = np.sqrt(model.asymptotic_variance(beta) / n)
    assert np.all(error <= 5 * sd + 2 / labels.sum())


quantile_models = st.sampled_from(
    sorted(CONTINUOUS) + ["discrete-case-f", "discrete-weighted"]
)


def model_by_name(name):
    if name == "discrete-case-f":
        return P.discrete(**CASE_F, prevalence=0.3)
    if name == "discrete-weighted":
        return P.discrete(neg=[0.0, 0.0, 1.0, 2.5], pos=[1.0, 2.5, 2.5, 3.0], prevalence=0.6)
    return CONTINUOUS[name]


@given(
    name=quantile_models,
    u=st.one_of(
        st.floats(0.0, 1.0),
        st.floats(1e-300, 1e-6),
        st.floats(1e-16, 1e-6).map(lambda e: 1.0 - e),
    ),
)
@settings(max_examples=400, deadline=None)
def test_score_quantile_inverts_the_score_cdf(name, u):
    model = model_by_name(name)
    x = float(model.score_quantile(u))
    if u in (0.0, 1.0):
        assert x == model.score_support[int(u)]
        return
    assert math.isfinite(x)
    if isinstance(model, P.DiscreteScoreModel):
        values = model.values
        k = int(np.searchsorted(values, x))
        assert values[k] == x
        # The smallest value whose cdf reaches u (up to the rounding of the cumulative masses).
        assert float(model.score_cdf(x)) >= u * (1 - 1e-14)
        assert k == 0 or float(model.score_cdf(values[k - 1])) < u
    else:
        # Continuous: x is the float root of F(x) = u to within a few units in its last place
        # (where the density is huge one ulp of x moves F by more than one ulp of u), and F is
        # compared to u relatively, so the lower tail is held to full relative precision.
        tol = 1e-14 * u
        near = 4 * np.spacing(abs(x))
        assert float(model.score_cdf(x - near)) <= u + tol
        assert float(model.score_cdf(x + near)) >= u - tol


def test_score_quantile_is_vectorised_monotone_and_handles_the_ends():
    u = np.concatenate(([0.0], np.sort(np.random.default_rng(5).random(199_999)), [1.0]))
    for name in sorted(CONTINUOUS):
        model = CONTINUOUS[name]
        x = model.score_quantile(u.reshape(3, -1)).ravel()
        assert np.all(np.diff(x) >= 0)
        np.testing.assert_allclose(model.score_cdf(x[1:-1]), u[1:-1], rtol=1e-12, atol=1e-15)
    lower, upper = CONTINUOUS["binormal"].score_quantile([0.0, 1.0])
    assert (lower, upper) == (-np.inf, np.inf)
    # Gap between the classes: F is flat at 1 - pi on [1, 2] and F^-1(1 - pi) is its left end.
    gap = CONTINUOUS["uniform-disjoint-gap"]
    assert float(gap.score_quantile(0.6)) == pytest.approx(1.0)
    assert float(gap.score_quantile(0.6 + 1e-9)) == pytest.approx(2.0, abs=1e-6)


def test_numerical_inverse_takes_the_left_end_of_a_flat_cdf():
    # Positives: half U[0, 1], half a narrow bump at 2.5, so G is flat at 1/2 on [1, ~2.49].
    model = P.bumped(P.uniform(neg=(0, 3), pos=(0, 1), prevalence=0.5), bump=(2.5, 1e-3, 0.5))
    assert float(model.alpha_at(0.5)) == pytest.approx(2 / 3, rel=1e-9)  # threshold 1, not ~2
    assert float(model.score_quantile(0.5 * 0.5 + 0.5 * 1 / 3)) == pytest.approx(1.0, rel=1e-9)
    assert np.isfinite(model.asymptotic_variance(0.5))


@pytest.mark.parametrize("name", ["binormal", "bumped", "bibeta-small-shapes", "uniform-case-d"])
def test_positive_probability_matches_label_rates_in_score_bins(name):
    model = CONTINUOUS[name]
    scores, labels = model.sample(400_000, seed=21)
    eta = model.positive_probability(scores)
    edges = np.quantile(scores, np.linspace(0, 1, 26))
    bins = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, 24)
    count = np.bincount(bins, minlength=25)
    observed = np.bincount(bins, weights=labels, minlength=25) / count
    expected = np.bincount(bins, weights=eta, minlength=25) / count
    # Given the scores, the labels are independent Bernoulli(eta): 5 standard deviations per bin.
    var = np.bincount(bins, weights=eta * (1 - eta), minlength=25) / count**2
    assert np.all(np.abs(observed - expected) <= 5 * np.sqrt(var) + 1e-12)


def test_positive_probability_at_the_ends_of_a_closed_support_is_the_inner_limit():
    # Both Beta densities vanish at 0 and 1 (shapes > 1); the ratio's limits are 0 and 1.
    model = P.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5)
    assert model.positive_probability([0.0, 1.0]).tolist() == [0.0, 1.0]
    # Both infinite at 0 (shapes < 1): g/h -> B(0.5, 0.5) / B(0.5, 0.8).
    model = P.bibeta(neg=(0.5, 0.5), pos=(0.5, 0.8), prevalence=0.5)
    ratio = special.beta(0.5, 0.5) / special.beta(0.5, 0.8)
    assert float(model.positive_probability(0.0)) == pytest.approx(ratio / (1 + ratio), rel=1e-9)
    lognormal = P.bilognormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
    assert float(lognormal.positive_probability(float(lognormal.score_quantile(0.0)))) == 0.0


def test_positive_probability_of_discrete_models_and_of_the_bump():
    model = P.discrete(**CASE_F, prevalence=0.5)
    # At 0.2 and 0.5 both classes have mass 1/5 (positives) and 1/10 (negatives).
    eta = model.positive_probability([0.05, 0.2, 0.35, 0.5])
    np.testing.assert_allclose(eta, [0, 2 / 3, 1, 2 / 3])
    scores, labels = model.sample(200_000, seed=8)
    for value in model.values:
        at = scores == value
        rate = labels[at].mean()
        eta = float(model.positive_probability(value))
        assert abs(rate - eta) <= 5 * math.sqrt(eta * (1 - eta) / at.sum()) + 1e-12
    bump = CONTINUOUS["bumped"]
    eta = bump.positive_probability(np.linspace(-4, 4, 81))
    assert np.any(np.diff(eta) < 0) and np.any(np.diff(eta) > 0)  # not monotone


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_precision_at_fraction_is_the_pr_curve_read_by_rank(name):
    model = CONTINUOUS[name]
    beta = np.linspace(0.05, 1.0, 20)
    np.testing.assert_allclose(model.precision_at_fraction(top_fraction(model, beta)), model.pr(beta), rtol=1e-9)
    assert float(model.precision_at_fraction(1.0)) == pytest.approx(model.prevalence, rel=1e-12)


@pytest.mark.parametrize("name", ["binormal", "bumped", "discrete-case-f"])
def test_precision_at_fraction_matches_the_precision_function_of_a_sample(name):
    model = model_by_name(name)
    n = 200_000
    scores, labels = model.sample(n, seed=2)
    # Rank by decreasing score, ties in random order (what the hashed tie-break does).
    order = np.lexsort((np.random.default_rng(3).random(n), -scores))
    precision = np.cumsum(labels[order]) / np.arange(1, n + 1)
    fractions = np.array([0.01, 0.05, 0.1, 0.25, 0.5, 0.8, 1.0])
    r = (fractions * n).astype(int)
    expected = model.precision_at_fraction(fractions)
    # The top r items hold about Binomial(r, expected) positives; 5 standard deviations.
    sd = np.sqrt(expected * (1 - expected) / r)
    assert np.all(np.abs(precision[r - 1] - expected) <= 5 * sd + 1e-12)


def test_discrete_model_of_a_sample_has_that_samples_empirical_curve():
    # A discrete model listing each sample score once, at the sample's prevalence, is the
    # sample's own distribution: its population PR curve is the functional empirical one.
    rng = np.random.default_rng(4)
    neg = rng.integers(0, 12, 37) / 4
    pos = rng.integers(3, 15, 23) / 4
    model = P.discrete(neg=neg.tolist(), pos=pos.tolist(), prevalence=23 / 60)
    k = np.arange(1, 24)
    beta = np.concatenate((k / 23, (k - 0.5) / 23, rng.random(50) + 1e-9))
    scores = np.concatenate((neg, pos))
    labels = np.r_[np.zeros(37), np.ones(23)]
    np.testing.assert_allclose(
        model.pr(beta), empirical_pr(scores, labels, beta, warn_ties=False), rtol=1e-12
    )


# ---------------------------------------------------------------------------------------------
# Asymptotic variance (Clémençon & Vayatis Eq. 9 as corrected by Hughes-Oliver)


def monte_carlo_variance(model, n, replicates, beta, seed):
    estimates = np.empty((replicates, beta.size))
    for r in range(replicates):
        scores, labels = model.sample(n, seed=[seed, r])
        estimates[r] = EmpiricalPR.fit(scores, labels, warn_ties=False).precision(beta)
    return n * estimates.var(axis=0, ddof=1)


def test_asymptotic_variance_matches_monte_carlo():
    model = P.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3)
    beta = np.array([0.2, 0.5, 0.8])
    ratio = monte_carlo_variance(model, 4000, 6000, beta, seed=1) / model.asymptotic_variance(beta)
    # The variance estimate has relative sd sqrt(2/6000) = 1.8%; at n = 4000 the finite-sample
    # variance is within about 3% of the limit (measured at n = 1000..20000). 8% covers both
    # with a 3-sd margin. The uncorrected Eq. 9 is off by factors of 2 to 20 here.
    np.testing.assert_allclose(ratio, 1.0, atol=0.08)


@pytest.mark.slow
def test_asymptotic_variance_matches_monte_carlo_closely():
    beta = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    for model in (
        P.binormal(neg=(0, 1), pos=(1.5, 1.3), prevalence=0.1),
        P.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5),
    ):
        variance = monte_carlo_variance(model, 20_000, 10_000, beta, seed=2)
        ratio = variance / model.asymptotic_variance(beta)
        # Relative sd sqrt(2/10000) = 1.4%; finite-n error about 1% at n = 20000; 5% is 3 sd
        # beyond that. (Measured: ratios 0.98-1.03.)
        np.testing.assert_allclose(ratio, 1.0, atol=0.05)


def test_asymptotic_variance_terms():
    # Balanced uniform case D above recall 1/2: the threshold is above every negative, so
    # alpha = 0, h = 0 there, and the variance vanishes (Hughes-Oliver, section 3.2).
    case_d = P.uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=0.5)
    assert np.all(case_d.asymptotic_variance([0.1, 0.4, 0.49]) == 0.0)
    assert np.all(case_d.asymptotic_variance([0.6, 0.9]) > 0.0)
    # Hand evaluation of the formula for a binormal point.
    model = P.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3)
    beta, pi = 0.5, 0.3
    t = 1.0  # G^-1(1/2)
    alpha = stats.norm.sf(t)
    s = stats.norm.pdf(t) / stats.norm.pdf(t, 1)
    pr = pi * beta / (pi * beta + (1 - pi) * alpha)
    expected = pr**4 / beta**2 * (
        (1 - pi) * alpha**2 / pi**3
        + (1 - pi) ** 2 * s**2 * beta * (1 - beta) / pi**3
        + (1 - pi) * alpha * (1 - alpha) / pi**2
    )
    assert float(model.asymptotic_variance(beta)) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda: P.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.0),
            "'prevalence' parameter of binormal",
        ),
        (lambda: P.binormal(neg=(0, 1), pos=(1, 1), prevalence=1.0), "'prevalence'"),
        (lambda: P.binormal(neg=(0, 1), pos=(1, 1), prevalence=float("nan")), "'prevalence'"),
        (
            lambda: P.binormal(neg=(0, 0), pos=(1, 1), prevalence=0.5),
            "'neg' parameter of binormal .* sd > 0",
        ),
        (lambda: P.binormal(neg=(0, 1, 2), pos=(1, 1), prevalence=0.5), "'neg'"),
        (
            lambda: P.bilognormal(neg=(0, 1), pos=(np.inf, 1), prevalence=0.5),
            "'pos' parameter of bilognormal",
        ),
        (lambda: P.bibeta(neg=(0, 1), pos=(1, 1), prevalence=0.5), "'neg' parameter of bibeta"),
        (lambda: P.uniform(neg=(1, 1), pos=(0, 2), prevalence=0.5), "low < high"),
        (lambda: P.discrete(neg=[], pos=[1], prevalence=0.5), "'neg' parameter of discrete"),
        (lambda: P.discrete(neg=[0.1], pos=[np.nan], prevalence=0.5), "'pos'"),
        (
            lambda: P.bumped(P.discrete(neg=[0], pos=[1], prevalence=0.5), bump=(0, 1, 0.1)),
            "'base'",
        ),
        (lambda: P.bumped(CONTINUOUS["binormal"], bump=(0, 1, 1.0)), "weight"),
        (lambda: P.bumped(CONTINUOUS["binormal"], bump=(0, -1, 0.1)), "sd"),
        (lambda: P.bumped(CONTINUOUS["binormal"], bump=(0, 1)), "'bump'"),
        (lambda: P.reference_curves(0.5, points=1), "'points'"),
    ],
)
def test_bad_parameters_are_rejected(build, match):
    with pytest.raises(ParameterError, match=match):
        build()


def test_bad_arguments_of_the_methods_are_rejected():
    model = CONTINUOUS["binormal"]
    with pytest.raises(ParameterError, match="'beta' parameter of binormal.pr"):
        model.pr(0.0)
    with pytest.raises(ParameterError, match="'beta'"):
        model.pr([0.5, 1.1])
    with pytest.raises(ParameterError, match="'alpha' parameter of binormal.roc"):
        model.roc(-0.1)
    with pytest.raises(ParameterError, match="'u' parameter"):
        model.score_quantile(float("nan"))
    with pytest.raises(ParameterError, match="'t' parameter"):
        model.precision_at_fraction(0.0)
    with pytest.raises(ParameterError, match=r"in \(0, 1\)"):
        model.asymptotic_variance(1.0)
    with pytest.raises(ParameterError, match="'n' parameter"):
        model.sample(-1, seed=0)
    with pytest.raises(ParameterError, match="discrete"):
        P.discrete(**CASE_F, prevalence=0.5).asymptotic_variance(0.5)
    with pytest.raises(DataError, match="outside the support of both classes"):
        CONTINUOUS["uniform-case-d"].positive_probability([0.5, 2.0])
    with pytest.raises(DataError, match="not one of the values"):
        P.discrete(**CASE_F, prevalence=0.5).positive_probability([0.21])
    with pytest.raises(DataError, match="NaN"):
        model.positive_probability([np.nan])
    with pytest.raises(DataError, match="finite"):
        model.positive_probability([0.0, np.inf])


def test_models_pickle_for_dask_workers():
    for model in (CONTINUOUS["bumped"], P.discrete(**CASE_F, prevalence=0.5)):
        model.score_quantile(0.3)  # with its lazily built table
        clone = pickle.loads(pickle.dumps(model))
        assert repr(clone) == repr(model)
        beta = np.linspace(0.1, 1, 10)
        assert np.array_equal(clone.pr(beta), model.pr(beta))
        assert np.array_equal(clone.sample(100, seed=5)[0], model.sample(100, seed=5)[0])
    assert CONTINUOUS["binormal"].score_support == (-math.inf, math.inf)
    assert CONTINUOUS["uniform-case-d"].score_support == (0.0, 1.5)


def test_repr_names_the_constructor():
    assert repr(CONTINUOUS["uniform-case-d"]) == (
        "uniform(neg=(0.0, 1.0), pos=(0.5, 1.5), prevalence=0.09090909090909091)"
    )
    model = P.discrete(neg=[1], pos=[2], prevalence=0.5)
    assert repr(model) == "discrete(neg=[1.0], pos=[2.0], prevalence=0.5)"
