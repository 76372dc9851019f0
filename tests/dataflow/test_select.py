"""Selecting ranks of unsorted resources without a sort, against a full sort as the oracle."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from prdist.dataflow import open_resource
from prdist.ranking import descending_ordinal
from prdist.dataflow.ranks.extraction import items_frame
from prdist.dataflow.ranks.select import (
    DEFAULT_MAX_CANDIDATES,
    _linear_bins,
    _linear_edges,
    _linear_slots,
    check_unique_keys,
    select_ranks,
    selection,
)
from prdist.dataflow.io.publishing import write_parquet
from prdist.errors import DataError, ParameterError
from prdist.paula.plan import plan_paula
from prdist.ranking import rank_order


def write_files(root, columns: dict, *, files: int = 1, row_group_size: int = 1000, **options):
    """Write ``columns`` split into ``files`` consecutive Parquet files part.0 .. part.<files-1>."""
    os.makedirs(root, exist_ok=True)
    n = len(next(iter(columns.values())))
    bounds = np.linspace(0, n, files + 1).astype(int)
    for i in range(files):
        table = pa.table({name: values[bounds[i]:bounds[i + 1]] for name, values in columns.items()})
        pq.write_table(table, os.path.join(root, f"part.{i}.parquet"), row_group_size=row_group_size, **options)
    return str(root)


def shuffled(n, seed, *, decimals=2, tie_value=None, tie_share=0.0, string_keys=False):
    """Unsorted items: beta scores rounded to ``decimals`` (heavy ties), optionally one giant tie."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(20 * n, size=n, replace=False)
    keys = np.array([f"item-{i}" for i in ids], dtype=object) if string_keys else ids.astype(np.int64)
    scores = np.round(rng.beta(2, 3, size=n), decimals)
    if tie_value is not None:
        scores[rng.random(n) < tie_share] = tie_value
    labels = (rng.random(n) < scores).astype(np.int8)
    return keys, scores, labels


def check_against_oracle(out, keys, scores, ranks, labels=None):
    order = rank_order(scores, keys)
    wanted = np.unique(ranks)
    assert out["rank"].tolist() == wanted.tolist()
    assert (out["key"].to_numpy() == keys[order[wanted - 1]]).all()
    assert (out["score"].to_numpy() == scores[order[wanted - 1]]).all()
    if labels is not None:
        assert (out["label"].to_numpy() == labels[order[wanted - 1]]).all()


