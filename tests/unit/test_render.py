"""Every view of a manifest, pinned byte for byte: the HTML report and its notebook summary, the
terminal summary of a run, a comparison and a history, the Prefect markdown and log lines, the
history page.

The digests were taken from the views as prdist rendered them before the views moved into
``prdist.render`` (one package that owns them all); a change of any byte fails here and names the
view and the case. Change a digest only with a change of what the view is meant to say.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from prdist import paula_bounds, plan_paula, precision_function
from prdist.paula.bounds import within_gamma
from prdist.paula.derived import average_precision_bounds, deepest_rank
from prdist.render import (
    awaiting_message,
    comparison_markdown,
    compare_text,
    counts_message,
    evaluation_markdown,
    history_text,
    render_history,
    render_report,
    render_summary,
    run_summary_text,
)

N = 20_000
FILES = ["bounds.parquet", "exact.parquet", "plan.parquet", "report.html", "manifest.json"]


def _run(*, confidence=None, unknown=0.0, seed=0, rise=False):
    """Every table of one synthetic run and its manifest (the truth is known)."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, N + 1)
    rate = 0.97 - 0.45 * ranks / N + (0.3 * ((ranks > 3000) & (ranks < 5000)) if rise else 0)
    labels = (rng.random(N) < rate).astype(float)
    scores = np.sort(rng.normal(size=N))[::-1]
    plan = plan_paula(N, eps=0.05, window=50)
    planned = labels[plan.ranks - 1].copy()
    planned[rng.random(plan.size) < unknown] = np.nan
    b = paula_bounds(plan, planned, confidence=confidence)
    role, _ = plan.roles()
    plan_frame = pd.DataFrame({"rank": plan.ranks, "key": [f"item-{r:06d}" for r in plan.ranks],
                               "score": scores[plan.ranks - 1], "role": role, "label": planned})
    targets = [0.9, 0.8, 0.7, 0.3]
    deepest = [deepest_rank(b, t) for t in targets]
    cutoffs = [{"target": t, "rank": int(r), "score": float(scores[r - 1]) if r else None} for t, r in zip(targets, deepest)]
    known, missing = int(np.isfinite(planned).sum()), int(np.isnan(planned).sum())
    manifest = {
        "status": "complete", "run_id": f"run{seed:017d}", "n": N, "series": "file:///data",
        "params": {"eps": 0.05, "window": 50, "method": "paula", "confidence": confidence, "seed": 7,
                   "targets": targets, "bands": False, "aggregate": "majority"},
        "counts": {"annotations": plan.size, "labeled": known, "unknown": missing, "awaiting": missing,
                   "cannot_judge": 0, "disputed": 0},
        "input": {"url": "file:///data/resource", "fingerprint": "sha256:feedbeef", "bytes_read": 2_500_000},
        "diagnostics": b.diagnostics.to_dict(),
        "versions": {"prdist": "0.1.0", "python": "3.11"},
        "timings": {"plan": 0.125, "bounds": 0.5},
        "ap_bounds": list(average_precision_bounds(b)),
        "cutoffs": cutoffs,
    }
    if missing:
        manifest.update(status="awaiting labels", awaiting_labels=True, annotation_task="file:///runs/r/annotation_task.csv")
    exact = pd.DataFrame({"rank": ranks, "precision": precision_function(labels)})
    return {"manifest": manifest, "bounds": b.table(), "plan": plan_frame, "exact": exact,
            "cutoffs": pd.DataFrame(cutoffs).fillna({"score": np.nan})}


def _bands(worst: bool):
    recall = np.linspace(0.05, 0.95, 19)
    precision = 0.95 - 0.3 * recall
    frame = pd.DataFrame({"recall": recall, "precision": precision, "band_lower": precision - 0.08,
                          "band_upper": np.minimum(precision + 0.08, 1.0), "pointwise_lower": precision - 0.04,
                          "pointwise_upper": precision + 0.04})
    if worst:
        frame["precision_worst_low"], frame["precision_worst_high"] = precision - 0.1, np.minimum(precision + 0.1, 1.0)
    about = {"method": "smoothed-importance", "delta": 0.05, "n": 2000, "cannot_judge_left_out": 3 if worst else 0,
             "worst_case_computed": worst, "band_mean_width": 0.16, "worst_mean_width": 0.2}
    return frame, about


def _quality(sensitivity):
    return {"compared": 300, "true_positive": 176, "false_negative": 18, "true_negative": 96, "false_positive": 10,
            "sensitivity": sensitivity, "specificity": 0.9057, "kappa": 0.7992,
            "regions": [{"region": "1-3492", "compared": 79, "sensitivity": 0.89, "specificity": 0.93, "kappa": 0.71}]}


