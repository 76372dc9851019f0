"""A few lines that tell a person at the terminal what a run found."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .storage import exists, filesystem, join_url, read_parquet

__all__ = ["awaiting_message", "run_summary"]


def _read(run: str, name: str, storage_options):
    fs, path = filesystem(join_url(run, name), storage_options)
    if not exists(fs, path, where=run):
        return None
    with fs.open(path, "rb") as fh:
        return json.load(fh) if name.endswith(".json") else read_parquet(fh).to_pandas()


def run_summary(run: str, *, storage_options=None, ranks: int = 6) -> str:
    """Bounds at a few log-spaced ranks (with the exact precision when known), cut-offs, report."""
    manifest = _read(run, "manifest.json", storage_options)
    bounds: pd.DataFrame = _read(run, "bounds.parquet", storage_options)
    exact = _read(run, "exact.parquet", storage_options)
    n, counts, params = manifest["n"], manifest["counts"], manifest["params"]
    mode = "the paper's deterministic bounds" if params.get("confidence") is None else f"confidence {params['confidence']}"
    lines = [
        f"prdist: {n:,} items, {counts['labeled']:,} of {counts['annotations']:,} planned labels known "
        f"({counts['annotations'] / n:.2%} of the items), {params['method']}, {mode}",
    ]
    wanted = np.unique(np.geomspace(min(1000, n), n, num=ranks).astype(np.int64))
    table = bounds.set_index("rank")
    rows = table.index.to_numpy()
    picks = rows[np.clip(np.searchsorted(rows, wanted), 0, rows.size - 1)]
    truth = None if exact is None else exact.set_index("rank")["precision"]
    header = f"{'rank':>14} {'lower':>8} {'upper':>8}" + (f" {'exact':>8}" if truth is not None else "")
    lines.append(header)
    for r in np.unique(picks):
        row = f"{r:>14,} {table.at[r, 'precision_lower']:>8.4f} {table.at[r, 'precision_upper']:>8.4f}"
        if truth is not None:
            row += f" {truth.get(r, np.nan):>8.4f}"
        lines.append(row)
    for cut in manifest.get("cutoffs", []):
        if cut["rank"] > 0:
            lines.append(f"precision >= {cut['target']:.2f} is guaranteed down to rank {cut['rank']:,} (score >= {cut['score']:.6g})")
    if counts.get("cannot_judge") or counts.get("disputed"):
        lines.append(f"cannot judge: {counts['cannot_judge']:,} items (counted as unknown by the bounds); "
                     f"disputed: {counts['disputed']:,}")
    if manifest.get("awaiting_labels"):
        lines.append(f"awaiting labels: {counts['awaiting']:,} items, task at {manifest['annotation_task']}")
    lines.append(f"report: {join_url(run, 'report.html')}")
    return "\n".join(lines)


def awaiting_message(outcome, waiting_for: str) -> str:
    """The one line that says a run awaits labels: how many ``waiting_for`` and where their task is."""
    return f"{outcome.missing} {waiting_for} await labels; annotation task at {outcome.task}"