@pytest.fixture(scope="module")
def process_client():
    """Two worker processes: proves that every task, filesystem and result pickles."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           scheduler_kwargs={"dashboard": False})
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("max_candidates", [0, DEFAULT_MAX_CANDIDATES])
def test_a_paula_plan_on_heavily_tied_scores_equals_a_full_sort(tmp_path, dask_client, max_candidates):
    n = 300_000
    keys, scores, labels = shuffled(n, 0)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores, "label": labels}, files=5, row_group_size=20_000)
    res = open_resource(root, label="label")
    assert not res.is_sorted_claim()
    ranks = plan_paula(n, eps=0.05, window=50).ranks
    found = selection(res, ranks, client=dask_client, max_candidates=max_candidates)
    out = items_frame(found.items)
    check_against_oracle(out, keys, scores, ranks, labels)
    # Bounded work: a few passes, and candidates near the requested count (cap 1024 each), or
    # within the budget of candidates.
    assert found.passes <= 4
    bound = max(len(ranks) + 1024 * found.intervals, max_candidates)
    assert found.candidates <= bound
    if max_candidates == 0:
        assert found.candidates < n / 10


def test_a_giant_tie_is_resolved_by_hash_without_extracting_it(tmp_path, dask_client):
    n = 200_000
    keys, scores, _ = shuffled(n, 1, tie_value=0.5, tie_share=0.75, string_keys=True)
    tie = int((scores == 0.5).sum())
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=4, row_group_size=15_000)
    res = open_resource(root)
    above = int((scores > 0.5).sum())
    # Ranks inside the tie run, at both of its ends and around it.
    ranks = np.r_[1:20, above - 3:above + 40, above + tie // 2 + np.arange(60), above + tie - 5:above + tie + 5, n]
    found = selection(res, ranks, client=dask_client, cap=256, max_candidates=0)
    out = items_frame(found.items)
    check_against_oracle(out, keys, scores, ranks)
    assert found.candidates <= len(np.unique(ranks)) + 256 * found.intervals
    assert found.candidates < tie / 20, "the tie run itself is never materialised"


def test_every_score_equal(tmp_path):
    n = 20_000
    keys = np.random.default_rng(2).permutation(n).astype(np.int64)
    scores = np.zeros(n)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=2, row_group_size=3000)
    ranks = [1, 2, 10_000, 19_999, 20_000]
    found = selection(open_resource(root), ranks, cap=64, max_candidates=0)
    out = items_frame(found.items)
    check_against_oracle(out, keys, scores, ranks)
    assert found.candidates < 1000


def test_continuous_scores_a_million_rows(tmp_path, dask_client):
    n = 1_000_000
    rng = np.random.default_rng(3)
    keys = rng.permutation(n).astype(np.int64) * 3 + 1
    scores = rng.normal(size=n)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=4, row_group_size=125_000)
    ranks = plan_paula(n, eps=0.03, window=100).ranks
    found = selection(open_resource(root), ranks, client=dask_client)
    out = items_frame(found.items)
    check_against_oracle(out, keys, scores, ranks)
    # Equal score bins over the statistics' range: one histogram pass, then the extraction.
    assert found.passes == 2
    narrowed = selection(open_resource(root), ranks, max_candidates=0, histogram_bins=256)
    assert items_frame(narrowed.items).equals(out) and narrowed.passes > 2


def test_score_types_signs_and_missing_statistics(tmp_path):
    rng = np.random.default_rng(4)
    n = 5000
    keys = rng.permutation(n).astype(np.int64)
    scores32 = rng.normal(size=n).astype(np.float32)
    scores32[:30] = -0.0
    scores32[30:60] = 0.0  # -0.0 and 0.0 are one tie run, as in rank_order
    ints = rng.integers(-5, 5, size=n)
    root = write_files(tmp_path / "r", {"key": keys, "f32": scores32, "i": ints}, files=2, row_group_size=700, write_statistics=False)
    ranks = np.r_[1:100, 2400:2600, n]
    check_against_oracle(select_ranks(open_resource(root, score="f32"), ranks, cap=16, max_candidates=0), keys, scores32.astype(np.float64), ranks)
    check_against_oracle(select_ranks(open_resource(root, score="i"), ranks, cap=16, max_candidates=0), keys, ints.astype(np.float64), ranks)


def test_non_finite_scores_duplicate_keys_and_bad_labels_are_data_errors(tmp_path):
    n = 3000
    keys, scores, labels = shuffled(n, 5)
    bad = scores.copy()
    bad[2100] = np.nan
    nan_root = write_files(tmp_path / "nan", {"key": keys, "score": bad}, files=2, row_group_size=500)
    with pytest.raises(DataError, match=r"non-finite score \(nan\) in .*part.1.parquet row group 1, row 100"):
        select_ranks(open_resource(nan_root), [1])
    bad[2100] = np.inf
    inf_root = write_files(tmp_path / "inf", {"key": keys, "score": bad}, row_group_size=500, write_statistics=False)
    with pytest.raises(DataError, match=r"non-finite score \(inf\)"):
        select_ranks(open_resource(inf_root), [1])

    dup_keys = keys.copy()
    top = np.argsort(-scores, kind="stable")[:2]
    dup_keys[top[1]] = dup_keys[top[0]]
    dup_root = write_files(tmp_path / "dup", {"key": dup_keys, "score": scores}, files=2, row_group_size=500)
    with pytest.raises(DataError, match=f"The key {dup_keys[top[0]]} occurs more than once"):
        select_ranks(open_resource(dup_root), [1, 2])
    bottom = np.argsort(scores, kind="stable")[:5]
    assert not np.isin(top, bottom).any()
    select_ranks(open_resource(dup_root), [n], cap=1)  # the duplicate is not among the items read

    bad_labels = labels.astype(np.float64)
    bad_labels[top[0]] = 0.5
    label_root = write_files(tmp_path / "lab", {"key": keys, "score": scores, "label": bad_labels})
    with pytest.raises(DataError, match="label column 'label' holds 0.5"):
        select_ranks(open_resource(label_root, label="label"), [1, 2, 3])


def test_data_changing_between_passes_is_detected(tmp_path, monkeypatch):
    from prdist.dataflow.ranks import select

    keys, scores, _ = shuffled(4000, 9)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=2, row_group_size=500)
    res = open_resource(root)
    histogram = select.map_reduce  # the histogram pass

    rewrites = {"row_group_size": 250}

    def histogram_then_rewrite(*args, **kwargs):
        counts = histogram(*args, **kwargs)
        write_files(root, {"key": keys[::2], "score": scores[::2]}, files=2, **rewrites)
        return counts

    monkeypatch.setattr(select, "map_reduce", histogram_then_rewrite)
    # Caught by the size of the file, or else by the counts of the next pass.
    with pytest.raises(DataError, match="changed (while it was being read|after the resource was opened)"):
        select_ranks(res, np.arange(1, 2001), cap=8)  # as many row groups, fewer rows
    write_files(root, {"key": keys, "score": scores}, files=2, row_group_size=500)
    rewrites["row_group_size"] = 2000
    with pytest.raises(DataError, match=r"part.0.parquet changed after the resource was opened: it has"):
        select_ranks(open_resource(root), np.arange(1, 2001), cap=8)


def test_parameters_are_checked(tmp_path):
    root = write_files(tmp_path / "r", {"key": [1, 2, 3], "score": [0.3, 0.2, 0.1]})
    res = open_resource(root)
    with pytest.raises(ParameterError, match="'cap' parameter of select_ranks must be an int >= 1"):
        select_ranks(res, [1], cap=0)
    with pytest.raises(ParameterError, match="'histogram_bins' parameter of select_ranks"):
        select_ranks(res, [1], histogram_bins=4)
    with pytest.raises(ParameterError, match=r"ranks in \[1, 3\]"):
        select_ranks(res, [4])
    empty = select_ranks(res, [])
    assert len(empty) == 0 and empty.columns.tolist() == ["rank", "key", "score"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 250),
    decimals=st.integers(0, 2),
    cap=st.integers(1, 50),
    budget=st.sampled_from([0, 40, DEFAULT_MAX_CANDIDATES]),
    bins=st.sampled_from([16, 64, 1 << 18]),
    row_group_size=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_random_resources_equal_the_oracle(tmp_path_factory, n, decimals, cap, budget, bins, row_group_size, seed, data):
    keys, scores, _ = shuffled(n, seed, decimals=decimals)
    root = write_files(tmp_path_factory.mktemp("h"), {"key": keys, "score": scores}, files=min(3, n), row_group_size=row_group_size)
    ranks = data.draw(st.lists(st.integers(1, n), min_size=1, max_size=30))
    out = select_ranks(open_resource(root), ranks, cap=cap, max_candidates=budget, histogram_bins=bins,
                       partition_rows=97)
    check_against_oracle(out, keys, scores, ranks)


def test_uniqueness_check(tmp_path, dask_client):
    n = 50_000
    keys, scores, _ = shuffled(n, 6, string_keys=True)
    root = write_files(tmp_path / "u", {"key": keys, "score": scores}, files=3, row_group_size=4000)
    res = open_resource(root)
    check_unique_keys(res, client=dask_client)
    check_unique_keys(res, max_slice_rows=7000)  # 8 slices of the hash range
    dup = keys.copy()
    dup[49_000] = dup[3]
    dup_root = write_files(tmp_path / "d", {"key": dup, "score": scores}, files=3, row_group_size=4000)
    for kwargs in ({"client": dask_client}, {"max_slice_rows": 7000}):
        with pytest.raises(DataError, match=f"The key '{keys[3]}' occurs more than once"):
            check_unique_keys(open_resource(dup_root), **kwargs)


def _s3_resource(s3_server, s3_url, n, seed):
    keys, scores, labels = shuffled(n, seed, tie_value=0.25, tie_share=0.3)
    table = pa.table({"key": keys, "score": scores, "label": labels})
    for i, start in enumerate(range(0, n, 10_000)):
        write_parquet(table.slice(start, 10_000), f"{s3_url}/res/part.{i}.parquet",
                      storage_options=s3_server.storage_options, row_group_size=2500)
    res = open_resource(f"{s3_url}/res", storage_options=s3_server.storage_options, label="label")
    return res, keys, scores, labels


def test_select_on_s3(s3_server, s3_url, dask_client):
    n = 40_000
    res, keys, scores, labels = _s3_resource(s3_server, s3_url, n, 7)
    ranks = plan_paula(n, eps=0.1, window=20).ranks
    found = selection(res, ranks, client=dask_client, cap=128)
    out = items_frame(found.items)
    check_against_oracle(out, keys, scores, ranks, labels)
    assert 0 < found.bytes_read < 3 * res.bytes_of(range(len(res.row_groups)), ["key", "score", "label"])
    # What a task receives travels to worker processes by pickle, credentials included.
    clone = pickle.loads(pickle.dumps(res))
    assert select_ranks(clone, ranks[:50], cap=128).equals(out.iloc[:50])


@pytest.mark.slow
def test_select_on_s3_with_worker_processes(s3_server, s3_url, process_client):
    n = 40_000
    res, keys, scores, labels = _s3_resource(s3_server, s3_url, n, 8)
    ranks = plan_paula(n, eps=0.1, window=20).ranks
    check_against_oracle(select_ranks(res, ranks, client=process_client, cap=128), keys, scores, ranks, labels)


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=2, max_size=40),
    total=st.integers(1, 1 << 12),
)
def test_equal_score_bins_have_exact_ordinal_edges(scores, total):
    # The driver's edges of an equal-score bin hold exactly the scores a task puts in it,
    # and consecutive bins tile the ordinals from +inf to -inf.
    scores = np.array(scores)
    linear = _linear_bins([_Stats(scores.max(), scores.min())], total)
    assume(linear is not None)
    slots = _linear_slots(scores, *linear, total)
    every = np.arange(total)
    lo, hi = _linear_edges(every, *linear, total)
    ordinals = descending_ordinal(scores)
    assert np.all(lo[slots] <= ordinals) and np.all(ordinals <= hi[slots])
    assert lo[0] == descending_ordinal(np.array([np.inf]))[0]
    assert hi[-1] == descending_ordinal(np.array([-np.inf]))[0]
    assert np.all(hi[:-1] + np.uint64(1) == lo[1:])  # an empty bin has hi = lo - 1


class _Stats:
    """The row-group statistics _linear_bins reads."""

    has_score_range = True

    def __init__(self, score_max, score_min):
        self.score_max, self.score_min = score_max, score_min
