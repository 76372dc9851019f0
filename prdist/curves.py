"""Empirical precision-recall curves: the functional estimator and the classic point set.

The functional empirical PR curve (Clémençon & Vayatis 2009, Eq. 3; Hughes-Oliver, section 3.1)
reads precision as a function of recall,

    PR^(beta) = p^ beta / (p^ beta + (1 - p^) alpha^(beta)),
    alpha^(beta) = 1 - H^(G^-1(1 - beta)),

where G^ and H^ are the empirical cdfs of the positive and negative scores, G^-1 is the
generalised (left-continuous) inverse G^-1(u) = inf{x : G^(x) >= u} and p^ = n+/n. With
t = G^-1(1 - beta), 1 - H^(t) counts the negatives *strictly above* t, so negatives tied with the
threshold count as below it. The curve is defined at every recall level, needs no interpolation
and is strongly consistent for continuous score distributions.

With n+ positives sorted as x_(1) <= ... <= x_(n+), the curve is a step pattern in beta: for
beta in [(k-1)/n+, k/n+) the threshold is the k-th largest positive score, the precision rises
linearly in beta, and it drops at beta = k/n+ when the threshold moves to the next positive.

**Tied scores.** Where the positive scores have atoms (discrete or heavily rounded scores) the
functional curve is *not consistent*: G^-1(1 - beta) converges to G^-1(1 - beta) only where G is
continuous there (Hughes-Oliver, section 3.2, Case F), so at recall levels inside a tie group
the estimate keeps jumping between two values however large the sample. :class:`EmpiricalPR`
emits a :class:`TiedScoresWarning` when many positive scores are tied; :func:`exact_pr_points`
gives the classic (recall, precision) pairs at every distinct threshold, which are exact for any
score distribution.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from prdist._validation import as_label_array
from prdist.errors import DataError, ParameterError

__all__ = [
    "EmpiricalPR",
    "PRPoints",
    "TiedScoresWarning",
    "TIED_POSITIVES_WARNING_FRACTION",
    "empirical_pr",
    "exact_pr_points",
]

#: :class:`EmpiricalPR` warns when more than this fraction of the positive scores share their
#: value with another positive. Float64 scores from a continuous distribution essentially never
#: tie; float32 scores tie by chance for a fraction of about n+ / 2^24 of them, which stays below
#: this level up to about a million positives.
TIED_POSITIVES_WARNING_FRACTION = 0.1

# Products beta * n within this many units in the last place of an integer are taken to be that
# integer: recall 0.7 with 10 positives means 7 positives, although 0.7 is stored as
# 0.69999999999999996 and the exact product is below 7.
_SNAP_ULPS = 8


class TiedScoresWarning(UserWarning):
    """Many positive scores are tied: the functional empirical PR curve is then inconsistent.

    At recall levels that fall inside a group of tied positive scores the functional curve
    depends on which side of the group's cumulative mass the recall lies, and it does not converge
    to the population curve as the sample grows (Hughes-Oliver, section 3.2). Prefer
    :func:`exact_pr_points` for discrete scores, or report the curve only at recall levels that
    are achievable thresholds.
    """


@dataclass(frozen=True, eq=False)
class PRPoints:
    """The classic empirical PR points, one per distinct score threshold.

    Rows are ordered by decreasing threshold (increasing recall). Item i is predicted positive
    at threshold t when ``score_i >= t``, ties included.

    Attributes
    ----------
    threshold : ndarray of shape (n_thresholds,)
        Distinct scores, decreasing.
    true_positives, false_positives : ndarray of shape (n_thresholds,), int64
        Positives and negatives with score >= threshold.
    recall, precision : ndarray of shape (n_thresholds,), float64
        ``true_positives / n_positive`` and ``true_positives / (true_positives + false_positives)``.
    """

    threshold: np.ndarray
    true_positives: np.ndarray
    false_positives: np.ndarray
    recall: np.ndarray
    precision: np.ndarray


@dataclass(frozen=True, eq=False)
class EmpiricalPR:
    """The functional empirical PR curve of one labeled sample, ready to evaluate at any recall.

    Build it with :meth:`fit` (scores and 0/1 labels) or :meth:`from_class_scores` (the two
    classes' scores). Fitting sorts once, O(n log n); every evaluation then costs O(1) per recall
    level, so a bootstrap can fit each replicate once and evaluate it on a whole recall grid.

    Attributes
    ----------
    positive_scores : ndarray of shape (n_positive,)
        Positive scores sorted increasingly (read-only).
    negative_scores : ndarray of shape (n_negative,)
        Negative scores sorted increasingly (read-only).
    false_positives : ndarray of shape (n_positive,), int64
        ``false_positives[j]`` is the number of negatives strictly above ``positive_scores[j]``:
        the false positives when that score is the threshold.
    tied_fraction : float
        Fraction of positive scores that share their value with another positive.

    Examples
    --------
    >>> curve = EmpiricalPR.fit([0.9, 0.8, 0.7, 0.6, 0.5], [1, 0, 1, 1, 0])
    >>> curve.prevalence
    0.6
    >>> curve.precision([1/3, 2/3, 1.0]).round(4).tolist()
    [0.5, 0.6667, 0.75]
    """

    positive_scores: np.ndarray
    negative_scores: np.ndarray
    false_positives: np.ndarray
    tied_fraction: float

    @classmethod
    def fit(cls, scores, labels, *, warn_ties: bool = True) -> "EmpiricalPR":
        """Fit the curve to scores and 0/1 labels.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Finite scores; higher means more likely positive.
        labels : array-like of shape (n,)
            0/1 labels (booleans accepted). At least one of each class is needed.
        warn_ties : bool, default=True
            Emit a :class:`TiedScoresWarning` when more than
            :data:`TIED_POSITIVES_WARNING_FRACTION` of the positive scores are tied. A bootstrap
            that resamples with replacement creates ties on purpose and turns this off.

        Returns
        -------
        EmpiricalPR

        Raises
        ------
        DataError
            Unequal lengths, non-finite scores, labels other than 0/1, or a class with no item.
        """
        return _fit_checked(scores, labels, owner="EmpiricalPR.fit", warn_ties=warn_ties)

    @classmethod
    def from_class_scores(
        cls, positive_scores, negative_scores, *, warn_ties: bool = True
    ) -> "EmpiricalPR":
        """Fit the curve to the scores of the positives and of the negatives, given apart.

        Parameters
        ----------
        positive_scores : array-like of shape (n_positive,)
            Finite scores of the positive items, in any order; at least one.
        negative_scores : array-like of shape (n_negative,)
            Finite scores of the negative items, in any order; at least one.
        warn_ties : bool, default=True
            As in :meth:`fit`.

        Returns
        -------
        EmpiricalPR

        Examples
        --------
        >>> curve = EmpiricalPR.from_class_scores([0.9, 0.7, 0.6], [0.8, 0.5])
        >>> float(curve.alpha(0.5))
        0.5
        """
        owner = "EmpiricalPR.from_class_scores"
        pos = _check_scores(positive_scores, name="positive_scores", owner=owner)
        neg = _check_scores(negative_scores, name="negative_scores", owner=owner)
        for name, arr in (("positive_scores", pos), ("negative_scores", neg)):
            if arr.size == 0:
                raise DataError(
                    f"The {name!r} argument of {owner} is empty; the empirical PR curve needs at "
                    "least one positive and one negative item."
                )
        # Frames: _build (1), from_class_scores (2), its caller (3).
        return cls._build(pos, neg, warn_ties=warn_ties, stacklevel=3)

    @classmethod
    def _build(cls, pos, neg, *, warn_ties: bool, stacklevel: int) -> "EmpiricalPR":
        pos = np.sort(pos)
        neg = np.sort(neg)
        # Negatives strictly above each positive score: n_neg minus those at or below it.
        false_positives = neg.size - np.searchsorted(neg, pos, side="right").astype(np.int64)
        tied = _tied_fraction(pos)
        if warn_ties and tied > TIED_POSITIVES_WARNING_FRACTION:
            warnings.warn(
                TiedScoresWarning(
                    f"{tied:.0%} of the {pos.size} positive scores share their value with another "
                    "positive. The functional empirical PR curve is not consistent where the "
                    "positive scores have atoms: at recall levels inside a tie group it jumps "
                    "between two values and does not converge as the sample grows "
                    "(Hughes-Oliver, section 3.2). Use exact_pr_points() for discrete scores, or "
                    "read the curve only at the recall levels the thresholds achieve."
                ),
                stacklevel=stacklevel,
            )
        for arr in (pos, neg, false_positives):
            arr.flags.writeable = False
        return cls(pos, neg, false_positives, tied)

    @property
    def n_positive(self) -> int:
        """Number of positive items n+."""
        return int(self.positive_scores.size)

    @property
    def n_negative(self) -> int:
        """Number of negative items n-."""
        return int(self.negative_scores.size)

    @property
    def prevalence(self) -> float:
        """Empirical prevalence p^ = n+ / n."""
        return self.n_positive / (self.n_positive + self.n_negative)

    def _threshold_index(self, beta, owner: str) -> tuple[np.ndarray, np.ndarray]:
        beta = as_recall_levels(beta, owner=owner)
        n_pos = self.n_positive
        # G^-1(1 - beta) is the k-th smallest positive with k = ceil((1 - beta) n+), which equals
        # n+ - floor(beta n+); beta = 1 takes the smallest positive (the limit from the left).
        index = n_pos - 1 - floor_fraction_of(beta, n_pos)
        return beta, np.maximum(index, 0)

    def threshold(self, beta) -> np.ndarray:
        """Score threshold G^-1(1 - beta) at each recall level.

        Parameters
        ----------
        beta : float or array-like
            Recall levels in (0, 1].

        Returns
        -------
        ndarray of the shape of ``beta``
        """
        _, index = self._threshold_index(beta, "EmpiricalPR.threshold")
        return self.positive_scores[index]

    def alpha(self, beta) -> np.ndarray:
        """Empirical false-positive rate alpha^(beta) = 1 - H^(G^-1(1 - beta)), float64.

        ``beta`` and the shape of the result are those of :meth:`threshold`.
        """
        _, index = self._threshold_index(beta, "EmpiricalPR.alpha")
        return self.false_positives[index] / self.n_negative

    def precision(self, beta) -> np.ndarray:
        """Functional empirical precision PR^(beta) at each recall level, float64 in (0, 1].

        ``beta`` and the shape of the result are those of :meth:`threshold`.
        """
        beta, index = self._threshold_index(beta, "EmpiricalPR.precision")
        # p^ beta / (p^ beta + (1 - p^) alpha^) with the common factor 1/n cancelled.
        true_positive_mass = self.n_positive * beta
        return true_positive_mass / (true_positive_mass + self.false_positives[index])


def empirical_pr(scores, labels, beta, *, warn_ties: bool = True) -> np.ndarray:
    """Functional empirical precision at recall levels ``beta``.

    PR^(beta) = p^ beta / (p^ beta + (1 - p^) alpha^(beta)) with alpha^(beta) = 1 - H^(G^-1(1 -
    beta)) (Clémençon & Vayatis 2009, Eq. 3): G^, H^ are the empirical cdfs of the positive and
    negative scores, G^-1 the left-continuous generalised inverse, and negatives tied with the
    threshold count as below it. See :class:`EmpiricalPR` to evaluate one sample many times.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite scores; higher means more likely positive.
    labels : array-like of shape (n,)
        0/1 labels; at least one positive and one negative.
    beta : float or array-like
        Recall levels in (0, 1].
    warn_ties : bool, default=True
        Warn (:class:`TiedScoresWarning`) when many positive scores are tied, where this curve is
        not a consistent estimator.

    Returns
    -------
    ndarray of the shape of ``beta``, float64
        Precision at each recall level.

    Raises
    ------
    DataError
        Bad scores or labels (see :meth:`EmpiricalPR.fit`).
    ParameterError
        A recall level outside (0, 1].

    Examples
    --------
    >>> scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    >>> labels = [1, 0, 1, 1, 0]
    >>> empirical_pr(scores, labels, [0.2, 1/3, 0.5, 1.0]).round(4).tolist()
    [1.0, 0.5, 0.6, 0.75]
    """
    owner = "empirical_pr"
    beta = as_recall_levels(beta, owner=owner)
    curve = _fit_checked(scores, labels, owner=owner, warn_ties=warn_ties)
    return curve.precision(beta)


def _fit_checked(scores, labels, *, owner: str, warn_ties: bool) -> EmpiricalPR:
    """Validate, split by class and fit; a tie warning points at the public caller's caller."""
    scores, labels = _check_scored_labels(scores, labels, owner=owner)
    positive = labels == 1.0
    _require_both_classes(positive, owner=owner)
    # Frames: _build (1), _fit_checked (2), the public function (3), its caller (4).
    return EmpiricalPR._build(
        scores[positive], scores[~positive], warn_ties=warn_ties, stacklevel=4
    )


def exact_pr_points(scores, labels) -> PRPoints:
    """The classic empirical PR points: recall and precision at every distinct score threshold.

    At threshold t every item with score >= t is predicted positive (ties included), so each
    point is exactly achievable. These are the points that Davis & Goadrich (2006) interpolate;
    unlike :func:`empirical_pr` they are exact for discrete scores.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite scores.
    labels : array-like of shape (n,)
        0/1 labels; at least one positive.

    Returns
    -------
    PRPoints
        One row per distinct score, by decreasing threshold.

    Examples
    --------
    >>> points = exact_pr_points([0.9, 0.8, 0.8, 0.5], [1, 1, 0, 1])
    >>> points.threshold.tolist()
    [0.9, 0.8, 0.5]
    >>> points.recall.round(4).tolist(), points.precision.round(4).tolist()
    ([0.3333, 0.6667, 1.0], [1.0, 0.6667, 0.75])
    """
    owner = "exact_pr_points"
    scores, labels = _check_scored_labels(scores, labels, owner=owner)
    positive = labels == 1.0
    if not positive.any():
        raise DataError(
            f"The 'labels' argument of {owner} holds no positive (1) label; recall is undefined "
            "without positives."
        )
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    cum_pos = np.cumsum(positive[order], dtype=np.int64)
    # The last item of each group of equal scores closes that threshold.
    last_of_group = np.flatnonzero(np.r_[sorted_scores[1:] != sorted_scores[:-1], True])
    tp = cum_pos[last_of_group]
    fp = (last_of_group + 1) - tp
    return PRPoints(
        threshold=sorted_scores[last_of_group],
        true_positives=tp,
        false_positives=fp,
        recall=tp / cum_pos[-1],
        precision=tp / (tp + fp),
    )


# ---------------------------------------------------------------------------------------------
# Helpers shared with prdist.population (and the bootstrap).


def floor_fraction_of(fraction, total) -> np.ndarray:
    """Return floor(fraction * total) as int64, snapping products within rounding of an integer.

    Used to turn a recall level into a count of positives: ``floor_fraction_of(0.7, 10)`` is 7
    although the double nearest 0.7 times 10 is exactly 6.999999999999999556.

    >>> floor_fraction_of(np.array([0.7, 0.75, 1/3]), 12).tolist()
    [8, 9, 4]
    """
    product = np.asarray(fraction, dtype=np.float64) * total
    nearest = np.rint(product)
    tolerance = _SNAP_ULPS * np.finfo(np.float64).eps * np.maximum(np.abs(product), 1.0)
    return np.where(np.abs(product - nearest) <= tolerance, nearest, np.floor(product)).astype(
        np.int64
    )


def as_recall_levels(
    beta, *, owner: str, name: str = "beta", include_one: bool = True
) -> np.ndarray:
    """Return ``beta`` as a float64 array after checking every value is in (0, 1].

    With ``include_one=False`` the interval is (0, 1).
    """
    try:
        arr = np.asarray(beta, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be recall levels (floats in (0, 1]). "
            f"Got {beta!r} instead."
        ) from None
    upper = "1]" if include_one else "1)"
    bad = ~((arr > 0.0) & ((arr <= 1.0) if include_one else (arr < 1.0)))
    if bad.any():
        first = arr[bad].flat[0]
        raise ParameterError(
            f"The {name!r} parameter of {owner} must hold values in (0, {upper}; it holds "
            f"{float(first)!r}. Recall 0 is a limit, not a point of the curve."
        )
    return arr


def _check_scores(scores, *, name: str, owner: str) -> np.ndarray:
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            f"The {name!r} argument of {owner} must be numeric scores; it could not be converted "
            "to float64."
        ) from None
    if arr.ndim != 1:
        raise DataError(
            f"The {name!r} argument of {owner} must be one-dimensional. Got shape {arr.shape} "
            "instead."
        )
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise DataError(
            f"The {name!r} argument of {owner} must hold finite scores; position {i} holds "
            f"{arr[i]!r}. Drop or impute non-finite scores first."
        )
    return arr


def _check_scored_labels(scores, labels, *, owner: str) -> tuple[np.ndarray, np.ndarray]:
    scores = _check_scores(scores, name="scores", owner=owner)
    labels = as_label_array(labels, owner=owner, allow_nan=False)
    if scores.shape != labels.shape:
        raise DataError(
            f"The 'scores' and 'labels' arguments of {owner} must have equal lengths. Got "
            f"{scores.size} scores and {labels.size} labels."
        )
    return scores, labels


def _require_both_classes(positive: np.ndarray, *, owner: str) -> None:
    n_pos = int(positive.sum())
    if n_pos == 0 or n_pos == positive.size:
        missing = "positive (1)" if n_pos == 0 else "negative (0)"
        raise DataError(
            f"The 'labels' argument of {owner} holds no {missing} label; the empirical PR curve "
            "needs at least one positive and one negative item."
        )


def _tied_fraction(sorted_values: np.ndarray) -> float:
    if sorted_values.size < 2:
        return 0.0
    equal_next = sorted_values[1:] == sorted_values[:-1]
    in_group = np.zeros(sorted_values.size, dtype=bool)
    in_group[1:] |= equal_next
    in_group[:-1] |= equal_next
    return float(in_group.mean())
