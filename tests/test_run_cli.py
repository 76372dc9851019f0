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
from small_release import ranked_scores_and_labels, write_release


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
    args = ["--resource", url, "--out", out, "--labels", store, "--eps", "0.2", "--window", "10", "--confidence", "none"]

    code, run_dir, err = run(*args)
    assert code == 3, err
    assert "await labels" in err
    assert ("running in-process" in err) == (runner == "in-process")
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["awaiting_labels"]
    assert manifest["counts"]["unknown"] == manifest["counts"]["annotations"]
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
    assert final["counts"]["unknown"] == 0 and not final["awaiting_labels"]
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
