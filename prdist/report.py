"""The human-readable report of a run: one self-contained HTML page with inline SVG plots.

:func:`render_report` turns the tables of a run directory (``bounds.parquet``, ``plan.parquet``,
``bands.parquet``, ``exact.parquet``) and its manifest into a single HTML document. The page
needs nothing else: the style sheet is inline, the plots are inline SVG drawn here with NumPy (no
plotting library, no JavaScript), and a Content-Security-Policy forbids scripts and every external
load, so the file can be mailed, attached to a Prefect artifact or opened from object storage.

Safety. Everything that comes from the resource or the user (item keys, system names, URLs,
parameter values, status strings) is HTML-escaped where it is written. Credentials never reach the
page: the manifest's ``params`` and ``input`` are rendered through whitelists (storage options and
any other field not named below are left out), URLs lose their user info and query string (where
presigned signatures live), and the free-form sections (diagnostics, versions, timings) show only
scalar values whose key does not look like a secret.

The PR region is computed here from the yield columns of the bounds table, with
:func:`prdist.derived.pr_region` (recall >= y_lo(r)/y_hi(n), recall <= min(1, y_hi(r)/y_lo(n))),
so the report shows the same numbers as the core; a ``pr_region`` entry of the manifest is not
used.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .derived import pr_region
from .errors import DataError, ParameterError
from .redaction import display_url, is_secret_name

__all__ = ["render_report", "render_summary"]

_OWNER = "render_report"

# Parameters of a run that the report shows, with what they mean to a reader. Anything else in
# manifest["params"] (storage options above all) is left out on purpose: extend this list to show
# a new parameter, never render the dict itself.
_PARAMETERS = {
    "method": "annotation plan (paula, random or stratified)",
    "eps": "grid spacing \u03b5: g_j = \u2308(1+\u03b5)^j\u2309",
    "window": "width \u0394 of the local-precision windows",
    "r_tilde": "rank beyond which precision is assumed monotone",
    "confidence": "confidence level of every interval of the run, under its stated model (none: the paper's deterministic bounds)",
    "targets": "precision targets of the cut-off table",
    "bands": "bootstrap bands requested",
    "aggregate": "rule making one verdict per item from several annotators",
    "bands_method": "bootstrap method of the bands",
    "replicates": "bootstrap replicates",
    "band_sample": "items of the bands' random arm",
    "sample_size": "labels of the random method",
    "seed": "random seed",
    "budget": "label budget",
    "labels": "label store",
    "oracle_column": "column that answered the labels (simulation; with a judge column, the gold audit's)",
    "judge_column": "column of an automatic judge's verdicts, standing where no annotator judged",
    "gold_budget": "items of the random gold audit",
    "scheduler": "Dask scheduler",
    "model": "population model of the synthetic resource",
    "prevalence": "share of correct items in the synthetic resource",
}
_BAND_PARAMETERS = {"bands_method", "replicates", "band_sample"}  # shown only for a run with bands
_INPUT_FIELDS = {
    "url": "resource",
    "fingerprint": "fingerprint",
    "rows": "rows",
    "partitions": "partitions",
    "sorted": "row groups in descending score order (statistics; rows inside a group are ordered on read)",
}
_DIAGNOSTICS_SHOWN = {
    "precondition_holds",
    "monotonicity_violations",
    "largest_rise",
    "rise_ranks",
    "max_ratio",
    "gamma",
    "contradictions",
    "contradiction_ranks",
    "unknown_labels",
    "assumptions_plausible",
}

_BOUNDS_COLUMNS = ("rank", "precision_lower", "precision_upper", "yield_lower", "yield_upper")
_PLAN_COLUMNS = ("rank", "key", "score", "role", "label")
_BANDS_COLUMNS = ("recall", "precision", "band_lower", "band_upper", "pointwise_lower", "pointwise_upper")
_EXACT_COLUMNS = ("rank", "precision")
_CUTOFF_COLUMNS = ("target", "rank", "score")

# Plot sizes, in SVG user units (the figures scale to the page width).
_PREFIX_POINTS = 300  # log-spaced ranks kept from the fully labeled prefix
_CURVE_POINTS = 1500  # ranks kept elsewhere; far more than the plot's pixels
_MARKER_SPACING = 7.0  # least distance between grid-point markers, in SVG units
_AWAITING_SHOWN = 10

# Colours (ColorBrewer Blues/Oranges, readable in print and for the common colour deficiencies).
_BLUE, _BLUE_FILL, _RED, _GREY_FILL = "#08519c", "#9ecae1", "#cb181d", "#ececec"
_ORANGE_DARK, _ORANGE, _ORANGE_FILL = "#7f2704", "#fd8d3c", "#fdd0a2"


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------
def render_report(
    *,
    manifest: Mapping,
    bounds: pd.DataFrame,
    plan: pd.DataFrame | None = None,
    bands: pd.DataFrame | None = None,
    exact: pd.DataFrame | None = None,
    cutoffs: pd.DataFrame | None = None,
    title: str | None = None,
) -> str:
    """Render the report of a run as one self-contained HTML document.

    Parameters
    ----------
    manifest : mapping
        The run's ``manifest.json``: status, params, n, counts {annotations, labeled, unknown},
        input {url, fingerprint}, diagnostics (``PaulaDiagnostics.to_dict()``), versions,
        timings and optionally ``ap_bounds`` [lower, upper] and ``run_id``. Every key is
        optional; only whitelisted fields are shown (see the module docstring).
    bounds : DataFrame, shape (k, 5)
        ``bounds.parquet``: rank (int, unique, >= 1; its largest rank is taken as n),
        precision_lower, precision_upper, yield_lower, yield_upper. Any number of rows: the
        plots keep every rank past the labeled prefix and a log-spaced subset of the prefix.
    plan : DataFrame, optional
        ``plan.parquet``: rank, key, score, role, label (NaN = unknown). Gives the labeled
        prefix, the label budget by role and the first items still awaiting labels.
    bands : DataFrame, optional
        ``bands.parquet``: recall, precision, band_lower, band_upper, pointwise_lower,
        pointwise_upper.
    exact : DataFrame, optional
        The true precision function when it is known (simulations): rank, precision. Drawn on
        the precision plot; on the PR plot too when it reaches rank n.
    cutoffs : DataFrame, optional
        target, rank, score: the deepest cut-off whose precision is guaranteed >= target (rank 0
        when none is).
    title : str, optional
        Page title; default "prdist report".

    Returns
    -------
    str
        The HTML document.

    Raises
    ------
    ParameterError
        When ``manifest`` is not a mapping or a table is not a DataFrame.
    DataError
        When a table lacks a contract column, holds non-finite or out-of-range values, or the
        manifest's n disagrees with the bounds.

    Examples
    --------
    >>> import pandas as pd
    >>> bounds = pd.DataFrame({"rank": [1, 2, 4], "precision_lower": [1.0, 0.5, 0.25],
    ...                        "precision_upper": [1.0, 0.5, 0.75], "yield_lower": [1.0, 1.0, 1.0],
    ...                        "yield_upper": [1.0, 1.0, 3.0]})
    >>> page = render_report(manifest={"n": 4, "status": "complete"}, bounds=bounds)
    >>> page.startswith("<!DOCTYPE html>"), page.count("<svg")
    (True, 2)
    """
    if not isinstance(manifest, Mapping):
        raise ParameterError(
            f"The 'manifest' parameter of {_OWNER} must be a dict (the run's manifest.json). "
            f"Got {type(manifest).__name__} instead."
        )
    view = _BoundsView.from_frame(_frame(bounds, "bounds", _BOUNDS_COLUMNS))
    n_manifest = manifest.get("n")
    if n_manifest is not None and _is_number(n_manifest) and int(n_manifest) != view.n:
        raise DataError(
            f"The manifest says n = {int(n_manifest)} but the bounds table of {_OWNER} ends at rank "
            f"{view.n}; bounds.parquet must hold a row for rank n. Pass the bounds of the same run."
        )
    plan = _frame(plan, "plan", _PLAN_COLUMNS, optional=True)
    bands = _frame(bands, "bands", _BANDS_COLUMNS, optional=True)
    exact = _frame(exact, "exact", _EXACT_COLUMNS, optional=True)
    cutoffs = _frame(cutoffs, "cutoffs", _CUTOFF_COLUMNS, optional=True)
    if exact is not None:
        exact = _exact_curve(exact, view.n)

    params = _mapping(manifest.get("params"))
    diagnostics = _mapping(manifest.get("diagnostics"))
    prefix_end = _prefix_end(view, plan, params)
    page_title = "prdist report" if title is None else str(title)

    sections = [
        _header(page_title, manifest, view, diagnostics),
        _section_precision(view, exact, prefix_end, diagnostics, params),
        _section_pr(view, exact, prefix_end),
    ]
    if bands is not None:
        sections.append(_section_bands(bands, _mapping(manifest.get("bands"))))
    elif params.get("bands") is True:
        sections.append(_section_bands_missing(manifest))
    if cutoffs is not None:
        sections.append(_section_cutoffs(cutoffs, view.n, in_doubt=diagnostics.get("assumptions_plausible") is False))
    sections.append(_section_labels(manifest, plan))
    if "verdict_quality" in manifest or "from_judge" in _mapping(manifest.get("counts")):
        sections.append(_section_known_quality(manifest))  # judge30
    if diagnostics and manifest.get("certifies") != "gold":  # gold bounds: their own section says how they were made
        sections.append(_section_diagnostics(diagnostics, _labels_known(manifest)))
    sections.append(_section_run(manifest, params))
    return _document(page_title, "\n".join(sections))


def render_summary(manifest: Mapping, bounds: pd.DataFrame, *, exact: pd.DataFrame | None = None) -> str:
    """The report's summary cards and precision plot as an HTML fragment (for notebooks).

    Takes the same ``manifest`` and ``bounds`` as :func:`render_report` and returns a ``<div>``
    with its own scoped style, no document around it, so it can be embedded in a page that has
    its own (a notebook's ``_repr_html_``).

    Examples
    --------
    >>> import pandas as pd
    >>> bounds = pd.DataFrame({"rank": [1, 2], "precision_lower": [1.0, 0.5], "precision_upper": [1.0, 1.0],
    ...                        "yield_lower": [1.0, 1.0], "yield_upper": [1.0, 2.0]})
    >>> html = render_summary({"n": 2}, bounds)
    >>> html.startswith('<div class="prdist-summary">'), html.count("<svg")
    (True, 1)
    """
    if not isinstance(manifest, Mapping):
        raise ParameterError(f"The 'manifest' parameter of render_summary must be a dict. Got {type(manifest).__name__} instead.")
    view = _BoundsView.from_frame(_frame(bounds, "bounds", _BOUNDS_COLUMNS))
    exact = _frame(exact, "exact", _EXACT_COLUMNS, optional=True)
    if exact is not None:
        exact = _exact_curve(exact, view.n)
    params = _mapping(manifest.get("params"))
    diagnostics = _mapping(manifest.get("diagnostics"))
    # No diagnostics section here: the reference names where they are (an in-page link would go nowhere).
    ref = "diagnostics of the full report (<code>.report()</code>)"
    body = _header("prdist evaluation", manifest, view, diagnostics, ref) + _section_precision(
        view, exact, _prefix_end(view, None, params), diagnostics, params
    )
    return f'<div class="prdist-summary"><style>{_SCOPED_CSS}</style>{body}</div>'


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
def _frame(frame, name: str, columns: tuple[str, ...], *, optional: bool = False) -> pd.DataFrame | None:
    if frame is None and optional:
        return None
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError(
            f"The {name!r} parameter of {_OWNER} must be a pandas DataFrame with columns "
            f"{', '.join(columns)}. Got {type(frame).__name__} instead."
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"The {name!r} table of {_OWNER} lacks the column(s) {', '.join(missing)}; it needs "
            f"{', '.join(columns)} (see CONTRACTS.md, run directory)."
        )
    return frame


def _finite_column(frame: pd.DataFrame, name: str, column: str, *, low=None, high=None) -> np.ndarray:
    try:
        values = frame[column].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"The {column!r} column of the {name!r} table of {_OWNER} must be numeric.") from None
    bad = ~np.isfinite(values)
    if low is not None:
        bad |= values < low - 1e-9
    if high is not None:
        bad |= values > high + 1e-9
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        span = "" if low is None else f" in [{low:g}, {high:g}]"
        raise DataError(
            f"The {column!r} column of the {name!r} table of {_OWNER} must hold finite numbers{span}; "
            f"row {i} (counting from 0) holds {float(values[i])!r}."
        )
    return values


def _rank_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    ranks = _finite_column(frame, name, "rank", low=1, high=np.inf)
    if not np.all(ranks == np.floor(ranks)):
        raise DataError(f"The 'rank' column of the {name!r} table of {_OWNER} must hold integers.")
    return ranks.astype(np.int64)


@dataclass(frozen=True)
class _BoundsView:
    """The bounds table as arrays, with the interface :mod:`prdist.derived` expects."""

    ranks: np.ndarray
    precision_lower: np.ndarray
    precision_upper: np.ndarray
    ylo: np.ndarray
    yhi: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> _BoundsView:
        if frame.empty:
            raise DataError(f"The 'bounds' table of {_OWNER} is empty; it needs a row for every grid rank and n.")
        ranks = _rank_column(frame, "bounds")
        order = np.argsort(ranks, kind="stable")
        ranks = ranks[order]
        if np.any(ranks[1:] == ranks[:-1]):
            dup = int(ranks[1:][ranks[1:] == ranks[:-1]][0])
            raise DataError(f"The 'bounds' table of {_OWNER} holds rank {dup} twice; ranks must be unique.")
        lo = _finite_column(frame, "bounds", "precision_lower", low=0.0, high=1.0)[order]
        hi = _finite_column(frame, "bounds", "precision_upper", low=0.0, high=1.0)[order]
        ylo = _finite_column(frame, "bounds", "yield_lower", low=0.0, high=np.inf)[order]
        yhi = _finite_column(frame, "bounds", "yield_upper", low=0.0, high=np.inf)[order]
        if np.any(lo > hi + 1e-9) or np.any(ylo > yhi + 1e-9):
            raise DataError(f"The 'bounds' table of {_OWNER} has a lower bound above its upper bound.")
        return cls(ranks, lo, hi, ylo, yhi)

    @property
    def n(self) -> int:
        return int(self.ranks[-1])

    def _at(self, values: np.ndarray, r):
        idx = np.searchsorted(self.ranks, np.asarray(r, dtype=np.int64))
        return values[idx]

    def yield_lower(self, r):
        return self._at(self.ylo, r)

    def yield_upper(self, r):
        return self._at(self.yhi, r)

    def evaluation_ranks(self) -> np.ndarray:
        return self.ranks


def _exact_curve(exact: pd.DataFrame, n: int) -> pd.DataFrame:
    ranks = _rank_column(exact, "exact")
    if ranks.size and ranks.max() > n:
        raise DataError(
            f"The 'exact' table of {_OWNER} reaches rank {int(ranks.max())}, past n = {n} of the bounds; "
            "pass the precision function of the same resource."
        )
    precision = _finite_column(exact, "exact", "precision", low=0.0, high=1.0)
    order = np.argsort(ranks, kind="stable")
    return pd.DataFrame({"rank": ranks[order], "precision": precision[order]})


def _mapping(value) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _prefix_end(view: _BoundsView, plan: pd.DataFrame | None, params: Mapping) -> int:
    """Last rank of the fully labeled prefix, or 0 when the plan has none."""
    if plan is not None:
        prefix = _rank_column(plan, "plan")[plan["role"].astype(str).to_numpy() == "prefix"]
        return int(prefix.max()) if prefix.size else 0
    if params.get("method") not in (None, "paula"):
        return 0
    # A PAULA bounds table holds every rank 1..g_l and then grid ranks that are at least m + 1
    # apart, so its contiguous run from rank 1 is the prefix.
    ranks = view.ranks
    if ranks[0] != 1:
        return 0
    breaks = np.flatnonzero(np.diff(ranks) != 1)
    return int(ranks[breaks[0]] if breaks.size else ranks[-1])


# --------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------
def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _int(value) -> str:
    return f"{int(value):,}"


def _num(value, digits: int = 3) -> str:
    """A float with ``digits`` decimals, an int with separators, a dash when missing."""
    if _is_number(value) and float(value) == math.inf:
        return "\u221e"
    if value is None or (_is_number(value) and not math.isfinite(float(value))):
        return "\u2014"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return _int(value)
    if _is_number(value):
        return f"{float(value):.{digits}f}"
    return _esc(value)


def _plain(value, digits: int = 4) -> str | None:
    """A scalar from the manifest as escaped text, or None when it is not a scalar."""
    if value is None:
        return "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if _is_number(value):
        if isinstance(value, numbers.Integral):
            return _int(value)
        x = float(value)
        return "\u2014" if not math.isfinite(x) else f"{x:.{digits}g}"
    if isinstance(value, str):
        return _esc(display_url(value))
    if isinstance(value, (list, tuple)) and all(_is_number(v) or isinstance(v, str) for v in value):
        shown = ", ".join(_plain(v, digits) for v in value[:12])
        return shown + (", \u2026" if len(value) > 12 else "")
    return None


def _table(headers, rows, *, numeric=(), css: str = "") -> str:
    """An HTML table; cells are trusted HTML (escape before calling)."""

    def cell(tag: str, i: int, content: str) -> str:
        return f'<{tag} class="num">{content}</{tag}>' if i in numeric else f"<{tag}>{content}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    head = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}>{head}<tbody>{body}</tbody></table>"


# --------------------------------------------------------------------------------------------
# SVG plotting
# --------------------------------------------------------------------------------------------
def _nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    for mult in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= mult * power * (1 + 1e-9):
            return mult * power
    return 10.0 * power


def _decimals(step: float) -> int:
    """Decimals that print every multiple of a nice step exactly (0.25 needs two, 0.2 one)."""
    power = math.floor(math.log10(step) + 1e-9)
    mantissa = round(step / 10.0**power, 6)
    return max(0, -power + (1 if mantissa == 2.5 else 0))


def _count_label(value: float) -> str:
    """1, 20, 500, 1k, 20k, 1M, 1B: rank ticks a reader takes in at a glance."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


@dataclass(frozen=True)
class _Axis:
    lo: float
    hi: float
    start: float  # pixel of lo
    end: float  # pixel of hi
    log: bool = False
    names: tuple[str, ...] = ()  # a category axis: ticks at 1, 2, ... labeled with these names

    def pixels(self, values) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        if self.log:
            t = (np.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.start + t * (self.end - self.start)

    def ticks(self) -> tuple[list[tuple[float, str]], list[float]]:
        """Major ticks with labels, and unlabeled minor ticks."""
        if self.names:
            fits = max(3, int(abs(self.end - self.start) / len(self.names) / 6.5))  # characters a slot holds at 12 px
            return [(float(k), name if len(name) <= fits else name[: fits - 1] + "\u2026")
                    for k, name in enumerate(self.names, start=1)], []
        if not self.log:
            step = _nice_step(self.hi - self.lo, 6)
            first = math.ceil(self.lo / step - 1e-9)
            values = [k * step for k in range(first, int(math.floor(self.hi / step + 1e-9)) + 1)]
            return [(v, f"{v:.{_decimals(step)}f}") for v in values], []
        low_decade, high_decade = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
        decades = [10.0**k for k in range(low_decade, high_decade + 1)]

        def inside(v: float) -> bool:
            return self.lo * (1 - 1e-9) <= v <= self.hi * (1 + 1e-9)

        # Few decades on the axis: label 2x and 5x too, so that there are enough labeled ticks.
        mults = (1, 2, 5) if math.log10(self.hi / self.lo) < 2.5 else (1,)
        major = sorted({d * m for d in decades for m in mults if inside(d * m)})
        minor = [d * m for d in decades for m in range(2, 10) if inside(d * m) and d * m not in major]
        return [(v, _count_label(v)) for v in major], minor


def _fmt_points(x: np.ndarray, y: np.ndarray) -> str:
    return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))


