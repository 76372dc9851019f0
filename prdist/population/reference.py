"""Reference curves of Hughes-Oliver's properties P4-P6: chance, perfect and reverse separation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prdist._validation import check_int
from prdist.population.checks import _prevalence, _unit_values
from prdist.population.families import uniform
from prdist.population.models import ContinuousScoreModel


def chance(*, prevalence) -> ContinuousScoreModel:
    """A useless scorer: both classes uniform on [0, 1] (Property P4).

    Its ROC curve is the diagonal ROC(alpha) = alpha and its PR curve the constant pi.

    Examples
    --------
    >>> model = chance(prevalence=0.2)
    >>> model.pr([0.1, 0.9]).tolist(), model.roc_shape()
    ([0.2, 0.2], 'linear')
    """
    return uniform(neg=(0.0, 1.0), pos=(0.0, 1.0), prevalence=prevalence)


def perfect_separation(*, prevalence) -> ContinuousScoreModel:
    """Every positive scores above every negative: positives U[1, 2], negatives U[0, 1] (P5).

    ``pr`` is 1 at every recall in (0, 1] and ``roc`` is 1 at every rate in [0, 1]: as functions
    of recall and false-positive rate the perfect curves are constant. The vertical parts of the
    curves traced by the threshold are in :func:`reference_curves`.
    """
    return uniform(neg=(0.0, 1.0), pos=(1.0, 2.0), prevalence=prevalence)


def reverse_separation(*, prevalence) -> ContinuousScoreModel:
    """Every positive scores below every negative: positives U[0, 1], negatives U[1, 2] (P6).

    ``pr`` is the achievable lower bound :func:`pr_lower_bound` pi beta / (pi beta + 1 - pi)
    and ``roc`` is 0 at every rate in [0, 1].

    Examples
    --------
    >>> model = reverse_separation(prevalence=0.5)
    >>> model.pr([0.5, 1.0]).round(4).tolist()
    [0.3333, 0.5]
    """
    return uniform(neg=(1.0, 2.0), pos=(0.0, 1.0), prevalence=prevalence)


def pr_lower_bound(beta, *, prevalence) -> np.ndarray:
    """The lowest precision any scorer achieves at recall beta: pi beta / (pi beta + 1 - pi).

    Reached when every negative is ranked above every positive (the reverse-separation PR curve,
    Hughes-Oliver P6; Boyd et al. 2012).

    Examples
    --------
    >>> pr_lower_bound([0.5, 1.0], prevalence=0.5).round(4).tolist()
    [0.3333, 0.5]
    """
    pi = _prevalence(prevalence, "pr_lower_bound")
    beta = _unit_values(beta, name="beta", owner="pr_lower_bound", include_zero=True)
    return pi * beta / (pi * beta + 1.0 - pi)


@dataclass(frozen=True, eq=False)
class ReferenceCurves:
    """Chance, perfect-separation and reverse-separation curves for one prevalence (P4-P6).

    Every curve is an (m, 2) array of (x, y) vertices traced as the threshold falls from +inf to
    -inf: ROC curves as (false-positive rate, true-positive rate), PR curves as (recall,
    precision). Separation curves have vertical segments, which is why they are given as traced
    point sequences and not as functions. ``reverse_pr`` (the achievable lower bound) is sampled
    at the recall levels of ``beta``.
    """

    prevalence: float
    chance_roc: np.ndarray
    chance_pr: np.ndarray
    perfect_roc: np.ndarray
    perfect_pr: np.ndarray
    reverse_roc: np.ndarray
    reverse_pr: np.ndarray


def reference_curves(prevalence, *, points: int = 101) -> ReferenceCurves:
    """Chance, perfect-separation and reverse-separation ROC and PR curves (Hughes-Oliver P4-P6).

    Parameters
    ----------
    prevalence : float
        pi, in (0, 1).
    points : int, default=101
        Number of recall levels (from 0 to 1) at which the curved reverse-separation PR curve is
        sampled; >= 2.

    Returns
    -------
    ReferenceCurves

    Examples
    --------
    >>> curves = reference_curves(0.25, points=3)
    >>> curves.perfect_pr.tolist()
    [[0.0, 1.0], [1.0, 1.0], [1.0, 0.25]]
    >>> curves.reverse_pr.round(4).tolist()
    [[0.0, 0.0], [0.5, 0.1429], [1.0, 0.25]]
    """
    pi = _prevalence(prevalence, "reference_curves")
    points = check_int(points, name="points", owner="reference_curves", low=2)
    beta = np.linspace(0.0, 1.0, points)
    return ReferenceCurves(
        prevalence=pi,
        chance_roc=np.array([[0.0, 0.0], [1.0, 1.0]]),
        chance_pr=np.array([[0.0, pi], [1.0, pi]]),
        # Positives first: recall rises at precision 1, then the negatives pull precision to pi.
        perfect_roc=np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        perfect_pr=np.array([[0.0, 1.0], [1.0, 1.0], [1.0, pi]]),
        # Negatives first: precision is 0 until the first positive, then climbs to pi.
        reverse_roc=np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]),
        reverse_pr=np.column_stack((beta, pi * beta / (pi * beta + 1.0 - pi))),
    )
