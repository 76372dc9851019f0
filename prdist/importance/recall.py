"""Every system's recall: pool recall times pooled recall (appendix B.2, Lemma 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prdist._validation import check_choice, check_confidence
from prdist.errors import DataError, ParameterError
from prdist.ranking import as_key_array
from prdist.importance.joint_sample import JointSample, _check_sample, _require_labels
from prdist.importance.moments import _normal_interval, _system_means_and_variances
from prdist.importance.systems import _SUM_TOLERANCE, _check_systems
from prdist.importance.weights import BALANCE, _resolve_weights


def pool_membership(keys, systems) -> np.ndarray:
    """Return, for every key, whether it is in the pool: the support of some system.

    >>> from prdist.importance import SystemOutput
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> pool_membership(["y", "q"], [a]).tolist()
    [True, False]
    """
    systems = _check_systems(systems, owner="pool_membership")
    keys = as_key_array(keys)
    return np.logical_or.reduce([s.probability_of(keys) > 0 for s in systems])


@dataclass(frozen=True, eq=False)
class RecallEstimate:
    """Recall r̂_i = θ̂ ν̂_i of every system with its plug-in variance (Lemma 1).

    ``pooled_recall`` ν̂_i: the share of the pool's correct items that system i outputs
    (self-normalised importance sampling; delta-method variance). ``pool_recall`` θ̂: the share of
    the exhaustively found correct items that the pool holds (binomial variance, ddof = 1).
    """

    systems: tuple[str, ...]
    recall: np.ndarray
    variance: np.ndarray
    pooled_recall: np.ndarray
    pooled_recall_variance: np.ndarray
    pool_recall: float
    pool_recall_variance: float
    n_exhaustive: int
    pool_weights: np.ndarray
    confidence: float

    se, half_width, ci_low, ci_high = _normal_interval("recall", "variance")

    def to_frame(self) -> pd.DataFrame:
        """One row per system: system, recall, recall_se, recall_ci_low, recall_ci_high,
        pooled_recall, pooled_recall_se."""
        return pd.DataFrame(
            {
                "system": list(self.systems),
                "recall": self.recall,
                "recall_se": self.se,
                "recall_ci_low": self.ci_low,
                "recall_ci_high": self.ci_high,
                "pooled_recall": self.pooled_recall,
                "pooled_recall_se": np.sqrt(self.pooled_recall_variance),
            }
        )


def estimate_recall(sample: JointSample, *, exhaustive_in_pool, weights=BALANCE,
                    confidence=0.95) -> RecallEstimate:
    """Estimate every system's recall as pool recall times pooled recall (appendix B.2).

    ν̂_i = Σ_j (w_j/n_j) Σ_{x ∈ Ŷ_j} g_i(x)/q(x) / Σ_j (w_j/n_j) Σ_{x ∈ Ŷ_j} 1/q(x), with
    q = Σ_j w_j p_j one mixture for the whole pool, Ŷ_j the correct draws of system j and
    g_i(x) = 1[p_i(x) > 0]: every correct pool item counts once (p_0 uniform).
    θ̂ = mean of ``exhaustive_in_pool``; r̂_i = θ̂ ν̂_i with
    Var r̂_i = Var θ̂ Var ν̂_i + θ̂² Var ν̂_i + ν̂_i² Var θ̂ (Lemma 1, plug-in; Theorem 3 of the
    appendix drops the squares). ν̂_i and r̂_i are consistent, not unbiased (a ratio).

    Parameters
    ----------
    sample : JointSample
        Every drawn item must be labeled.
    exhaustive_in_pool : array-like of bool, shape (n_0,)
        For each correct item of an exhaustive sample Ŷ_0 (say, every correct fact of some
        sentences, found whether or not a system output it), whether the pool holds it
        (:func:`pool_membership`). n_0 >= 2.
    weights : "balance" or array-like of shape (m,), default="balance"
        Pool mixture weights w_j: ``"balance"`` is w_j ∝ n_j; a vector must be non-negative, sum
        to one, give no weight to systems without draws and keep q > 0 on the whole pool.
    confidence : float, default=0.95

    Returns
    -------
    RecallEstimate
        Each system's recall, its two factors and their variances, with normal intervals.

    Examples
    --------
    >>> from prdist.importance import SystemOutput
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a, b], [["x", "y", "y", "x"], ["z", "y", "z"]])
    >>> sample = sample.with_labels(["x", "y", "z"], [1, 0, 1])
    >>> est = estimate_recall(sample, exhaustive_in_pool=[True, True, True, False])
    >>> est.pooled_recall.round(4).tolist(), est.pool_recall
    ([0.4286, 0.5714], 0.75)
    """
    owner = "estimate_recall"
    _check_sample(sample, owner=owner)
    confidence = check_confidence(confidence, owner=owner)
    in_pool = np.asarray(exhaustive_in_pool)
    if in_pool.ndim != 1 or in_pool.size < 2 or in_pool.dtype != bool:
        raise DataError(
            f"The 'exhaustive_in_pool' argument of {owner} must be a 1-d boolean array of at "
            f"least 2 items (one per exhaustively found correct item). Got dtype {in_pool.dtype} "
            f"and shape {in_pool.shape}."
        )
    m = len(sample.systems)
    n = sample.sizes
    if n.sum() == 0:
        raise DataError(f"{owner}: the sample has no draws. Draw from the systems first.")
    if isinstance(weights, str):
        check_choice(weights, name="weights", owner=owner, choices=(BALANCE,))
        w = n / n.sum()
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            w = np.full(m + 1, np.nan)  # fails the check below with the one message
        valid = w.shape == (m,) and np.isfinite(w).all() and (w >= 0).all()
        if not valid or abs(w.sum() - 1) > _SUM_TOLERANCE:
            raise ParameterError(
                f"The 'weights' parameter of {owner} must be 'balance' or {m} non-negative "
                f"weights summing to 1. Got {weights!r} instead."
            )
    # One pool mixture: reuse the matrix check with every row equal to w.
    w = _resolve_weights(sample, np.tile(w, (m, 1)), owner=owner)[0]
    f = _require_labels(sample, owner=owner)
    # The weight check keeps q > 0 on the whole pool, hence on every drawn item.
    b = f / (sample.probabilities @ w)
    a = b[:, None] * (sample.probabilities > 0)
    # Numerator (m columns) and denominator (last column) share the per-system draws.
    values = np.column_stack([a, b])
    means, _ = _system_means_and_variances(sample, values, np.zeros(m, bool), owner=owner)
    totals = w @ means
    denominator = totals[-1]
    if denominator <= 0:
        raise DataError(
            f"{owner}: no correct item among the draws, so the pool's correct items cannot be "
            "weighed. Draw and label more items."
        )
    nu = totals[:-1] / denominator
    # Delta method: ν̂ - ν ≈ Σ_j (w_j/n_j) Σ (a - ν b) / B.
    residual = a - nu * b[:, None]
    _, res_vars = _system_means_and_variances(sample, residual, w > 0, owner=owner)
    nu_var = (w**2 / np.maximum(n, 1)) @ res_vars / denominator**2

    n0 = in_pool.size
    theta = float(in_pool.mean())
    theta_var = theta * (1.0 - theta) / (n0 - 1)
    recall = theta * nu
    variance = theta_var * nu_var + theta**2 * nu_var + nu**2 * theta_var
    return RecallEstimate(
        systems=sample.systems,
        recall=recall,
        variance=variance,
        pooled_recall=nu,
        pooled_recall_variance=nu_var,
        pool_recall=theta,
        pool_recall_variance=theta_var,
        n_exhaustive=n0,
        pool_weights=w,
        confidence=confidence,
    )
