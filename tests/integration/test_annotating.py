"""The annotation loop on the real ReVerb data, with every extraction: the unlabeled ones answered
"cannot judge", three annotators voting, their votes coming back as Label Studio, MTurk and Prodigy
exports. The run completes (exit 0) with bounds equal to the assumption-free counts under majority
voting, bands are written (with their worst case over the items nobody can judge), the comparison
of the six systems writes compare.parquet, and a comparison awaiting labels shows annotators the
extractions themselves."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support.cli_run import cli
from prdist.ranking import rank_order
from tests.support.reverb_data import load_reverb
from tests.support.reverb_parquet import REVERB, write_frame

pytestmark = [
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not (REVERB / "labels.txt").is_file(), reason=f"the shared ReVerb data is not at {REVERB}"),
]
ANNOTATORS = ("ann", "bob", "cy")


def reverb_resource(root: Path, name: str = "reverb") -> tuple[str, pd.DataFrame]:
    """One system's extractions, all of them, with the item columns an annotator reads."""
    frame = load_reverb(REVERB).systems[name]
    parts = frame["key"].str.split("\t", expand=True)
    items = pd.DataFrame({"key": frame["key"], "score": frame["score"], "sentence_id": parts[0], "arg1": parts[1],
                          "rel": parts[2], "arg2": parts[3]})
    return write_frame(items, str(root / name)), frame


def votes_for(frame: pd.DataFrame) -> pd.DataFrame:
    """Each annotator's verdict: the ReVerb label (one annotator flips every fifth item, outvoted),
    "cannot judge" by all where ReVerb has no label."""
    rows = []
    for i, (key, label) in enumerate(zip(frame["key"], frame["label"])):
        for who in ANNOTATORS:
            if np.isnan(label):
                word = "cannot judge"
            else:
                flip = who == "cy" and i % 5 == 0
                word = "correct" if (label == 1) != flip else "incorrect"
            rows.append({"key": key, "annotator": who, "word": word, "n": len(rows)})
    return pd.DataFrame(rows)


def label_studio_export(task_file: Path, votes: pd.DataFrame) -> str:
    tasks = json.loads(task_file.read_text())
    by_key = {k: g for k, g in votes.groupby("key")}
    out = []
    for tid, task in enumerate(tasks, start=1):
        annotations = []
        for v in by_key[task["data"]["key"]].itertuples():
            cancelled = v.word == "cannot judge"
            annotations.append({"id": v.n, "completed_by": ANNOTATORS.index(v.annotator) + 1, "was_cancelled": cancelled,
                                "result": [] if cancelled else [{"from_name": "verdict", "to_name": "field_0", "type": "choices",
                                                                 "value": {"choices": [v.word]}}],
                                "created_at": "2026-11-25T06:00:00Z", "updated_at": "2026-11-25T06:00:00Z", "task": tid})
        out.append({"id": tid, "data": task["data"], "annotations": annotations, "predictions": []})
    return json.dumps(out)


def mturk_export(votes: pd.DataFrame) -> str:
    return pd.DataFrame({"HITId": votes["key"].factorize()[0], "WorkerId": votes["annotator"], "AssignmentStatus": "Submitted",
                         "SubmitTime": "Wed Nov 25 05:00:00 PST 2026", "Input.key": votes["key"],
                         "Answer.label": votes["word"]}).to_csv(index=False)


def prodigy_export(votes: pd.DataFrame) -> str:
    answer = {"correct": "accept", "incorrect": "reject", "cannot judge": "ignore"}
    return "".join(json.dumps({"text": k, "meta": {"key": k}, "_input_hash": 1, "_task_hash": n, "answer": answer[w],
                               "_annotator_id": f"reverb-{a}", "_timestamp": 1795000000}) + "\n"
                   for k, a, w, n in votes[["key", "annotator", "word", "n"]].itertuples(index=False))


