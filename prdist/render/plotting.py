"""matplotlib views of bounds, bands and population models (the optional extra ``prdist[plot]``).

Every function takes ``ax=None`` (a new figure) or a matplotlib Axes to draw on, and returns the
Axes, as scikit-learn's ``*Display.plot`` and torchmetrics' ``plot()`` do. matplotlib is imported
only when a plot is drawn; without it the call raises one ImportError that says how to get it.
The HTML pages draw their own SVG (:mod:`prdist.render.svg`, in the same colours) and need none of this.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from prdist.errors import DataError
from prdist.render.svg import BLUE, BLUE_FILL, GREY_FILL, ORANGE_DARK, ORANGE_FILL, RED
from prdist.render.tables import BANDS_COLUMNS

__all__ = ["plot_bands", "plot_bounds", "plot_population"]

_EXACT_POINTS = 2000


def _axes(ax):
    """``ax``, or the Axes of a new figure; the one place matplotlib is imported."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("Plotting needs matplotlib: pip install 'prdist[plot]' (or pip install matplotlib).") from None
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.2))
    return ax


def plot_bounds(bounds, ax=None, *, exact: pd.DataFrame | None = None):
    """Draw PAULA bounds on the precision function p(r), rank on a log axis.

    Draws the band between the lower and upper bound, both bounds as lines, the exactly labeled
    prefix 1..g_l (shaded), the grid points g_j as markers and, when given, the exact precision
    function.

    Parameters
    ----------
    bounds : PaulaBounds
        From :func:`prdist.paula_bounds` (or ``Evaluation.bounds``).
    ax : matplotlib Axes, optional
    exact : DataFrame with columns rank, precision, optional
        The true p(r) (simulations).

    Returns
    -------
    matplotlib Axes
    """
    ax = _axes(ax)
    table = bounds.table()
    r = table["rank"].to_numpy()
    lo, hi = table["precision_lower"].to_numpy(), table["precision_upper"].to_numpy()
    prefix_end = bounds.plan.prefix_end
    ax.axvspan(1, max(prefix_end, 1.5), color=GREY_FILL, zorder=0, label=f"labeled prefix 1\u2013{prefix_end:,}")
    ax.fill_between(r, lo, hi, color=BLUE_FILL, alpha=0.6, step=None, label="bounds on p(r)")
    ax.plot(r, lo, color=BLUE, lw=1.4, label="lower bound")
    ax.plot(r, hi, color=BLUE, lw=1.4, ls="--", label="upper bound")
    grid = bounds.plan.grid
    if grid.size:
        ax.plot(grid, bounds.lower(grid), ls="none", marker="o", ms=2.5, color=BLUE, label="grid points")
        ax.plot(grid, bounds.upper(grid), ls="none", marker="o", ms=2.5, color=BLUE)
    if exact is not None:
        ranks = exact["rank"].to_numpy()
        # Log-spaced rows: a line through millions of points draws no better on a log axis.
        keep = np.unique(np.geomspace(1, ranks.size, _EXACT_POINTS).astype(np.int64) - 1) if ranks.size > _EXACT_POINTS else slice(None)
        ax.plot(ranks[keep], exact["precision"].to_numpy()[keep], color=RED, lw=1.1, label="exact p(r)")
    ax.set_xscale("log")
    ax.set_xlim(1, max(bounds.n, 10))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("rank r (items kept, by descending score; log scale)")
    ax.set_ylabel("precision p(r)")
    ax.legend(loc="lower left", fontsize="small")
    return ax


def plot_bands(bands: pd.DataFrame, ax=None):
    """Draw bootstrap bands of the PR curve: the result of :func:`prdist.bootstrap_bands`.

    ``bootstrap_bands`` returns a DataFrame (the columns of ``bands.parquet``), so this is a
    function of the frame rather than a method: the sup-norm band (shaded), the pointwise band
    (dotted) and the empirical PR curve.

    Parameters
    ----------
    bands : DataFrame
        recall, precision, band_lower, band_upper, pointwise_lower, pointwise_upper.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    if not isinstance(bands, pd.DataFrame) or any(c not in bands.columns for c in BANDS_COLUMNS):
        raise DataError(f"plot_bands needs the DataFrame of bootstrap_bands, with columns {', '.join(BANDS_COLUMNS)}.")
    ax = _axes(ax)
    frame = bands.sort_values("recall", kind="stable")
    recall = frame["recall"].to_numpy()
    ax.fill_between(recall, frame["band_lower"], frame["band_upper"], color=ORANGE_FILL, label="sup-norm band")
    ax.plot(recall, frame["pointwise_lower"], color=ORANGE_DARK, ls=":", lw=1, label="pointwise band")
    ax.plot(recall, frame["pointwise_upper"], color=ORANGE_DARK, ls=":", lw=1)
    ax.plot(recall, frame["precision"], color=ORANGE_DARK, lw=1.5, label="empirical PR curve")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.legend(loc="lower left", fontsize="small")
    return ax


def plot_population(model, ax=None, *, kind: str = "pr", points: int = 201):
    """Draw the exact PR (``kind="pr"``) or ROC (``kind="roc"``) curve of a population model.

    Parameters
    ----------
    model : prdist.population.ScoreModel
        From :func:`prdist.population.binormal` and its siblings.
    ax : matplotlib Axes, optional
    kind : {"pr", "roc"}
    points : int
        Number of recall (or false-positive-rate) values, evenly spaced in [0, 1].

    Returns
    -------
    matplotlib Axes
    """
    if kind not in ("pr", "roc"):
        raise DataError(f"The 'kind' parameter of plot_population must be 'pr' or 'roc'; got {kind!r}.")
    ax = _axes(ax)
    x = np.linspace(0.0, 1.0, points)
    if kind == "pr":
        beta = x[1:]  # PR(0) is a limit, not a value
        ax.plot(beta, model.pr(beta), color=BLUE, lw=1.5, label="population PR curve")
        ax.axhline(model.prevalence, color="grey", lw=0.8, ls="--", label=f"chance (prevalence {model.prevalence:g})")
        ax.set_xlabel("recall \u03b2")
        ax.set_ylabel("precision PR(\u03b2)")
    else:
        ax.plot(x, model.roc(x), color=BLUE, lw=1.5, label="population ROC curve")
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="chance")
        ax.set_xlabel("false positive rate \u03b1")
        ax.set_ylabel("true positive rate ROC(\u03b1)")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="best", fontsize="small")
    return ax
