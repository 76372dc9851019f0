"""Releases over time: when a change of precision between two releases is certain.

A *series* is the line of releases of one resource, evaluated one run per release. At a rank r
the precision of release k is certainly lower than that of release k-1 when the whole interval of
release k lies below the interval of release k-1: ``upper_k(r) < lower_{k-1}(r)`` ("down"), and
certainly higher in the reverse case ("up"). Overlapping intervals say nothing.

"Certain" is as certain as the bounds:

- the paper's deterministic bounds hold under assumptions A.1/A.2 alone, so a change between two
  of them is certain under those assumptions, however many releases are compared;
- confidence bounds hold with probability ``1 - delta`` each. A series is looked at again with every
  release, so the error budget is split over releases: release k (k = 1, 2, ...: its place in the
  series, recorded in its run's manifest when the run was made) gets ``delta_k = delta * 6 / (pi^2 k^2)``. The sum over all k is ``delta``, so by a
  union bound *every* release's bounds hold at every rank at once with probability at least
  ``1 - delta``, and then every "down" and "up" ever reported for the series is right — however
  many releases come and however often the history is read (the split does not depend on how
  many there will be, and a release's level never changes once it has its place).

Pure NumPy: the runs are read, and their bounds recomputed at ``delta_k``, by
``prdist.dataflow.history``.
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import check_confidence, check_int

__all__ = ["certain_changes", "default_ranks", "release_confidence"]


def release_confidence(confidence: float, k: int) -> float:
    """The confidence at which the k-th release of a series is bounded (1-based k).

    Parameters
    ----------
    confidence : float in (0, 1)
        The simultaneous confidence wanted for the whole series.
    k : int >= 1
        The release's place in the series.

    Returns
    -------
    float
        ``1 - (1 - confidence) * 6 / (pi^2 k^2)``.

    Examples
    --------
    >>> round(release_confidence(0.95, 1), 6)
    0.969604
    >>> round(sum(1 - release_confidence(0.95, k) for k in range(1, 100_000)), 6)
    0.05
    """
    check_confidence(confidence, owner="release_confidence")
    check_int(k, name="k", owner="release_confidence", low=1)
    return 1.0 - (1.0 - confidence) * 6.0 / (math.pi**2 * k * k)


def certain_changes(previous_lower, previous_upper, lower, upper) -> np.ndarray:
    """``"down"`` / ``"up"`` where the change from the previous release is certain, else ``""``.

    Parameters
    ----------
    previous_lower, previous_upper, lower, upper : array_like of float
        Precision bounds at the same ranks; NaN (a rank beyond one release's size) gives ``""``.

    Examples
    --------
    >>> certain_changes([0.8, 0.8, 0.8], [0.9, 0.9, 0.9], [0.6, 0.75, 0.95], [0.7, 0.85, 0.97]).tolist()
    ['down', '', 'up']
    """
    previous_lower, previous_upper, lower, upper = (
        np.asarray(a, dtype=np.float64) for a in (previous_lower, previous_upper, lower, upper)
    )
    out = np.full(np.broadcast(lower, upper).shape, "", dtype=object)
    out[upper < previous_lower] = "down"  # NaN compares False: no claim
    out[lower > previous_upper] = "up"
    return out


def default_ranks(cutoff_ranks, n: int) -> np.ndarray:
    """Ranks to follow across releases: the given cut-off ranks and the powers of ten up to ``n``.

    Examples
    --------
    >>> default_ranks([223, 0, 1018], 50_000).tolist()
    [10, 100, 223, 1000, 1018, 10000]
    """
    check_int(n, name="n", owner="default_ranks", low=1)
    powers = 10 ** np.arange(1, int(math.log10(n)) + 1, dtype=np.int64)
    cut = np.asarray([r for r in cutoff_ranks if 0 < r <= n], dtype=np.int64)
    return np.unique(np.concatenate((powers[powers <= n], cut)))
