"""The annotators' task: exported from the newest run under a runs root, with text joined in by id,
every column's type kept in every format, and filled from verdicts a team has (``labels fill``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from prdist.cli import main
from prdist.dataflow.labels.importer import read_label_file

N = 60


@pytest.fixture(scope="module")
def awaiting(tmp_path_factory):
    """A run of a small resource whose items carry a text id ("007") and an argument; no labels yet."""
    root = tmp_path_factory.mktemp("fill")
    ids = [f"{i % 20:03d}" for i in range(N)]
    frame = pd.DataFrame({"key": [f"k{i}" for i in range(N)], "score": np.linspace(1, 0, N),
                          "sentence": ids, "arg1": [f"=arg {i}" for i in range(N)]})
    (root / "resource").mkdir()
    frame.to_parquet(root / "resource" / "part-0.parquet", index=False)
    (root / "sentences.txt").write_text("".join(f"{i:03d}\tSentence number {i} .\n" for i in range(20)))
    argv = ["run", "--resource", str(root / "resource"), "--out", str(root / "runs")]
    assert main(argv) == 3
    return root, frame


def test_export_from_a_runs_root_joins_text_and_keeps_types(awaiting, tmp_path, capsys):
    root, frame = awaiting
    capsys.readouterr()
    join = ["--join", str(root / "sentences.txt"), "--join-columns", "sentence,sentence_text"]
    assert main(["labels", "export", "--run", str(root / "runs"), "--out", str(tmp_path / "task.json"), *join]) == 0
    out = capsys.readouterr().out.splitlines()
    (run,) = [p for p in (root / "runs").iterdir() if (p / "manifest.json").exists()]
    assert out == [f"prdist labels: {N} item(s) to annotate, from the run {root / 'runs' / run.name}", str(tmp_path / "task.json")]
    tasks = json.loads((tmp_path / "task.json").read_text())
    first = tasks[0]["data"]
    assert first == {"key": "k0", "sentence": "000", "arg1": "=arg 0", "sentence_text": "Sentence number 0 ."}
    assert all(isinstance(t["data"]["sentence"], str) for t in tasks)  # "007" stays text, never 7
    assert "$sentence_text" in (tmp_path / "task.json.xml").read_text()
    for name in ("task.csv", "task.jsonl", "task.parquet"):
        assert main(["labels", "export", "--run", str(root / "runs"), "--out", str(tmp_path / name), *join]) == 0
    assert list(pd.read_parquet(tmp_path / "task.parquet").columns) == ["key", "sentence", "arg1", "sentence_text", "label"]
    assert pd.read_parquet(tmp_path / "task.parquet")["sentence"].tolist() == frame["sentence"].tolist()
    assert json.loads((tmp_path / "task.jsonl").read_text().splitlines()[7])["sentence"] == "007"
    assert "'=arg 0" in (tmp_path / "task.csv").read_text()  # still safe to open in a spreadsheet


def test_fill_takes_verdicts_by_shared_columns_and_the_rest_as_cannot_judge(awaiting, tmp_path, capsys):
    root, frame = awaiting
    assert main(["labels", "export", "--run", str(root / "runs"), "--out", str(tmp_path / "task.csv")]) == 0
    # What a team has: a verdict for the first 40 items, by sentence id and argument, no header; one twice.
    rows = [f"{'correct' if i % 3 else 'incorrect'}\t{frame['sentence'][i]}\t{frame['arg1'][i]}\n" for i in range(40)]
    (tmp_path / "truth.tsv").write_text("".join(rows + rows[:1]))
    capsys.readouterr()
    argv = ["labels", "fill", str(tmp_path / "task.csv"), "--from", str(tmp_path / "truth.tsv"),
            "--from-columns", "label,sentence,arg1", "--rest", "cannot judge", "--out", str(tmp_path / "answers.csv")]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"prdist labels: {N} item(s): 40 label(s) from {tmp_path / 'truth.tsv'}, {N - 40} set to 'cannot judge'"
    read = read_label_file(str(tmp_path / "answers.csv")).verdicts.set_index("key")["label"]
    expected = [(1 if i % 3 else 0) if i < 40 else -1 for i in range(N)]
    assert read.loc[[f"k{i}" for i in range(N)]].tolist() == expected
    # The filled task imports; the run then completes.
    assert main(["labels", "import", "--store", str(root / "store2"), str(tmp_path / "answers.csv")]) == 0
    argv = ["run", "--resource", str(root / "resource"), "--labels", str(root / "store2"), "--out", str(tmp_path / "runs")]
    assert main(argv) == 0


def test_fill_reads_and_writes_json_lines_and_an_empty_task(awaiting, tmp_path, capsys):
    root, _ = awaiting
    assert main(["labels", "export", "--run", str(root / "runs"), "--out", str(tmp_path / "task.jsonl")]) == 0
    capsys.readouterr()
    assert main(["labels", "fill", str(tmp_path / "task.jsonl"), "--rest", "skip", "--out", str(tmp_path / "a.jsonl")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"prdist labels: {N} item(s): {N} set to 'skip'"
    assert (read_label_file(str(tmp_path / "a.jsonl")).verdicts["label"] == -1).sum() == N
    (tmp_path / "empty.jsonl").write_text("")  # what a run with nothing to annotate exports
    assert main(["labels", "fill", str(tmp_path / "empty.jsonl"), "--rest", "skip", "--out", str(tmp_path / "b.jsonl")]) == 0
    assert "0 item(s): 0 set to 'skip'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "truth", "message"),
    [
        ([], None, "Nothing to fill with: give --from FILE"),
        (["--rest", "skip", "--out", "answers.json"], None, "must be a .csv or .jsonl file"),
        (["--rest", "maybe"], None, "maybe"),
        (["--from-columns", "label,sentence"], None, "--from-columns names the columns of a --from file"),
        (["--from-columns", "label,sentence,arg1"], "yes\t000\t=arg 0\nno\t000\t=arg 0\n",
         "2 rows give different values for the same sentence, arg1"),
        (["--from-columns", "verdict,sentence,arg1"], "yes\t000\t=arg 0\n", "no column 'label' holds the verdicts"),
        (["--from-columns", "label,nothing"], "yes\t000\n", "share none with the task's"),
        (["--from-columns", "label,label"], "yes\t000\n", "--from-columns must name distinct columns"),
        (["--from-columns", "label,arg1,sentence", "--rest", "cannot judge"], "yes\t000\t=arg 0\n",
         "no row matches any of the task's 60 item(s) on arg1, sentence (compared as text); check that --from-columns"),
        (["--from-columns", "label,sentence,arg1"], "yes\t999\t=arg 0\n", "no row matches any of the task's 60 item(s)"),
        (["--from-columns", "label,sentence", "--rest", "skip"], "yes\t000\t=arg 0\n",
         "its rows hold 3 field(s) but --from-columns names 2 column(s); name one column per field with --from-columns"),
    ],
)
def test_fill_refuses_in_one_line_and_writes_nothing(awaiting, tmp_path, capsys, args, truth, message):
    root, _ = awaiting
    assert main(["labels", "export", "--run", str(root / "runs"), "--out", str(tmp_path / "task.csv")]) == 0
    if truth is not None:
        (tmp_path / "truth.tsv").write_text(truth)
        args = ["--from", str(tmp_path / "truth.tsv"), *args]
    capsys.readouterr()
    assert main(["labels", "fill", str(tmp_path / "task.csv"), "--out", str(tmp_path / "answers.csv"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "answers.csv").exists()


def test_export_refuses_a_root_without_runs(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["labels", "export", "--run", str(tmp_path / "empty"), "--out", str(tmp_path / "t.csv")]) == 2
    assert "is not a committed run directory (no manifest.json) nor a root" in capsys.readouterr().err


def test_export_refuses_a_join_that_matches_no_item_and_counts_the_items_it_misses(awaiting, tmp_path, capsys):
    root, _ = awaiting
    (tmp_path / "half.txt").write_text("".join(f"{i:03d}\tSentence number {i} .\n" for i in range(10)))
    capsys.readouterr()
    argv = ["labels", "export", "--run", str(root / "runs"), "--out", str(tmp_path / "task.csv"), "--join", str(tmp_path / "half.txt")]
    assert main([*argv, "--join-columns", "sentence,sentence_text"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "prdist labels: 30 of them without joined text (no --join row matches them)"
    assert main([*argv, "--join-columns", "sentence_text,sentence", "--out", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no row matches any of the task's 60 item(s) on sentence (compared as text)" in err[0], err
    assert not (tmp_path / "none.csv").exists()
    (tmp_path / "done").mkdir()  # a committed run with nothing to annotate
    (tmp_path / "done" / "manifest.json").write_text("{}")
    assert main(["labels", "export", "--run", str(tmp_path / "done"), "--out", str(tmp_path / "t.csv"), "--join",
                 str(tmp_path / "half.txt"), "--join-columns", "sentence,sentence_text"]) == 2
    assert "has no item to annotate, so --join has nothing to join" in capsys.readouterr().err
