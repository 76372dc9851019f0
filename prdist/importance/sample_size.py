"""The draws a new system (or release) needs for a target interval half-width (appendix B.4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prdist._validation import check_choice, check_confidence, check_float, check_int
from prdist.errors import ParameterError
from prdist.importance.joint_sample import JointSample, _check_sample, _require_labels
from prdist.importance.moments import _system_means_and_variances, _z
from prdist.importance.systems import SystemOutput, _check_systems, _key_index
from prdist.importance.weights import OVERLAP
from prdist.params import WEIGHTS


SECOND_MOMENT, WORST_CASE = "second-moment", "worst-case"
_BOUNDS = (SECOND_MOMENT, WORST_CASE)


def _worst_case_variance(p: np.ndarray, g: np.ndarray) -> float:
    """max over labels f ∈ [0, 1]^X of Var_{x~p}[g(x) f(x)], for g >= 0.

    The objective Σ p g² f − (Σ p g f)² is concave in f; at its maximum f(x) = 1 where g(x)
    exceeds 2·Σ p g f, 0 below, and only items at that threshold (equal g, so interchangeable) are
    fractional. So the maximum is over "the k items of largest g, plus a fraction α of the next",
    and for each k the best α solves a concave quadratic. It bounds every 0/1 labeling's variance
    and exceeds the best one by at most max_x p(x)² g(x)² / 4 (one fractional item).
    """
    order = np.argsort(-g, kind="stable")
    a = p[order] * g[order]  # p g
    b = a * g[order]  # p g²
    first = np.concatenate(([0.0], np.cumsum(a)[:-1]))  # Σ p g over the k items before
    second = np.concatenate(([0.0], np.cumsum(b)[:-1]))
    alpha = np.zeros_like(a)
    positive = a > 0
    # Best fraction of the next item: the vertex (g - 2 Σ p g) / (2 p g) of the quadratic, clipped;
    # a ratio that overflows for a tiny p g just clips to 1.
    with np.errstate(over="ignore", divide="ignore"):
        vertex = (g[order][positive] - 2 * first[positive]) / (2 * a[positive])
    alpha[positive] = np.clip(vertex, 0.0, 1.0)
    value = second + alpha * b - (first + alpha * a) ** 2
    return float(max(0.0, value.max(initial=0.0)))


@dataclass(frozen=True)
class SampleSizePlan:
    """How many draws a new system needs.

    ``size`` draws bring the conservative half-width ``half_width`` (= z·sqrt(``variance``)) to
    the target; ``expected_new_labels`` is the expected number of distinct drawn items without a
    label yet: the annotation cost.
    """

    size: int
    variance: float
    half_width: float
    expected_new_labels: float
    confidence: float


def _smallest_size(variance, target: float, max_size: int, *, too_few: str) -> int:
    """The least size in [0, max_size] whose ``variance(size)`` is at most ``target``.

    ``variance`` falls with the size: doubling finds a bracket, bisection the least size in it.
    ``too_few``: the message when even ``max_size`` is not enough.

    >>> _smallest_size(lambda n: 100 / (n + 1), 1.0, 1000, too_few="")
    99
    """
    if variance(0) <= target:
        return 0
    low, high = 0, 1  # invariant: variance(low) > target
    while variance(high) > target:
        if high >= max_size:
            raise ParameterError(too_few)
        low, high = high, min(2 * high, max_size)
    while high - low > 1:
        mid = (low + high) // 2
        if variance(mid) <= target:
            high = mid
        else:
            low = mid
    return high


def required_sample_size(sample: JointSample, systems, new_system: SystemOutput, *, half_width,
                         confidence=0.95, weights=OVERLAP, bound=SECOND_MOMENT,
                         draw_from: SystemOutput | None = None, labeled_keys=None,
                         max_size=10**9) -> SampleSizePlan:
    """Return the fewest draws that evaluate a new system within a target interval half-width.

    Appendix B.4: with the draws of the existing systems fixed and labeled, the variance of the
    new system's joint estimate π̂_m is bounded by

        V(n) = Σ_j (w_mj² / n_j) s²_j[p_m f / q_m] + (w_mr² / n) B_r(n),

    the first terms estimated from the existing draws (unbiased, ddof = 1), the last bounding the
    term of the n new draws, whose labels are unknown. r is the system they come from (the new
    system itself by default) and the weights follow ``weights`` with n_r = n. The smallest n with
    z·sqrt(V(n)) <= ``half_width`` is found by doubling and bisection. V decreases in n in the
    situations the paper considers; when the existing draws already cover the new output densely
    it can rise at small n, and the returned n then meets the target but a smaller one may too.

    Parameters
    ----------
    sample : JointSample
        Labeled draws of the existing systems.
    systems : sequence of SystemOutput
        The existing systems, in ``sample.systems`` order (their full outputs give p_j on the
        new output).
    new_system : SystemOutput
        The system (or release) to evaluate; its name must be new.
    half_width : float
        Target half-width of the normal-approximation interval, > 0.
    confidence : float, default=0.95
    weights : {"overlap", "balance"}, default="overlap"
    bound : {"second-moment", "worst-case"}, default="second-moment"
        B_r(n) for the unknown labels. ``"second-moment"`` is the paper's
        E_{p_r}[(p_m / q_m)²] (every label 1); ``"worst-case"`` is the largest variance
        Var_{p_r}[p_m f / q_m] any labels f ∈ [0, 1] can give — still conservative, and up to
        four times smaller (the variance of a 0/1 label is at most 1/4).
    draw_from : SystemOutput, optional
        Draw from this distribution instead of the new system's own: for a release, the items it
        adds to the previous one (uniform over the difference), so shared items keep their labels.
        Its name must be new too.
    labeled_keys : array-like, optional
        Further keys that already have labels (say, the whole label store), so that draws of them
        cost nothing in ``expected_new_labels``.
    max_size : int, default=10**9
        Give up beyond this many draws.

    Returns
    -------
    SampleSizePlan

    Examples
    --------
    >>> new = SystemOutput.from_scores("new", [f"k{i}" for i in range(1000)], np.ones(1000))
    >>> old = SystemOutput.from_scores("old", ["other"], [1.0])
    >>> sample = JointSample.from_draws([old], [["other", "other"]]).with_labels(["other"], [1])
    >>> required_sample_size(sample, [old], new, half_width=0.1).size  # 1.96² / 0.1²
    385
    >>> required_sample_size(sample, [old], new, half_width=0.1, bound="worst-case").size
    97
    """
    owner = "required_sample_size"
    _check_sample(sample, owner=owner)
    systems = _check_systems(systems, owner=owner)
    if tuple(s.name for s in systems) != sample.systems:
        raise ParameterError(
            f"The 'systems' parameter of {owner} must be the sample's systems in order "
            f"{list(sample.systems)}. Got {[s.name for s in systems]} instead."
        )
    draw_from = new_system if draw_from is None else draw_from
    for label, system in (("new_system", new_system), ("draw_from", draw_from)):
        if not isinstance(system, SystemOutput) or system.name in sample.systems:
            raise ParameterError(
                f"The {label!r} parameter of {owner} must be a SystemOutput whose name is not "
                f"already in the sample {list(sample.systems)}."
            )
    half_width = check_float(half_width, name="half_width", owner=owner, low=0.0, low_open=True)
    confidence = check_confidence(confidence, owner=owner)
    WEIGHTS.check(weights, owner=owner)
    check_choice(bound, name="bound", owner=owner, choices=_BOUNDS)
    max_size = check_int(max_size, name="max_size", owner=owner, low=1)
    f = _require_labels(sample, owner=owner)

    # Everything lives on the union of the new output and the sampler's support.
    universe = _key_index(np.concatenate([new_system.support, draw_from.support])).unique()
    universe = np.asarray(universe)
    p_new = new_system.probability_of(universe)
    p_r = draw_from.probability_of(universe)
    old_on_universe = np.column_stack([s.probability_of(universe) for s in systems])
    p_new_drawn = new_system.probability_of(sample.keys)
    p_r_drawn = draw_from.probability_of(sample.keys)
    n = sample.sizes.astype(np.float64)
    if weights == OVERLAP:
        # w_mj ∝ n_j <p_m, p_j>; the new draws' system r gets n <p_m, p_r>.
        scale_old = p_new @ old_on_universe
        scale_r = float(p_new @ p_r)
    else:
        scale_old = np.ones(n.size)
        scale_r = 1.0
    # q_m ∝ D_n = Σ_j n_j c_j p_j + n c_r p_r; the normalising Σ cancels in V.
    base = old_on_universe @ (n * scale_old)
    base_drawn = sample.probabilities @ (n * scale_old)
    unreachable = (p_new > 0) & (base <= 0) & (p_r <= 0)
    if unreachable.any():
        raise ParameterError(
            f"{owner}: item {universe[unreachable][0]!r} of {new_system.name!r} is in no sampled "
            f"system and not in the support of {draw_from.name!r}, so no number of draws can "
            f"estimate the precision of {new_system.name!r}. Draw from a distribution covering it."
        )
    # (w_mj² / n_j) s²_j[p_m f / q_m] = n_j c_j² s²_j[p_m f / D_n] once the Σ cancels.
    old_coefficients = n * scale_old**2
    hit = p_new_drawn > 0
    in_r = p_r > 0

    def variance(size: int) -> float:
        d = base + size * scale_r * p_r
        if ((p_new > 0) & (d <= 0)).any():
            return math.inf
        d_drawn = base_drawn + size * scale_r * p_r_drawn
        h = np.zeros(d_drawn.size)
        h[hit] = p_new_drawn[hit] * f[hit] / d_drawn[hit]
        _, spreads = _system_means_and_variances(sample, h[:, None], old_coefficients > 0,
                                                 owner=owner)
        old = float(old_coefficients @ spreads[:, 0])
        if size == 0:
            return old
        g = p_new[in_r] / d[in_r]
        if bound == SECOND_MOMENT:
            spread = float(p_r[in_r] @ g**2)
        else:
            spread = _worst_case_variance(p_r[in_r], g)
        return old + size * scale_r**2 * spread

    size = _smallest_size(variance, (half_width / _z(confidence)) ** 2, max_size, too_few=(
        f"{owner}: even {max_size} draws leave the conservative half-width of "
        f"{new_system.name!r} above {half_width:g}. Raise 'max_size' or the target."
    ))  # fmt: skip
    v = variance(size)

    known = _key_index(sample.keys[~np.isnan(sample.labels)])
    if labeled_keys is not None:
        known = known.append(_key_index(labeled_keys))
    p_fresh = p_r[in_r & ~_key_index(universe).isin(known)]
    # P(item drawn at least once in n draws) = 1 - (1 - p)^n, evaluated without cancellation.
    expected = 0.0
    if size:
        expected = float(-np.expm1(size * np.log1p(-np.minimum(p_fresh, 1 - 1e-16))).sum())
    return SampleSizePlan(
        size=int(size),
        variance=float(v),
        half_width=float(_z(confidence) * math.sqrt(v)),
        expected_new_labels=expected,
        confidence=confidence,
    )
