"""The gold audit's design: the strata of a PAULA plan and the random sample drawn from them.

A gold audit is a stratified random sample of a plan's items. Its strata are *segments* of ranks
(the prefix in chunks of ``window`` ranks, then every window; see
:mod:`prdist.verdicts.known_quality`) and, when an automatic judge has spoken on the planned
items, the judge's two *classes* within every segment: the items it calls correct
(probability or verdict >= 1/2, or no verdict) and those it calls incorrect.

Why the judge's classes. The precision of a segment is the sum of the precisions of its two
classes weighted by their known sizes, so gold is best spent where it is most uncertain. If the
judge says "correct" to a gold-correct item with probability s (sensitivity) and "incorrect" to a
gold-incorrect one with probability t (specificity), and a share p of the segment is correct, a
class's size times its standard deviation is sqrt(P(class, correct) P(class, incorrect)):
sqrt(p s (1-p)(1-t)) for "correct", sqrt(p (1-s)(1-p) t) for "incorrect". Neyman's allocation
(audit sizes proportional to those) therefore splits a segment's audit between the classes in the
ratio sqrt(s (1-t) / ((1-s) t)), whatever p: *half and half* for a judge whose sensitivity equals
its specificity, whatever its accuracy (an adversarial judge is as informative as a good one
here). Against a gold-only sample of the same size the standard deviation falls to
2 sqrt(a (1-a)) of it for such a judge of accuracy a (0.6 at a = 0.9; proportional allocation
reaches only sqrt(1 - corr²), 0.78 at a precision of 0.9), and this design is what
:func:`plan_gold_audit` draws when given the judge. For a judge far from s = t (one that calls
almost everything correct) half and half is not optimal; a class smaller than its half is audited
whole and the rest goes to the other class, which bounds the loss in the windows of a typical plan.

Validity never depends on the judge: the sample is random within every stratum, and
:func:`prdist.verdicts.known_quality.gold_bounds` analyses each stratum on its own (given the
same judge as the design).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prdist._validation import check_int
from prdist.errors import DataError, ParameterError
from prdist.params import SEED
from prdist.paula.plan import PaulaPlan

__all__ = ["audit_design", "design_weights", "judge_classes", "plan_gold_audit"]

#: The judge's classes: 1 "correct" (>= 1/2, or no verdict), 0 "incorrect".
CLASSES = 2


@dataclass(frozen=True, eq=False)
class Segments:
    """The plan's segments (prefix chunks, then windows past g_ℓ), as index ranges of plan.ranks."""

    start: np.ndarray  # first index into plan.ranks
    stop: np.ndarray  # one past the last
    checkpoints: np.ndarray  # top rank of every prefix chunk (the last is prefix_end)

    @property
    def sizes(self) -> np.ndarray:
        return self.stop - self.start

    @property
    def chunks(self) -> int:
        return int(self.checkpoints.size)

    def index(self, size: int) -> np.ndarray:
        """The segment of every planned item."""
        return np.repeat(np.arange(self.start.size), self.sizes)[:size]


def segments(plan: PaulaPlan) -> Segments:
    """The segments of ``plan`` (its windows must be disjoint)."""
    top, window = plan.prefix_end, plan.window
    checkpoints = np.arange(top, 0, -window, dtype=np.int64)[::-1]
    if checkpoints.size > 2 and checkpoints[0] < window:
        checkpoints = checkpoints[1:]  # the remainder below joins the first full chunk
    bounds_prefix = np.searchsorted(plan.ranks, checkpoints, side="right")
    grid = plan.grid
    if grid.size > 1:
        width = np.minimum(plan.window, grid[1:])
        w_start = np.searchsorted(plan.ranks, grid[1:] - width, side="right")
        w_stop = np.searchsorted(plan.ranks, grid[1:], side="right")
    else:
        w_start = w_stop = np.zeros(0, dtype=np.int64)
    start = np.concatenate(([0], bounds_prefix[:-1], w_start)).astype(np.int64)
    stop = np.concatenate((bounds_prefix, w_stop)).astype(np.int64)
    if np.any(start[1:] < stop[:-1]):
        raise ParameterError(
            f"The plan's windows overlap (r_tilde={plan.r_tilde} is below ceil((window+2)/eps)); a gold audit needs "
            "a plan whose windows are disjoint: leave r_tilde at its default."
        )
    return Segments(start, stop, checkpoints)


