"""The geometric grid g_j = ceil((1+eps)^j) in exact integer arithmetic.

The grid decides which items are labeled, so a floating-point rounding that moves one ceiling
changes the plan. ``eps`` is taken as the decimal number it is written as (``0.03`` means 3/100,
not the nearest binary double), powers are evaluated with 60 significant digits, and any value
within reach of that rounding error of an integer is settled with exact rational arithmetic.
"""

from __future__ import annotations

import decimal
import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from prdist.params import EPS

__all__ = ["GeometricGrid", "GridParameters", "exact_eps"]

_DIGITS = 60
_CONTEXT = decimal.Context(prec=_DIGITS, rounding=decimal.ROUND_HALF_EVEN)


def exact_eps(eps, *, owner: str = "plan_paula") -> Fraction:
    """Return ``eps`` as the exact rational it is written as, after checking it is in (0, 1].

    >>> exact_eps(0.03)
    Fraction(3, 100)
    """
    EPS.check(eps, owner=owner)
    if isinstance(eps, Fraction):
        return eps
    if isinstance(eps, numbers.Rational):
        return Fraction(eps.numerator, eps.denominator)
    # repr() of a float is the shortest decimal that round-trips: what the user typed.
    return Fraction(repr(float(eps)))


@dataclass(frozen=True)
class GeometricGrid:
    """Powers of ``1 + eps`` rounded exactly.

    Parameters
    ----------
    eps : float
        Grid spacing in (0, 1].

    Examples
    --------
    >>> grid = GeometricGrid(0.03)
    >>> grid.ceil_power(276), grid.last_index_at_most(217_077)
    (3492, 415)
    """

    eps: float
    growth: Fraction = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "growth", 1 + exact_eps(self.eps))

    @cached_property
    def _growth_decimal(self) -> decimal.Decimal:
        return _CONTEXT.divide(decimal.Decimal(self.growth.numerator), decimal.Decimal(self.growth.denominator))

    def _power_bracket(self, j: int) -> tuple[int, int]:
        """Return (floor, ceil) of (1+eps)^j, exactly."""
        if j < 0:
            raise ValueError("grid indices are non-negative")
        approx = _CONTEXT.power(self._growth_decimal, j)
        # Relative error of the 60-digit evaluation is far below 1e-50 for any index a grid can
        # reach; only values this close to an integer need the exact (and costly) big-int check.
        nearest = approx.to_integral_value(rounding=decimal.ROUND_HALF_EVEN)
        tolerance = abs(approx) * decimal.Decimal("1e-45") + decimal.Decimal("1e-45")
        if abs(approx - nearest) > tolerance:
            floor = int(approx.to_integral_value(rounding=decimal.ROUND_FLOOR))
            return floor, floor + 1
        num = self.growth.numerator**j
        den = self.growth.denominator**j
        floor = num // den
        return floor, floor + (1 if num % den else 0)

    def ceil_power(self, j: int) -> int:
        """g_j = ceil((1+eps)^j)."""
        return self._power_bracket(j)[1]

    def floor_power(self, j: int) -> int:
        """floor((1+eps)^j)."""
        return self._power_bracket(j)[0]

    def points(self, j_lo: int, j_hi: int) -> np.ndarray:
        """Return g_j for j = j_lo..j_hi (inclusive) as int64."""
        return np.array([self.ceil_power(j) for j in range(j_lo, j_hi + 1)], dtype=np.int64)

    def first_index_at_least(self, r: int) -> int:
        """ceil(log_{1+eps} r): the smallest j with (1+eps)^j >= r (r >= 1)."""
        j = max(0, math.ceil(math.log(r) / math.log1p(float(self.growth - 1))))
        while j > 0 and self.floor_power(j - 1) >= r:
            j -= 1
        while self.floor_power(j) < r:
            j += 1
        return j

    def last_index_at_most(self, n: int) -> int:
        """floor(log_{1+eps} n): the largest j with (1+eps)^j <= n (n >= 1).

        For an integer n, (1+eps)^j <= n exactly when ceil((1+eps)^j) <= n.
        """
        j = max(0, math.floor(math.log(n) / math.log1p(float(self.growth - 1))))
        while self.ceil_power(j + 1) <= n:
            j += 1
        while j > 0 and self.ceil_power(j) > n:
            j -= 1
        return j


@dataclass(frozen=True, eq=False)
class GridParameters:
    """The grid fields every plan on PAULA's grid records, first and in this order.

    ``n, eps, window, r_tilde, l, L, g_l, m, gamma`` as in :func:`prdist.paula.plan.plan_paula`;
    :class:`~prdist.paula.plan.PaulaPlan` and :class:`~prdist.sampling.StratifiedPlan` extend it.
    """

    n: int
    eps: float
    window: int
    r_tilde: int
    l: int
    L: int
    g_l: int
    m: int
    gamma: float

    @property
    def exhaustive(self) -> bool:
        """True when n <= g_l: every item is labeled and the precision is known exactly."""
        return self.n <= self.g_l