def _finite_runs(*arrays: np.ndarray) -> list[np.ndarray]:
    """Index runs where every array is finite (a NaN breaks a line instead of faking a value)."""
    ok = np.logical_and.reduce([np.isfinite(a) for a in arrays])
    idx = np.flatnonzero(ok)
    if not idx.size:
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1)


class _Plot:
    """One chart: a plotting area with two axes, data layers clipped to it and a legend."""

    WIDTH, HEIGHT = 900, 400
    LEFT, RIGHT, TOP, BOTTOM = 64, 220, 18, 50

    def __init__(
        self,
        fig_id: str,
        *,
        x: tuple[float, float],
        y: tuple[float, float],
        xlog: bool = False,
        xnames: tuple[str, ...] = (),
        xlabel: str,
        ylabel: str,
        description: str,
    ):
        self.fig_id = fig_id
        x0, x1 = self.LEFT, self.WIDTH - self.RIGHT
        y0, y1 = self.HEIGHT - self.BOTTOM, self.TOP
        self.x = _Axis(x[0], x[1], x0, x1, log=xlog, names=tuple(xnames))
        self.y = _Axis(y[0], y[1], y0, y1)
        self.xlabel, self.ylabel, self.description = xlabel, ylabel, description
        self.background: list[str] = []  # drawn under the grid lines
        self.layers: list[str] = []
        self.legend: list[tuple[str, str, dict]] = []

    def band(self, xs, lower, upper, *, fill: str, opacity: float = 1.0, label: str | None = None) -> None:
        """Fill between two curves sharing x (NaN-separated pieces filled one by one)."""
        xs, lower, upper = (np.asarray(a, dtype=np.float64) for a in (xs, lower, upper))
        for run in _finite_runs(xs, lower, upper):
            px = self.x.pixels(xs[run])
            pts = _fmt_points(np.r_[px, px[::-1]], np.r_[self.y.pixels(upper[run]), self.y.pixels(lower[run])[::-1]])
            self.layers.append(f'<polygon points="{pts}" fill="{fill}" fill-opacity="{opacity}" stroke="none"/>')
        if label:
            self.legend.append(("fill", label, {"fill": fill, "opacity": opacity}))

    def region(self, upper_x, upper_y, lower_x, lower_y, *, fill: str, opacity: float) -> None:
        """Fill the polygon along one boundary and back along the other."""
        xs = np.r_[self.x.pixels(upper_x), self.x.pixels(lower_x)[::-1]]
        ys = np.r_[self.y.pixels(upper_y), self.y.pixels(lower_y)[::-1]]
        self.layers.append(f'<polygon points="{_fmt_points(xs, ys)}" fill="{fill}" fill-opacity="{opacity}" stroke="none"/>')

    def line(self, xs, ys, *, color: str, width: float = 1.6, dash: str | None = None, label: str | None = None) -> None:
        xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        for run in _finite_runs(xs, ys):
            pts = _fmt_points(self.x.pixels(xs[run]), self.y.pixels(ys[run]))
            self.layers.append(
                f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}"'
                f' stroke-linejoin="round"{extra}/>'
            )
        if label:
            self.legend.append(("line", label, {"color": color, "width": width, "dash": dash}))

    def markers(self, xs, ys, *, color: str, label: str | None = None, radius: float = 2.4) -> None:
        px, py = self.x.pixels(xs), self.y.pixels(ys)
        circles = "".join(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="{radius}"/>' for a, b in zip(px, py))
        self.layers.append(f'<g fill="#ffffff" stroke="{color}" stroke-width="1.1">{circles}</g>')
        if label:
            self.legend.append(("marker", label, {"color": color}))

    def vspan(self, x_lo: float, x_hi: float, *, fill: str, label: str) -> None:
        a, b = self.x.pixels([x_lo, x_hi])
        self.background.append(
            f'<rect x="{a:.1f}" y="{self.TOP}" width="{max(b - a, 0.5):.1f}" '
            f'height="{self.HEIGHT - self.BOTTOM - self.TOP}" fill="{fill}"/>'
        )
        self.legend.append(("fill", label, {"fill": fill, "opacity": 1.0}))

    def _axes(self) -> str:
        out = []
        (px0, px1), (py0, py1) = (self.x.start, self.x.end), (self.y.start, self.y.end)
        major, minor = self.x.ticks()
        for v, text in major:
            p = float(self.x.pixels(v))
            out.append(f'<line x1="{p:.1f}" y1="{py1}" x2="{p:.1f}" y2="{py0}" stroke="#e3e3e3"/>')
            out.append(f'<line x1="{p:.1f}" y1="{py0}" x2="{p:.1f}" y2="{py0 + 5}" stroke="#444"/>')
            out.append(f'<text x="{p:.1f}" y="{py0 + 18}" text-anchor="middle">{_esc(text)}</text>')
        for v in minor:
            p = float(self.x.pixels(v))
            out.append(f'<line x1="{p:.1f}" y1="{py0}" x2="{p:.1f}" y2="{py0 + 3}" stroke="#777"/>')
        for v, text in self.y.ticks()[0]:
            p = float(self.y.pixels(v))
            out.append(f'<line x1="{px0}" y1="{p:.1f}" x2="{px1}" y2="{p:.1f}" stroke="#e3e3e3"/>')
            out.append(f'<line x1="{px0 - 5}" y1="{p:.1f}" x2="{px0}" y2="{p:.1f}" stroke="#444"/>')
            out.append(f'<text x="{px0 - 8}" y="{p + 4:.1f}" text-anchor="end">{_esc(text)}</text>')
        out.append(f'<rect x="{px0}" y="{py1}" width="{px1 - px0}" height="{py0 - py1}" fill="none" stroke="#444"/>')
        out.append(
            f'<text x="{(px0 + px1) / 2:.1f}" y="{self.HEIGHT - 10}" text-anchor="middle" '
            f'font-size="13">{_esc(self.xlabel)}</text>'
        )
        out.append(
            f'<text transform="translate(16 {(py0 + py1) / 2:.1f}) rotate(-90)" text-anchor="middle" '
            f'font-size="13">{_esc(self.ylabel)}</text>'
        )
        return "".join(out)

    def _legend(self) -> str:
        x0, y = self.WIDTH - self.RIGHT + 18, self.TOP + 10
        out = []
        for kind, label, style in self.legend:
            if kind == "fill":
                out.append(
                    f'<rect x="{x0}" y="{y - 6}" width="22" height="12" fill="{style["fill"]}" '
                    f'fill-opacity="{style["opacity"]}" stroke="#999" stroke-width="0.5"/>'
                )
            elif kind == "line":
                dash = f' stroke-dasharray="{style["dash"]}"' if style["dash"] else ""
                out.append(
                    f'<line x1="{x0}" y1="{y}" x2="{x0 + 22}" y2="{y}" stroke="{style["color"]}" '
                    f'stroke-width="{style["width"]}"{dash}/>'
                )
            else:
                out.append(
                    f'<circle cx="{x0 + 11}" cy="{y}" r="3" fill="#ffffff" stroke="{style["color"]}" stroke-width="1.1"/>'
                )
            lines = _wrap(label, int((self.RIGHT - 48) / 6.2))  # ~6.2 units a character at 12 px
            spans = "".join(f'<tspan x="{x0 + 30}" dy="{0 if i == 0 else 14}">{_esc(line)}</tspan>' for i, line in enumerate(lines))
            out.append(f'<text x="{x0 + 30}" y="{y + 4}">{spans}</text>')
            y += 22 + 14 * (len(lines) - 1)
        return "".join(out)

    def svg(self) -> str:
        clip = f"{self.fig_id}-clip"
        (px0, px1), (py0, py1) = (self.x.start, self.x.end), (self.y.start, self.y.end)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" id="{self.fig_id}" viewBox="0 0 {self.WIDTH} {self.HEIGHT}" '
            f'width="100%" role="img" aria-labelledby="{self.fig_id}-title" font-family="system-ui, sans-serif" '
            f'font-size="12" fill="#222">'
            f'<title id="{self.fig_id}-title">{_esc(self.description)}</title>'
            f'<defs><clipPath id="{clip}"><rect x="{px0}" y="{py1}" width="{px1 - px0}" '
            f'height="{py0 - py1}"/></clipPath></defs>'
            f'<rect width="{self.WIDTH}" height="{self.HEIGHT}" fill="#ffffff"/>'
            f'<g clip-path="url(#{clip})">{"".join(self.background)}</g>{self._axes()}'
            f'<g clip-path="url(#{clip})">{"".join(self.layers)}</g>{self._legend()}</svg>'
        )


