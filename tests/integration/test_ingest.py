"""prdist ingest: CSV/TSV/JSONL/Parquet dumps to a ranked resource that prdist run reads."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.cli_run import cli
from prdist.dataflow.ranks.ingest import INGEST_MARKER, IngestSpec, ingest
from prdist.dataflow.io.parquet import open_resource
from prdist.errors import DataError, InputError
from prdist.ranking import rank_order

from tests.support.paths import REVERB  # noqa: E402
REVERB_COLUMNS = "sentence,arg1,relation,arg2,confidence"


def _kb(n: int, seed: int = 0) -> pd.DataFrame:
    """A knowledge-base dump: subject, object, a score, with tied scores and a few duplicate keys."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "subject": [f"s{i % 997}" for i in range(n)],
        "object": [f"o{i // 997}" for i in range(n)],
        "conf": rng.integers(0, 5000, n) / 5000,
        "source": rng.choice(["wiki", "web"], n),
    })
    dup = frame.sample(20, random_state=seed).assign(conf=lambda f: f["conf"] / 2)  # lower: dropped
    return pd.concat([frame, dup], ignore_index=True)


def _expected(frame: pd.DataFrame) -> pd.DataFrame:
    """The resource the slow way: composite key, highest score per key, rank order."""
    keyed = frame.assign(key=frame["subject"] + "|" + frame["object"])
    best = keyed.sort_values("conf", ascending=False, kind="stable").drop_duplicates("key")
    order = rank_order(best["conf"].to_numpy(), best["key"].to_numpy())
    return best.iloc[order].reset_index(drop=True)


def _read(url) -> pd.DataFrame:
    return pq.read_table(url).to_pandas().astype({"key": object})


