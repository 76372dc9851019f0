"""The compare-systems Prefect flow and ``prdist compare`` end to end, on the real ReVerb data.

The flow runs once on Prefect (the session's test API) and once in-process, with the same numbers;
the command line runs in-process, as with no Prefect API configured. Dask runs on the session's
in-process cluster (``--scheduler`` its address). The dataflow itself is tested against
the in-memory core in test_compare.py; here the question is whether the flow and the command wire
it correctly: exit codes, the AwaitingLabels state, the annotation task, the label round trip,
and the same numbers as the core.
"""

from __future__ import annotations

import os

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from prdist.cli import main  # noqa: E402
from prdist.dataflow import compare as cmp  # noqa: E402
from prdist.dataflow.labels.importer import import_labels  # noqa: E402
from prdist.importance import SamplingDistribution, SystemOutput, draw_joint_sample, estimate_precision  # noqa: E402
from tests.support.compare_runs import compare_in_process  # noqa: E402
from tests.support.reverb_data import REVERB_SYSTEMS  # noqa: E402
from tests.support.reverb_parquet import REVERB, reverb_frames, write_reverb_systems  # noqa: E402

pytestmark = pytest.mark.skipif(not (REVERB / "labels.txt").is_file(), reason=f"the shared ReVerb data is not at {REVERB}")


@pytest.fixture
def reverb(tmp_path):
    systems, label_file = write_reverb_systems(tmp_path / "data", files=2)
    return systems, label_file


def _fill_task(task_url: str, path) -> str:
    """The annotator's answer: the task with every label filled in from the ReVerb labels."""
    _, labels = reverb_frames()
    task = pd.read_csv(task_url, dtype={"key": str}, keep_default_na=False)
    task["label"] = task["key"].map(labels.set_index("key")["label"])
    assert task["label"].notna().all()
    task.to_csv(path, index=False)
    return str(path)


def test_flow_awaits_labels_then_completes_with_the_same_sample(tmp_path, reverb, prefect_harness, dask_client):
    from flows.compare_systems import compare_systems

    systems, _ = reverb
    store, out = str(tmp_path / "store"), str(tmp_path / "runs")
    kwargs = dict(systems=systems, budget=120, out=out, labels=store, seed=3, distribution="top_k", k=200,
                  scheduler=dask_client.scheduler.address)
    state = compare_systems(**kwargs, return_state=True)
    assert state.is_completed() and state.name == "AwaitingLabels"
    awaiting = state.result()
    assert os.path.exists(os.path.join(awaiting, "annotation_task.csv"))
    assert not os.path.exists(os.path.join(awaiting, "compare.parquet"))

    import_labels(store, [_fill_task(os.path.join(awaiting, "annotation_task.csv"), tmp_path / "answers.csv")])

    # The rerun draws the same seeded sample again and now finds every label.
    state = compare_systems(**kwargs, return_state=True)
    assert state.is_completed() and state.name == "Completed"
    frame = pd.read_parquet(os.path.join(state.result(), "compare.parquet"))

    # The same numbers as the dataflow called directly.
    params = cmp.CompareParams(budget=120, seed=3, distribution=SamplingDistribution.top_k(200))
    direct = compare_in_process(systems, out=str(tmp_path / "direct"), params=params, labels=store)
    pd.testing.assert_frame_equal(frame, pd.read_parquet(os.path.join(direct.url, "compare.parquet")))


def _command(systems, *, labels, out, scheduler, extra=()):
    argv = ["compare"]
    for name, url in systems.items():
        argv += ["--system", f"{name}={url}"]
    return [*argv, "--labels", labels, "--budget", "600", "--seed", "0", "--out", out, "--scheduler", scheduler, *extra]


