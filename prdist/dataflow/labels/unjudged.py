"""Estimates that need every label, when some drawn items can never be judged.

Nobody can judge some items; waiting for them would block forever. The comparison proceeds
without them and says how, twice:

- the estimate with those items left out of the sample, valid under the stated assumption that
  they are *missing at random* (their correctness unrelated to being unjudgeable); and
- the worst case over their verdicts: ``precision_worst_low`` is the lowest lower confidence limit
  and ``precision_worst_high`` the highest upper one over **every** assignment of correct /
  incorrect to them (:func:`limits_over_assignments`). No assumption about those items enters;
  the limits are still the estimator's normal-approximation limits, as ``precision_ci_low`` /
  ``precision_ci_high`` are.

**Why not just "all incorrect" and "all correct".** The lower limit is π̂ − z·se and both terms
move with the labels: π̂ rises with every correct item, but so may the standard error, so a
mixed assignment (or even "all correct") can give a lower lower limit than "all incorrect".

**The method, per system i.** With h(x) = r(x) f(x), r = p_i / q_i, every label enters through the
sums S_j = Σ_x c_xj h(x) and T_j = Σ_x c_xj h(x)² = Σ_x c_xj r(x)² f(x) over each system j's
draws (c_xj: draw counts; f(x)² = f(x) for a label). The estimate is π̂ = Σ_j w_ij S_j / n_j
(linear in f) and its variance estimate V = Σ_j w_ij² (T_j − S_j² / n_j) / (n_j (n_j − 1)).

- *Exact.* Two unjudged items with the same r(x) and the same draw counts (by the systems that
  weigh in system i's estimate) are exchangeable: only how many of such a group are correct
  matters. When the groups' count vectors number at most ``max_assignments``
  (:data:`EXACT_ASSIGNMENTS`), every one is evaluated (vectorised) and the limits are the exact
  minimum and maximum over every assignment: with every item its own group, that is 2^k
  assignments, so k <= 16 unjudged items always; uniform sampling, where items of one support
  pattern drawn alike are exchangeable, goes much further.
- *Outer bound* (beyond that). Extend f from {0, 1} to [0, 1] with the same formulas (T_j linear
  in f). On that box, V is concave (linear minus a square of a linear function) and non-negative
  (T_j >= Σ c_xj (r f)², so T_j − S_j²/n_j is at least a sample variance), so sqrt(V) is concave
  and L = π̂ − z sqrt(V) is **convex**. The minimum of L over the box is at most its minimum over
  the assignments, and for any point y of the box with V(y) > 0, convexity gives the certified
  floor L(y) + Σ_g min(∂_g L(y) (m_g − y_g), −∂_g L(y) y_g) <= min over the box (the linearisation
  at y is below L; its minimum over the box is at a vertex). y is L-BFGS-B's solution of the
  relaxation (in group counts, 0 <= y_g <= m_g); whatever the solver's accuracy, the floor is a
  floor. The upper limit is the same with −π̂ (U = π̂ + z sqrt(V) is concave). ``slack`` is the
  distance from the bound to the worst limit of the assignments tried (the rounded relaxed
  solution, all incorrect, all correct): the exact worst case lies within it. If V is 0 at the
  centre of the box it is 0 on the whole box (a concave function >= 0 that is 0 inside is 0
  everywhere), the limits are π̂'s, linear, and exact at a vertex.

Limits are clipped to [0, 1] like the estimator's; bounds are exact up to floating-point rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from prdist.importance import JointSample, estimate_precision
from prdist.importance.moments import _z
from prdist.dataflow.compare.estimation import LabeledSample, estimate_systems
from prdist.dataflow.compare.sampling import DrawnSample

__all__ = ["EXACT_ASSIGNMENTS", "WorstCase", "count_assignments", "estimate_labeled", "limits_over_assignments"]

#: Exact enumeration evaluates at most this many assignments (of group counts) per system.
EXACT_ASSIGNMENTS = 1 << 16


def count_assignments(sizes) -> np.ndarray:
    """Every vector of counts (k_1, ..., k_G) with 0 <= k_g <= sizes[g], shape (prod(sizes + 1), G).

    Examples
    --------
    >>> count_assignments([1, 2]).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    >>> count_assignments([]).shape
    (1, 0)
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.indices(tuple(sizes + 1)).reshape(sizes.size, -1).T