def assumption_free(frame: pd.DataFrame, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower / upper precision at ``ranks`` counting unknown items as incorrect / correct (the
    ReVerb labels are the majority here), in the run's rank order."""
    order = frame["label"].to_numpy()[rank_order(frame["score"].to_numpy(), frame["key"].to_numpy())]
    known = np.cumsum(order == 1)
    unknown = np.cumsum(np.isnan(order))
    return known[ranks - 1] / ranks, (known[ranks - 1] + unknown[ranks - 1]) / ranks


def test_reverb_loop_completes_with_cannot_judge_from_every_tool(tmp_path):
    resource, frame = reverb_resource(tmp_path)
    runs = str(tmp_path / "runs")
    args = ["--resource", resource, "--out", runs, "--confidence", "0.95", "--bands"]

    (tmp_path / "ls-store").mkdir()  # an empty store: exists, holds nothing yet
    code, out, err = cli("run", *args, "--labels", str(tmp_path / "ls-store"))
    assert code == 3, err
    first = out.strip().splitlines()[-1]
    assert json.loads(Path(first, "manifest.json").read_text())["counts"]["awaiting"] == 727
    task = tmp_path / "task.json"
    assert cli("labels", "export", "--run", first, "--format", "label-studio", "--out", str(task))[0] == 0
    shown = json.loads(task.read_text())[0]["data"]
    assert {"key", "arg1", "rel", "arg2"} <= set(shown) and "score" not in shown and "rank" not in shown
    assert "cannot judge" in Path(str(task) + ".xml").read_text()

    votes = votes_for(frame)
    exports = {"ls-store": ("export.json", label_studio_export(task, votes)),
               "mturk-store": ("Batch_1_batch_results.csv", mturk_export(votes)),
               "prodigy-store": ("db-out.jsonl", prodigy_export(votes))}
    finished = {}
    for store, (name, content) in exports.items():
        (tmp_path / name).write_text(content)
        assert cli("labels", "import", "--store", str(tmp_path / store), str(tmp_path / name))[0] == 0
        code, out, err = cli("run", *args, "--labels", str(tmp_path / store))
        assert code == 0, err
        finished[store] = Path(out.strip().splitlines()[-1])

    for run in finished.values():
        text = (run / "manifest.json").read_text()
        manifest = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in manifest.json"))
        c = manifest["counts"]
        assert (c["annotations"], c["labeled"], c["cannot_judge"], c["disputed"], c["awaiting"]) == (727, 619, 108, 0, 0)
        assert manifest["agreement"]["annotators"] == 3 and 0 < manifest["agreement"]["krippendorff_alpha"] < 1
        assert (run / "bands.parquet").exists() and manifest["bands"]["cannot_judge_left_out"] == 108
        bands = pd.read_parquet(run / "bands.parquet")
        # 108 unjudged arm items (tied scores interchangeable: about 2^99 distinct assignments): their
        # worst case is not computed, and says so.
        assert bands["precision_worst_low"].isna().all() and bands["precision_worst_high"].isna().all()
        assert manifest["bands"]["worst_case_computed"] is False and manifest["bands"]["band_mean_width"] > 0
        assert "not computed (NaN): the 108 arm items" in manifest["bands"]["worst_case"]
        assert "about 2^99 distinct assignments" in manifest["bands"]["worst_case"]
        bounds = pd.read_parquet(run / "bounds.parquet")
        lower, upper = assumption_free(frame, bounds["rank"].to_numpy())
        np.testing.assert_allclose(bounds["precision_lower"], lower, atol=1e-12)
        np.testing.assert_allclose(bounds["precision_upper"], upper, atol=1e-12)
        report = (run / "report.html").read_text()
        assert "nobody can judge" in report and "Krippendorff" in report and "precision_worst_low" in report

    code, out, _ = cli("labels", "status", "--store", str(tmp_path / "mturk-store"), "--json")
    status = json.loads(out)
    assert status["items"] == 727 and status["verdicts"]["cannot_judge"] == 108
    assert status["annotators"] == {f"{a}": 727 for a in ANNOTATORS}


def test_compare_proceeds_without_items_nobody_can_judge(tmp_path):
    data = load_reverb(REVERB)
    systems = [f"{name}={write_frame(f[['key', 'score']], str(tmp_path / name))}" for name, f in data.systems.items()]
    keys = pd.concat([f[["key", "label"]] for f in data.systems.values()]).drop_duplicates("key")
    words = np.where(keys["label"].isna(), "cannot judge", np.where(keys["label"] == 1, "yes", "no"))
    pd.DataFrame({"key": keys["key"], "label": words}).to_csv(tmp_path / "all.csv", index=False)
    store = str(tmp_path / "store")
    assert cli("labels", "import", "--store", store, str(tmp_path / "all.csv"))[0] == 0
    argv = ["compare", *sum((["--system", s] for s in systems), []), "--labels", store, "--budget", "300",
            "--seed", "1", "--out", str(tmp_path / "cmp")]
    code, out, err = cli(*argv)
    assert code == 0, err
    run = Path(out.strip().splitlines()[-1])
    result = pd.read_parquet(run / "compare.parquet")
    assert ((result["precision_worst_low"] <= result["precision_ci_low"]) & (result["precision"] <= result["precision_worst_high"])).all()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["cannot_judge"] > 0 and manifest["counts"]["awaiting"] == 0
    assert any("missing at random" in note for note in manifest["diagnostics"]["notes"])


def test_compare_task_shows_the_extractions_to_annotators(tmp_path):
    """A comparison awaiting labels hands annotators the extraction (sentence, arg1, rel, arg2),
    never the systems' scores; their Label Studio verdicts complete it."""
    data = load_reverb(REVERB)
    text = pd.read_csv(REVERB / "sentences.txt", sep="\t", header=None, names=["id", "sentence"], dtype=str,
                       quoting=csv.QUOTE_NONE, keep_default_na=False).set_index("id")["sentence"]
    systems = []
    for name in ("reverb", "textrunner", "woe_parse"):
        frame = data.systems[name]
        parts = frame["key"].str.split("\t", expand=True)
        items = pd.DataFrame({"key": frame["key"], "score": frame["score"], "sentence": parts[0].map(text),
                              "arg1": parts[1], "rel": parts[2], "arg2": parts[3]})
        systems += ["--system", f"{name}={write_frame(items, str(tmp_path / name))}"]
    (tmp_path / "store").mkdir()  # an empty store: exists, holds nothing yet
    argv = ["compare", *systems, "--labels", str(tmp_path / "store"), "--budget", "60", "--seed", "4", "--out", str(tmp_path / "cmp")]
    code, out, err = cli(*argv)
    assert code == 3, err
    run = Path(out.strip().splitlines()[-1])
    drawn = set(pd.read_parquet(run / "sample.parquet")["key"])
    task = pd.read_csv(run / "annotation_task.csv", dtype=str, keep_default_na=False)
    assert set(task["key"]) == drawn and len(task) == len(drawn)  # nothing labeled yet: every drawn item
    parts = task["key"].str.split("\t", expand=True)
    assert (task["arg1"] == parts[1]).all() and (task["rel"] == parts[2]).all() and (task["arg2"] == parts[3]).all()
    assert (task["sentence"] == parts[0].map(text)).all() and (task["sentence"] != "").all()

    exported = tmp_path / "task.json"
    assert cli("labels", "export", "--run", str(run), "--format", "label-studio", "--out", str(exported))[0] == 0
    assert set(json.loads(exported.read_text())[0]["data"]) == {"key", "sentence", "arg1", "rel", "arg2"}
    every = pd.concat([data.systems[n][["key", "label"]] for n in ("reverb", "textrunner", "woe_parse")]).drop_duplicates("key")
    (tmp_path / "export.json").write_text(label_studio_export(exported, votes_for(every.reset_index(drop=True))))
    assert cli("labels", "import", "--store", str(tmp_path / "store"), str(tmp_path / "export.json"))[0] == 0
    code, out, err = cli(*argv)
    assert code == 0, err
    assert (Path(out.strip().splitlines()[-1]) / "compare.parquet").exists()
