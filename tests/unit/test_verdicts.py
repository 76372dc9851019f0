"""Verdict words, aggregation of several annotators, Dawid-Skene and agreement (the pure core)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from prdist.errors import InputError
from prdist.verdicts.aggregation import (
    CANNOT_JUDGE,
    aggregate,
    agreement,
    dawid_skene_posterior,
    parse_verdicts,
)


def records(rows):
    frame = pd.DataFrame(rows, columns=["key", "verdict", "annotator"])
    frame["time"] = pd.to_datetime(np.arange(len(frame)), unit="s", utc=True)
    return frame


@pytest.mark.parametrize(
    ("word", "code"),
    [("1", 1), ("TRUE", 1), ("yes", 1), ("Correct", 1), ("accept", 1), (1, 1), (1.0, 1), (True, 1),
     ("0", 0), ("false", 0), ("No", 0), ("incorrect", 0), ("REJECT", 0), (0, 0), (False, 0),
     ("skip", CANNOT_JUDGE), ("Unsure", CANNOT_JUDGE), ("cannot judge", CANNOT_JUDGE), ("ignore", CANNOT_JUDGE)],
)
def test_every_verdict_word(word, code):
    assert parse_verdicts([word], origin="f").tolist() == [code]


def test_unknown_word_names_file_row_and_value():
    with pytest.raises(InputError, match=r"^votes.csv: row 3 has the verdict 'perhaps'; .*2 row\(s\)"):
        parse_verdicts(["yes", "no", "perhaps", 2], origin="votes.csv")


def test_majority_of_latest_per_annotator_ties_are_disputed():
    r = records([
        ("a", 0, "x"), ("a", 1, "x"), ("a", 1, "y"), ("a", 0, "z"),  # x corrected itself: 2 vs 1
        ("b", 1, "x"), ("b", 0, "y"),                                # tie
        ("c", CANNOT_JUDGE, "x"), ("c", CANNOT_JUDGE, "y"), ("c", 1, "z"),
        ("d", 1, "x"), ("d", CANNOT_JUDGE, "y"), ("d", 0, "z"),      # a tie; cannot judge does not vote
        ("e", CANNOT_JUDGE, "x"), ("e", CANNOT_JUDGE, "y"),          # nobody could judge it
        ("f", 1, "x"), ("f", CANNOT_JUDGE, "x"),                     # x's latest says cannot judge
    ])
    out = aggregate(r).table
    assert out["kind"].to_dict() == {"a": "correct", "b": "disputed", "c": "correct", "d": "disputed",
                                     "e": "cannot_judge", "f": "cannot_judge"}
    assert out["annotators"].to_dict() == {"a": 3, "b": 2, "c": 3, "d": 3, "e": 2, "f": 1}
    assert out["label"].iloc[[0, 2]].tolist() == [1.0, 1.0]
    assert out["label"].iloc[[1, 3, 4, 5]].isna().all()
    assert aggregate(r, "latest").table["kind"].to_dict() == {"a": "incorrect", "b": "incorrect", "c": "correct",
                                                              "d": "incorrect", "e": "cannot_judge", "f": "cannot_judge"}


def test_cannot_judge_never_votes_against_a_verdict():
    # {correct, cannot judge} was disputed and {cannot judge x2, correct} cannot judge: an annotator
    # who could not tell says nothing about the item, so the others decide.
    r = records([("a", 1, "x"), ("a", CANNOT_JUDGE, "y"), ("b", CANNOT_JUDGE, "x"), ("b", CANNOT_JUDGE, "y"), ("b", 0, "z")])
    assert aggregate(r).table["kind"].to_dict() == {"a": "correct", "b": "incorrect"}


def test_single_anonymous_annotator_is_latest_wins():
    r = records([("k", 1, ""), ("k", 0, "")])
    assert aggregate(r).table.loc["k", "kind"] == "incorrect"


def test_outcomes_for_keys_marks_missing():
    out = aggregate(records([("a", 1, "x")])).for_keys(["a", "zz"])
    assert out["kind"].tolist() == ["correct", "missing"] and math.isnan(out["label"].iloc[1])


def dawid_skene_oracle(votes, iters=200):
    """Dict-and-loop Dawid-Skene (binary), the slow obvious reference."""
    keys = sorted({k for k, _, _ in votes})
    anns = sorted({a for _, a, _ in votes})
    by_key = {k: [(a, v) for kk, a, v in votes if kk == k] for k in keys}
    t = {k: sum(v for _, v in by_key[k]) / len(by_key[k]) for k in keys}
    c = lambda x: min(max(x, 1e-6), 1 - 1e-6)  # noqa: E731
    for _ in range(iters):
        pi = c(sum(t.values()) / len(keys))
        sens, spec = {}, {}
        for a in anns:
            mine = [(k, v) for k, aa, v in votes if aa == a]
            sens[a] = c(sum(t[k] * v for k, v in mine) / max(sum(t[k] for k, _ in mine), 1e-12))
            spec[a] = c(sum((1 - t[k]) * (1 - v) for k, v in mine) / max(sum(1 - t[k] for k, _ in mine), 1e-12))
        new = {}
        for k in keys:
            p1, p0 = pi, 1 - pi
            for a, v in by_key[k]:
                p1 *= sens[a] if v else 1 - sens[a]
                p0 *= 1 - spec[a] if v else spec[a]
            new[k] = p1 / (p1 + p0)
        t = new
    return t


def test_dawid_skene_equals_the_loop_oracle():
    rng = np.random.default_rng(7)
    truth = rng.random(40) < 0.6
    skill = {"good": 0.95, "fair": 0.75, "coin": 0.5, "bad": 0.3}
    votes = [(f"k{i}", a, int(truth[i] if rng.random() < s else not truth[i]))
             for i in range(40) for a, s in skill.items() if rng.random() < 0.8]
    fast = dawid_skene_posterior([k for k, _, _ in votes], [a for _, a, _ in votes], [v for _, _, v in votes])
    slow = dawid_skene_oracle(votes)
    np.testing.assert_allclose(fast.to_numpy(), [slow[k] for k in fast.index], atol=1e-6)


def test_dawid_skene_breaks_ties_that_majority_leaves_disputed():
    # Three annotators always right and one right on every other item; on the extra items only
    # one reliable annotator and the coin flipper answer, and they disagree: majority cannot
    # decide, Dawid-Skene follows the annotator it learned to trust.
    truth = [1, 0] * 10
    rows = []
    for i, y in enumerate(truth):
        rows += [(f"k{i:02}", y, a) for a in ("r1", "r2", "r3")] + [(f"k{i:02}", y if i % 4 < 2 else 1 - y, "coin")]
    rows += [("t0", 1, "r1"), ("t0", 0, "coin"), ("t1", 0, "r1"), ("t1", 1, "coin")]
    r = records(rows)
    assert aggregate(r).table.loc[["t0", "t1"], "kind"].tolist() == ["disputed", "disputed"]
    ds = aggregate(r, "dawid-skene").table
    assert ds.loc[["t0", "t1"], "kind"].tolist() == ["correct", "incorrect"]
    assert ds["label"].iloc[:20].tolist() == [float(y) for y in truth]


def test_dawid_skene_needs_three_annotators_and_keeps_cannot_judge():
    with pytest.raises(InputError, match="at least 3 annotators"):
        aggregate(records([("a", 1, "x"), ("a", 1, "y")]), "dawid-skene")
    # Three annotators, but no key that three of them judged: nothing to learn accuracies from
    # (this once returned each key's single verdict as if the model had weighed it).
    disjoint = records([(f"k{i}", i % 2, "xyz"[i % 3]) for i in range(30)] + [("k0", 1, "y"), ("k0", CANNOT_JUDGE, "z")])
    with pytest.raises(InputError, match="the most any key has is 2"):
        aggregate(disjoint, "dawid-skene")
    r = records([("a", 1, "x"), ("a", 1, "y"), ("a", 0, "z"), ("b", CANNOT_JUDGE, "x"), ("b", CANNOT_JUDGE, "y")])
    assert aggregate(r, "dawid-skene").table["kind"].to_dict() == {"a": "correct", "b": "cannot_judge"}


def test_unknown_rule_is_refused():
    with pytest.raises(InputError, match="not one of majority, latest, dawid-skene"):
        aggregate(records([("a", 1, "x")]), "vote")


def alpha_oracle(units):
    """Krippendorff's nominal alpha from the coincidence matrix, written out (Krippendorff 2011)."""
    values = sorted({v for u in units for v in u})
    o = {(c, k): 0.0 for c in values for k in values}
    for u in units:
        if len(u) < 2:
            continue
        for i, j in itertools.permutations(range(len(u)), 2):
            o[u[i], u[j]] += 1 / (len(u) - 1)
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())
    d_o = sum(o[c, k] for c in values for k in values if c != k) / n
    d_e = sum(n_c[c] * n_c[k] for c in values for k in values if c != k) / (n * (n - 1))
    return 1 - d_o / d_e