def assignment_count(sizes) -> int:
    """How many count vectors :func:`count_assignments` lists (an exact Python integer)."""
    total = 1
    for m in np.asarray(sizes, dtype=np.int64).tolist():
        total *= m + 1
    return total


@dataclass(frozen=True, eq=False)
class WorstCase:
    """The confidence limits of every system over every assignment of the unjudged items.

    ``low`` / ``high``: the lowest lower and highest upper limit (clipped to [0, 1]); ``exact``:
    whether both are the exact extremes (every assignment evaluated) or outer bounds; ``assignments``:
    the count vectors evaluated (0 for a bound); ``slack``: how far the worst assignment tried lies
    inside a bound (0 where exact).
    """

    low: np.ndarray
    high: np.ndarray
    exact: np.ndarray
    assignments: np.ndarray
    slack: np.ndarray


@dataclass(frozen=True, eq=False)
class _Limits:
    """π̂ and V of one system as functions of the correct counts of the unjudged item groups.

    Sums are taken about the system means ``mu`` of the all-incorrect sample (a constant shift
    changes neither the variance nor, after adding it back, π̂, and keeps the digits).
    """

    weight: np.ndarray  # w_ij of the systems j that weigh in, shape (J,)
    n: np.ndarray  # their draws
    mu: np.ndarray  # mean of h over each one's draws, all unjudged incorrect
    s0: np.ndarray  # Σ c (h - mu) with all unjudged incorrect
    t0: np.ndarray  # Σ c (h - mu)²
    ds: np.ndarray  # (G, J): change of s per correct item of the group
    dt: np.ndarray  # (G, J): change of t per correct item
    sizes: np.ndarray  # (G,) items per group
    z: float

    def parts(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """π̂ and V at count vectors ``k`` of shape (C, G)."""
        s = self.s0 + k @ self.ds
        t = self.t0 + k @ self.dt
        precision = (self.mu + s / self.n) @ self.weight
        return precision, np.maximum((t - s**2 / self.n) @ self.beta, 0.0)

    @property
    def beta(self) -> np.ndarray:
        return self.weight**2 / (self.n * (self.n - 1))

    def objective(self, k: np.ndarray, sign: float, smoothing: float = 0.0) -> np.ndarray:
        """sign·π̂ − z·sqrt(V + smoothing): the lower limit (sign 1) or minus the upper one (sign −1)."""
        precision, variance = self.parts(k)
        return sign * precision - self.z * np.sqrt(variance + smoothing)

    def gradient(self, k: np.ndarray, sign: float, smoothing: float = 0.0) -> np.ndarray:
        """The gradient of :meth:`objective` at one count vector (where V + smoothing > 0)."""
        s = self.s0 + k @ self.ds
        _, variance = self.parts(k[None])
        d_precision = self.ds @ (self.weight / self.n)
        d_variance = self.dt @ self.beta - 2.0 * self.ds @ (self.beta * s / self.n)
        return sign * d_precision - self.z * d_variance / (2.0 * np.sqrt(variance[0] + smoothing))

    def relaxed_minimum(self, sign: float) -> tuple[float, float]:
        """A certified floor of the objective over every assignment, and the least value found
        at an assignment (the floor's slack is their difference)."""
        from scipy.optimize import minimize  # only where the enumeration is too large

        top = self.sizes.astype(np.float64)
        centre = top / 2.0
        vertices = np.stack([np.zeros_like(top), top])
        inside = self.parts(centre[None])[1][0]
        if inside <= 0.0:
            # V vanishes inside the box, hence everywhere on it: the objective is linear.
            value = float(self.objective(vertices, sign).min())
            return value, value
        # The solver minimises a smoothed objective (finite gradients where V = 0); the floor is
        # certified on the objective itself.
        eps = 1e-12 * inside
        solved = minimize(lambda k: (float(self.objective(k[None], sign, eps)[0]), self.gradient(k, sign, eps)), centre,
                          jac=True, method="L-BFGS-B", bounds=list(zip(np.zeros_like(top), top)))
        floor = -np.inf
        for y in (np.clip(solved.x, 0.0, top), centre):
            if self.parts(y[None])[1][0] > 0.0:
                g = self.gradient(y, sign)
                floor = max(floor, float(self.objective(y[None], sign)[0] + np.minimum(g * (top - y), -g * y).sum()))
        found = float(self.objective(np.vstack([np.round(solved.x), vertices]), sign).min())
        return min(floor, found), found


def _system_limits(sample: JointSample, unknown: np.ndarray, weights: np.ndarray, i: int, z: float) -> _Limits:
    """The :class:`_Limits` of system ``i`` (``sample`` labeled, ``unknown`` items set to 0)."""
    p = sample.probabilities
    q = p @ weights.T
    inside = p[:, i] > 0
    r = np.zeros(p.shape[0])
    r[inside] = p[inside, i] / q[inside, i]
    weigh = np.flatnonzero(weights[i] > 0)
    counts = sample.counts[:, weigh].astype(np.float64)
    n = counts.sum(axis=0)
    h = r * sample.labels
    mu = counts.T @ h / n
    s0 = counts.T @ h - n * mu
    t0 = ((h[:, None] - mu) ** 2 * counts).sum(axis=0)
    free = unknown & (r > 0) & (counts.sum(axis=1) > 0)
    rows, sizes = np.unique(np.column_stack([r[free], counts[free]]), axis=0, return_counts=True)
    ratio, c = rows[:, 0], rows[:, 1:]
    ds = c * ratio[:, None]
    dt = c * ((ratio[:, None] - mu) ** 2 - mu**2)
    return _Limits(weights[i, weigh], n, mu, s0, t0, ds, dt, sizes, z)


def limits_over_assignments(sample: JointSample, unknown, *, weights="overlap", confidence=0.95,
                            max_assignments: int = EXACT_ASSIGNMENTS) -> WorstCase:
    """The joint estimator's confidence limits over every assignment of the ``unknown`` labels.

    Parameters
    ----------
    sample : JointSample
        Labeled except at ``unknown`` (whatever labels it holds there are ignored).
    unknown : array-like of bool, shape (U,)
        The items whose label may be anything.
    weights, confidence
        As in :func:`prdist.importance.estimate_precision` (the weights do not depend on labels).
    max_assignments : int
        Enumerate every assignment (of group counts, see the module notes) up to this many per
        system; beyond, the convex outer bound.

    Returns
    -------
    WorstCase

    Examples
    --------
    >>> from prdist.importance import SystemOutput
    >>> a = SystemOutput.from_scores("A", ["x", "y"], [1.0, 0.5])
    >>> b = SystemOutput.from_scores("B", ["y", "z"], [1.0, 0.5])
    >>> s = JointSample.from_draws([a, b], [["x", "y", "y", "x"], ["z", "y", "z"]])
    >>> s = s.with_labels(["x", "y"], [1, 0])
    >>> worst = limits_over_assignments(s, [False, False, True])
    >>> worst.low.round(3).tolist(), worst.exact.tolist()
    ([0.0, 0.0], [True, True])
    """
    unknown = np.asarray(unknown, dtype=bool)
    filled = replace(sample, labels=np.where(unknown, 0.0, sample.labels))
    est = estimate_precision(filled, weights=weights, confidence=confidence)  # validates, fixes w
    z = _z(est.confidence)
    m = len(sample.systems)
    low, high, slack = np.empty(m), np.empty(m), np.zeros(m)
    exact, assignments = np.zeros(m, bool), np.zeros(m, np.int64)
    for i in range(m):
        limits = _system_limits(filled, unknown, est.weights, i, z)
        count = assignment_count(limits.sizes)
        if count <= max(max_assignments, 1):  # one assignment: no unjudged item weighs in
            k = count_assignments(limits.sizes).astype(np.float64)
            low[i], high[i] = limits.objective(k, 1.0).min(), -limits.objective(k, -1.0).min()
            exact[i], assignments[i] = True, count
        else:
            (low[i], found_low), (minus_high, found_high) = limits.relaxed_minimum(1.0), limits.relaxed_minimum(-1.0)
            high[i] = -minus_high
            slack[i] = max(np.clip(found_low, 0, 1) - np.clip(low[i], 0, 1), np.clip(high[i], 0, 1) - np.clip(-found_high, 0, 1))
    return WorstCase(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0), exact, assignments, slack)


