"""Tests of prdist.dataflow.compare: several systems sharing labels, on Parquet and Dask.

Oracle: the in-memory core (prdist.importance) on the same rows. draw_joint_sample on the rows of
every system in storage order must give the same draws, the same membership p_i(x), the same
overlaps and support patterns and the same estimates as the dataflow, whatever the files, row
groups, tasks and buckets the rows are cut into. Then the label store round trip (missing labels,
annotation task, import, rerun), recall with an exhaustive sample, input errors, and one round
trip on the real SeaweedFS S3 server. The flow and the command line are in test_compare_flow.py.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prdist.cli import main, parse_system
from prdist.dataflow import compare as cmp
from prdist.dataflow.io import parquet as parquet_module
from prdist.dataflow.io import parquet_tasks
from prdist.dataflow.labels.importer import import_labels
from prdist.errors import AwaitingLabels, DataError, InputError, ParameterError
from prdist.importance import (
    SamplingDistribution,
    SystemOutput,
    draw_joint_sample,
    estimate_precision,
    estimate_recall,
    pool_membership,
)
from tests.support.compare_runs import compare_in_process
from tests.support.reverb_parquet import REVERB, reverb_frames, write_frame, write_reverb_systems

needs_reverb = pytest.mark.skipif(not (REVERB / "labels.txt").is_file(), reason=f"the shared ReVerb data is not at {REVERB}")

DISTRIBUTIONS = {
    "uniform": SamplingDistribution.uniform(),
    "top_k": SamplingDistribution.top_k(40),
    "score_power": SamplingDistribution.score_power(2.0),
}
# (files per system, rows per row group, rows per task, support items per bucket)
LAYOUTS = [(1, None, 1 << 22, 1 << 22), (3, 7, 20, 50), (4, 1, 5, 13)]


# --------------------------------------------------------------------------------------------
# Data and the in-memory oracle
# --------------------------------------------------------------------------------------------


def synthetic(seed: int, *, key_kind: str = "string", m: int = 3, universe: int = 300):
    """m overlapping systems over a shared universe, scores with many ties and some zeros, labels for all."""
    rng = np.random.default_rng(seed)
    keys = np.arange(10_000, 10_000 + universe)
    keys = keys if key_kind == "int" else np.array([f"item-{k}" for k in keys], dtype=object)
    truth = rng.random(universe) < 0.6
    frames = {}
    for j in range(m):
        chosen = np.sort(rng.choice(universe, size=int(rng.integers(80, 160)), replace=False))
        rng.shuffle(chosen)  # storage order is not rank order
        score = np.round(np.clip(0.3 * truth[chosen] + rng.random(chosen.size), 0, 1), 1)  # ties, zeros
        frames[f"sys{j}"] = pd.DataFrame({"key": keys[chosen], "score": score})
    labels = pd.DataFrame({"key": keys, "label": truth.astype(np.int8)})
    return frames, labels


def write_systems(frames, root, *, files=1, row_group_size=None, storage_options=None) -> dict[str, str]:
    return {
        name: write_frame(frame, f"{root}/{name}", files=files, row_group_size=row_group_size, storage_options=storage_options)
        for name, frame in frames.items()
    }


def core_sample(frames, distribution, sizes, seed):
    systems = [SystemOutput.from_scores(name, f["key"].to_numpy(), f["score"].to_numpy(), distribution) for name, f in frames.items()]
    return systems, draw_joint_sample(systems, [int(n) for n in sizes], seed=seed)


def assert_same_sample(drawn_sample, core):
    """Identical draws and membership; sums of floats agree to rounding (the core renormalises p)."""
    assert drawn_sample.systems == core.systems
    assert np.array_equal(drawn_sample.keys, core.keys)
    assert np.array_equal(drawn_sample.counts, core.counts)
    assert np.array_equal(drawn_sample.probabilities > 0, core.probabilities > 0)
    np.testing.assert_allclose(drawn_sample.probabilities, core.probabilities, rtol=1e-12, atol=0)
    np.testing.assert_allclose(drawn_sample.overlaps, core.overlaps, rtol=1e-12, atol=0)
    assert np.array_equal(drawn_sample.support_patterns, core.support_patterns)


def assert_same_estimates(drawn_sample, core, labels):
    a = estimate_precision(drawn_sample.with_labels(labels["key"], labels["label"]))
    b = estimate_precision(core.with_labels(labels["key"], labels["label"]))
    for name in ("precision", "variance", "simple_precision", "simple_variance", "weights"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-15, err_msg=name)


def dataflow_sample(urls, params, *, client=None, partition_rows=1 << 22, bucket_rows=1 << 22, extra_keys=None):
    systems = cmp.open_systems(urls)
    return cmp.draw_sample(systems, params, client=client, partition_rows=partition_rows, bucket_rows=bucket_rows,
                           extra_keys=extra_keys)


# --------------------------------------------------------------------------------------------
# The dataflow equals the core
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("layout", LAYOUTS, ids=["one-file", "files-and-row-groups", "row-per-group"])
def test_dataflow_equals_core(tmp_path, kind, layout):
    files, row_group_size, partition_rows, bucket_rows = layout
    frames, labels = synthetic(7)
    urls = write_systems(frames, tmp_path, files=files, row_group_size=row_group_size)
    params = cmp.CompareParams(budget=150, seed=11, distribution=DISTRIBUTIONS[kind])
    drawn = dataflow_sample(urls, params, partition_rows=partition_rows, bucket_rows=bucket_rows)
    _, core = core_sample(frames, DISTRIBUTIONS[kind], drawn.sizes, seed=11)
    assert_same_sample(drawn.sample, core)
    assert_same_estimates(drawn.sample, core, labels)
    if layout[1] == 1:
        assert drawn.stats["buckets"] > 1 and drawn.stats["join_tasks"] > 3 * files


@pytest.mark.parametrize("kind", sorted(DISTRIBUTIONS))
def test_dask_cluster_equals_core_with_integer_keys(tmp_path, dask_client, kind):
    frames, labels = synthetic(3, key_kind="int")
    urls = write_systems(frames, tmp_path, files=3, row_group_size=9)
    params = cmp.CompareParams(budget=90, seed=5, distribution=DISTRIBUTIONS[kind], allocation="proportional")
    drawn = dataflow_sample(urls, params, client=dask_client, partition_rows=30, bucket_rows=40)
    _, core = core_sample(frames, DISTRIBUTIONS[kind], drawn.sizes, seed=5)
    assert drawn.sample.keys.dtype == np.int64
    assert_same_sample(drawn.sample, core)
    assert_same_estimates(drawn.sample, core, labels)


@settings(max_examples=12, deadline=None)
@given(files=st.integers(1, 5), row_group_size=st.integers(1, 40), partition_rows=st.integers(1, 100),
       bucket_rows=st.integers(10, 400), seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(sorted(DISTRIBUTIONS)))
def test_draws_do_not_depend_on_the_partitioning(tmp_path_factory, files, row_group_size, partition_rows, bucket_rows, seed, kind):
    frames, _ = synthetic(1)
    params = cmp.CompareParams(budget=60, seed=seed, distribution=DISTRIBUTIONS[kind])
    base = tmp_path_factory.mktemp("one")
    reference = dataflow_sample(write_systems(frames, base), params).sample
    cut = dataflow_sample(write_systems(frames, tmp_path_factory.mktemp("cut"), files=files, row_group_size=row_group_size),
                          params, partition_rows=partition_rows, bucket_rows=bucket_rows).sample
    assert np.array_equal(cut.keys, reference.keys) and np.array_equal(cut.counts, reference.counts)
    np.testing.assert_allclose(cut.probabilities, reference.probabilities, rtol=1e-12, atol=0)
    np.testing.assert_allclose(cut.overlaps, reference.overlaps, rtol=1e-12, atol=0)
    assert np.array_equal(cut.support_patterns, reference.support_patterns)


@needs_reverb
def test_dataflow_equals_core_on_reverb(tmp_path, dask_client):
    frames, labels = reverb_frames(labeled_only=False)
    urls = write_systems(frames, tmp_path, files=2, row_group_size=64)
    params = cmp.CompareParams(budget=600, seed=2)
    drawn = dataflow_sample(urls, params, client=dask_client, partition_rows=128, bucket_rows=1000)
    _, core = core_sample(frames, params.distribution, drawn.sizes, seed=2)
    assert_same_sample(drawn.sample, core)


def test_uniform_draws_read_only_the_row_groups_holding_them(tmp_path, monkeypatch):
    frames, _ = synthetic(2, m=1, universe=400)
    n = len(frames["sys0"])
    urls = write_systems(frames, tmp_path, row_group_size=10)
    systems = cmp.open_systems(urls)
    weights = cmp.system_weights(systems[0], SamplingDistribution.uniform())
    read = []
    original = parquet_tasks.read_group

    def spy(parquet, index, columns, *, display):
        read.append((index, tuple(columns)))
        return original(parquet, index, columns, display=display)

    monkeypatch.setattr(parquet_tasks, "read_group", spy)
    keys, _ = cmp.draw_items(systems[0], weights, 5, np.random.default_rng(4))
    # The draws are rows floor(u N) of the same uniforms; row r lives in row group r // 10.
    rows = np.floor(np.random.default_rng(4).random(5) * n).astype(int)
    assert keys.tolist() == frames["sys0"]["key"].to_numpy()[rows].tolist()
    assert sorted(read) == sorted((g, ("key",)) for g in set((rows // 10).tolist()))
    assert weights.bytes_read == 0  # row counts from the metadata alone


# --------------------------------------------------------------------------------------------
# Budget split and parameters
# --------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 10**9), min_size=1, max_size=8), extra=st.integers(0, 10_000),
       allocation=st.sampled_from(cmp.ALLOCATIONS))
def test_allocation_spends_the_budget_and_gives_two_to_everyone(sizes, extra, allocation):
    budget = 2 * len(sizes) + extra
    out = cmp.allocate_budget(sizes, budget, allocation)
    assert out.sum() == budget and (out >= 2).all()
    if allocation == "even":
        assert out.max() - out.min() <= 1
    else:
        # Largest remainders: every system within one draw of its exact proportional share.
        share = 2 + extra * np.asarray(sizes, float) / sum(sizes)
        assert np.all(np.abs(out - share) < 1)


def test_budget_below_two_per_system_is_refused():
    with pytest.raises(ParameterError, match="at least 2 draws per system"):
        cmp.allocate_budget([5, 5, 5], 5)
    with pytest.raises(ParameterError, match="'budget'"):
        cmp.CompareParams(budget=1)
    with pytest.raises(ParameterError, match="'allocation'"):
        cmp.CompareParams(budget=10, allocation="greedy")


@pytest.mark.parametrize("text", ["reverb", "=s3://x", "reverb=", "a b=s3://x", "-x=/tmp"])
def test_malformed_system_options_are_refused(text):
    with pytest.raises(InputError):
        parse_system(text)


# --------------------------------------------------------------------------------------------
# Input errors
# --------------------------------------------------------------------------------------------


def test_duplicate_keys_are_found_by_the_shuffle(tmp_path):
    frame = pd.DataFrame({"key": ["a", "b", "c", "b"], "score": [0.9, 0.8, 0.7, 0.1]})
    urls = {"dup": write_frame(frame, str(tmp_path / "dup"), row_group_size=2), "ok": write_frame(frame.iloc[:3], str(tmp_path / "ok"))}
    # Enough draws that "b" is drawn, found twice by the semi-join; or else twice by a bucket.
    with pytest.raises(DataError, match="'b' occurs more than once in system 'dup'"):
        dataflow_sample(urls, cmp.CompareParams(budget=40, seed=0), bucket_rows=1)


def test_systems_must_type_keys_alike(tmp_path):
    urls = {
        "ints": write_frame(pd.DataFrame({"key": [1, 2], "score": [0.5, 0.4]}), str(tmp_path / "i")),
        "text": write_frame(pd.DataFrame({"key": ["1", "2"], "score": [0.5, 0.4]}), str(tmp_path / "t")),
    }
    with pytest.raises(DataError, match="type their keys differently"):
        cmp.open_systems(urls)
    with pytest.raises(ParameterError, match="given twice"):
        cmp.open_systems([("a", urls["ints"]), ("a", urls["ints"])])


def test_distribution_errors(tmp_path):
    frame = pd.DataFrame({"key": ["a", "b", "c"], "score": [0.5, -0.1, 0.2]})
    system = cmp.open_systems({"neg": write_frame(frame, str(tmp_path / "neg"))})[0]
    with pytest.raises(ParameterError, match="k = 4 needs at least k items, and system 'neg' has 3"):
        cmp.system_weights(system, SamplingDistribution.top_k(4))
    with pytest.raises(DataError, match="non-negative scores"):
        cmp.system_weights(system, SamplingDistribution.score_power(1.0))


def test_missing_system_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        cmp.open_systems({"gone": str(tmp_path / "nothing-here")})


# --------------------------------------------------------------------------------------------
# Labels, annotation task, run directory
# --------------------------------------------------------------------------------------------


def _store_with(tmp_path, labels: pd.DataFrame, name: str) -> str:
    store = str(tmp_path / name)
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.Table.from_pandas(labels, preserve_index=False), path)
    import_labels(store, [str(path)])
    return store


def test_missing_labels_then_import_then_complete(tmp_path):
    frames, labels = synthetic(9)
    urls = write_systems(frames, tmp_path / "systems", files=2)
    params = cmp.CompareParams(budget=120, seed=4)
    out = str(tmp_path / "runs")
    half = labels.sample(frac=0.5, random_state=0)
    store = _store_with(tmp_path, half, "store")

    first = compare_in_process(urls, out=out, params=params, labels=store)
    sample = pd.read_parquet(os.path.join(first.url, "sample.parquet"))
    drawn_keys = set(sample["key"])
    expected_missing = drawn_keys - set(half["key"])
    assert first.missing == len(expected_missing) > 0
    assert first.manifest["awaiting_labels"] and not os.path.exists(os.path.join(first.url, "compare.parquet"))
    task = pd.read_csv(first.task, dtype={"key": str}, keep_default_na=False)
    assert set(task["key"]) == expected_missing
    # Each task row names exactly the systems that output the key, with their scores.
    for row in task.itertuples():
        holders = [name for name, f in frames.items() if row.key in set(f["key"])]
        assert row.systems.split(";") == holders
        for name in frames:
            cell = getattr(row, f"score_{name}")
            if name in holders:
                assert float(cell) == frames[name].set_index("key").loc[row.key, "score"]
            else:
                assert cell == ""
    with open(first.task.replace(".csv", ".jsonl")) as fh:
        assert len([json.loads(line) for line in fh]) == first.missing

    # The annotator fills the task in; the import answers every system at once.
    task["label"] = task["key"].map(labels.set_index("key")["label"])
    filled = tmp_path / "filled.csv"
    task.to_csv(filled, index=False)
    import_labels(store, [str(filled)])
    second = compare_in_process(urls, out=out, params=params, labels=store)
    assert second.missing == 0 and second.url != first.url
    frame = pd.read_parquet(os.path.join(second.url, "compare.parquet"))
    assert list(frame.columns[:8]) == ["system", "precision", "precision_se", "precision_ci_low", "precision_ci_high", "recall", "recall_se", "n_samples"]
    assert frame["system"].tolist() == list(frames) and frame["n_samples"].sum() == 120
    assert frame["recall"].isna().all() and frame["pooled_recall"].notna().all()
    assert any("recall is NaN" in note for note in second.manifest["diagnostics"]["notes"])

    # The same estimates as the core on the same draws and labels.
    systems, core = core_sample(frames, params.distribution, frame["n_samples"].to_numpy(), seed=4)
    est = estimate_precision(core.with_labels(labels["key"], labels["label"]))
    np.testing.assert_allclose(frame["precision"], est.precision, rtol=1e-10)
    np.testing.assert_allclose(frame["precision_ci_low"], est.ci_low, rtol=1e-10)
    np.testing.assert_allclose(frame["precision_ci_high"], est.ci_high, rtol=1e-10)

    committed = os.stat(os.path.join(second.url, "manifest.json")).st_mtime_ns
    again = compare_in_process(urls, out=out, params=params, labels=store)
    assert again.url == second.url and os.stat(os.path.join(again.url, "manifest.json")).st_mtime_ns == committed


def with_item_columns(frames):
    """The systems of :func:`synthetic` with what an annotator reads: ``text`` (each system words it
    its own way), ``count`` (an integer), a column only sys1 has, one named like a task column
    (``draws``) and a truth column (``label``, never shown)."""
    out = {}
    for name, frame in frames.items():
        number = np.array([int(str(k).removeprefix("item-")) for k in frame["key"]])
        extra = {"text": [f"text of {k} in {name}" for k in frame["key"]], "count": number % 97, "draws": number % 5}
        if name == "sys1":
            extra["source"] = [f"https://example.org/{k}" for k in frame["key"]]
        if name == "sys2":
            extra["label"] = (number % 2).astype(np.int8)
        out[name] = frame.assign(**extra)
    return out


@pytest.mark.parametrize("key_kind", ["int", "string"])
def test_annotation_task_carries_the_item_columns(tmp_path, key_kind):
    frames, labels = synthetic(21, key_kind=key_kind)
    frames = with_item_columns(frames)
    urls = write_systems(frames, tmp_path / "systems", files=2, row_group_size=7)
    params = cmp.CompareParams(budget=90, seed=3)
    store = _store_with(tmp_path, labels.sample(frac=0.5, random_state=1), "store")
    first = compare_in_process(urls, out=str(tmp_path / "runs"), params=params, labels=store)
    drawn_keys = set(pd.read_parquet(os.path.join(first.url, "sample.parquet"))["key"].astype(str))
    awaiting = drawn_keys - set(labels.sample(frac=0.5, random_state=1)["key"].astype(str))
    assert first.missing == len(awaiting) > 0

    csv_task = pd.read_csv(first.task, dtype=str, keep_default_na=False)
    with open(first.task.replace(".csv", ".jsonl")) as fh:
        records = [json.loads(line) for line in fh]
    assert list(csv_task.columns) == ["key", "text", "count", "item_draws", "source", "systems", "draws",
                                      "score_sys0", "score_sys1", "score_sys2", "label"]
    assert all(list(r) == list(csv_task.columns) for r in records) and len(records) == len(csv_task)
    assert set(csv_task["key"]) == awaiting and len(csv_task) == len(awaiting)
    assert (csv_task["label"] == "").all()  # the annotator's column; sys2's truth column is never read
    for row in records:
        key = row["key"]
        assert isinstance(key, int if key_kind == "int" else str)
        holders = [name for name, f in frames.items() if key in set(f["key"])]
        first_holder = frames[holders[0]].set_index("key").loc[key]
        # The first system (in the order given) that outputs the key describes it, whole.
        assert row["text"] == f"text of {key} in {holders[0]}"
        assert row["count"] == first_holder["count"] and isinstance(row["count"], int)
        assert row["item_draws"] == first_holder["draws"]
        assert row["source"] == (first_holder["source"] if holders[0] == "sys1" else None)
        assert row["systems"].split(";") == holders and row["draws"] >= 1
    integers = csv_task["count"].str.fullmatch(r"\d+")
    assert integers.all()  # "7", never "7.0", although sys1's extra column is empty for other keys

    # Filled in and imported: the rerun completes and reads no item column at all.
    csv_task["label"] = csv_task["key"].map(labels.assign(key=labels["key"].astype(str)).set_index("key")["label"]).astype(str)
    csv_task.to_csv(tmp_path / "answers.csv", index=False)
    import_labels(store, [str(tmp_path / "answers.csv")])
    second = compare_in_process(urls, out=str(tmp_path / "runs"), params=params, labels=store)
    assert second.missing == 0 and second.manifest["bytes_read"]["items"] == 0
    assert first.manifest["bytes_read"]["items"] > 0


def test_item_columns_read_only_the_row_groups_of_awaiting_keys(tmp_path, monkeypatch):
    frames, _ = synthetic(22)
    frames = with_item_columns(frames)
    urls = write_systems(frames, tmp_path, row_group_size=5)
    systems = cmp.open_systems(urls)
    drawn = cmp.draw_sample(systems, cmp.CompareParams(budget=60, seed=8))
    keys = drawn.sample.keys
    wanted = np.arange(keys.size) % 3 == 0
    read = []
    original = parquet_tasks.read_group

    def spy(parquet, index, columns, *, display):
        read.append((display, index, tuple(columns)))
        return original(parquet, index, columns, display=display)

    monkeypatch.setattr(parquet_tasks, "read_group", spy)
    found = cmp.item_columns(systems, drawn, wanted)
    items = found.items
    # Where each wanted key is in the first system that outputs it (one file: position // 5).
    expected, bytes_read = set(), 0
    for key in keys[wanted]:
        name = next(n for n, f in frames.items() if key in set(f["key"]))
        system = next(s for s in systems if s.name == name)
        position = int(np.flatnonzero(frames[name]["key"].to_numpy() == key)[0])
        columns = ("key", *cmp.item_column_names(system.resource))
        expected.add((displays_of(system)[0], position // 5, columns))
    assert set(read) == expected and len(read) == len(expected)  # each row group once, nothing else
    for display, index, columns in expected:
        system = next(s for s in systems if displays_of(s)[0] == display)
        bytes_read += system.resource.bytes_of([index], columns)
    assert found.bytes_read == bytes_read
    assert items["text"].tolist() == [
        f"text of {k} in {next(n for n, f in frames.items() if k in set(f['key']))}" for k in keys[wanted]
    ]
    assert "label" not in cmp.item_column_names(systems[2].resource)
    # Nothing wanted, nothing read.
    read.clear()
    none = cmp.item_columns(systems, drawn, np.zeros(keys.size, bool))
    assert read == [] and len(none.items) == 0 and none.bytes_read == 0


def test_a_cluster_writes_the_same_annotation_task(tmp_path, dask_client):
    frames, labels = synthetic(24, key_kind="int")
    urls = write_systems(with_item_columns(frames), tmp_path / "systems", files=3, row_group_size=4)
    params = cmp.CompareParams(budget=70, seed=5)
    store = _store_with(tmp_path, labels.sample(frac=0.3, random_state=2), "store")
    alone = compare_in_process(urls, out=str(tmp_path / "alone"), params=params, labels=store)
    clustered = compare_in_process(urls, out=str(tmp_path / "cluster"), params=params, labels=store,
                                   scheduler=dask_client.scheduler.address)
    assert alone.missing > 0 and os.path.basename(alone.url) == os.path.basename(clustered.url)
    for name in ("annotation_task.csv", "annotation_task.jsonl", "sample.parquet"):
        with open(os.path.join(alone.url, name), "rb") as a, open(os.path.join(clustered.url, name), "rb") as b:
            assert a.read() == b.read(), name
    assert alone.manifest["bytes_read"] == clustered.manifest["bytes_read"]


def displays_of(system):
    return list(parquet_module.displays(system.resource).values())


def test_label_studio_export_of_a_comparison_hides_what_the_systems_say(tmp_path, capsys):
    frames, labels = synthetic(23)
    urls = write_systems(with_item_columns(frames), tmp_path / "systems")
    store = str(tmp_path / "store")
    run = compare_in_process(urls, out=str(tmp_path / "runs"), params=cmp.CompareParams(budget=40, seed=2), labels=store)
    assert run.missing > 0
    task = tmp_path / "task.json"
    assert main(["labels", "export", "--run", run.url, "--format", "label-studio", "--out", str(task)]) == 0
    tasks = json.loads(task.read_text())
    assert len(tasks) == run.missing
    shown = set(tasks[0]["data"])
    assert shown == {"key", "text", "count", "item_draws", "source"}  # no score_*, systems or draws: they bias
    config = (tmp_path / "task.json.xml").read_text()
    assert "$text" in config and "cannot judge" in config and "score_sys0" not in config
    assert main(["labels", "export", "--run", run.url, "--format", "label-studio", "--show-score", "--out", str(task)]) == 0
    assert {"score_sys0", "score_sys1", "score_sys2", "systems", "draws"} <= set(json.loads(task.read_text())[0]["data"])
    capsys.readouterr()

    # Annotated in Label Studio (its JSON export of these tasks), imported: the comparison completes.
    truth = labels.set_index("key")["label"]
    export = [{"id": i, "data": t["data"], "annotations": [{"id": i, "completed_by": 1, "was_cancelled": False,
               "result": [{"from_name": "verdict", "to_name": "field_0", "type": "choices", "value": {"choices": ["correct" if truth[t["data"]["key"]] else "incorrect"]}}],
               "updated_at": "2026-11-25T06:00:00Z"}]} for i, t in enumerate(tasks, start=1)]
    (tmp_path / "export.json").write_text(json.dumps(export))
    import_labels(store, [str(tmp_path / "export.json")])
    done = compare_in_process(urls, out=str(tmp_path / "runs"), params=cmp.CompareParams(budget=40, seed=2), labels=store)
    assert done.missing == 0 and os.path.exists(os.path.join(done.url, "compare.parquet"))


def test_recall_with_an_exhaustive_sample(tmp_path):
    frames, labels = synthetic(12, key_kind="int")
    urls = write_systems(frames, tmp_path / "systems")
    store = _store_with(tmp_path, labels, "store")
    # The exhaustive scope: every universe key whose number is divisible by 3, labeled.
    scope = labels[labels["key"] % 3 == 0]
    exhaustive = tmp_path / "exhaustive.csv"
    scope.to_csv(exhaustive, index=False)
    params = cmp.CompareParams(budget=90, seed=8)
    outcome = compare_in_process(urls, out=str(tmp_path / "runs"), params=params, labels=store, exhaustive=str(exhaustive))
    frame = pd.read_parquet(os.path.join(outcome.url, "compare.parquet"))

    systems, core = core_sample(frames, params.distribution, frame["n_samples"].to_numpy(), seed=8)
    correct = scope.loc[scope["label"] == 1, "key"].to_numpy()
    rec = estimate_recall(core.with_labels(labels["key"], labels["label"]), exhaustive_in_pool=pool_membership(correct, systems))
    np.testing.assert_allclose(frame["recall"], rec.recall, rtol=1e-10)
    np.testing.assert_allclose(frame["recall_se"], rec.se, rtol=1e-10)
    assert outcome.manifest["diagnostics"]["pool_recall"] == rec.pool_recall
    assert outcome.manifest["input"]["exhaustive"]["correct"] == correct.size


def test_one_label_serves_every_system_and_release(tmp_path):
    frames, labels = synthetic(5, m=1)
    old = frames["sys0"]
    v1 = write_systems({"v1": old}, tmp_path / "s")
    store = str(tmp_path / "store")
    first = compare_in_process(v1, out=str(tmp_path / "runs"), params=cmp.CompareParams(budget=50, seed=1), labels=store)
    task = pd.read_csv(first.task, dtype={"key": str}, keep_default_na=False)
    task["label"] = task["key"].map(labels.set_index("key")["label"])
    task.to_csv(tmp_path / "answers.csv", index=False)
    import_labels(store, [str(tmp_path / "answers.csv")])
    # The next release outputs the same items in another order; both are compared at once.
    v2 = write_systems({"v2": old.sample(frac=1.0, random_state=3)}, tmp_path / "s")
    drawn = dataflow_sample({**v1, **v2}, cmp.CompareParams(budget=50, seed=1))
    labeled = cmp.attach_labels(drawn, store)
    unknown = np.isnan(labeled.sample.labels)
    # Exactly the items nobody labeled before are missing, whichever system drew them ...
    assert set(drawn.sample.keys[unknown]) == set(drawn.sample.keys) - set(task["key"])
    # ... and items only the new release drew were answered by the labels given for v1.
    only_v2 = (drawn.sample.counts[:, 0] == 0) & (drawn.sample.counts[:, 1] > 0)
    assert (only_v2 & ~unknown).any()


def test_estimate_refuses_missing_labels(tmp_path):
    frames, _ = synthetic(6, m=2)
    drawn = dataflow_sample(write_systems(frames, tmp_path), cmp.CompareParams(budget=20, seed=0))
    with pytest.raises(AwaitingLabels):
        cmp.estimate_systems(drawn.sample, drawn, cmp.CompareParams(budget=20))


# --------------------------------------------------------------------------------------------
# Command line: input errors (exit 2 before anything runs)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--system", "a=x", "--system", "a=y"], "'a' is given twice"),
        (["--system", "a"], "is not NAME=URL"),
        (["--system", "a=x", "--system", "b=y", "--budget", "3"], "every system needs at least 2"),
        (["--system", "a=x", "--confidence", "1.5"], "'--confidence'"),
        (["--system", "a=x", "--distribution", "top-k"], "needs --k"),
        (["--system", "a=x", "--power", "2"], "--power only applies"),
        (["--system", "a=x", "--storage-options", "[1]"], "must be a JSON object"),
        (["--system", "a=x", "--budget", "ten"], "invalid int value"),
    ],
)
def test_command_line_input_errors(capsys, argv, message):
    base = {"--labels": "store", "--budget": "10", "--seed": "0", "--out": "runs"}
    for option, value in base.items():
        if option not in argv:
            argv = [*argv, option, value]
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


# --------------------------------------------------------------------------------------------
# S3
# --------------------------------------------------------------------------------------------


@needs_reverb
def test_s3_round_trip(tmp_path, s3_server, s3_url, dask_client):
    options = s3_server.storage_options
    s3_systems, s3_labels = write_reverb_systems(s3_url, files=2, storage_options=options)
    store = f"{s3_url}/store"
    import_labels(store, [s3_labels], storage_options=options)
    params = cmp.CompareParams(budget=120, seed=6)
    remote = compare_in_process(s3_systems, out=f"{s3_url}/runs", params=params, labels=store,
                             storage_options=options, scheduler=dask_client.scheduler.address)
    assert remote.url.startswith("s3://") and remote.missing == 0

    local_systems, local_labels = write_reverb_systems(tmp_path, files=2)
    local_store = str(tmp_path / "store")
    import_labels(local_store, [local_labels])
    local = compare_in_process(local_systems, out=str(tmp_path / "runs"), params=params, labels=local_store)

    import s3fs

    fs = s3fs.S3FileSystem(**options)
    with fs.open(f"{remote.url}/compare.parquet", "rb") as fh:
        remote_frame = pq.read_table(fh).to_pandas()
    assert fs.exists(f"{remote.url}/manifest.json")
    pd.testing.assert_frame_equal(remote_frame, pd.read_parquet(os.path.join(local.url, "compare.parquet")))
    assert options["secret"] not in json.dumps(remote.manifest)


def test_keys_of_a_system_without_item_columns_are_described_by_the_next_one(tmp_path):
    """sys0 has only key and score: its keys take their columns from the next system that outputs
    them and has some, and a key only sys0 outputs gets an empty row (the task is still written)."""
    frames, _ = synthetic(21)
    described = with_item_columns(frames)
    described["sys0"] = frames["sys0"]
    systems = cmp.open_systems(write_systems(described, tmp_path, row_group_size=7))
    drawn = cmp.draw_sample(systems, cmp.CompareParams(budget=90, seed=3))
    keys = drawn.sample.keys
    items = cmp.item_columns(systems, drawn, np.ones(keys.size, dtype=bool)).items
    assert len(items) == keys.size
    empty = 0
    for key, text in zip(keys, items["text"]):
        holders = [n for n in ("sys1", "sys2") if key in set(described[n]["key"])]
        if holders:
            assert text == f"text of {key} in {holders[0]}"
        else:
            assert pd.isna(text)
            empty += 1
    assert empty > 0  # the seed draws keys that only sys0 outputs
