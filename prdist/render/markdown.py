"""The markdown artifacts of the flow runs: what a reader of a Prefect flow run wants at a glance."""

from __future__ import annotations

from prdist.render.terminal import assumptions_doubt

__all__ = ["comparison_markdown", "evaluation_markdown"]


def evaluation_markdown(outcome) -> str:
    """The evaluation flow run's artifact: what a reader of the flow run wants at a glance.

    ``outcome`` is the run's :class:`prdist.dataflow.io.artifacts.RunOutcome` (url, manifest, missing, task).
    """
    m = outcome.manifest
    c = m["counts"]
    doubt = assumptions_doubt(m)
    lines = [
        "# prdist evaluation",
        "",
        f"- resource: `{m['input']['url']}` ({m['n']:,} items)",
        f"- method: {m['params']['method']}, eps={m['params']['eps']}, window={m['params']['window']}",
        f"- labels: {c['labeled']:,} of {c['annotations']:,} planned ({c['cannot_judge']:,} cannot judge, "
        f"{c['disputed']:,} disputed, {c['awaiting']:,} awaiting)",
        f"- run directory: `{outcome.url}` (report: `{outcome.url}/report.html`)",
        "",
        f"| precision target | deepest guaranteed rank{' (if the assumptions hold)' if doubt else ''} | score |",
        "|---|---|---|",
    ]
    for row in m.get("cutoffs", []):
        score = "\u2014" if row["score"] is None else f"{row['score']:.6g}"  # no guaranteed cut-off: no score
        lines.append(f"| {row['target']:.2f} | {row['rank']:,} | {score} |")
    d = m.get("diagnostics", {})
    if doubt:
        lines += ["", f"**Warning**: {doubt}; the guarantees above hold only if the assumptions do."]
    elif c["labeled"] == 0:
        lines += ["", "Diagnostics: no planned label is known yet, so there is nothing to test the assumptions on."]
    elif "assumptions_plausible" in d:
        lines += ["", f"Diagnostics: the {c['labeled']:,} labels known show no evidence against the assumptions."]
    if outcome.missing:
        lines += ["", f"**Awaiting labels**: {outcome.missing:,} items, task at `{outcome.task}`."]
    return "\n".join(lines)


def comparison_markdown(outcome) -> str:
    """The compare flow run's artifact: every system's precision interval at a glance."""
    m = outcome.manifest
    c = m["counts"]
    p = m["params"]
    lines = [
        "# prdist comparison",
        "",
        f"- systems: {', '.join(s['name'] for s in m['systems'])}",
        f"- draws: {c['draws']:,} ({p['allocation']} split, {p['distribution']['kind']} sampling, seed {p['seed']})",
        f"- labels: {c['labeled']:,} of {c['annotations']:,} distinct drawn items ({c['unknown']:,} missing)",
        f"- run directory: `{outcome.url}`",
    ]
    if m.get("results"):
        level = round(100 * p["confidence"])
        lines += ["", f"| system | precision | {level} % interval | draws |", "|---|---|---|---|"]
        for row in m["results"]:
            lines.append(
                f"| {row['system']} | {row['precision']:.3f} | [{row['precision_ci_low']:.3f}, "
                f"{row['precision_ci_high']:.3f}] | {row['n_samples']:,} |"
            )
    for note in m.get("diagnostics", {}).get("notes", []):
        lines += ["", f"Note: {note}"]
    if outcome.missing:
        lines += ["", f"**Awaiting labels**: {outcome.missing:,} items, task at `{outcome.task}`."]
    return "\n".join(lines)
