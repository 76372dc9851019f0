"""The human-readable report of a run: one self-contained HTML page with inline SVG plots.

:func:`render_report` turns the tables of a run directory (``bounds.parquet``, ``plan.parquet``,
``bands.parquet``, ``exact.parquet``) and its manifest into a single HTML document. The page
needs nothing else: the style sheet is inline, the plots are inline SVG (:mod:`prdist.render.svg`,
no plotting library, no JavaScript), and a Content-Security-Policy forbids scripts and every external
load, so the file can be mailed, attached to a Prefect artifact or opened from object storage.

Safety. Everything that comes from the resource or the user (item keys, system names, URLs,
parameter values, status strings) is HTML-escaped where it is written. Credentials never reach the
page: the manifest's ``params`` and ``input`` are rendered through whitelists (storage options and
any other field not named below are left out), URLs lose their user info and query string (where
presigned signatures live), and the free-form sections (diagnostics, versions, timings) show only
scalar values whose key does not look like a secret.

The PR region is computed from the yield columns of the bounds table, with
:func:`prdist.paula.derived.pr_region` (recall >= y_lo(r)/y_hi(n), recall <= min(1, y_hi(r)/y_lo(n))),
so the report shows the same numbers as the core; a ``pr_region`` entry of the manifest is not
used.
"""

from __future__ import annotations

from collections.abc import Mapping

from prdist.errors import DataError, ParameterError
from prdist.redaction import display_url, is_secret_name
from prdist.render.figures import section_bands, section_bands_missing, section_pr, section_precision
from prdist.render.markup import as_mapping, esc, html_table, is_number, plain, thousands
from prdist.render.page import SCOPED_CSS, document
from prdist.render.sections import section_cutoffs, section_diagnostics, section_known_quality, section_labels
from prdist.render.tables import (
    BANDS_COLUMNS,
    BOUNDS_COLUMNS,
    CUTOFF_COLUMNS,
    EXACT_COLUMNS,
    OWNER,
    PLAN_COLUMNS,
    BoundsView,
    exact_curve,
    frame_checked,
    prefix_end_of,
)

__all__ = ["render_report", "render_summary"]

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


def render_report(
    *,
    manifest: Mapping,
    bounds: object,
    plan: object | None = None,
    bands: object | None = None,
    exact: object | None = None,
    cutoffs: object | None = None,
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
    bounds : DataFrame or pyarrow.Table, shape (k, 5)
        ``bounds.parquet``: rank (int, unique, >= 1; its largest rank is taken as n),
        precision_lower, precision_upper, yield_lower, yield_upper. Any number of rows: the
        plots keep every rank past the labeled prefix and a log-spaced subset of the prefix.
    plan : DataFrame or pyarrow.Table, optional
        ``plan.parquet``: rank, key, score, role, label (NaN = unknown). Gives the labeled
        prefix, the label budget by role and the first items still awaiting labels.
    bands : DataFrame or pyarrow.Table, optional
        ``bands.parquet``: recall, precision, band_lower, band_upper, pointwise_lower,
        pointwise_upper.
    exact : DataFrame or pyarrow.Table, optional
        The true precision function when it is known (simulations): rank, precision. Drawn on
        the precision plot; on the PR plot too when it reaches rank n.
    cutoffs : DataFrame or pyarrow.Table, optional
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
            f"The 'manifest' parameter of {OWNER} must be a dict (the run's manifest.json). "
            f"Got {type(manifest).__name__} instead."
        )
    view = BoundsView.from_frame(frame_checked(bounds, "bounds", BOUNDS_COLUMNS))
    n_manifest = manifest.get("n")
    if n_manifest is not None and is_number(n_manifest) and int(n_manifest) != view.n:
        raise DataError(
            f"The manifest says n = {int(n_manifest)} but the bounds table of {OWNER} ends at rank "
            f"{view.n}; bounds.parquet must hold a row for rank n. Pass the bounds of the same run."
        )
    plan = frame_checked(plan, "plan", PLAN_COLUMNS, optional=True)
    bands = frame_checked(bands, "bands", BANDS_COLUMNS, optional=True)
    exact = frame_checked(exact, "exact", EXACT_COLUMNS, optional=True)
    cutoffs = frame_checked(cutoffs, "cutoffs", CUTOFF_COLUMNS, optional=True)
    if exact is not None:
        exact = exact_curve(exact, view.n)

    params = as_mapping(manifest.get("params"))
    diagnostics = as_mapping(manifest.get("diagnostics"))
    prefix_end = prefix_end_of(view, plan, params)
    page_title = "prdist report" if title is None else str(title)

    sections = [
        _header(page_title, manifest, view, diagnostics),
        section_precision(view, exact, prefix_end, diagnostics, params),
        section_pr(view, exact, prefix_end),
    ]
    if bands is not None:
        sections.append(section_bands(bands, as_mapping(manifest.get("bands"))))
    elif params.get("bands") is True:
        sections.append(section_bands_missing(manifest))
    if cutoffs is not None:
        sections.append(section_cutoffs(cutoffs, view.n, in_doubt=diagnostics.get("assumptions_plausible") is False))
    sections.append(section_labels(manifest, plan))
    if "verdict_quality" in manifest or "from_judge" in as_mapping(manifest.get("counts")):
        sections.append(section_known_quality(manifest))  # judge30
    if diagnostics and manifest.get("certifies") != "gold":  # gold bounds: their own section says how they were made
        sections.append(section_diagnostics(diagnostics, labels_known(manifest)))
    sections.append(_section_run(manifest, params))
    return document(page_title, "\n".join(sections))


