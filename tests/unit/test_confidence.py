import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from tests.support.paula_sequences import arbitrary_labels, plans
from prdist import paula_bounds, plan_paula, precision_function
from prdist.paula.confidence import (
    _chernoff_margins,
    _coefficients,
    _log_mgf,
    _max_log_mgf,
    _stretches,
    _xlogy,
    confidence_margins,
    monotone_rate_test,
)
from prdist.errors import DataError, ParameterError
from prdist.paula.grid import GeometricGrid

TOL = 1e-9


# --------------------------------------------------------------------------------------------
# Label models: independent Bernoulli labels with an explicit rate per rank
# --------------------------------------------------------------------------------------------
def falling(n):
    """Smoothly decreasing from 0.95 to about 0.09 (precision near 1 at the top, low at the end)."""
    return 0.05 + 0.9 * np.exp(-np.arange(1, n + 1) / (0.3 * n))


def flat(n):
    """Constant: the least favourable monotone rate (Algorithm 2 has no slack to spare)."""
    return np.full(n, 0.4)


def spiked(plan):
    """falling plus 0.4 inside every other window past rank n/10: a rate that rises where PAULA looks."""
    rate = falling(plan.n)
    for g in plan.grid[1::2][plan.grid[1::2] > plan.n // 10]:
        rate[g - plan.window : g] = np.minimum(1.0, rate[g - plan.window : g] + 0.4)
    return rate


def draw(rate, seed):
    return (np.random.default_rng(seed).random(rate.size) < rate).astype(np.float64)


def covers(b, v):
    r = np.arange(1, v.size + 1)
    p = precision_function(v)
    return bool(np.all(b.lower(r) <= p + TOL) and np.all(p <= b.upper(r) + TOL))


def long_tail_n(eps, near):
    """A resource size just below a grid point, so the unlabeled tail past g_L is as long as it gets."""
    grid = GeometricGrid(eps)
    return grid.ceil_power(grid.last_index_at_most(near) + 1) - 1


# --------------------------------------------------------------------------------------------
# The Chernoff machinery against direct and exact computations
# --------------------------------------------------------------------------------------------
def test_log_mgf_and_its_maximum_match_direct_evaluation():
    x = np.linspace(-12, 12, 97)[:, None]
    rho = np.linspace(0, 1, 41)[None, :]
    direct = np.log(1 - rho + rho * np.exp(x)) - x * rho
    assert np.allclose(_log_mgf(x, rho), direct, rtol=1e-10, atol=1e-13)
    fine = np.linspace(0, 1, 20_001)
    for lo, hi in [(0.0, 1.0), (0.1, 0.3), (0.6, 0.95), (0.2, 0.2), (0.0, 0.05)]:
        inside = fine[(fine >= lo) & (fine <= hi)]
        brute = _log_mgf(x, inside[None, :]).max(axis=1)
        best = _max_log_mgf(x[:, 0], lo, hi)
        assert np.all(best >= brute - 1e-12) and np.allclose(best, brute, rtol=1e-6, atol=1e-9)


def test_xlogy_is_scipys_bit_for_bit():
    from scipy.special import xlogy

    edges = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 5e-324, 1e308, np.inf, -np.inf, np.nan])
    x, y = np.meshgrid(edges, edges)
    rng = np.random.default_rng(0)
    # y near 1 and spread over the exponent range: where an AVX-512 np.log rounds differently
    y_random = np.concatenate((rng.uniform(0.5, 2.0, 100_000), np.exp(rng.uniform(-700, 700, 100_000))))
    for a, b in [(x, y), (rng.uniform(0, 100, y_random.size), y_random)]:
        assert np.array_equal(_xlogy(a, b).view(np.int64), xlogy(a, b).view(np.int64))


def exact_distribution(coefficients, rates):
    """Distribution of Σ a_i (v_i - ρ_i) by convolution (integer a_i, slow and obviously right)."""
    dist = {0: 1.0}
    for a, r in zip(coefficients, rates):
        new = {}
        for value, prob in dist.items():
            new[value + a] = new.get(value + a, 0.0) + prob * r
            new[value] = new.get(value, 0.0) + prob * (1 - r)
        dist = new
    shift = float(np.dot(coefficients, rates))
    return {value - shift: prob for value, prob in dist.items()}


