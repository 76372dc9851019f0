"""The PAULA annotation plan (Sabharwal & Sedghi 2017, section 4.2 and Algorithm 2)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from prdist._validation import check_int
from prdist.errors import ParameterError
from prdist.paula.grid import GeometricGrid, GridParameters, exact_eps
from prdist import params as P
from prdist.params import MAX_PLAN_SIZE  # declared with the parameters: a compare budget is held as a plan is

__all__ = ["MAX_PLAN_SIZE", "PaulaPlan", "check_plan_fits", "exhaustive_plan_note", "plan_paula"]

PREFIX = "prefix"
WINDOW = "window"


@dataclass(frozen=True, eq=False)
class PaulaPlan(GridParameters):
    """Which ranks to label so that PAULA can bound the precision function.

    Built by :func:`plan_paula`; see there for the meaning of every field. Arrays are read-only.
    """

    factor: float
    grid: np.ndarray
    ranks: np.ndarray
    precondition_met: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def size(self) -> int:
        """Number of distinct ranks to label."""
        return int(self.ranks.size)

    def __repr__(self) -> str:
        return (
            f"PaulaPlan(n={self.n}, eps={self.eps:g}, window={self.window}, l={self.l}, L={self.L}, "
            f"g_l={self.g_l}, size={self.size})"
        )

    @property
    def prefix_end(self) -> int:
        """Last rank of the fully labeled prefix, min(g_l, n)."""
        return min(self.g_l, self.n)

    def roles(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (role, grid_index) aligned with :attr:`ranks`.

        ``role`` is "prefix" for ranks <= g_l and "window" otherwise; ``grid_index`` is the j of
        the window (g_j - window, g_j] that holds a window rank, and -1 for prefix ranks.
        """
        role = np.where(self.ranks <= self.g_l, PREFIX, WINDOW)
        grid_index = np.full(self.ranks.size, -1, dtype=np.int32)
        if self.grid.size > 1:
            # Windows of a valid plan never overlap, so the owner of a rank is the first grid
            # point at or above it.
            pos = np.searchsorted(self.grid, self.ranks, side="left")
            is_window = role == WINDOW
            grid_index[is_window] = (self.l + pos[is_window]).astype(np.int32)
        return role, grid_index


#: The highest grid index a plan may reach: each grid point costs an exact power (about 8 µs),
#: and eps below about 1.5e-5 passes it at the default window.
MAX_GRID_INDEX = 2**20


def _size_estimate(n: int, eps: float, window: int, r_tilde: int | None) -> tuple[int, int]:
    """(an upper bound of the plan's size, of its grid index), from floating-point logarithms alone.

    The plan labels min(n, g_l) prefix ranks, g_l < r_tilde (1 + eps) + 1, and ``window`` ranks per
    grid point after l; one index of margin on each side covers the logarithms' rounding.
    """
    if r_tilde is None:
        r_tilde = math.ceil((window + 2) / eps)
    log_growth = math.log1p(eps)
    l_low = max(0, math.floor(math.log(r_tilde) / log_growth) - 1)
    top = math.floor(math.log(n) / log_growth) + 1
    prefix = min(n, math.ceil(r_tilde * (1 + eps)) + 1)
    size = prefix if n <= r_tilde else min(n, prefix + window * max(0, top - l_low))
    return size, max(top, l_low + 2)


def _fits(n: int, eps: float, window: int, r_tilde: int | None) -> bool:
    size, index = _size_estimate(n, eps, window, r_tilde)
    return size <= MAX_PLAN_SIZE and index <= MAX_GRID_INDEX


def _number(value: int) -> str:
    return f"{value:,}" if value < 10**15 else f"{float(value):.3g}"


