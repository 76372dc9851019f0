"""The report's sections of tables and words: cut-offs, the label budget, verdicts of known quality,
the diagnostics of the assumptions behind the bounds."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from prdist.paula.bounds import within_gamma
from prdist.redaction import is_secret_name
from prdist.render.markup import as_mapping, esc, html_table, is_number, number, plain, thousands
from prdist.frames.columns import column, column_names
from prdist.render.tables import finite_column, numbers

__all__ = ["section_cutoffs", "section_diagnostics", "section_known_quality", "section_labels"]

_AWAITING_SHOWN = 10
_DIAGNOSTICS_SHOWN = {
    "precondition_holds",
    "monotonicity_violations",
    "largest_rise",
    "rise_ranks",
    "max_ratio",
    "gamma",
    "contradictions",
    "contradiction_ranks",
    "unknown_labels",
    "assumptions_plausible",
}


def section_cutoffs(cutoffs, n: int, *, in_doubt: bool = False) -> str:
    """The deepest rank guaranteed to reach each precision target, with its score, as a table."""
    targets = finite_column(cutoffs, "cutoffs", "target", low=0.0, high=1.0)
    ranks = finite_column(cutoffs, "cutoffs", "rank", low=0.0, high=n).astype(np.int64)
    scores = numbers(cutoffs, "score")
    rows = []
    for t, r, s in zip(targets, ranks, scores):
        if r == 0:
            rows.append([f"{t:.3f}", "none", "\u2014", "no cut-off is guaranteed to reach this precision"])
        else:
            meaning = f"keep the top {thousands(r)} items ({100 * r / n:.1f}% of the resource)"
            rows.append([f"{t:.3f}", thousands(r), number(s, 4), meaning])
    table = html_table(["precision target", "deepest rank", "score at that rank", "meaning"], rows, numeric={0, 1, 2})
    note = (
        '<p class="note">The deepest rank whose precision (as the verdicts say it) is <em>guaranteed</em> '
        "by the lower bound, under the stated assumptions, to reach each target: keeping every item scored "
        "at least the score shown keeps precision at or above the target.</p>"
    )
    if in_doubt:
        note += ('<p class="verdict warn">The diagnostics put the assumptions in doubt: these cut-offs are '
                 "guaranteed only if the assumptions hold.</p>")
    return f'<section id="cutoffs"><h2>Cut-offs</h2>{note}{table}</section>'


_COUNT_ROWS = (
    ("annotations", "planned annotations"),
    ("labeled", "labels known"),
    ("unknown", "labels unknown"),
    ("cannot_judge", "\u2026 nobody can judge (never requested again)"),
    ("disputed", "\u2026 disputed (annotators tie; requested again)"),
    ("awaiting", "\u2026 awaiting a verdict (missing or disputed, or an audit item's gold)"),
)


def section_labels(manifest: Mapping, plan) -> str:
    """The label budget: counts, agreement, labels by part of the plan, the first items awaiting labels."""
    counts = as_mapping(manifest.get("counts"))
    rows = [[esc(what), number(counts.get(key))] for key, what in _COUNT_ROWS if is_number(counts.get(key))]
    unknown = counts.get("unknown")
    if plan is not None and not is_number(unknown):
        unknown = int(np.isnan(numbers(plan, "label")).sum())
    if is_number(unknown) and unknown > 0:
        sentence = (
            f"{thousands(unknown)} planned labels are unknown. The bounds count each unknown item as "
            "incorrect for the lower bound and as correct for the upper bound, so they remain valid "
            "now and tighten as verdicts arrive."
        )
    elif is_number(unknown):
        sentence = "Every planned label is known: the bounds are as tight as this plan allows."
    else:
        sentence = "The manifest records no label counts."
    parts = [f'<p class="note">{sentence}</p>', html_table(["", "count"], rows, numeric={1}, css="narrow")]
    parts.append(_agreement_note(as_mapping(manifest.get("agreement"))))

    if plan is not None and len(plan):
        role = column(plan, "role").astype(str)
        label = numbers(plan, "label")
        by_role = []
        for name in dict.fromkeys(role):
            mine = label[role == name]
            by_role.append(
                [esc(name)]
                + [thousands(k) for k in (mine.size, np.isfinite(mine).sum(), np.isnan(mine).sum(), (mine == 1).sum())]
            )
        parts.append("<h3>By part of the plan</h3>")
        parts.append(html_table(["role", "planned", "known", "unknown", "correct"], by_role, numeric={1, 2, 3, 4}, css="narrow"))
        verdict = column(plan, "verdict").astype(str) if "verdict" in column_names(plan) else np.where(np.isnan(label), "missing", "")
        waiting = np.flatnonzero(np.isin(verdict, ("missing", "disputed")))
        if waiting.size:
            ranks, keys, scores = column(plan, "rank"), column(plan, "key"), numbers(plan, "score")
            first = waiting[np.argsort(ranks[waiting], kind="stable")][:_AWAITING_SHOWN]
            rows = [[thousands(ranks[i]), esc(keys[i]), number(scores[i], 4), esc(role[i])] for i in first]
            parts.append(f"<h3>Items awaiting labels (first {len(first)} of {thousands(waiting.size)} by rank)</h3>")
            parts.append(html_table(["rank", "key", "score", "role"], rows, numeric={0, 2}))
    return f'<section id="labels"><h2>Label budget</h2>{"".join(parts)}</section>'


def section_known_quality(manifest: Mapping) -> str:
    """What the bounds certify (gold, or the verdicts) and each verdict source's agreement with gold."""
    counts = as_mapping(manifest.get("counts"))
    audit = as_mapping(counts.get("gold_audit"))
    confidence = as_mapping(manifest.get("params")).get("confidence")
    parts = []
    if is_number(counts.get("from_judge")):
        parts.append(f'<p class="note">{thousands(counts["from_judge"])} planned items carry the judge\'s verdict (no annotator '
                     "judged them).</p>")
    if manifest.get("certifies") == "gold":
        level = f"{float(confidence):g}" if is_number(confidence) else "the run's confidence"
        parts.append(
            f'<p class="note">The precision bounds certify the precision <em>as gold says it</em>, at every rank of the '
            f"bounds table at once with probability at least {level}, whatever the judge's or annotators' quality: "
            f"gold verdicts on a random audit of {thousands(audit.get('items', 0))} planned items, the other verdicts serving "
            "only as predictors of gold. They rest on the normal approximation of the audit's estimates and, at the "
            "grid points past the labeled prefix, on gold labels being independent draws from a rate that does not "
            "rise with rank." + _gold_left_out(audit) + "</p>")
        parts.append(_gold_diagnostics(as_mapping(as_mapping(manifest.get("diagnostics")).get("gold_bounds"))))
    else:
        waiting = audit.get("awaiting")
        parts.append(
            '<p class="note">The precision bounds certify the precision <em>as the verdicts say it</em> (annotators\' and '
            "judge's), not the truth where verdicts err."
            + (f" The gold audit awaits {thousands(waiting)} gold verdicts; once they are in, the bounds certify gold."
               if is_number(waiting) and waiting > 0 else "") + "</p>")
    rows = []
    for source, quality in as_mapping(manifest.get("verdict_quality")).items():
        q = as_mapping(quality)
        regions = [(f"{source}, ranks {as_mapping(r).get('region')}", as_mapping(r)) for r in q.get("regions") or []]
        for name, part in [(source, q), *regions]:
            rows.append([esc(name), number(part.get("sensitivity")), number(part.get("specificity")), number(part.get("kappa")),
                         thousands(part.get("compared", 0))])
    if rows:
        parts.append("<h3>Agreement with gold on the audit</h3>")
        parts.append(html_table(["source", "sensitivity", "specificity", "kappa", "items compared"], rows, numeric={1, 2, 3, 4}, css="narrow"))
    return f'<section id="known-quality"><h2>Verdicts of known quality</h2>{"".join(parts)}</section>'


