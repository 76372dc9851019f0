"""Each annotation tool's export, shaped as the tool writes it, read into the same verdict records."""

from __future__ import annotations

import io
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cli_run import cli
from prdist.dataflow.labels import import_labels, lookup_labels, read_label_file
from prdist.errors import DataError, InputError
from prdist.verdicts import VerdictWords

# Three annotators on four items; item 104 nobody can judge, item 103 is 1 vs 0 vs cannot judge.
VOTES = [  # key, annotator, verdict word as the annotation config names it
    (101, "ann", "correct"), (101, "bob", "correct"), (101, "cy", "incorrect"),
    (102, "ann", "incorrect"), (102, "bob", "incorrect"), (102, "cy", "incorrect"),
    (103, "ann", "correct"), (103, "bob", "incorrect"), (103, "cy", "cannot judge"),
    (104, "ann", "cannot judge"), (104, "bob", "cannot judge"), (104, "cy", "cannot judge"),
]
EXPECTED = {"101": "correct", "102": "incorrect", "103": "disputed", "104": "cannot_judge"}
USER_IDS = {"ann": 1, "bob": 2, "cy": 3}
TEXT = {101: "Obama; was born in; Hawaii", 102: "it; is; a", 103: "Paris; capital of; France", 104: "xx; yy; zz"}


def label_studio_json():
    tasks = []
    for key in TEXT:
        annotations = []
        for n, (k, who, word) in enumerate(VOTES):
            if k != key:
                continue
            cancelled = word == "cannot judge"
            annotations.append({
                "id": 1000 + n, "completed_by": USER_IDS[who], "was_cancelled": cancelled, "ground_truth": False,
                "result": [] if cancelled else [{"id": f"r{n}", "from_name": "verdict", "to_name": "text", "type": "choices",
                                                 "origin": "manual", "value": {"choices": [word]}}],
                "created_at": f"2026-11-25T06:{n:02d}:00.000000Z", "updated_at": f"2026-11-25T06:{n:02d}:30.000000Z",
                "lead_time": 4.2, "result_count": 0, "task": key, "project": 7,
            })
        tasks.append({"id": key, "data": {"key": key, "text": TEXT[key], "rank": key - 100}, "annotations": annotations,
                      "predictions": [], "meta": {}, "created_at": "2026-11-25T05:00:00Z", "updated_at": "2026-11-25T06:30:00Z",
                      "inner_id": key - 100, "total_annotations": len(annotations), "cancelled_annotations": 0,
                      "total_predictions": 0, "project": 7, "file_upload": "tasks.json"})
    return json.dumps(tasks, indent=2)


def label_studio_min_rows():
    return [{"key": k, "text": TEXT[k], "rank": k - 100, "id": k, "verdict": word, "annotator": f"{who}@example.org",
             "annotation_id": 1000 + n, "created_at": f"2026-11-25T06:{n:02d}:00.000000Z",
             "updated_at": f"2026-11-25T06:{n:02d}:30.000000Z", "lead_time": 3.5}
            for n, (k, who, word) in enumerate(VOTES)]


def mturk_csv():
    rows = []
    for n, (k, who, word) in enumerate(VOTES):
        rows.append({
            "HITId": f"3H{k}", "HITTypeId": "3T0", "Title": "Is this extraction correct?", "Description": "Judge it",
            "Keywords": "nlp", "Reward": "$0.05", "CreationTime": "Wed Nov 25 04:00:00 PST 2026", "MaxAssignments": 3,
            "RequesterAnnotation": "BatchId:1", "AssignmentDurationInSeconds": 600, "AutoApprovalDelayInSeconds": 259200,
            "Expiration": "Wed Dec 02 04:00:00 PST 2026", "NumberOfSimilarHITs": "", "LifetimeInSeconds": "",
            "AssignmentId": f"3A{n}", "WorkerId": f"A{who.upper()}XYZ", "AssignmentStatus": "Submitted",
            "AcceptTime": f"Wed Nov 25 05:{n:02d}:00 PST 2026", "SubmitTime": f"Wed Nov 25 05:{n:02d}:40 PST 2026",
            "AutoApprovalTime": "Sat Nov 28 05:00:00 PST 2026", "ApprovalTime": "", "RejectionTime": "",
            "RequesterFeedback": "", "WorkTimeInSeconds": 40, "LifetimeApprovalRate": "0% (0/0)",
            "Last30DaysApprovalRate": "0% (0/0)", "Last7DaysApprovalRate": "0% (0/0)",
            "Input.key": k, "Input.text": TEXT[k], "Answer.label": word, "Approve": "", "Reject": "",
        })
    # A rejected assignment (spam) is left out.
    rows.append(dict(rows[0], AssignmentId="3Axx", WorkerId="ASPAM", AssignmentStatus="Rejected", **{"Answer.label": "incorrect"}))
    return pd.DataFrame(rows).to_csv(index=False)