def test_agreement_equals_the_coincidence_matrix_oracle_and_the_package():
    import krippendorff

    rng = np.random.default_rng(3)
    rows = [(f"k{i}", int(rng.choice([1, 0, CANNOT_JUDGE], p=[0.5, 0.4, 0.1])), a)
            for i in range(30) for a in "xyz" if rng.random() < 0.7]
    r = records(rows)
    judged = r[r["verdict"] != CANNOT_JUDGE]
    units = [list(g["verdict"]) for _, g in judged.groupby("key")]
    got = agreement(r)
    assert got.alpha == pytest.approx(alpha_oracle(units), abs=1e-12)
    # The package on the annotator x key matrix, cannot judge (and no verdict) as NaN.
    matrix = r.pivot(index="annotator", columns="key", values="verdict").replace(CANNOT_JUDGE, np.nan).to_numpy(dtype=float)
    assert got.alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-12)
    assert got.annotators == 3 and got.pairable_keys == sum(len(u) >= 2 for u in units)


def test_cannot_judge_is_missing_in_agreement():
    # Annotators who agree on every correct / incorrect verdict: alpha 1, whatever they could not
    # judge (with cannot judge as a category this was 0.775-like, below 1).
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, 40)
    rows = [(f"k{i}", CANNOT_JUDGE if rng.random() < 0.2 else int(truth[i]), a) for i in range(40) for a in "xyzw"]
    got = agreement(records(rows))
    assert got.alpha == 1.0 and got.annotators == 4


