import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import precision_recall_curve

from prdist.curves import (
    TIED_POSITIVES_WARNING_FRACTION,
    EmpiricalPR,
    TiedScoresWarning,
    empirical_pr,
    exact_pr_points,
    floor_fraction_of,
)
from prdist.errors import DataError, ParameterError


def oracle_pr(scores, labels, beta: Fraction) -> Fraction:
    """Functional empirical PR straight from the definition, in exact rationals (slow).

    PR = p beta / (p beta + (1 - p) alpha), alpha = 1 - H(G^-1(1 - beta)), G^-1(u) the smallest
    x with G(x) >= u (the smallest positive score at u = 0), 1 - H(t) = share of negatives > t.
    """
    pos = [s for s, y in zip(scores, labels) if y == 1]
    neg = [s for s, y in zip(scores, labels) if y == 0]

    def G(x):
        return Fraction(sum(p <= x for p in pos), len(pos))

    u = 1 - beta
    candidates = sorted(set(pos))
    threshold = candidates[0] if u == 0 else min(x for x in candidates if G(x) >= u)
    alpha = Fraction(sum(n > threshold for n in neg), len(neg))
    p = Fraction(len(pos), len(pos) + len(neg))
    return p * beta / (p * beta + (1 - p) * alpha)


def oracle_points(scores, labels):
    """(threshold, recall, precision) at every distinct score, predicted positive iff >= t."""
    n_pos = sum(labels)
    rows = []
    for t in sorted(set(scores), reverse=True):
        tp = sum(1 for s, y in zip(scores, labels) if s >= t and y == 1)
        fp = sum(1 for s, y in zip(scores, labels) if s >= t and y == 0)
        rows.append((t, tp / n_pos, tp / (tp + fp)))
    return rows


labeled_samples = st.integers(min_value=2, max_value=40).flatmap(
    lambda n: st.tuples(
        # Few distinct values so that ties within and across classes are common.
        st.lists(st.integers(min_value=0, max_value=8).map(lambda v: v / 4), min_size=n, max_size=n)
        | st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n).filter(lambda y: 0 < sum(y) < len(y)),
    )
)


@given(
    sample=labeled_samples,
    recalls=st.lists(
        st.tuples(st.integers(1, 60), st.integers(1, 60)).map(
            lambda km: Fraction(min(km), max(km))
        ),
        min_size=1,
        max_size=8,
    ),
)
@settings(max_examples=300, deadline=None)
def test_empirical_pr_matches_the_definition_with_ties(sample, recalls):
    scores, labels = sample
    beta = np.array([float(b) for b in recalls])
    got = empirical_pr(scores, labels, beta, warn_ties=False)
    expected = [float(oracle_pr(scores, labels, b)) for b in recalls]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@given(sample=labeled_samples)
@settings(max_examples=150, deadline=None)
def test_exact_pr_points_match_the_definition(sample):
    scores, labels = sample
    points = exact_pr_points(scores, labels)
    expected = oracle_points(scores, labels)
    assert points.threshold.tolist() == [t for t, _, _ in expected]
    np.testing.assert_allclose(points.recall, [r for _, r, _ in expected], rtol=1e-12)
    np.testing.assert_allclose(points.precision, [p for _, _, p in expected], rtol=1e-12)


def test_exact_pr_points_agree_with_scikit_learn():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 30, 500) / 10.0  # many ties
    labels = rng.random(500) < 0.3
    points = exact_pr_points(scores, labels)
    precision, recall, thresholds = precision_recall_curve(labels, scores, drop_intermediate=False)
    # scikit-learn lists increasing thresholds and appends the (recall 0, precision 1) end.
    np.testing.assert_array_equal(points.threshold, thresholds[::-1])
    np.testing.assert_allclose(points.precision, precision[:-1][::-1], rtol=1e-12)
    np.testing.assert_allclose(points.recall, recall[:-1][::-1], rtol=1e-12)


def test_functional_curve_rises_on_each_recall_segment_and_drops_between():
    # Hughes-Oliver section 3.1: increasing on [(k-1)/n+, k/n+), right-continuous jump down at
    # k/n+ whenever a negative lies between consecutive positives.
    rng = np.random.default_rng(1)
    scores = rng.normal(size=200)
    labels = (rng.random(200) < 0.4).astype(int)
    curve = EmpiricalPR.fit(scores, labels)
    n_pos = curve.n_positive
    k = np.arange(1, n_pos)
    inside = np.stack([(k - 1 + f) / n_pos for f in (1e-6, 0.3, 0.7, 0.999999)])
    values = curve.precision(inside)
    # Rising on every segment whose threshold has a false positive above it, flat at 1 otherwise.
    has_fp = curve.alpha(inside[0]) > 0
    assert np.all(np.diff(values[:, has_fp], axis=0) > 0)
    assert np.all(values[:, ~has_fp] == 1.0)
    at_break = curve.precision(k / n_pos)
    left_limit = curve.precision(k / n_pos - 1e-12)
    assert np.all(at_break <= left_limit + 1e-9)
    fp = curve.false_positives
    # The jump is strict exactly where a negative lies between the two positives.
    strict = fp[n_pos - k - 1] > fp[n_pos - k]
    assert np.array_equal(at_break < left_limit - 1e-9, strict)


