"""`prdist run` end to end: the human-in-the-loop cycle (on both runners) and the demo (in-process)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from prdist.cli import main
from tests.support.small_release import ranked_scores_and_labels, write_release


@pytest.fixture
def resource(tmp_path):
    n = 20_000
    scores, truth = ranked_scores_and_labels(n, seed=3)
    keys = np.arange(n, dtype=np.int64) * 7 + 3
    table = pa.table({"key": keys, "score": scores, "text": [f"fact {k}" for k in keys]})
    return write_release(tmp_path / "release-1", table, row_group_size=2_000), dict(zip(keys.tolist(), truth.tolist()))


def cli(*argv):
    """Run ``prdist`` in-process; return (exit code, stdout, stderr).

    Plain redirection rather than capsys/capfd: Prefect's console log handler may bind to the
    stream of the moment, and capsys/capfd close theirs when the test ends.
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def run(*argv):
    code, out, err = cli("run", *argv)
    return code, out.strip().splitlines()[-1] if out.strip() else "", err


def test_awaiting_labels_then_import_then_complete(tmp_path, resource, runner):
    url, truth = resource
    store, out = str(tmp_path / "labels"), str(tmp_path / "runs")
    (tmp_path / "labels").mkdir()  # an empty store: exists, holds nothing yet
    args = ["--resource", url, "--out", out, "--labels", store, "--eps", "0.2", "--window", "10", "--confidence", "none"]

    code, run_dir, err = run(*args)
    assert code == 3, err
    assert "await labels" in err
    assert ("running in-process" in err) == (runner == "in-process")
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    assert manifest["status"] == "awaiting labels" and manifest["awaiting_labels"]
    assert manifest["counts"]["unknown"] == manifest["counts"]["annotations"]
    # Nothing labeled yet: a neutral badge with the count, never "complete", nothing claimed as tested.
    report = (Path(run_dir) / "report.html").read_text()
    awaiting = manifest["counts"]["awaiting"]
    assert f'<span class="badge neutral">awaiting labels ({awaiting:,})</span>' in report
    assert "badge ok" not in report and ">complete<" not in report and "no evidence against" not in report
    assert "nothing to test the assumptions on" in report
    bounds = pd.read_parquet(Path(run_dir) / "bounds.parquet")
    assert (bounds["precision_lower"] == 0).all() and (bounds["precision_upper"] == 1).all()  # nothing known yet
    task = pd.read_csv(Path(run_dir) / "annotation_task.csv")
    assert {"rank", "key", "score", "text", "label"} <= set(task.columns) and len(task) == manifest["counts"]["annotations"]

    # The annotator labels half the task; the import skips the blank rest.
    half = len(task) // 2
    task.loc[: half - 1, "label"] = [truth[k] for k in task["key"][:half]]
    task.to_csv(tmp_path / "done.csv", index=False)
    assert cli("labels", "import", "--store", store, str(tmp_path / "done.csv"))[0] == 0
    code, second, err = run(*args)
    assert code == 3 and second != run_dir
    assert json.loads((Path(second) / "manifest.json").read_text())["counts"]["unknown"] == len(task) - half

    assert cli("labels", "export", "--run", second, "--out", str(tmp_path / "rest.jsonl"))[0] == 0
    rest = pd.read_json(tmp_path / "rest.jsonl", lines=True)
    rest["label"] = [truth[k] for k in rest["key"]]
    rest.to_json(tmp_path / "rest-done.jsonl", orient="records", lines=True)
    assert cli("labels", "import", "--store", store, str(tmp_path / "rest-done.jsonl"))[0] == 0
    code, third, err = run(*args)
    assert code == 0, err
    final = json.loads((Path(third) / "manifest.json").read_text())
    assert final["counts"]["unknown"] == 0 and not final["awaiting_labels"] and final["status"] == "complete"
    assert '<span class="badge ok">complete</span>' in (Path(third) / "report.html").read_text()
    assert (Path(third) / "report.html").stat().st_size > 10_000

    # Same inputs, same labels: the committed run is found and nothing is redone (nor run).
    code, again, err = run(*args)
    assert code == 0 and again == third and "running in-process" not in err


