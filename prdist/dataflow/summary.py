"""A few lines that tell a person at the terminal what a run found."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from .publishing import read_parquet
from .storage import Location, filesystem, join_url, resolve
from .storage_errors import exists

__all__ = ["assumptions_doubt", "awaiting_message", "known_quality_lines", "quality_text", "run_files", "run_summary"]


def _read(run: Location, name: str):
    at = run.child(name)
    if not exists(at.fs, at.path, where=run.given):
        return None
    with at.fs.open(at.path, "rb") as fh:
        return json.load(fh) if name.endswith(".json") else read_parquet(fh).to_pandas()


def run_summary(run: str, *, storage_options=None, ranks: int = 6) -> str:
    """Bounds at a few log-spaced ranks (with the exact precision when known), cut-offs, report."""
    at = resolve(run, storage_options=storage_options)  # once: its files are child locations
    manifest = _read(at, "manifest.json")
    bounds: pd.DataFrame = _read(at, "bounds.parquet")
    exact = _read(at, "exact.parquet")
    n, counts, params = manifest["n"], manifest["counts"], manifest["params"]
    mode = "the paper's deterministic bounds" if params.get("confidence") is None else f"confidence {params['confidence']}"
    lines = [
        f"prdist: {n:,} items, {counts['annotations']:,} planned for labels ({counts['annotations'] / n:.2%} of the "
        f"items), {counts['labeled']:,} of them known; {params['method']}, {mode}",
    ]
    lines += known_quality_lines(manifest)  # judge30
    doubt = assumptions_doubt(manifest)
    if doubt:
        lines.append(f"warning: {doubt}; the guarantees below hold only if the assumptions do (see the report's diagnostics)")
    # log-spaced from rank 1,000 (from n / 100 on smaller resources, so they get several ranks too)
    wanted = np.unique(np.geomspace(min(1000, max(1, n // 100)), n, num=ranks).astype(np.int64))
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
            where = f"down to rank {cut['rank']:,} (score >= {cut['score']:.6g})"
            lines.append(f"precision >= {cut['target']:.2f} {where} is guaranteed only if the assumptions hold" if doubt
                         else f"precision >= {cut['target']:.2f} is guaranteed {where}")
    if counts.get("cannot_judge") or counts.get("disputed"):
        lines.append(f"cannot judge: {counts['cannot_judge']:,} items (counted as unknown by the bounds); "
                     f"disputed: {counts['disputed']:,}")
    if manifest.get("bands"):
        lines.append(_bands_line(manifest["bands"]))
    if manifest.get("awaiting_labels"):
        lines.append(f"awaiting labels: {counts['awaiting']:,} items, task at {manifest['annotation_task']}")
    lines.append(f"report: {join_url(run, 'report.html')}")
    lines.append(f"written: {', '.join(run_files(at))}")
    return "\n".join(lines)


def _bands_line(bands: dict) -> str:
    """One line on the run's bootstrap bands, from the manifest's ``bands`` entry."""
    line = (f"bands: {bands.get('method', 'bootstrap')} bootstrap bands of the PR curve at confidence "
            f"{1 - float(bands['delta']):.3g} from {int(bands['n']):,} labeled items of the random arm")
    left_out = int(bands.get("cannot_judge_left_out") or 0)
    if left_out:
        worst = "computed" if bands.get("worst_case_computed") else "not computed"
        line += f" ({left_out:,} that nobody can judge left out; the worst case over them: {worst})"
    return line + ", in bands.parquet"


def run_files(run: str, storage_options=None) -> list[str]:
    """The names of the files in a run directory, manifest.json last (it is written last)."""
    fs, path = filesystem(run, storage_options)
    names = sorted(PurePosixPath(p).name for p in fs.ls(path, detail=False))
    return sorted(names, key=lambda name: name == "manifest.json")


def known_quality_lines(manifest: dict) -> list[str]:
    """What the bounds certify and each source's agreement with gold (runs with a judge or a gold audit)."""
    counts, params = manifest["counts"], manifest["params"]
    if "gold_audit" not in counts and "from_judge" not in counts:
        return []
    lines = []
    if "from_judge" in counts:
        lines.append(f"judge: its verdicts stand for {counts['from_judge']:,} planned items (no annotator judged them)")
    audit = counts.get("gold_audit") or {}
    if manifest.get("certifies") == "gold":
        lines.append(f"the bounds certify the precision as gold says it (gold audit of {audit['items']:,} planned items), "
                     f"at confidence {params['confidence']}, whatever the verdicts' quality (assumptions: see the report)")
    else:
        waiting = f"; the gold audit awaits {audit['awaiting']:,} gold verdicts" if audit.get("awaiting") else ""
        lines.append(f"the bounds certify the precision as the verdicts say it, not the truth where they err{waiting}")
    for source, quality in (manifest.get("verdict_quality") or {}).items():
        lines.append(f"{source} against gold: {quality_text(quality)}")
    return lines


def quality_text(quality: dict) -> str:
    """One line of a source's agreement with gold (the ``to_dict`` of a VerdictQuality)."""
    def share(key):
        value = quality.get(key)
        return "undefined" if value is None else f"{value:.3f}"

    positives = quality["true_positive"] + quality["false_negative"]
    negatives = quality["true_negative"] + quality["false_positive"]
    return (f"sensitivity {share('sensitivity')} over {positives:,} gold-correct items, specificity "
            f"{share('specificity')} over {negatives:,} gold-incorrect items, kappa {share('kappa')}")


def assumptions_doubt(manifest: dict) -> str | None:
    """Why the run's diagnostics put its assumptions in doubt, in a few words; None when they do not."""
    d = manifest.get("diagnostics") or {}
    if d.get("assumptions_plausible") is not False or not manifest["counts"].get("labeled"):
        return None  # nothing known, nothing tested (and no cut-off guaranteed)
    reasons = []
    if (d.get("confidence") or {}).get("model_rejected"):
        p = ((d.get("confidence") or {}).get("monotone_rate_test") or {}).get("p_value")
        reasons.append("the monotone-rate test rejects the model" + (f", p = {p:.3g}" if isinstance(p, (int, float)) else ""))
    if d.get("contradictions"):
        reasons.append(f"the bounds contradict each other at {d['contradictions']:,} grid points")
    if d.get("confidence") is None and d.get("monotonicity_violations"):
        reasons.append(f"the local precision rises at {d['monotonicity_violations']:,} grid points")
    if d.get("confidence") is None and d.get("precondition_holds") is False:
        reasons.append("the precondition p(g_l) >= p_D(g_l) fails")
    ratio, gamma = d.get("max_ratio"), d.get("gamma")
    if d.get("confidence") is None and isinstance(ratio, (int, float)) and isinstance(gamma, (int, float)) and ratio > gamma * (1 + 1e-12):
        reasons.append(f"the yield ratio {ratio:.4g} exceeds gamma {gamma:.4g}")
    return "the diagnostics put the assumptions in doubt" + (f": {'; '.join(reasons)}" if reasons else "")


def awaiting_message(outcome, waiting_for: str) -> str:
    """The one line that says a run awaits labels: how many ``waiting_for``, where their task is, and
    the command that makes the annotators' copy (the run's task keeps rank and score, which bias a
    verdict, as the run's record)."""
    task = str(outcome.task)
    run = task.rsplit("/", 1)[0] if "/" in task else "."
    return (f"{outcome.missing} {waiting_for} await labels; items at {task} (with rank and score); for annotators: "
            f"prdist labels export --run {run} --out task.csv")
