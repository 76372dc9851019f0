"""The page of ``prdist history``: a series of releases, the bounds at each followed rank across them,
the certain changes, and links to every run's report."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from prdist.redaction import display_url
from prdist.render.markup import esc, figure, html_table, number, thousands
from prdist.render.page import document
from prdist.render.svg import Plot, value_range

__all__ = ["history_judge_section", "render_history"]

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
    for index, (series, frame) in enumerate(history.groupby("series", sort=True)):
        sections.append(_history_series(index, str(series), frame, reports))
        if judges is not None and (judges["series"] == series).any():
            sections.append(history_judge_section(judges[judges["series"] == series]))
    return document("prdist history", "\n".join(sections))


def _history_series(index: int, series: str, frame: pd.DataFrame, reports: Mapping[str, str]) -> str:
    listing = frame.drop_duplicates("run_id")
    place = dict(zip(listing["run_id"], listing["place"].astype(int)))
    names = tuple(f"{p}. {name}" for p, name in zip(listing["place"].astype(int), listing["release"].astype(str)))
    slot = {run: k for k, run in enumerate(listing["run_id"], start=1)}  # x position: one slot a release, by place
    parts = [f"<section><h2>Series {esc(display_url(series))}</h2>"]
    figures = []
    for rank in sorted(frame["rank"].unique())[:_HISTORY_PLOTS]:
        at = frame[frame["rank"] == rank]
        x = at["run_id"].map(slot).to_numpy(dtype=np.float64)
        lo, hi = at["precision_lower"].to_numpy(dtype=np.float64), at["precision_upper"].to_numpy(dtype=np.float64)
        plot = Plot(f"history-{index}-{int(rank)}", x=(0.5, max(len(names), 1) + 0.5), xnames=names, y=value_range(lo, hi),
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
        figures.append(figure(plot.svg(), f"Rank {int(rank):,}"))
    parts += figures
    changed = frame[frame["change"] != ""]
    rows = [[thousands(place[r.run_id]), esc(r.release), esc(r.run_id), thousands(r.rank), esc(r.change), number(r.precision_lower), number(r.precision_upper)]
            for r in changed.itertuples()]
    parts.append("<h3>Certain changes</h3>" + (html_table(["place", "release", "run", "rank", "change", "lower", "upper"], rows, numeric=(0, 3, 5, 6))
                                               if rows else "<p>None: every interval overlaps the previous release's.</p>"))
    rows = [[thousands(place[r.run_id]), esc(str(r.created)), esc(display_url(str(r.resource))), thousands(r.n), esc(r.certifies),
             _report_link(r.run_id, reports)] for r in listing.itertuples()]
    parts.append("<h3>Runs</h3>" + html_table(["place", "committed", "resource", "items", "certifies", "report"], rows,
                                              numeric=(0, 3)))
    return "\n".join(parts) + "</section>"


def history_judge_section(judges: pd.DataFrame) -> str:
    """The judge's quality against gold per release of one series, with a warning per drift
    (rows of ``judge_quality.parquet``; see :func:`prdist.history.judge_drift`)."""
    rows = [[thousands(r.place), esc(r.release), esc(r.certifies), thousands(r.compared), _history_rate(r, "sensitivity"),
             _history_rate(r, "specificity"), number(r.kappa), esc(r.drift or "\u2014")] for r in judges.itertuples()]
    drifts = judges[judges["drift"] != ""]
    warning = "".join(f'<p class="verdict warn">The judge drifts at release {thousands(r.place)} ({esc(r.release)}): the '
                      f"interval of its {esc(r.drift.replace(', ', ' and of its '))} is disjoint from the previous release's.</p>"
                      for r in drifts.itertuples())
    return ("<section><h3>The judge against gold</h3><p>Sensitivity and specificity of the judge on each release's gold "
            "audit, with Clopper-Pearson intervals that hold all at once, for every release of the series, at the "
            "series' confidence (each release's share of the error budget split between its two rates). The judge "
            "drifts where an interval is disjoint from the previous release's: when all the intervals hold, its rate on the "
            "two releases' planned items then differs.</p>" + warning
            + html_table(["place", "release", "certifies", "compared", "sensitivity", "specificity", "kappa", "drift"], rows,
                         numeric=(0, 3, 4, 5, 6)) + "</section>")


def _history_rate(row, name: str) -> str:
    """A judge rate and its interval as table text, a dash where undefined."""
    low, high = getattr(row, f"{name}_lower"), getattr(row, f"{name}_upper")
    interval = "" if not math.isfinite(low) else f" [{number(low)}, {number(high)}]"
    return number(getattr(row, name)) + interval


def _report_link(run_id: str, reports: Mapping[str, str]) -> str:
    """A link to a run's report where a browser opens it (``file://``, ``http(s)://``), else its URL as text."""
    url = str(reports.get(run_id, ""))
    if url.startswith(("http://", "https://", "file://")):
        return f'<a href="{esc(url)}">{esc(run_id)}</a>'
    return esc(f"{run_id} ({display_url(url)})")