def _gold_diagnostics(gold: Mapping) -> str:
    """How the gold bounds were made: the predictor, its power tuning, segments without gold, contradictions."""
    if not gold:
        return ""
    tuning = as_mapping(gold.get("power_tuning"))
    return (f'<p class="note">Predictor of gold: {esc(gold.get("predictor"))}; power-tuning weight \u03bb from '
            f'{number(tuning.get("lambda_min"))} to {number(tuning.get("lambda_max"))} (median {number(tuning.get("lambda_median"))}; '
            f'0 = gold alone); {thousands(gold.get("segments_without_gold", 0))} plan segments without a gold verdict (their '
            f'range counted whole); {thousands(gold.get("contradictions", 0))} contradictions between the bounds.</p>')


def _gold_left_out(audit: Mapping) -> str:
    k = audit.get("cannot_judge")
    if not is_number(k) or k == 0:
        return ""
    return (f" {thousands(k)} audit items that gold could not judge are left out, assumed missing independently of their "
            "gold verdict.")


def _agreement_note(agreement: Mapping) -> str:
    """One sentence on how far the annotators agree (Krippendorff's alpha) and the rule used."""
    if not agreement:
        return ""
    alpha = agreement.get("krippendorff_alpha")
    judged = f"{thousands(agreement.get('pairable_keys', 0))} items judged by two or more of {thousands(agreement.get('annotators', 0))} annotators"
    value = f"Krippendorff's alpha {float(alpha):.3f}" if is_number(alpha) else "agreement undefined"
    return f'<p class="note">Annotators: {value} ({judged}); one verdict per item by {esc(agreement.get("rule", "majority"))}.</p>'