def _cases():
    deterministic = _run()
    confident = _run(confidence=0.95, seed=1)
    awaiting = _run(confidence=0.95, unknown=0.05, seed=2)
    doubtful = _run(rise=True, seed=3)
    banded = _run(confidence=0.95, seed=4)
    bands, about = _bands(worst=True)
    banded.update(bands=bands)
    banded["manifest"].update(bands=about, agreement={"krippendorff_alpha": 0.71, "pairable_keys": 120, "annotators": 3,
                                                      "rule": "majority"})
    banded["manifest"]["params"].update(bands=True, bands_method="smoothed-importance", replicates=1000, band_sample=2000)
    banded["manifest"]["counts"].update(cannot_judge=3, disputed=2)
    unbanded = _run(confidence=0.95, seed=5)
    unbanded["manifest"]["params"]["bands"] = True
    gold = _run(confidence=0.95, seed=6)
    gold["manifest"].update(certifies="gold", verdict_quality={"judge": _quality(0.9072), "verdicts": _quality(None)})
    gold["manifest"]["counts"].update(from_judge=5000, gold_audit={"items": 300, "awaiting": 0, "cannot_judge": 2})
    gold["manifest"]["diagnostics"]["gold_bounds"] = {"predictor": "judge, else verdicts", "segments_without_gold": 1,
                                                      "contradictions": 0, "power_tuning": {"lambda_min": 0.69,
                                                      "lambda_max": 0.85, "lambda_median": 0.78}}
    judged = _run(confidence=0.95, seed=7)
    judged["manifest"].update(verdict_quality={"judge": _quality(0.8)})
    judged["manifest"]["counts"].update(from_judge=4000, gold_audit={"items": 300, "awaiting": 120})
    return {"deterministic": deterministic, "confident": confident, "awaiting": awaiting, "doubtful": doubtful,
            "banded": banded, "unbanded": unbanded, "gold": gold, "judged": judged}


def _comparison(awaiting: int):
    row = {"n_samples": 200, "pooled_recall": 1.0, "precision": 0.455, "precision_ci_high": 0.5039, "precision_ci_low": 0.4061}
    return {
        "kind": "compare", "systems": [{"name": "alpha"}, {"name": "b"}],
        "counts": {"annotations": 396, "draws": 400, "labeled": 396 - awaiting, "unknown": awaiting},
        "params": {"allocation": "even", "confidence": 0.9, "distribution": {"kind": "top_k"}, "seed": 0, "weights": "overlap"},
        "results": [] if awaiting else [{**row, "recall": None, "system": "alpha"}, {**row, "recall": 0.5, "system": "b"}],
        "diagnostics": {"notes": ["recall is NaN: it needs an exhaustive sample (--exhaustive)."]},
    }


def _history():
    rows = []
    for place, (release, lo) in enumerate((("r1", 0.8), ("r2", 0.6), ("r3", 0.62)), start=1):
        for rank, shift in ((100, 0.1), (1000, 0.0)):
            change = "" if place != 2 else "down"
            rows.append({"series": "s3://kb/<releases>", "place": place, "release": release, "run_id": f"id{place}",
                         "resource": f"s3://user:pw@kb/{release}?sig=1", "created": f"2026-11-0{place}T00:00:00",
                         "n": 5000, "rank": rank, "precision_lower": lo + shift, "precision_upper": lo + shift + 0.05,
                         "change": change, "certifies": "verdicts"})
    reports = {"id1": "file:///runs/id1/report.html", "id2": "s3://runs/id2/report.html", "id3": "https://x/id3/report.html"}
    return pd.DataFrame(rows), reports


def views():
    """Every view, by name, as the renderer makes it."""
    out = {}
    for name, case in _cases().items():
        m = case["manifest"]
        out[f"{name}.report"] = render_report(**case)
        out[f"{name}.summary"] = render_summary(m, case["bounds"], exact=case["exact"])
        out[f"{name}.terminal"] = run_summary_text(m, case["bounds"], case["exact"], report="runs/r/report.html", files=FILES)
        outcome = SimpleNamespace(url="runs/r", manifest=m, missing=m["counts"]["awaiting"], task=m.get("annotation_task"),
                                  reused=name == "confident")
        out[f"{name}.markdown"] = evaluation_markdown(outcome)
        out[f"{name}.log"] = counts_message(outcome) + "\n" + awaiting_message(outcome, "planned items")
    for awaiting in (0, 7):
        m = _comparison(awaiting)
        outcome = SimpleNamespace(url="cmp/c", manifest=m, missing=awaiting, task="cmp/c/annotation_task.csv", reused=False)
        out[f"compare{awaiting}.markdown"] = comparison_markdown(outcome)
        if not awaiting:
            out[f"compare{awaiting}.terminal"] = compare_text(m)
    history, reports = _history()
    out["history"] = render_history(history, reports)
    out["history.terminal"] = history_text(history)
    return out


