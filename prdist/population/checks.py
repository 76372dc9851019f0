"""Argument checks of the population models and their constructors (one message format)."""

from __future__ import annotations

import math

import numpy as np

from prdist.errors import DataError, ParameterError
from prdist.params import PREVALENCE


def _prevalence(value, owner: str) -> float:
    return PREVALENCE.check(value, owner=owner)


def _pair(value, name: str, owner: str, expectation: str) -> tuple[float, float]:
    try:
        first, second = value
        pair = (float(first), float(second))
    except (TypeError, ValueError):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair {expectation}. "
            f"Got {value!r} instead."
        ) from None
    if not all(math.isfinite(v) for v in pair) or any(isinstance(v, bool) for v in value):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair {expectation} of finite numbers. "
            f"Got {value!r} instead."
        )
    return pair


def _location_scale(value, name: str, owner: str) -> tuple[float, float]:
    mu, sd = _pair(value, name, owner, "(mean, sd) with sd > 0")
    if sd <= 0:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair (mean, sd) with sd > 0. Got "
            f"{value!r} instead."
        )
    return mu, sd


def _shapes(value, name: str, owner: str) -> tuple[float, float]:
    a, b = _pair(value, name, owner, "(a, b) of Beta shape parameters > 0")
    if a <= 0 or b <= 0:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair (a, b) of Beta shape parameters "
            f"> 0. Got {value!r} instead."
        )
    return a, b


def _interval(value, name: str, owner: str) -> tuple[float, float]:
    lo, hi = _pair(value, name, owner, "(low, high) with low < high")
    if not lo < hi:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a pair (low, high) with low < high. Got "
            f"{value!r} instead."
        )
    return lo, hi


def _value_list(value, name: str, owner: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be a non-empty list of finite score values. "
            f"Got {value!r} instead."
        )
    return arr


def _unit_values(values, *, name: str, owner: str, include_zero: bool = False,
                 include_one: bool = True) -> np.ndarray:
    try:
        # Booleans are not probabilities.
        arr = None if isinstance(values, bool) else np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    lower = "[0" if include_zero else "(0"
    upper = "1]" if include_one else "1)"
    if arr is None:
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be floats in {lower}, {upper}. Got "
            f"{values!r} instead."
        )
    ok = (arr >= 0.0) if include_zero else (arr > 0.0)
    ok &= (arr <= 1.0) if include_one else (arr < 1.0)
    if not ok.all():
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be floats in {lower}, {upper}; it holds "
            f"{float(arr[~ok].flat[0])!r}."
        )
    return arr


def _as_scores(values, *, owner: str, finite: bool = False) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            f"The scores passed to {owner} must be numbers. Got {values!r} instead."
        ) from None
    if np.isnan(arr).any():
        raise DataError(f"The scores passed to {owner} hold NaN. Drop or impute them first.")
    if finite and not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        raise DataError(f"The scores passed to {owner} must be finite; got {bad!r}.")
    return arr