@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
    c=st.floats(0.5, 6.0),
)
@settings(max_examples=60, deadline=None)
def test_chernoff_margin_bounds_the_exact_tail(sizes, data, c):
    """P(X > t) <= e^-c for heterogeneous rates inside each stretch, whose mean lies in [lo, hi]."""
    coef = np.array([data.draw(st.integers(-5, 5)) for _ in sizes], dtype=float)
    rates = [np.array(data.draw(st.lists(st.floats(0, 1), min_size=k, max_size=k))) for k in sizes]
    means = np.array([r.mean() for r in rates])
    lo = np.clip(means - np.array([data.draw(st.floats(0, 0.3)) for _ in sizes]), 0, 1)
    hi = np.clip(means + np.array([data.draw(st.floats(0, 0.3)) for _ in sizes]), 0, 1)
    t = _chernoff_margins(coef[:, None], np.array(sizes, dtype=float), lo, hi, c)[0]
    item_coef = np.repeat(coef, sizes).astype(int)
    dist = exact_distribution(item_coef, np.concatenate(rates))
    tail = sum(p for value, p in dist.items() if value > t + 1e-9)
    assert tail <= math.exp(-c) * (1 + 1e-9)
    # Not vacuous: never beyond the largest possible deviation.
    assert t <= np.sum(np.abs(item_coef)) + 1e-9


