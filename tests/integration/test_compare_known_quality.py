"""``prdist compare`` with a judge and gold in the shared label store: what its intervals certify."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from tests.support.cli_run import cli
from prdist.dataflow.labels.importer import import_labels
from prdist.importance import estimate_precision
from tests.integration.test_compare import core_sample, synthetic, write_systems


def _import(store: str, path, frame: pd.DataFrame, role: str) -> None:
    frame.to_csv(path, index=False)
    import_labels(store, [str(path)], role=role, annotator=role)


def _compare(urls: dict, store: str, out: str):
    argv = ["compare", "--labels", store, "--budget", "120", "--seed", "4", "--out", out]
    for name, url in urls.items():
        argv += ["--system", f"{name}={url}"]
    code, stdout, err = cli(*argv)
    assert code == 0, err
    run = stdout.strip().splitlines()[-1]
    with open(os.path.join(run, "manifest.json")) as fh:
        return json.load(fh), pd.read_parquet(os.path.join(run, "compare.parquet")), stdout


def test_compare_certifies_verdicts_until_every_drawn_item_has_gold(tmp_path):
    frames, truth = synthetic(9)
    urls = write_systems(frames, tmp_path / "systems")
    rng = np.random.default_rng(0)
    judge = truth.assign(label=np.where(rng.random(len(truth)) < 0.7, truth["label"], 1 - truth["label"]))
    store, out = str(tmp_path / "store"), str(tmp_path / "runs")
    _import(store, tmp_path / "judge.csv", judge, "judge")

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
