"""Per-system sample moments of the draws, and the normal-approximation intervals built on them."""

from __future__ import annotations

import numpy as np
from scipy import stats

from prdist.errors import DataError
from prdist.importance.joint_sample import JointSample


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def _system_means_and_variances(sample: JointSample, values: np.ndarray, needed: np.ndarray,
                                *, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-system mean and unbiased variance of ``values`` (U, k) over each system's draws.

    Returns arrays (m, k); rows of systems without draws are 0. ``needed[j]`` says whether system
    j's variance enters a result: it then needs at least two draws.
    """
    n = sample.sizes
    short = needed & (n < 2)
    if short.any():
        j = int(np.flatnonzero(short)[0])
        raise DataError(
            f"{owner}: system {sample.systems[j]!r} has {int(n[j])} draw(s) but carries weight; "
            "its variance needs at least 2. Draw more from it or give it weight 0."
        )
    safe_n = np.maximum(n, 1)[:, None]
    means = (sample.counts.T @ values) / safe_n
    variances = np.zeros_like(means)
    for j in np.flatnonzero(n >= 2):
        # Centred sums: the raw-moment shortcut loses digits when values are large weights.
        variances[j] = sample.counts[:, j] @ (values - means[j]) ** 2 / (n[j] - 1)
    return means, variances


def _clipped(values: np.ndarray) -> np.ndarray:
    return np.clip(values, 0.0, 1.0)


def _normal_interval(estimate: str, variance: str) -> tuple[property, ...]:
    """The properties se, half width, low and high end of the interval estimate ± z·se clipped to
    [0, 1], for the attributes named ``estimate`` and ``variance`` of a class with ``confidence``."""

    def se(self) -> np.ndarray:
        return np.sqrt(getattr(self, variance))

    def half_width(self) -> np.ndarray:
        return _z(self.confidence) * se(self)

    def ci_low(self) -> np.ndarray:
        return _clipped(getattr(self, estimate) - half_width(self))

    def ci_high(self) -> np.ndarray:
        return _clipped(getattr(self, estimate) + half_width(self))

    return (property(se), property(half_width, doc="z·se: half the width of the (unclipped) interval."),
            property(ci_low), property(ci_high))
