"""Every view of a run's manifest and tables, in one place: what a person reads about a run.

- HTML: the run's report and its notebook summary (:mod:`~prdist.render.report`, with the figures
  of :mod:`~prdist.render.figures` and the tables and words of :mod:`~prdist.render.sections`, on
  the page of :mod:`~prdist.render.page`), and the history page of a series of releases
  (:mod:`~prdist.render.history`), all drawn by the SVG engine of :mod:`~prdist.render.svg`;
- text: the terminal summaries of ``prdist run`` and ``prdist compare`` and the lines of a flow
  run's log (:mod:`~prdist.render.terminal`);
- markdown: the flow runs' Prefect artifacts (:mod:`~prdist.render.markdown`);
- matplotlib: the same pictures for a notebook (:mod:`~prdist.render.plotting`, the optional extra).

Core layer: pure NumPy (and pandas for the history page and a user's DataFrames), no I/O. Callers read the run directory and hand the manifest
and tables in; verdicts on the numbers (the gamma check of Lemma 4) are the core's
(:func:`prdist.paula.bounds.within_gamma`), never made again here.
"""

import importlib

#: Public name -> the module of prdist.render that defines it, imported on first use (PEP 562):
#: a run renders its report and summary without the history page's pandas.
_LAZY = {
    "render_history": "history",
    **dict.fromkeys(("comparison_markdown", "evaluation_markdown"), "markdown"),
    **dict.fromkeys(("render_report", "render_summary"), "report"),
    **dict.fromkeys(("assumptions_doubt", "awaiting_message", "compare_text", "counts_message", "history_text",
                     "known_quality_lines", "quality_text", "run_summary_text"), "terminal"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'prdist.render' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"prdist.render.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
