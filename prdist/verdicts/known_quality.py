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
2. Prediction-powered estimate of each Θ (design-based). The audit is a stratified random sample
   of the planned items (:func:`~prdist.verdicts.audit.plan_gold_audit`): its strata are the
   segments or, when it was drawn with a judge, every segment's two judge classes (the items the
   judge calls correct, and those it calls incorrect; :mod:`prdist.verdicts.audit` says why).
   Items are drawn without replacement within each stratum, and the analysis conditions on how
   many gold verdicts each stratum holds (post-stratification). Below, s runs over the strata and
   b_s is the coefficient of the stratum's segment. With a predictor f_i in [0, 1] on every planned
   item (the judge's probability or verdict where given, else the run's verdict, else 1/2) and any λ,

       Θ̂(λ) = Σ_s b_s [λ Σ_{i in s} f_i + (N_s / n_s) Σ_{i in s, audited} (g_i - λ f_i)]

   is unbiased for Θ for any fixed f and λ (N_s planned and n_s audited items in s), because the
   second term is the Horvitz-Thompson estimate of Σ_{i in s} (g_i - λ f_i). Its variance is
   Σ_s b_s² N_s² (1 - n_s/N_s) S_s²(λ) / n_s, S_s² the within-stratum variance of g - λ f.
   λ is power-tuned (PPI++), one per functional, from the same audit (as in PPI++, this keeps
   the estimate consistent and the interval asymptotically valid), clipped to [0, 1] as
   ppi-python does: a predictor anti-correlated with gold gets λ = 0, exactly gold alone's
   interval, a useless one a λ near 0, and a good one shrinks the variance by about
   1 - corr(g, f)² within strata (a 0/1 judge within its own classes is constant, so there the
   gain is the stratification's, not λ's).
   S_s² is estimated as the larger of the stratum's sample variance of g - λ f and the
   within-stratum variance pooled over the strata of its pool (all strata; or, with judge
   classes, the strata of the same class) at most ``POOL_REACH`` = 20 places from it in rank
   order, so that the floor follows the precision along the ranks, the pool counting two pseudo-observations
   at ±1/2 about its mean (Agresti-Coull's one success and one failure). The floor keeps a stratum whose few
   audited items all agree (rare errors unseen, a precision near 1) from claiming a variance near
   zero, the Wald interval's failure on rare events (and a predictor that agreed with every
   audited gold verdict from claiming exactness); it costs width where strata differ. λ
   minimises the variance with own plus pooled variance per stratum (a quadratic in λ that
   bounds the one used). A stratum without any gold verdict contributes its
   deterministic range [0, b_s N_s]; a stratum audited whole contributes exactly.
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

Claim. If the audit is drawn as in step 2 independently of the verdicts and the gold labels
(for an audit stratified by the judge: given the judge's classes, ``gold_bounds`` being given the
same judge as ``audit_judge``), and gold is missing on audited items independently
of its value (a "cannot judge" gold verdict counts as not audited), then ``gold_bounds(...).lower(r) <= p(r) <= .upper(r)`` at every
rank of ``table()`` at once with probability at least ``confidence`` - up to the normal
approximation of step 3 - whatever the verdicts and the judge say. Checkpoints and the prefix
need no model; the grid points need (M) for gold, as :func:`prdist.paula_bounds` does.

