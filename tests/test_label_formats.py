"""Each annotation tool's export, shaped as the tool writes it, read into the same verdict records."""

from __future__ import annotations

import json

import pandas as pd
import pytest

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
    assert read_label_file(str(path), words=words)["label"].tolist()[:3] == [1, 1, 0]


def test_a_json_array_of_plain_records_is_read_as_one(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps([{"key": 1, "label": "yes"}, {"key": 2, "label": "skip"}]))
    frame = read_label_file(str(path))
    assert frame.attrs["format"] == "jsonl" and frame["label"].tolist() == [1, -1]


@pytest.mark.parametrize(
    ("name", "content", "fmt", "message"),
    [
        ("t.json", json.dumps([{"data": {"text": "x"}, "annotations": []}]), "auto", "task 1 .* has no 'key' in its data"),
        ("p.jsonl", json.dumps({"answer": "accept", "_input_hash": 1, "meta": {}}), "auto", "line 1 has neither 'key' nor 'meta.key'"),
        ("m.csv", "WorkerId,Input.text,Answer.label\nA1,x,yes\n", "mturk", "no 'Input.key' column"),
        ("m.csv", "Input.key,Answer.a,Answer.b\n1,yes,no\n", "auto", "no verdict column found"),
        ("x.csv", "key,label\n1,1\n", "excel", "not one of auto, csv"),
    ],
)
def test_malformed_exports_are_refused_with_the_fix(tmp_path, name, content, fmt, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises((DataError, InputError), match=message):
        read_label_file(str(path), fmt=fmt)
