"""A few lines that tell a person at the terminal (or reading a flow run's log) what a run found.

Plain text, from a run's manifest and tables: :func:`run_summary_text` for ``prdist run``,
:func:`compare_text` for ``prdist compare``, and the one-line messages of a flow run's log. The
reading of the run directory is the caller's (:mod:`prdist.dataflow.run.summary`).
"""

from __future__ import annotations

import math

import numpy as np

from prdist.frames.arrays import distinct
from prdist.frames.columns import column
from prdist.paula.bounds import within_gamma
from prdist.redaction import terminal_text

__all__ = ["assumptions_doubt", "awaiting_message", "certifies_line", "compare_text", "counts_message", "history_text", "judge_lines",
           "known_quality_lines", "quality_text", "run_summary_text"]


def run_summary_text(manifest: dict, bounds, exact, *, report: str, files: list[str],
                     ranks: int = 6) -> str:
    """Bounds at a few log-spaced ranks (with the exact precision when known), cut-offs, report.

    ``report`` is where the run's report is, ``files`` the names of the run directory's files;
    ``bounds`` and ``exact`` (or None) are bounds.parquet and exact.parquet, as Arrow tables or
    pandas DataFrames.
    """
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
    lines += _bounds_lines(n, bounds, exact, ranks)
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
    lines.append(f"report: {report}")
    lines.append(f"written: {', '.join(files)}")
    return "\n".join(lines)


