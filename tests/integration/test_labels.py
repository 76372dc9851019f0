"""The label store: append-only, create-only imports, latest label wins, lookups without collect."""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prdist.dataflow.labels.task import export_annotation_task
from prdist.dataflow.labels.importer import import_labels, read_label_file
from prdist.dataflow.labels.store import lookup_labels, store_exists
from prdist.errors import DataError, InputError


def write_labels(path, keys, labels, fmt):
    frame = pd.DataFrame({"key": keys, "label": labels})
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict(orient="records")))
    else:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    return str(path)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_import_then_lookup_every_format(tmp_path, fmt):
    store = str(tmp_path / "store")
    f = write_labels(tmp_path / f"a.{fmt}", [1, 2, 3], [1, 0, 1], fmt)
    summary = import_labels(store, [f])
    assert summary.labels == 3 and summary.positives == 2
    found = lookup_labels(store, [3, 2, 99])
    assert found.labels.tolist()[:2] == [1.0, 0.0] and np.isnan(found.labels.iloc[2])
    assert found.missing == 1


def test_integer_and_text_keys_meet(tmp_path):
    store = str(tmp_path / "store")
    import_labels(store, [write_labels(tmp_path / "a.csv", ["7", "8"], [1, 0], "csv")])
    assert lookup_labels(store, np.array([7, 8], dtype=np.int32)).labels.tolist() == [1.0, 0.0]


def test_latest_import_wins_and_relabels_are_reported(tmp_path):
    store = str(tmp_path / "store")
    import_labels(store, [write_labels(tmp_path / "a.csv", [1, 2], [1, 1], "csv")])
    import_labels(store, [write_labels(tmp_path / "b.csv", [2], [0], "csv")])
    found = lookup_labels(store, [1, 2])
    assert found.labels.tolist() == [1.0, 0.0]
    assert found.relabeled == 1 and found.examples == ("2",)


def test_conflicting_labels_inside_one_import_are_refused_and_nothing_written(tmp_path):
    store = tmp_path / "store"
    good = write_labels(tmp_path / "good.csv", [1], [1], "csv")
    clash = write_labels(tmp_path / "clash.csv", [5, 5], [0, 1], "csv")
    with pytest.raises(DataError, match="different verdicts from one annotator at one time"):
        import_labels(str(store), [good, clash])
    assert not store.exists()


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        ("key,label\n1,2\n", "bad.csv", "bad.csv: row 1 has the verdict '2'"),
        ("key,label\n1,1\n2,\n3,maybe\n", "bad.csv", "bad.csv: row 3 has the verdict 'maybe'"),
        ("id,label\n1,1\n", "bad.csv", r"lacks the column\(s\) \['key'\]"),
        ("not json\n", "bad.jsonl", r"bad.jsonl, line 1: not valid JSON \(Expecting value\); fix or drop that line"),
        ("[1, 2]", "bad.json", "bad.json, record 1: a JSON object was expected, not an integer"),
        ("key,label\n1,1\n", "l.csv", None),
    ],
)
def test_bad_label_files_are_refused(tmp_path, content, name, message):
    path = tmp_path / name
    path.write_text(content)
    if message is None:  # the control: the same shape, valid
        assert read_label_file(str(path)).verdicts["label"].tolist() == [1]
        return
    with pytest.raises((DataError, InputError), match=message):
        read_label_file(str(path))