def test_precision_at_achievable_points_counts_negatives_strictly_above():
    # With threshold t = k-th largest positive, precision at beta -> k/n+ from the left is
    # k / (k + #negatives > t): tied negatives are not false positives.
    scores = [0.9, 0.8, 0.8, 0.7, 0.6, 0.6]
    labels = [1, 0, 1, 0, 1, 0]
    curve = EmpiricalPR.fit(scores, labels, warn_ties=False)
    assert curve.threshold(0.5).item() == 0.8
    assert curve.alpha(0.5).item() == pytest.approx(0.0)  # negatives at 0.8 count as below
    assert curve.precision(2 / 3 - 1e-12).item() == pytest.approx(1.0)
    assert curve.alpha(1.0).item() == pytest.approx(2 / 3)  # 0.8 and 0.7, not the 0.6 tie
    assert curve.precision(1.0).item() == pytest.approx(3 / (3 + 2))


def test_recall_levels_that_are_multiples_of_one_over_n_positive_snap():
    assert floor_fraction_of(0.7, 10) == 7  # 0.7 * 10 is 6.99999... in exact arithmetic
    assert floor_fraction_of(0.29, 100) == 29
    assert floor_fraction_of(np.array([0.1, 0.2, 0.3]) * 3, 10).tolist() == [3, 6, 9]
    assert floor_fraction_of(0.69, 10) == 6


def test_shapes_prevalence_and_read_only_fit():
    curve = EmpiricalPR.fit([3.0, 1.0, 2.0, 0.5], [1, 0, 1, 0])
    assert curve.prevalence == 0.5
    assert (curve.n_positive, curve.n_negative) == (2, 2)
    assert curve.positive_scores.tolist() == [2.0, 3.0]
    assert curve.precision(0.5).shape == ()
    assert curve.precision([[0.5, 1.0], [0.25, 0.75]]).shape == (2, 2)
    with pytest.raises(ValueError):
        curve.positive_scores[0] = 0.0
    apart = EmpiricalPR.from_class_scores([3.0, 2.0], [1.0, 0.5])
    assert apart.precision(1.0) == curve.precision(1.0)


def test_tied_positive_scores_warn_at_the_callers_line():
    scores = [0.2, 0.2, 0.5, 0.5, 0.5, 0.9, 0.1, 0.5]
    labels = [1, 1, 1, 1, 1, 1, 0, 0]
    with pytest.warns(TiedScoresWarning, match="not consistent") as record:
        empirical_pr(scores, labels, 0.5)
    assert record[0].filename == __file__
    with pytest.warns(TiedScoresWarning) as record:
        EmpiricalPR.fit(scores, labels)
    assert record[0].filename == __file__
    with pytest.warns(TiedScoresWarning):
        EmpiricalPR.from_class_scores([1.0, 1.0, 2.0], [0.0])


def test_no_tie_warning_for_continuous_scores_or_when_disabled():
    rng = np.random.default_rng(2)
    scores = rng.normal(size=5000)
    labels = rng.random(5000) < 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EmpiricalPR.fit(scores, labels)
        # A bootstrap resample is heavily tied on purpose and turns the check off.
        resample = rng.integers(0, 5000, 5000)
        curve = EmpiricalPR.fit(scores[resample], labels[resample], warn_ties=False)
    assert curve.tied_fraction > TIED_POSITIVES_WARNING_FRACTION


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        ([0.1, 0.2], [1, 0, 1], "equal lengths"),
        ([0.1, np.nan, 0.3], [1, 0, 1], "finite"),
        ([0.1, np.inf, 0.3], [1, 0, 1], "finite"),
        ([0.1, 0.2, 0.3], [1, 2, 0], "only 0, 1"),
        ([0.1, 0.2, 0.3], [1, np.nan, 0], "missing"),
        ([0.1, 0.2, 0.3], [0, 0, 0], "no positive"),
        ([0.1, 0.2, 0.3], [1, 1, 1], "no negative"),
        ([[0.1, 0.2]], [[1, 0]], "one-dimensional"),
        (["a", "b"], [1, 0], "numeric scores"),
    ],
)
def test_bad_data_is_rejected(scores, labels, match):
    with pytest.raises(DataError, match=match):
        empirical_pr(scores, labels, 0.5)


@pytest.mark.parametrize("beta", [0.0, -0.1, 1.5, np.nan, [0.5, 2.0], "x"])
def test_recall_levels_outside_the_unit_interval_are_rejected(beta):
    with pytest.raises(ParameterError, match="'beta' parameter of empirical_pr"):
        empirical_pr([0.1, 0.2], [0, 1], beta)


def test_exact_points_and_class_scores_validation():
    with pytest.raises(DataError, match="no positive"):
        exact_pr_points([0.1, 0.2], [0, 0])
    assert exact_pr_points([0.1, 0.2], [1, 1]).precision.tolist() == [1.0, 1.0]
    with pytest.raises(DataError, match="'negative_scores' argument .* is empty"):
        EmpiricalPR.from_class_scores([0.1], [])
    with pytest.raises(DataError, match="'positive_scores' argument .* finite"):
        EmpiricalPR.from_class_scores([np.nan], [0.1])