def test_composite_keys_duplicates_rank_order_and_row_groups(tmp_path):
    frame = _kb(40_000)
    frame.to_csv(tmp_path / "kb.csv", index=False)
    out = tmp_path / "kb"
    result = ingest([tmp_path / "kb.csv"], str(out), IngestSpec(score="conf", keys=("subject", "object"), duplicates="keep-highest"))
    expected = _expected(frame)
    written = _read(out)
    assert (result.rows, result.duplicates) == (len(expected), 20)
    assert written["key"].tolist() == expected["key"].tolist()
    np.testing.assert_array_equal(written["score"], expected["conf"])
    assert list(written.columns) == ["key", "score", "subject", "object", "source"]
    meta = pq.ParquetFile(out / "part-00000.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [16384, 16384, 40_000 - 32768]
    assert meta.row_group(0).column(1).statistics.has_min_max
    resource = open_resource(str(out))
    assert resource.n == len(expected) and resource.is_sorted_claim()
    marker = json.loads((out / INGEST_MARKER).read_text())
    assert (marker["duplicates"], marker["duplicates_dropped"]) == ("keep-highest", 20)


@pytest.mark.parametrize("memory_limit", [None, 0], ids=["in memory", "dask"])
def test_a_key_that_is_not_unique_is_refused_with_its_count_an_example_and_the_fix(tmp_path, memory_limit):
    frame = _kb(3000, seed=1)
    halves = [frame.iloc[:1600], frame.iloc[1600:]]  # duplicates fall in both files
    for i, half in enumerate(halves):
        half.to_csv(tmp_path / f"kb-{i}.csv", index=False)
    sources = [tmp_path / "kb-0.csv", tmp_path / "kb-1.csv"]
    limit = {} if memory_limit is None else {"memory_limit": memory_limit}
    with pytest.raises(DataError) as info:
        ingest(sources, str(tmp_path / "kb"), IngestSpec(score="conf", keys=("subject", "object")), **limit)
    message = str(info.value)
    example = message.split("e.g. '")[1].split("'")[0]
    assert "the key is not unique: 20 key(s) are held by more than one row (20 row(s) beyond one per key)" in message
    assert (frame["subject"] + "|" + frame["object"]).value_counts()[example] == 2
    assert "add --key columns" in message and "--duplicates keep-highest" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb-0.csv", "kb-1.csv"]  # nothing written, no staging left


def test_the_cli_refuses_a_key_that_is_not_unique_and_keeps_the_highest_on_request(tmp_path):
    from tests.integration.test_bad_input import assert_refused

    (tmp_path / "kb.csv").write_text("s,o,conf\nParis,France,0.9\nRome,Italy,0.7\nParis,France,0.4\nParis,Spain,0.3\n")
    argv = ["ingest", str(tmp_path / "kb.csv"), "--out", str(tmp_path / "kb"), "--score", "conf", "--key", "s"]
    assert_refused(argv, says=["1 key(s) are held by more than one row (2 row(s) beyond one per key), e.g. 'Paris'",
                               "add --key columns"], watched=[tmp_path])
    code, out, err = cli(*argv, "--key", "o")
    assert code == 2 and "1 key(s)" in err and "'Paris|France'" in err
    code, out, err = cli(*argv, "--key", "o", "--duplicates", "keep-highest")
    assert code == 0 and err.strip() == ("prdist ingest: 3 items from 1 file(s); 1 duplicate row(s) dropped "
                                         "(--duplicates keep-highest: the highest score of each key kept)")
    assert _read(tmp_path / "kb")["score"].tolist() == [0.9, 0.7, 0.3]


def test_the_dask_path_equals_the_in_memory_path(tmp_path):
    frame = _kb(3000, seed=1)
    halves = [frame.iloc[:1600], frame.iloc[1600:]]  # duplicates fall in both files
    sources = []
    for i, half in enumerate(halves):
        half.to_csv(tmp_path / f"kb-{i}.csv.gz", index=False, compression="gzip")
        sources.append(tmp_path / f"kb-{i}.csv.gz")
    spec = IngestSpec(score="conf", keys=("subject", "object"), duplicates="keep-highest")
    memory = ingest(sources, str(tmp_path / "memory"), spec)
    dask = ingest(sources, str(tmp_path / "dask"), spec, memory_limit=0)
    assert (dask.rows, dask.duplicates) == (memory.rows, memory.duplicates) == (3000, 20)
    pd.testing.assert_frame_equal(_read(tmp_path / "dask").astype(object), _read(tmp_path / "memory").astype(object))
    assert open_resource(str(tmp_path / "dask")).is_sorted_claim()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # staging removed


def test_jsonl_and_parquet_inputs_keep_integer_keys(tmp_path):
    rows = [{"id": i, "score": s, "text": f"t{i}"} for i, s in enumerate([0.2, 0.9, 0.5])]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    for name in ("a.jsonl", "a.parquet"):
        result = ingest([tmp_path / name], str(tmp_path / f"out-{name}"), IngestSpec(score="score", keys=("id",)))
        written = pq.read_table(tmp_path / f"out-{name}").to_pandas()
        assert result.rows == 3 and written["key"].tolist() == [1, 2, 0] and written["key"].dtype == np.int64


@pytest.mark.parametrize(
    "content, message",
    [
        ("k,score\na,0.5\nb,high\nc,\n,0.1\nd,inf\n", "4 bad row(s) (a missing key or a score that is not a finite number) at line(s) 3, 4, 5, 6"),
        ("k,score\na,0.5\n\nb,0.2\n", "1 bad row(s)"),
        ("name,score\na,0.5\n", ": no column 'k'"),
        ("k,score,key\na,0.5,x\n", ": a column 'key' that is not the key"),
        ("k,score\na,0.5,7\n", "Expected 2 fields in line 2, saw 3"),
        ("k,k\na,0.5\n", "name every column once"),
    ],
)
def test_bad_rows_are_refused_with_line_numbers_and_nothing_is_written(tmp_path, content, message):
    (tmp_path / "in.csv").write_text(content)
    with pytest.raises(DataError) as info:
        ingest([tmp_path / "in.csv"], str(tmp_path / "out"), IngestSpec(score="score", keys=("k",)))
    assert message in str(info.value) and "\n" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_inputs_gzip_and_format_errors(tmp_path):
    with gzip.open(tmp_path / "in.tsv.gz", "wt") as fh:
        fh.write('k\tscore\na "quoted\t0.5\n')
    assert ingest([tmp_path / "in.tsv.gz"], str(tmp_path / "out"), IngestSpec(score="score", keys=("k",))).rows == 1
    assert _read(tmp_path / "out")["key"].tolist() == ['a "quoted']
    (tmp_path / "dump.txt").write_text("a\t0.5\n")
    with pytest.raises(InputError, match="give --format"):
        ingest([tmp_path / "dump.txt"], str(tmp_path / "out2"), IngestSpec(score="score", keys=("k",)))
    with pytest.raises(InputError, match="is parquet, which names its own. Drop --columns"):
        ingest([tmp_path / "out" / "part-00000.parquet"], str(tmp_path / "out3"), IngestSpec(score="score", keys=("k",), columns=("k", "score")))
    with pytest.raises(InputError, match="exists already"):
        ingest([tmp_path / "in.tsv.gz"], str(tmp_path / "out"), IngestSpec(score="score", keys=("k",)))


def test_cli_ingests_reverb_and_run_evaluates_727_items(tmp_path):
    source = REVERB / "extractions" / "reverb.txt"
    resource = str(tmp_path / "reverb")
    code, out, err = cli("ingest", str(source), "--out", resource, "--score", "confidence", "--key", "sentence",
                         "--key", "arg1", "--key", "relation", "--key", "arg2", "--format", "tsv", "--columns", REVERB_COLUMNS)
    assert code == 0, err
    assert out.splitlines()[-1] == resource
    assert err.strip() == "prdist ingest: 727 items from 1 file(s); every key unique"
    code, out, err = cli("run", "--resource", resource, "--out", str(tmp_path / "runs"))
    assert code == 3, err  # no labels yet: a complete run awaiting every planned label
    manifest = json.loads((Path(out.splitlines()[-1]) / "manifest.json").read_text())
    assert manifest["n"] == 727 and manifest["counts"]["annotations"] == 727
    note = [line for line in err.splitlines() if line.startswith("prdist: note:")]
    assert note == ["prdist: note: the PAULA plan labels all 727 items (n <= g_l = 3,492, the fully labeled prefix at "
                    "eps=0.03, window=100); --eps 0.1 --window 20 would label 469 (saving 258) with a looser guarantee "
                    "(factor 1.32 instead of 1.08)."]


def test_cli_refuses_bad_rows_with_exit_2_and_one_line(tmp_path):
    (tmp_path / "bad.csv").write_text("a,score\n1,0.5\n2,x\n")
    code, out, err = cli("ingest", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "out"), "--score", "score", "--key", "a")
    assert code == 2 and out == ""
    assert err.splitlines() == [f"prdist: error: {tmp_path / 'bad.csv'}: 1 bad row(s) (a missing key or a score that is not a finite number) at line(s) 3; fix or drop them and ingest again."]