def test_missing_label_file_and_empty_import(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_label_file(str(tmp_path / "nope.csv"))
    with pytest.raises(InputError, match="No label files"):
        import_labels(str(tmp_path / "store"), [])


def test_concurrent_imports_keep_every_label(tmp_path):
    store = str(tmp_path / "store")
    files = [write_labels(tmp_path / f"f{i}.csv", list(range(i * 100, i * 100 + 100)), [i % 2] * 100, "csv") for i in range(8)]
    threads = [threading.Thread(target=import_labels, args=(store, [f])) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = lookup_labels(store, list(range(800)))
    assert found.missing == 0
    assert found.labels.to_numpy().tolist() == [float((k // 100) % 2) for k in range(800)]


def test_store_absent_means_no_labels(tmp_path):
    assert lookup_labels(str(tmp_path / "none"), [1, 2]).missing == 2
    assert lookup_labels(None, [1]).missing == 1


def test_annotation_task_round_trip(tmp_path):
    items = pd.DataFrame({"rank": [3, 9], "key": [10, 11], "score": [0.9, 0.5], "text": ["a <b>", "c"]})
    csv_url, jsonl_url = export_annotation_task(items, str(tmp_path))
    task = pd.read_csv(csv_url)
    assert task.columns.tolist() == ["rank", "key", "score", "text", "label"]
    assert [json.loads(line)["key"] for line in open(jsonl_url)] == [10, 11]
    task["label"] = [1, 0]  # the annotator fills the column in
    task.to_csv(tmp_path / "done.csv", index=False)
    store = str(tmp_path / "store")
    import_labels(store, [str(tmp_path / "done.csv")])
    assert lookup_labels(store, [10, 11]).labels.tolist() == [1.0, 0.0]


def test_store_on_s3(s3_server, s3_url, tmp_path):
    store = f"{s3_url}/labels"
    opts = s3_server.storage_options
    import_labels(store, [write_labels(tmp_path / "a.csv", [1, 2], [0, 1], "csv")], storage_options=opts)
    assert lookup_labels(store, [1, 2], storage_options=opts).labels.tolist() == [0.0, 1.0]
    # The store-wide read of Dawid-Skene, and the existence check, on S3 too.
    crowd = pd.DataFrame({"key": [1, 1, 1, 2, 2, 2], "label": [0, 0, 1, 1, 1, 1], "annotator": list("xyzxyz")})
    crowd.to_csv(tmp_path / "crowd.csv", index=False)
    import_labels(store, [str(tmp_path / "crowd.csv")], storage_options=opts)
    found = lookup_labels(store, [2], storage_options=opts, rule="dawid-skene")
    assert found.kinds.tolist() == ["correct"] and found.fitted_on["records"] == 8 and found.fitted_on["files"] == 2
    assert store_exists(store, storage_options=opts) and not store_exists(f"{s3_url}/nostore", storage_options=opts)


def test_one_verdict_vocabulary_for_the_command_line_python_and_the_store(tmp_path):
    # Every word a label file may hold means the same through `prdist labels import` + the store and
    # through Evaluation.with_labels / evaluate(labels=...), which once refused "correct" and
    # "cannot judge".
    import prdist
    from tests.support.cli_run import cli

    from prdist.verdicts.aggregation import _WORDS

    words = [w for ws in _WORDS.values() for w in ws] + ["Correct", "CANNOT JUDGE", "Yes", True, False, 1, 0, 1.0, -1]
    keys = [f"k{i}" for i in range(len(words))]
    pd.DataFrame({"key": keys, "label": words}).to_csv(tmp_path / "v.csv", index=False)
    assert cli("labels", "import", "--store", str(tmp_path / "store"), str(tmp_path / "v.csv"))[0] == 0
    stored = lookup_labels(str(tmp_path / "store"), keys)
    ev = prdist.evaluate(np.linspace(1, 0, len(keys)), keys=keys, labels=dict(zip(keys, words)))
    python = ev.verdicts.reindex(keys)
    assert stored.kinds.isin(["correct", "incorrect", "cannot_judge"]).all()
    np.testing.assert_array_equal(python.to_numpy(), stored.labels.reindex(keys).to_numpy())
    assert (stored.kinds == "cannot_judge").sum() == python.isna().sum() == len(_WORDS[-1]) + 2
    assert ev.counts["cannot_judge"] == python.isna().sum()
    # What the command line refuses, Python refuses; blanks are "no verdict yet" in both.
    (tmp_path / "bad.csv").write_text("key,label\nk0,maybe\n")
    assert cli("labels", "import", "--store", str(tmp_path / "store"), str(tmp_path / "bad.csv"))[0] == 2
    with pytest.raises(DataError, match="The verdict of key 'k0' is 'maybe'"):
        ev.with_labels({"k0": "maybe"})
    assert ev.with_labels({"k0": " ", "k1": None}).verdicts.equals(ev.verdicts)


@pytest.mark.parametrize("command", [
    ["run", "--resource", "{root}/res", "--out", "{root}/runs", "--labels", "{root}/nostore"],
    ["compare", "--system", "a={root}/res", "--labels", "{root}/nostore", "--budget", "4", "--seed", "0", "--out", "{root}/runs"],
    ["labels", "status", "--store", "{root}/nostore"],
])
def test_a_missing_store_is_refused_naming_it_and_the_fix(tmp_path, command):
    # A typo in --labels once read as "no labels yet" (exit 3, "0 of 469 known"), and `labels
    # status` of it exited 0.
    from tests.support.cli_run import cli

    code, out, err = cli(*[part.format(root=tmp_path) for part in command])
    assert code == 2 and out == ""
    option = "--store" if command[0] == "labels" else "--labels"
    assert err.strip() == (f"prdist: error: No label store at '{tmp_path}/nostore' ({option}): "
                           f"check the path, or import labels first with 'prdist labels import --store {tmp_path}/nostore FILE'"
                           + ("." if command[0] == "labels" else " (leave out --labels until there are labels)."))
    assert not (tmp_path / "runs").exists()


def test_an_empty_store_is_a_store(tmp_path):
    from tests.support.cli_run import cli

    (tmp_path / "store").mkdir()
    code, out, _ = cli("labels", "status", "--store", str(tmp_path / "store"), "--json")
    assert code == 0 and json.loads(out)["records"] == 0
