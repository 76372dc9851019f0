"""Label budgets of the sampling baselines: Eqs. 2, 4 and 5 (uniform), Theorem 2 (stratified)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from prdist._validation import check_int
from prdist.sampling.checks import _check_guarantee
from prdist.sampling.stratified import _expected_distinct, _stratified_setup


def point_estimate_budget(*, alpha, p, delta) -> int:
    """Samples needed for one (1 + alpha)-approximate point estimate of p(r) (Eq. 2).

    z = ceil(ln(2/delta) / (2 alpha^2 p^2)) draws from 1..r give |p~(r) - p(r)| < alpha p(r)
    with probability at least 1 - delta when p(r) >= p (two-sided Hoeffding bound).

    Parameters
    ----------
    alpha : float
        Relative error, > 0.
    p : float
        A lower bound on the precision p(r) being estimated, in (0, 1].
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    int

    Examples
    --------
    >>> point_estimate_budget(alpha=0.08, p=0.7, delta=0.05)
    589
    """
    owner = "point_estimate_budget"
    alpha, p, delta = _check_guarantee(alpha, p, delta, owner=owner)
    return math.ceil(math.log(2.0 / delta) / (2.0 * alpha**2 * p**2))


def random_sampling_reliable_from(n, *, size, alpha, p, delta) -> int:
    """The rank n_{alpha,s} from which a uniform sample of ``size`` is reliable (Eq. 4).

    With s = ``size`` uniform samples of a resource of n items, p'(rs/n) is a (1 + alpha)-
    approximation of p(r) at every rank r >= n_{alpha,s} = n ln(2n/delta) / (2 s alpha^2 p^2)
    at once with probability at least 1 - delta (Eq. 2 at each of the n ranks with delta/n,
    and the union bound). The value is rounded up to a rank.

    Parameters
    ----------
    n : int
        Number of items, >= 1.
    size : int
        Number s of uniform samples, in [1, n].
    alpha : float
        Relative error, > 0.
    p : float
        A lower bound on the precision, in (0, 1].
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    int
        The first reliable rank. A value above ``n`` means that no rank is covered.

    Examples
    --------
    >>> random_sampling_reliable_from(217_077, size=17_392, alpha=0.08, p=0.7, delta=0.05)
    31795
    """
    owner = "random_sampling_reliable_from"
    n = check_int(n, name="n", owner=owner, low=1)
    size = check_int(size, name="size", owner=owner, low=1, high=n)
    alpha, p, delta = _check_guarantee(alpha, p, delta, owner=owner)
    return math.ceil(n * math.log(2.0 * n / delta) / (2.0 * size * alpha**2 * p**2))


def random_sampling_budget(n, *, alpha, p, delta) -> int:
    """Labels random sampling needs for a (1 + alpha)-approximation of all of p (Eq. 5).

    Labeling the prefix 1..n_{alpha,s} plus s uniform samples costs s + n_{alpha,s}, which is
    smallest at s = n_{alpha,s}, for a total of sqrt(2n ln(2n/delta) / (alpha^2 p^2)).

    Rounding: the paper reports 47,030 for n = 217,077, alpha = 0.08, p = 0.7, delta = 0.05,
    where Eq. 5 evaluates to 47,030.54, so the paper truncates; this function does the same
    (``floor``) to reproduce the published figure. Eq. 5 itself already ignores the overlap
    between the prefix and the sample (the paper's footnote 1), so it is approximate to a few
    labels either way. The result is capped at ``n``: labeling every item always suffices.

    Parameters
    ----------
    n : int
        Number of items, >= 1.
    alpha, p, delta : float
        As in :func:`random_sampling_reliable_from`. To match PAULA's guarantee use
        alpha = gamma (1 + eps) - 1.

    Returns
    -------
    int

    Examples
    --------
    >>> random_sampling_budget(217_077, alpha=0.08, p=0.7, delta=0.05)
    47030
    """
    owner = "random_sampling_budget"
    n = check_int(n, name="n", owner=owner, low=1)
    alpha, p, delta = _check_guarantee(alpha, p, delta, owner=owner)
    total = math.sqrt(2.0 * n * math.log(2.0 * n / delta) / (alpha**2 * p**2))
    return min(n, math.floor(total))


@dataclass(frozen=True)
class StratifiedBudget:
    """The label budget of logarithmic stratified sampling, from :func:`stratified_budget`.

    Attributes
    ----------
    annotations : int
        Theorem 2's count, g_l + eps (L - l) ln((L - l)/(delta/2)) / (2 (beta-1)^2 (1+eps)
        p_min^2), rounded up and capped at n.
    prefix : int
        min(g_l, n), the fully labeled prefix.
    draws_per_grid_point : float
        The factor multiplying L - l in Theorem 2 (the paper's Section 4.4.4 compares it with
        PAULA's window).
    samples_per_point : int
        s, the size of every X_k (rounded up, as Algorithm 1 does).
    expected_distinct : float
        Exact expected number of distinct ranks :func:`~prdist.sampling.plan_stratified` labels
        with these parameters (draws with replacement repeat ranks in narrow strata, so this is
        usually below ``annotations``: 26,752 against 31,750 at the paper's N = 217,077).
    beta, factor : float
        beta and the guaranteed approximation factor beta (1 + eps).
    """

    annotations: int
    prefix: int
    draws_per_grid_point: float
    samples_per_point: int
    expected_distinct: float
    beta: float
    factor: float


def stratified_budget(
    n, *, eps=0.03, window=100, r_tilde=None, delta=0.05, p_min=0.5, beta=None
) -> StratifiedBudget:
    """Labels logarithmic stratified sampling needs for a beta (1 + eps) guarantee (Theorem 2).

    Parameters
    ----------
    n, eps, window, r_tilde, delta, p_min, beta
        As in :func:`~prdist.sampling.plan_stratified` (beta defaults to PAULA's gamma).

    Returns
    -------
    StratifiedBudget

    Examples
    --------
    >>> budget = stratified_budget(217_077, eps=0.03, window=100)
    >>> budget.annotations, budget.samples_per_point
    (31750, 6980)
    """
    owner = "stratified_budget"
    setup = _stratified_setup(
        n, eps=eps, window=window, r_tilde=r_tilde, delta=delta, p_min=p_min, beta=beta, owner=owner
    )
    prefix = min(setup.g_l, setup.n)
    strata = setup.L - setup.l if setup.n > setup.g_l else 0
    if strata > 0:
        per_point = (
            setup.eps
            * math.log(strata / (setup.delta / 2.0))
            / (2.0 * (setup.beta - 1.0) ** 2 * (1.0 + setup.eps) * setup.p_min**2)
        )
    else:
        per_point = 0.0
    return StratifiedBudget(
        annotations=min(setup.n, prefix + math.ceil(strata * per_point)),
        prefix=prefix,
        draws_per_grid_point=per_point,
        samples_per_point=setup.samples_per_point,
        expected_distinct=_expected_distinct(setup),
        beta=setup.beta,
        factor=setup.beta * (1.0 + setup.eps),
    )
