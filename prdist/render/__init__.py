"""Every view of a run's manifest and tables, in one place: what a person reads about a run.

- HTML: the run's report and its notebook summary (:mod:`~prdist.render.report`, with the figures
  of :mod:`~prdist.render.figures` and the tables and words of :mod:`~prdist.render.sections`, on
  the page of :mod:`~prdist.render.page`), and the history page of a series of releases
  (:mod:`~prdist.render.history`), all drawn by the SVG engine of :mod:`~prdist.render.svg`;
- text: the terminal summaries of ``prdist run`` and ``prdist compare`` and the lines of a flow
  run's log (:mod:`~prdist.render.terminal`);
- markdown: the flow runs' Prefect artifacts (:mod:`~prdist.render.markdown`);
- matplotlib: the same pictures for a notebook (:mod:`~prdist.render.plotting`, the optional extra).

Core layer: pure NumPy and pandas, no I/O. Callers read the run directory and hand the manifest
and tables in; verdicts on the numbers (the gamma check of Lemma 4) are the core's
(:func:`prdist.paula.bounds.within_gamma`), never made again here.
"""

from prdist.render.history import render_history
from prdist.render.markdown import comparison_markdown, evaluation_markdown
from prdist.render.report import render_report, render_summary
from prdist.render.terminal import (
    assumptions_doubt,
    awaiting_message,
    compare_text,
    counts_message,
    history_text,
    known_quality_lines,
    quality_text,
    run_summary_text,
)

__all__ = [
    "assumptions_doubt", "awaiting_message", "compare_text", "comparison_markdown", "counts_message",
    "evaluation_markdown", "history_text", "known_quality_lines", "quality_text", "render_history", "render_report",
    "render_summary", "run_summary_text",
]