def test_the_demo_runs_with_nothing_configured(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, run_dir, err = run("--demo-n", "30000", "--eps", "0.1")
    assert code == 0, err
    assert err.count("prdist: running in-process (no Prefect API configured)") == 1  # said once, not per flow
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    assert manifest["n"] == 30_000 and manifest["counts"]["unknown"] == 0
    assert Path(run_dir).resolve().is_relative_to(tmp_path / "prdist-runs")


def test_bad_input_exits_2_with_one_line(tmp_path):
    code, _, err = run("--resource", str(tmp_path / "missing"), "--out", str(tmp_path / "o"))
    assert code == 2
    assert len([line for line in err.splitlines() if line.startswith("prdist:")]) == 1
    assert "Traceback" not in err


def test_a_store_with_other_annotators_is_another_run(tmp_path, resource):
    # The same majority verdicts from one annotator and from four: the manifests differ (annotators,
    # agreement), so the runs do; the second once returned the first, which said "1 annotator".
    url, truth = resource
    out = str(tmp_path / "runs")
    args = ["--resource", url, "--out", out, "--eps", "0.2", "--window", "10", "--confidence", "none"]
    (tmp_path / "empty").mkdir()  # a store that exists but holds nothing yet
    code, first, _ = run(*args, "--labels", str(tmp_path / "empty"))
    assert code == 3
    task = pd.read_csv(Path(first) / "annotation_task.csv")
    verdicts = pd.DataFrame({"key": task["key"], "label": [truth[k] for k in task["key"]]})
    runs = {}
    for store, annotators in (("one", ["ann"]), ("four", ["a", "b", "c", "d"])):
        records = pd.concat([verdicts.assign(annotator=a) for a in annotators])
        records.to_csv(tmp_path / f"{store}.csv", index=False)
        assert cli("labels", "import", "--store", str(tmp_path / store), str(tmp_path / f"{store}.csv"))[0] == 0
        code, runs[store], err = run(*args, "--labels", str(tmp_path / store))
        assert code == 0, err
    assert runs["one"] != runs["four"]
    said = {store: json.loads((Path(run) / "manifest.json").read_text()) for store, run in runs.items()}
    assert said["one"]["agreement"]["annotators"] == 1 and said["four"]["agreement"]["annotators"] == 4
    assert pd.read_parquet(Path(runs["one"]) / "bounds.parquet").equals(pd.read_parquet(Path(runs["four"]) / "bounds.parquet"))


def _summary_of(tmp_path, diagnostics: dict) -> str:
    """The terminal summary of a small run directory whose manifest carries ``diagnostics``."""
    from prdist.dataflow.run.summary import run_summary

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    manifest = {"n": 1000, "params": {"method": "paula", "confidence": 0.95},
                "counts": {"annotations": 469, "labeled": 401, "cannot_judge": 0, "disputed": 0, "awaiting": 68},
                "cutoffs": [{"target": 0.95, "rank": 10, "score": 2.5}], "diagnostics": diagnostics}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    pd.DataFrame({"rank": [10, 1000], "precision_lower": [0.96, 0.5], "precision_upper": [1.0, 0.9]}).to_parquet(run_dir / "bounds.parquet")
    return run_summary(str(run_dir))


def test_the_terminal_qualifies_guarantees_in_doubt(tmp_path):
    rejected = {"assumptions_plausible": False, "contradictions": 0,
                "confidence": {"model_rejected": True, "monotone_rate_test": {"p_value": 0.045}}}
    text = _summary_of(tmp_path, rejected)
    assert "warning: the diagnostics put the assumptions in doubt: the monotone-rate test rejects the model, p = 0.045;" in text
    assert "precision >= 0.95 down to rank 10 (score >= 2.5) is guaranteed only if the assumptions hold" in text
    assert "is guaranteed down to" not in text
    # The first line says what share of the items is planned, and how many of those are known.
    assert text.splitlines()[0].startswith("prdist: 1,000 items, 469 planned for labels (46.90% of the items), 401 of them known")


def test_the_terminal_states_guarantees_plainly_when_nothing_is_in_doubt(tmp_path):
    text = _summary_of(tmp_path, {"assumptions_plausible": True})
    assert "warning" not in text and "precision >= 0.95 is guaranteed down to rank 10 (score >= 2.5)" in text