@given(plan=plans, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_coefficients_reproduce_algorithm_2_exactly(plan, seed):
    """y(g_K) - Y-_K = (bias) - X-_K and Y+_K - y(g_K) = (bias) - X+_K for ANY labels and rates,
    with X±_K = Σ_i a±_{K,i} (v_i - ρ_i) built from the stretch coefficients (step 1 of the proof)."""
    assume(plan.grid.size > 1)
    rng = np.random.default_rng(seed)
    rho = rng.random(plan.n)
    v = (rng.random(plan.n) < rho).astype(float)
    b = paula_bounds(plan, v[plan.ranks - 1])
    seg = _stretches(plan)
    coef_lower, coef_upper = _coefficients(plan, seg)
    cum_dev = np.concatenate(([0.0], np.cumsum(v - rho)))
    cum_rho, cum_v = np.concatenate(([0.0], np.cumsum(rho))), np.concatenate(([0.0], np.cumsum(v)))
    dev = cum_dev[seg.hi] - cum_dev[seg.lo]
    x_lower, x_upper = dev @ coef_lower, dev @ coef_upper
    grid = plan.grid
    width = np.minimum(plan.window, grid)
    mean = lambda lo, hi: (cum_rho[hi] - cum_rho[lo]) / (hi - lo)  # noqa: E731
    steps = np.diff(grid)
    gap_lower = np.cumsum(steps * (mean(grid[:-1], grid[1:]) - mean(grid[1:] - width[1:], grid[1:])))
    gap_upper = np.cumsum(steps * (mean(grid[:-1] - width[:-1], grid[:-1]) - mean(grid[:-1], grid[1:])))
    y = cum_v[grid[1:]]
    assert np.allclose(y - b.paper_yield_lower[1:], gap_lower - x_lower, atol=1e-6)
    assert np.allclose(b.paper_yield_upper[1:] - y, gap_upper - x_upper, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Coverage on noisy labels
# --------------------------------------------------------------------------------------------
@pytest.mark.slow  # a coverage study: 9-16 s per model at load 8-10
@pytest.mark.parametrize("model", [falling, flat])
def test_confidence_bounds_contain_the_truth_at_every_rank(model):
    # n just below a grid point: a long unlabeled tail past g_L (~5 % of the ranks) is checked too.
    n = long_tail_n(0.05, 100_000)
    plan = plan_paula(n, eps=0.05, window=100)
    rate = model(n)
    seeds = range(100)
    misses = deterministic_misses = 0
    for seed in seeds:
        v = draw(rate, seed)
        labels = v[plan.ranks - 1]
        misses += not covers(paula_bounds(plan, labels, confidence=0.9), v)
        deterministic_misses += not covers(paula_bounds(plan, labels), v)
    # Misses ~ Binomial(100, <= 0.1) under the model: P(more than 20) < 1e-3.
    assert misses <= 20
    # The scenario is noisy enough to break the paper's bounds almost always (the claim).
    assert deterministic_misses >= 75


def test_confidence_margins_are_not_wildly_conservative():
    """On the constant rate (no slack in Algorithm 2) the realised deviations come close to the
    margins: the largest deviation/margin ratio over the grid has median >= 0.4 over seeds (0.6
    measured), so the margins are not many times what the noise needs."""
    n = 100_000
    plan = plan_paula(n, eps=0.05, window=100)
    ratios = []
    for seed in range(30):
        v = draw(flat(n), seed)
        m = confidence_margins(plan, v[plan.ranks - 1], confidence=0.9)
        b = paula_bounds(plan, v[plan.ranks - 1])
        y = np.cumsum(v)[plan.grid - 1]
        ratios.append(max(np.max((b.paper_yield_lower - y)[1:] / m.lower[1:]), np.max((y - b.paper_yield_upper)[1:] / m.upper[1:])))
    assert np.median(ratios) >= 0.4


def test_adversarial_rate_breaks_both_and_the_test_says_so():
    n = 100_000
    plan = plan_paula(n, eps=0.05, window=100)
    rate = spiked(plan)
    for seed in range(5):
        v = draw(rate, seed)
        b = paula_bounds(plan, v[plan.ranks - 1], confidence=0.95)
        assert not covers(b, v)
        assert b.diagnostics.confidence.model_rejected
        assert not b.diagnostics.assumptions_plausible


# --------------------------------------------------------------------------------------------
# Relation to the deterministic bounds, unknown labels, API
# --------------------------------------------------------------------------------------------
@st.composite
def noisy_labels(draw_):
    plan, _, labels = draw_(arbitrary_labels())
    return plan, labels, draw_(st.sampled_from([0.5, 0.9, 0.99]))


@given(case=noisy_labels())
@settings(max_examples=60, deadline=None)
def test_confidence_bounds_contain_the_deterministic_ones(case):
    """What holds: containment at every rank unless the deterministic mode had a contradiction or
    has no tail cap (g_L + m > n)."""
    plan, labels, confidence = case
    det = paula_bounds(plan, labels)
    conf = paula_bounds(plan, labels, confidence=confidence)
    r = np.arange(1, plan.n + 1)
    assert np.all((0 <= conf.lower(r)) & (conf.lower(r) <= conf.upper(r) + TOL) & (conf.upper(r) <= 1))
    assume(det.diagnostics.contradiction_ranks.size == 0)
    if plan.grid.size and plan.grid[-1] + plan.m > plan.n:
        r = r[r <= plan.grid[-1]]
    assert np.all(conf.lower(r) <= det.lower(r) + TOL)
    assert np.all(conf.upper(r) >= det.upper(r) - TOL)


@pytest.mark.parametrize("fraction", [0.05, 0.5])
def test_unknown_labels_only_widen_the_confidence_bounds(fraction):
    n = long_tail_n(0.1, 50_000)
    plan = plan_paula(n, eps=0.1, window=50)
    r = np.arange(1, n + 1)
    for seed in range(5):
        v = draw(falling(n), seed)
        full = v[plan.ranks - 1]
        partial = np.where(np.random.default_rng(seed + 100).random(plan.size) < fraction, np.nan, full)
        b_full = paula_bounds(plan, full, confidence=0.9)
        b_part = paula_bounds(plan, partial, confidence=0.9)
        # (A contradiction would make the full-label bounds fall back to wider ones somewhere.)
        assert b_full.diagnostics.contradiction_ranks.size == 0
        assert np.all(b_part.lower(r) <= b_full.lower(r) + TOL)
        assert np.all(b_part.upper(r) >= b_full.upper(r) - TOL)
        assert b_part.diagnostics.unknown == int(np.isnan(partial).sum())


def test_deterministic_mode_is_the_default_and_reports_no_confidence():
    plan = plan_paula(50_000, eps=0.1, window=20)
    labels = draw(falling(50_000), 0)[plan.ranks - 1]
    a, b = paula_bounds(plan, labels), paula_bounds(plan, labels, confidence=None)
    r = np.arange(1, 50_001)
    assert np.array_equal(a.lower(r), b.lower(r)) and np.array_equal(a.upper(r), b.upper(r))
    assert a.confidence is None and a.diagnostics.confidence is None
    assert a.diagnostics.to_dict()["confidence"] is None
    assert a.tail_cap == (plan.m, float(a.local_upper[-1]))


def test_confidence_mode_reports_json_ready_diagnostics():
    plan = plan_paula(80_000, eps=0.05, window=100)
    b = paula_bounds(plan, draw(falling(80_000), 1)[plan.ranks - 1], confidence=0.95)
    d = b.diagnostics.to_dict()
    json.dumps(d)
    noise = d["confidence"]
    assert noise["confidence"] == 0.95 and noise["guarantee_applies"] is True
    assert 0 < noise["monotone_rate_test"]["p_value"] <= 1
    assert 0 < noise["widening_mean"] <= noise["widening_max"] < 0.2
    assert b.confidence == 0.95 and b.tail_cap[0] >= plan.m
    # The table and derived curves work unchanged.
    t = b.table()
    assert np.all(t["precision_lower"] <= t["precision_upper"])


def test_exhaustive_plan_stays_exact_in_confidence_mode():
    v = draw(flat(300), 2)
    plan = plan_paula(300, eps=0.03, window=100)
    b = paula_bounds(plan, v, confidence=0.9)
    r = np.arange(1, 301)
    assert np.allclose(b.lower(r), precision_function(v)) and np.allclose(b.upper(r), precision_function(v))
    assert b.diagnostics.confidence.test.p_value == 1.0


def test_guarantee_applies_only_when_windows_fit_their_intervals():
    labels = lambda plan: draw(falling(plan.n), 3)[plan.ranks - 1]  # noqa: E731
    ok = plan_paula(20_000, eps=0.1, window=20)
    assert confidence_margins(ok, labels(ok), confidence=0.9).guarantee_applies
    cramped = plan_paula(20_000, eps=0.1, window=20, r_tilde=50)
    assert not confidence_margins(cramped, labels(cramped), confidence=0.9).guarantee_applies


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), "0.9", True])
def test_bad_confidence_is_refused(bad):
    plan = plan_paula(1000, eps=0.5, window=10)
    with pytest.raises(ParameterError, match=r"The 'confidence' parameter of paula_bounds must be a float in \(0, 1\)\."):
        paula_bounds(plan, np.ones(plan.size), confidence=bad)
    with pytest.raises(ParameterError, match="of confidence_margins"):
        confidence_margins(plan, np.ones(plan.size), confidence=bad)


