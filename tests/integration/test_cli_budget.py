"""Tests of ``prdist budget``: the annotation budgets of PAULA and the sampling baselines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prdist.cli import main
from prdist.paula.plan import plan_paula
from prdist.sampling import random_sampling_budget, random_sampling_reliable_from, stratified_budget

CONTRACT_KEYS = {
    "n", "eps", "window", "r_tilde", "l", "L", "g_l", "m", "gamma", "factor",
    "annotations", "random_sampling_annotations", "stratified_annotations",
    "precondition_met", "notes",
}  # fmt: skip


def _strict_json(text: str) -> dict:
    """Parse JSON, rejecting NaN and Infinity (not JSON, and unreadable to most consumers)."""

    def reject(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


def run_json(capsys, *args) -> dict:
    assert main(["budget", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return _strict_json(out)


@pytest.mark.parametrize(
    "n, eps, published",
    [(217_077, "0.03", 17_392), (35_615, "0.03", 11_292), (35_615, "0.05", 7_822)],
)
def test_json_reports_the_papers_plan_sizes(capsys, n, eps, published):
    result = run_json(capsys, "--n", str(n), "--eps", eps, "--window", "100")
    assert CONTRACT_KEYS <= result.keys()
    assert result["annotations"] == published


def test_json_figures_agree_with_the_library(capsys):
    result = run_json(capsys, "--n", "217077")  # defaults: eps 0.03, window 100, delta 0.05
    plan = plan_paula(217_077, eps=0.03, window=100)
    for key in ("r_tilde", "l", "L", "g_l", "m", "gamma", "factor", "precondition_met"):
        assert result[key] == getattr(plan, key), key
    assert (result["n"], result["eps"], result["window"], result["delta"]) == (217_077, 0.03, 100, 0.05)
    # Random sampling matches PAULA's guarantee by default: alpha = factor - 1, p = p_min = 0.5.
    assert result["alpha"] == plan.factor - 1 and result["p_min"] == 0.5
    assert result["random_sampling_annotations"] == random_sampling_budget(
        217_077, alpha=plan.factor - 1, p=0.5, delta=0.05
    )
    assert result["random_sampling_reliable_from"] == random_sampling_reliable_from(
        217_077, size=plan.size, alpha=plan.factor - 1, p=0.5, delta=0.05
    )
    budget = stratified_budget(217_077)
    assert result["stratified_annotations"] == budget.annotations
    assert result["stratified_samples_per_point"] == budget.samples_per_point
    assert result["stratified_expected_distinct"] == pytest.approx(budget.expected_distinct, abs=0.05)
    assert result["notes"] == []


def test_alpha_and_p_min_reproduce_the_papers_47030(capsys):
    result = run_json(capsys, "--n", "217077", "--alpha", "0.08", "--p-min", "0.7", "--delta", "0.05")
    assert result["random_sampling_annotations"] == 47030


def test_r_tilde_below_its_minimum_is_reported(capsys):
    result = run_json(capsys, "--n", "217077", "--r-tilde", "1000")
    assert result["r_tilde"] == 1000 and result["precondition_met"] is False
    assert any("r_tilde=1000" in note for note in result["notes"])


def test_infinite_gamma_gives_nulls_and_a_note(capsys):
    # r_tilde = 1 -> l = 0, m = floor(eps - 1) < 0: no finite guarantee to match.
    result = run_json(capsys, "--n", "1000", "--window", "1", "--r-tilde", "1")
    assert result["gamma"] is None and result["factor"] is None
    assert result["random_sampling_annotations"] is None and result["stratified_annotations"] is None
    assert any("gamma is infinite" in note for note in result["notes"])
    with_alpha = run_json(capsys, "--n", "1000", "--window", "1", "--r-tilde", "1", "--alpha", "0.1")
    expected = random_sampling_budget(1000, alpha=0.1, p=0.5, delta=0.05)
    assert with_alpha["random_sampling_annotations"] == expected


def test_small_resource_is_labeled_exhaustively(capsys):
    result = run_json(capsys, "--n", "3")
    for key in ("annotations", "random_sampling_annotations", "stratified_annotations"):
        assert result[key] == 3, key
    assert result["random_sampling_reliable_from"] is None
    assert any("every item is labeled" in note for note in result["notes"])


def test_table_names_and_explains_every_figure(capsys):
    assert main(["budget", "--n", "217077", "--eps", "0.03", "--window", "100"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert "217,077" in lines[0]
    rows = {line.split()[0]: line for line in lines[1:] if line.startswith("  ")}
    result = run_json(capsys, "--n", "217077")
    for key in ("annotations", "random_sampling_annotations", "stratified_annotations", "g_l", "m"):
        name, value, *meaning = rows[key].split()
        assert int(value) == result[key] and meaning, key
    # Values are right-aligned in one column.
    integer_rows = [key for key in rows if type(result.get(key)) is int]
    assert len(integer_rows) >= 5
    value_ends = {rows[key].index(f" {result[key]} ") + len(f" {result[key]}") for key in integer_rows}
    assert len(value_ends) == 1
    assert "precondition met: yes" in out


@pytest.mark.parametrize(
    "args, name",
    [
        (["--n", "217077", "--eps", "1.5"], "--eps"),
        (["--n", "0"], "--n"),
        (["--n", "217077", "--window", "-1"], "--window"),
        (["--n", "many"], "--n"),
        (["--n", "217077", "--eps", "small"], "--eps"),
        (["--n", "217077", "--r-tilde", "0"], "--r-tilde"),
        (["--n", "217077", "--delta", "1"], "--delta"),
        (["--n", "217077", "--p-min", "0"], "--p-min"),
        (["--n", "217077", "--alpha", "0"], "--alpha"),
        (["--eps", "0.03"], "--n"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_parameter(capsys, args, name):
    assert main(["budget", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert name in err


def test_installed_command_prints_the_papers_17392():
    prdist = Path(sys.executable).with_name("prdist")  # .venv/bin/prdist next to .venv/bin/python
    assert prdist.exists(), f"{prdist} is missing: install the package (make test does)"
    done = subprocess.run(
        [str(prdist), "budget", "--n", "217077", "--eps", "0.03", "--window", "100", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert _strict_json(done.stdout)["annotations"] == 17392
