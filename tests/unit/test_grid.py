from fractions import Fraction
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from prdist.errors import ParameterError
from prdist.paula.grid import GeometricGrid, exact_eps


def oracle_points(eps: Fraction, n: int):
    """Every g_j <= n with exact rationals, j = 0, 1, ... (slow, obviously correct)."""
    growth, power, points = 1 + eps, Fraction(1), []
    while math.ceil(power) <= n:
        points.append(math.ceil(power))
        power *= growth
    return points


@pytest.mark.parametrize("eps", ["0.03", "0.05", "0.01", "0.1", "0.3333333333333333", "0.5", "1"])
def test_grid_points_equal_exact_rationals_up_to_1e12(eps):
    n = 10**12
    grid = GeometricGrid(float(eps))
    expected = oracle_points(Fraction(eps), n)
    L = grid.last_index_at_most(n)
    assert L == len(expected) - 1
    assert grid.points(0, L).tolist() == expected


@given(
    eps=st.sampled_from([0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.25, 0.5, 1.0]),
    r=st.integers(min_value=1, max_value=10**9),
)
@settings(max_examples=200, deadline=None)
def test_log_indices_are_exact(eps, r):
    grid = GeometricGrid(eps)
    growth = 1 + Fraction(repr(eps))
    l = grid.first_index_at_least(r)
    assert growth**l >= r and (l == 0 or growth ** (l - 1) < r)
    L = grid.last_index_at_most(r)
    assert growth**L <= r < growth ** (L + 1)


def test_eps_is_read_as_written():
    assert exact_eps(0.03) == Fraction(3, 100)
    assert exact_eps(Fraction(1, 3)) == Fraction(1, 3)


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan"), float("inf"), "0.1", True])
def test_eps_out_of_domain_is_refused(bad):
    with pytest.raises(ParameterError, match=r"The 'eps' parameter of plan_paula must be a float in \(0, 1\]"):
        exact_eps(bad)


def test_near_integer_powers_use_exact_arithmetic():
    # With eps = 1 every power is an integer: ceil and floor must both be exact.
    grid = GeometricGrid(1.0)
    assert [grid.ceil_power(j) for j in range(45)] == [2**j for j in range(45)]
    assert [grid.floor_power(j) for j in range(45)] == [2**j for j in range(45)]
    assert grid.first_index_at_least(2**40) == 40 and grid.last_index_at_most(2**40 - 1) == 39


def test_points_are_int64_and_non_decreasing():
    pts = GeometricGrid(0.05).points(0, 500)
    assert pts.dtype == np.int64 and np.all(np.diff(pts) >= 0)
