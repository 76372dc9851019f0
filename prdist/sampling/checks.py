"""Argument checks shared by the sampling baselines (seeds, ranks, labels, probabilities)."""

from __future__ import annotations

import numbers

import numpy as np

from prdist._validation import as_label_array, check_float
from prdist.errors import DataError, ParameterError
from prdist.params import ALPHA, DELTA


def _rng(seed, *, owner: str) -> np.random.Generator:
    """Return the generator of an explicit seed: a non-negative int or a SeedSequence."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ParameterError(
            f"The 'seed' parameter of {owner} must be a non-negative int or a "
            f"numpy.random.SeedSequence. Got {seed!r} instead."
        )
    return np.random.default_rng(int(seed))


def _check_delta(delta, *, owner: str) -> float:
    return DELTA.check(delta, owner=owner)


def _check_precision(p, *, name: str, owner: str) -> float:
    return check_float(p, name=name, owner=owner, low=0.0, high=1.0, low_open=True)


def _check_guarantee(alpha, p, delta, *, owner: str) -> tuple[float, float, float]:
    """The relative error ``alpha`` > 0, precision bound ``p`` in (0, 1] and failure probability
    ``delta`` in (0, 1) of a uniform-sampling budget, checked in that order."""
    alpha = check_float(alpha, name="alpha", owner=owner, **ALPHA.bounds)  # required here
    return alpha, _check_precision(p, name="p", owner=owner), _check_delta(delta, owner=owner)


def _check_ranks(ranks, *, n: int, owner: str, name: str = "ranks") -> np.ndarray:
    """Return ``ranks`` as a 1-D int64 array after checking every value is an integer in [1, n]."""
    arr = np.atleast_1d(np.asarray(ranks))
    expectation = f"The {name!r} parameter of {owner} must hold integer ranks in [1, {n}]"
    if arr.ndim != 1:
        raise ParameterError(f"{expectation} (a rank or a 1-D array). Got shape {arr.shape} instead.")
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    else:
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ParameterError(f"{expectation}. Got values of type {arr.dtype} instead.") from None
        not_integer = ~np.isfinite(as_float) | (as_float != np.floor(as_float))
        if not_integer.any():
            i = int(np.flatnonzero(not_integer)[0])
            raise ParameterError(f"{expectation}. Position {i} holds {arr[i]!r} instead.")
        out = as_float.astype(np.int64)
    bad = (out < 1) | (out > n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"{expectation} (n is the resource size). Position {i} holds {int(out[i])} instead."
        )
    return out


def _check_labels(labels, *, size: int, owner: str) -> np.ndarray:
    arr = as_label_array(labels, owner=owner)
    if arr.size != size:
        raise DataError(
            f"The 'labels' argument of {owner} must hold one label per planned rank "
            f"(aligned with plan.ranks, {size} values). Got {arr.size} values instead."
        )
    return arr


def _check_plan_labels(plan, labels, plan_type: type, *, maker: str, owner: str) -> np.ndarray:
    """Check ``plan`` is a ``plan_type`` (made by the function ``maker``); return its labels checked."""
    if not isinstance(plan, plan_type):
        raise ParameterError(
            f"The 'plan' argument of {owner} must be a {plan_type.__name__} from {maker}. "
            f"Got {type(plan).__name__} instead."
        )
    return _check_labels(labels, size=plan.size, owner=owner)


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr
