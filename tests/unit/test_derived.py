import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.support.paula_sequences import monotone_sequence
from prdist import paula_bounds, plan_paula, precision_function
from prdist.paula.derived import (
    average_precision_bounds,
    deepest_rank,
    pr_region,
    precision_yield_region,
    roc_region,
)
from prdist.errors import ParameterError

TOL = 1e-9

cases = st.builds(
    lambda n, eps, window, seed, unknown: _case(n, eps, window, seed, unknown),
    n=st.integers(min_value=1, max_value=30_000),
    eps=st.sampled_from([0.05, 0.1, 0.5]),
    window=st.integers(min_value=1, max_value=30),
    seed=st.integers(0, 2**32 - 1),
    unknown=st.sampled_from([0.0, 0.1]),
)


def _case(n, eps, window, seed, unknown):
    plan = plan_paula(n, eps=eps, window=window)
    rng = np.random.default_rng(seed)
    v = monotone_sequence(plan, rng)
    labels = v[plan.ranks - 1]
    labels = np.where(rng.random(plan.size) < unknown, np.nan, labels)
    return plan, v, paula_bounds(plan, labels)


def true_average_precision(v):
    p = precision_function(v)
    return float(p[v == 1].mean()) if v.any() else 0.0


@given(case=cases)
@settings(max_examples=60, deadline=None)
def test_derived_regions_contain_the_truth(case):
    plan, v, b = case
    y = np.cumsum(v)
    r = np.arange(1, plan.n + 1)
    pr = pr_region(b, r)
    if y[-1] > 0:
        recall = y / y[-1]
        assert np.all(pr["recall_lower"] <= recall + TOL) and np.all(recall <= pr["recall_upper"] + TOL)
    negatives = plan.n - y[-1]
    if negatives > 0:
        fpr = (r - y) / negatives
        roc = roc_region(b, r)
        assert np.all(roc["fpr_lower"] <= fpr + TOL) and np.all(fpr <= roc["fpr_upper"] + TOL)
    ap_lo, ap_hi = average_precision_bounds(b)
    ap = true_average_precision(v)
    assert ap_lo - TOL <= ap <= ap_hi + TOL
    assert 0 <= ap_lo <= ap_hi + TOL and ap_hi <= 1


@given(case=cases, target=st.floats(0.05, 1.0))
@settings(max_examples=60, deadline=None)
def test_deepest_rank_equals_a_scan_of_every_rank(case, target):
    plan, _, b = case
    r = np.arange(1, plan.n + 1)
    ok = b.yield_lower(r) >= target * r - 1e-9 * r
    expected = int(r[ok].max()) if ok.any() else 0
    assert deepest_rank(b, target) == expected


def test_exhaustive_labels_give_exact_derived_values():
    v = np.r_[np.ones(30), np.zeros(10), np.ones(10), np.zeros(50)]
    b = paula_bounds(plan_paula(100, eps=0.03, window=100), v)
    ap_lo, ap_hi = average_precision_bounds(b)
    assert ap_lo == pytest.approx(true_average_precision(v)) == pytest.approx(ap_hi)
    assert deepest_rank(b, 0.8) == 50  # p(50) = 40/50
    region = precision_yield_region(b)
    assert np.allclose(region["precision_lower"], region["precision_upper"])


def test_target_is_validated():
    b = paula_bounds(plan_paula(100, eps=0.03, window=100), np.ones(100))
    with pytest.raises(ParameterError, match=r"The 'target' parameter of deepest_rank must be a float in \(0, 1\]"):
        deepest_rank(b, 0)