def prodigy_jsonl():
    answers = {"correct": "accept", "incorrect": "reject", "cannot judge": "ignore"}
    lines = []
    for n, (k, who, word) in enumerate(VOTES):
        row = {"text": TEXT[k], "label": "CORRECT_EXTRACTION", "meta": {"key": k, "rank": k - 100},
               "_input_hash": 1000 + k, "_task_hash": 2000 + n, "_view_id": "classification",
               "answer": answers[word], "_timestamp": 1795000000 + n, "_annotator_id": f"reverb-{who}",
               "_session_id": f"reverb-{who}"}
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def argilla_json():
    records = []
    for k in TEXT:
        responses = [{"value": word, "user_id": f"uuid-{who}"} for kk, who, word in VOTES if kk == k]
        records.append({"id": f"rec-{k}", "fields": {"text": TEXT[k]}, "metadata": {"key": k},
                        "suggestions": {"verdict": {"value": "correct", "score": 0.7, "agent": "reverb"}},
                        "responses": {"verdict": responses}, "vectors": {}, "_server_id": f"0000-{k}"})
    return json.dumps(records)


def argilla_v1_jsonl():
    lines = []
    for k in TEXT:
        responses = []
        for kk, who, word in VOTES:
            if kk == k:
                status = "discarded" if word == "cannot judge" else "submitted"
                values = {} if status == "discarded" else {"verdict": {"value": word}}
                responses.append({"user_id": f"uuid-{who}", "values": values, "status": status})
        lines.append(json.dumps({"fields": {"text": TEXT[k], "key": str(k)}, "responses": responses,
                                 "suggestions": [], "metadata": {}, "external_id": None}))
    return "\n".join(lines)