def check_plan_fits(n: int, *, eps: float, window: int, r_tilde: int | None = None) -> None:
    """Refuse a plan whose size or grid is beyond :data:`MAX_PLAN_SIZE` / :data:`MAX_GRID_INDEX`.

    Computed from the parameters before anything is allocated, so ``budget --n 1e12 --eps 1e-5``
    is a one-line refusal that names a coarser ``eps`` that fits, not an out-of-memory crash.
    ``r_tilde`` None is its default, ceil((window+2)/eps).
    """
    if _fits(n, eps, window, r_tilde):
        return
    coarser = eps
    while coarser < 1 and not _fits(n, coarser, window, r_tilde):
        coarser = min(1.0, float(f"{coarser * 2:.1g}"))
    fix = f"use a larger eps (eps={coarser:g} fits) or a smaller window" if _fits(n, coarser, window, r_tilde) else "use a smaller window" + ("" if r_tilde is None else " or r_tilde")
    size, index = _size_estimate(n, eps, window, r_tilde)
    if index > MAX_GRID_INDEX:
        what = f"reaches grid index {_number(index)} (at most {MAX_GRID_INDEX:,}: one exact power per grid point)"
    else:
        what = f"holds up to {_number(size)} ranks to label (at most {MAX_PLAN_SIZE:,}: {8 * size / 2**30:.3g} GiB per array)"
    chosen = "" if r_tilde is None else f", r_tilde={_number(r_tilde)}"
    raise ParameterError(f"The PAULA plan of n={_number(n)} items at eps={eps:g}, window={_number(window)}{chosen} {what}; {fix}.")


def plan_paula(n, *, eps=0.03, window=100, r_tilde=None) -> PaulaPlan:
    """Plan the PAULA annotations for a ranked resource of ``n`` items.

    The plan labels every rank 1..g_l and the window (g_j - window, g_j] at every grid point
    g_j = ceil((1+eps)^j), j = l+1..L, where

    - r_tilde = ceil((window+2)/eps) unless given,
    - l = ceil(log_{1+eps} r_tilde), L = floor(log_{1+eps} n),
    - m = floor(eps (1+eps)^l - 1), gamma = 1 + eps + (2+eps)/m, factor = gamma (1+eps).

    Every rounding is exact (``eps`` is taken as the decimal it is written as).

    Parameters
    ----------
    n : int
        Number of items in the resource, >= 1.
    eps : float, default=0.03
        Grid spacing, in (0, 1]. Smaller means tighter bounds and more labels.
    window : int, default=100
        Width Delta of the local-precision windows, >= 1.
    r_tilde : int, optional
        Rank beyond which the precision is assumed monotone. A value below
        ceil((window+2)/eps) is allowed, but then the guarantee's precondition fails and the plan
        says so in ``precondition_met`` and ``notes``.

    Returns
    -------
    PaulaPlan
        ``ranks`` (sorted int64, 1-based) are the ranks to label; ``grid`` holds g_l..g_L.
        When n <= g_l the plan labels all n items (``exhaustive``) and ``grid`` is empty.

    Examples
    --------
    >>> plan = plan_paula(217_077, eps=0.03, window=100)
    >>> plan.size, plan.g_l, plan.l, plan.L
    (17392, 3492, 276, 415)
    >>> plan_paula(35_615, eps=0.05).size
    7822
    >>> plan
    PaulaPlan(n=217077, eps=0.03, window=100, l=276, L=415, g_l=3492, size=17392)
    """
    owner = "plan_paula"
    n = check_int(n, name="n", owner=owner, low=1)
    eps_exact = exact_eps(eps, owner=owner)
    eps = float(eps)
    window = P.WINDOW.check(window, owner=owner)
    r_tilde = P.R_TILDE.check(r_tilde, owner=owner)
    check_plan_fits(n, eps=eps, window=window, r_tilde=r_tilde)
    r_min = math.ceil((window + 2) / eps_exact)  # exact: Fraction ceil
    if r_tilde is None:
        r_tilde = r_min

    grid_fn = GeometricGrid(eps)
    l = grid_fn.first_index_at_least(r_tilde)
    L = grid_fn.last_index_at_most(n)
    g_l = grid_fn.ceil_power(l)
    m = math.floor(eps_exact * grid_fn.growth**l) - 1
    gamma = 1.0 + eps + (2.0 + eps) / m if m > 0 else math.inf
    factor = gamma * (1.0 + eps)

    notes: list[str] = []
    precondition_met = r_tilde >= r_min
    if not precondition_met:
        notes.append(
            f"r_tilde={r_tilde} is below ceil((window+2)/eps)={r_min}: windows may overlap and "
            "the gamma(1+eps) guarantee of the PAULA theorem does not apply."
        )
    if m < window:
        notes.append(f"m={m} is below window={window}: (window, m)-monotonicity is undefined.")

    if n <= g_l:
        grid = np.empty(0, dtype=np.int64)
        ranks = np.arange(1, n + 1, dtype=np.int64)
    else:
        grid = grid_fn.points(l, L)
        tops = grid[1:]
        starts = np.maximum(tops - window + 1, 1)
        lengths = tops - starts + 1
        offsets = np.repeat(starts - np.cumsum(np.concatenate(([0], lengths[:-1]))), lengths)
        window_ranks = offsets + np.arange(int(lengths.sum()), dtype=np.int64)
        ranks = np.sort(np.concatenate((np.arange(1, g_l + 1, dtype=np.int64), window_ranks)))
        # Windows overlap only when r_tilde is below its minimum; keep each rank once.
        ranks = ranks[np.concatenate(([True], ranks[1:] != ranks[:-1]))]
    grid.setflags(write=False)
    ranks.setflags(write=False)
    return PaulaPlan(
        n=n,
        eps=eps,
        window=window,
        r_tilde=r_tilde,
        l=l,
        L=L,
        g_l=g_l,
        m=m,
        gamma=gamma,
        factor=factor,
        grid=grid,
        ranks=ranks,
        precondition_met=precondition_met,
        notes=tuple(notes),
    )



