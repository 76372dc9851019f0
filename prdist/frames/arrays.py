"""NumPy helpers of the run path, where NumPy's own function loads more than it computes.

``np.unique``, ``np.isin`` and ``np.median`` ask ``numpy.ma`` whether their argument is masked,
which imports ``numpy.ma`` (8 ms; 15 ms under a profiler) in a run that uses no masked array.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct", "median", "members"]


def distinct(values) -> np.ndarray:
    """The distinct values of ``values`` in ascending order: ``np.unique(values)`` of a 1-d array
    of numbers without NaN.

    Examples
    --------
    >>> distinct(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    ordered = np.sort(np.asarray(values).ravel())
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if ordered.size else ordered


def median(values) -> float:
    """``np.median(values)`` of a 1-d array of numbers without NaN: the middle value, or the mean
    of the two middle ones.

    Examples
    --------
    >>> median(np.array([4.0, 1.0, 3.0])), median(np.array([4.0, 1.0, 3.0, 2.0]))
    (3.0, 2.5)
    """
    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    middle = ordered.size // 2
    return float(ordered[middle] if ordered.size % 2 else (ordered[middle - 1] + ordered[middle]) / 2)


def members(values, of: np.ndarray) -> np.ndarray:
    """``np.isin(values, of)`` where ``of`` is ascending without repeats (as :func:`distinct` gives).

    Examples
    --------
    >>> members(np.array([5, 1, 7, 3]), np.array([1, 3, 5])).tolist()
    [True, True, False, True]
    """
    values = np.asarray(values)
    at = np.searchsorted(of, values)
    found = np.zeros(values.shape, dtype=bool)
    inside = at < of.size
    found[inside] = of[at[inside]] == values[inside]
    return found