def estimate_labeled(labeled: LabeledSample, drawn: DrawnSample, params, *, exhaustive_in_pool=None) -> tuple[pd.DataFrame, dict]:
    """:func:`~prdist.dataflow.compare.estimate_systems` on a sample whose only unknown labels
    belong to items nobody can judge.

    With no such item this is ``estimate_systems`` itself. Otherwise the rows are the
    missing-at-random estimates, plus ``precision_worst_low`` / ``precision_worst_high``: the
    lowest lower and highest upper confidence limit over every assignment of correct / incorrect
    to those items (:func:`limits_over_assignments`: exact where every assignment was evaluated,
    else an outer bound), and the diagnostics say which.
    """
    sample = labeled.sample
    never = np.zeros(sample.keys.size, bool) if labeled.cannot_judge is None else labeled.cannot_judge & np.isnan(sample.labels)
    if not never.any():
        return estimate_systems(sample, drawn, params, exhaustive_in_pool=exhaustive_in_pool)
    kept = ~never
    judged = replace(sample, keys=sample.keys[kept], probabilities=sample.probabilities[kept], counts=sample.counts[kept],
                     labels=sample.labels[kept])
    frame, diagnostics = estimate_systems(judged, drawn, params, exhaustive_in_pool=exhaustive_in_pool)
    filled = {fill: estimate_systems(replace(sample, labels=np.where(never, fill, sample.labels)), drawn, params,
                                     exhaustive_in_pool=exhaustive_in_pool)[0] for fill in (0.0, 1.0)}
    worst = limits_over_assignments(sample, never, weights=params.weights, confidence=params.confidence)
    frame["precision_worst_low"] = worst.low
    frame["precision_worst_high"] = worst.high
    k = int(never.sum())
    names = np.array(frame["system"], dtype=object)
    diagnostics["cannot_judge"] = {
        "items": k,
        "assumption": "missing at random",
        "precision_if_incorrect": filled[0.0]["precision"].tolist(),
        "precision_if_correct": filled[1.0]["precision"].tolist(),
        "worst_case": ["exact" if e else "outer bound" for e in worst.exact],
        "worst_case_assignments": worst.assignments.tolist(),
        "worst_case_slack": worst.slack.tolist(),
    }
    diagnostics.setdefault("notes", []).append(_worst_case_note(k, names, worst))
    return frame, diagnostics


def _worst_case_note(k: int, names: np.ndarray, worst: WorstCase) -> str:
    """The manifest's (and the terminal's) sentence on what the worst-case columns are."""
    text = (f"{k} drawn item(s) nobody can judge are left out of the estimates, assuming they are missing at random; "
            "precision_worst_low / precision_worst_high are the lowest lower and the highest upper confidence limit "
            "(normal approximation, like precision_ci_low / _high) over every assignment of correct / incorrect to them")
    if worst.exact.all():
        return text + ": exact, every assignment evaluated."
    bounded = ", ".join(f"{name} (within {slack:.3g})" for name, slack in zip(names[~worst.exact], worst.slack[~worst.exact]))
    exact = ", ".join(names[worst.exact]) or "no system"
    return (text + f": exact for {exact}; for {bounded} too many assignments to evaluate, so an outer bound "
            "(a convex relaxation's certified floor / ceiling; the worst assignment found lies within the stated distance).")