DIGESTS = {
    'awaiting.log': '9aade06aa7acc791',
    'awaiting.markdown': 'f34a50fe1ba35842',
    'awaiting.report': '06275e60fc93b767',
    'awaiting.summary': 'b896d64dff8fe50e',
    'awaiting.terminal': 'cf3f609b98f8b7e5',
    'banded.log': '04f6a98feb435650',
    'banded.markdown': 'a0cead004616bd31',
    'banded.report': '6631def41cf2aa13',
    'banded.summary': '66fb10cba1f59fa4',
    'banded.terminal': 'ab29c4f974f2acde',
    'compare0.markdown': '63c5dc84e1ff4aa8',
    'compare0.terminal': 'ecd0ab4cc1f92279',
    'compare7.markdown': '593f35cc09da4adf',
    'confident.log': 'd5a1e5e26b0381c8',
    'confident.markdown': '2eea29ba439d9035',
    'confident.report': '52b01e2d0cca3c1a',
    'confident.summary': 'f347255b69e56c62',
    'confident.terminal': 'fe4df170c9949367',
    'deterministic.log': '39093723582c7184',
    'deterministic.markdown': '16643ccd1634954c',
    'deterministic.report': '73bf3b95bd60f081',
    'deterministic.summary': 'f5be21978b3641e3',
    'deterministic.terminal': 'c759987c9dbdf3bd',
    'doubtful.log': 'fcb3e66b4d48ac34',
    'doubtful.markdown': '3f90206305132196',
    'doubtful.report': '17e114f8c87cedc3',
    'doubtful.summary': '9d2818ccf4bd668c',
    'doubtful.terminal': '767b08dde2c41b46',
    'gold.log': '9d23f816849eec27',
    'gold.markdown': 'dfc653aa67a7544d',
    'gold.report': '4332deece9817ea5',
    'gold.summary': '21e8affb46039d0f',
    'gold.terminal': '3bd319216daaf254',
    'history': '10fa6a5de563206f',  # issue 30: the Runs table's 'certifies' column, the header says what each certifies
    'history.terminal': 'bf9dec31894dface',
    'judged.log': '82ff22fb43ceceda',
    'judged.markdown': '362e9d8856d1f55e',
    'judged.report': 'da8e77e20102e0d6',
    'judged.summary': 'dcbd506ff055b7a9',
    'judged.terminal': '6a3ff237143dfb4a',
    'unbanded.log': '4139667480b7e2f6',
    'unbanded.markdown': 'cc866f08b715414b',
    'unbanded.report': 'ac01cd3f082acec2',
    'unbanded.summary': 'bc7b391253d21161',
    'unbanded.terminal': 'e5d97bb96b96a179',
}


@pytest.fixture(scope="module")
def rendered():
    return views()


@pytest.mark.parametrize("view", sorted(DIGESTS))
def test_every_view_is_byte_identical_to_before_the_renderer_package(rendered, view):
    assert hashlib.sha256(rendered[view].encode("utf-8")).hexdigest()[:16] == DIGESTS[view]


def test_every_view_is_pinned(rendered):
    assert set(rendered) == set(DIGESTS)


def test_the_gamma_verdict_is_the_bounds_code_s():
    # The report, the terminal and assumptions_plausible all ask within_gamma; rounding slack 1e-12.
    assert within_gamma(1.2, 1.2) and within_gamma(1.2 * (1 + 1e-13), 1.2) and not within_gamma(1.21, 1.2)


def test_the_renderer_is_in_the_core_layer():
    # No Dask, Prefect, flows or dataflow under prdist.render: the layer scan holds it to the core's rules.
    from tests.unit.test_layers import _imports, _layer, _modules, upward_imports

    modules = _modules()
    graph = {m: _imports(m, path, set(modules)) for m, path in modules.items() if m.startswith("prdist.render")}
    assert len(graph) >= 10 and {_layer(m) for m in graph} == {"core"}
    assert upward_imports(graph) == set()