SHAPES = {
    "label-studio-json": ("export.json", label_studio_json, "label-studio"),
    "label-studio-json-min": ("export-min.json", lambda: json.dumps(label_studio_min_rows()), "label-studio"),
    "label-studio-csv": ("export.csv", lambda: pd.DataFrame(label_studio_min_rows()).to_csv(index=False), "label-studio"),
    "mturk": ("Batch_123_batch_results.csv", mturk_csv, "mturk"),
    "prodigy": ("reverb_db_out.jsonl", prodigy_jsonl, "prodigy"),
    "argilla": ("records.json", argilla_json, "argilla"),
    "argilla-v1": ("argilla-v1.jsonl", argilla_v1_jsonl, "argilla"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("fmt", ["auto", "named"])
def test_every_tool_export_gives_the_same_verdicts(tmp_path, shape, fmt):
    name, make, tool = SHAPES[shape]
    path = tmp_path / name
    path.write_text(make())
    frame = read_label_file(str(path), fmt="auto" if fmt == "auto" else tool)
    assert frame.attrs["format"] == tool
    assert len(frame) == len(VOTES) and frame["annotator"].nunique() == 3
    store = str(tmp_path / "store")
    summary = import_labels(store, [str(path)], fmt="auto" if fmt == "auto" else tool)
    assert summary.labels == len(VOTES) and summary.cannot_judge == 4 and summary.annotators == 3
    found = lookup_labels(store, list(TEXT))
    assert found.kinds.to_dict() == EXPECTED
    assert found.labels.tolist()[:2] == [1.0, 0.0] and found.labels.iloc[2:].isna().all()
    assert found.agreement.annotators == 3 and found.agreement.pairable_keys == 4


def test_tool_times_order_an_annotators_corrections(tmp_path):
    rows = label_studio_min_rows()[:1]
    later = dict(rows[0], verdict="incorrect", annotation_id=9, updated_at="2026-11-25T07:00:00Z")
    path = tmp_path / "min.json"
    path.write_text(json.dumps([later, rows[0]]))  # the file lists the later one first
    store = str(tmp_path / "store")
    import_labels(store, [str(path)])
    assert lookup_labels(store, [101]).kinds.tolist() == ["incorrect"]


def test_tool_words_are_mapped_by_the_user(tmp_path):
    path = tmp_path / "min.json"
    path.write_text(json.dumps([dict(r, verdict={"correct": "Relevant", "incorrect": "Off", "cannot judge": "Dunno"}[r["verdict"]])
                                for r in label_studio_min_rows()]))
    with pytest.raises(InputError, match=r"row 1 has the verdict 'Relevant'"):
        read_label_file(str(path))
    words = VerdictWords(positive=("relevant",), negative=("off",), skip=("dunno",))
    assert read_label_file(str(path), words=words)["label"].tolist()[:3] == [1, 1, 0]


def test_a_json_array_of_plain_records_is_read_as_one(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps([{"key": 1, "label": "yes"}, {"key": 2, "label": "skip"}]))
    frame = read_label_file(str(path))
    assert frame.attrs["format"] == "jsonl" and frame["label"].tolist() == [1, -1]


@pytest.mark.parametrize(
    ("name", "content", "fmt", "message"),
    [
        ("t.json", json.dumps([{"data": {"text": "x"}, "annotations": []}]), "auto", r"task 1 \(id None\): no key at data.key; .* --key-field"),
        ("p.jsonl", json.dumps({"answer": "accept", "_input_hash": 1, "meta": {}}), "auto", "line 1: no key at key or meta.key; .*--key-field"),
        ("m.csv", "WorkerId,Input.text,Answer.label\nA1,x,yes\n", "mturk", "no 'Input.key' column"),
        ("m.csv", "Input.key,Answer.a,Answer.b\n1,yes,no\n", "auto", r"2 answers could hold the verdict \('a', 'b'\); name the verdict's with --control NAME"),
        ("x.csv", "key,label\n1,1\n", "excel", "not one of auto, csv"),
    ],
)
def test_malformed_exports_are_refused_with_the_fix(tmp_path, name, content, fmt, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises((DataError, InputError), match=message):
        read_label_file(str(path), fmt=fmt)


# ---------------------------------------------------------------------------------------------
# Hostile shapes, as a class: every format, every field, refused in one line naming the file


DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_VALUES = ["x", {"a": 1}, [1, 2], 10**30, None, True, 1.5]


def _paths(value, prefix=()):
    """Every path into a JSON value (keys of objects, indexes of lists), the value itself first."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2]):
            yield from _paths(v, (*prefix, i))


def _replaced(record, path, new):
    record = json.loads(json.dumps(record))
    if not path:
        return new
    target = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return record


def _assert_refused_or_read(path, fmt):
    """Either the file reads, or one PrdistError names it: never another exception."""
    from prdist.errors import PrdistError

    try:
        read_label_file(str(path), fmt=fmt)
        return True
    except PrdistError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc), exc
        return False


JSON_SHAPES = [s for s in SHAPES if SHAPES[s][0].endswith((".json", ".jsonl"))]


@pytest.mark.parametrize("shape", JSON_SHAPES)
def test_every_json_format_refuses_any_hostile_value_in_any_field_in_one_line(tmp_path, shape):
    name, make, tool = SHAPES[shape]
    text = make()
    records = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines() if line]
    lines = name.endswith(".jsonl")
    path = tmp_path / name
    for where in _paths(records[0]):
        for value in HOSTILE_VALUES:
            first = _replaced(records[0], where, value)
            body = [first, *records[1:]]
            path.write_text("\n".join(json.dumps(r) for r in body) if lines else json.dumps(body))
            read = _assert_refused_or_read(path, tool)
            if where in KEY_PATHS[tool] and isinstance(value, (dict, list, bool, float)):
                assert not read, (shape, where, value)  # a key is one scalar: never stored as two items
    for hostile in (DEEP, text.rstrip()[:-2], "\x00\x01garbage"):
        path.write_text(hostile if not lines else hostile + "\n")
        assert not _assert_refused_or_read(path, tool)
    path.write_text(text)
    assert _assert_refused_or_read(path, tool)  # the control: the export itself reads


KEY_PATHS = {"label-studio": {("data", "key"), ("key",)}, "prodigy": {("meta", "key")},
             "argilla": {("metadata", "key"), ("fields", "key")}, "jsonl": {("key",)}}


CSV_SHAPES = {"label-studio-csv": SHAPES["label-studio-csv"], "mturk": SHAPES["mturk"],
              "csv": ("labels.csv", lambda: "key,label,annotator,time\n1,yes,ann,2026-11-25T06:00:00Z\n2,no,bob,\n", "csv")}
HOSTILE_CELLS = [DEEP, '{"choices": 5}', '{"choices": ["correct", "incorrect"]}', "[1, 2]", str(10**30), '"', "a\nb", "\x00"]


@pytest.mark.parametrize("shape", sorted(CSV_SHAPES))
def test_every_csv_format_refuses_any_hostile_cell_in_one_line(tmp_path, shape):
    name, make, tool = CSV_SHAPES[shape]
    frame = pd.read_csv(io.StringIO(make()), dtype=str, keep_default_na=False)
    path = tmp_path / name
    for column in frame.columns:
        for cell in HOSTILE_CELLS:
            frame.loc[0, column], saved = cell, frame.loc[0, column]
            path.write_text(frame.to_csv(index=False))
            _assert_refused_or_read(path, tool)
            frame.loc[0, column] = saved
    for hostile in ("key\tlabel\n1\t1\n", make()[: len(make()) // 2] + '"', "\x00\x01"):
        path.write_text(hostile)
        _assert_refused_or_read(path, tool)
    path.write_text(make())
    assert _assert_refused_or_read(path, tool)


@pytest.mark.parametrize("column, values", [
    ("key", pa.array([[1, 2], [3]])), ("key", pa.array([{"a": 1}, {"a": 2}])), ("label", pa.array([[1], [0]])),
    ("time", pa.array([5, 6])), ("key", pa.array([True, False])),
])
def test_parquet_label_files_with_columns_of_other_shapes_are_refused(tmp_path, column, values):
    table = {"key": pa.array(["a", "b"]), "label": pa.array([1, 0]), **{column: values}}
    path = tmp_path / "labels.parquet"
    pq.write_table(pa.table(table), path)
    with pytest.raises(DataError, match=rf"{path}, row 1: the {'verdict' if column == 'label' else column} is"):
        read_label_file(str(path))


HOSTILE_FILES = {  # name: (file, content, what the one line says)
    "deep json": ("deep.json", DEEP, "nested too deeply"),
    "deep jsonl": ("deep.jsonl", '{"key": 1, "label": ' + DEEP + "}\n", "line 1: JSON nested too deeply"),
    "annotations a dict": ("ls.json", json.dumps([{"data": {"key": 1}, "annotations": {"result": []}}]),
                           "task 1, field 'annotations': a list was expected, not a JSON object"),
    "annotations a string": ("ls.json", json.dumps([{"data": {"key": 1}, "annotations": "x"}]), "field 'annotations': a list was expected"),
    "result a dict": ("ls.json", json.dumps([{"data": {"key": 1}, "annotations": [{"result": {"a": 1}}]}]),
                      "annotation 1, field 'result': a list was expected"),
    "data a string": ("ls.json", json.dumps([{"data": "x", "annotations": []}]), "task 1, field 'data': a JSON object was expected"),
    "mixed types in a column": ("mixed.jsonl", '{"key": 1, "label": 1, "time": 5}\n{"key": "a", "label": "yes", "time": "2026-01-01"}\n',
                                "row 1: the time is the number 5"),
    "a key that is a list": ("k.jsonl", '{"key": [1, 2], "label": 1}\n', "row 1: the key is a list"),
    "a key that is an object": ("k.jsonl", '{"key": {"a": 1}, "label": 1}\n', "row 1: the key is a JSON object"),
    "an oversized verdict": ("big.jsonl", '{"key": 1, "label": %d}\n' % 10**30, "row 1 has the verdict 1000000000000000000000000000000"),
    "an oversized time": ("big.jsonl", '{"key": 1, "label": 1, "time": "%d"}\n' % 10**30, "time"),
    "an oversized prodigy time": ("p.jsonl", json.dumps({"meta": {"key": 1}, "answer": "accept", "_timestamp": 10**30}),
                                  "field '_timestamp': 1000000000000000000000000000000 is not a time"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_FILES))
def test_each_hostile_shape_exits_2_with_one_line_naming_file_place_and_fix(tmp_path, case):
    name, content, says = HOSTILE_FILES[case]
    path = tmp_path / name
    path.write_text(content)
    code, out, err = cli("labels", "import", "--store", str(tmp_path / "store"), str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(path) in err and says in err, err
    assert not (tmp_path / "store").exists()


def test_an_oversized_integer_key_is_stored_exactly(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text('{"key": %d, "label": 1}\n' % 10**30)
    assert read_label_file(str(path))["key"].tolist() == [str(10**30)]
