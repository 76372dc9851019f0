import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from prdist import plan_paula
from prdist.errors import ParameterError


@pytest.mark.parametrize(
    ("n", "eps", "expected"),
    [(217_077, 0.03, 17_392), (35_615, 0.03, 11_292), (35_615, 0.05, 7_822)],
)
def test_reproduces_the_papers_label_counts(n, eps, expected):
    plan = plan_paula(n, eps=eps, window=100)
    assert plan.size == expected
    assert plan.size == plan.g_l + plan.window * (plan.L - plan.l)


def test_derived_parameters_follow_the_definitions():
    plan = plan_paula(217_077, eps=0.03, window=100)
    assert plan.r_tilde == 3400  # ceil(102 / 0.03)
    assert (plan.l, plan.L, plan.g_l, plan.m) == (276, 415, 3492, 103)
    assert plan.gamma == pytest.approx(1.03 + 2.03 / 103)
    assert plan.factor == pytest.approx(plan.gamma * 1.03)
    assert plan.precondition_met and plan.notes == ()
    assert plan.grid[0] == plan.g_l and plan.grid.size == plan.L - plan.l + 1


@given(
    n=st.integers(min_value=1, max_value=5 * 10**6),
    eps=st.sampled_from([0.02, 0.03, 0.05, 0.1, 0.2, 0.5, 1.0]),
    window=st.integers(min_value=1, max_value=200),
)
@settings(max_examples=150, deadline=None)
def test_plan_structure(n, eps, window):
    plan = plan_paula(n, eps=eps, window=window)
    ranks = plan.ranks
    assert ranks.dtype == np.int64 and np.all(np.diff(ranks) > 0)
    assert ranks[0] == 1 and ranks[-1] <= n
    if plan.exhaustive:
        assert plan.size == n and plan.grid.size == 0
        return
    assert plan.size == plan.g_l + window * (plan.L - plan.l)
    assert np.array_equal(ranks[: plan.g_l], np.arange(1, plan.g_l + 1))
    for g in plan.grid[1:]:
        assert np.isin(np.arange(g - window + 1, g + 1), ranks).all()
    role, grid_index = plan.roles()
    assert np.all((role == "prefix") == (ranks <= plan.g_l))
    owners = plan.grid[grid_index[role == "window"] - plan.l]
    assert np.all((ranks[role == "window"] <= owners) & (ranks[role == "window"] > owners - window))


def test_small_r_tilde_is_allowed_but_flagged():
    plan = plan_paula(10_000, eps=0.1, window=50, r_tilde=100)
    assert not plan.precondition_met
    assert any("precondition" not in note and "r_tilde=100" in note for note in plan.notes)
    assert np.all(np.diff(plan.ranks) > 0)  # overlapping windows are merged


def test_exhaustive_when_resource_is_small():
    plan = plan_paula(500, eps=0.03, window=100)
    assert plan.exhaustive and plan.size == 500 and plan.prefix_end == 500


def test_huge_resources_plan_quickly():
    plan = plan_paula(10**12, eps=0.03, window=100)
    assert plan.size == plan.g_l + 100 * (plan.L - plan.l)
    assert plan.ranks[-1] == plan.grid[-1] <= 10**12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, r"The 'n' parameter of plan_paula must be an int >= 1. Got 0 instead."),
        ({"n": 2.5}, r"The 'n' parameter of plan_paula must be an int >= 1. Got 2.5 instead."),
        ({"n": 10, "eps": 1.5}, r"The 'eps' parameter of plan_paula must be a float in \(0, 1\]. Got 1.5 instead."),
        ({"n": 10, "eps": 0.0}, r"'eps' parameter of plan_paula"),
        ({"n": 10, "window": 0}, r"The 'window' parameter of plan_paula must be an int >= 1. Got 0 instead."),
        ({"n": 10, "r_tilde": -3}, r"'r_tilde' parameter of plan_paula"),
    ],
)
def test_bad_parameters_are_refused_with_the_fix(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        plan_paula(**kwargs)
