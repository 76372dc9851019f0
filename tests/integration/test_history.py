"""Releases over time: certain changes, the error budget split over releases, the history command."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from tests.support.prefect_events import recorded_events

from prdist import paula_bounds, plan_paula, population
from prdist.cli import main
from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.history import HISTORY_COLUMNS, write_history
from prdist.dataflow.run.steps import extract_items, open_for_run, read_items, write_run
from prdist.dataflow.synth import write_synthetic
from prdist.history import certain_changes, default_ranks, release_confidence

STEADY = population.binormal(neg=(0.0, 1.0), pos=(1.5, 1.0), prevalence=0.3)
WORSE = population.binormal(neg=(0.0, 1.0), pos=(0.5, 1.0), prevalence=0.15)


def test_release_levels_spend_exactly_the_budget():
    spent = [1 - release_confidence(0.9, k) for k in range(1, 200_001)]
    assert sum(spent) == pytest.approx(0.1, rel=1e-4) and sum(spent) < 0.1
    assert spent == sorted(spent, reverse=True)


def test_a_change_is_certain_only_when_the_intervals_are_disjoint():
    got = certain_changes([0.5] * 5, [0.6] * 5, [0.3, 0.4, 0.55, 0.6, 0.61], [0.45, 0.5, 0.58, 0.7, 0.7])
    assert got.tolist() == ["down", "", "", "", "up"]  # touching intervals (0.5 vs 0.5) say nothing
    assert certain_changes([np.nan], [np.nan], [0.1], [0.2]).tolist() == [""]


def _release(model, n, seed, place, confidence, ranks):
    """One release: its bounds at ``ranks`` at its place's level, and its true precision there."""
    plan = plan_paula(n, eps=0.1, window=50)
    scores, labels = model.sample(n, seed=seed)
    in_rank_order = labels[np.argsort(-scores, kind="stable")].astype(float)
    b = paula_bounds(plan, in_rank_order[plan.ranks - 1], confidence=release_confidence(confidence, place))
    truth = np.cumsum(in_rank_order)[ranks - 1] / ranks
    return b.lower(ranks), b.upper(ranks), truth


def _series(models, n, seed, confidence):
    """The flags of one series and, for each, whether the truth agrees (as flat arrays)."""
    ranks = default_ranks([], n)
    flags, right, previous = [], [], None
    for place, model in enumerate(models, start=1):
        lower, upper, truth = _release(model, n, [seed, place], place, confidence, ranks)
        if previous is not None:
            flag = certain_changes(previous[0], previous[1], lower, upper)
            flags.append(flag)
            right.append(np.where(flag == "down", truth < previous[2], np.where(flag == "up", truth > previous[2], True)))
        previous = (lower, upper, truth)
    return np.concatenate(flags), np.concatenate(right)


@pytest.mark.slow  # a study of the flags' level over 200 series: 55 s at load 8-10
def test_flags_of_a_series_are_all_right_at_once_at_the_stated_level():
    """200 series of 5 releases (fresh labels each): a series with any wrong flag counts against.

    Two releases of one population differ in their realised precision, so flags may appear (near
    the top, where the plan labels every item, they are exact and right); a flag is wrong when the
    truth moved the other way or not at all.
    """
    confidence, series = 0.9, 200
    wrong = sum(not _series([STEADY] * 5, 20_000, s, confidence)[1].all() for s in range(series))
    # Nominal 10 %; the binomial 99.9 % quantile of 200 draws at 0.1 is 34.
    assert wrong <= 34, wrong


def test_a_real_drop_is_flagged_down_and_never_up():
    for s in range(10):
        flags, right = _series([STEADY, STEADY, WORSE], 20_000, s, 0.9)
        assert (flags[-4:] == "down").any() and right.all()


def _evaluate(resource, out, params, series=None):
    """One committed run through the evaluation steps, in this process."""
    opened = open_for_run(resource, oracle_column="label")
    planned = ev.make_plan(opened.n, params)
    staged = extract_items(opened, planned.ranks, client=None, staging=f"{out}/_staging/{opened.fingerprint[:20]}.parquet")
    extraction = read_items(staged)
    resolution = ev.resolve_labels(extraction.items, oracle_column="label")
    estimate = ev.estimate(planned, resolution.labels, params)
    return write_run(opened, planned, extraction, resolution, estimate, params, out=out, bands=None, series=series)


