"""The annotation loop through a real Label Studio server: tasks exported by prdist imported through
its API, three simulated annotators' verdicts (cannot judge as a skipped task) created through its
API, a second Choices control answered first, unsubmitted drafts and rejected annotations, the export fetched through its API (JSON, and
JSON-MIN and CSV from its converter) and imported into the store, and the run completing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli_run import cli
from prdist.dataflow.labels.store import lookup_labels
from tests.support.reverb_parquet import REVERB, write_frame
from tests.integration.test_annotating import reverb_resource

pytestmark = [
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not (REVERB / "labels.txt").is_file(), reason=f"the shared ReVerb data is not at {REVERB}"),
]
ITEMS = 60  # ReVerb extractions in the round trip (3 annotations each through the API)
DRAFTS, REJECTED = 3, 2
BLURRY = '  <Choices name="blurry" toName="field_0" choice="single"><Choice value="yes"/><Choice value="no"/></Choices>\n'



@pytest.mark.slow  # the one test of a live Label Studio: its server takes 3-5 min to start at load 8-10 (197 s + 109 s)
def test_round_trip_through_label_studio(tmp_path, label_studio):
    _, frame = reverb_resource(tmp_path / "full")
    frame = frame.iloc[:ITEMS].reset_index(drop=True)
    resource = write_frame(frame.drop(columns="label").assign(text=frame["key"].str.replace("\t", " | ")), str(tmp_path / "small"))
    store, runs = str(tmp_path / "store"), str(tmp_path / "runs")
    (tmp_path / "store").mkdir()  # an empty store
    args = ["--resource", resource, "--labels", store, "--out", runs, "--confidence", "none"]
    code, out, err = cli("run", *args)
    assert code == 3, err
    task = tmp_path / "task.json"
    assert cli("labels", "export", "--run", out.strip().splitlines()[-1], "--format", "label-studio", "--out", str(task))[0] == 0

    api = label_studio.client()
    # A second yes/no question, answered first: the verdict is still read from the control named "verdict".
    config = Path(f"{task}.xml").read_text().replace("</View>", BLURRY + "</View>")
    project = api.post("/api/projects", json={"title": "prdist ReVerb", "label_config": config})
    assert project.status_code == 201, project.text
    pid = project.json()["id"]
    assert api.post(f"/api/projects/{pid}/import", json=json.loads(task.read_text())).status_code == 201
    users = [api.post("/api/users", json={"email": f"{n}@example.org", "username": n, "first_name": n}).json()["id"]
             for n in ("ann", "bob", "cy")]
    tasks = api.get("/api/tasks", params={"project": pid, "page_size": 1000}).json()["tasks"]
    assert len(tasks) == ITEMS
    truth = dict(zip(frame["key"], frame["label"]))
    for t in tasks:
        label = truth[t["data"]["key"]]
        for i, user in enumerate(users):
            if np.isnan(label):  # nobody can judge it: every annotator skips the task
                body = {"result": [], "was_cancelled": True, "completed_by": user}
            else:
                wrong = i == 2 and t["id"] % 3 == 0  # the third annotator errs now and then, outvoted
                word = "correct" if (label == 1) != wrong else "incorrect"
                body = {"result": [{"from_name": "blurry", "to_name": "field_0", "type": "choices", "value": {"choices": ["yes"]}},
                                   {"from_name": "verdict", "to_name": "field_0", "type": "choices",
                                    "value": {"choices": [word]}}], "completed_by": user}
            created = api.post(f"/api/tasks/{t['id']}/annotations", json=body)
            assert created.status_code == 201, created.text
    spam = api.post("/api/users", json={"email": "spam@example.org", "username": "spam", "first_name": "spam"}).json()["id"]
    judged_tasks = [t for t in tasks if not np.isnan(truth[t["data"]["key"]])]
    for t in judged_tasks[:REJECTED]:  # a wrong verdict a reviewer rejected (Label Studio records it as last_action)
        word = "incorrect" if truth[t["data"]["key"]] == 1 else "correct"
        body = {"result": [{"from_name": "verdict", "to_name": "field_0", "type": "choices", "value": {"choices": [word]}}],
                "completed_by": spam, "last_action": "rejected"}
        assert api.post(f"/api/tasks/{t['id']}/annotations", json=body).status_code == 201
    for t in tasks[:DRAFTS]:  # an unsubmitted draft is never a verdict
        draft = api.post(f"/api/tasks/{t['id']}/drafts", json={"result": [{"from_name": "verdict", "to_name": "field_0",
                                                                          "type": "choices", "value": {"choices": ["incorrect"]}}],
                                                               "lead_time": 1.0})
        assert draft.status_code == 201, draft.text
    for kind, name in (("JSON", "export.json"), ("JSON_MIN", "export-min.json"), ("CSV", "export.csv")):
        export = api.get(f"/api/projects/{pid}/export", params={"exportType": kind})
        assert export.status_code == 200
        (tmp_path / name).write_bytes(export.content)

    code, out, err = cli("labels", "import", "--store", store, str(tmp_path / "export.json"))
    assert code == 0 and "[label-studio]" in out and "by 3 annotator(s)" in out and "note:" not in out, err
    assert f"skipped: {DRAFTS} draft, {REJECTED} rejected" in out
    rejected = {t["data"]["key"] for t in judged_tasks[:REJECTED]}  # flat exports carry no reviews: left out here
    judged = [k for k in frame["key"][frame["label"].notna()] if k not in rejected]
    for flat in ("export-min.json", "export.csv"):  # the server's own converter: same verdicts, and says what it lost
        flat_store = str(tmp_path / f"store-{flat}")
        code, flat_out, err = cli("labels", "import", "--store", flat_store, str(tmp_path / flat))
        assert code == 0 and "carry no skipped tasks" in flat_out, err
        assert (lookup_labels(flat_store, judged).labels == lookup_labels(store, judged).labels).all()
    code, out, err = cli("run", *args)
    assert code == 0, err
    counts = json.loads((Path(out.strip().splitlines()[-1]) / "manifest.json").read_text())["counts"]
    unjudged = int(frame["label"].isna().sum())
    assert unjudged > 0
    assert (counts["annotations"], counts["labeled"], counts["cannot_judge"], counts["awaiting"]) == (ITEMS, ITEMS - unjudged, unjudged, 0)
    assert counts["positives"] == int((frame["label"] == 1).sum())