def judge_classes(judge, size: int, *, owner: str) -> np.ndarray:
    """The judge's class of every planned item: 0 where it says < 1/2, else 1 (also where it is silent).

    ``judge`` is None (every item in class 1) or one probability or 0/1 verdict per planned item,
    NaN where the judge did not speak.
    """
    if judge is None:
        return np.ones(size, dtype=np.int64)
    try:
        values = np.asarray(judge, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"The 'judge' argument of {owner} must be numbers in [0, 1] (NaN = none); {exc}.") from None
    if values.shape != (size,):
        raise DataError(
            f"{owner} needs one judge value per planned rank: the plan has {size} ranks but the judge has shape "
            f"{values.shape}. Align it with plan.ranks (NaN where the judge is silent)."
        )
    return np.where(values < 0.5, 0, 1).astype(np.int64)


def strata(plan: PaulaPlan, seg: Segments, classes: np.ndarray) -> np.ndarray:
    """The stratum of every planned item: segment * CLASSES + judge class."""
    return seg.index(plan.size) * CLASSES + classes


def _segment_quotas(seg: Segments, budget: int, size: int, rng) -> np.ndarray:
    """floor(budget N_s / N) per segment, the rest to the largest remainders (ties at random)."""
    quota = budget * seg.sizes / size
    take = np.floor(quota).astype(np.int64)
    extra = budget - int(take.sum())
    order = np.lexsort((rng.random(quota.size), -(quota - take)))
    take[order[:extra]] += 1
    return take


def _split_between_classes(take: np.ndarray, class_sizes: np.ndarray, rng) -> np.ndarray:
    """Each segment's quota split half and half between its two classes (an odd one at random),
    a class smaller than its half audited whole and the rest given to the other: (S, 2)."""
    coin = rng.random(take.size) < 0.5
    half_incorrect = take // 2 + np.where(coin, take % 2, 0)
    incorrect = np.minimum(half_incorrect, class_sizes[:, 0])
    correct = np.minimum(take - incorrect, class_sizes[:, 1])
    incorrect = np.minimum(take - correct, class_sizes[:, 0])
    return np.stack((incorrect, correct), axis=1)