@pytest.fixture(scope="module")
def three_releases(tmp_path_factory):
    """Release 2 holds release 1's items cut into other files (a new release, the same precision);
    release 3 is markedly worse; one series."""
    root = tmp_path_factory.mktemp("history")
    params = ev.EvaluationParams(eps=0.1, window=50, confidence=0.95, oracle_column="label")
    runs, releases = str(root / "runs"), root / "releases"
    write_synthetic(STEADY, n=50_000, out=str(releases / "r1"), seed=1)
    write_synthetic(STEADY, n=50_000, out=str(releases / "r2"), seed=1, partitions=3)
    write_synthetic(WORSE, n=50_000, out=str(releases / "r3"), seed=3)
    outcomes = [_evaluate(str(releases / f"r{k}"), runs, params) for k in (1, 2, 3)]
    return runs, outcomes


def test_history_flags_the_drop_and_only_the_drop(three_releases, tmp_path):
    runs, outcomes = three_releases
    out, table = write_history(runs, out=str(tmp_path / "h"))
    assert tuple(table.columns) == HISTORY_COLUMNS
    by_run = {run: frame for run, frame in table.groupby("run_id")}
    ids = [o.manifest["run_id"] for o in outcomes]
    assert list(dict.fromkeys(table["run_id"])) == ids  # oldest first
    assert (by_run[ids[0]]["change"] == "").all() and (by_run[ids[1]]["change"] == "").all()
    assert (by_run[ids[2]]["change"] == "down").any() and not (by_run[ids[2]]["change"] == "up").any()
    # Release 1's bounds are at its place's level (wider than the run's own 0.95), never narrower.
    own = pd.read_parquet(f"{outcomes[0].url}/bounds.parquet").set_index("rank")
    first = by_run[ids[0]].set_index("rank")
    shared = first.index.intersection(own.index)
    assert len(shared) and (first.loc[shared, "precision_lower"] <= own.loc[shared, "precision_lower"] + 1e-12).all()
    written = pd.read_parquet(f"{out}/history.parquet")
    pd.testing.assert_frame_equal(written.drop(columns="created"), table.drop(columns="created"), check_dtype=False)
    page = open(f"{out}/history.html", encoding="utf-8").read()
    assert "certain drop" in page and page.count("<svg") >= 3 and ids[2] in page


