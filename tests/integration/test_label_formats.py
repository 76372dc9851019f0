"""Each annotation tool's export, shaped as the tool writes it, read into the same verdict records."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.paths import LABEL_STUDIO_VENV
from tests.support.cli_run import cli
from prdist.dataflow.labels.importer import LabelFile, import_labels, read_label_file
from prdist.dataflow.labels.store import lookup_labels
from prdist.errors import DataError, InputError
from prdist.verdicts.aggregation import VerdictWords

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
    read = read_label_file(str(path), fmt="auto" if fmt == "auto" else tool)
    frame = read.verdicts
    assert read.format == tool
    assert len(frame) == len(VOTES) and frame["annotator"].nunique() == 3
    store = str(tmp_path / "store")
    summary = import_labels(store, [str(path)], fmt="auto" if fmt == "auto" else tool)
    assert summary.labels == len(VOTES) and summary.cannot_judge == 4 and summary.annotators == 3
    found = lookup_labels(store, list(TEXT))
    assert found.kinds.to_dict() == EXPECTED
    assert found.labels.tolist()[:2] == [1.0, 0.0] and found.labels.iloc[2:].isna().all()
    assert found.agreement.annotators == 3 and found.agreement.pairable_keys == 3  # 104: nobody could judge it


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
    assert read_label_file(str(path), words=words).verdicts["label"].tolist()[:3] == [1, 1, 0]


def test_a_json_array_of_plain_records_is_read_as_one(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps([{"key": 1, "label": "yes"}, {"key": 2, "label": "skip"}]))
    read = read_label_file(str(path))
    assert read.format == "jsonl" and read.verdicts["label"].tolist() == [1, -1]


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


KEY_PATHS = {"label-studio": {("data", "key"), ("key",)}, "prodigy": {("meta", "key")},
             "argilla": {("metadata", "key"), ("fields", "key")}, "jsonl": {("key",)}}
HOSTILE_CELLS = ["[" * 5000 + "]" * 5000, '{"choices": 5}', '{"choices": ["correct", "incorrect"]}', "[1, 2]", str(10**30), '"', "a\nb", "\x00"]
PARQUET_COLUMNS = [("key", [[1, 2], [3]]), ("key", [{"a": 1}, {"a": 2}]), ("label", [[1], [0]]), ("time", [5, 6]), ("key", [True, False])]
BATTERY = {  # every label format: its file, as the tool writes it
    **SHAPES,
    "jsonl": ("labels.jsonl", lambda: '{"key": 1, "label": "yes", "annotator": "ann", "time": "2026-11-25T06:00:00Z"}\n'
                                      '{"key": "b", "label": 0}\n', "jsonl"),
    "csv": ("labels.csv", lambda: "key,label,annotator,time\n1,yes,ann,2026-11-25T06:00:00Z\n2,no,bob,\n", "csv"),
    "parquet": ("labels.parquet", None, "parquet"),
}


@pytest.mark.parametrize("shape", sorted(BATTERY))
def test_every_label_format_reads_or_refuses_every_hostile_shape_in_one_line(tmp_path, shape):
    """Every field of every format's file replaced by hostile values: the file reads, or one
    PrdistError names it (never another exception); keys that are not one scalar, deep nesting,
    truncation and garbage are always refused."""
    name, make, tool = BATTERY[shape]
    path = tmp_path / name
    if tool == "parquet":
        for column, values in PARQUET_COLUMNS:
            pq.write_table(pa.table({"key": ["a", "b"], "label": [1, 0], column: values}), path)
            with pytest.raises(DataError, match=rf"{path}, row 1: the {'verdict' if column == 'label' else column} is"):
                read_label_file(str(path))
        pq.write_table(pa.table({"key": ["a", "b"], "label": [1, 0]}), path)
        assert _assert_refused_or_read(path, tool)
        return
    text = make()
    if name.endswith(".csv"):
        _hostile_cells(path, text, tool)
    else:
        _hostile_values(path, text, tool, lines=name.endswith(".jsonl"))
    truncated = text + '"an unclosed quote,1\n' if name.endswith(".csv") else text.rstrip()[:-2]
    for hostile in (DEEP, truncated, "\x00\x01garbage"):
        path.write_text(hostile)
        assert not _assert_refused_or_read(path, tool)
    path.write_text(text)
    assert _assert_refused_or_read(path, tool)  # the control: the export itself reads


def _hostile_values(path, text, tool, *, lines):
    records = json.loads(text) if not lines else [json.loads(line) for line in text.splitlines() if line]
    for where in _paths(records[0]):
        for value in HOSTILE_VALUES:
            body = [_replaced(records[0], where, value), *records[1:]]
            path.write_text("\n".join(json.dumps(r) for r in body) if lines else json.dumps(body))
            read = _assert_refused_or_read(path, tool)
            if where in KEY_PATHS[tool] and isinstance(value, (dict, list, bool, float)):
                assert not read, (where, value)  # a key is one scalar: never stored as two items


def _hostile_cells(path, text, tool):
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    # MTurk's other 25 columns are bookkeeping the reader never opens: one stands for them all.
    read = [c for c in frame.columns if tool != "mturk" or c.startswith(("Input.", "Answer.", "Worker", "Assignment", "Submit", "Title"))]
    for column in read:
        for cell in HOSTILE_CELLS:
            frame.loc[0, column], saved = cell, frame.loc[0, column]
            path.write_text(frame.to_csv(index=False))
            _assert_refused_or_read(path, tool)
            frame.loc[0, column] = saved


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
    "an mturk time that is not one": ("Batch_1_batch_results.csv", "WorkerId,SubmitTime,Input.key,Answer.label\nW,\"{[x\",k,yes\n",
                                      "row 1, column SubmitTime: '{[x' is not a time"),
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
    assert read_label_file(str(path)).verdicts["key"].tolist() == [str(10**30)]


# ---------------------------------------------------------------------------------------------
# Read the way each tool means it


def _ls_tasks(**changes):
    """The Label Studio export with ``changes(tasks)`` applied."""
    tasks = json.loads(label_studio_json())
    for change in changes.values():
        change(tasks)
    return tasks


def _blurry_first(tasks, name="blurry"):
    for task in tasks:
        for ann in task["annotations"]:
            ann["result"].insert(0, {"from_name": name, "to_name": "text", "type": "choices", "value": {"choices": ["yes"]}})


def _import(tmp_path, name, content, *args):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    store = tmp_path / f"store-{name}"
    code, out, err = cli("labels", "import", "--store", str(store), *args, str(path))
    return code, out, err, str(store)


def test_label_studio_verdict_is_the_control_named_verdict_not_the_first_choices(tmp_path):
    code, out, err, store = _import(tmp_path, "export.json", _ls_tasks(blurry=_blurry_first))
    assert code == 0, err
    assert lookup_labels(store, list(TEXT)).kinds.to_dict() == EXPECTED


def test_several_choices_controls_none_named_verdict_are_refused_listing_them_and_control_picks_one(tmp_path):
    def rename(tasks):
        for task in tasks:
            for ann in task["annotations"]:
                for region in ann["result"]:
                    region["from_name"] = "quality" if region["from_name"] == "verdict" else region["from_name"]
    tasks = _ls_tasks(blurry=_blurry_first, rename=rename)
    code, out, err, store = _import(tmp_path, "export.json", tasks)
    assert code == 2 and "2 Choices controls could hold the verdict ('blurry', 'quality')" in err and "--control NAME" in err
    code, out, err, store = _import(tmp_path, "export.json", tasks, "--control", "quality")
    assert code == 0, err
    assert lookup_labels(store, list(TEXT)).kinds.to_dict() == EXPECTED
    code, out, err, store = _import(tmp_path, "export.json", tasks, "--control", "nope")
    assert code == 2 and "no Choices control named 'nope'; it has 'blurry', 'quality'" in err


def test_label_studio_multi_choice_reviews_ground_truth_and_drafts(tmp_path):
    def odd(tasks):
        t101, t102, t103 = tasks[0], tasks[1], tasks[2]
        t101["annotations"][2]["result"][0]["value"]["choices"] = ["correct", "incorrect"]  # cy: two choices
        t102["annotations"][0]["reviews"] = [{"id": 1, "accepted": True, "created_at": "2026-11-25T07:00:00Z"},
                                             {"id": 2, "accepted": False, "created_at": "2026-11-25T08:00:00Z"}]
        t101["annotations"][1]["last_action"] = "rejected"  # bob's, as Label Studio records a rejecting review
        t103["annotations"][0]["ground_truth"] = True  # ann's "correct" is the ground truth
        t103["drafts"] = [{"id": 5, "user": 2, "result": [{"from_name": "verdict", "type": "choices", "value": {"choices": ["correct"]}}]}]
    code, out, err, store = _import(tmp_path, "export.json", _ls_tasks(odd=odd))
    assert code == 0, err
    assert "skipped: 2 rejected, 2 superseded by ground truth, 1 draft, 1 several choices" in out
    kinds = lookup_labels(store, list(TEXT)).kinds.to_dict()
    assert kinds == {"101": "correct", "102": "incorrect", "103": "correct", "104": "cannot_judge"}  # 101: ann alone


def test_label_studio_tasks_made_outside_prdist_are_keyed_where_the_user_says(tmp_path):
    def outside(tasks):
        for task in tasks:
            task["data"]["item_id"] = task["data"].pop("key")
    tasks = _ls_tasks(outside=outside)
    code, out, err, store = _import(tmp_path, "export.json", tasks)
    assert code == 2 and "task 1 (id 101): no key at data.key" in err and "--key-field (e.g. data.id)" in err
    code, out, err, store = _import(tmp_path, "export.json", tasks, "--key-field", "data.item_id")
    assert code == 0, err
    assert lookup_labels(store, list(TEXT)).kinds.to_dict() == EXPECTED


LS_CONFIG = """<View><Text name="text" value="$text"/>
<Choices name="blurry" toName="text"><Choice value="yes"/><Choice value="no"/></Choices>
<Choices name="verdict" toName="text"><Choice value="correct"/><Choice value="incorrect"/><Choice value="cannot judge"/></Choices>
</View>"""
LS_PYTHON = LABEL_STUDIO_VENV / "bin" / "python"


@pytest.mark.skipif(not LS_PYTHON.is_file(), reason="Label Studio's converter is in .venv-label-studio (make .venv-label-studio/.installed)")
def test_flat_exports_made_by_label_studios_converter_read_alike_and_say_what_they_lose(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_ls_tasks(blurry=_blurry_first)))
    script = ("import sys; from label_studio_sdk.converter import Converter; c = Converter(sys.argv[1], sys.argv[2]); "
              "c.convert_to_json_min(sys.argv[3], sys.argv[4] + '/min', is_dir=False); "
              "c.convert_to_csv(sys.argv[3], sys.argv[4] + '/csv', is_dir=False, sep=',')")
    subprocess.run([str(LS_PYTHON), "-c", script, LS_CONFIG, str(tmp_path), str(tmp_path / "in.json"), str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    for made in (tmp_path / "min" / "result.json", tmp_path / "csv" / "result.csv"):
        store = tmp_path / f"store-{made.parent.name}"
        code, out, err = cli("labels", "import", "--store", str(store), str(made))
        assert code == 0 and "[label-studio]" in out, err
        assert "note: result" in out and "carry no skipped tasks" in out
        kinds = lookup_labels(str(store), list(TEXT)).kinds.to_dict()
        # The converter drops cancelled annotations: 103 loses cy's "cannot judge" (1 vs 1: disputed still),
        # 104 (skipped by all) is missing, as the note says.
        assert kinds == {"101": "correct", "102": "incorrect", "103": "disputed", "104": "missing"}


def test_prodigy_choice_answers_without_one_selection_are_not_verdicts_and_key_field_finds_the_key(tmp_path):
    options = [{"id": "correct", "text": "correct"}, {"id": "incorrect", "text": "incorrect"}]
    rows = [{"text": "a", "options": options, "accept": ["correct"], "answer": "accept", "_input_hash": 11, "_annotator_id": "x"},
            {"text": "b", "options": options, "accept": [], "answer": "accept", "_input_hash": 12, "_annotator_id": "x"},
            {"text": "c", "options": options, "accept": ["correct", "incorrect"], "answer": "accept", "_input_hash": 13,
             "_annotator_id": "x"},
            {"text": "d", "options": options, "accept": ["correct"], "answer": "reject", "_input_hash": 14, "_annotator_id": "x"},
            {"text": "e", "options": options, "answer": "ignore", "_input_hash": 15, "_annotator_id": "x", "_view_id": "choice"}]
    content = "".join(json.dumps(r) + "\n" for r in rows)
    code, out, err, store = _import(tmp_path, "db.jsonl", content, "--format", "prodigy")
    assert code == 2 and "line 1: no key at key or meta.key" in err and "--key-field" in err
    code, out, err, store = _import(tmp_path, "db.jsonl", content, "--format", "prodigy", "--key-field", "_input_hash")
    assert code == 0, err
    assert "skipped: 1 choice task rejected, 1 no single option selected, 1 several choices" in out
    assert lookup_labels(store, [11, 12, 13, 14, 15]).kinds.tolist() == ["correct", "missing", "missing", "missing", "cannot_judge"]
    numbered = [{"id": 0, "text": "incorrect"}, {"id": 1, "text": "correct"}]
    code, out, err, store = _import(tmp_path, "num.jsonl", json.dumps({"options": numbered, "accept": [0], "answer": "accept",
                                                                       "meta": {"key": "n"}, "_annotator_id": "x"}))
    assert code == 0 and lookup_labels(store, ["n"]).kinds.tolist() == ["incorrect"], err  # option 0's text, not the number


def _argilla_records(statuses: bool):
    """Records as argilla 2.8's ``Record.to_dict`` writes them (responses: question -> [{value, user_id}]),
    with a per-response ``status`` when ``statuses`` (as exports that carry it have it)."""
    answers = {"101": [("u1", "correct", "submitted"), ("u2", "incorrect", "draft"), ("u3", None, "discarded")],
               "102": [("u1", "incorrect", "submitted"), ("u2", "incorrect", "submitted")]}
    return [{"id": f"rec-{k}", "fields": {"text": k}, "metadata": {"key": k}, "suggestions": {}, "vectors": {},
             "status": "completed", "_server_id": None,
             "responses": {"verdict": [dict({"value": v, "user_id": u}, **({"status": s} if statuses else {}))
                                       for u, v, s in rows],
                           "blurry": [{"value": "no", "user_id": "u1"}]}}
            for k, rows in answers.items()]


def test_argilla_drafts_are_not_verdicts_discarded_is_cannot_judge_and_a_missing_status_is_said(tmp_path):
    code, out, err, store = _import(tmp_path, "records.json", _argilla_records(statuses=True))
    assert code == 0, err
    assert "skipped: 1 draft" in out and "no status" not in out
    found = lookup_labels(store, ["101", "102"])
    # u1 correct, u3 cannot judge (which never votes against a verdict): correct; u2's draft (incorrect)
    # is out, else the key would be disputed
    assert found.kinds.tolist() == ["correct", "incorrect"]
    code, out, err, store = _import(tmp_path, "records.json", _argilla_records(statuses=False))
    assert code == 0, err
    assert "skipped: 1 blank" in out and "note: records.json: the Argilla export has no status on 5 response(s)" in out


def test_mturk_hits_with_several_items_and_crowd_form_answers(tmp_path):
    multi = pd.DataFrame({"HITId": ["H1", "H1"], "WorkerId": ["W1", "W2"], "AssignmentStatus": ["Submitted", "Approved"],
                          "SubmitTime": ["Wed Nov 25 05:00:00 PST 2026"] * 2, "Input.key_1": ["a", "a"], "Input.text_1": ["x", "x"],
                          "Input.key_2": ["b", "b"], "Input.text_2": ["y", "y"],
                          "Answer.label_1": ["correct", "correct"], "Answer.label_2": ["incorrect", ""]})
    code, out, err, store = _import(tmp_path, "multi.csv", multi.to_csv(index=False))
    assert code == 0 and "[mturk]" in out and "skipped: 1 blank" in out, err
    assert lookup_labels(store, ["a", "b"]).kinds.tolist() == ["correct", "incorrect"]
    forms = pd.DataFrame({"HITId": ["H1", "H1", "H2"], "WorkerId": ["W1", "W2", "W1"], "AssignmentStatus": "Submitted",
                          "Input.key": ["a", "a", "b"],
                          "Answer.taskAnswers": [json.dumps([{"verdict": {"label": "correct"}}]),
                                                 json.dumps([{"verdict": {"label": "correct"}}]),
                                                 json.dumps([{"verdict": {"label": "incorrect"}}])]})
    code, out, err, store = _import(tmp_path, "forms.csv", forms.to_csv(index=False))
    assert code == 0, err
    assert lookup_labels(store, ["a", "b"]).kinds.tolist() == ["correct", "incorrect"]
    radio = forms.assign(**{"Answer.taskAnswers": [json.dumps([{"correct": {"on": True}, "incorrect": {"on": False}}]),
                                                   json.dumps([{"correct": {"on": False}, "incorrect": {"on": True}}]),
                                                   json.dumps([{"correct": {"on": False}, "incorrect": {"on": False}}])]})
    code, out, err, store = _import(tmp_path, "radio.csv", radio.to_csv(index=False))
    assert code == 0 and "skipped: 1 no single option selected" in out, err
    assert lookup_labels(store, ["a", "b"]).kinds.tolist() == ["disputed", "missing"]


def test_one_person_under_several_ids_is_one_annotator(tmp_path):
    rows = [{"meta": {"key": k}, "answer": a, "_input_hash": 1, "_session_id": s, "_timestamp": 1795000000 + i}
            for i, (k, a, s) in enumerate([("a", "accept", "reverb-2026-11-25_06-00-00"), ("b", "reject", "reverb-2026-11-26_09-00-00"),
                                           ("a", "reject", "reverb-bob")])]
    people = tmp_path / "people.json"
    people.write_text(json.dumps({"reverb-2026-11-25_06-00-00": "ann", "reverb-2026-11-26_09-00-00": "ann", "reverb-bob": "bob"}))
    code, out, err, store = _import(tmp_path, "db.jsonl", "".join(json.dumps(r) + "\n" for r in rows), "--annotator-map", str(people))
    assert code == 0 and "by 2 annotator(s)" in out, err
    (tmp_path / "people.csv").write_text("id,annotator\nreverb-bob,bob\n")
    assert cli("labels", "import", "--store", str(tmp_path / "s2"), "--annotator-map", str(tmp_path / "people.csv"),
               str(tmp_path / "db.jsonl"))[0] == 0
    (tmp_path / "bad.csv").write_text("who,person\nx,y\n")
    code, out, err = cli("labels", "import", "--store", str(tmp_path / "s3"), "--annotator-map", str(tmp_path / "bad.csv"),
                         str(tmp_path / "db.jsonl"))
    assert code == 2 and "bad.csv, line 1: the header is who,person" in err


def test_a_tools_own_word_wins_over_the_same_built_in_word(tmp_path):
    code, out, err, store = _import(tmp_path, "l.csv", "key,label\na,no\nb,yes\n", "--positive", "no", "--negative", "yes")
    assert code == 0, err
    assert lookup_labels(store, ["a", "b"]).kinds.tolist() == ["correct", "incorrect"]
    code, out, err, store = _import(tmp_path, "l.csv", "key,label\na,no\n", "--positive", "no", "--negative", "no")
    assert code == 2 and "given for two verdicts" in err


def test_plain_files_name_other_columns_and_a_single_task_object_reads(tmp_path):
    code, out, err, store = _import(tmp_path, "l.csv", "item,verdict\na,yes\n", "--key-field", "item", "--control", "verdict")
    assert code == 0 and lookup_labels(store, ["a"]).kinds.tolist() == ["correct"], err
    task = json.dumps(json.loads(label_studio_json())[0], indent=2)  # one task, pretty-printed
    code, out, err, store = _import(tmp_path, "task.json", task)
    assert code == 0 and "3 verdicts on 1 keys" in out, err


def test_a_time_in_the_future_is_refused_so_a_later_correction_counts(tmp_path):
    content = "key,label,annotator,time\na,correct,ann,2099-01-01T00:00:00Z\na,incorrect,ann,2026-11-25T00:00:00Z\n"
    code, out, err, store = _import(tmp_path, "l.csv", content)
    assert code == 2 and "row 1: the time 2099-01-01T00:00:00+00:00 is in the future" in err and "outrank every later correction" in err


@pytest.mark.parametrize("name, content, fmt, says", [
    ("l.csv", "Key,Label\n1,1\n", "auto", "column names are case-sensitive: rename 'Key' to 'key' and 'Label' to 'label'"),
    ("l.csv", "key,verdict\n1,1\n", "auto", "rename the column 'verdict' to 'label', or give --control verdict"),
    ("l.csv", "id,label\n1,1\n", "auto", "rename the column 'id' to 'key', or give --key-field id"),
    ("l.csv", "key\tlabel\n1\t1\n", "auto", "the columns are separated by tabs"),
    ("l.csv", "k1,yes\nk2,no\n", "auto", "no header row: add the line key,label at its top"),
    ("m.json", '[{"key": 1}]', "mturk", "--format mturk reads csv, and this file is json"),
    ("m.csv", "a,b\n1,2\n3,4,5,6,7\n", "mturk", "line 3: 5 cells where the header has 2; give every row as many"),
])
def test_label_file_mistakes_are_answered_with_the_fix(tmp_path, name, content, fmt, says):
    code, out, err, store = _import(tmp_path, name, content, "--format", fmt)
    assert code == 2 and says.lower() in err.lower() and len(err.strip().splitlines()) == 1 and "tokenizing" not in err, err


def test_mturk_two_answer_objects_for_one_item_are_skipped_and_a_missing_answer_column_is_named(tmp_path):
    forms = pd.DataFrame({"HITId": ["H1", "H2"], "WorkerId": ["W1", "W1"], "AssignmentStatus": "Submitted", "Input.key": ["a", "b"],
                          "Answer.taskAnswers": [json.dumps([{"verdict": {"label": "correct"}}, {"verdict": {"label": "incorrect"}}]),
                                                 json.dumps([{"verdict": {"label": "incorrect"}}])]})
    code, out, err, store = _import(tmp_path, "forms.csv", forms.to_csv(index=False))
    assert code == 0 and "skipped: 1 several answers" in out, err
    assert lookup_labels(store, ["a", "b"]).kinds.tolist() == ["missing", "incorrect"]
    radio = forms.assign(**{"Answer.taskAnswers": [json.dumps([{"correct": {"on": True}}, {"correct": {"on": True}}]),
                                                   json.dumps([{"correct": {"on": False}, "incorrect": {"on": True}}])]})
    code, out, err, store = _import(tmp_path, "radio.csv", radio.to_csv(index=False))
    assert code == 0 and "skipped: 1 several answers" in out, err
    gap = pd.DataFrame({"HITId": ["H1"], "WorkerId": ["W1"], "Input.key_1": ["a"], "Input.key_2": ["b"], "Input.key_3": ["c"],
                        "Answer.label_1": ["correct"], "Answer.label_3": ["incorrect"]})
    code, out, err, store = _import(tmp_path, "gap.csv", gap.to_csv(index=False))
    assert code == 2 and "no answer column 'Answer.label_2'" in err, err


def test_an_import_of_no_verdict_is_refused_naming_why_and_writes_nothing(tmp_path):
    def reject(tasks):
        for task in tasks:
            for ann in task["annotations"]:
                ann["last_action"] = "rejected"

    def textarea(tasks):
        for task in tasks:
            for ann in task["annotations"]:
                ann["result"] = [{"from_name": "label", "to_name": "text", "type": "textarea", "value": {"text": ["ok"]}}]

    code, out, err, store = _import(tmp_path, "rejected.json", _ls_tasks(reject=reject))
    assert code == 2 and "no verdict to import (" in err and "rejected" in err and "nothing was written" in err, err
    assert len(err.strip().splitlines()) == 1 and not list(Path(store).glob("*.parquet"))
    code, out, err, store = _import(tmp_path, "blank.csv", "key,label\na,\n")
    assert code == 2 and "no verdict to import (1 blank)" in err, err
    code, out, err, store = _import(tmp_path, "text.json", _ls_tasks(textarea=textarea))
    assert code == 2 and "no Choices control holds the verdict; its controls are 'label' (textarea)" in err, err
    assert not list(Path(store).glob("*.parquet"))


def test_a_default_control_name_matches_whatever_its_case(tmp_path):
    def capitalised(tasks):
        for task in tasks:
            for ann in task["annotations"]:
                for region in ann["result"]:
                    if region["from_name"] == "verdict":
                        region["from_name"] = "Verdict"

    tasks = _ls_tasks(blurry=_blurry_first, capitalised=capitalised)
    assert any(r["from_name"] == "Verdict" for t in tasks for a in t["annotations"] for r in a["result"])
    code, out, err, store = _import(tmp_path, "export.json", tasks)
    assert code == 0, err
    assert lookup_labels(store, list(TEXT)).kinds.to_dict() == EXPECTED


def test_the_import_line_counts_every_kind_of_verdict(tmp_path):
    code, out, err, store = _import(tmp_path, "l.csv", "key,label\na,correct\nb,incorrect\nc,cannot judge\nd,no\n")
    assert code == 0, err
    assert "4 verdicts on 4 keys by 1 annotator(s) (1 correct, 2 incorrect, 1 cannot judge) from 1 file(s)" in out, out


def test_a_label_file_is_a_typed_result_without_attrs(tmp_path):
    """What a file held besides its verdicts (format, skipped records, notes) is a frozen LabelFile's."""
    path = tmp_path / "answers.csv"
    path.write_text("key,label\n1,yes\n2,\n3,no\n4, \n")
    read = read_label_file(str(path))
    assert isinstance(read, LabelFile) and read.verdicts.attrs == {}
    assert read.format == "csv" and read.skipped == (("blank", 2),) and read.skipped_blank == 2 and read.notes == ()
    assert read.verdicts["key"].tolist() == ["1", "3"] and read.verdicts["label"].tolist() == [1, 0]
    with pytest.raises(AttributeError):
        read.format = "jsonl"  # frozen
    summary = import_labels(str(tmp_path / "store"), [str(path)])
    assert summary.formats == ("csv",) and summary.skipped == (("blank", 2),) and summary.labels == 2