def test_inputs_and_output_on_s3_in_memory_and_on_a_cluster(tmp_path, s3_server, s3_url, dask_client):
    import s3fs

    frame = _kb(2500, seed=2)
    fs = s3fs.S3FileSystem(**s3_server.storage_options)
    sources = []
    for i, part in enumerate((frame.iloc[:1200], frame.iloc[1200:])):
        url = f"{s3_url}/in/kb-{i}.csv.gz"
        with fs.open(url, "wb") as fh:
            fh.write(gzip.compress(part.to_csv(index=False).encode()))
        sources.append(url)
    spec = IngestSpec(score="conf", keys=("subject", "object"), duplicates="keep-highest")
    options = s3_server.storage_options
    memory = ingest(sources, f"{s3_url}/memory", spec, storage_options=options)
    cluster = ingest(sources, f"{s3_url}/cluster", spec, storage_options=options, client=dask_client, memory_limit=0)
    assert (memory.rows, memory.duplicates) == (cluster.rows, cluster.duplicates) == (2500, 20)
    expected = _expected(frame)["key"].tolist()
    for name in ("memory", "cluster"):
        resource = open_resource(f"{s3_url}/{name}", storage_options=options)
        assert resource.n == 2500 and resource.is_sorted_claim()
        table = pq.read_table(f"{s3_url[len('s3://'):]}/{name}", filesystem=fs)
        assert table["key"].to_pylist() == expected
    left = [p for p in fs.ls(s3_url[len("s3://"):], refresh=True) if "prdist-ingest" in p]
    assert [fs.find(p) for p in left] == []  # staging removed


def test_an_empty_key_is_refused_in_every_format_with_its_line_and_nothing_is_written(tmp_path):
    rows = [{"key": "a", "score": 0.9}, {"key": "", "score": 0.5}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli("ingest", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out"), "--score", "score", "--key", "key")
    assert code == 2 and out == "" and not (tmp_path / "out").exists()
    assert err.splitlines() == [f"prdist: error: {tmp_path / 'in.jsonl'}, line(s) 2: an empty key (an annotator could not name the item); "
                                "give those items keys, or drop them."]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    (tmp_path / "in.csv").write_text('key,score\na,0.9\n"",0.5\n')
    for name, message in (("in.parquet", "an empty key"), ("in.csv", "a missing key")):
        with pytest.raises(DataError, match=message):
            ingest([tmp_path / name], str(tmp_path / f"out-{name}"), IngestSpec(score="score", keys=("key",)))
        assert not (tmp_path / f"out-{name}").exists()


def test_a_json_score_holding_numbers_and_text_is_refused_but_csv_scores_are_text_by_nature(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"key": "a", "score": 0.9}\n{"key": "b", "score": "0.4"}\n')
    code, out, err = cli("ingest", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out"), "--score", "score", "--key", "key")
    assert code == 2 and out == "" and not (tmp_path / "out").exists()
    assert err.splitlines() == [f"prdist: error: {tmp_path / 'in.jsonl'}, field 'score': a number at line 1 but a number in quotes (text) at line 2; "
                                "write every score as a number (without quotes)."]
    (tmp_path / "in.csv").write_text("key,score\na,0.9\nb,0.4\n")
    result = ingest([tmp_path / "in.csv"], str(tmp_path / "out-csv"), IngestSpec(score="score", keys=("key",)))
    assert result.rows == 2