def _value_range(*arrays: np.ndarray, low: float = 0.0, high: float = 1.0) -> tuple[float, float]:
    """A y range that shows the data with a little room, snapped to tenths inside [low, high]."""
    values = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])
    values = values[np.isfinite(values)]
    if not values.size:
        return low, high
    lo = max(low, math.floor(values.min() * 10 - 0.25) / 10)
    hi = min(high, math.ceil(values.max() * 10 + 0.25) / 10)
    if hi - lo < 0.1:
        lo, hi = max(low, hi - 0.1), max(hi, lo + 0.1)
    return lo, hi


def _log_subsample(ranks: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of a log-spaced subset of sorted ranks, first and last always kept."""
    if ranks.size <= max_points:
        return np.arange(ranks.size)
    targets = np.geomspace(ranks[0], ranks[-1], max_points)
    idx = np.clip(np.searchsorted(ranks, targets), 0, ranks.size - 1)
    return np.unique(np.r_[0, idx, ranks.size - 1])


def _plot_indices(ranks: np.ndarray, prefix_end: int) -> np.ndarray:
    in_prefix = np.flatnonzero(ranks <= prefix_end)
    beyond = np.flatnonzero(ranks > prefix_end)
    return np.r_[
        in_prefix[_log_subsample(ranks[in_prefix], _PREFIX_POINTS)],
        beyond[_log_subsample(ranks[beyond], _CURVE_POINTS)],
    ].astype(np.int64)


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------
def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (a longer word stays whole).

    >>> _wrap("worst case over every verdict", 20)
    ['worst case over', 'every verdict']
    """
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _figure(svg: str, caption: str) -> str:
    return f'<figure>{svg}<figcaption>{caption}</figcaption></figure>'


def _header(title: str, manifest: Mapping, view: _BoundsView, diagnostics: Mapping,
            diagnostics_ref: str = '<a href="#diagnostics">diagnostics</a>') -> str:
    status, awaiting = _status(manifest)
    badge = ""
    if status is not None:
        css = "ok" if status == "complete" else "neutral" if awaiting is not None else "warn"
        badge = f' <span class="badge {css}">{_esc(status)}</span>'
    source = _mapping(manifest.get("input")).get("url")
    subtitle = f'<p class="subtitle">{_esc(display_url(source))}</p>' if isinstance(source, str) else ""
    run_id = manifest.get("run_id")
    if isinstance(run_id, str):
        subtitle += f'<p class="subtitle">run {_esc(run_id)}</p>'

    cards = [
        ("items ranked (n)", _int(view.n)),
        (
            f"precision over all {_int(view.n)} items",
            f"{view.precision_lower[-1]:.3f} \u2013 {view.precision_upper[-1]:.3f}",
        ),
    ]
    ap = manifest.get("ap_bounds")
    if isinstance(ap, (list, tuple)) and len(ap) == 2 and all(_is_number(a) for a in ap):
        cards.append(("average precision", f"{float(ap[0]):.3f} \u2013 {float(ap[1]):.3f}"))
    counts = _mapping(manifest.get("counts"))
    if _is_number(counts.get("annotations")) and _is_number(counts.get("labeled")):
        cards.append(("labels known / planned", f"{_int(counts['labeled'])} / {_int(counts['annotations'])}"))
    card_html = "".join(
        f'<div class="card"><div class="value">{v}</div><div class="what">{_esc(k)}</div></div>' for k, v in cards
    )

    plausible = diagnostics.get("assumptions_plausible")
    known = _labels_known(manifest)
    if known == 0:
        verdict = ('<p class="verdict">No planned label is known yet: the bounds are the widest possible, and '
                   "there is nothing to test the assumptions on.</p>")
    elif plausible is True and awaiting is not None:
        verdict = (
            f'<p class="verdict">{_int(awaiting)} planned items await labels; until they have them the bounds count '
            f"each as incorrect (lower) and correct (upper). The {_int(known)} labels known so far show no evidence "
            "against the assumptions behind the bounds.</p>"
        )
    elif plausible is True:
        verdict = (
            '<p class="verdict ok">The planned labels show no evidence against the assumptions behind the '
            "bounds. They cannot show a break that falls between two planned windows.</p>"
        )
    elif plausible is False:
        verdict = (
            '<p class="verdict warn">The labels show evidence against the assumptions behind the bounds: '
            f"read the {diagnostics_ref} before relying on the guarantee.</p>"
        )
    else:
        verdict = '<p class="verdict">No assumption diagnostics were recorded for this run.</p>'
    return f'<header><h1>{_esc(title)}{badge}</h1>{subtitle}<div class="cards">{card_html}</div>{verdict}</header>'


def _status(manifest: Mapping) -> tuple[str | None, int | None]:
    """The status shown, and how many planned items await labels (None when none do).

    A run is "complete" only once every planned item has a verdict (cannot judge is one); until
    then it is "awaiting labels (N)", whatever an older manifest's status field says.
    """
    status = manifest.get("status")
    awaiting = _mapping(manifest.get("counts")).get("awaiting")
    if _is_number(awaiting) and awaiting > 0:
        return f"awaiting labels ({_int(awaiting)})", int(awaiting)
    if status == "awaiting labels" or manifest.get("awaiting_labels") is True:
        return "awaiting labels", 0
    return (None if status is None else str(status)), None


def _labels_known(manifest: Mapping) -> int | None:
    """How many planned labels the manifest says are known (None when it does not say)."""
    labeled = _mapping(manifest.get("counts")).get("labeled")
    return int(labeled) if _is_number(labeled) else None


def _section_precision(view: _BoundsView, exact, prefix_end: int, diagnostics: Mapping, params: Mapping) -> str:
    idx = _plot_indices(view.ranks, prefix_end)
    r = view.ranks[idx]
    lo, hi = view.precision_lower[idx], view.precision_upper[idx]
    arrays = [lo, hi]
    if exact is not None:
        ex = exact.iloc[_log_subsample(exact["rank"].to_numpy(), _CURVE_POINTS)]
        arrays.append(ex["precision"].to_numpy())
    x_hi = max(view.n, 10)  # a log axis needs some width even for a tiny resource
    plot = _Plot(
        "fig-precision",
        x=(1, x_hi),
        y=_value_range(*arrays),
        xlog=True,
        xlabel="rank r (items kept, by descending score; log scale)",
        ylabel="precision p(r)",
        description="Guaranteed lower and upper bounds on the precision at every rank",
    )
    if prefix_end >= 1:
        plot.vspan(1, prefix_end, fill=_GREY_FILL, label=f"labeled prefix 1\u2013{_int(prefix_end)}")
    plot.band(r, lo, hi, fill=_BLUE_FILL, opacity=0.6, label="bounds on p(r)")
    plot.line(r, lo, color=_BLUE, label="lower bound")
    plot.line(r, hi, color=_BLUE, dash="5 3", label="upper bound")
    if exact is not None:
        plot.line(ex["rank"].to_numpy(), ex["precision"].to_numpy(), color=_RED, width=1.3, label="exact p(r)")
    grid_rows = np.flatnonzero(view.ranks > prefix_end)
    if grid_rows.size:
        # Grid points are evenly spaced on the log axis; past a few per marker width they merge
        # into a tube, so show every step-th one.
        spacing = float(np.median(np.diff(plot.x.pixels(view.ranks[grid_rows])))) if grid_rows.size > 1 else np.inf
        step = max(1, math.ceil(_MARKER_SPACING / max(spacing, 1e-9)))
        shown = grid_rows[::step]
        label = "grid points" if step == 1 else f"grid points (1 in {step})"
        plot.markers(view.ranks[shown], view.precision_lower[shown], color=_BLUE, label=label)
        plot.markers(view.ranks[shown], view.precision_upper[shown], color=_BLUE)

    factor = ""
    gamma, eps = diagnostics.get("gamma"), params.get("eps")
    level = _mapping(diagnostics.get("confidence")).get("confidence")
    if _is_number(level):
        factor = (
            f" The bounds hold at every rank at once with probability at least {float(level):.3g} if the "
            "labels are independent draws whose rate does not rise with rank (see the diagnostics); the "
            "probability is over those draws, not over annotator error."
        )
    elif _is_number(gamma) and _is_number(eps) and math.isfinite(gamma):
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
    return f'<section id="precision"><h2>Precision at every cut-off</h2>{_figure(plot.svg(), caption)}</section>'


def _section_pr(view: _BoundsView, exact, prefix_end: int) -> str:
    r = view.ranks[_plot_indices(view.ranks, prefix_end)]
    region = pr_region(view, r)
    rl, ru = region["recall_lower"].to_numpy(), region["recall_upper"].to_numpy()
    pl, pu = region["precision_lower"].to_numpy(), region["precision_upper"].to_numpy()
    arrays = [pl, pu]
    exact_pr = None
    if exact is not None and int(exact["rank"].iloc[-1]) == view.n:
        ranks = exact["rank"].to_numpy()
        yields = ranks * exact["precision"].to_numpy()
        if yields[-1] > 0:
            keep = _log_subsample(ranks, _CURVE_POINTS)
            exact_pr = (yields[keep] / yields[-1], exact["precision"].to_numpy()[keep])
            arrays.append(exact_pr[1])
    plot = _Plot(
        "fig-pr",
        x=(0.0, 1.0),
        y=_value_range(*arrays),
        xlabel="recall (share of all correct items found)",
        ylabel="precision",
        description="Region that holds the precision-recall curve",
    )
    plot.region(ru, pu, rl, pl, fill=_BLUE_FILL, opacity=0.6)
    plot.legend.append(("fill", "region holding the PR curve", {"fill": _BLUE_FILL, "opacity": 0.6}))
    plot.line(ru, pu, color=_BLUE, dash="5 3", label="upper-right edge")
    plot.line(rl, pl, color=_BLUE, label="lower-left edge")
    if exact_pr is not None:
        plot.line(*exact_pr, color=_RED, width=1.3, label="exact PR curve")
    caption = (
        "At each rank r, recall = y(r)/y(n) lies in [y<sub>lo</sub>(r)/y<sub>hi</sub>(n), "
        "min(1, y<sub>hi</sub>(r)/y<sub>lo</sub>(n))] and precision in its bounds, so the PR curve "
        "runs between the two edges. Computed from the yield bounds at the ranks of the bounds table."
    )
    return f'<section id="pr"><h2>Precision\u2013recall region</h2>{_figure(plot.svg(), caption)}</section>'


def _section_bands_missing(manifest: Mapping) -> str:
    """Bands were asked for but not computed: say why, never leave the reader guessing."""
    awaiting = _mapping(manifest.get("counts")).get("awaiting")
    if _is_number(awaiting) and awaiting > 0:
        why = ("they wait for the random arm's labels: the arm is an i.i.d. sample of the resource, and "
               "dropping items that can still be labeled could bias it")
    else:
        why = "the random arm has no precision-recall curve to band (a single class, too few positives or constant scores)"
    return f'<section id="bands"><h2>Bootstrap confidence bands</h2><p class="note">Not computed: {why}.</p></section>'


def _section_bands(bands: pd.DataFrame, about: Mapping | None = None) -> str:
    cols = {c: pd.to_numeric(bands[c], errors="coerce").to_numpy(dtype=np.float64) for c in _BANDS_COLUMNS}
    worst = _worst_band(bands)
    order = np.argsort(cols["recall"], kind="stable")
    cols = {c: v[order] for c, v in cols.items()}
    if not np.isfinite(cols["recall"]).any() or not np.isfinite(cols["precision"]).any():
        body = '<p class="note">The bands table holds no finite values; nothing to draw.</p>'
        return f'<section id="bands"><h2>Bootstrap confidence bands</h2>{body}</section>'
    x = cols["recall"]
    shown = (cols["band_lower"], cols["band_upper"]) if worst is None else (worst[0][order], worst[1][order])
    plot = _Plot(
        "fig-bands",
        x=(0.0, 1.0),
        y=_value_range(*shown, cols["precision"]),
        xlabel="recall",
        ylabel="precision",
        description="Bootstrap confidence bands around the empirical precision-recall curve",
    )
    plot.band(x, cols["band_lower"], cols["band_upper"], fill=_ORANGE_FILL, label="simultaneous band")
    plot.band(x, cols["pointwise_lower"], cols["pointwise_upper"], fill=_ORANGE, opacity=0.55, label="pointwise band")
    if worst is not None:
        plot.line(x, shown[0], color=_ORANGE_DARK, width=1.2, dash="4 3", label="worst case over every verdict of the items nobody can judge")
        plot.line(x, shown[1], color=_ORANGE_DARK, width=1.2, dash="4 3")
    plot.line(x, cols["precision"], color=_ORANGE_DARK, width=1.8, label="empirical PR curve")
    caption = (
        "From the i.i.d. labeled sample: the simultaneous band holds the whole PR curve over the "
        "recall range shown with the stated confidence; the pointwise band holds it at each recall "
        "level separately (and is narrower)."
    )
    note = _bands_note(about or {}, worst is not None)
    return f'<section id="bands"><h2>Bootstrap confidence bands</h2>{note}{_figure(plot.svg(), caption)}</section>'


def _worst_band(bands: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """The worst-case columns of a bands table (over every verdict of the items nobody can judge),
    if any were computed."""
    if not {"precision_worst_low", "precision_worst_high"} <= set(bands.columns):
        return None
    low, high = (pd.to_numeric(bands[c], errors="coerce").to_numpy(dtype=np.float64)
                 for c in ("precision_worst_low", "precision_worst_high"))
    return (low, high) if np.isfinite(low).any() or np.isfinite(high).any() else None


def _bands_note(about: Mapping, has_worst: bool) -> str:
    """What the bands assume about the arm items nobody can judge, and how much it matters."""
    left_out = about.get("cannot_judge_left_out")
    if not (_is_number(left_out) and left_out > 0):
        return ""
    text = f"{_int(left_out)} arm items nobody can judge are left out, assuming they are missing at random."
    if has_worst:
        text += (" Worst case (dashed): at each recall level, the lowest lower and the highest upper simultaneous "
                 "band over that band and the bands of every assignment of correct / incorrect to those items, "
                 "each bootstrapped with the same seed (exact; precision_worst_low / precision_worst_high in "
                 "bands.parquet)")
        widths = (about.get("band_mean_width"), about.get("worst_mean_width"))
        if all(_is_number(w) for w in widths):
            text += f"; mean width {_num(widths[0], 3)} under the assumption, {_num(widths[1], 3)} over every assignment"
        text += "."
    elif about.get("worst_case_computed") is False:
        text += (" Their worst case (precision_worst_low / precision_worst_high in bands.parquet, empty) is not "
                 "computed: their assignments times the replicates exceed the limit "
                 "(the manifest's bands.worst_case says by how much), and the bands with all of them incorrect "
                 "and all correct do not enclose the others, so no band here holds without the assumption.")
    return f'<p class="note">{_esc(text)}</p>'


def _section_cutoffs(cutoffs: pd.DataFrame, n: int, *, in_doubt: bool = False) -> str:
    targets = _finite_column(cutoffs, "cutoffs", "target", low=0.0, high=1.0)
    ranks = _finite_column(cutoffs, "cutoffs", "rank", low=0.0, high=n).astype(np.int64)
    scores = pd.to_numeric(cutoffs["score"], errors="coerce").to_numpy(dtype=np.float64)
    rows = []
    for t, r, s in zip(targets, ranks, scores):
        if r == 0:
            rows.append([f"{t:.3f}", "none", "\u2014", "no cut-off is guaranteed to reach this precision"])
        else:
            meaning = f"keep the top {_int(r)} items ({100 * r / n:.1f}% of the resource)"
            rows.append([f"{t:.3f}", _int(r), _num(s, 4), meaning])
    table = _table(["precision target", "deepest rank", "score at that rank", "meaning"], rows, numeric={0, 1, 2})
    note = (
        '<p class="note">The deepest rank whose precision (as the verdicts say it) is <em>guaranteed</em> '
        "by the lower bound, under the stated assumptions, to reach each target: keeping every item scored "
        "at least the score shown keeps precision at or above the target.</p>"
    )
    if in_doubt:
        note += ('<p class="verdict warn">The diagnostics put the assumptions in doubt: these cut-offs are '
                 "guaranteed only if the assumptions hold.</p>")
    return f'<section id="cutoffs"><h2>Cut-offs</h2>{note}{table}</section>'


_COUNT_ROWS = (
    ("annotations", "planned annotations"),
    ("labeled", "labels known"),
    ("unknown", "labels unknown"),
    ("cannot_judge", "\u2026 nobody can judge (never requested again)"),
    ("disputed", "\u2026 disputed (annotators tie; requested again)"),
    ("awaiting", "\u2026 awaiting a verdict (missing or disputed, or an audit item's gold)"),
)


def _section_labels(manifest: Mapping, plan: pd.DataFrame | None) -> str:
    counts = _mapping(manifest.get("counts"))
    rows = [[_esc(what), _num(counts.get(key))] for key, what in _COUNT_ROWS if _is_number(counts.get(key))]
    unknown = counts.get("unknown")
    if plan is not None and not _is_number(unknown):
        unknown = int(plan["label"].isna().sum())
    if _is_number(unknown) and unknown > 0:
        sentence = (
            f"{_int(unknown)} planned labels are unknown. The bounds count each unknown item as "
            "incorrect for the lower bound and as correct for the upper bound, so they remain valid "
            "now and tighten as verdicts arrive."
        )
    elif _is_number(unknown):
        sentence = "Every planned label is known: the bounds are as tight as this plan allows."
    else:
        sentence = "The manifest records no label counts."
    parts = [f'<p class="note">{sentence}</p>', _table(["", "count"], rows, numeric={1}, css="narrow")]
    parts.append(_agreement_note(_mapping(manifest.get("agreement"))))

    if plan is not None and len(plan):
        role = plan["role"].astype(str).to_numpy()
        label = pd.to_numeric(plan["label"], errors="coerce").to_numpy(dtype=np.float64)
        by_role = []
        for name in dict.fromkeys(role):
            mine = label[role == name]
            by_role.append(
                [_esc(name)]
                + [_int(k) for k in (mine.size, np.isfinite(mine).sum(), np.isnan(mine).sum(), (mine == 1).sum())]
            )
        parts.append("<h3>By part of the plan</h3>")
        parts.append(_table(["role", "planned", "known", "unknown", "correct"], by_role, numeric={1, 2, 3, 4}, css="narrow"))
        verdict = plan["verdict"].astype(str).to_numpy() if "verdict" in plan.columns else np.where(np.isnan(label), "missing", "")
        waiting = plan[np.isin(verdict, ("missing", "disputed"))]
        if len(waiting):
            first = waiting.sort_values("rank", kind="stable").head(_AWAITING_SHOWN)
            rows = [
                [_int(r.rank), _esc(r.key), _num(pd.to_numeric(r.score, errors="coerce"), 4), _esc(r.role)]
                for r in first.itertuples(index=False)
            ]
            parts.append(f"<h3>Items awaiting labels (first {len(first)} of {_int(len(waiting))} by rank)</h3>")
            parts.append(_table(["rank", "key", "score", "role"], rows, numeric={0, 2}))
    return f'<section id="labels"><h2>Label budget</h2>{"".join(parts)}</section>'


def _section_known_quality(manifest: Mapping) -> str:
    """What the bounds certify (gold, or the verdicts) and each verdict source's agreement with gold."""
    counts = _mapping(manifest.get("counts"))
    audit = _mapping(counts.get("gold_audit"))
    confidence = _mapping(manifest.get("params")).get("confidence")
    parts = []
    if _is_number(counts.get("from_judge")):
        parts.append(f'<p class="note">{_int(counts["from_judge"])} planned items carry the judge\'s verdict (no annotator '
                     "judged them).</p>")
    if manifest.get("certifies") == "gold":
        level = f"{float(confidence):g}" if _is_number(confidence) else "the run's confidence"
        parts.append(
            f'<p class="note">The precision bounds certify the precision <em>as gold says it</em>, at every rank of the '
            f"bounds table at once with probability at least {level}, whatever the judge's or annotators' quality: "
            f"gold verdicts on a random audit of {_int(audit.get('items', 0))} planned items, the other verdicts serving "
            "only as predictors of gold. They rest on the normal approximation of the audit's estimates and, at the "
            "grid points past the labeled prefix, on gold labels being independent draws from a rate that does not "
            "rise with rank." + _gold_left_out(audit) + "</p>")
        parts.append(_gold_diagnostics(_mapping(_mapping(manifest.get("diagnostics")).get("gold_bounds"))))
    else:
        waiting = audit.get("awaiting")
        parts.append(
            '<p class="note">The precision bounds certify the precision <em>as the verdicts say it</em> (annotators\' and '
            "judge's), not the truth where verdicts err."
            + (f" The gold audit awaits {_int(waiting)} gold verdicts; once they are in, the bounds certify gold."
               if _is_number(waiting) and waiting > 0 else "") + "</p>")
    rows = []
    for source, quality in _mapping(manifest.get("verdict_quality")).items():
        q = _mapping(quality)
        regions = [(f"{source}, ranks {_mapping(r).get('region')}", _mapping(r)) for r in q.get("regions") or []]
        for name, part in [(source, q), *regions]:
            rows.append([_esc(name), _num(part.get("sensitivity")), _num(part.get("specificity")), _num(part.get("kappa")),
                         _int(part.get("compared", 0))])
    if rows:
        parts.append("<h3>Agreement with gold on the audit</h3>")
        parts.append(_table(["source", "sensitivity", "specificity", "kappa", "items compared"], rows, numeric={1, 2, 3, 4}, css="narrow"))
    return f'<section id="known-quality"><h2>Verdicts of known quality</h2>{"".join(parts)}</section>'


def _gold_diagnostics(gold: Mapping) -> str:
    """How the gold bounds were made: the predictor, its power tuning, segments without gold, contradictions."""
    if not gold:
        return ""
    tuning = _mapping(gold.get("power_tuning"))
    return (f'<p class="note">Predictor of gold: {_esc(gold.get("predictor"))}; power-tuning weight \u03bb from '
            f'{_num(tuning.get("lambda_min"))} to {_num(tuning.get("lambda_max"))} (median {_num(tuning.get("lambda_median"))}; '
            f'0 = gold alone); {_int(gold.get("segments_without_gold", 0))} plan segments without a gold verdict (their '
            f'range counted whole); {_int(gold.get("contradictions", 0))} contradictions between the bounds.</p>')


def _gold_left_out(audit: Mapping) -> str:
    k = audit.get("cannot_judge")
    if not _is_number(k) or k == 0:
        return ""
    return (f" {_int(k)} audit items that gold could not judge are left out, assumed missing independently of their "
            "gold verdict.")


def _agreement_note(agreement: Mapping) -> str:
    """One sentence on how far the annotators agree (Krippendorff's alpha) and the rule used."""
    if not agreement:
        return ""
    alpha = agreement.get("krippendorff_alpha")
    judged = f"{_int(agreement.get('pairable_keys', 0))} items judged by two or more of {_int(agreement.get('annotators', 0))} annotators"
    value = f"Krippendorff's alpha {float(alpha):.3f}" if _is_number(alpha) else "agreement undefined"
    return f'<p class="note">Annotators: {value} ({judged}); one verdict per item by {_esc(agreement.get("rule", "majority"))}.</p>'


def _ranks_list(values) -> str:
    if not isinstance(values, (list, tuple)) or not values:
        return ""
    shown = ", ".join(_int(v) for v in values[:10] if _is_number(v))
    more = ", \u2026" if len(values) > 10 else ""
    return f" (at ranks {shown}{more})"


def _plural(k: int, word: str) -> str:
    return f"{_int(k)} {word}{'' if k == 1 else 's'}"


def _section_diagnostics(diag: Mapping, known: int | None = None) -> str:
    """Each check with its value and a verdict in plain words.

    In confidence mode (``diag["confidence"]`` is a mapping) the bounds rest on a noise model
    instead of A.2 on the observed labels: rises of the window means are expected from noise,
    the precondition and Lemma 4's ratio concern the deterministic bounds only, and the
    monotone-rate test is the evidence that counts.
    """
    if known == 0:
        note = '<p class="note">No planned label is known yet: there is nothing to test the assumptions on.</p>'
        return f'<section id="diagnostics"><h2>Diagnostics</h2>{note}</section>'
    confidence = _mapping(diag.get("confidence"))
    noisy = bool(confidence)
    rows = []

    def add(check: str, value: str, verdict: str, css: str) -> None:
        rows.append([_esc(check), value, f'<span class="{css}">{verdict}</span>'])

    precondition = "precondition p(g_l) \u2265 p_\u0394(g_l)"
    if "precondition_holds" in diag:
        holds = diag["precondition_holds"]
        if holds is True:
            add(precondition, "holds", "the guarantee's precondition is met", "ok")
        elif noisy:
            add(precondition, "fails" if holds is False else "undecided",
                "the confidence bounds do not rest on it", "plain")
        elif holds is False:
            add(precondition, "fails",
                "the local precision at the end of the prefix exceeds the precision there: the guarantee's "
                "precondition does not hold", "bad")
        else:
            add(precondition, "undecided", "unknown labels leave it open", "warn")
    if _is_number(diag.get("monotonicity_violations")):
        k = int(diag["monotonicity_violations"])
        rise = diag.get("largest_rise")
        size = f", by up to {float(rise):.3f}" if _is_number(rise) else ""
        where = f"{_plural(k, 'grid point')}{size}"
        if k == 0:
            add("monotonicity (A.2)", "0 rises", "no evidence against monotonicity", "ok")
        elif noisy:
            add("monotonicity (A.2)", _plural(k, "rise"),
                f"the window means rise at {where}: chance variation of the labels does that, and the confidence bounds allow "
                "for it (the monotone-rate test below weighs the evidence)", "plain")
        else:
            add("monotonicity (A.2)", _plural(k, "rise"),
                f"the local precision rises at {where}: the guarantee may not hold there"
                f"{_ranks_list(diag.get('rise_ranks'))}", "warn")
    if _is_number(diag.get("max_ratio")) and _is_number(diag.get("gamma")):
        ratio, gamma = float(diag["max_ratio"]), float(diag["gamma"])
        value = f"{_num(ratio, 4)} (\u03b3 = {_num(gamma, 4)})"
        ratio_check = "yield ratio Y\u207a/Y\u207b"
        if ratio <= gamma * (1 + 1e-12):
            add(ratio_check, value, "within \u03b3, as Lemma 4 promises", "ok")
        elif noisy:
            add(ratio_check, value, "above \u03b3; Lemma 4 concerns the deterministic bounds only", "plain")
        else:
            add(ratio_check, value, "exceeds \u03b3: the bounds are looser than the guarantee promises", "warn")
    if _is_number(diag.get("contradictions")):
        k = int(diag["contradictions"])
        if k == 0:
            add("contradictions", "0", "the yield bounds are consistent everywhere", "ok")
        else:
            add("contradictions", _int(k),
                f"the yield bounds contradict each other at {_plural(k, 'grid point')}: A.2 is certainly false "
                f"there, and the assumption-free bounds are used{_ranks_list(diag.get('contradiction_ranks'))}", "bad")
    if _is_number(diag.get("unknown_labels")):
        k = int(diag["unknown_labels"])
        add("unknown labels in the bounds' plan", _int(k), "none" if k == 0 else "counted as incorrect (lower) and correct (upper)",
            "ok" if k == 0 else "warn")
    if noisy:
        _confidence_rows(confidence, add)
    if "assumptions_plausible" in diag:
        good = diag["assumptions_plausible"] is True
        add("overall", "plausible" if good else "in doubt",
            "no evidence against the assumptions" if good else "some evidence against the assumptions: see above",
            "ok" if good else "bad")
    table = _table(["check", "value", "verdict"], rows) if rows else ""

    shown_confidence = {
        "confidence", "guarantee_applies", "monotone_rate_test", "model_rejected", "widening_mean", "widening_max"
    }
    further = [(k, v) for k, v in diag.items() if k not in _DIAGNOSTICS_SHOWN]
    further += [(f"confidence.{k}", v) for k, v in confidence.items() if k not in shown_confidence]
    extra = [
        [_esc(k), shown]
        for k, v in further
        if v is not None and not is_secret_name(k) and (shown := _plain(v)) is not None
    ]
    extra_html = f"<h3>Further diagnostics</h3>{_table(['name', 'value'], extra, css='narrow')}" if extra else ""
    if noisy:
        note = (
            '<p class="note">These bounds hold with a stated probability if the labels are independent '
            "draws whose rate of correct items does not rise with rank: the probability is over that draw, "
            "not over annotator error. They bound the precision of the verdicts as given; where verdicts are "
            "wrong, the true precision can lie outside them. The labels cannot prove that model, but they "
            "can show evidence against it.</p>"
        )
    else:
        note = (
            '<p class="note">The bounds rest on the assumption that precision does not rise with depth '
            "(PAULA's A.1/A.2). The labels cannot prove it, but they can show evidence against it.</p>"
        )
    return f'<section id="diagnostics"><h2>Diagnostics</h2>{note}{table}{extra_html}</section>'


def _confidence_rows(confidence: Mapping, add) -> None:
    level = confidence.get("confidence")
    if _is_number(level):
        add("confidence level", _num(level, 3),
            f"the bounds on the verdicts' precision hold at every rank at once with probability at least {float(level):.3g} "
            "under the model",
            "plain")
    test = _mapping(confidence.get("monotone_rate_test"))
    if _is_number(test.get("p_value")):
        value = f"p = {float(test['p_value']):.3g}"
        if _is_number(test.get("windows")):
            value += f" ({_plural(int(test['windows']), 'window')})"
        if confidence.get("model_rejected") is True:
            add("monotone-rate test", value,
                "the labels reject a rate that does not rise with rank: the confidence guarantee may not hold", "bad")
        else:
            add("monotone-rate test", value, "no evidence against a rate that does not rise with rank", "ok")
    if confidence.get("guarantee_applies") is False:
        add("windows inside grid intervals", "no",
            "some windows are wider than their grid interval: the coverage guarantee does not apply", "bad")
    elif confidence.get("guarantee_applies") is True:
        add("windows inside grid intervals", "yes", "the coverage guarantee applies", "ok")
    mean, most = confidence.get("widening_mean"), confidence.get("widening_max")
    if _is_number(mean) and _is_number(most):
        add("price of the confidence", f"{float(mean):.3f} mean, {float(most):.3f} max",
            "extra width of the precision bounds over the deterministic ones at the grid ranks", "plain")


def _section_run(manifest: Mapping, params: Mapping) -> str:
    parts = []
    rows = [
        [f"<code>{_esc(key)}</code>", shown, _esc(meaning)]
        for key, meaning in _PARAMETERS.items()
        if params.get(key) is not None and (shown := _plain(params[key])) is not None
        and (key not in _BAND_PARAMETERS or params.get("bands") is True)  # older manifests list them anyway
    ]
    if rows:
        parts.append("<h3>Parameters</h3>" + _table(["parameter", "value", "meaning"], rows))
    source = _mapping(manifest.get("input"))
    rows = [
        [_esc(what), shown]
        for key, what in _INPUT_FIELDS.items()
        if source.get(key) is not None and (shown := _plain(source[key])) is not None
    ]
    if rows:
        parts.append("<h3>Input</h3>" + _table(["", ""], rows, css="narrow"))
    for key, heading, unit in (("versions", "Versions", ""), ("timings", "Timings", " s")):
        entries = _mapping(manifest.get(key))
        rows = []
        for name, value in entries.items():
            if is_secret_name(name):
                continue
            shown = _plain(value, 3)
            if value is not None and shown is not None:
                rows.append([_esc(name), shown + (unit if _is_number(value) else "")])
        if rows:
            parts.append(f"<h3>{heading}</h3>" + _table(["", ""], rows, numeric={1} if unit else (), css="narrow"))
    if not parts:
        return ""
    return f'<section id="run"><h2>Run</h2>{"".join(parts)}</section>'


# --------------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------------
_CSS = """
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       background: #fafafa; margin: 0; }
main { max-width: 980px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin: 20px 0 6px; }
.subtitle { margin: 0; color: #555; font-family: ui-monospace, monospace; font-size: 13px;
            overflow-wrap: anywhere; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 18px 0 8px; }
.card { flex: 1 1 180px; border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; }
.card .value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .what { color: #555; font-size: 13px; }
.badge { font-size: 13px; font-weight: 600; padding: 2px 8px; border-radius: 10px;
         vertical-align: middle; }
.badge.ok { background: #e5f5e0; color: #226b28; }
.badge.warn { background: #fff3cd; color: #7a5200; }
.badge.neutral { background: #ececec; color: #333; }
.verdict { padding: 8px 12px; border-left: 4px solid #bbb; background: #f6f6f6; }
.verdict.ok { border-color: #41ab5d; background: #f1faee; }
.verdict.warn { border-color: #e6a100; background: #fff8e6; }
figure { margin: 8px 0 0; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption, .note { color: #444; font-size: 14px; margin: 6px 0 10px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 14px; }
table.narrow { min-width: 320px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 4px 12px 4px 0; text-align: left;
         vertical-align: top; }
th { font-weight: 600; border-bottom: 2px solid #ccc; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td { overflow-wrap: anywhere; }
.ok { color: #226b28; }
.warn { color: #7a5200; }
.bad { color: #b00020; font-weight: 600; }
.plain { color: #222; }
code { font-size: 13px; }
footer { margin-top: 40px; color: #777; font-size: 13px; }
"""

# The page's rules that a fragment needs, scoped to it so they do not restyle the host page.
def _scoped_css(scope: str, prefixes: tuple[str, ...]) -> str:
    rules = []
    for rule in _CSS.split("}"):
        selectors, _, body = rule.partition("{")
        chosen = [sel.strip() for sel in selectors.split(",") if sel.strip().startswith(prefixes)]
        if chosen:
            rules.append(", ".join(f"{scope} {sel}" for sel in chosen) + " {" + body + "}")
    return "\n".join(rules)


_SCOPED_CSS = _scoped_css(".prdist-summary", (".card", ".verdict", "figure", "figcaption", "h1", "h2"))

# Scripts, frames and every external load are forbidden: the page is data, never code.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
        f"{body}\n"
        '<footer>Made by prdist. Bounds are guaranteed under the stated assumptions, for the verdicts as '
        "given; bands are statistical.</footer>\n</main>\n</body>\n</html>\n"
    )


# --------------------------------------------------------------------------------------------
# History of a series of releases (prdist history)
# --------------------------------------------------------------------------------------------
_HISTORY_PLOTS = 8  # ranks plotted per series; every rank is in the tables and history.parquet


def render_history(history: pd.DataFrame, reports: Mapping[str, str], judges: pd.DataFrame | None = None) -> str:
    """The self-contained HTML page of ``prdist history``: per series, the bounds at each followed
    rank across releases, the certain changes, and the runs with links to their reports.

    ``history`` has the columns of ``history.parquet``; ``reports`` maps run ids to report URLs;
    ``judges`` the columns of ``judge_quality.parquet`` (a section per series that has rows).
    """
    sections = [
        "<header><h1>Precision across releases</h1><p>A change is marked only when it is certain: the "
        "interval of a release lies wholly below (down) or above (up) the previous release's at that rank. "
        "Releases stand at the place in their series recorded when each was first evaluated. Confidence bounds "
        "split their error budget over those places, so every mark of a series holds at once with the stated "
        "confidence, under the bounds' model and for the precision each release certifies: as its verdicts say it, or as "
        "gold says it for a release with a complete gold audit. No change is claimed between releases that certify "
        "different things.</p></header>"
    ]
    for number, (series, frame) in enumerate(history.groupby("series", sort=True)):
        sections.append(_history_series(number, str(series), frame, reports))
        if judges is not None and (judges["series"] == series).any():
            sections.append(history_judge_section(judges[judges["series"] == series]))  # kq30
    return _document("prdist history", "\n".join(sections))


def _history_series(number: int, series: str, frame: pd.DataFrame, reports: Mapping[str, str]) -> str:
    listing = frame.drop_duplicates("run_id")
    place = dict(zip(listing["run_id"], listing["place"].astype(int)))
    names = tuple(f"{p}. {name}" for p, name in zip(listing["place"].astype(int), listing["release"].astype(str)))
    slot = {run: k for k, run in enumerate(listing["run_id"], start=1)}  # x position: one slot a release, by place
    parts = [f"<section><h2>Series {_esc(display_url(series))}</h2>"]
    figures = []
    for rank in sorted(frame["rank"].unique())[:_HISTORY_PLOTS]:
        at = frame[frame["rank"] == rank]
        x = at["run_id"].map(slot).to_numpy(dtype=np.float64)
        lo, hi = at["precision_lower"].to_numpy(dtype=np.float64), at["precision_upper"].to_numpy(dtype=np.float64)
        plot = _Plot(f"history-{number}-{int(rank)}", x=(0.5, max(len(names), 1) + 0.5), xnames=names, y=_value_range(lo, hi),
                     xlabel="release (place in the series. name)", ylabel=f"precision at rank {int(rank):,}",
                     description=f"bounds on the precision at rank {int(rank):,} across releases")
        plot.band(x, lo, hi, fill="#9ecae1", opacity=0.6, label="guaranteed interval")
        plot.line(x, lo, color="#3182bd", label="lower bound")
        plot.line(x, hi, color="#08519c", dash="4 3", label="upper bound")
        down = (at["change"] == "down").to_numpy()
        if down.any():
            plot.markers(x[down], hi[down], color="#cb181d", label="certain drop", radius=4)
        up = (at["change"] == "up").to_numpy()
        if up.any():
            plot.markers(x[up], lo[up], color="#238b45", label="certain rise", radius=4)
        figures.append(_figure(plot.svg(), f"Rank {int(rank):,}"))
    parts += figures
    changed = frame[frame["change"] != ""]
    rows = [[_int(place[r.run_id]), _esc(r.release), _esc(r.run_id), _int(r.rank), _esc(r.change), _num(r.precision_lower), _num(r.precision_upper)]
            for r in changed.itertuples()]
    parts.append("<h3>Certain changes</h3>" + (_table(["place", "release", "run", "rank", "change", "lower", "upper"], rows, numeric=(0, 3, 5, 6))
                                               if rows else "<p>None: every interval overlaps the previous release's.</p>"))
    rows = [[_int(place[r.run_id]), _esc(str(r.created)), _esc(display_url(str(r.resource))), _int(r.n), _esc(r.certifies),
             _report_link(r.run_id, reports)] for r in listing.itertuples()]
    parts.append("<h3>Runs</h3>" + _table(["place", "committed", "resource", "items", "certifies", "report"], rows, numeric=(0, 3)))
    return "\n".join(parts) + "</section>"


def history_judge_section(judges: pd.DataFrame) -> str:
    """The judge's quality against gold per release of one series, with a warning per drift
    (rows of ``judge_quality.parquet``; see :func:`prdist.history.judge_drift`)."""
    rows = [[_int(r.place), _esc(r.release), _esc(r.certifies), _int(r.compared), _history_rate(r, "sensitivity"),
             _history_rate(r, "specificity"), _num(r.kappa), _esc(r.drift or "\u2014")] for r in judges.itertuples()]
    drifts = judges[judges["drift"] != ""]
    warning = "".join(f'<p class="verdict warn">The judge drifts at release {_int(r.place)} ({_esc(r.release)}): the '
                      f"interval of its {_esc(r.drift.replace(', ', ' and of its '))} is disjoint from the previous release's.</p>"
                      for r in drifts.itertuples())
    return ("<section><h3>The judge against gold</h3><p>Sensitivity and specificity of the judge on each release's gold "
            "audit, with Clopper-Pearson intervals that hold all at once, for every release of the series, at the "
            "series' confidence (each release's share of the error budget split between its two rates). The judge "
            "drifts where an interval is disjoint from the previous release's: when all the intervals hold, its rate on the "
            "two releases' planned items then differs.</p>" + warning
            + _table(["place", "release", "certifies", "compared", "sensitivity", "specificity", "kappa", "drift"], rows,
                     numeric=(0, 3, 4, 5, 6)) + "</section>")


def _history_rate(row, name: str) -> str:
    """A judge rate and its interval as table text, a dash where undefined."""
    low, high = getattr(row, f"{name}_lower"), getattr(row, f"{name}_upper")
    interval = "" if not math.isfinite(low) else f" [{_num(low)}, {_num(high)}]"
    return _num(getattr(row, name)) + interval


def _report_link(run_id: str, reports: Mapping[str, str]) -> str:
    """A link to a run's report where a browser opens it (``file://``, ``http(s)://``), else its URL as text."""
    url = str(reports.get(run_id, ""))
    if url.startswith(("http://", "https://", "file://")):
        return f'<a href="{_esc(url)}">{_esc(run_id)}</a>'
    return _esc(f"{run_id} ({display_url(url)})")
