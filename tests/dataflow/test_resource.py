"""Opening resources from metadata, order claims, and rank extraction from sorted input."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prdist.dataflow import extract_ranks, open_resource, verify_order
from prdist.ranking import descending_ordinal, rank_sort, sorted_block_order
from prdist.dataflow.ranks.extract import sorted_extraction
from prdist.dataflow.ranks.select import select_ranks
from prdist.dataflow.io.publishing import write_parquet
from prdist.errors import DataError, InputError, ParameterError
from prdist.ranking import key_hash, rank_order


def write_files(root, columns: dict, *, files: int = 1, row_group_size: int = 1000, names=None, **options):
    """Write ``columns`` split into ``files`` consecutive Parquet files part.0 .. part.<files-1>."""
    os.makedirs(root, exist_ok=True)
    n = len(next(iter(columns.values())))
    bounds = np.linspace(0, n, files + 1).astype(int)
    for i in range(files):
        table = pa.table({name: values[bounds[i]:bounds[i + 1]] for name, values in columns.items()})
        name = names[i] if names else f"part.{i}.parquet"
        pq.write_table(table, os.path.join(root, name), row_group_size=row_group_size, **options)
    return str(root)


def tied_sorted(n, seed, *, distinct=40):
    """A resource sorted by descending score, with heavy ties stored in *key* order, not hash order.

    Storage order inside a run of ties is then unrelated to rank order, so reading ranks off
    storage positions would be wrong: the extraction must reorder every tie run it touches.
    """
    rng = np.random.default_rng(seed)
    keys = rng.choice(10 * n, size=n, replace=False).astype(np.int64)
    scores = rng.integers(0, distinct, size=n) / distinct
    labels = (rng.random(n) < scores).astype(np.int8)
    order = np.lexsort((keys, -scores))
    return keys[order], scores[order], labels[order]


def oracle(keys, scores, ranks):
    """Keys at ``ranks`` by a full sort (the reference)."""
    return keys[rank_order(scores, keys)[np.asarray(ranks) - 1]]


# ------------------------------------------------------------------------------------------
# Opening


def test_open_reads_row_counts_files_and_ranges_from_metadata(tmp_path):
    keys, scores, labels = tied_sorted(3000, 0)
    names = ["part.2.parquet", "part.10.parquet", "part.1.parquet"]
    # part.1 < part.2 < part.10 in natural order: write the slices so that this order is sorted.
    root = tmp_path / "res"
    root.mkdir()
    slices = {"part.1.parquet": slice(0, 1000), "part.2.parquet": slice(1000, 2000), "part.10.parquet": slice(2000, 3000)}
    for name in names:
        s = slices[name]
        pq.write_table(pa.table({"key": keys[s], "score": scores[s], "label": labels[s]}), root / name, row_group_size=300)
    (root / "_SUCCESS").write_bytes(b"")
    (root / ".part.3.parquet.tmp").write_bytes(b"partial")
    (root / "_metadata").write_bytes(b"not read")
    res = open_resource(str(root), label="label")
    assert res.n == 3000
    assert [res.relative_name(i) for i in range(len(res.files))] == ["part.1.parquet", "part.2.parquet", "part.10.parquet"]
    assert len(res.row_groups) == 12 and res.offsets.tolist() == [0, 300, 600, 900, 1000, 1300, 1600, 1900, 2000, 2300, 2600, 2900, 3000]
    assert res.is_sorted_claim()
    ranges = res.rank_ranges()
    assert ranges["first_rank"].iloc[4] == 1001 and ranges["last_rank"].iloc[-1] == 3000
    assert (ranges["score_max"].to_numpy()[1:] <= ranges["score_min"].to_numpy()[:-1]).all()
    assert res.key_kind == "int" and res.label == "label"
    assert res.url == f"file://{root}"


def test_a_single_file_and_a_file_url_open_too(tmp_path):
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "conf": np.array([2, 1], dtype=np.int32)}), path)
    for url in (str(path), f"file://{path}"):
        res = open_resource(url, key="id", score="conf")
        assert res.n == 2 and res.key_kind == "string" and res.relative_name(0) == "one.parquet"
    # Integer scores are compared as float64, like prdist.ranking.rank_order does.
    out = extract_ranks(res, [1, 2])
    assert out["key"].tolist() == ["a", "b"] and out["score"].dtype == np.float64


def test_fingerprint_is_stable_and_follows_the_data(tmp_path):
    keys, scores, _ = tied_sorted(500, 1)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=2, row_group_size=100)
    first = open_resource(root).fingerprint
    assert open_resource(root).fingerprint == first
    assert open_resource(root, key="key", score="score", label=None).fingerprint == first
    changed = scores.copy()
    changed[0] += 0.5
    write_files(tmp_path / "r", {"key": keys, "score": changed}, files=2, row_group_size=100)
    assert open_resource(root).fingerprint != first


@pytest.mark.parametrize(
    "columns, options, match",
    [
        ({"k": [1, 2], "score": [0.5, 0.4]}, {}, "no key column 'key'"),
        ({"key": [1.5, 2.5], "score": [0.5, 0.4]}, {}, "keys must be integers or strings"),
        ({"key": [1, 2], "score": ["a", "b"]}, {}, "scores must be float"),
        ({"key": [1, 2], "score": [0.5, None]}, {}, "null values"),
        ({"key": [1, 2], "score": [0.5, float("inf")]}, {}, "infinite score"),
        ({"key": [1, 2], "score": [0.5, 0.4], "label": [0, 2]}, {"label": "label"}, "outside 0/1"),
        ({"key": [1, 2], "score": [0.5, 0.4], "label": ["y", "n"]}, {"label": "label"}, "labels must be 0/1"),
        ({"key": pa.array([], pa.int64()), "score": pa.array([], pa.float64())}, {}, "holds no rows"),
    ],
)
def test_schema_and_statistics_are_validated(tmp_path, columns, options, match):
    pq.write_table(pa.table(columns), tmp_path / "a.parquet")
    with pytest.raises(DataError, match=match):
        open_resource(str(tmp_path), **options)


def test_files_must_agree_on_the_key_type(tmp_path):
    pq.write_table(pa.table({"key": [1], "score": [0.5]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"key": ["x"], "score": [0.4]}), tmp_path / "b.parquet")
    with pytest.raises(DataError, match="disagree on the key type"):
        open_resource(str(tmp_path))


def test_corrupted_and_truncated_parquet_are_data_errors(tmp_path):
    pq.write_table(pa.table({"key": [1], "score": [0.5]}), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"this is not parquet at all")
    with pytest.raises(DataError, match=r"b.parquet is not a readable Parquet file .* rewrite it, or remove it"):
        open_resource(str(tmp_path))
    data = (tmp_path / "a.parquet").read_bytes()
    (tmp_path / "b.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="b.parquet is not a readable Parquet file"):
        open_resource(str(tmp_path))


def test_missing_paths_and_directories_without_parquet_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        open_resource(str(tmp_path / "missing"))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="holds no Parquet files"):
        open_resource(str(tmp_path))


def test_parameters_are_checked(tmp_path):
    root = write_files(tmp_path / "r", {"key": [1, 2], "score": [0.5, 0.4]})
    with pytest.raises(ParameterError, match="must be distinct"):
        open_resource(root, key="key", score="key")
    with pytest.raises(ParameterError, match="'score' parameter of open_resource must be a column name"):
        open_resource(root, score="")
    res = open_resource(root)
    for bad, match in (([0], r"in \[1, 2\]. Got 0"), ([3], "Got 3"), ([[1]], "1-d array of integers"), (["a"], "1-d array"), ([1.5], "1-d array")):
        with pytest.raises(ParameterError, match=match):
            extract_ranks(res, bad)
    with pytest.raises(ParameterError, match="no column 'nope'"):
        extract_ranks(res, [1], columns=["nope"])


# ------------------------------------------------------------------------------------------
# Order


def test_statistics_catch_disorder_across_row_groups_and_files(tmp_path):
    keys, scores, _ = tied_sorted(2000, 2)
    root = write_files(tmp_path / "a", {"key": keys, "score": scores}, files=2, row_group_size=250)
    assert open_resource(root).is_sorted_claim()
    # Swap the two files' contents: every boundary inside a file still holds, the one between
    # the files does not.
    swapped = write_files(tmp_path / "b", {"key": keys, "score": scores}, files=2, row_group_size=250,
                          names=["part.1.parquet", "part.0.parquet"])
    check = verify_order(open_resource(swapped))
    assert not check.sorted and check.method == "statistics"
    assert "part.1.parquet row group 0" in check.detail and "above the minimum" in check.detail
    # Without statistics nothing can be claimed cheaply.
    bare = write_files(tmp_path / "c", {"key": keys, "score": scores}, row_group_size=250, write_statistics=False)
    res = open_resource(bare)
    assert not res.is_sorted_claim() and "no score statistics" in verify_order(res).detail
    assert verify_order(res, full=True).sorted


def test_the_full_check_reads_inside_row_groups(tmp_path, dask_client):
    keys, scores, _ = tied_sorted(3000, 3)
    scores = scores.copy()
    scores[[1200, 1201]] = scores[[1201, 1200]] if scores[1200] != scores[1201] else (scores[1200], scores[1200])
    scores[1210], scores[1211] = scores[1211] - 1e-9, scores[1210]
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=3, row_group_size=400)
    res = open_resource(root)
    assert res.is_sorted_claim(), "the rise is inside a row group: invisible to statistics"
    for client in (None, dask_client):
        check = verify_order(res, full=True, client=client)
        assert not check.sorted and check.method == "full"
        assert check.detail == "part.1.parquet row group 0: the score rises at row 211"
    nan_scores = np.sort(scores)[::-1].copy()
    nan_scores[5] = np.nan
    nan_root = write_files(tmp_path / "n", {"key": keys, "score": nan_scores}, row_group_size=400)
    with pytest.raises(DataError, match=r"non-finite score \(nan\) in .*part.0.parquet row group 0, row 5"):
        verify_order(open_resource(nan_root), full=True)


# ------------------------------------------------------------------------------------------
# Extraction from sorted input


def test_extraction_matches_a_full_sort_across_ties_that_span_row_groups_and_files(tmp_path, dask_client):
    keys, scores, labels = tied_sorted(20_000, 4, distinct=25)
    root = write_files(tmp_path / "r", {"key": keys, "score": scores, "label": labels}, files=4, row_group_size=700)
    res = open_resource(root, label="label")
    ranks = np.unique(np.concatenate([np.arange(1, 200), np.arange(4990, 5011), [20_000], np.arange(700, 2800, 7)]))
    expected = oracle(keys, scores, ranks)
    # The test can fail: storage positions alone give other keys inside tie runs.
    assert (keys[ranks - 1] != expected).mean() > 0.5
    order = rank_order(scores, keys)
    for client in (None, dask_client):
        out = extract_ranks(res, ranks, client=client)
        assert out.columns.tolist() == ["rank", "key", "score", "label"]
        assert out["rank"].tolist() == ranks.tolist()
        assert (out["key"].to_numpy() == expected).all()
        assert (out["score"].to_numpy() == scores[order[ranks - 1]]).all()
        assert (out["label"].to_numpy() == labels[order[ranks - 1]]).all()


def test_extraction_reads_only_the_row_groups_that_hold_the_ranks(tmp_path):
    n = 50_000
    rng = np.random.default_rng(5)
    keys = rng.permutation(n).astype(np.int64)
    scores = np.sort(rng.random(n))[::-1]  # distinct: no tie runs
    root = write_files(tmp_path / "r", {"key": keys, "score": scores, "payload": rng.random(n)}, files=5, row_group_size=1000)
    res = open_resource(root)
    total = res.bytes_of(range(len(res.row_groups)), ["key", "score"])
    found = sorted_extraction(res, [1, 2, 25_500, 50_000])
    assert found.items["key"].to_pylist() == oracle(keys, scores, [1, 2, 25_500, 50_000]).tolist()
    assert found.row_groups_read == 3
    assert found.bytes_read == res.bytes_of([0, 25, 49], ["key", "score"]) < total / 10
    with_payload = extract_ranks(res, [3], columns=["payload"])
    assert with_payload.columns.tolist() == ["rank", "key", "score", "payload"]
    assert with_payload["payload"].iloc[0] == pq.read_table(root).column("payload")[2].as_py()


def test_tasks_read_no_footer_again(tmp_path, dask_client):
    # The footers open_resource read go with the tasks: with every footer's bytes spoilt after
    # opening (same size), sorted extraction and unsorted selection still read the right rows.
    n = 20_000
    rng = np.random.default_rng(8)
    keys = rng.permutation(n).astype(np.int64)
    scores = rng.random(n)
    order = np.argsort(-scores)
    sorted_root = write_files(tmp_path / "s", {"key": keys[order], "score": scores[order]}, files=3, row_group_size=700)
    shuffled_root = write_files(tmp_path / "u", {"key": keys, "score": scores}, files=3, row_group_size=700)
    ranks = [1, 7, 9_999, 20_000]
    resources = open_resource(sorted_root), open_resource(shuffled_root)
    for root in (sorted_root, shuffled_root):
        for name in os.listdir(root):
            with open(os.path.join(root, name), "r+b") as fh:
                fh.seek(-8, os.SEEK_END)
                footer_length = int.from_bytes(fh.read(4), "little")
                fh.seek(-8 - footer_length, os.SEEK_END)
                fh.write(b"\0" * footer_length)
    assert extract_ranks(resources[0], ranks, client=dask_client)["key"].tolist() == oracle(keys, scores, ranks).tolist()
    assert select_ranks(resources[1], ranks, client=dask_client)["key"].tolist() == oracle(keys, scores, ranks).tolist()
    with pytest.raises(DataError, match="not a readable Parquet file"):
        open_resource(sorted_root)


def test_a_tie_run_larger_than_a_block_goes_through_bounded_selection(tmp_path, dask_client):
    n = 30_000
    rng = np.random.default_rng(6)
    keys = np.array([f"item-{i}" for i in rng.permutation(n)], dtype=object)
    scores = np.concatenate([np.linspace(1.0, 0.9, 5000), np.full(20_000, 0.5), np.linspace(0.4, 0.0, 5000)])
    order = np.lexsort((keys, -scores))
    keys, scores = keys[order], scores[order]
    root = write_files(tmp_path / "r", {"key": keys, "score": scores}, files=3, row_group_size=1500)
    res = open_resource(root)
    ranks = np.array([1, 4999, 5000, 5001, 5002, 6000, 15_000, 24_999, 25_000, 25_001, 30_000])
    direct = sorted_extraction(res, ranks)
    bounded = sorted_extraction(res, ranks, client=dask_client, max_block_rows=5000)
    assert (direct.items["key"].to_numpy() == oracle(keys, scores, ranks)).all()
    assert direct.items.equals(bounded.items)
    assert direct.row_groups_read == bounded.row_groups_read


def test_duplicate_keys_taken_or_ordering_ties_and_bad_labels_read_are_errors(tmp_path):
    keys = np.arange(100, dtype=np.int64)
    keys[60] = keys[61]
    keys[35] = keys[33]
    scores = np.linspace(1, 0, 100)
    scores[33:36] = scores[33]  # ranks 34..36 tie: their keys (one repeated) decide their order
    root = write_files(tmp_path / "r", {"key": keys, "score": scores, "label": np.r_[np.zeros(99), 0.5]}, row_group_size=10)
    res = open_resource(root, label="label")
    extract_ranks(res, [1, 2], columns=[])  # neither a duplicate nor the label is read
    # Rank 62's row group holds the other row of key 61, which is neither taken nor tied: a
    # duplicate key is looked for among the items taken and the tied rows only.
    assert extract_ranks(res, [62], columns=[])["key"].tolist() == [61]
    with pytest.raises(DataError, match="The key 61 occurs more than once in the rows extracted"):
        extract_ranks(res, [61, 62], columns=[])
    with pytest.raises(DataError, match=r"The key 33 occurs more than once in the rows ordered by key among ranks 31\.\.40 "):
        extract_ranks(res, [31], columns=[])
    with pytest.raises(DataError, match="label column 'label' holds 0.5"):
        extract_ranks(res, [100])


def test_unsorted_input_is_refused_with_the_alternative(tmp_path):
    root = write_files(tmp_path / "r", {"key": [1, 2, 3, 4], "score": [0.1, 0.2, 0.3, 0.4]}, row_group_size=2)
    with pytest.raises(DataError, match="not: part.0.parquet row group 1 reaches score 0.4.*Use prdist.dataflow.ranks.select.select_ranks"):
        extract_ranks(open_resource(root), [1])


def test_no_ranks_give_an_empty_frame_with_the_columns(tmp_path):
    root = write_files(tmp_path / "r", {"key": ["a", "b"], "score": [0.9, 0.1], "label": [1, 0]})
    found = sorted_extraction(open_resource(root, label="label"), [])
    assert found.items.column_names == ["rank", "key", "score", "label"] and len(found.items) == 0
    assert (found.bytes_read, found.row_groups_read) == (0, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 300),
    distinct=st.integers(1, 6),
    row_group_size=st.integers(1, 40),
    files=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_extraction_equals_the_oracle_on_random_tie_patterns(tmp_path_factory, n, distinct, row_group_size, files, seed, data):
    files = min(files, n)
    keys, scores, _ = tied_sorted(n, seed, distinct=distinct)
    root = write_files(tmp_path_factory.mktemp("h"), {"key": keys, "score": scores}, files=files, row_group_size=row_group_size)
    ranks = data.draw(st.lists(st.integers(1, n), min_size=1, max_size=20))
    max_block_rows = data.draw(st.sampled_from([1, 7, 1 << 22]))
    out = extract_ranks(open_resource(root), ranks, max_block_rows=max_block_rows)
    wanted = np.unique(ranks)
    assert out["rank"].tolist() == wanted.tolist()
    assert (out["key"].to_numpy() == oracle(keys, scores, wanted)).all()


# ------------------------------------------------------------------------------------------
# S3


def test_open_and_extract_on_s3_match_local(tmp_path, s3_server, s3_url):
    keys, scores, labels = tied_sorted(6000, 7, distinct=15)
    local = write_files(tmp_path / "r", {"key": keys, "score": scores, "label": labels}, files=3, row_group_size=500)
    for name in sorted(os.listdir(local)):
        write_parquet(pq.read_table(os.path.join(local, name)), f"{s3_url}/res/{name}",
                      storage_options=s3_server.storage_options, row_group_size=500)
    remote = open_resource(f"{s3_url}/res", storage_options=s3_server.storage_options, label="label")
    here = open_resource(local, label="label")
    assert (remote.n, len(remote.row_groups), remote.is_sorted_claim()) == (here.n, len(here.row_groups), True)
    assert remote.url == f"{s3_url}/res" and remote.fingerprint != here.fingerprint
    for text in (repr(remote), str(remote.describe())):
        assert s3_server.secret not in text and s3_server.key not in text
    ranks = np.r_[1:50, 2990:3010, 6000]
    remote_out = extract_ranks(remote, ranks)
    assert remote_out.equals(extract_ranks(here, ranks))
    assert (remote_out["key"].to_numpy() == oracle(keys, scores, ranks)).all()
    with pytest.raises(InputError, match="no such file or directory"):
        open_resource(f"{s3_url}/missing", storage_options=s3_server.storage_options)
    with pytest.raises(InputError, match="the bucket 'prdist-no-such-bucket' does not exist"):
        open_resource("s3://prdist-no-such-bucket/res", storage_options=s3_server.storage_options)
    # A HEAD request carries no error code: the message cannot tell a wrong secret from a
    # missing permission, and says so.
    with pytest.raises(InputError, match=r"access denied \(HTTP 403\): the credentials are wrong or lack the permission"):
        open_resource(f"{s3_url}/res", storage_options={**s3_server.storage_options, "secret": "wrong"})


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(st.integers(0, 5), min_size=1, max_size=60),
    presorted=st.booleans(),
    string_keys=st.booleans(),
)
def test_sorted_block_order_equals_a_full_rank_sort(values, presorted, string_keys):
    # Sorted blocks (with tie runs) take the fast path, unsorted ones the full sort: both give
    # the rank order of rank_sort.
    scores = np.array(sorted(values, reverse=True) if presorted else values, dtype=float)
    keys = np.arange(scores.size) * 7 + 3
    if string_keys:
        keys = np.array([f"k{k}" for k in keys], dtype=object)
    expected = rank_sort(descending_ordinal(scores), key_hash(keys), keys)
    np.testing.assert_array_equal(sorted_block_order(scores, keys), expected)