def render_summary(manifest: Mapping, bounds, *, exact=None) -> str:
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
    view = BoundsView.from_frame(frame_checked(bounds, "bounds", BOUNDS_COLUMNS))
    exact = frame_checked(exact, "exact", EXACT_COLUMNS, optional=True)
    if exact is not None:
        exact = exact_curve(exact, view.n)
    params = as_mapping(manifest.get("params"))
    diagnostics = as_mapping(manifest.get("diagnostics"))
    # No diagnostics section here: the reference names where they are (an in-page link would go nowhere).
    ref = "diagnostics of the full report (<code>.report()</code>)"
    body = _header("prdist evaluation", manifest, view, diagnostics, ref) + section_precision(
        view, exact, prefix_end_of(view, None, params), diagnostics, params
    )
    return f'<div class="prdist-summary"><style>{SCOPED_CSS}</style>{body}</div>'


def _header(title: str, manifest: Mapping, view: BoundsView, diagnostics: Mapping,
            diagnostics_ref: str = '<a href="#diagnostics">diagnostics</a>') -> str:
    status, awaiting = status_of(manifest)
    badge = ""
    if status is not None:
        css = "ok" if status == "complete" else "neutral" if awaiting is not None else "warn"
        badge = f' <span class="badge {css}">{esc(status)}</span>'
    source = as_mapping(manifest.get("input")).get("url")
    subtitle = f'<p class="subtitle">{esc(display_url(source))}</p>' if isinstance(source, str) else ""
    run_id = manifest.get("run_id")
    if isinstance(run_id, str):
        subtitle += f'<p class="subtitle">run {esc(run_id)}</p>'

    cards = [
        ("items ranked (n)", thousands(view.n)),
        (
            f"precision over all {thousands(view.n)} items",
            f"{view.precision_lower[-1]:.3f} \u2013 {view.precision_upper[-1]:.3f}",
        ),
    ]
    ap = manifest.get("ap_bounds")
    if isinstance(ap, (list, tuple)) and len(ap) == 2 and all(is_number(a) for a in ap):
        cards.append(("average precision", f"{float(ap[0]):.3f} \u2013 {float(ap[1]):.3f}"))
    counts = as_mapping(manifest.get("counts"))
    if is_number(counts.get("annotations")) and is_number(counts.get("labeled")):
        cards.append(("labels known / planned", f"{thousands(counts['labeled'])} / {thousands(counts['annotations'])}"))
    card_html = "".join(
        f'<div class="card"><div class="value">{v}</div><div class="what">{esc(k)}</div></div>' for k, v in cards
    )

    plausible = diagnostics.get("assumptions_plausible")
    known = labels_known(manifest)
    if known == 0:
        verdict = ('<p class="verdict">No planned label is known yet: the bounds are the widest possible, and '
                   "there is nothing to test the assumptions on.</p>")
    elif plausible is True and awaiting is not None:
        verdict = (
            f'<p class="verdict">{thousands(awaiting)} planned items await labels; until they have them the bounds count '
            f"each as incorrect (lower) and correct (upper). The {thousands(known)} labels known so far show no evidence "
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
    return f'<header><h1>{esc(title)}{badge}</h1>{subtitle}<div class="cards">{card_html}</div>{verdict}</header>'


def status_of(manifest: Mapping) -> tuple[str | None, int | None]:
    """The status shown, and how many planned items await labels (None when none do).

    A run is "complete" only once every planned item has a verdict (cannot judge is one); until
    then it is "awaiting labels (N)", whatever an older manifest's status field says.
    """
    status = manifest.get("status")
    awaiting = as_mapping(manifest.get("counts")).get("awaiting")
    if is_number(awaiting) and awaiting > 0:
        return f"awaiting labels ({thousands(awaiting)})", int(awaiting)
    if status == "awaiting labels" or manifest.get("awaiting_labels") is True:
        return "awaiting labels", 0
    return (None if status is None else str(status)), None


def labels_known(manifest: Mapping) -> int | None:
    """How many planned labels the manifest says are known (None when it does not say)."""
    labeled = as_mapping(manifest.get("counts")).get("labeled")
    return int(labeled) if is_number(labeled) else None


def _section_run(manifest: Mapping, params: Mapping) -> str:
    parts = []
    rows = [
        [f"<code>{esc(key)}</code>", shown, esc(meaning)]
        for key, meaning in _PARAMETERS.items()
        if params.get(key) is not None and (shown := plain(params[key])) is not None
        and (key not in _BAND_PARAMETERS or params.get("bands") is True)  # older manifests list them anyway
    ]
    if rows:
        parts.append("<h3>Parameters</h3>" + html_table(["parameter", "value", "meaning"], rows))
    source = as_mapping(manifest.get("input"))
    rows = [
        [esc(what), shown]
        for key, what in _INPUT_FIELDS.items()
        if source.get(key) is not None and (shown := plain(source[key])) is not None
    ]
    if rows:
        parts.append("<h3>Input</h3>" + html_table(["", ""], rows, css="narrow"))
    for key, heading, unit in (("versions", "Versions", ""), ("timings", "Timings", " s")):
        entries = as_mapping(manifest.get(key))
        rows = []
        for name, value in entries.items():
            if is_secret_name(name):
                continue
            shown = plain(value, 3)
            if value is not None and shown is not None:
                rows.append([esc(name), shown + (unit if is_number(value) else "")])
        if rows:
            parts.append(f"<h3>{heading}</h3>" + html_table(["", ""], rows, numeric={1} if unit else (), css="narrow"))
    if not parts:
        return ""
    return f'<section id="run"><h2>Run</h2>{"".join(parts)}</section>'