:func:`prdist.verdicts.ppi.ppi_mean_interval` is the textbook PPI++ interval for one mean from i.i.d. data (the
formula of ppi-python's ``ppi_mean_ci``), for use on a single cut-off; :func:`verdict_quality`
measures sensitivity, specificity and Cohen's kappa of verdicts against gold.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from prdist._validation import as_label_array, check_confidence, check_int
from prdist.paula.bounds import PaulaBounds, PaulaDiagnostics, _consistent_grid_bounds
from prdist.paula.confidence import confidence_margins
from prdist.errors import DataError, ParameterError
from prdist.paula.plan import PaulaPlan
from prdist.verdicts.audit import CLASSES, Segments, design_weights, judge_classes, segments, strata

__all__ = [
    "Agreement",
    "GoldBounds",
    "VerdictQuality",
    "gold_bounds",
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

    The four counts are over the compared items. When they are a sample drawn at unequal rates
    (a gold audit drawn by the judge's classes), ``weighted`` holds the design-weighted counts
    (each item counting N/n of its stratum: estimates of the counts over all planned items) and
    the rates come from them, and ``effective`` holds the effective numbers of gold positives and
    negatives for intervals on the sensitivity and specificity: Korn and Graubard's
    r (1 - r) / V, V the rate's stratified, linearised variance estimate.
    """

    region: str
    true_positive: int
    false_negative: int
    true_negative: int
    false_positive: int
    weighted: tuple[float, float, float, float] | None = None
    effective: tuple[float, float] | None = None

    @property
    def compared(self) -> int:
        return self.true_positive + self.false_negative + self.true_negative + self.false_positive

    @property
    def _cells(self) -> tuple:
        if self.weighted is not None:
            return self.weighted
        return self.true_positive, self.false_negative, self.true_negative, self.false_positive

    @property
    def sensitivity(self) -> float | None:
        tp, fn, _, _ = self._cells
        return _ratio(tp, tp + fn)

    @property
    def specificity(self) -> float | None:
        _, _, tn, fp = self._cells
        return _ratio(tn, tn + fp)

    @property
    def kappa(self) -> float | None:
        tp, fn, tn, fp = self._cells
        n = tp + fn + tn + fp
        if n == 0:
            return None
        said_yes = tp + fp
        gold_yes = tp + fn
        observed = (tp + tn) / n
        chance = (said_yes * gold_yes + (n - said_yes) * (n - gold_yes)) / n**2
        return None if chance >= 1.0 else (observed - chance) / (1.0 - chance)

    def to_dict(self) -> dict:
        """JSON-ready (strict JSON: undefined rates are null)."""
        out = {
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
        if self.weighted is not None:
            names = ("true_positive", "false_negative", "true_negative", "false_positive")
            out["design_weighted"] = {**dict(zip(names, self.weighted)), "positives_effective": self.effective[0],
                                      "negatives_effective": self.effective[1]}
        return out


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


def _agreement(region: str, said: np.ndarray, gold: np.ndarray, weights: np.ndarray | None = None,
               strata: np.ndarray | None = None) -> Agreement:
    yes, pos = said >= 0.5, gold == 1.0
    cells = (yes & pos, ~yes & pos, ~yes & ~pos, yes & ~pos)
    counts = [int(np.sum(c)) for c in cells]
    if weights is None or not said.size:  # nothing compared: no weighted counts to give
        return Agreement(region, *counts)
    weighted = tuple(float(np.sum(weights[c])) for c in cells)
    effective = (_effective_size(yes, pos, weights, strata), _effective_size(~yes, ~pos, weights, strata))
    return Agreement(region, *counts, weighted=weighted, effective=effective)


def _effective_size(hit: np.ndarray, base: np.ndarray, weights: np.ndarray, strata: np.ndarray) -> float:
    """Korn and Graubard's effective sample size r (1 - r) / V of the weighted rate
    r = Σ w [hit and base] / Σ w [base], V its stratified, linearised variance estimate (each
    stratum's items a simple random sample of it), at most the number of ``base`` items; that
    number where r is 0 or 1 or V is 0."""
    count = float(np.sum(base))
    total = float(np.sum(weights[base]))
    if total <= 0:
        return 0.0
    rate = float(np.sum(weights[hit & base])) / total
    residual = np.where(base, hit.astype(float) - rate, 0.0)  # linearisation of the ratio, times Σ w [base]
    variance = 0.0
    for h in np.unique(strata):
        mine = strata == h
        n = int(mine.sum())
        if n < 2:
            continue
        size = float(weights[mine].sum())  # the stratum's planned items
        variance += size**2 * (1.0 - n / size) * float(np.var(residual[mine], ddof=1)) / n
    variance /= total**2
    if variance <= 0 or rate in (0.0, 1.0):
        return count
    return min(count, rate * (1.0 - rate) / variance)


def verdict_quality(verdicts, gold, *, regions=None, weights=None, strata=None) -> VerdictQuality:
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
    weights : array-like of float >= 0, same length, optional
        Design weights of the gold items when they were sampled at unequal rates
        (:func:`prdist.verdicts.audit.design_weights`): the rates are then weighted estimates
        (see :class:`Agreement`).
    strata : array-like of int, same length
        The stratum of every item (:func:`prdist.verdicts.audit.strata`), with ``weights``.

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
    w = h = None
    if weights is not None:
        w, h = np.asarray(weights, dtype=np.float64), np.asarray(strata)
        if w.shape != said.shape or h.shape != said.shape or np.any(w[both] < 0) or not np.all(np.isfinite(w[both])):
            raise DataError(f"{owner} needs one finite weight >= 0 and one stratum per verdict: got {w.size} weights and "
                            f"{h.size} strata for {said.size} verdicts.")

    def part(mask):
        return (None, None) if w is None else (w[mask], h[mask])

    overall = _agreement("all", said[both], truth[both], *part(both))
    if regions is None:
        return VerdictQuality(overall)
    labels = np.asarray(regions, dtype=object)
    if labels.shape != said.shape:
        raise DataError(f"{owner} needs one region per verdict: got {labels.size} regions for {said.size} verdicts.")
    _, first = np.unique(labels.astype(str), return_index=True)
    ordered = labels[np.sort(first)]
    per_region = tuple(_agreement(str(r), said[both & (labels == r)], truth[both & (labels == r)], *part(both & (labels == r)))
                       for r in ordered)
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
# Prediction-powered estimates of the segment functionals
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _StrataStats:
    """Per-stratum sums over the audited items (g gold, f predictor) and over all planned items.

    The strata are the audit's design strata (:mod:`prdist.verdicts.audit`): the segments, or
    every segment's two judge classes; ``pool`` names the group whose variance floors a stratum's
    (one group without a judge, a group per judge class with one)."""

    planned: np.ndarray  # N_s
    audited: np.ndarray  # n_s
    g: np.ndarray
    f: np.ndarray
    gf: np.ndarray
    ff: np.ndarray
    f_all: np.ndarray  # Σ f over all planned items of s
    pool: np.ndarray  # pool group of every stratum

    @classmethod
    def of(cls, stratum: np.ndarray, count: int, g: np.ndarray, f: np.ndarray, pool: np.ndarray | None = None) -> _StrataStats:
        audited = ~np.isnan(g)
        gz = np.where(audited, g, 0.0)
        fz = np.where(audited, f, 0.0)

        def total(x):
            return np.bincount(stratum, weights=x, minlength=count)

        return cls(
            total(np.ones(stratum.size)), total(audited), total(gz), total(fz), total(gz * fz), total(fz * fz),
            total(f), np.zeros(count, dtype=np.int64) if pool is None else pool,
        )


@dataclass(frozen=True, eq=False)
class _Functionals:
    """Θ_m = Σ_s B[m, s] T_s, their PPI++ estimates, standard errors and tuned λ."""

    estimate: np.ndarray
    se: np.ndarray
    lam: np.ndarray
    unaudited_upper: np.ndarray  # Σ over strata without gold of B N_s (their worst case)


#: How many strata of its pool on either side (in rank order) a stratum's variance floor pools:
#: enough (about 40 strata of audited items) to guard a stratum whose few audited items all agree,
#: few enough to follow the precision along the ranks - a pool over all strata floors the strata
#: near the top, where errors are rare and the variance small, at the variance of the deep ones
#: (at n = 10^5 that made gold alone's bounds 16 % wider, and cost a judge's classes most of their gain).
POOL_REACH = 20


def _neighbourhood_sums(values: np.ndarray, group: np.ndarray, reach: int) -> np.ndarray:
    """For every stratum (column), the sums of ``values`` over the strata of its group within
    ``reach`` places of it in rank order."""
    out = np.empty_like(values)
    for g in np.unique(group):
        mine = np.flatnonzero(group == g)
        total = np.concatenate((np.zeros((values.shape[0], 1)), np.cumsum(values[:, mine], axis=1)), axis=1)
        place = np.arange(mine.size)
        low, high = np.maximum(place - reach, 0), np.minimum(place + reach + 1, mine.size)
        out[:, mine] = total[:, high] - total[:, low]
    return out


def _estimate(B: np.ndarray, st: _StrataStats, *, tune: bool) -> _Functionals:
    n, N = st.audited, st.planned
    seen = n > 0
    safe = np.where(seen, n, 1.0)
    weight = np.where(seen, N**2 * (1.0 - n / np.maximum(N, 1.0)) / safe, 0.0)  # K_s (an empty stratum: 0)
    # Sums of squared deviations of g - λf in each segment: SS_s(λ) = ss_g - 2λ ss_gf + λ² ss_f
    ss = np.stack((st.g - st.g**2 / safe, st.gf - st.g * st.f / safe, st.ff - st.f**2 / safe))  # g² = g
    dof = n - 1.0
    # pooled within-stratum variance of each pool group, with two pseudo-observations at ±1/2
    # (Agresti-Coull's one success and one failure): never zero, even when every audited
    # verdict agrees with gold
    pooled = _neighbourhood_sums(np.vstack((ss, np.maximum(dof, 0.0))), st.pool, POOL_REACH)
    pool = (pooled[:3] + np.array([[0.5], [0.0], [0.0]])) / (pooled[3] + 1.0)  # (3, S)
    own = np.where(dof > 0, ss / np.where(dof > 0, dof, 1.0), 0.0)
    B2w = B**2 * weight  # (M, S)
    if tune:
        # λ minimises the variance with own + pooled variance per segment (quadratic in λ, and
        # an upper bound of the max used below)
        quad = B2w @ (own + pool).T  # (M, 3): A, C, D of A - 2λC + λ²D
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.where(quad[:, 2] > 0, quad[:, 1] / quad[:, 2], 0.0)
        lam = np.clip(np.nan_to_num(lam), 0.0, 1.0)
    else:
        lam = np.zeros(B.shape[0])
    powers = np.stack((np.ones_like(lam), -2.0 * lam, lam**2), axis=1)  # (M, 3)
    # each segment's variance at λ_m, at least the pooled one: (M, S)
    variance = np.maximum(powers @ own, powers @ pool)
    var = np.maximum(np.sum(B2w * variance, axis=1), 0.0)
    ratio = np.where(seen, N / safe, 0.0)
    Bs = B * seen
    estimate = lam * (Bs @ st.f_all) + Bs @ (ratio * st.g) - lam * (Bs @ (ratio * st.f))
    unaudited = B @ np.where(seen, 0.0, N)
    return _Functionals(estimate, np.sqrt(var), lam, unaudited)


def _coefficients(plan: PaulaPlan, seg: Segments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    unaudited_strata: int | None = None  # with an audit stratified by the judge: its strata without gold

    def to_dict(self) -> dict:
        lam = self.lam
        by_judge = {} if self.unaudited_strata is None else {
            "audit_strata": "segment x judge class", "strata_without_gold": self.unaudited_strata}
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
            **by_judge,
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


def gold_bounds(plan: PaulaPlan, verdicts, gold, *, confidence, judge=None, audit_judge=None) -> GoldBounds:
    """Bound the precision as gold says it, at every rank, from verdicts and a gold audit.

    Parameters
    ----------
    plan : PaulaPlan
    verdicts : array-like, shape (plan.size,)
        The run's verdicts aligned with ``plan.ranks``: 1/0, or a probability in [0, 1]; NaN none.
    gold : array-like of 0/1/NaN, shape (plan.size,)
        Gold verdicts, known on the audit (:func:`~prdist.verdicts.audit.plan_gold_audit`) only.
    confidence : float in (0, 1)
        The bounds hold at every rank of ``table()`` at once with this probability (module
        docstring: asymptotically in the audit, under model (M) for gold at the grid points).
    judge : array-like, shape (plan.size,), optional
        An automatic judge's probability or 0/1 verdict per planned item (NaN none); where given
        it is the predictor, elsewhere the verdict is.
    audit_judge : array-like, shape (plan.size,), optional
        The ``judge`` given to :func:`~prdist.verdicts.audit.plan_gold_audit` when the audit was
        drawn by the judge's classes (or those classes as 0/1): each segment's two classes are
        then analysed as strata of their own, which makes that design valid here and narrows the
        bounds (:mod:`prdist.verdicts.audit`). Leave it None for an audit drawn without a judge;
        giving it for one drawn otherwise, or omitting it for one drawn by the judge, breaks the
        guarantee.

    Returns
    -------
    GoldBounds

    Examples
    --------
    >>> from prdist import plan_paula
    >>> from prdist.verdicts.audit import plan_gold_audit
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

    seg = segments(plan)
    checkpoints, lower_rows, upper_rows = _coefficients(plan, seg)
    B = np.vstack((checkpoints, lower_rows, upper_rows))
    if audit_judge is not None:
        classes = judge_classes(_unit_array(audit_judge, name="audit_judge", owner=owner, size=plan.size), plan.size, owner=owner)
        stats = _StrataStats.of(strata(plan, seg, classes), seg.sizes.size * CLASSES, g, f,
                                pool=np.tile(np.arange(CLASSES), seg.sizes.size))
        B = np.repeat(B, CLASSES, axis=1)  # a stratum's coefficient is its segment's
    else:
        stats = _StrataStats.of(seg.index(plan.size), seg.sizes.size, g, f)
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
    per_segment = stats.audited.reshape(seg.sizes.size, -1)
    diagnostics = GoldDiagnostics(
        confidence, int((~np.isnan(g)).sum()), int((per_segment.sum(axis=1) == 0).sum()), predictor, events, z,
        est.lam, int(inner.diagnostics.contradiction_ranks.size),
        int((stats.audited[stats.planned > 0] == 0).sum()) if audit_judge is not None else None,
    )
    regions = score_regions(plan)
    design = {} if audit_judge is None else {"weights": design_weights(plan, g, classes), "strata": strata(plan, seg, classes)}
    quality = verdict_quality(said, g, regions=regions, **design)
    judge_quality = None if judged is None else verdict_quality(judged, g, regions=regions, **design)
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