def test_bad_arguments_of_the_confidence_functions_are_refused():
    plan = plan_paula(1000, eps=0.5, window=10)
    with pytest.raises(ParameterError, match="PaulaPlan"):
        confidence_margins("plan", np.ones(3), confidence=0.9)
    with pytest.raises(DataError, match="one label per planned rank"):
        monotone_rate_test(plan, np.ones(plan.size + 1))
    with pytest.raises(ParameterError, match="'replicates' parameter of monotone_rate_test"):
        monotone_rate_test(plan, np.ones(plan.size), replicates=0)
    with pytest.raises(ParameterError, match="'seed' parameter of monotone_rate_test"):
        monotone_rate_test(plan, np.ones(plan.size), seed=-1)


# --------------------------------------------------------------------------------------------
# The monotone-rate test
# --------------------------------------------------------------------------------------------
def window_labels(plan, rate, seed):
    """Labels at the planned ranks only (the test needs nothing else)."""
    return (np.random.default_rng(seed).random(plan.size) < rate[plan.ranks - 1]).astype(float)


@pytest.mark.slow  # a study of the test's level over 100 seeds: 7 s per model at load 8-10
@pytest.mark.parametrize("model", [falling, flat])
def test_monotone_rate_test_rarely_rejects_a_monotone_rate(model):
    plan = plan_paula(100_000, eps=0.05, window=100)
    rate = model(plan.n)
    p = np.array([monotone_rate_test(plan, window_labels(plan, rate, seed), seed=seed).p_value for seed in range(100)])
    # The bootstrap under the fitted rates is slightly liberal on a constant rate (the least
    # favourable monotone rate): it rejects 6-8 % at level 0.05 there (500 seeds), and ~0 % on a
    # decreasing rate. Rejections ~ Binomial(100, <= 0.08): P(more than 16) < 0.01.
    assert np.sum(p < 0.05) <= 16


def test_monotone_rate_test_rejects_a_rising_rate():
    plan = plan_paula(100_000, eps=0.05, window=100)
    rate = spiked(plan)
    p = [monotone_rate_test(plan, window_labels(plan, rate, seed), seed=seed).p_value for seed in range(20)]
    assert max(p) <= 0.01


def test_monotone_rate_test_is_reproducible_and_ignores_unknown_labels():
    plan = plan_paula(50_000, eps=0.1, window=50)
    labels = window_labels(plan, falling(plan.n), 4)
    a, b = monotone_rate_test(plan, labels, seed=7), monotone_rate_test(plan, labels, seed=7)
    assert a.p_value == b.p_value and a.statistic == b.statistic
    # Unknown labels drop out: hiding a whole window removes it from the test.
    role_window = plan.ranks > plan.g_l
    hidden = labels.copy()
    hidden[role_window & (plan.ranks <= plan.grid[3])] = np.nan
    assert monotone_rate_test(plan, hidden).windows == a.windows - 3
    assert np.all(np.diff(a.fitted_rates) <= 1e-12)


# --------------------------------------------------------------------------------------------
# Larger study (marked slow)
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_coverage_study_at_a_million(confidence):
    n = long_tail_n(0.05, 1_000_000)
    plan = plan_paula(n, eps=0.05, window=100)
    seeds = range(1000, 1100)
    for model in (falling, flat):
        rate = model(n)
        misses = 0
        for seed in seeds:
            v = draw(rate, seed)
            misses += not covers(paula_bounds(plan, v[plan.ranks - 1], confidence=confidence), v)
        # Binomial(100, <= 1 - confidence): P(more than 32 | 0.2) < 2e-3, P(more than 13 | 0.05) < 2e-3.
        assert misses <= (32 if confidence == 0.8 else 13)


def test_chernoff_margin_with_a_denormal_stretch_mean():
    """A stretch mean bounded by the smallest float (found by hypothesis): a finite margin, not a crash."""
    t = _chernoff_margins(np.array([[1.0]]), np.array([1.0]), np.array([0.0]), np.array([5e-324]), 1.0)[0]
    assert 0.0 <= t <= 1.0  # one item of coefficient 1 never deviates by more than 1
