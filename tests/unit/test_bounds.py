import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from tests.support.paula_sequences import (
    arbitrary_labels,
    lemma_premise_holds,
    monotone_sequence,
    plans,
    reference_paula,
    weakly_monotone,
)
from prdist import paula_bounds, plan_paula, precision_function
from prdist.errors import DataError, ParameterError

TOL = 1e-9


def all_ranks(plan):
    return np.arange(1, plan.n + 1)


@given(plan=plans, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_truth_is_inside_at_every_rank_under_the_assumptions(plan, seed):
    v = monotone_sequence(plan, np.random.default_rng(seed))
    assert lemma_premise_holds(plan, v)
    b = paula_bounds(plan, v[plan.ranks - 1])
    p, r = precision_function(v), all_ranks(plan)
    assert np.all(b.lower(r) <= p + TOL) and np.all(p <= b.upper(r) + TOL)
    # Lemma 4: gamma * Y- >= Y+ at every grid point.
    assert np.all(plan.gamma * b.paper_yield_lower >= b.paper_yield_upper - TOL)
    assert b.diagnostics.precondition_holds and b.diagnostics.contradiction_ranks.size == 0


@given(plan=plans, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_theorem_3_factor_holds_for_step_and_valid_bounds(plan, seed):
    v = monotone_sequence(plan, np.random.default_rng(seed))
    p = precision_function(v)
    assume(weakly_monotone(plan, p) and p[-1] > 0)
    b = paula_bounds(plan, v[plan.ranks - 1])
    r = all_ranks(plan)
    pos = p > 0
    factor = plan.factor * (1 + TOL)
    assert np.all(p[pos] <= factor * b.step_lower(r)[pos])
    assert np.all(b.step_upper(r)[pos] <= factor * p[pos])
    # The valid bounds meet the factor wherever A.2 constrains them: everywhere except a tail
    # shorter than m past g_L, where only the assumption-free bound applies.
    if plan.grid.size and plan.grid[-1] + plan.m > plan.n:
        pos &= r <= plan.grid[-1]
    assert np.all(p[pos] <= factor * b.lower(r)[pos])
    assert np.all(b.upper(r)[pos] <= factor * p[pos])


@given(case=arbitrary_labels())
@settings(max_examples=80, deadline=None)
def test_bounds_are_sane_on_any_labels(case):
    plan, v, labels = case
    b = paula_bounds(plan, labels)
    r = all_ranks(plan)
    lo, hi = b.lower(r), b.upper(r)
    assert np.all((0 <= lo) & (lo <= hi + TOL) & (hi <= 1))
    ylo, yhi = b.yield_lower(r), b.yield_upper(r)
    assert np.all((0 <= ylo) & (ylo <= yhi + TOL) & (yhi <= r))
    prefix = np.arange(1, plan.prefix_end + 1)
    if not np.isnan(labels[: plan.prefix_end]).any():
        exact = precision_function(v)[: plan.prefix_end]
        assert np.allclose(b.lower(prefix), exact) and np.allclose(b.upper(prefix), exact)


# Arbitrary labels break the grid-point premise often: filtering them out is the test's design,
# so Hypothesis' "filters too much" health check (which failed about 1 run in 15) is off here.
@given(case=arbitrary_labels())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
def test_valid_everywhere_whenever_grid_point_yields_are_bounded(case):
    """lower/upper need nothing beyond the grid-point yield bounds (and A.2 on the tail)."""
    plan, v, labels = case
    b = paula_bounds(plan, labels)
    y = np.concatenate(([0.0], np.cumsum(v)))
    grid = plan.grid
    assume(grid.size > 0)
    assume(np.all(b.grid_yield_lower <= y[grid] + TOL) and np.all(y[grid] <= b.grid_yield_upper + TOL))
    # Past g_L the upper bound also uses A.2 on (g_L, r]: check the tail only when its labels obey
    # it, i.e. y(r) - y(g_L) <= max(r - g_L, m) * p_D(g_L) for every r past g_L.
    r = all_ranks(plan)
    last = int(grid[-1])
    past = r[r > last]
    tail_obeys = last + plan.m > plan.n or bool(
        np.all(y[past] - y[last] <= np.maximum(past - last, plan.m) * b.local_upper[-1] + TOL)
    )
    check = r if tail_obeys else r[r <= last]
    p = y[check] / check
    assert np.all(b.lower(check) <= p + TOL)
    assert np.all(p <= b.upper(check) + TOL)


@given(case=arbitrary_labels())
@settings(max_examples=40, deadline=None)
def test_algorithm_2_matches_the_slow_reference(case):
    plan, _, labels = case
    assume(plan.grid.size > 0 and plan.size <= 6000)
    b = paula_bounds(plan, labels)
    ref_lo, ref_hi = reference_paula(plan, labels)
    assert np.allclose(b.paper_yield_lower, ref_lo) and np.allclose(b.paper_yield_upper, ref_hi)


@given(plan=plans, seed=st.integers(0, 2**32 - 1), fraction=st.sampled_from([0.05, 0.5]))
@settings(max_examples=40, deadline=None)
def test_unknown_labels_only_widen_and_keep_the_truth_inside(plan, seed, fraction):
    rng = np.random.default_rng(seed)
    v = monotone_sequence(plan, rng)
    full = v[plan.ranks - 1]
    partial = np.where(rng.random(plan.size) < fraction, np.nan, full)
    r = all_ranks(plan)
    b_full, b_part = paula_bounds(plan, full), paula_bounds(plan, partial)
    assert np.all(b_part.lower(r) <= b_full.lower(r) + TOL)
    assert np.all(b_part.upper(r) >= b_full.upper(r) - TOL)
    p = precision_function(v)
    assert np.all(b_part.lower(r) <= p + TOL) and np.all(p <= b_part.upper(r) + TOL)
    assert b_part.diagnostics.unknown == int(np.isnan(partial).sum())


def test_exhaustive_plan_gives_the_exact_precision():
    v = np.random.default_rng(0).integers(0, 2, 300).astype(float)
    plan = plan_paula(300, eps=0.03, window=100)
    b = paula_bounds(plan, v)
    assert plan.exhaustive
    assert np.allclose(b.lower(all_ranks(plan)), precision_function(v))
    assert np.allclose(b.upper(all_ranks(plan)), precision_function(v))


def test_diagnostics_flag_a_rising_local_precision():
    plan = plan_paula(20_000, eps=0.1, window=20)
    v = np.zeros(20_000)
    v[: plan.g_l // 2] = 1.0
    v[plan.grid[5] - 20 : plan.grid[5]] = 1.0  # a burst of positives inside one window
    b = paula_bounds(plan, v[plan.ranks - 1])
    d = b.diagnostics
    assert plan.grid[5] in d.rise_ranks.tolist()
    assert not d.assumptions_plausible
    assert d.to_dict()["monotonicity_violations"] >= 1


def test_diagnostics_flag_a_failed_precondition():
    plan = plan_paula(20_000, eps=0.1, window=20)
    v = np.zeros(20_000)
    v[plan.g_l - 20 : plan.g_l] = 1.0  # the last window of the prefix beats its average
    d = paula_bounds(plan, v[plan.ranks - 1]).diagnostics
    assert d.precondition_holds is False


def test_contradictions_fall_back_to_assumption_free_bounds():
    plan = plan_paula(20_000, eps=0.1, window=20)
    v = np.zeros(20_000)
    v[plan.grid[1] - 20 : plan.grid[1]] = 1.0  # p_D jumps from 0 to 1 at the first window
    b = paula_bounds(plan, v[plan.ranks - 1])
    assert b.paper_yield_lower[1] > b.paper_yield_upper[1]
    assert plan.grid[1] in b.diagnostics.contradiction_ranks.tolist()
    r = all_ranks(plan)
    assert np.all(b.lower(r) <= b.upper(r) + TOL)


def test_table_has_the_contract_columns():
    plan = plan_paula(50_000, eps=0.1, window=20)
    v = monotone_sequence(plan, np.random.default_rng(3))
    t = paula_bounds(plan, v[plan.ranks - 1]).table()
    assert list(t.columns) == ["rank", "precision_lower", "precision_upper", "yield_lower", "yield_upper"]
    assert t["rank"].dtype == np.int64 and t["rank"].is_monotonic_increasing
    assert set(plan.grid.tolist()) | set(range(1, plan.g_l + 1)) | {plan.n} == set(t["rank"].tolist())


def test_bad_labels_and_ranks_are_refused():
    plan = plan_paula(1000, eps=0.5, window=10)
    with pytest.raises(DataError, match="one label per planned rank"):
        paula_bounds(plan, np.ones(plan.size - 1))
    with pytest.raises(DataError, match="must hold only 0, 1 or NaN"):
        paula_bounds(plan, np.full(plan.size, 2.0))
    with pytest.raises(ParameterError, match="PaulaPlan"):
        paula_bounds("plan", np.ones(3))
    b = paula_bounds(plan, np.ones(plan.size))
    with pytest.raises(ParameterError, match=r"Ranks must be integers in \[1, 1000\]. Got 0 instead."):
        b.lower([0, 5])
    with pytest.raises(ParameterError, match="Ranks must be integers"):
        b.upper(2.5)


def test_precision_function_refuses_unknown_labels():
    with pytest.raises(DataError, match="missing"):
        precision_function([1, np.nan])
    with pytest.raises(DataError, match="at least one"):
        precision_function([])


def test_a2_break_between_windows_is_invisible_to_the_plan():
    """A limit of the method, pinned: labels that rise *between* two planned windows.

    Ranks 1..3,000 correct, a declining ramp to 3,403, incorrect after, except ranks 3,817..3,831
    (between the windows ending at grid ranks 3,816 and 3,931). No planned label sees the rise,
    so the diagnostics cannot flag it, and the upper bounds miss p past it. README "Guarantees"
    and the report's diagnostics say so; if this test starts failing, update both.
    """
    n = 30_000
    plan = plan_paula(n, eps=0.03, window=100)
    assert {3816, 3931} <= set(plan.grid.tolist())
    v = np.zeros(n)
    v[:3000] = 1.0
    density = (3403 - np.arange(3001, 3404)) / 403  # from 1 down to 0, spread evenly
    v[3000:3403] = np.diff(np.concatenate(([0.0], np.floor(np.cumsum(density) + 0.5))))
    v[3816:3831] = 1.0
    p = precision_function(v)
    r = np.arange(1, n + 1)
    misses = {}
    for confidence in (None, 0.95):
        b = paula_bounds(plan, v[plan.ranks - 1], confidence=confidence)
        assert b.diagnostics.assumptions_plausible  # the diagnostics see nothing wrong ...
        assert np.all(b.lower(r) <= p + 1e-12)  # ... the lower bounds still hold ...
        misses[confidence] = p - b.upper(r)  # ... the upper bounds do not
    assert (misses[None] > 1e-12).sum() == 26_184 and 3.9e-3 < misses[None].max() < 4.0e-3
    assert (misses[0.95] > 1e-12).sum() == 594 and 2.1e-4 < misses[0.95].max() < 2.3e-4
