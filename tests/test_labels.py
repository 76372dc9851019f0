"""The label store: append-only, create-only imports, latest label wins, lookups without collect."""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prdist.dataflow.labels import export_annotation_task, import_labels, lookup_labels, read_label_file
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
        assert read_label_file(str(path))["label"].tolist() == [1]
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
