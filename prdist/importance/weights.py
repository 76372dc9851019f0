"""The mixture weights w_ij of the joint estimators: the default schemes, the checks of a matrix."""

from __future__ import annotations

import numpy as np

from prdist._validation import check_choice
from prdist.errors import DataError, ParameterError
from prdist.importance.joint_sample import JointSample
from prdist.importance.systems import _SUM_TOLERANCE
from prdist.params import WEIGHTS

OVERLAP, BALANCE = "overlap", "balance"
_SCHEMES = (OVERLAP, BALANCE)


def mixture_weights(sample: JointSample, scheme: str = OVERLAP) -> np.ndarray:
    """Return the default mixture weights w_ij, shape (m, m), rows summing to one.

    ``"overlap"`` (default; the authors' heuristic): w_ij ∝ n_j <p_i, p_j>.
    ``"balance"`` (Veach's balance heuristic): w_ij ∝ n_j.

    >>> from prdist.importance import SystemOutput
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a, b], [["x", "y"], ["z"] * 6])
    >>> mixture_weights(sample).round(3).tolist()
    [[0.4, 0.6], [0.143, 0.857]]
    >>> mixture_weights(sample, "balance").tolist()
    [[0.25, 0.75], [0.25, 0.75]]
    """
    owner = "mixture_weights"
    check_choice(scheme, name="scheme", owner=owner, choices=_SCHEMES)
    n = sample.sizes.astype(np.float64)
    raw = n * sample.overlaps if scheme == OVERLAP else np.tile(n, (n.size, 1))
    totals = raw.sum(axis=1)
    if (totals <= 0).any():
        i = int(np.flatnonzero(totals <= 0)[0])
        raise DataError(
            f"{owner}: no system with draws shares any item with system "
            f"{sample.systems[i]!r}, so its precision cannot be estimated. Draw from it."
        )
    return raw / totals[:, None]


def _resolve_weights(sample: JointSample, weights, *, owner: str) -> np.ndarray:
    """Return validated (m, m) weights: a scheme name or a user matrix."""
    m = len(sample.systems)
    if isinstance(weights, str):
        WEIGHTS.check(weights, owner=owner)
        w = mixture_weights(sample, weights)
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            w = None
        if w is None or w.shape != (m, m) or not np.isfinite(w).all() or (w < 0).any():
            raise ParameterError(
                f"The 'weights' parameter of {owner} must be 'overlap', 'balance' or a finite, "
                f"non-negative ({m}, {m}) matrix. Got {weights!r} instead."
            )
        bad_rows = np.flatnonzero(np.abs(w.sum(axis=1) - 1.0) > _SUM_TOLERANCE)
        if bad_rows.size:
            i = int(bad_rows[0])
            raise ParameterError(
                f"The 'weights' parameter of {owner} must have rows summing to 1; the row of "
                f"system {sample.systems[i]!r} sums to {w[i].sum()!r}."
            )
    empty = sample.sizes == 0
    if (w[:, empty] > 0).any():
        i, j = np.argwhere(w[:, empty] > 0)[0]
        raise ParameterError(
            f"The 'weights' parameter of {owner} gives system "
            f"{sample.systems[int(np.flatnonzero(empty)[j])]!r} weight in the mixture of "
            f"{sample.systems[i]!r}, but it has no draws. Give systems without draws weight 0."
        )
    # q_i > 0 wherever p_i > 0 <=> every support pattern containing i meets a weighted system.
    patterns = sample.support_patterns
    reach = patterns.astype(np.float64) @ w.T  # (K, m): q_i > 0 on items of that pattern
    uncovered = patterns & (reach <= 0)
    if uncovered.any():
        k, i = np.argwhere(uncovered)[0]
        holders = [sample.systems[j] for j in np.flatnonzero(patterns[k])]
        raise ParameterError(
            f"The mixture q of system {sample.systems[i]!r} is zero on items that only "
            f"{holders} output, so its estimate would be biased. Give one of these systems "
            "positive weight (and draws)."
        )
    return w