def test_agreement_undefined_without_pairs_or_spread():
    assert agreement(records([("a", 1, "x"), ("b", 0, "y")])).alpha is None
    assert agreement(records([("a", 1, "x"), ("a", 1, "y")])).alpha is None
    assert agreement(records([("a", 1, "x"), ("a", CANNOT_JUDGE, "y"), ("b", 0, "x")])).alpha is None


def test_the_verdict_parser_and_the_cut_off_targets_are_defined_once():
    """One ``parse_verdicts`` (the codes 1 / 0 / -1) and one ``TARGETS`` in the whole package: a
    second definition, under the same name or as a second literal of the targets, fails here."""
    import ast
    from pathlib import Path

    import prdist

    found = {"parse_verdicts": [], "TARGETS": [], "targets literal": []}
    for path in sorted(Path(prdist.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef) and node.name == "parse_verdicts":
                found["parse_verdicts"].append(path.name)
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TARGETS" for t in node.targets):
                found["TARGETS"].append(path.name)
            elif isinstance(node, ast.Tuple) and [getattr(e, "value", None) for e in node.elts] == [0.95, 0.9, 0.8, 0.7]:
                found["targets literal"].append(path.name)
    assert found == {"parse_verdicts": ["aggregation.py"], "TARGETS": ["derived.py"], "targets literal": ["derived.py"]}
