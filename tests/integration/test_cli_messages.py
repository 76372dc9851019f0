"""What the command says: one line naming the fix, the closest command or option to a typo, the
right next command for the wrong kind of input, warnings as one line each, and a run summary that
shows several ranks and names every file written."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from prdist import population
from prdist.cli import main
from prdist.dataflow.synth import write_synthetic


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("prdist: error: ") and "prdist: error: prdist" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["rnu"], "(did you mean run?)"),
        (["histroy", "--runs", "x"], "(did you mean history?)"),
        (["labels", "exprt"], "(did you mean export?)"),
        (["run", "--method", "paulla"], "(did you mean paula?)"),
        (["run", "--resuorce", "x"], "(did you mean --resource?)"),
        (["labels", "status", "--stroe", "x"], "(did you mean --store?)"),
        (["history", "--runs", "x", "--seires=kb"], "(did you mean --series?)"),
    ],
)
def test_a_typo_is_one_line_with_the_closest_name(argv, hint, capsys):
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert hint in line and line.endswith("--help' for usage.")


def test_an_unknown_word_far_from_every_name_gets_no_guess(capsys):
    assert main(["zzzzzz"]) == 2
    line = _one_error_line(capsys)
    assert "invalid choice: 'zzzzzz'" in line and "did you mean" not in line


def test_a_subcommand_error_names_the_subcommand_once(capsys):
    assert main(["labels", "status"]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("prdist: error: labels status: ") and "--store" in line


@pytest.mark.parametrize("name", ["reverb.txt", "dump.tsv", "items.csv", "items.jsonl.gz"])
def test_a_text_dump_given_as_the_resource_points_to_ingest(name, tmp_path, capsys):
    dump = tmp_path / name
    dump.write_bytes(b"0\tthe lawyers\tdismissed by\the\t0.49\n")
    assert main(["run", "--resource", str(dump), "--out", str(tmp_path / "runs")]) == 2
    line = _one_error_line(capsys)
    assert "not Parquet" in line and "'prdist ingest FILE --out DIR --score COL --key COL'" in line
    assert not (tmp_path / "runs").exists()


def test_a_damaged_parquet_file_is_still_called_damaged_and_ingest_named(tmp_path, capsys):
    bad = tmp_path / "part-0.parquet"
    bad.write_bytes(b"PAR1 not really")
    assert main(["run", "--resource", str(bad), "--out", str(tmp_path / "runs")]) == 2
    line = _one_error_line(capsys)
    assert "not a readable Parquet file" in line and "prdist ingest" in line


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """A small resource with tied scores (a discrete model) and its truth column."""
    root = tmp_path_factory.mktemp("tied")
    model = population.discrete(neg=[0.1, 0.2, 0.3, 0.5], pos=[0.3, 0.5, 0.8, 0.9], prevalence=0.4)
    write_synthetic(model, n=800, out=str(root / "resource"), seed=2)
    return root


def test_a_run_with_bands_warns_once_in_one_line_and_names_what_it_wrote(tied, capsys):
    argv = ["run", "--resource", str(tied / "resource"), "--oracle-column", "label", "--bands", "--out", str(tied / "runs")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    warned = [line for line in captured.err.splitlines() if "warning" in line.lower()]
    assert len(warned) == 1 and warned[0].startswith("prdist: warning: ") and "share their value" in warned[0]
    assert ".py:" not in captured.err and "TiedScoresWarning" not in captured.err
    out = captured.out.strip().splitlines()
    run = out[-1]
    written = next(line for line in out if line.startswith("written: "))
    names = written.removeprefix("written: ").split(", ")
    assert "bands.parquet" in names and names[-1] == "manifest.json"
    (bands,) = [line for line in out if line.startswith("bands: ")]
    assert "at confidence 0.95 from 800 labeled items of the random arm" in bands and bands.endswith(", in bands.parquet")
    assert sorted(names) == sorted(os.listdir(run.removeprefix("file://")))
    # Several ranks on 800 items, not the last rank alone; every one a rank of bounds.parquet.
    header = out.index(next(line for line in out if line.split()[:3] == ["rank", "lower", "upper"]))
    shown = [int(line.split()[0].replace(",", "")) for line in out[header + 1:] if line.split()[0].replace(",", "").isdigit()]
    bounds = pd.read_parquet(f"{run}/bounds.parquet")
    assert len(shown) >= 4 and shown[-1] == 800 and set(shown) <= set(bounds["rank"])
    assert json.load(open(f"{run}/manifest.json"))["n"] == 800