def test_reverb_through_the_command_line(tmp_path, reverb, dask_client, capsys):
    systems, label_file = reverb
    scheduler = dask_client.scheduler.address
    store = str(tmp_path / "store")
    import_labels(store, [label_file])

    assert main(_command(systems, labels=store, out=str(tmp_path / "runs"), scheduler=scheduler)) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    run = lines[-1]
    frame = pd.read_parquet(os.path.join(run, "compare.parquet"))
    assert frame["system"].tolist() == list(REVERB_SYSTEMS)
    assert (frame["n_samples"] == 100).all()
    assert np.isfinite(frame[["precision", "precision_se"]]).all().all()
    assert ((frame["precision_ci_low"] < frame["precision"]) & (frame["precision"] < frame["precision_ci_high"])).all()
    # Joint intervals are narrower than those of each system's own 100 draws (test_reverb.py
    # shows this holds on average; here for the one seed the command ran).
    assert (frame["precision_se"] < frame["simple_precision_se"]).all()
    assert any(line.strip().startswith("reverb ") for line in lines)

    # The in-memory core on the same rows and seed gives the same numbers.
    frames, labels = reverb_frames()
    core_systems = [SystemOutput.from_scores(n, f["key"].to_numpy(), f["score"].to_numpy()) for n, f in frames.items()]
    est = estimate_precision(draw_joint_sample(core_systems, 100, seed=0).with_labels(labels["key"], labels["label"]))
    np.testing.assert_allclose(frame["precision"], est.precision, rtol=1e-10)
    np.testing.assert_allclose(frame["precision_se"], est.se, rtol=1e-10)

    # A store without a fifth of the drawn items' labels: exit 3, the task lists exactly those.
    drawn = sorted(set(pd.read_parquet(os.path.join(run, "sample.parquet"))["key"]))
    dropped = set(drawn[::5])
    partial = labels[~labels["key"].isin(dropped)]
    partial_file = tmp_path / "partial.csv"
    partial.to_csv(partial_file, index=False)
    partial_store = str(tmp_path / "partial-store")
    import_labels(partial_store, [str(partial_file)])
    out2 = str(tmp_path / "runs2")
    assert main(_command(systems, labels=partial_store, out=out2, scheduler=scheduler)) == 3
    captured = capsys.readouterr()
    awaiting = captured.out.strip().splitlines()[-1]
    assert f"{len(dropped)} drawn items await labels" in captured.err
    task = pd.read_csv(os.path.join(awaiting, "annotation_task.csv"), dtype={"key": str}, keep_default_na=False)
    assert set(task["key"]) == dropped

    # Import the annotator's answers and rerun: complete, and identical to the first run.
    import_labels(partial_store, [_fill_task(os.path.join(awaiting, "annotation_task.csv"), tmp_path / "answers.csv")])
    assert main(_command(systems, labels=partial_store, out=out2, scheduler=scheduler)) == 0
    rerun = capsys.readouterr().out.strip().splitlines()[-1]
    assert rerun != awaiting
    pd.testing.assert_frame_equal(pd.read_parquet(os.path.join(rerun, "compare.parquet")), frame)

    # Recall: an "exhaustive" scope of the first 100 sentences, plus five correct facts that no
    # system found; the pool holds the rest, so θ̂ = (correct in scope) / (that + 5).
    scope = labels[labels["key"].str.split("\t").str[0].astype(int) < 100]
    unfound = pd.DataFrame({"key": [f"99{i}\tno\tsystem\tfound this" for i in range(5)], "label": 1})
    exhaustive = tmp_path / "exhaustive.csv"
    pd.concat([scope, unfound]).to_csv(exhaustive, index=False)
    assert main(_command(systems, labels=store, out=str(tmp_path / "runs3"), scheduler=scheduler,
                         extra=["--exhaustive", str(exhaustive)])) == 0
    with_recall = pd.read_parquet(os.path.join(capsys.readouterr().out.strip().splitlines()[-1], "compare.parquet"))
    found = int(scope["label"].sum())
    theta = found / (found + 5)
    np.testing.assert_allclose(with_recall["recall"], theta * with_recall["pooled_recall"], rtol=1e-12)
    pd.testing.assert_series_equal(with_recall["precision"], frame["precision"])
    assert (with_recall["recall_se"] > 0).all()


def test_command_line_missing_system_is_bad_input(tmp_path, reverb, dask_client, capsys):
    systems, _ = reverb
    systems = {**systems, "gone": str(tmp_path / "no-such-system")}
    (tmp_path / "store").mkdir()  # an empty store: the missing system is what is refused
    code = main(_command(systems, labels=str(tmp_path / "store"), out=str(tmp_path / "runs"),
                         scheduler=dask_client.scheduler.address))
    # The command's own message is its last line, and one line.
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    assert last.startswith("prdist: error:") and "no-such-system" in last and "no such file" in last