def plan_gold_audit(plan: PaulaPlan, budget: int, *, seed: int, judge=None) -> np.ndarray:
    """Ranks for a gold audit: a stratified random sample of min(budget, plan.size) planned ranks.

    Each *segment* (the prefix in chunks of ``window`` ranks, then every window; see
    :mod:`prdist.verdicts.known_quality`) gets floor(budget N_s / N) items, the remaining ones
    going to the segments with the largest remainders (ties broken at random): the audit spreads
    evenly over the score range. Without a judge, each segment's items are a uniform random subset
    of it. With a ``judge``, a segment's items are split half and half between the items the judge
    calls correct and those it calls incorrect (a class smaller than its half is audited whole),
    each a uniform random subset of its class: Neyman's allocation for a judge whose sensitivity
    equals its specificity (:mod:`prdist.verdicts.audit`). :func:`~prdist.verdicts.known_quality.gold_bounds`
    analyses either design when given the same ``judge``. It gives a stratum without any gold
    verdict its whole range, so a budget below about two per segment (there are about
    g_ℓ/window + L - ℓ of them: 147 at n = 10^5 with the default eps and window) leaves the
    bounds near trivial.

    Parameters
    ----------
    plan : PaulaPlan
    budget : int >= 0
        Gold verdicts to ask for.
    seed : int >= 0
        The audit is a deterministic function of (plan, budget, seed, judge's classes).
    judge : array-like of float, shape (plan.size,), optional
        An automatic judge's probability or 0/1 verdict per planned item (NaN where silent).

    Returns
    -------
    ndarray of int64
        Sorted ranks to audit.

    Examples
    --------
    >>> from prdist import plan_paula
    >>> plan = plan_paula(20_000, eps=0.1, window=20)
    >>> audit = plan_gold_audit(plan, 100, seed=1)
    >>> audit.size, bool(np.all(np.isin(audit, plan.ranks))), bool(np.all(np.diff(audit) > 0))
    (100, True, True)
    >>> bool(np.array_equal(audit, plan_gold_audit(plan, 100, seed=1)))
    True
    >>> judge = (np.arange(plan.size) % 5 == 0).astype(float)   # calls one item in five correct
    >>> chosen = np.isin(plan.ranks, plan_gold_audit(plan, 100, seed=1, judge=judge))
    >>> int(judge[chosen].sum()), int((1 - judge[chosen]).sum())
    (50, 50)
    """
    owner = "plan_gold_audit"
    if not isinstance(plan, PaulaPlan):
        raise ParameterError(f"The 'plan' parameter of {owner} must be a PaulaPlan from plan_paula. Got {type(plan).__name__} instead.")
    budget = check_int(budget, name="budget", owner=owner, low=0)
    seed = SEED.check(seed, owner=owner)
    classes = judge_classes(judge, plan.size, owner=owner)
    if budget >= plan.size:
        return plan.ranks.copy()
    rng = np.random.default_rng(seed)
    seg = segments(plan)
    take = _segment_quotas(seg, budget, plan.size, rng)
    where = strata(plan, seg, classes) if judge is not None else seg.index(plan.size)
    if judge is not None:
        class_sizes = np.bincount(where, minlength=seg.sizes.size * CLASSES).reshape(-1, CLASSES)
        take = _split_between_classes(take, class_sizes, rng).ravel()
    # Within each stratum, the items with the smallest random keys: a uniform subset.
    keys = rng.random(plan.size)
    by_stratum = np.lexsort((keys, where))
    first = np.searchsorted(where[by_stratum], np.arange(take.size))
    position = np.empty(plan.size, dtype=np.int64)
    position[by_stratum] = np.arange(plan.size) - first[where[by_stratum]]
    return np.sort(plan.ranks[position < take[where]])


def design_weights(plan: PaulaPlan, gold, classes) -> np.ndarray:
    """Each gold item's design weight N_s / n_s in an audit drawn by the judge's classes, 0 elsewhere.

    N_s is the number of planned items of its stratum (segment x judge class), n_s the number of
    them with a gold verdict; weighted sums over the gold items estimate sums over the plan
    (Horvitz-Thompson), which is how the judge's quality is measured on such an audit.

    Parameters
    ----------
    plan : PaulaPlan
    gold : array-like of 0/1/NaN, shape (plan.size,)
    classes : array-like of int, shape (plan.size,)
        :func:`judge_classes` of the judge the audit was drawn by.
    """
    seg = segments(plan)
    stratum = strata(plan, seg, np.asarray(classes, dtype=np.int64))
    known = ~np.isnan(np.asarray(gold, dtype=np.float64))
    count = seg.sizes.size * CLASSES
    planned = np.bincount(stratum, minlength=count)
    audited = np.bincount(stratum, weights=known, minlength=count)
    ratio = np.divide(planned, audited, out=np.zeros(count), where=audited > 0)
    return np.where(known, ratio[stratum], 0.0)


def audit_design(plan: PaulaPlan, gold, judge) -> dict:
    """``weights`` (:func:`design_weights`) and ``strata`` of an audit drawn by ``judge``'s classes:
    what :func:`prdist.verdicts.known_quality.verdict_quality` weighs the audit back with."""
    classes = judge_classes(judge, plan.size, owner="audit_design")
    return {"weights": design_weights(plan, gold, classes), "strata": strata(plan, segments(plan), classes)}
