"""History of releases with verdicts of known quality: what each release certifies, the judge's
quality against gold per release, and a warning where the judge drifts (the ``prdist history``
command through the CLI, on runs made by ``prdist run``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.support.cli_run import cli
from prdist import population
from prdist.dataflow.synth import write_synthetic
from prdist.history import JudgeRates, judge_drift, judge_rates, release_confidence

MODEL = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)
PLAN = ("--eps", "0.1", "--window", "20", "--series", "kb")


def _truth(url: str) -> np.ndarray:
    """The exact precision at every rank of a synthetic release (its label column)."""
    table = pq.read_table(url, columns=["score", "label"]).to_pandas().sort_values("score", ascending=False)
    labels = table["label"].to_numpy(dtype=float)
    return np.cumsum(labels) / np.arange(1, labels.size + 1)


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """Four releases of one series: verdicts only (an oracle), then three with a judge and a gold
    audit of 300 items (the oracle plays gold): a judge right 95 %, 95 %, then 60 % of the time."""
    root = tmp_path_factory.mktemp("known-history")
    runs, urls = str(root / "runs"), []
    for k, accuracy in enumerate((None, 0.95, 0.95, 0.6), start=1):
        url = write_synthetic(MODEL, n=20_000, out=str(root / "releases" / f"r{k}"), seed=10 + k,
                              judge_accuracy=accuracy).url
        extra = () if accuracy is None else ("--judge-column", "judge", "--gold-budget", "300")
        code, _, err = cli("run", "--resource", url, "--out", runs, "--oracle-column", "label", *PLAN, *extra)
        assert code == 0, err
        urls.append(url)
    return runs, urls


def test_history_bounds_gold_releases_by_gold_and_names_what_each_certifies(releases, tmp_path):
    runs, urls = releases
    code, out, err = cli("history", "--runs", runs, "--out", str(tmp_path / "h"))
    assert code == 0, err
    table = pd.read_parquet(tmp_path / "h" / "history.parquet")
    by_place = {place: frame for place, frame in table.groupby("place")}
    assert [by_place[p]["certifies"].iloc[0] for p in (1, 2, 3, 4)] == ["verdicts", "gold", "gold", "gold"]
    assert (by_place[2]["change"] == "").all()  # gold after verdicts: no claim either way
    gold_run = Path(runs) / by_place[4]["run_id"].iloc[0]
    plan = pd.read_parquet(gold_run / "plan.parquet")
    assert {"gold", "judge", "audit_class"} <= set(plan.columns) and plan["judge"].notna().all()  # what history bounds it again from
    for place in (2, 3, 4):  # the gold bounds, at each place's level, hold for the true precision
        rows = by_place[place]
        exact = _truth(urls[place - 1])[rows["rank"].to_numpy() - 1]
        assert np.all(rows["precision_lower"] <= exact + 1e-12) and np.all(exact <= rows["precision_upper"] + 1e-12), place
    assert "certifies gold; judge against gold on 300 audited items" in out
    page = (tmp_path / "h" / "history.html").read_text()
    assert "The judge against gold" in page and "<th>certifies</th>" in page


def test_a_judge_that_drifts_is_warned_of_between_the_releases_where_it_drifts(releases, tmp_path):
    runs, _ = releases
    code, _, err = cli("history", "--runs", runs, "--out", str(tmp_path / "h"))
    judges = pd.read_parquet(tmp_path / "h" / "judge_quality.parquet")
    assert judges["place"].tolist() == [2, 3, 4] and judges["compared"].tolist() == [300, 300, 300]
    assert judges["drift"].tolist()[:2] == ["", ""] and "sensitivity" in judges["drift"].iloc[2]
    assert (judges["sensitivity_lower"] <= judges["sensitivity"]).all() and (judges["sensitivity"] <= judges["sensitivity_upper"]).all()
    assert judges["confidence"].tolist() == pytest.approx([1 - (1 - release_confidence(0.95, k)) / 2 for k in (2, 3, 4)])
    warned = [line for line in err.splitlines() if "drifts" in line]
    assert code == 0 and len(warned) == 1 and "between release 3 (r3) and release 4 (r4)" in warned[0]
    assert "The judge drifts at release 4" in (tmp_path / "h" / "history.html").read_text()


def test_a_history_without_a_judge_against_gold_writes_no_judge_table(releases, tmp_path):
    runs, _ = releases
    out = tmp_path / "h"
    assert cli("history", "--runs", runs, "--out", str(out))[0] == 0 and (out / "judge_quality.parquet").exists()
    only = tmp_path / "only"
    only.mkdir()
    first = sorted(Path(runs).glob("*/manifest.json"), key=lambda p: json.loads(p.read_text())["release"]["place"])[0]
    shutil.copytree(first.parent, only / first.parent.name)
    code, stdout, err = cli("history", "--runs", str(only), "--out", str(out))
    assert code == 0, err
    assert not (out / "judge_quality.parquet").exists() and "judge against gold" not in stdout


def test_judge_intervals_hold_together_and_drift_needs_disjoint_intervals():
    counts = {"true_positive": 190, "false_negative": 10, "true_negative": 95, "false_positive": 5, "kappa": 0.9}
    one = judge_rates(counts, 0.95, 1)
    assert one.sensitivity[1] < 0.95 < one.sensitivity[2] and one.confidence == pytest.approx(1 - 0.05 * 3 / np.pi**2)
    assert judge_rates(counts, 0.95, 5).sensitivity[1] < one.sensitivity[1]  # later places spend less: wider
    worse = judge_rates({**counts, "true_positive": 120, "false_negative": 80}, 0.95, 2)
    assert judge_drift(one, worse) == "sensitivity" and judge_drift(one, judge_rates(counts, 0.95, 2)) == ""
    no_negatives = judge_rates({**counts, "true_negative": 0, "false_positive": 0}, 0.95, 2)
    assert no_negatives.specificity is None and judge_drift(one, no_negatives) == ""
    assert isinstance(one, JudgeRates)
