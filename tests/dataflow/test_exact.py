"""The exact precision of a simulation, counted in passes, against a running sum over a full sort."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prdist.dataflow import open_resource
from prdist.dataflow.ranks.exact import _Thresholds, exact_precision
from prdist.dataflow.ranks.select import select_ranks
from prdist.errors import DataError
from prdist.ranking import rank_order
from tests.dataflow.test_select import shuffled, write_files


def oracle(keys, scores, labels, ranks) -> np.ndarray:
    """What a run recorded before the counting pass: a running sum of the labels in rank order."""
    y = np.cumsum(np.asarray(labels, dtype=np.float64)[rank_order(scores, keys)])
    ranks = np.asarray(ranks, dtype=np.int64)
    return y[ranks - 1] / ranks


def assert_identical(out, keys, scores, labels, ranks):
    assert out["rank"].to_pylist() == list(ranks)
    assert out["precision"].to_numpy().tobytes() == oracle(keys, scores, labels, ranks).tobytes()


@pytest.mark.parametrize("string_keys", [False, True])
def test_heavy_ties_many_files_with_and_without_the_extracted_items(tmp_path, dask_client, string_keys):
    n = 60_000
    keys, scores, labels = shuffled(n, 1, decimals=2, tie_value=0.5, tie_share=0.2, string_keys=string_keys)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores, "label": labels}, files=4, row_group_size=3000)
    res = open_resource(root, label="label")
    ranks = np.unique(np.concatenate([np.arange(1, 400), np.geomspace(400, n, 60).astype(np.int64)]))
    items = select_ranks(res, ranks[::3])  # a third of the thresholds are known, the rest are searched
    # Thresholds inside runs of tied scores (decimals=2 and a giant tie): the key-hash pass runs.
    for client in (None, dask_client):
        assert_identical(exact_precision(res, ranks, items, client=client), keys, scores, labels, ranks)
    assert_identical(exact_precision(res, ranks[::-1]), keys, scores, labels, ranks[::-1])


def test_a_sorted_resource_continuous_scores_and_unknown_labels(tmp_path):
    n = 20_000
    rng = np.random.default_rng(2)
    scores = np.sort(rng.normal(size=n))[::-1]
    keys = rng.permutation(n).astype(np.int64)
    labels = pa.array((rng.random(n) < 0.4).astype(np.int8), mask=np.arange(n) == 5_000)  # one null label
    # Without label statistics, opening does not see the null (with them it refuses the resource).
    root = write_files(tmp_path / "s", {"key": keys, "score": scores, "label": labels}, files=2, row_group_size=1000,
                       write_statistics=["key", "score"])
    res = open_resource(root, label="label")
    assert res.is_sorted_claim()
    ranks = np.array([1, 2, 10, 4_999, 5_000, 5_001, 19_999, 20_000])
    out = exact_precision(res, ranks)
    expected = oracle(keys, scores, np.where(np.arange(n) == 5_000, np.nan, labels.to_numpy(zero_copy_only=False)), ranks)
    assert out["precision"].to_numpy().tobytes() == expected.tobytes()
    assert np.isnan(out["precision"].to_numpy()[ranks > 5_000]).all()


def test_one_score_for_every_item(tmp_path):
    n = 500
    keys = np.arange(n, dtype=np.int64) * 7
    scores = np.full(n, 0.25)
    labels = (np.arange(n) % 3 == 0).astype(np.int8)
    root = write_files(tmp_path / "c", {"key": keys, "score": scores, "label": labels}, files=2, row_group_size=64)
    ranks = np.arange(1, n + 1)
    assert_identical(exact_precision(open_resource(root, label="label"), ranks), keys, scores, labels, ranks)


def test_labels_other_than_zero_or_one_are_a_data_error(tmp_path):
    root = tmp_path / "b"
    root.mkdir()
    pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.3, 0.2, 0.1], "label": [1.0, 0.5, 0.0]}), root / "a.parquet")
    with pytest.raises(DataError, match="labels must be 0 or 1"):
        exact_precision(open_resource(str(root), label="label"), [1, 3])


def test_extreme_scores_bucket_in_rank_order():
    scores = np.array([1.7e308, 3.0, 3.0, -0.0, 0.0, -1e-300, -1.7e308])
    keys = np.arange(scores.size)
    t = _Thresholds.of(np.array([1, 4, 7]), keys[[0, 3, 6]], scores[[0, 3, 6]])
    # bucket 2u: strictly between distinct thresholds u-1 and u; 2u+1: the score of threshold u.
    assert t.bucket(scores).tolist() == [1, 2, 2, 3, 3, 4, 5]
    tiny = np.array([1e-323, 5e-324, 0.0])  # a subnormal width: every item is searched
    t = _Thresholds.of(np.array([1, 2]), np.array([0, 1]), tiny[:2])
    assert t.bucket(tiny).tolist() == [1, 3, 4]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 300), decimals=st.integers(0, 2), row_group_size=st.integers(1, 50),
       seed=st.integers(0, 2**32 - 1), known=st.floats(0, 1), data=st.data())
def test_random_resources_equal_the_running_sum(tmp_path_factory, n, decimals, row_group_size, seed, known, data):
    keys, scores, labels = shuffled(n, seed, decimals=decimals)
    root = write_files(tmp_path_factory.mktemp("x"), {"key": keys, "score": scores, "label": labels},
                       files=min(3, n), row_group_size=row_group_size)
    res = open_resource(root, label="label")
    ranks = np.array(data.draw(st.lists(st.integers(1, n), min_size=1, max_size=40)), dtype=np.int64)
    items = select_ranks(res, ranks[np.random.default_rng(seed).random(ranks.size) < known])
    assert_identical(exact_precision(res, ranks, items if len(items) else None), keys, scores, labels, ranks)
