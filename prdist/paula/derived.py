"""Curves derived from bounds on the yield: precision-yield, PR and ROC regions, average precision
bounds, and the deepest cut-off whose precision is guaranteed.

Everything here takes any object with ``n``, ``yield_lower(r)``, ``yield_upper(r)`` and
``evaluation_ranks()`` (the ranks where the bounds change character), so the deterministic PAULA
bounds and their confidence variant share it. Each derived bound holds whenever the yield bounds do.
"""

from __future__ import annotations

import numpy as np

from prdist._validation import check_float

__all__ = [
    "TARGETS",
    "average_precision_bounds",
    "deepest_rank",
    "pr_region",
    "pr_region_columns",
    "precision_yield_region",
    "roc_region",
]

#: The precision targets whose deepest guaranteed cut-off (:func:`deepest_rank`) a run and an
#: :class:`prdist.Evaluation` report, highest first.
TARGETS = (0.95, 0.9, 0.8, 0.7)


def _ranks_or_default(bounds, ranks) -> np.ndarray:
    if ranks is None:
        return bounds.evaluation_ranks()
    return np.asarray(ranks, dtype=np.int64)


def _total_yield(bounds) -> tuple[float, float]:
    lo, hi = bounds.yield_lower(bounds.n), bounds.yield_upper(bounds.n)
    return float(lo), float(hi)


def _frame(columns: dict):
    """``columns`` as the pandas DataFrame a user asked for (pandas loads here, not with the module)."""
    import pandas as pd

    return pd.DataFrame(columns)


def precision_yield_region(bounds, ranks=None):
    """Bounds on precision and yield at ``ranks`` (default: every rank where they change).

    Returns
    -------
    DataFrame with columns rank, yield_lower, yield_upper, precision_lower, precision_upper.
    """
    r = _ranks_or_default(bounds, ranks)
    ylo, yhi = bounds.yield_lower(r), bounds.yield_upper(r)
    return _frame(
        {"rank": r, "yield_lower": ylo, "yield_upper": yhi, "precision_lower": ylo / r, "precision_upper": yhi / r}
    )


def pr_region(bounds, ranks=None):
    """The region that holds the PR curve: recall = y(r)/y(n) and precision = y(r)/r bounded.

    recall = a/(a + b) with a = y(r) and b = y(n) - y(r), where 0 <= b <= n - r and
    a + b lies in [y_lo(n), y_hi(n)]; recall rises with a and falls with b, so
    recall(r) >= y_lo(r)/min(y_hi(n), y_lo(r) + n - r) and <= min(1, y_hi(r)/y_lo(n)).

    Returns
    -------
    DataFrame with columns rank, recall_lower, recall_upper, precision_lower, precision_upper
    (:func:`pr_region_columns`).
    """
    return _frame(pr_region_columns(bounds, ranks))


def pr_region_columns(bounds, ranks=None) -> dict[str, np.ndarray]:
    """The columns of :func:`pr_region`, as NumPy arrays."""
    r = _ranks_or_default(bounds, ranks)
    ylo, yhi = bounds.yield_lower(r), bounds.yield_upper(r)
    total_lo, total_hi = _total_yield(bounds)
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = np.minimum(total_hi, ylo + (bounds.n - r))
        recall_lo = np.where(denominator > 0, np.clip(ylo / denominator, 0.0, 1.0), 0.0)
        recall_hi = np.where(total_lo > 0, np.minimum(1.0, yhi / total_lo), 1.0)
    return {
        "rank": r,
        "recall_lower": recall_lo,
        "recall_upper": recall_hi,
        "precision_lower": ylo / r,
        "precision_upper": yhi / r,
    }


def roc_region(bounds, ranks=None):
    """The region that holds the ROC curve: TPR = y(r)/y(n), FPR = (r - y(r))/(n - y(n)).

    Returns
    -------
    DataFrame with columns rank, fpr_lower, fpr_upper, tpr_lower, tpr_upper.
    """
    r = _ranks_or_default(bounds, ranks)
    pr = pr_region_columns(bounds, r)
    ylo, yhi = pr["precision_lower"] * r, pr["precision_upper"] * r
    total_lo, total_hi = _total_yield(bounds)
    negatives_lo, negatives_hi = bounds.n - total_hi, bounds.n - total_lo
    with np.errstate(divide="ignore", invalid="ignore"):
        fpr_lo = np.where(negatives_hi > 0, (r - yhi) / negatives_hi, 0.0)
        fpr_hi = np.where(negatives_lo > 0, np.minimum(1.0, (r - ylo) / negatives_lo), 1.0)
    return _frame(
        {
            "rank": r,
            "fpr_lower": np.clip(fpr_lo, 0.0, 1.0),
            "fpr_upper": fpr_hi,
            "tpr_lower": pr["recall_lower"],
            "tpr_upper": pr["recall_upper"],
        }
    )


