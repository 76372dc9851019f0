"""The report's figures: precision at every cut-off, the precision-recall region, the bootstrap bands."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from prdist.frames.arrays import median
from prdist.paula.derived import pr_region_columns
from prdist.render.markup import as_mapping, esc, figure, is_number, number, thousands
from prdist.render.svg import (
    BLUE,
    BLUE_FILL,
    GREY_FILL,
    ORANGE,
    ORANGE_DARK,
    ORANGE_FILL,
    RED,
    Plot,
    log_subsample,
    value_range,
)
from prdist.render.tables import BANDS_COLUMNS, BoundsView, numbers
from prdist.frames.columns import column_names

__all__ = ["section_bands", "section_bands_missing", "section_pr", "section_precision"]

# Plot sizes, in SVG user units (the figures scale to the page width).
_PREFIX_POINTS = 300  # log-spaced ranks kept from the fully labeled prefix
_CURVE_POINTS = 1500  # ranks kept elsewhere; far more than the plot's pixels
_MARKER_SPACING = 7.0  # least distance between grid-point markers, in SVG units


def _plot_indices(ranks: np.ndarray, prefix_end: int) -> np.ndarray:
    in_prefix = np.flatnonzero(ranks <= prefix_end)
    beyond = np.flatnonzero(ranks > prefix_end)
    return np.r_[
        in_prefix[log_subsample(ranks[in_prefix], _PREFIX_POINTS)],
        beyond[log_subsample(ranks[beyond], _CURVE_POINTS)],
    ].astype(np.int64)


def section_precision(view: BoundsView, exact, prefix_end: int, diagnostics: Mapping, params: Mapping) -> str:
    """The precision bounds at every rank (log axis): band, bounds, grid points, labeled prefix, exact p(r)."""
    idx = _plot_indices(view.ranks, prefix_end)
    r = view.ranks[idx]
    lo, hi = view.precision_lower[idx], view.precision_upper[idx]
    arrays = [lo, hi]
    if exact is not None:
        shown = log_subsample(exact["rank"], _CURVE_POINTS)
        ex = {"rank": exact["rank"][shown], "precision": exact["precision"][shown]}
        arrays.append(ex["precision"])
    x_hi = max(view.n, 10)  # a log axis needs some width even for a tiny resource
    plot = Plot(
        "fig-precision",
        x=(1, x_hi),
        y=value_range(*arrays),
        xlog=True,
        xlabel="rank r (items kept, by descending score; log scale)",
        ylabel="precision p(r)",
        description="Guaranteed lower and upper bounds on the precision at every rank",
    )
    if prefix_end >= 1:
        plot.vspan(1, prefix_end, fill=GREY_FILL, label=f"labeled prefix 1\u2013{thousands(prefix_end)}")
    plot.band(r, lo, hi, fill=BLUE_FILL, opacity=0.6, label="bounds on p(r)")
    plot.line(r, lo, color=BLUE, label="lower bound")
    plot.line(r, hi, color=BLUE, dash="5 3", label="upper bound")
    if exact is not None:
        plot.line(ex["rank"], ex["precision"], color=RED, width=1.3, label="exact p(r)")
    grid_rows = np.flatnonzero(view.ranks > prefix_end)
    if grid_rows.size:
        # Grid points are evenly spaced on the log axis; past a few per marker width they merge
        # into a tube, so show every step-th one.
        spacing = median(np.diff(plot.x.pixels(view.ranks[grid_rows]))) if grid_rows.size > 1 else np.inf
        step = max(1, math.ceil(_MARKER_SPACING / max(spacing, 1e-9)))
        shown = grid_rows[::step]
        label = "grid points" if step == 1 else f"grid points (1 in {step})"
        plot.markers(view.ranks[shown], view.precision_lower[shown], color=BLUE, label=label)
        plot.markers(view.ranks[shown], view.precision_upper[shown], color=BLUE)

    factor = ""
    gamma, eps = diagnostics.get("gamma"), params.get("eps")
    level = as_mapping(diagnostics.get("confidence")).get("confidence")
    if is_number(level):
        factor = (
            f" The bounds hold at every rank at once with probability at least {float(level):.3g} if the "
            "labels are independent draws whose rate does not rise with rank (see the diagnostics); the "
            "probability is over those draws, not over annotator error."
        )
    elif is_number(gamma) and is_number(eps) and math.isfinite(gamma):
        factor = (
            f" Under the monotonicity assumptions A.1/A.2 the bounds are within a factor "
            f"\u03b3(1+\u03b5) = {gamma * (1 + eps):.3f} of the true precision."
        )
    caption = (
        "The precision of the top r items, as the verdicts say it, lies in the shaded band at every rank r "
        "under the stated assumptions (where verdicts are wrong, the true precision can lie outside). Ranks 1 to the "
        "end of the labeled prefix are known exactly (up to unknown labels); further out the bounds "
        "are evaluated at the grid points g<sub>j</sub> = \u2308(1+\u03b5)<sup>j</sup>\u2309 and at n, "
        f"and the lines join them.{factor}"
    )
    return f'<section id="precision"><h2>Precision at every cut-off</h2>{figure(plot.svg(), caption)}</section>'


def section_pr(view: BoundsView, exact, prefix_end: int) -> str:
    """The region that holds the PR curve, from the yield bounds (:func:`prdist.paula.derived.pr_region`)."""
    r = view.ranks[_plot_indices(view.ranks, prefix_end)]
    region = pr_region_columns(view, r)
    rl, ru = region["recall_lower"], region["recall_upper"]
    pl, pu = region["precision_lower"], region["precision_upper"]
    arrays = [pl, pu]
    exact_pr = None
    if exact is not None and int(exact["rank"][-1]) == view.n:
        ranks = exact["rank"]
        yields = ranks * exact["precision"]
        if yields[-1] > 0:
            keep = log_subsample(ranks, _CURVE_POINTS)
            exact_pr = (yields[keep] / yields[-1], exact["precision"][keep])
            arrays.append(exact_pr[1])
    plot = Plot(
        "fig-pr",
        x=(0.0, 1.0),
        y=value_range(*arrays),
        xlabel="recall (share of all correct items found)",
        ylabel="precision",
        description="Region that holds the precision-recall curve",
    )
    plot.region(ru, pu, rl, pl, fill=BLUE_FILL, opacity=0.6)
    plot.legend.append(("fill", "region holding the PR curve", {"fill": BLUE_FILL, "opacity": 0.6}))
    plot.line(ru, pu, color=BLUE, dash="5 3", label="upper-right edge")
    plot.line(rl, pl, color=BLUE, label="lower-left edge")
    if exact_pr is not None:
        plot.line(*exact_pr, color=RED, width=1.3, label="exact PR curve")
    caption = (
        "At each rank r, recall = y(r)/y(n) lies in [y<sub>lo</sub>(r)/y<sub>hi</sub>(n), "
        "min(1, y<sub>hi</sub>(r)/y<sub>lo</sub>(n))] and precision in its bounds, so the PR curve "
        "runs between the two edges. Computed from the yield bounds at the ranks of the bounds table."
    )
    return f'<section id="pr"><h2>Precision\u2013recall region</h2>{figure(plot.svg(), caption)}</section>'


def section_bands_missing(manifest: Mapping) -> str:
    """Bands were asked for but not computed: say why, never leave the reader guessing."""
    awaiting = as_mapping(manifest.get("counts")).get("awaiting")
    if is_number(awaiting) and awaiting > 0:
        why = ("they wait for the random arm's labels: the arm is an i.i.d. sample of the resource, and "
               "dropping items that can still be labeled could bias it")
    else:
        why = "the random arm has no precision-recall curve to band (a single class, too few positives or constant scores)"
    return f'<section id="bands"><h2>Bootstrap confidence bands</h2><p class="note">Not computed: {why}.</p></section>'


def section_bands(bands, about: Mapping | None = None) -> str:
    """The bootstrap bands of the PR curve (simultaneous, pointwise, worst case when computed) and what they assume."""
    cols = {c: numbers(bands, c) for c in BANDS_COLUMNS}
    worst = _worst_band(bands)
    order = np.argsort(cols["recall"], kind="stable")
    cols = {c: v[order] for c, v in cols.items()}
    if not np.isfinite(cols["recall"]).any() or not np.isfinite(cols["precision"]).any():
        body = '<p class="note">The bands table holds no finite values; nothing to draw.</p>'
        return f'<section id="bands"><h2>Bootstrap confidence bands</h2>{body}</section>'
    x = cols["recall"]
    shown = (cols["band_lower"], cols["band_upper"]) if worst is None else (worst[0][order], worst[1][order])
    plot = Plot(
        "fig-bands",
        x=(0.0, 1.0),
        y=value_range(*shown, cols["precision"]),
        xlabel="recall",
        ylabel="precision",
        description="Bootstrap confidence bands around the empirical precision-recall curve",
    )
    plot.band(x, cols["band_lower"], cols["band_upper"], fill=ORANGE_FILL, label="simultaneous band")
    plot.band(x, cols["pointwise_lower"], cols["pointwise_upper"], fill=ORANGE, opacity=0.55, label="pointwise band")
    if worst is not None:
        plot.line(x, shown[0], color=ORANGE_DARK, width=1.2, dash="4 3", label="worst case over every verdict of the items nobody can judge")
        plot.line(x, shown[1], color=ORANGE_DARK, width=1.2, dash="4 3")
    plot.line(x, cols["precision"], color=ORANGE_DARK, width=1.8, label="empirical PR curve")
    caption = (
        "From the i.i.d. labeled sample: the simultaneous band holds the whole PR curve over the "
        "recall range shown with the stated confidence; the pointwise band holds it at each recall "
        "level separately (and is narrower)."
    )
    note = _bands_note(about or {}, worst is not None)
    return f'<section id="bands"><h2>Bootstrap confidence bands</h2>{note}{figure(plot.svg(), caption)}</section>'


def _worst_band(bands) -> tuple[np.ndarray, np.ndarray] | None:
    """The worst-case columns of a bands table (over every verdict of the items nobody can judge),
    if any were computed."""
    if not {"precision_worst_low", "precision_worst_high"} <= set(column_names(bands)):
        return None
    low, high = (numbers(bands, c) for c in ("precision_worst_low", "precision_worst_high"))
    return (low, high) if np.isfinite(low).any() or np.isfinite(high).any() else None


def _bands_note(about: Mapping, has_worst: bool) -> str:
    """What the bands assume about the arm items nobody can judge, and how much it matters."""
    left_out = about.get("cannot_judge_left_out")
    if not (is_number(left_out) and left_out > 0):
        return ""
    text = f"{thousands(left_out)} arm items nobody can judge are left out, assuming they are missing at random."
    if has_worst:
        text += (" Worst case (dashed): at each recall level, the lowest lower and the highest upper simultaneous "
                 "band over that band and the bands of every assignment of correct / incorrect to those items, "
                 "each bootstrapped with the same seed (exact; precision_worst_low / precision_worst_high in "
                 "bands.parquet)")
        widths = (about.get("band_mean_width"), about.get("worst_mean_width"))
        if all(is_number(w) for w in widths):
            text += f"; mean width {number(widths[0], 3)} under the assumption, {number(widths[1], 3)} over every assignment"
        text += "."
    elif about.get("worst_case_computed") is False:
        text += (" Their worst case (precision_worst_low / precision_worst_high in bands.parquet, empty) is not "
                 "computed: their assignments times the replicates exceed the limit "
                 "(the manifest's bands.worst_case says by how much), and the bands with all of them incorrect "
                 "and all correct do not enclose the others, so no band here holds without the assumption.")
    return f'<p class="note">{esc(text)}</p>'
