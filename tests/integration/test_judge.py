"""Verdicts of known quality: roles in the label store, a judge column, the gold audit and its bounds."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.cli_run import cli
from prdist import population
from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.run.plan_rows import plan_table
from prdist.dataflow.labels.importer import import_labels
from prdist.dataflow.labels.store import lookup_labels, read_store, store_status
from prdist.dataflow.synth import write_synthetic
from prdist.errors import ParameterError

MODEL = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)


def label_file(path: Path, keys, labels) -> str:
    pd.DataFrame({"key": keys, "label": labels}).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def judged(tmp_path):
    """A sorted synthetic resource of 20,000 items with a judge right 90 % of the time, and its truth."""
    res = write_synthetic(MODEL, n=20_000, out=str(tmp_path / "res"), seed=5, judge_accuracy=0.9, row_group_size=4096)
    table = pq.read_table(res.url).to_pandas()
    return res.url, dict(zip(table["key"].tolist(), table["label"].tolist()))


def test_roles_are_recorded_and_stores_from_before_roles_read_as_annotators(tmp_path):
    store = tmp_path / "store"
    import_labels(str(store), [label_file(tmp_path / "j.csv", [1, 2], [1, 0])], role="judge")
    import_labels(str(store), [label_file(tmp_path / "g.csv", [2], [1])], role="gold")
    old = pd.DataFrame({"key": ["3"], "label": pd.array([1], dtype="int8"), "source": ["old.csv"], "annotator": [""],
                        "time": pd.to_datetime(["2020-01-01"], utc=True)})
    pq.write_table(pa.Table.from_pandas(old, preserve_index=False), store / "labels-old.parquet")
    records = read_store(str(store)).sort_values("key")
    assert records["role"].tolist() == ["judge", "judge", "gold", "annotator"]
    with pytest.raises(ParameterError, match="role"):
        import_labels(str(store), [label_file(tmp_path / "x.csv", [1], [1])], role="expert")


def test_a_judge_stands_only_where_no_annotator_judged_and_gold_is_never_voted(tmp_path):
    store = str(tmp_path / "store")
    import_labels(store, [label_file(tmp_path / "a.csv", ["a"], [1])], annotator="ann")
    import_labels(store, [label_file(tmp_path / "j.csv", ["a", "b"], [0, 1])], role="judge", annotator="llm")
    import_labels(store, [label_file(tmp_path / "g.csv", ["a", "c"], [0, 0])], role="gold", annotator="expert")
    found = lookup_labels(store, ["a", "b", "c"])
    assert found.labels.tolist()[:2] == [1.0, 1.0] and np.isnan(found.labels.iloc[2])  # gold alone is no verdict
    assert found.judged.tolist() == [False, True, False]
    assert found.kinds.tolist() == ["correct", "correct", "missing"]
    assert found.roles.gold.tolist() == [0.0, np.nan, 0.0] or found.roles.gold.isna().tolist() == [False, True, False]
    assert found.relabeled == 0  # the judge and gold disagreeing with the annotator is no relabeling


def test_labels_status_counts_roles_and_shows_the_judges_quality(tmp_path):
    store = str(tmp_path / "store")
    keys = list(range(10))
    judge = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]
    gold = [1, 1, 1, 0, 0, 0, 0, 0, 1, 1]
    assert cli("labels", "import", "--store", store, "--role", "judge", label_file(tmp_path / "j.csv", keys, judge))[0] == 0
    code, out, _ = cli("labels", "import", "--store", store, "--role", "gold", label_file(tmp_path / "g.csv", keys, gold))
    assert code == 0 and "10 gold verdicts" in out
    status = store_status(store)
    assert status["roles"]["judge"] == {"records": 10, "items": 10} and status["roles"]["annotator"]["records"] == 0
    q = status["judge_quality"]
    assert (q["true_positive"], q["false_negative"], q["true_negative"], q["false_positive"]) == (4, 1, 4, 1)
    assert status["verdicts"]["correct"] == 0  # neither judge nor gold is an annotator's verdict
    code, out, _ = cli("labels", "status", "--store", store)
    assert code == 0 and "judge quality against gold: sensitivity 0.800 over 5 gold-correct items" in out
    assert "gold 10 records on 10 items" in out
    code, _, err = cli("labels", "import", "--store", store, "--role", "boss", str(tmp_path / "g.csv"))
    assert code == 2 and "--role" in err and len(err.strip().splitlines()) == 1


def test_the_judge_column_refuses_anything_but_probabilities():
    items = pa.table({"key": [1, 2, 3], "score": [3.0, 2.0, 1.0], "judge": [0.2, 1.0, None], "bad": [0.5, 1.5, 0.0],
                      "text": ["0.1", "yes", "0"]})
    got = ev.resolve_labels(items, judge_column="judge")
    assert got.labels[:2].tolist() == [0.0, 1.0] and np.isnan(got.labels[2])
    assert got.judged.tolist() == [True, True, False] and got.kinds.tolist() == ["incorrect", "correct", "missing"]
    with pytest.raises(ParameterError, match=r"outside \[0, 1\], e.g. 1.5"):
        ev.resolve_labels(items, judge_column="bad")
    with pytest.raises(ParameterError, match="not numbers, e.g. 'yes'"):
        ev.resolve_labels(items, judge_column="text")
    with pytest.raises(ParameterError, match="is not in the resource"):
        ev.resolve_labels(items, judge_column="nope")


def test_params_of_runs_without_a_judge_or_audit_are_unchanged():
    plain = ev.EvaluationParams(confidence=0.95)
    assert "judge_column" not in plain.to_dict() and "gold_budget" not in plain.to_dict() and "seed" not in plain.to_dict()
    audited = ev.EvaluationParams(confidence=0.95, judge_column="judge", gold_budget=10, seed=4)
    assert {k: audited.to_dict()[k] for k in ("judge_column", "gold_budget", "seed")} == {"judge_column": "judge", "gold_budget": 10, "seed": 4}
    assert ev.run_key(audited) != ev.run_key(ev.EvaluationParams(confidence=0.95, judge_column="judge", gold_budget=10, seed=5))
    with pytest.raises(ParameterError, match="gold_budget"):
        ev.EvaluationParams(confidence=None, gold_budget=10)


def test_the_gold_audit_is_seeded_within_the_plan_and_flagged_in_plan_parquet():
    params = ev.EvaluationParams(confidence=0.95, gold_budget=40, seed=3)
    planned = ev.make_plan(20_000, params)
    again = ev.make_plan(20_000, params)
    other = ev.make_plan(20_000, ev.EvaluationParams(confidence=0.95, gold_budget=40, seed=4))
    assert planned.in_audit.sum() == 40 and np.array_equal(planned.in_audit, again.in_audit)
    assert not np.array_equal(planned.in_audit, other.in_audit)
    items = pa.table({"key": planned.ranks, "score": -planned.ranks.astype(float)})
    gold = np.where(planned.in_audit, 1.0, np.nan)
    table = plan_table(planned, items, np.full(planned.ranks.size, np.nan), gold=gold).to_pandas()
    assert table["gold_audit"].sum() == 40 and table.loc[table["gold_audit"], "gold"].eq(1.0).all()
    assert set(table["role"]) <= {"prefix", "window"}  # an audit row keeps its plan role


def _gold_cycle(tmp_path, url: str, truth: dict, budget: int, *grid) -> Path:
    """Run with a judge and a gold audit (exit 3, only the audit awaits), import gold, run again (exit 0)."""
    store, out = str(tmp_path / "store"), str(tmp_path / "runs")
    (tmp_path / "store").mkdir()  # an empty store: --labels must name one that exists
    args = ("run", "--resource", url, "--out", out, "--labels", store, "--judge-column", "judge", "--gold-budget", str(budget), *grid)
    code, stdout, stderr = cli(*args)
    assert code == 3, stderr
    run = Path(stdout.strip().splitlines()[-1])
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["certifies"] == "verdicts" and manifest["counts"]["gold_audit"]["awaiting"] == budget
    assert manifest["counts"]["from_judge"] == manifest["counts"]["annotations"]
    task = pd.read_csv(run / "annotation_task.csv")
    assert len(task) == budget and task["gold_audit"].all()
    plan = pd.read_parquet(run / "plan.parquet")
    assert sorted(plan.loc[plan["gold_audit"], "key"].astype(str)) == sorted(task["key"].astype(str))
    assert "the bounds certify the precision as the verdicts say it" in stdout

    gold = label_file(tmp_path / "gold.csv", task["key"], [truth[int(k)] for k in task["key"]])
    assert cli("labels", "import", "--store", store, "--role", "gold", "--annotator", "expert", gold)[0] == 0
    code, stdout, stderr = cli(*args)
    assert code == 0, stderr
    assert "the bounds certify the precision as gold says it" in stdout and "judge against gold: sensitivity" in stdout
    again = cli(*args)  # the committed run is found again, audit and all
    assert again[0] == 0 and again[1].strip().splitlines()[-1] == stdout.strip().splitlines()[-1]
    return Path(stdout.strip().splitlines()[-1])


def _covers_gold(run: Path, url: str, truth: dict) -> bool:
    bounds = pd.read_parquet(run / "bounds.parquet")
    keys = pq.read_table(url).to_pandas().sort_values("score", ascending=False)["key"]  # the scores are distinct
    exact = np.cumsum([truth[k] for k in keys]) / np.arange(1, len(keys) + 1)
    r = bounds["rank"].to_numpy()
    return bool(np.all(bounds["precision_lower"].to_numpy() <= exact[r - 1] + 1e-12)
                and np.all(exact[r - 1] <= bounds["precision_upper"].to_numpy() + 1e-12))


def test_with_a_judge_only_the_gold_audit_awaits_people_then_the_bounds_certify_gold(tmp_path, judged, runner):
    url, truth = judged
    run = _gold_cycle(tmp_path, url, truth, 115, "--eps", "0.1", "--window", "20")  # gold on 10 % of the 1,149 planned
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["certifies"] == "gold" and manifest["status"] == "complete"
    quality = manifest["verdict_quality"]["judge"]
    assert quality["compared"] == 115 and 0.8 <= (quality["true_positive"] + quality["true_negative"]) / 115 <= 1.0
    assert "annotators" not in manifest["verdict_quality"]  # no annotator judged a planned item
    report = (run / "report.html").read_text()
    assert "Verdicts of known quality" in report and "as gold says it" in report
    assert _covers_gold(run, url, truth)
    # The audit was drawn half and half from the judge column's two classes in every segment
    # (prdist.verdicts.audit): about half the audit is in the class it calls incorrect, which
    # holds 36 % of the plan (a proportional audit would put about 36 % there).
    plan = pd.read_parquet(run / "plan.parquet")
    incorrect = plan["audit_class"] == 0
    assert incorrect.mean() < 0.4 and abs(incorrect[plan["gold_audit"]].mean() - 0.5) < 0.05
    assert manifest["diagnostics"]["gold_bounds"]["audit_strata"] == "segment x judge class"


def test_a_small_gold_audit_still_covers_gold(tmp_path, judged):
    url, truth = judged
    assert _covers_gold(_gold_cycle(tmp_path, url, truth, 60), url, truth)


def test_gold_budget_needs_paula_at_a_confidence(tmp_path, judged):
    url, _ = judged
    code, _, err = cli("run", "--resource", url, "--out", str(tmp_path / "runs"), "--method", "random", "--gold-budget", "5")
    assert code == 2 and "--gold-budget" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("run", "--resource", url, "--out", str(tmp_path / "runs"), "--gold-budget", "0")
    assert code == 2 and "--gold-budget" in err


def test_a_judge_column_outside_the_unit_interval_is_refused_in_one_line(tmp_path):
    keys = np.arange(200, dtype=np.int64)
    table = pa.table({"key": keys, "score": np.linspace(1, 0, 200), "judge": np.where(keys == 7, 2.0, 0.5)})
    os.makedirs(tmp_path / "res")
    pq.write_table(table, tmp_path / "res" / "a.parquet")
    code, _, err = cli("run", "--resource", str(tmp_path / "res"), "--out", str(tmp_path / "runs"), "--judge-column", "judge",
                       "--eps", "0.3", "--window", "5")
    assert code == 2 and "judge column 'judge' holds 1 value(s) outside [0, 1], e.g. 2.0" in err
    assert len([line for line in err.splitlines() if line.startswith("prdist: error")]) == 1


def test_the_synthetic_judge_has_its_stated_accuracy_whatever_the_files(tmp_path):
    one = write_synthetic(MODEL, n=30_000, out=str(tmp_path / "one"), seed=2, judge_accuracy=0.8, partitions=1)
    three = write_synthetic(MODEL, n=30_000, out=str(tmp_path / "three"), seed=2, judge_accuracy=0.8, partitions=3)
    a, b = pq.read_table(one.url).to_pandas(), pq.read_table(three.url).to_pandas()
    assert a.equals(b)
    assert abs(float(np.mean(a["judge"] == a["label"])) - 0.8) < 0.015
    plain = pq.read_table(write_synthetic(MODEL, n=1000, out=str(tmp_path / "plain"), seed=2).url)
    assert plain.column_names == ["key", "score", "label"]  # no judge unless asked: old resources keep their bytes


def _run_seconds(url: str, out: str, *extra) -> float:
    started = time.perf_counter()
    code, _, err = cli("run", "--resource", url, "--out", out, "--oracle-column", "label", *extra)
    assert code == 0, err
    return time.perf_counter() - started


def test_a_judge_column_costs_at_most_half_again_at_a_million_items(tmp_path):
    """The judge's values come with the planned items' extraction: no extra pass over the resource."""
    res = write_synthetic(MODEL, n=1_000_000, out=str(tmp_path / "res"), seed=1, judge_accuracy=0.9)
    times = {"plain": [], "judge": []}
    for round_ in range(2):  # alternating, best of two each (the first pass also warms the page cache)
        times["plain"].append(_run_seconds(res.url, str(tmp_path / f"plain{round_}")))
        times["judge"].append(_run_seconds(res.url, str(tmp_path / f"judge{round_}"), "--judge-column", "judge"))
    plain, judge = min(times["plain"]), min(times["judge"])
    print(f"10^6 items: plain {plain:.2f} s, judge column {judge:.2f} s, ratio {judge / plain:.2f}, load {os.getloadavg()[0]:.1f}")
    assert judge <= 1.5 * plain


def test_annotators_outvote_the_judge_and_each_source_is_measured_against_gold(tmp_path):
    params = ev.EvaluationParams(confidence=0.95, gold_budget=30, seed=1, eps=0.1, window=20)
    planned = ev.make_plan(5_000, params)
    keys = planned.ranks * 3
    items = pa.table({"key": keys, "score": -planned.ranks.astype(float), "judge": np.full(keys.size, 0.8)})
    store = str(tmp_path / "store")
    audited = keys[planned.in_audit]
    import_labels(store, [label_file(tmp_path / "a.csv", audited[:10], [0] * 10)], annotator="ann")
    gold = [1] * 10 + [0] * 5 + ["cannot judge"] + [1] * (audited.size - 16)
    import_labels(store, [label_file(tmp_path / "g.csv", audited, gold)], role="gold", annotator="expert")
    got = ev.resolve_labels(items, store=store, judge_column="judge", audit=planned.in_audit)
    first = np.isin(keys, audited[:10])
    assert np.all(got.labels[first] == 0) and np.all(got.labels[~first] == 1)  # the judge (0.8) stands elsewhere
    assert got.judged.sum() == keys.size - 10 and not got.awaiting.any()  # the expert's "cannot judge" settles its item
    assert got.to_dict()["gold_audit"] == {"items": 30, "gold": 29, "gold_positives": 24, "cannot_judge": 1, "awaiting": 0}
    assert np.isnan(got.certified_gold[~planned.in_audit]).all() and np.isnan(got.certified_gold).sum() == keys.size - 29
    quality = got.verdict_quality(planned)
    assert (quality["annotators"]["compared"], quality["annotators"]["false_negative"]) == (10, 10)
    assert (quality["judge"]["compared"], quality["judge"]["false_positive"], quality["judge"]["true_positive"]) == (29, 5, 24)


def test_the_audit_awaits_gold_even_where_annotators_judged(tmp_path):
    params = ev.EvaluationParams(confidence=0.95, gold_budget=5, seed=2, eps=0.1, window=20)
    planned = ev.make_plan(2_000, params)
    items = pa.table({"key": planned.ranks, "score": -planned.ranks.astype(float)})
    store = str(tmp_path / "store")
    import_labels(store, [label_file(tmp_path / "a.csv", planned.ranks, [1] * planned.ranks.size)], annotator="ann")
    got = ev.resolve_labels(items, store=store, audit=planned.in_audit)
    assert np.array_equal(got.awaiting, planned.in_audit) and got.certified_gold is None
