"""The ReVerb loader, and the joint estimators validated on the real ReVerb data.

The data live beside the clone (../shared/data/reverb-emnlp2011); the published counts in its
README are the oracle for the loader. For the validation each system's labeled extractions are
its output (sampled uniformly), so every system's true precision and pooled recall are known.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdist.errors import DataError, ParameterError
from prdist.importance import (
    SystemOutput,
    draw_joint_sample,
    estimate_precision,
    estimate_recall,
    pool_membership,
)
from tests.support.reverb_data import REVERB_SYSTEMS, load_reverb, reverb_key

from tests.support.paths import REVERB  # noqa: E402
needs_data = pytest.mark.skipif(
    not (REVERB / "labels.txt").is_file(),
    reason=f"the shared ReVerb data is not at {REVERB} (CI places shared/ beside the clone)",
)

# ../shared/data/README.md: extractions / labeled / correct per system.
PUBLISHED = {
    "reverb": (727, 619, 315),
    "reverb_no_lex": (758, 628, 290),
    "textrunner": (798, 687, 204),
    "textrunner_reverb": (837, 742, 261),
    "woe_parse": (1028, 881, 324),
    "woe_pos": (861, 756, 218),
}


def _counts(frame):
    return len(frame), int(frame["label"].notna().sum()), int((frame["label"] == 1).sum())


# --------------------------------------------------------------------------------------------
# Loader
# --------------------------------------------------------------------------------------------


@needs_data
def test_rows_as_published_match_the_readme_counts():
    data = load_reverb(REVERB, duplicates="keep")
    assert tuple(data.systems) == REVERB_SYSTEMS
    assert {name: _counts(frame) for name, frame in data.systems.items()} == PUBLISHED
    assert len(data.labels) == 2474 and int(data.labels["label"].sum()) == 621
    assert set(data.duplicates_dropped.values()) == {0}


@needs_data
def test_default_keeps_each_extraction_once_with_its_highest_score():
    raw = load_reverb(REVERB, duplicates="keep")
    data = load_reverb(REVERB)
    for name in REVERB_SYSTEMS:
        frame, rows = data.systems[name], raw.systems[name]
        assert frame["key"].is_unique
        assert frame.columns.tolist() == ["key", "score", "label"]
        assert frame["score"].dtype == np.float64 and frame["label"].dtype == np.float64
        best = rows.groupby("key", sort=False)["score"].max()
        pd.testing.assert_series_equal(frame.set_index("key")["score"], best, check_names=False)
        assert data.duplicates_dropped[name] == len(rows) - len(frame)
        # Dropping a duplicate row never drops a labeled or correct extraction's key.
        labeled = rows.drop_duplicates("key")
        assert _counts(frame) == _counts(labeled)
    # Only woe_pos repeats tuples; the README's 861/756/218 count its three repeated rows.
    assert {n: d for n, d in data.duplicates_dropped.items() if d} == {"woe_pos": 3}
    assert _counts(data.systems["woe_pos"]) == (861 - 3, 756 - 3, 218)


@needs_data
def test_keys_and_labels_follow_the_files():
    data = load_reverb(REVERB)
    first = (REVERB / "extractions" / "reverb.txt").read_text().splitlines()[0].split("\t")
    assert data.systems["reverb"]["key"].iloc[0] == reverb_key(int(first[0]), *first[1:4])
    assert data.systems["reverb"]["score"].iloc[0] == float(first[4])
    labels = data.labels.set_index("key")["label"]
    assert data.labels["key"].is_unique and data.labels["label"].isin([0.0, 1.0]).all()
    for frame in data.systems.values():
        np.testing.assert_array_equal(frame["label"].to_numpy(),
                                      frame["key"].map(labels).to_numpy(dtype=float))


def _write(root: Path, labels: str, extraction: str = "0\ta\tb\tc\t0.5\n") -> Path:
    (root / "extractions").mkdir(parents=True)
    (root / "labels.txt").write_text(labels)
    for name in REVERB_SYSTEMS:
        (root / "extractions" / f"{name}.txt").write_text(extraction)
    return root


def test_loader_reads_fields_verbatim(tmp_path):
    # Quotes, "NA" and "null" are ordinary words in extracted text.
    root = _write(tmp_path / "d", '1\t3\tNA\t"said\tnull\n',
                  extraction='3\tNA\t"said\tnull\t0.25\n3\tNA\t"said\tnull\t0.75\n')
    data = load_reverb(root)
    frame = data.systems["reverb"]
    assert frame["key"].tolist() == ['3\tNA\t"said\tnull']
    assert frame["score"].tolist() == [0.75] and frame["label"].tolist() == [1.0]
    assert len(load_reverb(root, duplicates="keep").systems["reverb"]) == 2


@pytest.mark.parametrize(
    "labels, extraction, message",
    [
        ("1\t0\ta\tb\tc\n", "0\ta\tb\tc\n", "has 4 fields; the file must have 5 tab-separated"),
        ("1\tx\ta\tb\tc\n", "0\ta\tb\tc\t0.5\n", "sentence id is not an integer"),
        ("1\t0\ta\tb\tc\n", "0\ta\tb\tc\tnan\n", "not a finite number"),
        ("2\t0\ta\tb\tc\n", "0\ta\tb\tc\t0.5\n", "labels must be 0 or 1"),
        ("1\t0\ta\tb\tc\n0\t0\ta\tb\tc\n", "0\ta\tb\tc\t0.5\n", "both 0 and 1"),
    ],
)
def test_loader_rejects_malformed_files(tmp_path, labels, extraction, message):
    root = _write(tmp_path / "d", labels, extraction)
    with pytest.raises(DataError, match=message):
        load_reverb(root)


def test_loader_errors_name_the_problem(tmp_path):
    with pytest.raises(DataError, match="labels.txt' is missing"):
        load_reverb(tmp_path)
    with pytest.raises(ParameterError, match="'duplicates'"):
        load_reverb(tmp_path, duplicates="first")


# --------------------------------------------------------------------------------------------
# Validation of the joint estimators on the real data
# --------------------------------------------------------------------------------------------

BUDGET = 100  # draws per system: 600 in all, about a quarter of the 2,410 labeled extractions
SEEDS = 400


@pytest.fixture(scope="module")
def reverb_runs():
    data = load_reverb(REVERB)
    systems = [
        SystemOutput.from_scores(name, frame.loc[frame["label"].notna(), "key"].to_numpy(),
                                 frame.loc[frame["label"].notna(), "score"].to_numpy())
        for name, frame in data.systems.items()
    ]
    keys, labels = data.labels["key"].to_numpy(), data.labels["label"].to_numpy()
    precision = np.array([data.systems[s.name]["label"].mean() for s in systems])
    correct = keys[labels == 1]
    pool_correct = correct[pool_membership(correct, systems)]
    pooled_recall = np.array([np.isin(pool_correct, s.support).mean() for s in systems])
    runs = {k: [] for k in ("joint", "joint_half", "simple", "simple_half", "nu", "nu_half")}
    for seed in range(SEEDS):
        sample = draw_joint_sample(systems, BUDGET, seed=seed).with_labels(keys, labels)
        est = estimate_precision(sample)
        runs["joint"].append(est.precision)
        runs["joint_half"].append(est.half_width)
        runs["simple"].append(est.simple_precision)
        runs["simple_half"].append(est.simple_half_width)
        # No exhaustive annotation exists for ReVerb: θ is not estimable, only ν.
        rec = estimate_recall(sample, exhaustive_in_pool=np.ones(2, bool))
        runs["nu"].append(rec.pooled_recall)
        runs["nu_half"].append(stats.norm.ppf(0.975) * np.sqrt(rec.pooled_recall_variance))
    return {k: np.array(v) for k, v in runs.items()}, precision, pooled_recall


@needs_data
def test_joint_precision_is_unbiased_on_reverb(reverb_runs):
    runs, precision, _ = reverb_runs
    for name in ("joint", "simple"):
        values = runs[name]
        # 400 i.i.d. estimates per system: their mean within 4 standard errors (p ≈ 6e-5).
        se = values.std(axis=0, ddof=1) / math.sqrt(SEEDS)
        assert np.all(np.abs(values.mean(axis=0) - precision) <= 4 * se), name


@needs_data
def test_joint_intervals_cover_at_the_stated_rate(reverb_runs):
    runs, precision, _ = reverb_runs
    covered = (np.abs(runs["joint"] - precision) <= runs["joint_half"]).mean(axis=0)
    # Coverage of 400 independent 95 % intervals is Binomial(400, 0.95)/400 per system; the
    # acceptance region at level 1e-4 is [0.9025, 0.9875].
    low, high = stats.binom.ppf([5e-5, 1 - 5e-5], SEEDS, 0.95) / SEEDS
    assert np.all((covered >= low) & (covered <= high)), covered


@needs_data
def test_joint_intervals_are_narrower_than_per_system_ones(reverb_runs):
    runs, _, _ = reverb_runs
    joint, simple = runs["joint_half"].mean(axis=0), runs["simple_half"].mean(axis=0)
    # Same draws, same labels, same budget: sharing labels across systems must pay off for
    # every system (the average of 400 half-widths varies by well under 1 %).
    assert np.all(joint < 0.9 * simple), joint / simple


@needs_data
def test_pooled_recall_is_consistent_on_reverb(reverb_runs):
    runs, _, pooled_recall = reverb_runs
    values = runs["nu"]
    # ν̂ is a ratio estimator: O(1/n) bias, far below its standard deviation (≈ 0.035) at 600
    # draws; 4 standard errors of the mean of 400 plus 0.005 for that bias.
    se = values.std(axis=0, ddof=1) / math.sqrt(SEEDS)
    assert np.all(np.abs(values.mean(axis=0) - pooled_recall) <= 4 * se + 0.005)
    covered = (np.abs(values - pooled_recall) <= runs["nu_half"]).mean(axis=0)
    low, high = stats.binom.ppf([5e-5, 1 - 5e-5], SEEDS, 0.95) / SEEDS
    assert np.all((covered >= low) & (covered <= high)), covered
