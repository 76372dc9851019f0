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

What a release's bounds certify: the precision as its verdicts say it, or, for a run whose
gold audit is complete (``certifies: "gold"`` in its manifest), the precision as gold says it
(:func:`prdist.verdicts.known_quality.gold_bounds`). A change is claimed only between two releases that
certify the same thing.

The judge across releases. A release with a judge and a gold audit records the judge's
agreement with gold on the audited items (``verdict_quality.judge``: true and false positives
and negatives). Its sensitivity and specificity there get Clopper-Pearson intervals
(:func:`judge_rates`), each at level ``1 - delta_k / 2`` - the release's budget split between
its two rates - so that every interval of every release of a series holds at once with
probability at least ``1 - delta``. The judge *drifts* between a release and the previous one
that has such intervals when the intervals of its sensitivity, or of its specificity, are
disjoint (:func:`judge_drift`): then, when all those intervals hold, the judge's rate on the
two releases' planned items differs. The intervals treat the audited gold positives (negatives)
as a uniform random sample of the planned items' gold positives (negatives), which the audit
is up to its stratification by segment with equal sampling fractions
(:func:`prdist.verdicts.audit.plan_gold_audit`). An audit drawn by the judge's classes samples
them at unequal rates: its rates are design-weighted and their intervals Clopper-Pearson at
Korn and Graubard's effective sample size r (1 - r) / V (V the rate's stratified, linearised
variance estimate), which holds approximately, not exactly. A rate may differ because the judge changed or
because the items did (the same judge on harder items): both are drift of the judge's quality
on what it judges.

Pure NumPy: the runs are read, and their bounds recomputed at ``delta_k``, by
``prdist.dataflow.history``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from prdist.frames.arrays import distinct
from prdist._validation import check_confidence, check_int

__all__ = ["JudgeRates", "certain_changes", "default_ranks", "judge_drift", "judge_rates", "release_confidence"]


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
    return distinct(np.concatenate((powers[powers <= n], cut)))


@dataclass(frozen=True)
class JudgeRates:
    """A judge's agreement with gold on one release's audit, with simultaneous intervals.

    ``sensitivity`` and ``specificity`` are (estimate, lower, upper), or None when the audit
    holds no gold positive (negative); ``kappa`` is Cohen's kappa (None when undefined);
    ``confidence`` is the level of each of the two intervals.
    """

    compared: int
    sensitivity: tuple[float, float, float] | None
    specificity: tuple[float, float, float] | None
    kappa: float | None
    confidence: float


def _rate(hits: float, trials: float, tail: float) -> tuple[float, float, float] | None:
    """(hits / trials, Clopper-Pearson lower, upper), each side with error ``tail``; None without trials."""
    from prdist.sampling.random import _clopper_pearson_lower, _clopper_pearson_upper

    if trials == 0:
        return None
    k, z = np.array([hits]), np.array([trials])
    return hits / trials, float(_clopper_pearson_lower(k, z, tail)[0]), float(_clopper_pearson_upper(k, z, tail)[0])


def judge_rates(counts: Mapping, confidence: float, place: int) -> JudgeRates:
    """The judge's sensitivity and specificity against gold, with intervals at the release's level.

    Parameters
    ----------
    counts : mapping
        ``true_positive``, ``false_negative``, ``true_negative``, ``false_positive`` (and ``kappa``)
        as a run's manifest records them under ``verdict_quality.judge``; with ``design_weighted``
        (an audit drawn by the judge's classes) the rates are its weighted ones and the intervals
        Clopper-Pearson at Korn and Graubard's effective numbers of gold positives and negatives.
    confidence : float in (0, 1)
        The series' confidence; the release at ``place`` spends ``delta_k`` of its budget
        (:func:`release_confidence`), half on each rate.
    place : int >= 1

    Examples
    --------
    >>> r = judge_rates({"true_positive": 90, "false_negative": 10, "true_negative": 45, "false_positive": 5}, 0.95, 1)
    >>> r.sensitivity[0], round(r.sensitivity[1], 3), round(r.sensitivity[2], 3), round(r.confidence, 4)
    (0.9, 0.804, 0.959, 0.9848)
    """
    tail = (1.0 - release_confidence(confidence, place)) / 4  # two rates, two sides each
    names = ("true_positive", "false_negative", "true_negative", "false_positive")
    tp, fn, tn, fp = (int(counts[name]) for name in names)
    compared = tp + fn + tn + fp
    if "design_weighted" in counts:  # an audit drawn by the judge's classes: effective sizes
        weighted = counts["design_weighted"]
        wtp, wfn, wtn, wfp = (float(weighted[name]) for name in names)
        sensitivity = _weighted_rate(wtp, wtp + wfn, float(weighted["positives_effective"]), tail)
        specificity = _weighted_rate(wtn, wtn + wfp, float(weighted["negatives_effective"]), tail)
        return JudgeRates(compared, sensitivity, specificity, counts.get("kappa"), 1.0 - 2 * tail)
    return JudgeRates(compared, _rate(tp, tp + fn, tail), _rate(tn, tn + fp, tail), counts.get("kappa"),
                      1.0 - 2 * tail)


def _weighted_rate(hits: float, total: float, effective: float, tail: float) -> tuple[float, float, float] | None:
    """A design-weighted rate with the Clopper-Pearson interval at its effective sample size
    (Korn and Graubard's interval for complex samples, without their degrees-of-freedom
    correction: approximate)."""
    if total <= 0 or effective <= 0:
        return None
    rate = hits / total
    interval = _rate(rate * effective, effective, tail)
    return rate, interval[1], interval[2]


def judge_drift(previous: JudgeRates | None, current: JudgeRates | None) -> str:
    """Which of the judge's rates drift between two releases: their intervals are disjoint.

    Returns ``"sensitivity"``, ``"specificity"``, ``"sensitivity, specificity"`` or ``""``.

    Examples
    --------
    >>> a = JudgeRates(200, (0.9, 0.85, 0.94), (0.8, 0.7, 0.88), 0.7, 0.99)
    >>> b = JudgeRates(200, (0.7, 0.62, 0.78), (0.82, 0.72, 0.9), 0.5, 0.99)
    >>> judge_drift(a, b), judge_drift(a, a), judge_drift(None, b)
    ('sensitivity', '', '')
    """
    if previous is None or current is None:
        return ""
    drifted = []
    for name in ("sensitivity", "specificity"):
        before, now = getattr(previous, name), getattr(current, name)
        if before is not None and now is not None and (now[2] < before[1] or now[1] > before[2]):
            drifted.append(name)
    return ", ".join(drifted)
