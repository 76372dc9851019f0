"""Tests of prdist.dataflow.ranks.ranked: a ranked copy holds the same rows in exact rank order."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prdist.dataflow.ranks.ranked import RANKED_MARKER, write_ranked_copy
from prdist.dataflow import extract_ranks, open_resource
from prdist.dataflow.ranks.select import select_ranks
from prdist.errors import DataError, InputError, ParameterError
from prdist.ranking import rank_order


def _unsorted(tmp_path, n, seed, *, string_keys=False, files=3):
    rng = np.random.default_rng(seed)
    keys = rng.permutation(n).astype(np.int64) * 5 + 2
    if string_keys:
        keys = np.array([f"item-{k}" for k in keys], dtype=object)
    scores = np.round(rng.normal(size=n), 1)  # heavy ties: about 80 distinct scores
    labels = (rng.random(n) < 0.3).astype(np.int8)
    root = tmp_path / "src"
    os.makedirs(root)
    bounds = np.linspace(0, n, files + 1).astype(int)
    for i in range(files):
        part = slice(bounds[i], bounds[i + 1])
        table = pa.table({"key": keys[part], "score": scores[part], "label": labels[part]})
        pq.write_table(table, root / f"part.{i}.parquet", row_group_size=900)
    return str(root), keys, scores, labels


@pytest.mark.parametrize("string_keys", [False, True])
def test_the_copy_is_in_exact_rank_order_with_every_row(tmp_path, dask_client, string_keys):
    n = 12_000
    root, keys, scores, labels = _unsorted(tmp_path, n, 3, string_keys=string_keys)
    source = open_resource(root, label="label")
    copy = write_ranked_copy(source, str(tmp_path / "ranked"), client=dask_client, row_group_size=500)
    assert copy.n == n and copy.is_sorted_claim() and copy.label == "label"
    assert max(rg.num_rows for rg in copy.row_groups) <= 500
    table = pq.read_table(str(tmp_path / "ranked"))
    order = rank_order(scores, keys)
    # Row for row the rank order of prdist.ranking, ties by key hash, across files too.
    assert table["key"].to_pylist() == keys[order].tolist()
    assert table["label"].to_pylist() == labels[order].tolist()
    # Ranks read from the copy equal those selected from the source.
    ranks = np.r_[1:50, 5_000:5_100, n - 10:n + 1]
    from_copy = extract_ranks(copy, ranks)
    from_source = select_ranks(source, ranks)
    assert from_copy[["rank", "key", "score", "label"]].equals(from_source[["rank", "key", "score", "label"]])
    assert (tmp_path / "ranked" / RANKED_MARKER).exists()


def test_in_process_and_on_s3(tmp_path, s3_server, s3_url):
    n = 4_000
    root, keys, scores, _ = _unsorted(tmp_path, n, 5)
    copy = write_ranked_copy(open_resource(root, label="label"), f"{s3_url}/ranked",
                             storage_options=s3_server.storage_options)
    assert copy.is_sorted_claim() and copy.n == n
    assert extract_ranks(copy, [1, 2, n])["key"].tolist() == keys[rank_order(scores, keys)[[0, 1, n - 1]]].tolist()
    import s3fs

    fs = s3fs.S3FileSystem(**s3_server.storage_options)
    assert fs.exists(f"{s3_url[len('s3://'):]}/ranked/{RANKED_MARKER}")


def test_an_existing_output_is_refused_and_left_alone(tmp_path):
    root, _, _, _ = _unsorted(tmp_path, 1_000, 7)
    source = open_resource(root)
    out = tmp_path / "ranked"
    write_ranked_copy(source, str(out))
    before = sorted(os.listdir(out))
    with pytest.raises(InputError, match="exists already"):
        write_ranked_copy(source, str(out))
    assert sorted(os.listdir(out)) == before


def test_bad_scores_and_parameters_fail_clearly_and_leave_nothing(tmp_path):
    root = tmp_path / "src"
    os.makedirs(root)
    pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.5, float("nan"), 0.1]}), root / "a.parquet")
    source = open_resource(str(root))
    with pytest.raises(DataError, match="non-finite score"):
        write_ranked_copy(source, str(tmp_path / "ranked"))
    assert not [name for name in os.listdir(tmp_path) if name not in ("src",)]  # no staging left
    with pytest.raises(ParameterError, match="'row_group_size' parameter of write_ranked_copy"):
        write_ranked_copy(source, str(tmp_path / "r2"), row_group_size=0)
    with pytest.raises(ParameterError, match="'resource' parameter of write_ranked_copy"):
        write_ranked_copy(str(root), str(tmp_path / "r3"))