def test_history_command(three_releases, tmp_path, capsys):
    runs, outcomes = three_releases
    code = main(["history", "--runs", runs, "--ranks", "100,1000", "--out", str(tmp_path / "h")])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and out[-1] == str(tmp_path / "h")
    table = pd.read_parquet(tmp_path / "h" / "history.parquet")
    assert sorted(table["rank"].unique()) == [100, 1000] and table["run_id"].nunique() == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ranks", "10,x"], "--ranks must be ranks"),
        (["--ranks", "0"], "--ranks must be ranks"),
        (["--series", "nope"], "belongs to series 'nope'"),
    ],
)
def test_history_bad_input(three_releases, tmp_path, capsys, argv, message):
    runs, _ = three_releases
    assert main(["history", "--runs", runs, "--out", str(tmp_path / "h"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "h").exists()


def test_history_of_one_series_and_of_every_series_never_overwrite_each_other(three_releases, capsys):
    runs, outcomes = three_releases
    series = outcomes[0].manifest["series"]
    assert main(["history", "--runs", runs]) == 0
    every = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["history", "--runs", runs, "--series", series, "--ranks", "100"]) == 0
    one = capsys.readouterr().out.strip().splitlines()[-1]
    assert every == f"{runs}/_history" and one.startswith(f"{runs}/_history/") and one != every
    assert sorted(pd.read_parquet(f"{one}/history.parquet")["rank"].unique()) == [100]
    assert len(pd.read_parquet(f"{every}/history.parquet")["rank"].unique()) > 1  # not overwritten by the second
    shutil.rmtree(every)


def test_history_of_a_missing_root(tmp_path, capsys):
    assert main(["history", "--runs", str(tmp_path / "none")]) == 2
    assert "No run directory root" in capsys.readouterr().err


def test_a_release_evaluated_again_counts_once(three_releases, tmp_path):
    """A rerun of release 2 with other parameters (labels arrived, a new run id) keeps its place."""
    runs, outcomes = three_releases
    resource = json.load(open(f"{outcomes[1].url}/manifest.json"))["input"]["url"]
    again = _evaluate(resource, runs, ev.EvaluationParams(eps=0.1, window=50, confidence=0.95, oracle_column="label", targets=(0.9,)))
    try:
        assert again.manifest["run_id"] != outcomes[1].manifest["run_id"] and again.manifest["release"]["place"] == 2
        _, table = write_history(runs, out=str(tmp_path / "h"))
        assert table["run_id"].nunique() == 3 and again.manifest["run_id"] in set(table["run_id"])
    finally:
        shutil.rmtree(again.url.removeprefix("file://"))


def test_copied_runs_keep_their_places_and_changes(three_releases, tmp_path):
    """Releases 2 and 3 copied to another root: the same places, bounds and changes (a place once
    came from the order of the runs present, so the copy made release 3 the second, at another level)."""
    runs, outcomes = three_releases
    assert [o.manifest["release"]["place"] for o in outcomes] == [1, 2, 3]
    assert [o.manifest["release"]["name"] for o in outcomes] == ["r1", "r2", "r3"]
    _, whole = write_history(runs, out=str(tmp_path / "whole"))
    copy = tmp_path / "copy"
    for outcome in outcomes[:0:-1]:  # copied newest first: file times say nothing about the order
        shutil.copytree(outcome.url.removeprefix("file://"), copy / outcome.manifest["run_id"])
    _, copied = write_history(str(copy), out=str(tmp_path / "copied"))
    ids = [o.manifest["run_id"] for o in outcomes[1:]]
    assert list(dict.fromkeys(copied["run_id"])) == ids and list(dict.fromkeys(copied["place"])) == [2, 3]
    kept = whole[whole["run_id"].isin(ids)].reset_index(drop=True)
    columns = ["place", "release", "run_id", "rank", "precision_lower", "precision_upper"]
    pd.testing.assert_frame_equal(copied[columns], kept[columns])
    assert (copied[copied["run_id"] == ids[1]]["change"] == kept[kept["run_id"] == ids[1]]["change"].to_numpy()).all()
    page = open(tmp_path / "copied" / "history.html", encoding="utf-8").read()
    assert ">2. r2</text>" in page and ">3. r3</text>" in page  # the x-axis names the releases at their places


def test_runs_group_by_the_series_they_were_given(three_releases, tmp_path):
    """Two series under one runs root: the releases given --series nightly-kb form their own line."""
    runs, outcomes = three_releases
    releases = [json.load(open(f"{o.url}/manifest.json"))["input"]["url"] for o in outcomes]
    default = outcomes[0].manifest["series"]
    assert default == releases[0].rsplit("/", 1)[0] and {o.manifest["series"] for o in outcomes} == {default}
    params = ev.EvaluationParams(eps=0.1, window=50, confidence=0.95, oracle_column="label")
    named = [_evaluate(url, runs, params, series="nightly-kb") for url in (releases[2], releases[0])]
    try:
        assert named[0].manifest["series"] == "nightly-kb"
        # Another series, another run: the same release and labels do not reuse the default series' run.
        assert named[0].manifest["run_id"] != outcomes[2].manifest["run_id"]
        # Naming the default series is not naming another one: the run (and its id) is the same.
        assert _evaluate(releases[0], runs, params, series=default).manifest["run_id"] == outcomes[0].manifest["run_id"]
        _, table = write_history(runs, out=str(tmp_path / "all"))
        assert set(table["series"]) == {default, "nightly-kb"}
        _, table = write_history(runs, out=str(tmp_path / "h"), series="nightly-kb")
        ids = [o.manifest["run_id"] for o in named]
        assert list(dict.fromkeys(table["run_id"])) == ids and set(table["series"]) == {"nightly-kb"}
        # In this series the worse release came first: going back to the steady one is a certain rise.
        later = table[table["run_id"] == ids[1]]["change"]
        assert (later == "up").any() and not (later == "down").any()
    finally:
        for outcome in named:
            shutil.rmtree(outcome.url.removeprefix("file://"))


def test_the_run_command_records_its_series(tmp_path):
    from prdist.dataflow.run.steps import committed_run

    resource = str(tmp_path / "releases" / "r1")
    write_synthetic(STEADY, n=5_000, out=resource, seed=4)
    argv = ["run", "--resource", resource, "--oracle-column", "label", "--eps", "0.2", "--window", "10", "--out", str(tmp_path / "runs")]
    assert main([*argv, "--series", "kb"]) == 0
    (manifest,) = [json.load(open(p)) for p in (tmp_path / "runs").glob("*/manifest.json")]
    assert manifest["series"] == "kb"
    # The command's early check computes the flow's run id: the run is found again without running.
    params = ev.EvaluationParams(eps=0.2, window=10, confidence=0.95, oracle_column="label")
    opened = open_for_run(resource, oracle_column="label")
    assert committed_run(opened, params, out=str(tmp_path / "runs"), labels=None, series="kb").manifest["run_id"] == manifest["run_id"]
    assert committed_run(opened, params, out=str(tmp_path / "runs"), labels=None) is None
    assert main([*argv, "--series", " "]) == 2


# ---------------------------------------------------------------------------------------------
# Events (flows/events.py), recorded by Prefect's own AssertingEventsClient; on a real server in
# tests/integration/test_deploy_server.py.


@pytest.fixture
def events(monkeypatch):
    with recorded_events(monkeypatch) as sent:
        yield sent


@pytest.fixture
def fresh_runs(three_releases, tmp_path):
    """The three releases' runs root, copied without the ledger of the events sent from it."""
    runs, outcomes = three_releases
    shutil.copytree(runs, tmp_path / "runs", ignore=shutil.ignore_patterns("_events"))
    return str(tmp_path / "runs"), outcomes


def test_a_run_announces_itself_and_the_certain_change_it_makes(fresh_runs, events, tmp_path):
    from flows.events import announce_evaluation

    runs, outcomes = fresh_runs
    announce_evaluation(outcomes[2], method="paula", runs=runs)
    completed, changed = events()
    assert completed.event == "prdist.run.completed" and completed.resource.id == f"prdist.run.{outcomes[2].manifest['run_id']}"
    assert completed.payload["n"] == 50_000 and completed.payload["cutoffs"] == outcomes[2].manifest["cutoffs"]
    assert completed.payload["report"] == f"{outcomes[2].url}/report.html" and completed.payload["awaiting_labels"] == 0
    assert changed.event == "prdist.precision.changed" and changed.resource["prdist.direction"] == "down"
    assert changed.resource.id == f"prdist.series.{outcomes[2].manifest['series']}"
    assert changed.payload["ranks"] and {c["change"] for c in changed.payload["changes"]} == {"down"}
    # Not the newest release of its series (evaluated again): no change to announce.
    announce_evaluation(outcomes[1], method="paula", runs=runs)
    assert [e.event for e in events()[2:]] == ["prdist.run.completed"]
    # Once per run and per change: a rerun that finds the run, and the history, send nothing more.
    assert announce_evaluation(outcomes[2], method="paula", runs=runs) == []
    assert main(["history", "--runs", runs, "--out", str(tmp_path / "h")]) == 0
    assert len(events()) == 3
    # The ledger records what was sent, under the events' own ids.
    ledger = {(r := json.loads(p.read_text()))["id"]: r["event"] for p in (tmp_path / "runs" / "_events").glob("*.json")}
    assert ledger == {str(e.id): e.event for e in events()}


def test_history_announces_the_newest_changes_once(fresh_runs, events, tmp_path):
    runs, outcomes = fresh_runs
    for _ in range(2):  # however often it runs
        assert main(["history", "--runs", runs, "--out", str(tmp_path / "h")]) == 0
    (changed,) = events()
    assert changed.event == "prdist.precision.changed" and changed.payload["run_id"] == outcomes[2].manifest["run_id"]
    table = pd.read_parquet(tmp_path / "h" / "history.parquet")
    newest = table[(table["run_id"] == outcomes[2].manifest["run_id"]) & (table["change"] != "")]
    assert changed.payload["ranks"] == newest["rank"].tolist()


def test_label_imports_are_announced_without_credentials(events, tmp_path):
    from flows.events import announce_labels

    (tmp_path / "done.csv").write_text("key,label\na,1\nb,0\n")
    store = tmp_path / "labels"
    assert main(["labels", "import", "--store", str(store), str(tmp_path / "done.csv")]) == 0
    announce_labels("https://alice:s3cr3t@labels.example.org/store?X-Amz-Signature=abc", count=1, keys=1, files=1)
    imported, remote = events()
    assert imported.event == "prdist.labels.imported" and imported.resource.id == f"prdist.labels.{store}"
    assert imported.payload == {"store": str(store), "count": 2, "keys": 2, "files": 1}
    assert "s3cr3t" not in remote.model_dump_json() and "abc" not in remote.model_dump_json()


def test_nothing_is_sent_without_a_prefect_api(fresh_runs, tmp_path):
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker

    from flows.events import announce_evaluation, events_enabled

    runs, outcomes = fresh_runs
    AssertingEventsClient.reset()
    EventsWorker.set_client_override(AssertingEventsClient)
    try:
        assert not events_enabled()
        assert announce_evaluation(outcomes[2], method="paula", runs=runs) == []
        assert main(["history", "--runs", runs, "--out", str(tmp_path / "h")]) == 0
        assert AssertingEventsClient.all == []
        assert not (tmp_path / "runs" / "_events").exists()  # nothing sent, nothing recorded
    finally:
        EventsWorker.set_client_override(None)


def test_runs_this_version_cannot_bound_again_are_passed_over(three_releases, tmp_path):
    # An older version made deterministic bounds with bands at a fixed 95 %; this one refuses that
    # pair (no common level), so it cannot bound the run again: passed over and counted.
    from prdist.dataflow.history import read_runs

    runs, outcomes = three_releases
    old = tmp_path / "runs" / outcomes[0].manifest["run_id"]
    shutil.copytree(outcomes[0].url.removeprefix("file://"), old)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["params"].update(bands=True, confidence=None, delta=0.05, seed=0)
    (old / "manifest.json").write_text(json.dumps(manifest))
    assert read_runs(str(tmp_path / "runs")) == ([], 1)
