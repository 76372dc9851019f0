"""Bounds on the precision *as gold says it*, from verdicts of unknown quality and a gold audit.

The verdicts a run holds (annotators' or an automatic judge's) may be wrong; gold verdicts (an
expert adjudication) exist on a random audit of the planned items only. This module bounds the
precision that the gold verdicts would give, p(r) = y(r)/r with y(r) the number of items at
ranks 1..r that gold calls correct, at every rank the run reports, whatever the quality of the
other verdicts. The verdicts and a judge serve only as *predictors* of gold: a good predictor
narrows the bounds, a useless or adversarial one leaves them (about) as wide as gold alone.

Notation
--------
The plan labels the prefix 1..g_ℓ and the windows W_k = (g_k - w_k, g_k], w_k = min(Δ, g_k),
of the grid g_ℓ..g_L (:func:`prdist.plan_paula`). Its planned items fall into *segments*: the
prefix cut into chunks of Δ ranks ending at g_ℓ (the first chunk also takes the remainder below
them when there are more than two; the last chunk is W_ℓ), and the windows W_{ℓ+1}..W_L. The chunk ends
are the *checkpoints* c_1 < ... < c_P = g_ℓ. T_s is the number of gold positives in segment s.

1. What PAULA needs is linear in the T_s. The yield at a checkpoint is y(c_j) = Σ_{s<=j} T_s;
   Algorithm 2's grid-point bounds are Y-_K = y(g_ℓ) + Σ_{k<K} (s_k / w_{k+1}) T_{W_{k+1}} and
   Y+_K = y(g_ℓ) + Σ_{k<K} (s_k / w_k) T_{W_k}, s_k = g_{k+1} - g_k. Each is a functional
   Θ = Σ_s b_s T_s with known coefficients b_s >= 0.
2. Prediction-powered estimate of each Θ (design-based). The audit is a random sample of the
   planned items, drawn without replacement within each segment (:func:`plan_gold_audit`), and
   the analysis conditions on how many gold verdicts each segment holds (post-stratification).
   With a predictor f_i in [0, 1] on every planned item (the judge's probability or verdict where
   given, else the run's verdict, else 1/2) and any λ,

       Θ̂(λ) = Σ_s b_s [λ Σ_{i in s} f_i + (N_s / n_s) Σ_{i in s, audited} (g_i - λ f_i)]

   is unbiased for Θ for any fixed f and λ (N_s planned and n_s audited items in s), because the
   second term is the Horvitz-Thompson estimate of Σ_{i in s} (g_i - λ f_i). Its variance is
   Σ_s b_s² N_s² (1 - n_s/N_s) S_s²(λ) / n_s, S_s² the within-segment variance of g - λ f.
   λ is power-tuned (PPI++), one per functional, from the same audit (as in PPI++, this keeps
   the estimate consistent and the interval asymptotically valid), clipped to [0, 1] as
   ppi-python does: a predictor anti-correlated with gold gets λ = 0, exactly gold alone's
   interval, a useless one a λ near 0, and a good one shrinks the variance by about
   1 - corr(g, f)² within segments.
   S_s² is estimated as the larger of the segment's sample variance of g - λ f and the
   within-segment variance pooled over all segments, the pool counting two pseudo-observations
   at ±1/2 about its mean (Agresti-Coull's one success and one failure). The floor keeps a segment whose few
   audited items all agree (rare errors unseen, a precision near 1) from claiming a variance near
   zero, the Wald interval's failure on rare events (and a predictor that agreed with every
   audited gold verdict from claiming exactness); it costs width where segments differ. λ
   minimises the variance with own plus pooled variance per segment (a quadratic in λ that
   bounds the one used). A segment without any gold verdict contributes its
   deterministic range [0, b_s N_s]; a segment audited whole contributes exactly.
3. Simultaneity. The interval Θ̂ ± z sd̂ is asked of 2P + 2(G - 1) events (both sides at every
   checkpoint, the lower side of Y-_K and the upper side of Y+_K, K = ℓ+1..L), each at level
   α_A / (2P + 2(G - 1)) (Bonferroni), α_A = (1 - confidence)/2, z the normal quantile. Each
   event's probability is that level *asymptotically*: this step rests on the central limit
   theorem for the audit (as PPI and PPI++ do), not on a finite-sample inequality.
4. From Y± to the yield. Under model (M) of :mod:`prdist.paula.confidence` *for the gold labels*
   (independent Bernoulli, rate non-increasing in rank from the window at g_ℓ on),
   y(g_K) >= Y-_K - t-_K and y(g_K) <= Y+_K + t+_K at every grid point with probability at least
   1 - α_M, α_M = (1 - confidence)/2, where t± are :func:`prdist.paula.confidence.confidence_margins`
   computed from the gold verdicts alone (unaudited items unknown, so its rate intervals are wide
   and the margins take the worst-case variance: valid, a little wider than with known rates).
   This step draws its probability from the gold labels, step 3 from the audit, which is chosen
   independently of them; a union bound gives both at once with probability >= 1 - α.
5. Every rank. The checkpoint and grid-point bounds are clamped to what the gold verdicts prove
   (known positives below, ranks not known negative above), made consistent with the yield's
   monotonicity, and extended to every rank by :class:`prdist.paula.bounds.PaulaBounds` (the yield is
   non-decreasing and grows by at most one per rank). Past g_L no cap is used: the upper bound
   grows by one per rank there (valid without assumptions, loose on the last n - g_L ranks).

Claim. If the audit is drawn as in step 2 independently of the verdicts, the judge and the gold
labels, and gold is missing on audited items independently of its value (a "cannot judge" gold
verdict counts as not audited), then ``gold_bounds(...).lower(r) <= p(r) <= .upper(r)`` at every
rank of ``table()`` at once with probability at least ``confidence`` - up to the normal
approximation of step 3 - whatever the verdicts and the judge say. Checkpoints and the prefix
need no model; the grid points need (M) for gold, as :func:`prdist.paula_bounds` does.

:func:`ppi_mean_interval` is the textbook PPI++ interval for one mean from i.i.d. data (the
formula of ppi-python's ``ppi_mean_ci``), for use on a single cut-off; :func:`verdict_quality`
measures sensitivity, specificity and Cohen's kappa of verdicts against gold.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from prdist._validation import as_label_array, check_confidence, check_int
from prdist.paula.bounds import PaulaBounds, PaulaDiagnostics, _consistent_grid_bounds
from prdist.paula.confidence import confidence_margins
from prdist.errors import DataError, ParameterError
from prdist.params import SEED
from prdist.paula.plan import PaulaPlan

__all__ = [
    "Agreement",
    "GoldBounds",
    "VerdictQuality",
    "gold_bounds",
    "plan_gold_audit",
    "ppi_mean_interval",
    "score_regions",
    "verdict_quality",
]

#: The "no information" value of the predictor where neither a judge nor a verdict speaks.
NEUTRAL = 0.5


# --------------------------------------------------------------------------------------------
# Verdict quality
# --------------------------------------------------------------------------------------------
def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass(frozen=True)
class Agreement:
    """How verdicts agree with gold on the items both speak about (in one region or overall).

    A verdict in [0, 1] counts as "correct" when it is >= 0.5 (a judge's probability is thus
    thresholded at one half). ``sensitivity`` = TP / (TP + FN), ``specificity`` = TN / (TN + FP),
    ``kappa`` = Cohen's kappa (observed minus chance agreement over one minus chance agreement);
    each is None when undefined (no gold positives, no gold negatives, chance agreement 1).
    """

    region: str
    true_positive: int
    false_negative: int
    true_negative: int
    false_positive: int

    @property
    def compared(self) -> int:
        return self.true_positive + self.false_negative + self.true_negative + self.false_positive

    @property
    def sensitivity(self) -> float | None:
        return _ratio(self.true_positive, self.true_positive + self.false_negative)

    @property
    def specificity(self) -> float | None:
        return _ratio(self.true_negative, self.true_negative + self.false_positive)

    @property
    def kappa(self) -> float | None:
        n = self.compared
        if n == 0:
            return None
        said_yes = self.true_positive + self.false_positive
        gold_yes = self.true_positive + self.false_negative
        observed = (self.true_positive + self.true_negative) / n
        chance = (said_yes * gold_yes + (n - said_yes) * (n - gold_yes)) / n**2
        return None if chance >= 1.0 else (observed - chance) / (1.0 - chance)

    def to_dict(self) -> dict:
        """JSON-ready (strict JSON: undefined rates are null)."""
        return {
            "region": self.region,
            "sensitivity": self.sensitivity,
            "specificity": self.specificity,
            "kappa": self.kappa,
            "compared": self.compared,
            "true_positive": self.true_positive,
            "false_negative": self.false_negative,
            "true_negative": self.true_negative,
            "false_positive": self.false_positive,
        }


@dataclass(frozen=True)
class VerdictQuality:
    """Agreement of verdicts with gold, overall and per score region (see :func:`verdict_quality`)."""

    overall: Agreement
    regions: tuple[Agreement, ...] = ()

    @property
    def sensitivity(self) -> float | None:
        return self.overall.sensitivity

    @property
    def specificity(self) -> float | None:
        return self.overall.specificity

    @property
    def kappa(self) -> float | None:
        return self.overall.kappa

    def to_dict(self) -> dict:
        """JSON-ready: the overall figures and counts, and a list of the same per region."""
        out = self.overall.to_dict()
        del out["region"]
        out["regions"] = [r.to_dict() for r in self.regions]
        return out


def _unit_array(values, *, name: str, owner: str, size: int | None = None) -> np.ndarray:
    """float64 array of values in [0, 1] or NaN (verdicts, judge probabilities)."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"The {name!r} argument of {owner} must be numbers in [0, 1] (NaN = none); {exc}.") from None
    if arr.ndim != 1:
        raise DataError(f"The {name!r} argument of {owner} must be one-dimensional. Got shape {arr.shape} instead.")
    bad = ~np.isnan(arr) & ((arr < 0.0) | (arr > 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"The {name!r} argument of {owner} must hold 0/1 verdicts or probabilities in [0, 1] "
            f"(NaN = none); position {i} holds {float(arr[i])!r}. Map it to [0, 1] first."
        )
    if size is not None and arr.size != size:
        raise DataError(
            f"{owner} needs one {name} value per planned rank: the plan has {size} ranks but {arr.size} were "
            "given. Align them with plan.ranks (NaN where there is none)."
        )
    return arr


def _agreement(region: str, said: np.ndarray, gold: np.ndarray) -> Agreement:
    yes, pos = said >= 0.5, gold == 1.0
    return Agreement(
        region,
        int(np.sum(yes & pos)),
        int(np.sum(~yes & pos)),
        int(np.sum(~yes & ~pos)),
        int(np.sum(yes & ~pos)),
    )


def verdict_quality(verdicts, gold, *, regions=None) -> VerdictQuality:
    """Sensitivity, specificity and Cohen's kappa of ``verdicts`` against ``gold``.

    Parameters
    ----------
    verdicts : array-like of float in [0, 1] or NaN
        What annotators or a judge say (a probability counts as "correct" when >= 0.5).
    gold : array-like of 0/1/NaN, same length
        Gold verdicts; only items where both are known are compared.
    regions : array-like, same length, optional
        A region label per item (e.g. from :func:`score_regions`); the figures are then also
        given per region, in order of first appearance.

    Returns
    -------
    VerdictQuality

    Examples
    --------
    >>> q = verdict_quality([1, 1, 0, 0, 1, np.nan], [1, 0, 0, 0, 1, 1], regions=list("aaabbb"))
    >>> q.sensitivity, q.specificity, round(q.kappa, 3)
    (1.0, 0.6666666666666666, 0.615)
    >>> [(r.region, r.compared) for r in q.regions]
    [('a', 3), ('b', 2)]
    """
    owner = "verdict_quality"
    said = _unit_array(verdicts, name="verdicts", owner=owner)
    truth = as_label_array(gold, name="gold", owner=owner)
    if truth.size != said.size:
        raise DataError(f"{owner} needs as many gold verdicts as verdicts: got {truth.size} and {said.size}.")
    both = ~np.isnan(said) & ~np.isnan(truth)
    overall = _agreement("all", said[both], truth[both])
    if regions is None:
        return VerdictQuality(overall)
    labels = np.asarray(regions, dtype=object)
    if labels.shape != said.shape:
        raise DataError(f"{owner} needs one region per verdict: got {labels.size} regions for {said.size} verdicts.")
    _, first = np.unique(labels.astype(str), return_index=True)
    ordered = labels[np.sort(first)]
    per_region = tuple(_agreement(str(r), said[both & (labels == r)], truth[both & (labels == r)]) for r in ordered)
    return VerdictQuality(overall, per_region)


def score_regions(plan: PaulaPlan, count: int = 4) -> np.ndarray:
    """A score-region label per planned rank: the prefix, then the windows in ``count - 1`` runs.

    Ranks are in score order, so a run of ranks is a score region. The windows are cut into
    runs of (nearly) equal numbers of windows; each label names its ranks, e.g. ``"1-3492"``.

    Examples
    --------
    >>> from prdist import plan_paula
    >>> plan = plan_paula(20_000, eps=0.1, window=20)
    >>> sorted(set(score_regions(plan, 3).tolist()), key=lambda s: int(s.split("-")[0]))
    ['1-229', '233-2049', '2235-18342']
    """
    count = check_int(count, name="count", owner="score_regions", low=1)
    ranks = plan.ranks
    windows = max(0, plan.grid.size - 1)
    runs = min(max(count - 1, 1), windows) if windows else 0
    # region index: 0 for the prefix, 1..runs for windows by the run their grid point falls in
    window_of = np.searchsorted(plan.grid, ranks, side="left")  # 1..G-1 past the prefix
    index = np.zeros(ranks.size, dtype=np.int64)
    past = ranks > plan.prefix_end
    if runs:
        index[past] = 1 + ((window_of[past] - 1) * runs) // windows
    out = np.empty(ranks.size, dtype=object)
    for k in np.unique(index):
        mine = index == k
        out[mine] = f"{int(ranks[mine][0])}-{int(ranks[mine][-1])}"
    return out


# --------------------------------------------------------------------------------------------
# Segments of a plan and the gold audit
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Segments:
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


def _segments(plan: PaulaPlan) -> _Segments:
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
    return _Segments(start, stop, checkpoints)


def plan_gold_audit(plan: PaulaPlan, budget: int, *, seed: int) -> np.ndarray:
    """Ranks for a gold audit: a random sample of min(budget, plan.size) planned ranks.

    Stratified by *segment* (the prefix in chunks of ``window`` ranks, then every window; see the
    module docstring) with proportional allocation: each segment gets floor(budget N_s / N)
    items, the remaining ones go to the segments with the largest remainders (ties broken at
    random), and each segment's items are a uniform random subset of it. This spreads the audit
    evenly over the score range and is the design :func:`gold_bounds` analyses. That function
    gives a segment without any gold verdict its whole range, so a budget below about two per
    segment (there are about g_ℓ/window + L - ℓ of them: 147 at n = 10^5 with the default
    eps and window) leaves the bounds near trivial.

    Parameters
    ----------
    plan : PaulaPlan
    budget : int >= 0
        Gold verdicts to ask for.
    seed : int >= 0
        The audit is a deterministic function of (plan, budget, seed).

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
    """
    owner = "plan_gold_audit"
    if not isinstance(plan, PaulaPlan):
        raise ParameterError(f"The 'plan' parameter of {owner} must be a PaulaPlan from plan_paula. Got {type(plan).__name__} instead.")
    budget = check_int(budget, name="budget", owner=owner, low=0)
    seed = SEED.check(seed, owner=owner)
    if budget >= plan.size:
        return plan.ranks.copy()
    rng = np.random.default_rng(seed)
    seg = _segments(plan)
    quota = budget * seg.sizes / plan.size
    take = np.floor(quota).astype(np.int64)
    extra = budget - int(take.sum())
    order = np.lexsort((rng.random(quota.size), -(quota - take)))
    take[order[:extra]] += 1
    # Within each segment, the items with the smallest random keys: a uniform subset.
    where = seg.index(plan.size)
    keys = rng.random(plan.size)
    by_segment = np.lexsort((keys, where))
    position = np.empty(plan.size, dtype=np.int64)
    position[by_segment] = np.arange(plan.size) - seg.start[where[by_segment]]
    return np.sort(plan.ranks[position < take[where]])


# --------------------------------------------------------------------------------------------
# Prediction-powered estimates of the segment functionals
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _SegmentStats:
    """Per-segment sums over the audited items (g gold, f predictor) and over all planned items."""

    planned: np.ndarray  # N_s
    audited: np.ndarray  # n_s
    g: np.ndarray
    f: np.ndarray
    gf: np.ndarray
    ff: np.ndarray
    f_all: np.ndarray  # Σ f over all planned items of s

    @classmethod
    def of(cls, seg: _Segments, g: np.ndarray, f: np.ndarray) -> _SegmentStats:
        audited = ~np.isnan(g)
        gz = np.where(audited, g, 0.0)
        fz = np.where(audited, f, 0.0)

        def total(x):
            c = np.concatenate(([0.0], np.cumsum(x)))
            return c[seg.stop] - c[seg.start]

        return cls(
            seg.sizes.astype(np.float64), total(audited), total(gz), total(fz), total(gz * fz), total(fz * fz),
            total(f),
        )


@dataclass(frozen=True, eq=False)
class _Functionals:
    """Θ_m = Σ_s B[m, s] T_s, their PPI++ estimates, standard errors and tuned λ."""

    estimate: np.ndarray
    se: np.ndarray
    lam: np.ndarray
    unaudited_upper: np.ndarray  # Σ over segments without gold of B N_s (their worst case)


def _estimate(B: np.ndarray, st: _SegmentStats, *, tune: bool) -> _Functionals:
    n, N = st.audited, st.planned
    seen = n > 0
    safe = np.where(seen, n, 1.0)
    weight = np.where(seen, N**2 * (1.0 - n / N) / safe, 0.0)  # K_s
    # Sums of squared deviations of g - λf in each segment: SS_s(λ) = ss_g - 2λ ss_gf + λ² ss_f
    ss = np.stack((st.g - st.g**2 / safe, st.gf - st.g * st.f / safe, st.ff - st.f**2 / safe))  # g² = g
    dof = n - 1.0
    # pooled within-segment variance, with two pseudo-observations at ±1/2 (Agresti-Coull's one
    # success and one failure): never zero, even when every audited verdict agrees with gold
    pool = (ss.sum(axis=1) + np.array([0.5, 0.0, 0.0])) / (float(np.sum(np.maximum(dof, 0.0))) + 1.0)
    own = np.where(dof > 0, ss / np.where(dof > 0, dof, 1.0), 0.0)
    B2w = B**2 * weight  # (M, S)
    if tune:
        # λ minimises the variance with own + pooled variance per segment (quadratic in λ, and
        # an upper bound of the max used below)
        quad = B2w @ (own + pool[:, None]).T  # (M, 3): A, C, D of A - 2λC + λ²D
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.where(quad[:, 2] > 0, quad[:, 1] / quad[:, 2], 0.0)
        lam = np.clip(np.nan_to_num(lam), 0.0, 1.0)
    else:
        lam = np.zeros(B.shape[0])
    powers = np.stack((np.ones_like(lam), -2.0 * lam, lam**2), axis=1)  # (M, 3)
    # each segment's variance at λ_m, at least the pooled one: (M, S)
    variance = np.maximum(powers @ own, (powers @ pool)[:, None])
    var = np.maximum(np.sum(B2w * variance, axis=1), 0.0)
    ratio = np.where(seen, N / safe, 0.0)
    Bs = B * seen
    estimate = lam * (Bs @ st.f_all) + Bs @ (ratio * st.g) - lam * (Bs @ (ratio * st.f))
    unaudited = B @ np.where(seen, 0.0, N)
    return _Functionals(estimate, np.sqrt(var), lam, unaudited)


def _coefficients(plan: PaulaPlan, seg: _Segments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(checkpoint yields, Y-_K, Y+_K for K = ℓ+1..L) as rows of coefficients on the segments."""
    P, S = seg.chunks, seg.start.size
    prefix = np.tril(np.ones((P, P)))
    checkpoints = np.hstack((prefix, np.zeros((P, S - P))))
    grid = plan.grid
    G = grid.size
    if G < 2:
        empty = np.zeros((0, S))
        return checkpoints, empty, empty
    width = np.minimum(plan.window, grid).astype(np.float64)
    steps = np.diff(grid).astype(np.float64)
    base = np.hstack((np.ones((G - 1, P)), np.zeros((G - 1, S - P))))
    K = np.arange(G - 1)
    # Y-_K: s_k / w_{k+1} on window k+1 (segment P + k) for k < K
    lower = base.copy()
    lower[:, P:] = np.where(K[None, :] <= K[:, None], steps / width[1:], 0.0)
    # Y+_K: s_k / w_k on window k for k < K; window ℓ is the last prefix chunk
    upper = base.copy()
    upper[:, P - 1] += steps[0] / width[0]
    upper[:, P:] = np.where(K[None, :] < K[:, None], np.r_[steps[1:] / width[1:-1], 0.0], 0.0)
    return checkpoints, lower, upper


def _normal_quantile(p: float) -> float:
    from scipy.stats import norm  # here: scipy.stats costs a CLI start a quarter second

    return float(norm.ppf(p))


# --------------------------------------------------------------------------------------------
# The bounds
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GoldDiagnostics:
    """How the gold bounds were made (for the manifest): see :meth:`to_dict`."""

    confidence: float
    gold_labels: int
    unaudited_segments: int
    predictor: str
    events: int
    z: float
    lam: np.ndarray
    contradictions: int

    def to_dict(self) -> dict:
        lam = self.lam
        return {
            "certifies": "gold",
            "confidence": self.confidence,
            "gold_labels": self.gold_labels,
            "segments_without_gold": self.unaudited_segments,
            "predictor": self.predictor,
            "audit_events": self.events,
            "z": self.z,
            "alpha_split": {"audit": (1 - self.confidence) / 2, "monotone_rate_model": (1 - self.confidence) / 2},
            "power_tuning": {
                "lambda_min": float(lam.min()) if lam.size else None,
                "lambda_median": float(np.median(lam)) if lam.size else None,
                "lambda_max": float(lam.max()) if lam.size else None,
            },
            "contradictions": self.contradictions,
        }


@dataclass(frozen=True, eq=False)
class GoldBounds:
    """Bounds on the precision as gold says it; built by :func:`gold_bounds`.

    ``lower``/``upper``/``yield_lower``/``yield_upper`` are vectorised over ranks in [1, n], as
    on :class:`prdist.paula.bounds.PaulaBounds`; ``table()`` has the columns of ``bounds.parquet``.
    ``quality`` is the verdicts' agreement with gold, ``judge_quality`` the judge's (or None).
    """

    plan: PaulaPlan
    confidence: float
    quality: VerdictQuality
    judge_quality: VerdictQuality | None
    diagnostics: GoldDiagnostics
    _inner: PaulaBounds

    @property
    def n(self) -> int:
        return self.plan.n

    def __repr__(self) -> str:
        lo, hi = self._inner.lower(self.n), self._inner.upper(self.n)
        return (
            f"GoldBounds(n={self.n}, gold={self.diagnostics.gold_labels}, confidence={self.confidence:g}, "
            f"precision at n in [{float(lo):.3f}, {float(hi):.3f}])"
        )

    def lower(self, r):
        """Lower bound on the gold precision p(r)."""
        return self._inner.lower(r)

    def upper(self, r):
        """Upper bound on the gold precision p(r)."""
        return self._inner.upper(r)

    def yield_lower(self, r):
        return self._inner.yield_lower(r)

    def yield_upper(self, r):
        return self._inner.yield_upper(r)

    def plot(self, ax=None, *, exact=None):
        """Draw the bounds (see :func:`prdist.render.plotting.plot_bounds`)."""
        from prdist.render.plotting import plot_bounds

        return plot_bounds(self, ax=ax, exact=exact)

    @cached_property
    def _columns(self) -> dict[str, np.ndarray]:
        plan = self.plan
        ranks = np.unique(np.concatenate((np.arange(1, plan.prefix_end + 1), plan.grid, [plan.n]))).astype(np.int64)
        ylo, yhi = self._inner._yield_bounds(ranks)
        return {"rank": ranks, "precision_lower": ylo / ranks, "precision_upper": yhi / ranks, "yield_lower": ylo, "yield_upper": yhi}

    def columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`table`, as NumPy arrays (copies)."""
        return {name: values.copy() for name, values in self._columns.items()}

    def table(self) -> pd.DataFrame:
        """The bounds at 1..g_ℓ, every grid rank and n (the rows of ``bounds.parquet``)."""
        return pd.DataFrame(self.columns())

    def to_dict(self) -> dict:
        """JSON-ready summary for the manifest: the diagnostics and the verdict quality."""
        out = self.diagnostics.to_dict()
        out["verdict_quality"] = {"verdicts": self.quality.to_dict()}
        if self.judge_quality is not None:
            out["verdict_quality"]["judge"] = self.judge_quality.to_dict()
        return out


def _predictor(verdicts: np.ndarray, judge: np.ndarray | None) -> tuple[np.ndarray, str]:
    f = np.where(np.isnan(verdicts), NEUTRAL, verdicts)
    name = "verdicts" if (~np.isnan(verdicts)).any() else "none"
    if judge is not None and (~np.isnan(judge)).any():
        f = np.where(np.isnan(judge), f, judge)
        name = "judge" if name == "none" else "judge, else verdicts"
    return f, name


def gold_bounds(plan: PaulaPlan, verdicts, gold, *, confidence, judge=None) -> GoldBounds:
    """Bound the precision as gold says it, at every rank, from verdicts and a gold audit.

    Parameters
    ----------
    plan : PaulaPlan
    verdicts : array-like, shape (plan.size,)
        The run's verdicts aligned with ``plan.ranks``: 1/0, or a probability in [0, 1]; NaN none.
    gold : array-like of 0/1/NaN, shape (plan.size,)
        Gold verdicts, known on the audit (:func:`plan_gold_audit`) only.
    confidence : float in (0, 1)
        The bounds hold at every rank of ``table()`` at once with this probability (module
        docstring: asymptotically in the audit, under model (M) for gold at the grid points).
    judge : array-like, shape (plan.size,), optional
        An automatic judge's probability or 0/1 verdict per planned item (NaN none); where given
        it is the predictor, elsewhere the verdict is.

    Returns
    -------
    GoldBounds

    Examples
    --------
    >>> from prdist import plan_paula
    >>> plan = plan_paula(30_000, eps=0.1, window=50)
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(plan.n) < np.linspace(0.95, 0.4, plan.n)).astype(float)[plan.ranks - 1]
    >>> judge = np.where(rng.random(plan.size) < 0.9, truth, 1 - truth)   # right 90 % of the time
    >>> gold = np.full(plan.size, np.nan)
    >>> audit = np.searchsorted(plan.ranks, plan_gold_audit(plan, plan.size // 10, seed=0))
    >>> gold[audit] = truth[audit]
    >>> b = gold_bounds(plan, judge, gold, confidence=0.95)
    >>> alone = gold_bounds(plan, np.full(plan.size, np.nan), gold, confidence=0.95)
    >>> t, t0 = b.table(), alone.table()
    >>> bool(np.mean(t.precision_upper - t.precision_lower) < np.mean(t0.precision_upper - t0.precision_lower))
    True
    >>> b.diagnostics.predictor, alone.diagnostics.predictor
    ('verdicts', 'none')
    """
    owner = "gold_bounds"
    if not isinstance(plan, PaulaPlan):
        raise ParameterError(f"The 'plan' parameter of {owner} must be a PaulaPlan from plan_paula. Got {type(plan).__name__} instead.")
    confidence = check_confidence(confidence, owner=owner)
    said = _unit_array(verdicts, name="verdicts", owner=owner, size=plan.size)
    g = as_label_array(gold, name="gold", owner=owner)
    if g.size != plan.size:
        raise DataError(
            f"{owner} needs one gold value per planned rank: the plan has {plan.size} ranks but {g.size} were "
            "given. Align them with plan.ranks (NaN where there is no gold verdict)."
        )
    judged = None if judge is None else _unit_array(judge, name="judge", owner=owner, size=plan.size)
    f, predictor = _predictor(said, judged)

    seg = _segments(plan)
    stats = _SegmentStats.of(seg, g, f)
    checkpoints, lower_rows, upper_rows = _coefficients(plan, seg)
    B = np.vstack((checkpoints, lower_rows, upper_rows))
    est = _estimate(B, stats, tune=predictor != "none")
    P, G = seg.chunks, plan.grid.size
    events = 2 * P + lower_rows.shape[0] + upper_rows.shape[0]
    alpha = 1.0 - confidence
    z = _normal_quantile(1.0 - (alpha / 2) / events)
    lo = est.estimate - z * est.se
    hi = est.estimate + z * est.se + est.unaudited_upper

    cp_lo, cp_hi = lo[:P], hi[:P]
    if G >= 2:
        margins = confidence_margins(plan, g, confidence=1.0 - alpha / 2)
        grid_lo = lo[P : P + G - 1] - margins.lower[1:]
        grid_hi = hi[P + G - 1 :] + margins.upper[1:]
        points = np.concatenate(([0], seg.checkpoints, plan.grid[1:]))
        paper_lo = np.concatenate(([0.0], cp_lo, grid_lo))
        paper_hi = np.concatenate(([0.0], cp_hi, grid_hi))
    else:
        points = np.concatenate(([0], seg.checkpoints))
        paper_lo, paper_hi = np.concatenate(([0.0], cp_lo)), np.concatenate(([0.0], cp_hi))
    inner = _inner_bounds(plan, g, points, paper_lo, paper_hi)
    diagnostics = GoldDiagnostics(
        confidence, int((~np.isnan(g)).sum()), int((stats.audited == 0).sum()), predictor, events, z,
        est.lam, int(inner.diagnostics.contradiction_ranks.size),
    )
    regions = score_regions(plan)
    quality = verdict_quality(said, g, regions=regions)
    judge_quality = None if judged is None else verdict_quality(judged, g, regions=regions)
    return GoldBounds(plan, confidence, quality, judge_quality, diagnostics, inner)


def _inner_bounds(plan: PaulaPlan, g: np.ndarray, points: np.ndarray, paper_lo, paper_hi) -> PaulaBounds:
    """A PaulaBounds over the checkpoints and grid points (rank 0 first, yield 0 there) whose
    yield bounds are the given ones, clamped and made monotone-consistent."""
    unknown = np.isnan(g)
    known_ones = np.concatenate(([0], np.cumsum(np.where(unknown, 0.0, g)))).astype(np.int64)
    maybe_ones = np.concatenate(([0], np.cumsum(np.where(unknown, 1.0, g)))).astype(np.int64)
    top = np.searchsorted(plan.ranks, points, side="right")
    ones = known_ones[top].astype(np.float64)
    maybe = (points - (top - maybe_ones[top])).astype(np.float64)
    ylo, yhi, contradictions = _consistent_grid_bounds(np.asarray(paper_lo), np.asarray(paper_hi), ones, maybe)
    points = points.astype(np.int64)
    # The extended "plan" only tells PaulaBounds where its yield bounds sit: g_ℓ = 0 and a grid
    # through every checkpoint, so every rank is interpolated between two bounded points.
    extended = dataclasses.replace(plan, grid=points, g_l=0)
    empty = np.zeros(0)
    diagnostics = PaulaDiagnostics(None, empty.astype(np.int64), empty, empty, plan.gamma, points[contradictions], int(unknown.sum()))
    g = g.copy()
    for a in (g, ylo, yhi, known_ones, maybe_ones, points):
        a.setflags(write=False)
    return PaulaBounds(extended, g, empty, empty, ylo, yhi, ylo, yhi, diagnostics, known_ones, maybe_ones, None, None)


# --------------------------------------------------------------------------------------------
# PPI++ for one mean (the oracle-checked building block)
# --------------------------------------------------------------------------------------------
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
