"""Label sequences for testing PAULA: ones that satisfy the paper's assumptions by construction,
and slow, obviously correct checks of those assumptions."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from prdist import plan_paula

plans = st.builds(
    lambda n, eps, window: plan_paula(n, eps=eps, window=window),
    n=st.integers(min_value=1, max_value=60_000),
    eps=st.sampled_from([0.05, 0.1, 0.2, 0.5, 1.0]),
    window=st.integers(min_value=1, max_value=40),
)


@st.composite
def arbitrary_labels(draw):
    """(plan, v, labels at the plan's ranks): v any 0/1 sequence (no assumption holds by
    construction), a random share of the labels unknown (NaN)."""
    plan = draw(plans)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rate = np.clip(rng.normal(draw(st.floats(0, 1)), 0.3, plan.n), 0, 1)
    v = (rng.random(plan.n) < rate).astype(float)
    at_ranks = v[plan.ranks - 1]
    unknown = rng.random(plan.size) < draw(st.sampled_from([0.0, 0.0, 0.01, 0.3]))
    return plan, v, np.where(unknown, np.nan, at_ranks)


def monotone_sequence(plan, rng) -> np.ndarray:
    """A 0/1 sequence of length plan.n satisfying the premise of Lemmas 3-4 exactly.

    Built on the plan's own grid: every grid interval (g_k, g_{k+1}] ends with a window of
    ``plan.window`` labels holding w_{k+1} ones, w non-increasing; the interval's total is chosen so
    that p_D(g_k) >= mean(g_k, g_{k+1}] >= p_D(g_{k+1}) (A.2 on consecutive grid points), the
    prefix satisfies p(g_l) >= p_D(g_l), and the tail past g_L never exceeds p_D(g_L) on average.
    """
    n, window, grid = plan.n, plan.window, plan.grid
    v = np.zeros(n)
    g_l = plan.prefix_end
    # Prefix: ones first (precision decreasing), so p(g_l) >= p_D(g_l).
    ones_prefix = int(rng.integers(0, g_l + 1))
    v[:ones_prefix] = 1.0
    if not grid.size:
        return v
    w_prev = int(v[g_l - min(window, g_l) : g_l].sum())
    scale = min(window, g_l)
    for a, b in zip(grid[:-1], grid[1:]):
        length = int(b - a)
        w = int(rng.integers(0, w_prev + 1)) if rng.random() < 0.3 else w_prev
        while True:
            lo = -(-w * length // window)
            hi = min((w_prev * length) // scale, length - window + w)
            if lo <= hi:
                break
            w -= 1
        total = int(rng.integers(lo, hi + 1))
        body = np.zeros(length - window)
        body[rng.choice(length - window, size=total - w, replace=False)] = 1.0
        tail_window = np.zeros(window)
        tail_window[rng.choice(window, size=w, replace=False)] = 1.0
        v[a:b] = np.concatenate((body, tail_window))
        w_prev, scale = w, window
    # Tail: ones spaced so every prefix of (g_L, r] has mean <= p_D(g_L).
    rate = w_prev / scale
    k = np.arange(1, n - grid[-1] + 1)
    v[grid[-1] :] = np.diff(np.floor(k * rate), prepend=0.0)
    return v


def lemma_premise_holds(plan, v) -> bool:
    """A.2 on consecutive grid intervals and on the tail, plus p(g_l) >= p_D(g_l) (slow loops)."""
    grid, window = plan.grid, plan.window
    if not grid.size:
        return True

    def local(g):
        lo = max(g - window, 0)
        return sum(v[lo:g]) / (g - lo)

    if sum(v[: grid[0]]) / grid[0] < local(grid[0]) - 1e-12:
        return False
    for a, b in zip(grid[:-1], grid[1:]):
        mean = sum(v[a:b]) / (b - a)
        if not (local(a) >= mean - 1e-12 and mean >= local(b) - 1e-12):
            return False
    last = int(grid[-1])
    running = 0.0
    for r in range(last + 1, plan.n + 1):
        running += v[r - 1]
        if r - last >= plan.m and running / (r - last) > local(last) + 1e-12:
            return False
    return True


def weakly_monotone(plan, p) -> bool:
    """A.1: p(r1) >= p(r2) whenever r2 >= r1 + m and r1 >= r_tilde."""
    m, start = plan.m, plan.r_tilde
    if start + m > p.size:
        return True
    # min over r1 in [start, r] of p(r1) must be >= p(r + m): a running minimum does it.
    running_min = np.minimum.accumulate(p[start - 1 : p.size - m])
    return bool(np.all(running_min >= p[start - 1 + m :] - 1e-12))


def reference_paula(plan, v_at_ranks):
    """Algorithm 2 straight from the paper, with a dictionary of labels (slow oracle).

    Unknown labels (NaN) count 0 in the lower and 1 in the upper recursion.
    """
    label = dict(zip(plan.ranks.tolist(), v_at_ranks.tolist()))

    def value(r, unknown_as):
        x = label[r]
        return unknown_as if np.isnan(x) else x

    def p_delta(g, unknown_as):
        lo = max(g - plan.window, 0)
        return sum(value(i, unknown_as) for i in range(lo + 1, g + 1)) / (g - lo)

    grid = plan.grid.tolist()
    y_lo = [sum(value(i, 0.0) for i in range(1, grid[0] + 1))]
    y_hi = [sum(value(i, 1.0) for i in range(1, grid[0] + 1))]
    for k in range(len(grid) - 1):
        step = grid[k + 1] - grid[k]
        y_lo.append(y_lo[-1] + step * p_delta(grid[k + 1], 0.0))
        y_hi.append(y_hi[-1] + step * p_delta(grid[k], 1.0))
    return np.array(y_lo), np.array(y_hi)
