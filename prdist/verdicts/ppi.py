"""PPI++ for one mean: the textbook prediction-powered interval, checked against ppi-python.

:mod:`prdist.verdicts.known_quality` builds its bounds from the same estimate, stratified and
for many cut-offs at once; this is its single-cut-off, i.i.d. building block.
"""

from __future__ import annotations

import math

import numpy as np

from prdist._validation import check_confidence
from prdist.errors import DataError
from prdist.verdicts.known_quality import _normal_quantile

__all__ = ["ppi_mean_interval"]


def ppi_mean_interval(y, yhat_labeled, yhat_unlabeled, *, confidence) -> tuple[float, float]:
    """PPI++ (power-tuned) confidence interval for a mean, from i.i.d. labeled and unlabeled data.

    With n labeled pairs (y_i, ŷ_i) and N unlabeled predictions ŷ'_j, the estimate is
    θ̂(λ) = mean(λ ŷ') + mean(y - λ ŷ) and the interval θ̂ ± z sqrt(var(λ ŷ')/N + var(y - λ ŷ)/n)
    (population variances), z the two-sided normal quantile. λ is tuned as in Angelopoulos,
    Duchi and Zrnic (PPI++, 2023): λ = 2 cov(y, ŷ) / (2 (1 + n/N) var(ŷ ∪ ŷ')), cov the
    population covariance of the labeled pairs, var the sample variance (ddof 1) of all n + N
    predictions, clipped to [0, 1] - the formula of ppi-python 0.2.3's ``ppi_mean_ci``
    (``lam=None``), which this function matches.

    Parameters
    ----------
    y : array-like of float, shape (n,)
    yhat_labeled : array-like of float, shape (n,)
    yhat_unlabeled : array-like of float, shape (N,)
    confidence : float in (0, 1)

    Returns
    -------
    (low, high) : tuple of float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(10_000) < 0.7
    >>> guess = np.where(rng.random(10_000) < 0.9, truth, ~truth).astype(float)
    >>> low, high = ppi_mean_interval(truth[:500], guess[:500], guess[500:], confidence=0.9)
    >>> round(low, 3), round(high, 3)
    (0.644, 0.686)
    """
    owner = "ppi_mean_interval"
    confidence = check_confidence(confidence, owner=owner)
    arrays = [np.asarray(a, dtype=np.float64) for a in (y, yhat_labeled, yhat_unlabeled)]
    y, yhat, yhat_u = arrays
    if any(a.ndim != 1 or a.size < 2 or not np.all(np.isfinite(a)) for a in arrays) or y.size != yhat.size:
        raise DataError(
            f"{owner} needs finite one-dimensional y and yhat_labeled of the same length (>= 2) and yhat_unlabeled "
            f"(>= 2 values); got sizes {y.size}, {yhat.size}, {yhat_u.size}."
        )
    n, N = y.size, yhat_u.size
    centre = yhat_u.mean() + (y - yhat).mean()  # θ̂(1)
    grads, grads_hat = y - centre, yhat - centre
    cross = 2.0 * np.mean((grads - grads.mean()) * (grads_hat - grads_hat.mean()))
    var_hat = np.var(np.concatenate((grads_hat, yhat_u - centre)), ddof=1)
    lam = float(np.clip(cross / (2 * (1 + n / N) * var_hat), 0.0, 1.0)) if var_hat > 0 else 0.0
    estimate = lam * yhat_u.mean() + (y - lam * yhat).mean()
    se = math.sqrt(np.var(lam * yhat_u) / N + np.var(y - lam * yhat) / n)
    z = _normal_quantile(1.0 - (1.0 - confidence) / 2)
    return float(estimate - z * se), float(estimate + z * se)
