"""Parameter checks that produce the project's uniform error messages.

Messages follow one form so users can grep them: "The 'eps' parameter of plan_paula must be a
float in (0, 1]. Got 1.5 instead." The checks themselves live with the parameters' declarations
in :mod:`prdist.params` (standard library only); this module adds the array checks (NumPy).
"""

from __future__ import annotations

import numpy as np

from prdist.errors import DataError
from prdist.params import CONFIDENCE, check_choice, check_float, check_int

__all__ = ["as_label_array", "check_choice", "check_confidence", "check_float", "check_int"]


def check_confidence(value, *, owner: str) -> float:
    """Return the confidence level ``value`` as a float after checking it is in (0, 1)."""
    return check_float(value, name="confidence", owner=owner, **CONFIDENCE.bounds)


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