#: Coarser grids and narrower windows tried, in order, when the default plan labels every item.
_CHEAPER = ((0.05, 50), (0.1, 20), (0.2, 10), (0.3, 5))


def exhaustive_plan_note(n, *, eps=0.03, window=100) -> str | None:
    """One sentence when the PAULA plan of ``n`` items labels every item, else None.

    The fully labeled prefix reaches g_l >= (window+2)/eps (3,492 at the defaults), so a smaller
    resource is labeled whole. The note names the first coarser (eps, window) in a short list
    whose plan labels fewer items, what it would save and the looser approximation factor.

    Examples
    --------
    >>> exhaustive_plan_note(100_000) is None
    True
    >>> print(exhaustive_plan_note(727))
    the PAULA plan labels all 727 items (n <= g_l = 3,492, the fully labeled prefix at eps=0.03, window=100); --eps 0.1 --window 20 would label 469 (saving 258) with a looser guarantee (factor 1.32 instead of 1.08)
    """
    plan = plan_paula(n, eps=eps, window=window)
    if plan.size < plan.n:
        return None
    head = (
        f"the PAULA plan labels all {plan.n:,} items (n <= g_l = {plan.g_l:,}, the fully labeled prefix at "
        f"eps={plan.eps:g}, window={plan.window})"
    )
    for cheaper_eps, cheaper_window in _CHEAPER:
        if cheaper_eps <= plan.eps or cheaper_window >= plan.window:
            continue
        cheaper = plan_paula(plan.n, eps=cheaper_eps, window=cheaper_window)
        if cheaper.size < plan.n:
            return (
                f"{head}; --eps {cheaper_eps:g} --window {cheaper_window} would label {cheaper.size:,} "
                f"(saving {plan.n - cheaper.size:,}) with a looser guarantee (factor {cheaper.factor:.2f} "
                f"instead of {plan.factor:.2f})"
            )
    return f"{head}; at this size every plan labels (nearly) every item"