def _ranks_list(values) -> str:
    if not isinstance(values, (list, tuple)) or not values:
        return ""
    shown = ", ".join(thousands(v) for v in values[:10] if is_number(v))
    more = ", \u2026" if len(values) > 10 else ""
    return f" (at ranks {shown}{more})"


def _plural(k: int, word: str) -> str:
    return f"{thousands(k)} {word}{'' if k == 1 else 's'}"


def section_diagnostics(diag: Mapping, known: int | None = None) -> str:
    """Each check with its value and a verdict in plain words.

    In confidence mode (``diag["confidence"]`` is a mapping) the bounds rest on a noise model
    instead of A.2 on the observed labels: rises of the window means are expected from noise,
    the precondition and Lemma 4's ratio concern the deterministic bounds only, and the
    monotone-rate test is the evidence that counts.
    """
    if known == 0:
        note = '<p class="note">No planned label is known yet: there is nothing to test the assumptions on.</p>'
        return f'<section id="diagnostics"><h2>Diagnostics</h2>{note}</section>'
    confidence = as_mapping(diag.get("confidence"))
    noisy = bool(confidence)
    rows = []

    def add(check: str, value: str, verdict: str, css: str) -> None:
        rows.append([esc(check), value, f'<span class="{css}">{verdict}</span>'])

    precondition = "precondition p(g_l) \u2265 p_\u0394(g_l)"
    if "precondition_holds" in diag:
        holds = diag["precondition_holds"]
        if holds is True:
            add(precondition, "holds", "the guarantee's precondition is met", "ok")
        elif noisy:
            add(precondition, "fails" if holds is False else "undecided",
                "the confidence bounds do not rest on it", "plain")
        elif holds is False:
            add(precondition, "fails",
                "the local precision at the end of the prefix exceeds the precision there: the guarantee's "
                "precondition does not hold", "bad")
        else:
            add(precondition, "undecided", "unknown labels leave it open", "warn")
    if is_number(diag.get("monotonicity_violations")):
        k = int(diag["monotonicity_violations"])
        rise = diag.get("largest_rise")
        size = f", by up to {float(rise):.3f}" if is_number(rise) else ""
        where = f"{_plural(k, 'grid point')}{size}"
        if k == 0:
            add("monotonicity (A.2)", "0 rises", "no evidence against monotonicity", "ok")
        elif noisy:
            add("monotonicity (A.2)", _plural(k, "rise"),
                f"the window means rise at {where}: chance variation of the labels does that, and the confidence bounds allow "
                "for it (the monotone-rate test below weighs the evidence)", "plain")
        else:
            add("monotonicity (A.2)", _plural(k, "rise"),
                f"the local precision rises at {where}: the guarantee may not hold there"
                f"{_ranks_list(diag.get('rise_ranks'))}", "warn")
    if is_number(diag.get("max_ratio")) and is_number(diag.get("gamma")):
        ratio, gamma = float(diag["max_ratio"]), float(diag["gamma"])
        value = f"{number(ratio, 4)} (\u03b3 = {number(gamma, 4)})"
        ratio_check = "yield ratio Y\u207a/Y\u207b"
        if within_gamma(ratio, gamma):
            add(ratio_check, value, "within \u03b3, as Lemma 4 promises", "ok")
        elif noisy:
            add(ratio_check, value, "above \u03b3; Lemma 4 concerns the deterministic bounds only", "plain")
        else:
            add(ratio_check, value, "exceeds \u03b3: the bounds are looser than the guarantee promises", "warn")
    if is_number(diag.get("contradictions")):
        k = int(diag["contradictions"])
        if k == 0:
            add("contradictions", "0", "the yield bounds are consistent everywhere", "ok")
        else:
            add("contradictions", thousands(k),
                f"the yield bounds contradict each other at {_plural(k, 'grid point')}: A.2 is certainly false "
                f"there, and the assumption-free bounds are used{_ranks_list(diag.get('contradiction_ranks'))}", "bad")
    if is_number(diag.get("unknown_labels")):
        k = int(diag["unknown_labels"])
        add("unknown labels in the bounds' plan", thousands(k), "none" if k == 0 else "counted as incorrect (lower) and correct (upper)",
            "ok" if k == 0 else "warn")
    if noisy:
        _confidence_rows(confidence, add)
    if "assumptions_plausible" in diag:
        good = diag["assumptions_plausible"] is True
        add("overall", "plausible" if good else "in doubt",
            "no evidence against the assumptions" if good else "some evidence against the assumptions: see above",
            "ok" if good else "bad")
    table = html_table(["check", "value", "verdict"], rows) if rows else ""

    shown_confidence = {
        "confidence", "guarantee_applies", "monotone_rate_test", "model_rejected", "widening_mean", "widening_max"
    }
    further = [(k, v) for k, v in diag.items() if k not in _DIAGNOSTICS_SHOWN]
    further += [(f"confidence.{k}", v) for k, v in confidence.items() if k not in shown_confidence]
    extra = [
        [esc(k), shown]
        for k, v in further
        if v is not None and not is_secret_name(k) and (shown := plain(v)) is not None
    ]
    extra_html = f"<h3>Further diagnostics</h3>{html_table(['name', 'value'], extra, css='narrow')}" if extra else ""
    if noisy:
        note = (
            '<p class="note">These bounds hold with a stated probability if the labels are independent '
            "draws whose rate of correct items does not rise with rank: the probability is over that draw, "
            "not over annotator error. They bound the precision of the verdicts as given; where verdicts are "
            "wrong, the true precision can lie outside them. The labels cannot prove that model, but they "
            "can show evidence against it.</p>"
        )
    else:
        note = (
            '<p class="note">The bounds rest on the assumption that precision does not rise with depth '
            "(PAULA's A.1/A.2). The labels cannot prove it, but they can show evidence against it.</p>"
        )
    return f'<section id="diagnostics"><h2>Diagnostics</h2>{note}{table}{extra_html}</section>'


