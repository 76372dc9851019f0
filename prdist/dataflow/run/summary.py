"""A few lines that tell a person at the terminal what a run found: the run directory read for
:func:`prdist.render.terminal.run_summary_text`, which words them."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from prdist.render.terminal import run_summary_text

from prdist.dataflow.io.publishing import read_parquet
from prdist.dataflow.io.storage import Location, filesystem, join_url, resolve
from prdist.dataflow.io.storage_errors import exists

__all__ = ["run_files", "run_summary"]


def _read(run: Location, name: str):
    at = run.child(name)
    if not exists(at.fs, at.path, where=run.given):
        return None
    with at.fs.open(at.path, "rb") as fh:
        return json.load(fh) if name.endswith(".json") else read_parquet(fh)


def run_summary(run: str, *, storage_options=None, ranks: int = 6) -> str:
    """Bounds at a few log-spaced ranks (with the exact precision when known), cut-offs, report."""
    at = resolve(run, storage_options=storage_options)  # once: its files are child locations
    return run_summary_text(_read(at, "manifest.json"), _read(at, "bounds.parquet"), _read(at, "exact.parquet"),
                            report=join_url(run, "report.html"), files=run_files(at), ranks=ranks)


def run_files(run: str, storage_options=None) -> list[str]:
    """The names of the files in a run directory, manifest.json last (it is written last)."""
    fs, path = filesystem(run, storage_options)
    names = sorted(PurePosixPath(p).name for p in fs.ls(path, detail=False))
    return sorted(names, key=lambda name: name == "manifest.json")
