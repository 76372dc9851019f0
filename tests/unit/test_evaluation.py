"""prdist.evaluate and Evaluation: the notebook surface, against slow obvious oracles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import prdist
from prdist.errors import DataError, ParameterError
from prdist.ranking import key_hash


def _ranked_by_hand(scores, keys):
    """Rank order the slow way: descending score, then key hash, then key."""
    hashes = key_hash(np.asarray(keys, dtype=object) if isinstance(keys[0], str) else np.asarray(keys))
    return sorted(range(len(scores)), key=lambda i: (-scores[i], int(hashes[i]), keys[i]))


def _simulation(n, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.random(n).round(3)  # rounding makes ties
    truth = (rng.random(n) < scores).astype(float)
    return scores, truth


def test_to_label_lists_the_planned_items_in_rank_order():
    scores, _ = _simulation(5000)
    keys = [f"item-{i}" for i in range(scores.size)]
    ev = prdist.evaluate(pd.Series(scores), keys=keys, eps=0.05, window=20)
    order = _ranked_by_hand(scores.tolist(), keys)
    ranks = ev.plan.ranks
    assert ev.to_label["rank"].tolist() == ranks.tolist()
    assert ev.to_label["key"].tolist() == [keys[order[r - 1]] for r in ranks]
    assert ev.to_label["score"].tolist() == [scores[order[r - 1]] for r in ranks]
    assert list(ev.to_label.columns) == ["rank", "key", "score"]


def test_full_labels_give_bounds_that_contain_the_exact_precision_function():
    scores, truth = _simulation(20_000)
    ev = prdist.evaluate(scores, truth)
    order = _ranked_by_hand(scores.tolist(), list(range(scores.size)))
    exact = np.cumsum(truth[order]) / np.arange(1, scores.size + 1)
    r = np.arange(1, scores.size + 1)
    assert ev.to_label.empty
    assert np.all(ev.bounds.lower(r) <= exact + 1e-12)
    assert np.all(exact <= ev.bounds.upper(r) + 1e-12)
    np.testing.assert_allclose(ev.exact()["precision"], exact)


def test_labels_given_as_a_mapping_equal_labels_given_as_an_array():
    scores, truth = _simulation(8000, seed=3)
    ev = prdist.evaluate(scores, eps=0.05, window=30, confidence=None)
    answers = {key: truth[key] for key in ev.to_label["key"]}
    by_mapping = ev.with_labels(answers)
    by_array = prdist.evaluate(scores, truth, eps=0.05, window=30, confidence=None)
    pd.testing.assert_frame_equal(by_mapping.bounds.table(), by_array.bounds.table())
    assert by_mapping.truth is None and by_array.truth is not None


def test_with_labels_returns_a_new_evaluation_and_the_newest_verdict_wins():
    ev = prdist.evaluate([0.9, 0.8, 0.7, 0.6], keys=["a", "b", "c", "d"])
    first = ev.with_labels({"a": 1, "b": 0})
    second = first.with_labels(pd.Series({"b": True, "c": "SKIP", "d": None, "zz": 1}))
    assert len(ev.to_label) == 4 and ev.verdicts.empty
    assert first.to_label["key"].tolist() == ["c", "d"]
    assert second.to_label["key"].tolist() == ["d"]  # "skip" is never requested again
    assert second.labels.tolist()[:2] == [1.0, 1.0] and np.isnan(second.labels[2])
    assert second.counts == {"annotations": 4, "labeled": 2, "unknown": 2, "cannot_judge": 1, "awaiting": 1}
    assert second.unmatched == 1


def test_cutoffs_are_the_deepest_ranks_whose_lower_bound_reaches_the_target():
    scores, truth = _simulation(6000, seed=5)
    ev = prdist.evaluate(scores, truth, window=20)
    r = np.arange(1, ev.n + 1)
    lower = ev.bounds.lower(r)
    for row in ev.cutoffs.itertuples():
        reaching = r[lower >= row.target - 1e-9]
        assert row.rank == (reaching.max() if reaching.size else 0)
        if row.rank:
            assert row.score == ev.scores[row.rank - 1]
    assert list(ev.cutoffs.columns) == ["target", "rank", "score"]


def test_reprs_are_one_short_line():
    scores, truth = _simulation(50_000)
    ev = prdist.evaluate(scores, truth)
    for obj in (ev, ev.plan, ev.bounds):
        text = repr(obj)
        assert "\n" not in text and len(text) < 160, text
    assert repr(ev.plan).startswith("PaulaPlan(n=50000, eps=0.03, window=100")


def test_html_view_holds_the_summary_cards_and_the_bounds_plot():
    scores, truth = _simulation(5000)
    ev = prdist.evaluate(scores, truth)
    page = ev._repr_html_()
    assert page.startswith('<div class="prdist-summary">') and "<html" not in page
    assert page.count("<svg") == 1 and 'class="card"' in page
    assert "5,000" in page and "exact p(r)" in page
    assert f"{ev.bounds.lower(ev.n).item():.3f}" in page


def test_html_view_says_what_awaits_and_links_nowhere_it_cannot():
    scores, truth = _simulation(5000)
    ev = prdist.evaluate(scores)  # nothing labeled yet
    page = ev._repr_html_()
    assert f'<span class="badge neutral">awaiting labels ({ev.counts["awaiting"]:,})</span>' in page
    assert "complete" not in page and "no evidence against" not in page
    assert "nothing to test the assumptions on" in page
    done = ev.with_labels(dict(zip(ev.to_label["key"], truth[ev.to_label["key"]])))
    assert '<span class="badge ok">complete</span>' in done._repr_html_()
    # Labels the assumptions cannot hold for (precision rising with rank): the warning names the
    # full report, as the summary has no diagnostics section to link to.
    paper = prdist.evaluate(scores, confidence=None)
    rising = paper.with_labels(dict(zip(paper.to_label["key"], (paper.to_label["rank"] > 300).astype(int))))
    doubt = rising._repr_html_()
    assert rising.bounds.diagnostics.assumptions_plausible is False
    assert 'href="#diagnostics"' not in doubt and "full report (<code>.report()</code>)" in doubt
    assert 'href="#diagnostics"' in rising.report()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: prdist.evaluate([0.1, 0.2], keys=["a", "a"]), "occurs more than once"),
        (lambda: prdist.evaluate([0.1, 0.2], keys=["a"]), "one key per score"),
        (lambda: prdist.evaluate([0.1, np.nan]), "finite"),
        (lambda: prdist.evaluate([0.1, 0.2], [1, 0, 1]), "align the labels"),
        (lambda: prdist.evaluate([0.1, 0.2], [1, 2]), "only 0, 1"),
        (lambda: prdist.evaluate([0.1, 0.2]).with_labels({0: "maybe"}), "The verdict of key 0 is 'maybe'"),
        (lambda: prdist.evaluate([0.1, 0.2]).with_labels([1, 0]), "dict or a pandas Series"),
        (lambda: prdist.evaluate([0.1, 0.2]).with_labels({"0": 1, "1": 0}), "None of the 2 labeled keys is an item"),
        (lambda: prdist.evaluate(["x", "y"]), "must be numbers"),
    ],
)
def test_bad_input_is_refused_with_one_line(call, message):
    with pytest.raises(DataError) as info:
        call()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bad_parameters_name_the_parameter():
    with pytest.raises(ParameterError, match="'confidence' parameter of evaluate"):
        prdist.evaluate([0.1, 0.2], confidence=1.5)
    with pytest.raises(ParameterError, match="'eps' parameter of evaluate"):
        prdist.evaluate([0.1, 0.2], eps=2)
    with pytest.raises(ParameterError, match="'window' parameter of evaluate"):
        prdist.evaluate([0.1, 0.2], window=0)
    with pytest.raises(ParameterError, match="'method' parameter of evaluate must be 'paula'"):
        prdist.evaluate([0.1, 0.2], method="random")


def test_the_full_report_shows_the_plan_cutoffs_and_awaiting_items():
    scores, truth = _simulation(6000, seed=2)
    ev = prdist.evaluate(scores, window=20)
    ev = ev.with_labels({key: truth[key] for key in ev.to_label["key"][:-5]})
    page = ev.report(title="my resource")
    assert page.startswith("<!DOCTYPE html>") and "<title>my resource</title>" in page
    assert 'id="cutoffs"' in page and 'id="diagnostics"' in page
    assert f"{ev.counts['labeled']:,} / {ev.counts['annotations']:,}" in page
    assert "Items awaiting labels (first 5 of 5 by rank)" in page
    assert "Items awaiting labels (first 5 of 5 by rank)" in page
