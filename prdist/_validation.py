"""Parameter checks that produce the project's uniform error messages.

Messages follow one form so users can grep them: "The 'eps' parameter of plan_paula must be a
float in (0, 1]. Got 1.5 instead."
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import DataError, ParameterError


def _fail(name: str, owner: str, expectation: str, value: object) -> ParameterError:
    return ParameterError(
        f"The {name!r} parameter of {owner} must be {expectation}. Got {value!r} instead."
    )


def check_int(value, *, name: str, owner: str, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int after checking it is an integer in [low, high]."""
    expectation = "an int" + _range_text(low, high, closed=True)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer() and not isinstance(value, bool):
            value = int(value)
        else:
            raise _fail(name, owner, expectation, value)
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise _fail(name, owner, expectation, value)
    return value


def check_float(
    value,
    *,
    name: str,
    owner: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is finite and within the interval."""
    lo_b = "(" if low_open else "["
    hi_b = ")" if high_open else "]"
    if low is None and high is None:
        expectation = "a finite float"
    else:
        lo_s = "-inf" if low is None else f"{low:g}"
        hi_s = "inf" if high is None else f"{high:g}"
        # An unbounded end is always open: "(0, inf)", never "(0, inf]".
        expectation = f"a float in {'(' if low is None else lo_b}{lo_s}, {hi_s}{')' if high is None else hi_b}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(name, owner, expectation, value)
    x = float(value)
    if not math.isfinite(x):
        raise _fail(name, owner, expectation, value)
    if low is not None and (x < low or (low_open and x == low)):
        raise _fail(name, owner, expectation, value)
    if high is not None and (x > high or (high_open and x == high)):
        raise _fail(name, owner, expectation, value)
    return x


def check_confidence(value, *, owner: str) -> float:
    """Return the confidence level ``value`` as a float after checking it is in (0, 1)."""
    return check_float(value, name="confidence", owner=owner, low=0.0, high=1.0, low_open=True, high_open=True)


def check_choice(value, *, name: str, owner: str, choices) -> str:
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be one of {options}. Got {value!r} instead."
        )
    return value


def as_label_array(labels, *, name: str = "labels", owner: str, allow_nan: bool = True) -> np.ndarray:
    """Return labels as float64, checking every known value is 0 or 1 (NaN = unknown)."""
    try:
        arr = np.asarray(labels, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"The {name!r} argument of {owner} must be numeric 0/1 labels; it could not be "
            f"converted to numbers ({exc}). Convert the labels to 0 and 1 first."
        ) from None
    if arr.ndim != 1:
        raise DataError(
            f"The {name!r} argument of {owner} must be one-dimensional. Got shape {arr.shape} instead."
        )
    known = ~np.isnan(arr)
    if not allow_nan and not known.all():
        raise DataError(
            f"The {name!r} argument of {owner} has {int((~known).sum())} missing (NaN) values; "
            "every label must be 0 or 1 here."
        )
    bad = known & (arr != 0.0) & (arr != 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"The {name!r} argument of {owner} must hold only 0, 1"
            + (" or NaN (unknown)" if allow_nan else "")
            + f"; position {i} holds {arr[i]!r}. Map the labels to 0/1 first."
        )
    return arr


def _range_text(low, high, *, closed: bool) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" >= {low}"
    if low is None:
        return f" <= {high}"
    return f" in [{low}, {high}]"
