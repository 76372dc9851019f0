"""``prdist compare`` with a judge and gold in the shared label store: what its intervals certify."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from tests.support.cli_run import cli
from prdist.dataflow.compare.params import CompareParams
from prdist.errors import ParameterError
from prdist.dataflow.labels.importer import import_labels
from prdist.importance import estimate_precision
from tests.integration.test_compare import core_sample, synthetic, write_systems


def _import(store: str, path, frame: pd.DataFrame, role: str) -> None:
    frame.to_csv(path, index=False)
    import_labels(store, [str(path)], role=role, annotator=role)


def _cli_compare(urls: dict, store: str, out: str, *extra: str) -> tuple[int, str, str]:
    """(exit code, run directory, stdout) of one comparison of ``urls`` at budget 120, seed 4."""
    argv = ["compare", "--labels", store, "--budget", "120", "--seed", "4", "--out", out, *extra]
    for name, url in urls.items():
        argv += ["--system", f"{name}={url}"]
    code, stdout, err = cli(*argv)
    assert code in (0, 3), err
    return code, stdout.strip().splitlines()[-1], stdout


def _compare(urls: dict, store: str, out: str, *extra: str):
    code, run, stdout = _cli_compare(urls, store, out, *extra)
    assert code == 0
    with open(os.path.join(run, "manifest.json")) as fh:
        return json.load(fh), pd.read_parquet(os.path.join(run, "compare.parquet")), stdout


def _judged(tmp_path, accuracy: float, seed: int, **systems):
    """Synthetic systems and their truth, a store holding a judge right with probability ``accuracy``."""
    frames, truth = synthetic(9, **systems)
    urls = write_systems(frames, tmp_path / "systems")
    rng = np.random.default_rng(seed)
    judge = truth.assign(label=np.where(rng.random(len(truth)) < accuracy, truth["label"], 1 - truth["label"]))
    store, out = str(tmp_path / "store"), str(tmp_path / "runs")
    _import(store, tmp_path / "judge.csv", judge, "judge")
    return frames, truth, urls, store, out


def test_compare_certifies_verdicts_until_every_drawn_item_has_gold(tmp_path):
    frames, truth, urls, store, out = _judged(tmp_path, 0.7, 0)

    manifest, by_judge, stdout = _compare(urls, store, out)
    assert manifest["certifies"] == "verdicts" and "verdict_quality" not in manifest
    assert "certifies: verdicts" in stdout

    _import(store, tmp_path / "gold-half.csv", truth.iloc[::2], "gold")
    manifest, partly, stdout = _compare(urls, store, out)
    quality = manifest["verdict_quality"]["judge"]
    assert manifest["certifies"] == "verdicts" and "certifies: verdicts" in stdout
    assert 0 < quality["compared"] < manifest["counts"]["annotations"] and 0.5 < quality["sensitivity"] < 0.95
    pd.testing.assert_frame_equal(partly, by_judge)  # gold on some drawn items changes no label

    _import(store, tmp_path / "gold-rest.csv", truth.iloc[1::2], "gold")
    manifest, gold, stdout = _compare(urls, store, out)
    assert manifest["certifies"] == "gold" and "certifies: gold" in stdout
    assert manifest["verdict_quality"]["judge"]["compared"] == manifest["counts"]["annotations"]
    _, core = core_sample(frames, None, gold["n_samples"].to_numpy(), seed=4)
    est = estimate_precision(core.with_labels(truth["key"], truth["label"]))  # the same draws labeled by the truth
    np.testing.assert_allclose(gold["precision"], est.precision, rtol=1e-10)
    assert not np.allclose(gold["precision"], by_judge["precision"])


def test_compare_with_a_gold_audit_certifies_gold_once_the_audit_has_it(tmp_path):
    """A judge on every item, a designed gold audit: only the audit awaits people, and its gold
    makes the precision intervals certify gold (two-phase); the draws are those without an audit."""
    _, truth, urls, store, out = _judged(tmp_path, 0.9, 1, m=2)
    manifest, by_judge, _ = _compare(urls, store, out)

    code, run, _ = _cli_compare(urls, store, out, "--gold-budget", "30")
    assert code == 3
    task = pd.read_csv(os.path.join(run, "annotation_task.csv"))
    assert len(task) == 30 and task["gold_audit"].all()  # the judge speaks for every other drawn key
    with open(os.path.join(run, "manifest.json")) as fh:
        waiting = json.load(fh)
    assert waiting["gold_audit"] == {"keys": 30, "drawn_keys": manifest["counts"]["annotations"], "gold": 0,
                                     "cannot_judge": 0, "awaiting": 30}
    assert pd.read_parquet(os.path.join(run, "sample.parquet"))["key"].equals(
        pd.read_parquet(os.path.join(out, manifest["run_id"], "sample.parquet"))["key"])  # the audit moves no draw

    audited = truth[truth["key"].isin(task["key"])]
    _import(store, tmp_path / "gold.csv", audited, "gold")
    manifest, result, stdout = _compare(urls, store, out, "--gold-budget", "30")
    d = manifest["counts"]["annotations"]
    assert manifest["certifies"] == "gold" and manifest["recall_certifies"] == "verdicts"
    assert manifest["gold_method"] == f"two-phase prediction-powered (PPI++), audit 30 of {d} keys"
    assert set(manifest["gold_audit"]["lambda"]) == {"sys0", "sys1"}
    assert all(0 <= lam <= 1 for lam in manifest["gold_audit"]["lambda"].values())
    assert f"certifies: gold (a random gold audit of 30 of the {d} drawn keys" in stdout
    assert list(result.columns[:8]) == ["system", "precision", "precision_se", "precision_ci_low", "precision_ci_high",
                                        "recall", "recall_se", "n_samples"]
    np.testing.assert_allclose(result["verdicts_precision"], by_judge["precision"], rtol=1e-12)
    assert not np.allclose(result["precision"], by_judge["precision"])
    assert (result["precision_ci_low"] <= result["precision"]).all() and (result["precision"] <= result["precision_ci_high"]).all()


def test_a_cannot_judge_gold_verdict_on_the_last_audited_key_completes_the_comparison(tmp_path):
    """The audit's "cannot judge" settles a key: the run that awaited it is another run, which
    certifies gold from the other audited keys (it used to find the awaiting run again)."""
    _, truth, urls, store, out = _judged(tmp_path, 0.9, 1, m=2)
    code, run, _ = _cli_compare(urls, store, out, "--gold-budget", "30")
    task = pd.read_csv(os.path.join(run, "annotation_task.csv"))
    audited = truth[truth["key"].isin(task["key"])]
    _import(store, tmp_path / "gold.csv", audited.iloc[:-1], "gold")
    code, waiting, _ = _cli_compare(urls, store, out, "--gold-budget", "30")
    assert code == 3
    _import(store, tmp_path / "gold-last.csv", audited.iloc[-1:].assign(label=-1), "gold")  # -1: cannot judge
    code, done, stdout = _cli_compare(urls, store, out, "--gold-budget", "30")
    assert code == 0 and done != waiting and "certifies: gold" in stdout
    with open(os.path.join(done, "manifest.json")) as fh:
        assert json.load(fh)["gold_audit"]["cannot_judge"] == 1


def test_a_gold_audit_of_one_key_is_refused_before_anything_runs(tmp_path):
    code, _, err = cli("compare", "--system", f"a={tmp_path / 'a'}", "--budget", "4", "--seed", "0", "--out", str(tmp_path / "runs"),
                       "--gold-budget", "1")
    assert code == 2
    assert err == "prdist: error: The '--gold-budget' parameter of prdist compare must be an int >= 2. Got 1 instead.\n"
    with pytest.raises(ParameterError, match="gold_budget"):  # the flows' and Python's edge too
        CompareParams(budget=4, gold_budget=1)