def average_precision_bounds(bounds) -> tuple[float, float]:
    """Bounds on average precision, AP = (1/y(n)) * sum over positives i of p(i).

    Cut the ranks at the evaluation points e_0 = 0 < e_1 < ... < e_K = n. A positive at rank i in
    (e_{k-1}, e_k] has precision p(i) between c_k = (y_lo(e_{k-1}) + 1)/e_k and
    d_k = y_hi(e_k)/(e_{k-1} + 1). With F_k = y(e_k)/y(n) the share of positives found by e_k,

        AP >= sum_k c_k (F_k - F_{k-1}) = c_K + sum_{k<K} (c_k - c_{k+1}) F_k,

    and each F_k is replaced by its lower or upper bound (y_lo(e_k)/y_hi(n), y_hi(e_k)/y_lo(n),
    made monotone) according to the sign of its coefficient; likewise for the upper bound with d.
    The same holds with c and d replaced by monotone envelopes (a running minimum of c, a running
    maximum from the right of d), whose coefficients never change sign; each bound is the
    tighter of the two. The bounds are exact when every label is known.

    Returns
    -------
    (lower, upper) : tuple of float
        The lower bound is 0 when the resource may hold no positive at all (AP of an empty
        ranking is taken as 0).

    Examples
    --------
    >>> from prdist import paula_bounds, plan_paula
    >>> plan = plan_paula(400, eps=0.03, window=100)        # exhaustive: every item labeled
    >>> b = paula_bounds(plan, np.r_[np.ones(100), np.zeros(300)])
    >>> average_precision_bounds(b)
    (1.0, 1.0)
    """
    e = bounds.evaluation_ranks()
    ylo, yhi = bounds.yield_lower(e), bounds.yield_upper(e)
    total_lo, total_hi = float(ylo[-1]), float(yhi[-1])
    if total_hi <= 0:
        return 0.0, 0.0
    before = np.concatenate(([0], e[:-1]))
    ylo_before = np.concatenate(([0.0], ylo[:-1]))
    c = np.minimum(1.0, (ylo_before + 1) / e)
    d = np.minimum(1.0, yhi / (before + 1))
    share_lo = np.maximum.accumulate(ylo / total_hi)
    if total_lo > 0:
        share_hi = np.minimum.accumulate(np.minimum(1.0, yhi / total_lo)[::-1])[::-1]
    else:
        share_hi = np.ones_like(yhi)
    share_lo, share_hi = share_lo[:-1], share_hi[:-1]  # F_K = 1

    def abel(values, falling_share, rising_share):
        coef = values[:-1] - values[1:]
        return float(values[-1] + np.sum(coef * np.where(coef >= 0, falling_share, rising_share)))

    # Two valid bounds, each tight where the other is loose: summation by parts is exact when the
    # shares are known but adds up every oscillation of c and d otherwise; monotone envelopes
    # (running minimum of c, running maximum from the right of d) never oscillate.
    c_env = np.minimum.accumulate(c)
    d_env = np.maximum.accumulate(d[::-1])[::-1]
    ap_lo = max(abel(c, share_lo, share_hi), abel(c_env, share_lo, share_hi)) if total_lo > 0 else 0.0
    ap_hi = min(abel(d, share_hi, share_lo), abel(d_env, share_hi, share_lo))
    return max(0.0, min(ap_lo, 1.0)), max(0.0, min(ap_hi, 1.0))


def deepest_rank(bounds, target: float) -> int:
    """The deepest rank whose precision is guaranteed to be at least ``target``.

    Scans every stretch between evaluation ranks: there the lower yield bound is either constant
    (then the deepest qualifying rank is floor(y_lo / target)) or grows by one per rank (then
    the lower precision bound rises and the stretch's last rank is the candidate).

    Parameters
    ----------
    bounds : PaulaBounds or compatible
    target : float in (0, 1]

    Returns
    -------
    int
        The rank, or 0 when no rank is guaranteed to reach the target.

    Examples
    --------
    >>> from prdist import paula_bounds, plan_paula
    >>> plan = plan_paula(400, eps=0.03, window=100)
    >>> b = paula_bounds(plan, np.r_[np.ones(100), np.zeros(300)])
    >>> deepest_rank(b, 0.5), deepest_rank(b, 0.25), deepest_rank(b, 0.2)
    (200, 400, 400)
    """
    target = check_float(target, name="target", owner="deepest_rank", low=0.0, high=1.0, low_open=True)
    e = bounds.evaluation_ranks()
    starts = np.concatenate(([1], e[:-1] + 1))
    gaps = starts < e  # stretches (e_{k-1}, e_k) with ranks strictly inside
    inner_start, inner_end = starts[gaps], e[gaps] - 1
    candidates = [e, inner_end]
    if inner_start.size:
        ylo_start = bounds.yield_lower(inner_start)
        flat = np.floor(ylo_start / target + 1e-9).astype(np.int64)
        candidates.append(np.clip(flat, inner_start, inner_end))
    r = np.concatenate(candidates)  # repeats change no maximum (np.unique cost 4x the rest here)
    r = r[(r >= 1) & (r <= bounds.n)]
    ok = bounds.yield_lower(r) >= target * r - 1e-9 * r
    return int(r[ok].max()) if ok.any() else 0

