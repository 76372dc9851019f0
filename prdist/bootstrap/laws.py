"""The laws a bootstrap replicate draws one class's scores from (:mod:`prdist.bootstrap.replicates`).

An unsmoothed resample draws from the class's empirical distribution (:class:`EmpiricalLaw`,
exact); a smoothed one from that distribution convolved with N(0, h^2) (:class:`SmoothedLaw`), a
table built once in O(n + nodes) whose error bound keeps every expected count of a replicate
within a thousandth of an item. A :class:`LawSource` is what a law is tabulated from: the lighter
thing to ship to the worker that tabulates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft, special

__all__ = ["EmpiricalLaw", "LawSource", "SmoothedLaw"]

#: Smoothed class laws are tabulated finely enough that n times their error bound is at most
#: this many items (see SmoothedLaw) ...
_COUNT_ERROR = 1e-3
#: ... on at most this many nodes (8 MB per array).
_MAX_TABLE_NODES = 1 << 20
#: The Gaussian kernel is cut at this many bandwidths: Phi(-9) = 1e-19.
_KERNEL_REACH = 9.0
#: phi(1) = max |z phi(z)|, the largest slope of the standard normal density.
_PHI_AT_ONE = math.exp(-0.5) / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True, eq=False)
class EmpiricalLaw:
    """The empirical distribution of one class's scores: what an unsmoothed resample draws from.

    Attributes
    ----------
    values : ndarray of shape (m,)
        The distinct scores, increasing.
    cumulative : ndarray of shape (m + 1,)
        0, then F(values[i]), the fraction of the scores <= values[i] (the last is 1).

    Examples
    --------
    >>> law = EmpiricalLaw.fit(np.array([1.0, 2.0, 2.0, 5.0]))
    >>> law.quantile(np.array([0.2, 0.25, 0.5, 0.9])).tolist()
    [1.0, 1.0, 2.0, 5.0]
    >>> law.cdf(np.array([0.0, 2.0, 4.9])).tolist()
    [0.0, 0.75, 0.75]
    """

    values: np.ndarray
    cumulative: np.ndarray

    @classmethod
    def fit(cls, sorted_scores: np.ndarray) -> EmpiricalLaw:
        values, counts = np.unique(sorted_scores, return_counts=True)
        return cls(values, np.r_[0.0, np.cumsum(counts) / sorted_scores.size])

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """F^-1(u) = min{x : F(x) >= u}, elementwise, for u in (0, 1)."""
        index = np.searchsorted(self.cumulative[1:], u, side="left")
        return self.values[np.minimum(index, self.values.size - 1)]

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """F(t), the fraction of the scores <= t, elementwise."""
        return self.cumulative[np.searchsorted(self.values, t, side="right")]


@dataclass(frozen=True, eq=False)
class SmoothedLaw:
    """One class's scores convolved with N(0, h^2), tabulated: what a smoothed resample draws from.

    The law of a draw with replacement plus N(0, h^2) noise has the cdf
    F(x) = mean_j Phi((x - x_j) / h). It is tabulated at nodes spaced step = h / R and read by
    linear interpolation (:meth:`cdf`, and :meth:`quantile`, the inverse of that interpolant).

    **Error bound.** The table is built in O(m + nodes) by linear binning of the scores onto the
    nodes and one FFT convolution with the kernel's cdf increments. Linear binning replaces each
    x_j's term Phi((x - x_j)/h) by its linear interpolation between the two nodes around x_j,
    which errs by at most step^2/8 times max |d^2/dy^2 Phi((x - y)/h)| = phi(1)/h^2; reading the
    table between nodes errs by at most step^2/8 max |F''| <= step^2/8 phi(1)/h^2 again. So
    |F_table(x) - F(x)| <= ``error_bound`` = phi(1) / (4 R^2) for every x (plus float rounding,
    ~1e-13, and the kernel's cut at 9h, 1e-19). In a replicate this means: each threshold is the
    exact quantile F+^-1(u') of a uniform order statistic moved by |u' - u| <= error_bound, and
    each cumulative probability of the negatives is moved by at most error_bound, so the
    expected count of items behind every point of the curve moves by at most n error_bound.
    R is chosen so that n error_bound <= 0.001 (a thousandth of an item, against counts whose
    standard deviations are about an item or more wherever the curve is not flat): drawn with
    the same random numbers as from the exact cdf, a replicate's counts then almost never differ
    by even one item, and the bands differ by far less than 1 % of their width
    (tests/unit/test_bootstrap.py checks both against the exact cdf). Tables hold at most 2^20 nodes,
    which caps R for very large samples (at n = 10^6, n error_bound = 0.002); if scores spread
    over so many bandwidths that the cap leaves n error_bound > 1, :func:`prdist.bootstrap_bands` warns.

    Examples
    --------
    >>> law = SmoothedLaw.fit(np.array([0.0]), 1.0, total_items=100)   # one score: N(0, 1)
    >>> float(abs(law.cdf(np.array([1.0]))[0] - 0.8413447)) < law.error_bound + 1e-7
    True
    >>> round(float(law.quantile(np.array([0.975]))[0]), 3)
    1.96
    """

    nodes: np.ndarray
    step: float
    cumulative: np.ndarray
    error_bound: float

    @classmethod
    def fit(cls, sorted_scores: np.ndarray, bandwidth: float, *, total_items: int) -> SmoothedLaw:
        """Tabulate the smoothed law of ``sorted_scores`` for a bootstrap of ``total_items``."""
        lowest, highest = float(sorted_scores[0]), float(sorted_scores[-1])
        per_bandwidth = _nodes_per_bandwidth(lowest, highest, bandwidth, total_items)
        step = bandwidth / per_bandwidth
        reach = math.ceil(_KERNEL_REACH * per_bandwidth)
        start = lowest - (reach + 1) * step
        size = int((highest - start) / step) + reach + 3
        # Linear binning: the mass of each score split between its two neighbouring nodes.
        position = (sorted_scores - start) / step
        left = position.astype(np.int64)
        right_share = position - left
        mass = np.bincount(left, 1.0 - right_share, size) + np.bincount(left + 1, right_share, size)
        # F at node i = sum_l mass_l Phi((i - l) / R): the cumulative sum of the convolution
        # with the kernel's cdf increments over offsets -reach .. reach + 1 (Phi := 1 beyond).
        kernel_cdf = np.r_[special.ndtr(np.arange(-reach, reach + 1) / per_bandwidth), 1.0]
        increments = np.diff(kernel_cdf, prepend=0.0)
        cdf = np.cumsum(_convolved(mass, increments))[reach : reach + size]
        # FFT rounding (~1e-13) must not break the monotonicity the inverse relies on.
        cdf = np.clip(np.maximum.accumulate(cdf / sorted_scores.size), 0.0, 1.0)
        return _smoothed_law(start, step, cdf, _PHI_AT_ONE / (4.0 * per_bandwidth**2))

    def __reduce__(self):
        # The nodes are evenly spaced: a pickle (what a cluster ships to every worker) carries
        # the first node and the step, not the array, and the copy rebuilds the same bits.
        return _smoothed_law, (float(self.nodes[0]), self.step, self.cumulative, self.error_bound)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """F^-1(u) of the tabulated cdf, elementwise, for u in (0, 1)."""
        return np.interp(u, self.cumulative, self.nodes)

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """F(t), elementwise: the interpolation of ``np.interp``, its node found in O(1)."""
        position = np.clip((t - self.nodes[0]) / self.step, 0.0, self.nodes.size - 1.0)
        left = np.minimum(position.astype(np.int64), self.nodes.size - 2)
        below = self.cumulative[left]
        return below + (position - left) * (self.cumulative[left + 1] - below)


def _convolved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The full linear convolution of two real 1-d arrays through real FFTs.

    What ``scipy.signal.fftconvolve(a, b)`` computes, the same way, without importing
    ``scipy.signal`` (about 0.5 s: the first ``prdist.bootstrap_bands`` call would pay for it).

    >>> _convolved(np.array([1.0, 2.0]), np.array([1.0, 1.0, 1.0])).round(12).tolist()
    [1.0, 3.0, 3.0, 2.0]
    """
    size = a.size + b.size - 1
    length = fft.next_fast_len(size, real=True)
    return fft.irfft(fft.rfft(a, length) * fft.rfft(b, length), length)[:size]


def _nodes_per_bandwidth(lowest: float, highest: float, bandwidth: float, total_items: int):
    """The table resolution R of :class:`SmoothedLaw` (nodes per bandwidth)."""
    spread = (highest - lowest) / bandwidth + 2.0 * (_KERNEL_REACH + 1.0)  # in bandwidths
    per_bandwidth = math.ceil(math.sqrt(_PHI_AT_ONE * total_items / (4.0 * _COUNT_ERROR)))
    # Capped by the table size: for scores spread over more than 2^20 bandwidths, R < 1.
    return min(per_bandwidth, _MAX_TABLE_NODES / spread)


def _smoothed_law(start: float, step: float, cumulative: np.ndarray, error_bound: float):
    """The :class:`SmoothedLaw` with nodes ``start + step * i`` (how it is built and unpickled)."""
    return SmoothedLaw(start + step * np.arange(cumulative.size), step, cumulative, error_bound)


@dataclass(frozen=True, eq=False)
class LawSource:
    """What one class's resampling law is tabulated from: its sorted scores, h and n.

    A :class:`~prdist.bootstrap.batches.BootstrapSetup` holds the two sources until :func:`~prdist.bootstrap.batches.tabulate_laws`. They are the
    lighter thing to ship (8 bytes per item; at n = 10^6 half the bytes of the smoothed tables),
    so a cluster sends each to one worker and tabulates the two laws there side by side
    (:mod:`prdist.dataflow.run.bands`).

    Attributes
    ----------
    sorted_scores : ndarray of shape (m,)
        The class's scores, increasing.
    bandwidth : float
        Smoothing bandwidth h: a :class:`SmoothedLaw` if > 0, else the :class:`EmpiricalLaw`.
    total_items : int
        Size n of the bootstrap samples: it sets the smoothed table's resolution.
    """

    sorted_scores: np.ndarray
    bandwidth: float
    total_items: int

    def tabulate(self) -> EmpiricalLaw | SmoothedLaw:
        """The law (the same bits wherever it is tabulated)."""
        if self.bandwidth > 0.0:
            return SmoothedLaw.fit(self.sorted_scores, self.bandwidth, total_items=self.total_items)
        return EmpiricalLaw.fit(self.sorted_scores)

    @property
    def error_bound(self) -> float:
        """The tabulated cdf's error bound (:class:`SmoothedLaw`), known before tabulating."""
        if self.bandwidth == 0.0:
            return 0.0
        lowest, highest = float(self.sorted_scores[0]), float(self.sorted_scores[-1])
        per_bandwidth = _nodes_per_bandwidth(lowest, highest, self.bandwidth, self.total_items)
        return _PHI_AT_ONE / (4.0 * per_bandwidth**2)
