"""A few lines that tell a person at the terminal what a run found: the run directory read for
:func:`prdist.render.terminal.run_summary_text`, which words them."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from prdist.render.terminal import run_summary_text

from .storage import exists, filesystem, join_url, read_parquet

__all__ = ["run_files", "run_summary"]


def _read(run: str, name: str, storage_options):
    fs, path = filesystem(join_url(run, name), storage_options)
    if not exists(fs, path, where=run):
        return None
    with fs.open(path, "rb") as fh:
        return json.load(fh) if name.endswith(".json") else read_parquet(fh).to_pandas()


def run_summary(run: str, *, storage_options=None, ranks: int = 6) -> str:
    """Bounds at a few log-spaced ranks (with the exact precision when known), cut-offs, report."""
    return run_summary_text(_read(run, "manifest.json", storage_options), _read(run, "bounds.parquet", storage_options),
                            _read(run, "exact.parquet", storage_options), report=join_url(run, "report.html"),
                            files=run_files(run, storage_options), ranks=ranks)


def run_files(run: str, storage_options=None) -> list[str]:
    """The names of the files in a run directory, manifest.json last (it is written last)."""
    fs, path = filesystem(run, storage_options)
    names = sorted(PurePosixPath(p).name for p in fs.ls(path, detail=False))
    return sorted(names, key=lambda name: name == "manifest.json")