def _confidence_rows(confidence: Mapping, add) -> None:
    level = confidence.get("confidence")
    if is_number(level):
        add("confidence level", number(level, 3),
            f"the bounds on the verdicts' precision hold at every rank at once with probability at least {float(level):.3g} "
            "under the model",
            "plain")
    test = as_mapping(confidence.get("monotone_rate_test"))
    if is_number(test.get("p_value")):
        value = f"p = {float(test['p_value']):.3g}"
        if is_number(test.get("windows")):
            value += f" ({_plural(int(test['windows']), 'window')})"
        if confidence.get("model_rejected") is True:
            add("monotone-rate test", value,
                "the labels reject a rate that does not rise with rank: the confidence guarantee may not hold", "bad")
        else:
            add("monotone-rate test", value, "no evidence against a rate that does not rise with rank", "ok")
    if confidence.get("guarantee_applies") is False:
        add("windows inside grid intervals", "no",
            "some windows are wider than their grid interval: the coverage guarantee does not apply", "bad")
    elif confidence.get("guarantee_applies") is True:
        add("windows inside grid intervals", "yes", "the coverage guarantee applies", "ok")
    mean, most = confidence.get("widening_mean"), confidence.get("widening_max")
    if is_number(mean) and is_number(most):
        add("price of the confidence", f"{float(mean):.3f} mean, {float(most):.3f} max",
            "extra width of the precision bounds over the deterministic ones at the grid ranks", "plain")
