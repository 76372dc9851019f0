"""The joint importance-sampling estimator of every system's precision (appendix B.1, Theorem 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prdist._validation import check_confidence
from prdist.importance.joint_sample import JointSample, _check_sample, _require_labels
from prdist.importance.moments import _normal_interval, _system_means_and_variances
from prdist.importance.weights import OVERLAP, _resolve_weights


@dataclass(frozen=True, eq=False)
class PrecisionEstimate:
    """Joint and simple precision estimates of every system, with normal-approximation intervals.

    ``precision``/``variance`` are the joint estimator and its unbiased variance estimate;
    ``simple_*`` the mean label of the system's own draws (NaN without draws) and its unbiased
    variance (NaN with fewer than two draws). Intervals are π̂ ± z·se clipped to [0, 1].
    """

    systems: tuple[str, ...]
    precision: np.ndarray
    variance: np.ndarray
    simple_precision: np.ndarray
    simple_variance: np.ndarray
    n_samples: np.ndarray
    weights: np.ndarray
    confidence: float

    se, half_width, ci_low, ci_high = _normal_interval("precision", "variance")
    simple_se, simple_half_width, simple_ci_low, simple_ci_high = _normal_interval(
        "simple_precision", "simple_variance")

    def to_frame(self) -> pd.DataFrame:
        """One row per system; the columns of compare.parquet that concern precision, plus the
        simple estimator's."""
        return pd.DataFrame(
            {
                "system": list(self.systems),
                "precision": self.precision,
                "precision_se": self.se,
                "precision_ci_low": self.ci_low,
                "precision_ci_high": self.ci_high,
                "n_samples": self.n_samples,
                "simple_precision": self.simple_precision,
                "simple_precision_se": self.simple_se,
                "simple_ci_low": self.simple_ci_low,
                "simple_ci_high": self.simple_ci_high,
            }
        )


def estimate_precision(sample: JointSample, *, weights=OVERLAP, confidence=0.95) -> PrecisionEstimate:
    """Estimate every system's precision jointly from all systems' labeled draws.

    π̂_i = Σ_j (w_ij / n_j) Σ_{x ∈ X̂_j} p_i(x) f(x) / q_i(x) with q_i = Σ_j w_ij p_j
    (Chaganty et al. 2017, appendix B.1), unbiased for π_i = E_{x~p_i}[f(x)]; its variance
    (Theorem 1) Σ_j (w_ij² / n_j) Var_{p_j}[p_i f / q_i] is estimated without bias from the
    per-system sample variances (ddof = 1).

    Parameters
    ----------
    sample : JointSample
        Every drawn item must be labeled (else :class:`~prdist.errors.AwaitingLabels`).
    weights : {"overlap", "balance"} or array-like of shape (m, m), default="overlap"
        Mixture weights; see :func:`mixture_weights`. A matrix must be non-negative with rows
        summing to one, give no weight to systems without draws, and keep q_i > 0 wherever
        p_i > 0 (an error names the system otherwise).
    confidence : float, default=0.95
        Level of the normal-approximation intervals, in (0, 1).

    Returns
    -------
    PrecisionEstimate

    Examples
    --------
    >>> from prdist.importance import SystemOutput
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> sample = JointSample.from_draws([a, b], [["x", "y", "y", "x"], ["z", "y", "z"]])
    >>> sample = sample.with_labels(["x", "y", "z"], [1, 0, 1])
    >>> est = estimate_precision(sample)
    >>> est.precision.round(4).tolist(), est.simple_precision.round(4).tolist()
    ([0.5, 0.6667], [0.5, 0.6667])
    """
    owner = "estimate_precision"
    _check_sample(sample, owner=owner)
    confidence = check_confidence(confidence, owner=owner)
    w = _resolve_weights(sample, weights, owner=owner)
    f = _require_labels(sample, owner=owner)
    p = sample.probabilities
    q = p @ w.T  # q[x, i] = Σ_j w_ij p_j(x)
    inside = p > 0
    # The weight check guarantees q > 0 wherever p > 0 on the full outputs, hence on the draws.
    h = np.zeros_like(p)
    h[inside] = (p * f[:, None])[inside] / q[inside]
    means, variances = _system_means_and_variances(sample, h, (w > 0).any(axis=0), owner=owner)
    n = sample.sizes
    safe_n = np.maximum(n, 1)
    precision = (w * means.T).sum(axis=1)
    variance = (w**2 / safe_n * variances.T).sum(axis=1)

    own_means, own_vars = _system_means_and_variances(sample, f[:, None], np.zeros(n.size, bool),
                                                      owner=owner)
    simple_precision = np.where(n > 0, own_means[:, 0], np.nan)
    simple_variance = np.where(n > 1, own_vars[:, 0] / safe_n, np.nan)
    return PrecisionEstimate(
        systems=sample.systems,
        precision=precision,
        variance=variance,
        simple_precision=simple_precision,
        simple_variance=simple_variance,
        n_samples=n,
        weights=w,
        confidence=confidence,
    )
