"""Tests of prdist.sampling: the random and stratified sampling baselines of the PAULA paper.

Oracles are slow, literal implementations (loops over ranks, Algorithm 1 run slot by slot,
Clopper-Pearson by bisection on the binomial tail). Statistical tests use the fixed seeds
0..199 and a tolerance computed from the binomial (or normal) law of the quantity they count,
so they are deterministic and fail only when the implementation is wrong.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from prdist.errors import DataError, ParameterError
from prdist.paula.grid import GeometricGrid
from prdist.paula.plan import plan_paula
from prdist.sampling import (
    RandomPlan,
    StratifiedEstimate,
    estimate_random,
    estimate_stratified,
    plan_random,
    plan_stratified,
    point_estimate_budget,
    random_sampling_budget,
    random_sampling_reliable_from,
    stratified_budget,
)

SEEDS = range(200)
# A statistic that is within its sampling law fails a 4.5-sigma check with probability < 1e-5.
Z_TOLERANCE = 4.5


def synthetic_labels(n: int, *, seed: int = 20170811) -> np.ndarray:
    """Fixed 0/1 labels whose positive rate falls linearly from 0.9 at rank 1 to 0.4 at rank n."""
    rate = 0.9 - 0.5 * np.arange(n) / n
    return (np.random.default_rng(seed).random(n) < rate).astype(np.float64)


def precision_at(labels: np.ndarray) -> np.ndarray:
    """Exact p(r) for r = 1..n (entry r - 1)."""
    return np.cumsum(labels) / np.arange(1, labels.size + 1)


def max_misses(trials: int, miss_rate: float, *, alpha: float = 1e-4) -> int:
    """Largest miss count a procedure with the given miss rate exceeds with probability < alpha."""
    return int(stats.binom.isf(alpha, trials, miss_rate))


# ---------------------------------------------------------------------------------------------
# Budgets
# ---------------------------------------------------------------------------------------------


def test_random_sampling_budget_reproduces_the_papers_47030():
    # Section 4.4.3: N = 217,077, alpha = 0.08, p = 0.7, delta = 0.05 -> 47,030 annotations.
    assert random_sampling_budget(217_077, alpha=0.08, p=0.7, delta=0.05) == 47030


budget_params = dict(
    alpha=st.floats(0.005, 1.0),
    p=st.floats(0.05, 1.0),
    delta=st.floats(1e-6, 0.5),
)


@given(n=st.integers(1, 10**9), **budget_params)
def test_random_sampling_budget_is_eq5_truncated_and_capped(n, alpha, p, delta):
    eq5 = math.sqrt(2 * n / (alpha**2 * p**2) * math.log(2 * n / delta))
    assert random_sampling_budget(n, alpha=alpha, p=p, delta=delta) == min(n, math.floor(eq5))


@given(n=st.integers(10**4, 10**9), **budget_params)
def test_eq5_is_the_best_split_between_prefix_and_sample(n, alpha, p, delta):
    # Eq. 5 is min over s of s + n_{alpha,s}, attained where s = n_{alpha,s}.
    total = random_sampling_budget(n, alpha=alpha, p=p, delta=delta)
    if total >= n // 2:  # capped or nearly: the split argument needs room inside 1..n
        return
    half = max(1, round(total / 2))

    def cost(s):
        return s + random_sampling_reliable_from(n, size=s, alpha=alpha, p=p, delta=delta)

    assert abs(cost(half) - total) <= 3
    for s in (max(1, half // 2), half * 2):
        assert cost(s) >= total - 2


@given(**budget_params)
def test_point_estimate_budget_is_the_smallest_hoeffding_sample(alpha, p, delta):
    # Eq. 2: the smallest z with 2 exp(-2 z alpha^2 p^2) <= delta.
    z = point_estimate_budget(alpha=alpha, p=p, delta=delta)
    need = math.log(2 / delta)
    assert 2 * z * alpha**2 * p**2 >= need * (1 - 1e-12)
    assert z == 1 or 2 * (z - 1) * alpha**2 * p**2 < need * (1 + 1e-12)


@given(n=st.integers(1, 10**9), size_fraction=st.floats(1e-6, 1.0), **budget_params)
def test_reliable_from_is_the_first_rank_with_enough_expected_samples(n, size_fraction, alpha, p, delta):
    # Eq. 4: z = r s / n expected samples must reach Eq. 2 at confidence delta / n.
    size = max(1, min(n, round(n * size_fraction)))
    r = random_sampling_reliable_from(n, size=size, alpha=alpha, p=p, delta=delta)
    need = math.log(2 * n / delta) / (2 * alpha**2 * p**2)
    assert r * size / n >= need * (1 - 1e-12)
    assert (r - 1) * size / n < need * (1 + 1e-12)


@pytest.mark.parametrize("n, L, published", [(10_000, 311, 46.6), (100_000, 389, 50.6)])
def test_stratified_factor_matches_section_4_4_4(n, L, published):
    # delta = 0.05, eps = 0.03, p_min = 0.5, r_tilde = 1000 -> l = 234 and a per-grid-point count
    # of "roughly 5.8 log 40(L - 234)", i.e. 46.6 (N = 10,000) and 50.6 (N = 100,000).
    budget = stratified_budget(n, eps=0.03, r_tilde=1000, delta=0.05, p_min=0.5)
    plan = plan_paula(n, eps=0.03, r_tilde=1000)
    assert (plan.l, plan.L) == (234, L)
    log_term = math.log(40 * (L - 234))
    assert round(budget.draws_per_grid_point / log_term, 1) == 5.8
    assert round(5.8 * log_term, 1) == published


@pytest.mark.parametrize(
    "n, kwargs",
    [
        (217_077, {}),
        (10**9, dict(eps=0.05, window=50)),
        (50_000, dict(eps=0.1, r_tilde=300, beta=1.25, p_min=0.3, delta=0.01)),
        (5_000, {}),  # n <= g_l: the prefix is everything
    ],
)
def test_stratified_budget_is_theorem_2(n, kwargs):
    budget = stratified_budget(n, **kwargs)
    plan = plan_paula(n, **{k: v for k, v in kwargs.items() if k in ("eps", "window", "r_tilde")})
    eps = kwargs.get("eps", 0.03)
    delta, p_min = kwargs.get("delta", 0.05), kwargs.get("p_min", 0.5)
    beta = kwargs.get("beta", plan.gamma)
    assert budget.beta == beta and budget.factor == pytest.approx(beta * (1 + eps))
    if plan.exhaustive:
        assert (budget.annotations, budget.samples_per_point, budget.expected_distinct) == (n, 0, n)
        return
    strata = plan.L - plan.l
    log_term = math.log(strata / (delta / 2))
    draws = eps * strata / (2 * (beta - 1) ** 2 * (1 + eps) * p_min**2) * log_term
    assert budget.annotations == min(n, plan.g_l + math.ceil(draws))
    assert budget.samples_per_point == math.ceil(log_term / (2 * (beta - 1) ** 2 * p_min**2))
    assert budget.prefix == plan.g_l
    assert plan.g_l < budget.expected_distinct <= plan.g_l + budget.samples_per_point * strata


# ---------------------------------------------------------------------------------------------
# Random sampling: plans
# ---------------------------------------------------------------------------------------------


def test_random_plan_is_sorted_distinct_in_range_and_sized():
    for n, size in [(1, 1), (10, 10), (1000, 37), (10**9, 5000)]:
        plan = plan_random(n, size=size, seed=3)
        assert plan.size == plan.ranks.size == size
        assert plan.ranks.dtype == np.int64
        assert plan.ranks[0] >= 1 and plan.ranks[-1] <= n
        assert np.all(np.diff(plan.ranks) > 0)
    assert np.array_equal(plan_random(10, size=10, seed=0).ranks, np.arange(1, 11))


def test_random_plan_is_determined_by_its_seed():
    a, b, c = (plan_random(10**6, size=100, seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.ranks, b.ranks)
    assert not np.array_equal(a.ranks, c.ranks)
    seq = np.random.SeedSequence(11)
    first, again = (plan_random(500, size=9, seed=seq) for _ in range(2))
    assert np.array_equal(first.ranks, again.ranks)
    with pytest.raises(ValueError):
        a.ranks[0] = 5  # read-only


def test_random_plan_is_uniform_over_ranks():
    # 200 plans of 10 ranks out of 100: every rank is drawn Bin(200, 0.1) times; a chi-square
    # test of the 100 counts (99 degrees of freedom, slightly conservative for this design).
    counts = np.zeros(100)
    for seed in SEEDS:
        counts[plan_random(100, size=10, seed=seed).ranks - 1] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


# ---------------------------------------------------------------------------------------------
# Random sampling: estimates
# ---------------------------------------------------------------------------------------------


def _bisect(fn, target, *, increasing):
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (fn(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def reference_random_estimate(plan, labels, ranks, delta, method):
    """Loop over ranks; Clopper-Pearson by bisection on the binomial tail."""
    out = []
    for r in ranks:
        chosen = [lab for rank, lab in zip(plan.ranks.tolist(), labels.tolist()) if rank <= r]
        z = len(chosen)
        pos = sum(1 for lab in chosen if lab == 1)
        unk = sum(1 for lab in chosen if math.isnan(lab))
        if z == 0:
            out.append((math.nan, 0.0, 1.0, 0))
            continue
        est = pos / (z - unk) if z > unk else math.nan
        if method == "hoeffding":
            h = math.sqrt(math.log(2 / delta) / (2 * z))
            lo, hi = max(0.0, pos / z - h), min(1.0, (pos + unk) / z + h)
        else:
            k_hi = pos + unk
            tail = delta / 2
            lo = 0.0 if pos == 0 else _bisect(lambda q: stats.binom.sf(pos - 1, z, q), tail, increasing=True)
            hi = 1.0 if k_hi == z else _bisect(lambda q: stats.binom.cdf(k_hi, z, q), tail, increasing=False)
        out.append((est, lo, hi, z))
    return [np.array(col) for col in zip(*out)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_estimate_equals_the_reference(data):
    n = data.draw(st.integers(1, 200))
    size = data.draw(st.integers(1, min(n, 40)))
    plan = plan_random(n, size=size, seed=data.draw(st.integers(0, 2**32)))
    label_values = st.sampled_from([0.0, 1.0, math.nan])
    labels = np.array(data.draw(st.lists(label_values, min_size=size, max_size=size)))
    ranks = np.array(data.draw(st.lists(st.integers(1, n), min_size=1, max_size=8)))
    delta = data.draw(st.sampled_from([0.01, 0.05, 0.3]))
    method = data.draw(st.sampled_from(["clopper-pearson", "hoeffding"]))
    est = estimate_random(plan, labels, ranks=ranks, delta=delta, method=method)
    ref_est, ref_lo, ref_hi, ref_z = reference_random_estimate(plan, labels, ranks, delta, method)
    assert np.array_equal(est.ranks, ranks)
    assert np.array_equal(est.n_sampled, ref_z)
    np.testing.assert_array_equal(est.estimate, ref_est)
    np.testing.assert_allclose(est.lower, ref_lo, atol=1e-9)
    np.testing.assert_allclose(est.upper, ref_hi, atol=1e-9)
    assert np.all(est.n_positive + est.n_unknown <= est.n_sampled)


def test_random_estimate_with_no_sample_at_or_above_the_rank_knows_nothing():
    plan = RandomPlan(n=10, size=2, seed=None, ranks=np.array([6, 9]))
    est = estimate_random(plan, [1, 1], ranks=[5, 6, 10], method="hoeffding")
    assert est.n_sampled.tolist() == [0, 1, 2]
    assert math.isnan(est.estimate[0]) and est.estimate[1:].tolist() == [1.0, 1.0]
    assert (est.lower[0], est.upper[0]) == (0.0, 1.0)


def test_random_estimate_defaults_to_the_sampled_ranks():
    plan = plan_random(1000, size=20, seed=5)
    labels = synthetic_labels(1000)[plan.ranks - 1]
    est = estimate_random(plan, labels)
    assert np.array_equal(est.ranks, plan.ranks)
    assert np.array_equal(est.n_sampled, np.arange(1, 21))
    assert np.allclose(est.estimate, np.cumsum(labels) / np.arange(1, 21))


@pytest.mark.parametrize("method", ["clopper-pearson", "hoeffding"])
def test_random_intervals_cover_p_at_their_nominal_rate(method):
    n, size, delta = 20_000, 400, 0.1
    labels = synthetic_labels(n)
    truth_at = precision_at(labels)
    ranks = np.array([100, 500, 2_000, 8_000, 20_000])  # about 2, 10, 40, 160, 400 samples
    truth = truth_at[ranks - 1]
    misses = np.zeros(ranks.size, dtype=int)
    at_n = []
    for seed in SEEDS:
        plan = plan_random(n, size=size, seed=seed)
        est = estimate_random(plan, labels[plan.ranks - 1], ranks=ranks, delta=delta, method=method)
        misses += (truth < est.lower) | (truth > est.upper)
        at_n.append(est.estimate[-1])
    # Each rank's interval misses with probability <= delta independently over seeds.
    assert misses.max() <= max_misses(len(SEEDS), delta), misses
    # At r = n all 400 samples count: the estimate is a without-replacement sample mean, unbiased.
    se = math.sqrt(truth[-1] * (1 - truth[-1]) / size / len(SEEDS))
    assert abs(np.mean(at_n) - truth[-1]) <= Z_TOLERANCE * se


@pytest.mark.parametrize("delta", [0.01, 0.1])
def test_clopper_pearson_covers_exactly_under_sampling_without_replacement(delta):
    # Given z sampled items at or above rank r, their positive count is hypergeometric
    # (population r, r p(r) positives, z draws). Sum the law over the counts whose interval
    # contains p(r): the exact coverage, which must reach 1 - delta for every population.
    for population in (7, 40, 150):
        for z in sorted({1, 3, 10, population // 2, population} & set(range(1, population + 1))):
            intervals = []
            for k in range(z + 1):
                plan = RandomPlan(n=z, size=z, seed=None, ranks=np.arange(1, z + 1))
                est = estimate_random(plan, [1.0] * k + [0.0] * (z - k), ranks=[z], delta=delta)
                intervals.append((est.lower[0], est.upper[0]))
            lo, hi = np.array(intervals).T
            for positives in range(population + 1):
                p = positives / population
                negatives = population - positives
                ways = [math.comb(positives, k) * math.comb(negatives, z - k) for k in range(z + 1)]
                law = np.array(ways) / math.comb(population, z)
                assert law[(lo <= p) & (p <= hi)].sum() >= 1 - delta - 1e-12, (population, z, positives)


def test_unknown_labels_widen_the_interval_conservatively():
    plan = plan_random(100, size=30, seed=2)
    labels = synthetic_labels(100)[plan.ranks - 1]
    partial = labels.copy()
    partial[::3] = np.nan
    for method in ("clopper-pearson", "hoeffding"):
        full = estimate_random(plan, labels, method=method)
        part = estimate_random(plan, partial, method=method)
        assert np.all(part.lower <= full.lower + 1e-12) and np.all(part.upper >= full.upper - 1e-12)
        as_zero = estimate_random(plan, np.nan_to_num(partial, nan=0.0), method=method)
        as_one = estimate_random(plan, np.nan_to_num(partial, nan=1.0), method=method)
        assert np.array_equal(part.lower, as_zero.lower) and np.array_equal(part.upper, as_one.upper)


# ---------------------------------------------------------------------------------------------
# Stratified sampling: plans
# ---------------------------------------------------------------------------------------------


def reference_algorithm_1(n, *, eps, r_tilde, delta, p_min, beta, seed, labels):
    """Algorithm 1 line by line, X_k as s slots, drawing from the generator in plan_stratified's
    order. Returns the draws as sorted (rank, first k, last k) tuples, s, and S_k for k = l..L."""
    base = plan_paula(n, eps=eps, r_tilde=r_tilde)
    l, L = base.l, base.L
    g = {j: GeometricGrid(eps).ceil_power(j) for j in range(l, L + 1)}
    s = math.ceil(math.log((L - l) / (delta / 2)) / (2 * (beta - 1) ** 2 * p_min**2))
    rng = np.random.default_rng(seed)
    slots = [(int(rank), l) for rank in rng.integers(1, g[l] + 1, size=s)]
    finished = []
    S = {l: sum(labels[rank - 1] for rank, _ in slots)}
    for k in range(l, L):
        u = rng.random(s)
        dropped = [i for i in range(s) if not u[i] < g[k] / g[k + 1]]  # kept w.p. g_k / g_{k+1}
        fresh = rng.integers(g[k] + 1, g[k + 1] + 1, size=len(dropped))
        for i, rank in zip(dropped, fresh):
            finished.append((slots[i][0], slots[i][1], k))
            slots[i] = (int(rank), k + 1)
        S[k + 1] = sum(labels[rank - 1] for rank, _ in slots)
    finished += [(rank, first, L) for rank, first in slots]
    return sorted(finished), s, S


stratified_cases = [
    dict(n=20_000, eps=0.1, r_tilde=200, delta=0.05, p_min=0.5, beta=1.3),
    dict(n=3_000, eps=0.5, r_tilde=20, delta=0.2, p_min=0.8, beta=1.5),
    dict(n=100_000, eps=0.03, r_tilde=1000, delta=0.1, p_min=0.6, beta=1.2),
]


@pytest.mark.parametrize("case", stratified_cases)
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_stratified_plan_and_estimate_equal_algorithm_1(case, seed):
    labels = synthetic_labels(case["n"])
    plan = plan_stratified(seed=seed, **case)
    params = {k: case[k] for k in ("eps", "r_tilde", "delta", "p_min", "beta")}
    draws, s, S = reference_algorithm_1(case["n"], **params, seed=seed, labels=labels)
    assert plan.samples_per_point == s
    got = sorted(zip(plan.draw_ranks.tolist(), plan.draw_first.tolist(), plan.draw_last.tolist()))
    assert got == draws
    est = estimate_stratified(plan, labels[plan.ranks - 1])
    expected_q = [labels[: plan.g_l].mean()] + [S[k] / s for k in range(plan.l + 1, plan.L + 1)]
    np.testing.assert_allclose(est.q, expected_q, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 30_000),
    eps=st.sampled_from([0.05, 0.1, 0.25, 0.5, 1.0]),
    r_tilde=st.integers(1, 300),
    beta=st.floats(1.2, 3.0),
    p_min=st.floats(0.3, 1.0),
    delta=st.floats(0.01, 0.5),
    seed=st.integers(0, 2**32),
)
def test_stratified_plan_invariants(n, eps, r_tilde, beta, p_min, delta, seed):
    plan = plan_stratified(n, eps=eps, r_tilde=r_tilde, beta=beta, p_min=p_min, delta=delta, seed=seed)
    prefix_end = min(plan.g_l, n)
    assert np.array_equal(plan.ranks[:prefix_end], np.arange(1, prefix_end + 1))
    assert np.all(np.diff(plan.ranks) > 0) and plan.ranks[-1] <= n
    assert np.array_equal(plan.ranks, np.union1d(np.arange(1, prefix_end + 1), plan.draw_ranks))
    if plan.samples_per_point == 0:
        assert plan.exhaustive or plan.L == plan.l
        assert plan.draw_ranks.size == 0
        return
    s, grid = plan.samples_per_point, plan.grid
    assert np.all(plan.draw_first <= plan.draw_last)
    assert np.all((plan.l <= plan.draw_first) & (plan.draw_last <= plan.L))
    # A draw made for X_k lies in the newest stratum (g_{k-1}, g_k], or in 1..g_l for X_l.
    upper = grid[plan.draw_first - plan.l]
    lower = np.where(plan.draw_first == plan.l, 0, grid[np.maximum(plan.draw_first - plan.l - 1, 0)])
    assert np.all((lower < plan.draw_ranks) & (plan.draw_ranks <= upper))
    for k in range(plan.l, plan.L + 1):
        assert plan.members(k).size == s
    # Every dropped draw is replaced by exactly one new draw.
    dropped = np.bincount(plan.draw_last - plan.l, minlength=grid.size)[:-1]
    added = np.bincount(plan.draw_first - plan.l, minlength=grid.size)[1:]
    assert np.array_equal(dropped, added)
    role, grid_index = plan.roles()
    in_stratum = role == "stratum"
    assert np.array_equal(in_stratum, plan.ranks > plan.g_l)
    k, stratum_ranks = grid_index[in_stratum], plan.ranks[in_stratum]
    assert np.all((grid[k - plan.l - 1] < stratum_ranks) & (stratum_ranks <= grid[k - plan.l]))


def test_stratified_plan_is_determined_by_its_seed():
    a, b, c = (plan_stratified(200_000, seed=s) for s in (4, 4, 5))
    assert np.array_equal(a.draw_ranks, b.draw_ranks) and np.array_equal(a.draw_last, b.draw_last)
    assert np.array_equal(a.ranks, b.ranks)
    assert not np.array_equal(a.ranks, c.ranks)


def test_stratified_plan_reuses_paulas_grid_and_default_beta():
    plan = plan_stratified(217_077, seed=0)
    paula = plan_paula(217_077)
    assert (plan.l, plan.L, plan.g_l, plan.m) == (paula.l, paula.L, paula.g_l, paula.m)
    assert np.array_equal(plan.grid, paula.grid)
    assert plan.beta == paula.gamma and plan.factor == pytest.approx(paula.factor)
    assert plan.samples_per_point == stratified_budget(217_077).samples_per_point


def test_stratified_plan_draw_rates_and_expected_size_match_the_seeds():
    n, params = 50_000, dict(eps=0.05, r_tilde=500, beta=1.2, p_min=0.5, delta=0.1)
    plans = [plan_stratified(n, seed=seed, **params) for seed in SEEDS]
    s, grid = plans[0].samples_per_point, plans[0].grid.astype(float)
    replace = 1 - grid[:-1] / grid[1:]
    # New draws over the run: a sum of independent Bin(s, 1 - g_k/g_{k+1}).
    new = np.array([int((p.draw_first > p.l).sum()) for p in plans])
    mean, var = s * replace.sum(), s * (replace * (1 - replace)).sum()
    assert abs(new.mean() - mean) <= Z_TOLERANCE * math.sqrt(var / len(plans))
    sizes = np.array([p.size for p in plans])
    expected = plans[0].expected_size
    assert expected == stratified_budget(n, **params).expected_distinct
    assert abs(sizes.mean() - expected) <= Z_TOLERANCE * sizes.std(ddof=1) / math.sqrt(len(plans))


def test_stratified_plan_without_strata_labels_the_prefix_only():
    exhaustive = plan_stratified(1_000, seed=0)  # g_l = 3492 > n
    assert exhaustive.exhaustive and exhaustive.samples_per_point == 0
    assert np.array_equal(exhaustive.ranks, np.arange(1, 1001)) and exhaustive.grid.size == 0
    labels = synthetic_labels(1_000)
    est = estimate_stratified(exhaustive, labels)
    r = np.arange(1, 1001)
    for fn in (est.step, est.lower, est.upper, est.step_lower, est.step_upper):
        np.testing.assert_allclose(fn(r), precision_at(labels))

    g_l = plan_paula(3_500).g_l  # 3492 < 3500 < g_{l+1}: one grid point, nothing to sample
    short = plan_stratified(3_500, seed=0)
    assert short.grid.tolist() == [g_l] and short.samples_per_point == 0 and short.size == g_l
    labels = synthetic_labels(3_500)
    est = estimate_stratified(short, labels[:g_l])
    y = labels[:g_l].sum()
    r = np.arange(g_l + 1, 3_501)
    np.testing.assert_allclose(est.step(r), y / g_l)
    np.testing.assert_allclose(est.lower(r), y / r)
    np.testing.assert_allclose(est.upper(r), (y + r - g_l) / r)


# ---------------------------------------------------------------------------------------------
# Stratified sampling: estimates
# ---------------------------------------------------------------------------------------------


def reference_stratified_estimate(plan, labels, delta):
    """S_k by a loop over the draws of each X_k; the prefix point by a loop over 1..g_l."""
    label_of = dict(zip(plan.ranks.tolist(), labels.tolist()))
    s, strata = plan.samples_per_point, plan.L - plan.l
    h = math.sqrt(math.log(2 * strata / delta) / (2 * s))
    q, lo, hi, unknown = [], [], [], []
    for k in range(plan.l, plan.L + 1):
        if k == plan.l:
            members = [label_of[r] for r in range(1, plan.g_l + 1)]
        else:
            members = [
                label_of[rank]
                for rank, first, last in zip(plan.draw_ranks, plan.draw_first, plan.draw_last)
                if first <= k <= last
            ]
        pos = sum(1 for v in members if v == 1)
        unk = sum(1 for v in members if math.isnan(v))
        size = len(members)
        q.append(pos / (size - unk) if size > unk else math.nan)
        slack = 0.0 if k == plan.l else h
        lo.append(max(0.0, pos / size - slack))
        hi.append(min(1.0, (pos + unk) / size + slack))
        unknown.append(unk)
    return np.array(q), np.array(lo), np.array(hi), np.array(unknown)


@pytest.mark.parametrize("case", stratified_cases)
def test_stratified_estimate_with_unknown_labels_equals_the_reference(case):
    plan = plan_stratified(seed=9, **case)
    labels = synthetic_labels(case["n"])[plan.ranks - 1]
    labels[np.random.default_rng(1).random(labels.size) < 0.1] = np.nan
    for delta in (None, 0.3):
        est = estimate_stratified(plan, labels, delta=delta)
        used_delta = plan.delta if delta is None else delta
        q, lo, hi, unknown = reference_stratified_estimate(plan, labels, used_delta)
        np.testing.assert_allclose(est.q, q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.grid_lower, lo, rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.grid_upper, hi, rtol=0, atol=1e-12)
        assert np.array_equal(est.n_unknown, unknown)


@pytest.mark.parametrize("case", stratified_cases[:2])
def test_step_functions_follow_definition_5(case):
    plan = plan_stratified(seed=2, **case)
    labels = synthetic_labels(case["n"])
    est = estimate_stratified(plan, labels[plan.ranks - 1])
    grid_fn = GeometricGrid(case["eps"])
    r = np.arange(1, case["n"] + 1)
    p = precision_at(labels)
    expect_q, expect_lo, expect_hi = p.copy(), p.copy(), p.copy()
    for rank in range(plan.g_l + 1, case["n"] + 1):
        j = grid_fn.last_index_at_most(rank) - plan.l  # floor(log_{1+eps} r) - l
        expect_q[rank - 1] = est.q[j]
        expect_lo[rank - 1] = est.grid_lower[j]
        expect_hi[rank - 1] = est.grid_upper[j]
    np.testing.assert_allclose(est.step(r), expect_q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.step_lower(r), expect_lo, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.step_upper(r), expect_hi, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(30, 3_000),
    eps=st.sampled_from([0.1, 0.3, 1.0]),
    r_tilde=st.integers(1, 40),
    beta=st.sampled_from([1.1, 1.5, 3.0]),  # s from hundreds (dense strata) down to a few
    label_seed=st.integers(0, 2**32),
    positive_rate=st.floats(0.0, 1.0),
    unknown_rate=st.sampled_from([0.0, 0.3]),
    slack=st.sampled_from([0.0, 0.01, 0.2]),
)
def test_yield_bounds_hold_at_every_rank_whenever_the_grid_bounds_hold(
    n, eps, r_tilde, beta, label_seed, positive_rate, unknown_rate, slack
):
    rng = np.random.default_rng(label_seed)
    labels = (rng.random(n) < positive_rate).astype(float)
    plan = plan_stratified(n, eps=eps, r_tilde=r_tilde, beta=beta, p_min=1.0, seed=0)
    given_labels = labels[plan.ranks - 1]
    given_labels[rng.random(plan.size) < unknown_rate] = np.nan
    est = estimate_stratified(plan, given_labels)
    # Replace the sampled grid bounds by arbitrary ones that contain the truth.
    p = precision_at(labels)
    truth = p[plan.grid - 1]
    lo = np.clip(truth - slack * rng.random(truth.size), 0, 1)
    hi = np.clip(truth + slack * rng.random(truth.size), 0, 1)
    if plan.grid.size:
        lo[0], hi[0] = est.grid_lower[0], est.grid_upper[0]  # g_l: from the labels themselves
    est = dataclasses.replace(est, grid_lower=lo, grid_upper=hi)
    r = np.arange(1, n + 1)
    lower, upper = est.lower(r), est.upper(r)
    tol = 1e-12
    assert np.all(lower <= p + tol) and np.all(p <= upper + tol)
    np.testing.assert_allclose(est.yield_lower(r), lower * r, rtol=1e-12)
    np.testing.assert_allclose(est.yield_upper(r), upper * r, rtol=1e-12)
    if slack == 0.0 and unknown_rate == 0.0 and plan.grid.size:
        # Exact grid bounds and known labels pin p down at every grid point and at every rank
        # whose stratum is labeled from its grid point up to it.
        np.testing.assert_allclose(est.lower(plan.grid), truth, atol=1e-12)
        np.testing.assert_allclose(est.upper(plan.grid), truth, atol=1e-12)
        labeled = np.zeros(n + 1, dtype=int)
        labeled[plan.ranks] = 1
        labeled = np.cumsum(labeled)
        j = np.searchsorted(plan.grid, r, side="right") - 1
        last_grid = np.where(j >= 0, plan.grid[np.maximum(j, 0)], 0)
        pinned = labeled[r] - labeled[last_grid] == r - last_grid
        np.testing.assert_allclose(lower[pinned], p[pinned], atol=1e-12)
        np.testing.assert_allclose(upper[pinned], p[pinned], atol=1e-12)


def test_known_labels_between_grid_points_tighten_the_bounds():
    # eps = 1, n = 20: grid g_2 = 4, g_3 = 8, g_4 = 16, exact grid bounds y(4) = 4, y(8) = 6,
    # y(16) = 9. Labeled: ranks 1..4 (all 1), 9 and 10 (1) and 12 (0). By hand, e.g.
    # y(9) >= y(8) + 1 = 7 and y(9) <= y(8) + 1 = 7; y(14) <= y(16) - 0 = 9 and
    # y(14) >= y(8) + 2 = 8; y(20) <= y(16) + 4 = 13.
    labels = np.array([1, 1, 1, 1, 1, 1, 0])
    est = StratifiedEstimate(
        n=20, eps=1.0, l=2, L=4, g_l=4, grid=np.array([4, 8, 16]), q=np.array([1.0, 0.75, 0.5625]),
        grid_lower=np.array([1.0, 0.75, 0.5625]), grid_upper=np.array([1.0, 0.75, 0.5625]),
        n_unknown=np.zeros(3, dtype=np.int64), halfwidth=0.0, delta=0.05,
        ranks=np.array([1, 2, 3, 4, 9, 10, 12]),
        known_ones=np.concatenate(([0], np.cumsum(labels == 1))),
        maybe_ones=np.concatenate(([0], np.cumsum(labels != 0))),
    )  # fmt: skip
    r = np.array([6, 9, 10, 11, 12, 14, 16, 20])
    np.testing.assert_allclose(est.yield_lower(r), [4, 7, 8, 8, 8, 8, 9, 9])
    np.testing.assert_allclose(est.yield_upper(r), [6, 7, 8, 9, 9, 9, 9, 13])
    np.testing.assert_allclose(est.step(r), [1.0, 0.75, 0.75, 0.75, 0.75, 0.75, 0.5625, 0.5625])


def test_table_lists_the_bounds_at_the_prefix_grid_and_n():
    plan = plan_stratified(20_000, eps=0.1, r_tilde=200, beta=1.3, seed=0)
    est = estimate_stratified(plan, synthetic_labels(20_000)[plan.ranks - 1])
    table = est.table()
    expected = np.unique(np.concatenate((np.arange(1, plan.g_l + 1), plan.grid, [20_000])))
    assert list(table.columns) == ["rank", "precision_lower", "precision_upper", "yield_lower", "yield_upper"]
    assert np.array_equal(table["rank"], expected)
    np.testing.assert_allclose(table["precision_lower"], est.lower(expected))
    np.testing.assert_allclose(table["yield_upper"], est.yield_upper(expected))


def test_stratified_guarantee_holds_at_the_stated_rate():
    n = 50_000
    params = dict(eps=0.05, r_tilde=500, beta=1.2, p_min=0.5, delta=0.2)
    labels = synthetic_labels(n)
    p = precision_at(labels)
    r = np.arange(1, n + 1)
    beta_misses = bound_misses = 0
    q_sum = 0.0
    for seed in SEEDS:
        plan = plan_stratified(n, seed=seed, **params)
        est = estimate_stratified(plan, labels[plan.ranks - 1])
        truth = p[plan.grid - 1]
        beta_misses += bool(np.any(np.abs(est.q - truth) >= (params["beta"] - 1) * truth))
        grid_missed = bool(np.any((truth < est.grid_lower) | (truth > est.grid_upper)))
        bound_misses += grid_missed
        # The every-rank bounds can fail only where the grid bounds do.
        assert grid_missed or not np.any((p < est.lower(r)) | (p > est.upper(r)))
        q_sum = q_sum + est.q
    assert truth.min() >= params["p_min"]  # Lemma 1's precondition holds for these labels
    # Lemma 1: with probability >= 1 - delta, q is a beta-approximation at every grid point;
    # the simultaneous Hoeffding bounds miss somewhere with probability <= delta too.
    assert beta_misses <= max_misses(len(SEEDS), params["delta"])
    assert bound_misses <= max_misses(len(SEEDS), params["delta"])
    # Every X_k is s uniform draws from 1..g_k, so q(g_k) is unbiased at each grid point.
    s = plan.samples_per_point
    se = np.sqrt(truth * (1 - truth) / s / len(SEEDS))
    assert np.all(np.abs(q_sum[1:] / len(SEEDS) - truth[1:]) <= Z_TOLERANCE * se[1:])


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: plan_random(0, size=1, seed=0), "n"),
        (lambda: plan_random(10, size=11, seed=0), "size"),
        (lambda: plan_random(10, size=0, seed=0), "size"),
        (lambda: plan_random(10, size=2, seed=None), "seed"),
        (lambda: plan_random(10, size=2, seed=-1), "seed"),
        (lambda: plan_random(10, size=2, seed=True), "seed"),
        (lambda: random_sampling_budget(10, alpha=0, p=0.5, delta=0.05), "alpha"),
        (lambda: random_sampling_budget(10, alpha=0.1, p=0, delta=0.05), "p"),
        (lambda: random_sampling_budget(10, alpha=0.1, p=1.5, delta=0.05), "p"),
        (lambda: random_sampling_budget(10, alpha=0.1, p=0.5, delta=1), "delta"),
        (lambda: random_sampling_budget(0, alpha=0.1, p=0.5, delta=0.05), "n"),
        (lambda: point_estimate_budget(alpha=math.inf, p=0.5, delta=0.05), "alpha"),
        (lambda: point_estimate_budget(alpha=0.1, p=0.5, delta=0), "delta"),
        (lambda: random_sampling_reliable_from(10, size=0, alpha=0.1, p=0.5, delta=0.05), "size"),
        (lambda: plan_stratified(0, seed=0), "n"),
        (lambda: plan_stratified(100, eps=1.5, seed=0), "eps"),
        (lambda: plan_stratified(100, window=0, seed=0), "window"),
        (lambda: plan_stratified(100, r_tilde=0, seed=0), "r_tilde"),
        (lambda: plan_stratified(100, beta=1.0, seed=0), "beta"),
        (lambda: plan_stratified(100, p_min=0.0, seed=0), "p_min"),
        (lambda: plan_stratified(100, delta=1.0, seed=0), "delta"),
        (lambda: plan_stratified(100, seed="x"), "seed"),
        (lambda: plan_stratified(10_000, window=1, r_tilde=1, seed=0), "beta"),  # gamma = inf
        (lambda: stratified_budget(100, beta=math.nan), "beta"),
    ],
)
def test_bad_parameters_are_rejected_by_name(call, name):
    with pytest.raises(ParameterError, match=f"'{name}'"):
        call()


def test_bad_estimate_inputs_are_rejected():
    plan = plan_random(50, size=5, seed=0)
    with pytest.raises(DataError, match="5 values"):
        estimate_random(plan, [1, 0, 1])
    with pytest.raises(DataError, match="0, 1"):
        estimate_random(plan, [1, 0, 2, 1, 1])
    with pytest.raises(ParameterError, match="'ranks'"):
        estimate_random(plan, [1] * 5, ranks=[0])
    with pytest.raises(ParameterError, match="'ranks'"):
        estimate_random(plan, [1] * 5, ranks=[51])
    with pytest.raises(ParameterError, match="'ranks'"):
        estimate_random(plan, [1] * 5, ranks=[2.5])
    with pytest.raises(ParameterError, match="'method'"):
        estimate_random(plan, [1] * 5, method="wald")
    with pytest.raises(ParameterError, match="'plan'"):
        estimate_random(plan_paula(50), [1] * 5)
    strat = plan_stratified(20_000, eps=0.1, r_tilde=200, beta=1.3, seed=0)
    with pytest.raises(ParameterError, match="'plan'"):
        estimate_stratified(plan, [1] * 5)
    with pytest.raises(DataError, match=f"{strat.size} values"):
        estimate_stratified(strat, [1.0])
    est = estimate_stratified(strat, np.ones(strat.size))
    with pytest.raises(ParameterError, match="'r'"):
        est.lower([20_001])
    with pytest.raises(ParameterError, match="more than"):
        plan_stratified(10**6, beta=1.0001, seed=0)
    with pytest.raises(ParameterError, match="'k'"):
        strat.members(strat.L + 1)