def _bounds_lines(n: int, bounds, exact, ranks: int) -> list[str]:
    """The bounds (and the exact precision when known) at ``ranks`` log-spaced ranks, as a table."""
    # log-spaced from rank 1,000 (from n / 100 on smaller resources, so they get several ranks too)
    wanted = distinct(np.geomspace(min(1000, max(1, n // 100)), n, num=ranks).astype(np.int64))
    rows = column(bounds, "rank")
    lower, upper = column(bounds, "precision_lower"), column(bounds, "precision_upper")
    picks = rows[np.clip(np.searchsorted(rows, wanted), 0, rows.size - 1)]
    truth = None if exact is None else dict(zip(column(exact, "rank").tolist(), column(exact, "precision").tolist()))
    lines = [f"{'rank':>14} {'lower':>8} {'upper':>8}" + (f" {'exact':>8}" if truth is not None else "")]
    for r in distinct(picks):
        at = int(np.flatnonzero(rows == r)[0])
        row = f"{r:>14,} {lower[at]:>8.4f} {upper[at]:>8.4f}"
        if truth is not None:
            row += f" {truth.get(int(r), np.nan):>8.4f}"
        lines.append(row)
    return lines


def _bands_line(bands: dict) -> str:
    """One line on the run's bootstrap bands, from the manifest's ``bands`` entry."""
    line = (f"bands: {bands.get('method', 'bootstrap')} bootstrap bands of the PR curve at confidence "
            f"{1 - float(bands['delta']):.3g} from {int(bands['n']):,} labeled items of the random arm")
    left_out = int(bands.get("cannot_judge_left_out") or 0)
    if left_out:
        worst = "computed" if bands.get("worst_case_computed") else "not computed"
        line += f" ({left_out:,} that nobody can judge left out; the worst case over them: {worst})"
    return line + ", in bands.parquet"


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
    weighted = " (weighted by the audit's design)" if "design_weighted" in quality else ""
    return (f"sensitivity {share('sensitivity')} over {positives:,} gold-correct items, specificity "
            f"{share('specificity')} over {negatives:,} gold-incorrect items, kappa {share('kappa')}{weighted}")


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
    if d.get("confidence") is None and isinstance(ratio, (int, float)) and isinstance(gamma, (int, float)) and not within_gamma(ratio, gamma):
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


def counts_message(outcome) -> str:
    """One line for the flow run's log: items, bytes read, planned labels known and awaited, the run.

    ``outcome`` is a run's outcome (a :class:`prdist.dataflow.io.artifacts.RunOutcome`: its manifest
    and whether it was found committed).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> manifest = {"run_id": "abc", "n": 20000, "input": {"bytes_read": 1536000},
    ...             "counts": {"annotations": 300, "labeled": 280, "awaiting": 20, "cannot_judge": 0, "disputed": 0}}
    >>> counts_message(SimpleNamespace(manifest=manifest, reused=False))
    'run abc (new): 20,000 items, 1.5 MB read, 300 planned labels: 280 known, 20 awaited, 0 cannot judge, 0 disputed'
    """
    m, c = outcome.manifest, outcome.manifest["counts"]
    done = "found committed, nothing recomputed" if outcome.reused else "new"
    read = int(m.get("input", {}).get("bytes_read", 0))
    return (f"run {m['run_id']} ({done}): {m['n']:,} items, {read / 1024**2:,.1f} MB read, {c['annotations']:,} planned labels: "
            f"{c['labeled']:,} known, {c.get('awaiting', 0):,} awaited, {c.get('cannot_judge', 0):,} cannot judge, "
            f"{c.get('disputed', 0):,} disputed")


def compare_text(manifest: dict) -> str:
    """Every system's precision interval, recall and draws, from a comparison's manifest, as a table."""
    counts, params = manifest["counts"], manifest["params"]
    level = f"{100 * params['confidence']:g} %"
    width = max(len("system"), *(len(row["system"]) for row in manifest["results"]))
    lines = [
        f"prdist compare: {len(manifest['systems'])} systems, {counts['draws']:,} draws, "
        f"{counts['annotations']:,} distinct items labeled ({level} intervals, {params['weights']} weights)",
        f"  {'system':<{width}}  precision  {level + ' interval':<16}  recall  pooled recall  draws",
    ]

    def share(value):
        return "n/a" if value is None else f"{value:.3f}"

    for row in manifest["results"]:
        interval = f"[{row['precision_ci_low']:.3f}, {row['precision_ci_high']:.3f}]"
        lines.append(f"  {row['system']:<{width}}  {row['precision']:>9.3f}  {interval:<16}  {share(row['recall']):>6}  "
                     f"{share(row['pooled_recall']):>13}  {row['n_samples']:>5}")
    lines += [f"note: {note}" for note in manifest["diagnostics"].get("notes", [])]
    return "\n".join(lines)


def history_text(history) -> str:
    """How many runs and series ``prdist history`` read, and every certain change, one line each.

    ``history`` has the columns of ``history.parquet``; series and run ids are shown as a terminal
    shows them literally (:func:`prdist.redaction.terminal_text`).
    """
    changed = history[history["change"] != ""]
    lines = [f"prdist history: {history['run_id'].nunique()} run(s) in {history['series'].nunique()} series, "
             f"{len(changed)} certain change(s) ({(changed['change'] == 'down').sum()} down)"]
    lines += [f"  {terminal_text(row.series)}: run {terminal_text(row.run_id)} at rank {row.rank:,}: {row.change} "
              f"(now [{row.precision_lower:.3f}, {row.precision_upper:.3f}])" for row in changed.itertuples()]
    return "\n".join(lines)


def certifies_line(manifest: dict) -> str:
    """What a comparison's intervals hold for, in one line for ``prdist compare``'s output."""
    if manifest.get("certifies") == "gold" and manifest.get("gold_method"):
        audit = manifest["gold_audit"]
        return (f"certifies: gold (a random gold audit of {audit['gold']:,} of the {audit['drawn_keys']:,} drawn keys, "
                "two-phase prediction-powered: the precision intervals are for the precision as gold says it; recall is "
                "as the verdicts say it)")
    if manifest.get("certifies") == "gold":
        return "certifies: gold (every drawn item has a gold verdict: the intervals are for the precision as gold says it)"
    audit = manifest.get("gold_audit")
    if audit and not audit.get("awaiting") and audit.get("gold", 0) < 2:
        return (f"certifies: verdicts (the gold audit is complete but {audit.get('gold', 0)} of its keys have a gold verdict, "
                "the others cannot be judged; it needs two: the intervals are for the precision as the label store's "
                "verdicts say it)")
    return "certifies: verdicts (the intervals are for the precision as the label store's verdicts say it)"


def judge_lines(judges) -> tuple[list[str], list[str]]:
    """What ``prdist history`` prints of its judge_quality.parquet (``judges``): a line per release
    (what it certifies, the judge's rates with their intervals, kappa) and a warning per drift."""
    lines, warnings_, previous = [], [], {}
    for row in judges.itertuples():
        lines.append(f"  {row.series}: release {row.place} ({row.release}) certifies {row.certifies}; judge against gold on "
                     f"{row.compared:,} audited items: sensitivity {_rate_text(row, 'sensitivity')}, specificity "
                     f"{_rate_text(row, 'specificity')}, kappa {_figure(row.kappa)}")
        if row.drift:
            before = previous[row.series]
            warnings_.append(f"{row.series}: the judge drifts between release {before.place} ({before.release}) and release "
                             f"{row.place} ({row.release}): "
                             + "; ".join(f"{name} {_rate_text(before, name)} then {_rate_text(row, name)}" for name in row.drift.split(", "))
                             + " (disjoint intervals; every interval of the series holds at once with its confidence)")
        if not math.isnan(row.confidence):
            previous[row.series] = row
    return lines, warnings_


def _figure(value) -> str:
    return "undefined" if value is None or math.isnan(value) else f"{value:.3f}"


def _rate_text(row, name: str) -> str:
    """A rate with its interval, e.g. ``0.912 [0.870, 0.944]``."""
    low, high = getattr(row, f"{name}_lower"), getattr(row, f"{name}_upper")
    interval = "" if math.isnan(low) else f" [{low:.3f}, {high:.3f}]"
    return _figure(getattr(row, name)) + interval
