"""PAULA bounds on the precision function (Sabharwal & Sedghi 2017, Algorithm 2), made valid at
every rank.

Notation: y(r) is the yield (number of positives among ranks 1..r), p(r) = y(r)/r the precision,
p_D(g) the mean label over the window (g - D, g]. Algorithm 2 bounds the yield at the grid points:

    Y-_l = Y+_l = y(g_l),
    Y-_{k+1} = Y-_k + (g_{k+1} - g_k) p_D(g_{k+1}),
    Y+_{k+1} = Y+_k + (g_{k+1} - g_k) p_D(g_k),

which hold under strong monotonicity (assumption A.2). The paper's step functions (Definition 5)
then *approximate* p between grid points; they are not bounds. prdist keeps them as
``step_lower``/``step_upper`` and adds ``lower``/``upper``, which bound p at every rank whenever
the grid-point yield bounds hold, using only that the yield is non-decreasing and grows by at most
one per rank:

    for g_j <= r < g_{j+1}:   Y-_j <= y(r) <= min(Y+_{j+1}, Y+_j + r - g_j),

refined by every label the plan holds between the grid points. Past g_L the lower bound is Y-_L
and the upper bound Y+_L + max(r - g_L, m) p_D(g_L) (A.2 applied to (g_L, max(r, g_L + m)], the
same assumption the grid-point bounds rest on; Y+_L + r - g_L when n < g_L + m).

Unknown labels (NaN) count as 0 in everything that builds a lower bound and as 1 in everything that
builds an upper bound, so the bounds stay valid while labels stream in.

Where the grid-point bounds contradict each other (Y- > Y+, possible only when A.2 fails), prdist
falls back at that grid point to the bounds that need no assumption (known positives below, ranks
not known to be negative above) and reports the contradiction in the diagnostics.

With ``confidence=c`` the grid-point yield bounds are widened to Y-_k - t-_k and Y+_k + t+_k and
the tail cap past g_L is replaced by one that accounts for label noise (:mod:`prdist.paula.confidence`):
if the labels are independent Bernoulli draws whose rate is non-increasing in rank, ``lower`` and
``upper`` then hold at every rank simultaneously with probability at least c.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from prdist.frames.arrays import distinct
from prdist._validation import as_label_array, check_confidence
from prdist.paula.confidence import ConfidenceDiagnostics, confidence_margins, monotone_rate_test
from prdist.errors import DataError, ParameterError
from prdist.paula.plan import PaulaPlan

__all__ = ["PaulaBounds", "PaulaDiagnostics", "paula_bounds", "precision_function", "within_gamma"]


def within_gamma(ratio: float, gamma: float) -> bool:
    """Whether the yield ratio Y+/Y- is within gamma, as Lemma 4 promises (up to rounding).

    The one place the verdict is made: :attr:`PaulaDiagnostics.assumptions_plausible` and every view
    of a manifest's ``max_ratio`` and ``gamma`` (report, terminal) ask it.

    >>> within_gamma(1.2, 1.2), within_gamma(1.21, 1.2)
    (True, False)
    """
    return ratio <= gamma * (1 + 1e-12)


@dataclass(frozen=True, eq=False)
class PaulaDiagnostics:
    """What the labels say about the assumptions behind the bounds.

    Attributes
    ----------
    precondition_holds : bool or None
        Whether p(g_l) >= p_D(g_l), the precondition of Lemma 4; None while unknown labels leave
        it undecided.
    rise_ranks, rise_sizes : ndarray
        Grid ranks g_{k+1} where the local precision certainly rises, p_D(g_{k+1}) > p_D(g_k)
        (evidence against A.2), and by how much.
    ratio : ndarray
        Y+_k / Y-_k at each grid point (Algorithm 2's values); Lemma 4 promises <= gamma.
    contradiction_ranks : ndarray
        Grid ranks where Y-_k > Y+_k, so A.2 is certainly false and the assumption-free bounds
        are used there.
    unknown : int
        Planned labels still unknown.
    confidence : ConfidenceDiagnostics or None
        In confidence mode: the monotone-rate test and the widening against the deterministic
        bounds. Noise makes local rises common there, so ``rise_ranks`` is informative only in
        aggregate and the test decides ``assumptions_plausible``.
    """

    precondition_holds: bool | None
    rise_ranks: np.ndarray
    rise_sizes: np.ndarray
    ratio: np.ndarray
    gamma: float
    contradiction_ranks: np.ndarray
    unknown: int
    confidence: ConfidenceDiagnostics | None = None

    @property
    def max_ratio(self) -> float:
        return float(self.ratio.max()) if self.ratio.size else 1.0

    @property
    def assumptions_plausible(self) -> bool:
        """No evidence against A.2 and the Lemma 4 ratio is within gamma; in confidence mode, no
        contradiction and the monotone-rate test does not reject at level 1 - confidence."""
        if self.confidence is not None:
            return self.contradiction_ranks.size == 0 and not self.confidence.model_rejected
        return (
            self.precondition_holds is not False
            and self.rise_ranks.size == 0
            and self.contradiction_ranks.size == 0
            and within_gamma(self.max_ratio, self.gamma)
        )

    def to_dict(self) -> dict:
        """JSON-ready summary (for manifests and reports)."""
        return {
            "precondition_holds": self.precondition_holds,
            "monotonicity_violations": int(self.rise_ranks.size),
            "largest_rise": float(self.rise_sizes.max()) if self.rise_sizes.size else 0.0,
            "rise_ranks": self.rise_ranks[:50].tolist(),
            "max_ratio": self.max_ratio,
            "gamma": self.gamma,
            "contradictions": int(self.contradiction_ranks.size),
            "contradiction_ranks": self.contradiction_ranks[:50].tolist(),
            "unknown_labels": self.unknown,
            "assumptions_plausible": self.assumptions_plausible,
            "confidence": None if self.confidence is None else self.confidence.to_dict(),
        }


@dataclass(frozen=True, eq=False)
class PaulaBounds:
    """Bounds on the precision and yield of a ranked resource; built by :func:`paula_bounds`.

    All methods take ranks (int or array of ints in [1, n]) and are vectorised. ``confidence`` is
    None for the paper's deterministic bounds; ``tail_cap`` = (floor, rate) caps the yield past
    g_L by grid_yield_upper[-1] + max(r - g_L, floor) * rate (None: no cap).
    """

    plan: PaulaPlan
    labels: np.ndarray
    local_lower: np.ndarray
    local_upper: np.ndarray
    paper_yield_lower: np.ndarray
    paper_yield_upper: np.ndarray
    grid_yield_lower: np.ndarray
    grid_yield_upper: np.ndarray
    diagnostics: PaulaDiagnostics
    _known_ones: np.ndarray  # cumulative count of labels known to be 1, over plan ranks
    _maybe_ones: np.ndarray  # cumulative count of labels not known to be 0, over plan ranks
    confidence: float | None = None
    tail_cap: tuple[int, float] | None = None

    @property
    def n(self) -> int:
        return self.plan.n

    def __repr__(self) -> str:
        lo, hi = self._yield_bounds(np.array([self.n]))
        mode = "deterministic" if self.confidence is None else f"confidence={self.confidence:g}"
        return (
            f"PaulaBounds(n={self.n}, labels={self.labels.size} ({self.diagnostics.unknown} unknown), {mode}, "
            f"precision at n in [{lo[0] / self.n:.3f}, {hi[0] / self.n:.3f}])"
        )

    def plot(self, ax=None, *, exact=None):
        """Draw the bounds on p(r), rank on a log axis; see :func:`prdist.render.plotting.plot_bounds`."""
        from prdist.render.plotting import plot_bounds

        return plot_bounds(self, ax=ax, exact=exact)

    # -- cumulative label counts at arbitrary ranks ------------------------------------------
    def _counts(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Known positives among ranks <= r, and ranks <= r not known to be negative."""
        idx = np.searchsorted(self.plan.ranks, r, side="right")
        ones = self._known_ones[idx]
        known_zeros = idx - self._maybe_ones[idx]
        return ones.astype(np.float64), (r - known_zeros).astype(np.float64)

    def _ranks(self, r) -> np.ndarray:
        arr = np.asarray(r)
        if arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)):
                arr = arr.astype(np.int64)
            else:
                raise ParameterError(f"Ranks must be integers in [1, {self.n}]. Got dtype {arr.dtype} instead.")
        arr = arr.astype(np.int64, copy=False)
        if arr.size and (arr.min() < 1 or arr.max() > self.n):
            bad = arr[(arr < 1) | (arr > self.n)].flat[0]
            raise ParameterError(f"Ranks must be integers in [1, {self.n}]. Got {int(bad)} instead.")
        return arr

    # -- yield bounds -------------------------------------------------------------------------
    def _yield_bounds(self, r) -> tuple[np.ndarray, np.ndarray]:
        r = self._ranks(r)
        shape = r.shape
        r = r.ravel()
        ones, maybe = self._counts(r)
        lo, hi = ones.copy(), maybe.copy()
        grid = self.plan.grid
        beyond = r > self.plan.g_l
        if grid.size and beyond.any():
            rb = r[beyond]
            j = np.searchsorted(grid, rb, side="right") - 1
            g_ones, g_maybe = self._grid_counts
            ylo, yhi = self.grid_yield_lower, self.grid_yield_upper
            lo_b = ylo[j] + ones[beyond] - g_ones[j]
            hi_b = yhi[j] + maybe[beyond] - g_maybe[j]
            has_next = j + 1 < grid.size
            jn = np.minimum(j + 1, grid.size - 1)
            lo_b = np.where(has_next, np.maximum(lo_b, ylo[jn] - (g_maybe[jn] - maybe[beyond])), lo_b)
            hi_b = np.where(has_next, np.minimum(hi_b, yhi[jn] - (g_ones[jn] - ones[beyond])), hi_b)
            # Tail past g_L: deterministic mode, A.2 on (g_L, r] caps the mean label there by
            # p_D(g_L) once r - g_L >= m, and the yield is non-decreasing, so y(g_L + m) caps every
            # rank before it; confidence mode, the same shape with a noise-aware floor and rate.
            if self.tail_cap is not None:
                floor, rate = self.tail_cap
                capped = yhi[-1] + np.maximum(rb - grid[-1], floor) * rate
                hi_b = np.where(has_next, hi_b, np.minimum(hi_b, capped))
            lo[beyond], hi[beyond] = lo_b, hi_b
        lo = np.clip(lo, 0.0, r)
        hi = np.clip(hi, lo, r)
        return lo.reshape(shape), hi.reshape(shape)

    @cached_property
    def _grid_counts(self) -> tuple[np.ndarray, np.ndarray]:
        return self._counts(self.plan.grid)

    def yield_lower(self, r):
        """Lower bound on the yield y(r), valid whenever the grid-point yield bounds hold."""
        return self._yield_bounds(r)[0]

    def yield_upper(self, r):
        """Upper bound on the yield y(r), valid whenever the grid-point yield bounds hold."""
        return self._yield_bounds(r)[1]

    def lower(self, r):
        """Lower bound on the precision p(r) at every rank r in [1, n].

        >>> from prdist import plan_paula
        >>> plan = plan_paula(50, eps=0.5, window=2)
        >>> b = paula_bounds(plan, np.ones(plan.size))
        >>> b.lower([10, 39, 50]).round(2).tolist()   # nothing is labeled past g_L = 39
        [1.0, 1.0, 0.78]
        """
        r = self._ranks(r)
        return self._yield_bounds(r)[0] / r

    def upper(self, r):
        """Upper bound on the precision p(r) at every rank r in [1, n]."""
        r = self._ranks(r)
        return self._yield_bounds(r)[1] / r

    def _step(self, r, paper_yield: np.ndarray, which: int):
        r = self._ranks(r)
        exact = self._counts(r)[which] / r
        grid = self.plan.grid
        if not grid.size:
            return exact
        j = np.clip(np.searchsorted(grid, r, side="right") - 1, 0, None)
        return np.where(r <= self.plan.g_l, exact, paper_yield[j] / grid[j])

    def step_lower(self, r):
        """The paper's step function of q- (Definition 5): an approximation, not a bound."""
        return self._step(r, self.paper_yield_lower, 0)

    def step_upper(self, r):
        """The paper's step function of q+ (Definition 5): an approximation, not a bound."""
        return self._step(r, self.paper_yield_upper, 1)

    # -- tables -------------------------------------------------------------------------------
    def evaluation_ranks(self) -> np.ndarray:
        """Ranks where the bounds change character: every planned rank and n."""
        ranks = self.plan.ranks
        return ranks if ranks[-1] == self.n else np.append(ranks, self.n)

    def table(self):
        """The bounds at 1..g_l, every grid rank and n (the rows of ``bounds.parquet``), as a
        pandas DataFrame of :meth:`columns`."""
        import pandas as pd  # for a user who asks for a DataFrame; a run takes the columns

        return pd.DataFrame(self.columns())

    def columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`table`: rank (int64), precision_lower, precision_upper,
        yield_lower, yield_upper (float64)."""
        ranks = distinct(np.concatenate((np.arange(1, self.plan.prefix_end + 1), self.plan.grid, [self.n])))
        ylo, yhi = self._yield_bounds(ranks)
        return {
            "rank": ranks.astype(np.int64),
            "precision_lower": ylo / ranks,
            "precision_upper": yhi / ranks,
            "yield_lower": ylo,
            "yield_upper": yhi,
        }


def paula_bounds(plan: PaulaPlan, labels, *, confidence=None) -> PaulaBounds:
    """Bound the precision function from the labels of a PAULA plan.

    Parameters
    ----------
    plan : PaulaPlan
        From :func:`prdist.plan_paula`.
    labels : array-like of float, shape (plan.size,)
        Labels aligned with ``plan.ranks``: 1 correct, 0 incorrect, NaN unknown (treated as 0 by
        lower bounds and as 1 by upper bounds).
    confidence : float in (0, 1), optional
        None (default): the paper's deterministic bounds, valid when the labels themselves obey
        A.2. A level such as 0.95: bounds that hold at every rank simultaneously with that
        probability when the labels are independent Bernoulli draws whose rate is non-increasing
        in rank from the window at g_l on (proof in :mod:`prdist.paula.confidence`);
        ``diagnostics.confidence`` then holds the monotone-rate test and the widening.

    Returns
    -------
    PaulaBounds
        ``lower``/``upper`` bound p at every rank whenever the grid-point yield bounds hold (under
        assumption A.2); ``step_lower``/``step_upper`` are the paper's step functions;
        ``yield_lower``/``yield_upper`` bound the yield; ``diagnostics`` reports the evidence
        about the assumptions. Under A.1 and A.2 the step functions are within gamma(1+eps) of p
        at every rank (Theorem 3), and so are ``lower``/``upper`` except on a tail shorter than m
        past g_L, where A.2 says nothing and only the assumption-free bound applies.

    Examples
    --------
    >>> from prdist import plan_paula
    >>> plan = plan_paula(100_000, eps=0.05, window=50)
    >>> truth = (np.arange(100_000) < 60_000).astype(float)   # precision 1 down to 0.6
    >>> b = paula_bounds(plan, truth[plan.ranks - 1])
    >>> plan.size
    5672
    >>> b.lower([1000, 50_000, 100_000]).round(3).tolist()
    [1.0, 1.0, 0.586]
    >>> b.upper([1000, 50_000, 100_000]).round(3).tolist()
    [1.0, 1.0, 0.615]
    >>> b
    PaulaBounds(n=100000, labels=5672 (0 unknown), deterministic, precision at n in [0.586, 0.615])
    >>> noisy = paula_bounds(plan, truth[plan.ranks - 1], confidence=0.95)
    >>> bool(np.all(noisy.lower([50_000, 100_000]) <= b.lower([50_000, 100_000])))
    True
    """
    if not isinstance(plan, PaulaPlan):
        raise ParameterError(
            f"The 'plan' parameter of paula_bounds must be a PaulaPlan from plan_paula. Got {type(plan).__name__} instead."
        )
    if confidence is not None:
        confidence = check_confidence(confidence, owner="paula_bounds")
    v = as_label_array(labels, owner="paula_bounds")
    if v.size != plan.size:
        raise DataError(
            f"paula_bounds needs one label per planned rank: the plan has {plan.size} ranks but "
            f"{v.size} labels were given. Align the labels with plan.ranks (NaN for unknown)."
        )
    v.setflags(write=False)
    unknown = np.isnan(v)
    known_ones = np.concatenate(([0], np.cumsum(np.where(unknown, 0.0, v)))).astype(np.int64)
    maybe_ones = np.concatenate(([0], np.cumsum(np.where(unknown, 1.0, v)))).astype(np.int64)

    ranks, grid, window = plan.ranks, plan.grid, plan.window
    if grid.size:
        top = np.searchsorted(ranks, grid, side="right")
        bottom = np.searchsorted(ranks, grid - window, side="right")
        width = np.minimum(window, grid).astype(np.float64)
        local_lower = (known_ones[top] - known_ones[bottom]) / width
        local_upper = (maybe_ones[top] - maybe_ones[bottom]) / width
        steps = np.diff(grid).astype(np.float64)
        y_l_lo, y_l_hi = float(known_ones[top[0]]), float(maybe_ones[top[0]])
        paper_lo = y_l_lo + np.concatenate(([0.0], np.cumsum(steps * local_lower[1:])))
        paper_hi = y_l_hi + np.concatenate(([0.0], np.cumsum(steps * local_upper[:-1])))
        g_ones = known_ones[top].astype(np.float64)
        g_maybe = (grid - (top - maybe_ones[top])).astype(np.float64)
        grid_lo, grid_hi, contradictions = _consistent_grid_bounds(paper_lo, paper_hi, g_ones, g_maybe)
        tail_cap = (plan.m, float(local_upper[-1])) if grid[-1] + plan.m <= plan.n else None
    else:
        local_lower = local_upper = paper_lo = paper_hi = grid_lo = grid_hi = np.empty(0)
        contradictions = np.zeros(0, dtype=bool)
        tail_cap = None

    noise = None
    if confidence is not None:
        margins = confidence_margins(plan, v, confidence=confidence)
        deterministic_width = grid_hi - grid_lo
        if grid.size:
            grid_lo, grid_hi, contradictions = _consistent_grid_bounds(
                paper_lo - margins.lower, paper_hi + margins.upper, g_ones, g_maybe
            )
            tail_cap = margins.tail_cap(float(paper_hi[-1] + margins.upper[-1]), float(grid_hi[-1]))
        widening = (grid_hi - grid_lo - deterministic_width) / grid
        noise = ConfidenceDiagnostics(
            confidence=confidence,
            margins=margins,
            test=monotone_rate_test(plan, v),
            widening_mean=float(widening.mean()) if widening.size else 0.0,
            widening_max=float(widening.max()) if widening.size else 0.0,
        )

    diagnostics = _diagnose(plan, local_lower, local_upper, paper_lo, paper_hi, contradictions, int(unknown.sum()), known_ones, maybe_ones, noise)
    arrays = (local_lower, local_upper, paper_lo, paper_hi, grid_lo, grid_hi, known_ones, maybe_ones)
    for a in arrays:
        a.setflags(write=False)
    return PaulaBounds(plan, v, *arrays[:6], diagnostics, known_ones, maybe_ones, confidence, tail_cap)


def _propagate(lo, hi, ones, maybe):
    """Tighten grid-point yield bounds with the yield's monotonicity between grid points.

    Between consecutive grid points the yield grows by at least the known positives and at most
    the ranks not known to be negative.
    """
    lo = np.maximum.accumulate(lo - ones) + ones
    lo = np.maximum.accumulate((lo - maybe)[::-1])[::-1] + maybe
    hi = np.minimum.accumulate(hi - maybe) + maybe
    hi = np.minimum.accumulate((hi - ones)[::-1])[::-1] + ones
    return lo, hi


def _consistent_grid_bounds(paper_lo, paper_hi, ones, maybe):
    """Grid-point yield bounds, clamped to what the labels alone prove and free of contradictions."""
    relaxed = np.zeros(paper_lo.size, dtype=bool)
    tolerance = 1e-9 * np.maximum(maybe, 1.0)
    while True:
        lo = np.where(relaxed, ones, np.maximum(paper_lo, ones))
        hi = np.where(relaxed, maybe, np.minimum(paper_hi, maybe))
        lo, hi = _propagate(lo, hi, ones, maybe)
        bad = lo > hi + tolerance
        if not bad.any():
            return lo, hi, relaxed
        # A contradiction proves A.2 false around that grid point; drop its assumption-based
        # bounds. If propagation alone causes it, no single point is to blame: drop them all.
        relaxed = relaxed | bad if (bad & ~relaxed).any() else np.ones_like(relaxed)


def _diagnose(plan, local_lower, local_upper, paper_lo, paper_hi, contradictions, unknown, known_ones, maybe_ones, noise=None):
    grid = plan.grid
    if grid.size:
        top = np.searchsorted(plan.ranks, grid[0], side="right")
        p_lo, p_hi = known_ones[top] / grid[0], maybe_ones[top] / grid[0]
        if p_lo >= local_upper[0]:
            precondition = True
        elif p_hi < local_lower[0]:
            precondition = False
        else:
            precondition = None
        rise = local_lower[1:] - local_upper[:-1]
        rising = rise > 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(paper_lo > 0, paper_hi / paper_lo, np.where(paper_hi > 0, np.inf, 1.0))
        rise_ranks, rise_sizes = grid[1:][rising], rise[rising]
        contradiction_ranks = grid[contradictions]
    else:
        precondition = True
        rise_ranks = contradiction_ranks = np.empty(0, dtype=np.int64)
        rise_sizes = ratio = np.empty(0)
    return PaulaDiagnostics(
        precondition_holds=precondition,
        rise_ranks=rise_ranks,
        rise_sizes=rise_sizes,
        ratio=ratio,
        gamma=plan.gamma,
        contradiction_ranks=contradiction_ranks,
        unknown=unknown,
        confidence=noise,
    )


def precision_function(labels_in_rank_order) -> np.ndarray:
    """Exact precision function p(r) = y(r)/r, r = 1..n, of a fully labeled ranked list.

    Parameters
    ----------
    labels_in_rank_order : array-like of 0/1, shape (n,)
        Labels ordered by rank (use :func:`prdist.ranking.rank_order` to order items by
        descending score with the hashed tie-break).

    Returns
    -------
    ndarray of float64, shape (n,)

    Examples
    --------
    >>> precision_function([1, 0, 1, 1]).tolist()
    [1.0, 0.5, 0.6666666666666666, 0.75]
    """
    v = as_label_array(labels_in_rank_order, name="labels_in_rank_order", owner="precision_function", allow_nan=False)
    if v.size == 0:
        raise DataError("precision_function needs at least one label; got an empty sequence.")
    return np.cumsum(v) / np.arange(1, v.size + 1)
