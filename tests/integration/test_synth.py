"""Tests of prdist.dataflow.synth: synthetic resources with known truth, written without a sort.

Oracles: the model's own distribution (cdf levels of a sorted resource must be i.i.d. uniform
order statistics; boundary levels must follow the Beta law of uniform order statistics), the
model's expected precision ``precision_at_fraction``, :func:`prdist.ranking.rank_order` (the file
order must be the rank order, ties included) and a slow reference generator (``model.sample`` +
``rank_order``) for the shuffled layout.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs
from distributed import Client, LocalCluster, get_task_stream
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from prdist import population
from prdist.cli import main
from prdist.dataflow import synth
from prdist.dataflow import extract_ranks, open_resource, verify_order
from prdist.dataflow.synth import (
    BLOCK_ROWS,
    SYNTH_MARKER,
    METADATA_KEY,
    read_synth_metadata,
    synthetic_keys,
    write_synthetic,
)
from prdist.errors import DataError, InputError, ParameterError
from prdist.ranking import key_hash, rank_order

MODELS = {
    "binormal": population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.2),
    "bilognormal": population.bilognormal(neg=(0, 0.5), pos=(0.5, 0.8), prevalence=0.4),
    "bibeta": population.bibeta(neg=(2, 5), pos=(5, 2), prevalence=0.5),
    "uniform": population.uniform(neg=(0, 1), pos=(0.5, 1.5), prevalence=1 / 11),
    "discrete": population.discrete(
        neg=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7],
        pos=[0.2, 0.35, 0.5, 0.75, 0.9],
        prevalence=0.5,
    ),
    "bumped": population.bumped(
        population.binormal(neg=(0, 1), pos=(2, 1), prevalence=0.3), bump=(-2.5, 0.3, 0.2)
    ),
}
CONTINUOUS = [name for name in MODELS if name != "discrete"]


def read(url, storage_options=None):
    """The dataset's rows in file order (files in name order), as numpy arrays."""
    fs, root = fsspec.core.url_to_fs(str(url), **(storage_options or {}))
    names = sorted(p for p in fs.ls(root, detail=False) if p.endswith(".parquet"))
    tables = []
    for name in names:
        with fs.open(name, "rb") as fh:
            tables.append(pq.read_table(fh))
    table = pa.concat_tables(tables)
    return {c: table[c].to_numpy() for c in ("key", "score", "label")}, table.schema


def files_bytes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


# --- keys ----------------------------------------------------------------------------------------


@given(start=st.integers(0, 2**63 - 1000), length=st.integers(0, 300))
@settings(max_examples=50, deadline=None)
def test_key_of_a_position_hashes_to_the_position(start, length):
    keys = synthetic_keys(start, start + length)
    assert keys.dtype == np.int64 and keys.shape == (length,)
    np.testing.assert_array_equal(key_hash(keys), np.arange(start, start + length, dtype=np.uint64))


# --- the sorted construction -----------------------------------------------------------------


def test_block_boundaries_follow_the_beta_law_of_uniform_order_statistics():
    # The cdf level at the end of block j is 1 - U_(c_j); over 400 seeds its first two values
    # must be Beta(n - c + 1, c) distributed (KS at level 1e-4). The law of the second one is
    # only right if the sequential draw conditions correctly on the first.
    n = 3 * BLOCK_ROWS + 123
    levels = np.array([synth._block_levels(n, seed)[:2] for seed in range(400)])
    for j in range(2):
        c = (j + 1) * BLOCK_ROWS
        result = stats.kstest(levels[:, j], stats.beta(n - c + 1, c).cdf)
        assert result.pvalue > 1e-4, (j, result)
    assert np.all(np.diff(synth._block_levels(10**9, 1)) <= 0)


@pytest.mark.parametrize("name", CONTINUOUS)
def test_sorted_cdf_levels_are_uniform_order_statistics(tmp_path, name):
    # F(score) of the rows must be the sorted values of n i.i.d. uniforms: descending, and
    # uniform as a sample (KS, level 1e-4: a wrong spacing scheme or a block seam is caught).
    model = MODELS[name]
    n = 3 * BLOCK_ROWS + 777
    write_synthetic(model, n=n, out=str(tmp_path / "r"), partitions=2, seed=5)
    rows, _ = read(tmp_path / "r")
    levels = model.score_cdf(rows["score"])
    assert np.all(np.diff(rows["score"]) <= 0)
    assert stats.kstest(levels, "uniform").pvalue > 1e-4
    # Each block's rows on their own (the within-block spacings) are uniform between bounds.
    first = np.sort(levels[:BLOCK_ROWS])
    scaled = (first - first[0]) / (first[-1] - first[0])
    assert stats.kstest(scaled[1:-1], "uniform").pvalue > 1e-4


@pytest.mark.parametrize("name", list(MODELS))
def test_sorted_file_order_is_the_rank_order(tmp_path, name):
    # Many small partitions so that tie groups of the discrete model span file boundaries.
    n = 5_000
    res = write_synthetic(MODELS[name], n=n, out=str(tmp_path / "r"), partitions=7, seed=3)
    rows, schema = read(tmp_path / "r")
    assert [(f.name, str(f.type)) for f in schema] == [("key", "int64"), ("score", "double"), ("label", "int8")]
    assert len(rows["key"]) == n == sum(r for _, r in res.files)
    assert np.unique(rows["key"]).size == n
    assert set(np.unique(rows["label"])) <= {0, 1}
    assert np.all(np.isfinite(rows["score"]))
    np.testing.assert_array_equal(rank_order(rows["score"], rows["key"]), np.arange(n))
    if name == "discrete":
        assert np.unique(rows["score"]).size < 20  # ties really were exercised


def test_the_resource_reader_finds_the_rows_at_their_ranks(tmp_path):
    # prdist.dataflow.io.parquet takes the files in natural order, skips the marker, checks the
    # order from row-group statistics and resolves tie groups by key hash: on a sorted synthetic
    # resource every rank must land on the row at that position, ties across files included.
    n = 6_000
    write_synthetic(MODELS["discrete"], n=n, out=str(tmp_path / "r"), partitions=4, seed=2, row_group_size=700)
    rows, _ = read(tmp_path / "r")
    resource = open_resource(str(tmp_path / "r"), label="label")
    assert resource.n == n and resource.is_sorted_claim()
    assert verify_order(resource, full=True).sorted
    ranks = np.unique(np.r_[1, n, np.random.default_rng(0).integers(1, n + 1, 200)])
    found = extract_ranks(resource, ranks)
    np.testing.assert_array_equal(found["key"].to_numpy(), rows["key"][ranks - 1])
    np.testing.assert_array_equal(found["label"].to_numpy(), rows["label"][ranks - 1])


# Ranks at which the empirical precision is compared with the model's.
RANKS = np.array([30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 200_000])


def precision_check(model, labels, *, delta=1e-5):
    """Whether the empirical precision p(r) at RANKS is within tolerance of the model's.

    The yield y(r) = r p(r) is compared with r * precision_at_fraction(r / n). Its variance for
    an i.i.d. resource is, by the delta method, r [p(1 - p) + (eta - p)^2 (1 - t)] with t = r / n
    and eta = P(Y=1 | the score at rank r): the binomial noise of the labels plus the noise of
    where the r-th score falls. The tolerance is Bernstein's for a sum of variables bounded by 1
    with that variance at failure probability delta, L/3 + sqrt((L/3)^2 + 2 var L) with
    L = ln(2/delta): about 4.9 sd for large r, and wide enough at small r, where a normal
    approximation of a handful of negatives would raise false alarms.
    Returns (ok, rows) with rows = (rank, observed, expected, tolerance in precision units).
    """
    n = labels.size
    ranks = RANKS[RANKS <= n]
    t = ranks / n
    p = model.precision_at_fraction(t)
    eta = model.positive_probability(model.score_quantile(1.0 - (ranks - 0.5) / n))
    variance = ranks * (p * (1 - p) + (eta - p) ** 2 * (1 - t))
    big_l = math.log(2 / delta)
    tolerance = big_l / 3 + np.sqrt((big_l / 3) ** 2 + 2 * variance * big_l)
    observed = np.cumsum(labels)[ranks - 1]
    ok = np.abs(observed - ranks * p) <= tolerance
    return bool(ok.all()), list(zip(ranks.tolist(), observed / ranks, p, tolerance / ranks))


@pytest.mark.parametrize("name", ["binormal", "bibeta", "uniform", "discrete", "bumped"])
@pytest.mark.parametrize("seed", [0, 1])
def test_sorted_precision_matches_the_model(tmp_path, name, seed):
    # delta = 1e-5 at 9 ranks x 10 cases: a family-wise false alarm rate below 1e-3; a precision
    # off by 0.01 at rank 10^5 (about 7 sd) is caught.
    model = MODELS[name]
    write_synthetic(model, n=200_000, out=str(tmp_path / "r"), seed=seed)
    rows, _ = read(tmp_path / "r")
    ok, table = precision_check(model, rows["label"])
    assert ok, table


def test_the_precision_check_detects_a_wrong_model(tmp_path):
    # The same check against a model with a slightly different prevalence must fail.
    write_synthetic(MODELS["binormal"], n=200_000, out=str(tmp_path / "r"), seed=0)
    rows, _ = read(tmp_path / "r")
    wrong = population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.21)
    assert not precision_check(wrong, rows["label"])[0]


# --- the shuffled layout ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["binormal", "discrete", "bumped"])
def test_shuffled_has_the_distribution_of_the_model(tmp_path, name):
    model = MODELS[name]
    n = 200_000
    write_synthetic(model, n=n, out=str(tmp_path / "r"), order="shuffled", partitions=3, seed=9)
    rows, _ = read(tmp_path / "r")
    assert np.unique(rows["key"]).size == n
    # Not in rank order: position and score are uncorrelated (|rho| < 4.5 / sqrt(n)).
    assert abs(stats.spearmanr(np.arange(n), rows["score"]).statistic) < 4.5 / math.sqrt(n)
    # Same scores as the slow reference (model.sample, another seed): two-sample KS at 1e-4.
    ref_scores, ref_labels = model.sample(n, seed=12345)
    assert stats.ks_2samp(rows["score"], ref_scores).pvalue > 1e-4
    # Prevalence within 4.5 binomial sd.
    pi = model.prevalence
    assert abs(rows["label"].mean() - pi) <= 4.5 * math.sqrt(pi * (1 - pi) / n)
    # Ranked in memory, its precision is the model's.
    order = rank_order(rows["score"], rows["key"])
    ok, table = precision_check(model, rows["label"][order])
    assert ok, table


# --- determinism -----------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_rows_do_not_depend_on_partitions_or_row_groups(tmp_path, order):
    model = MODELS["bumped"]
    n = 2 * BLOCK_ROWS + 999
    write_synthetic(model, n=n, out=str(tmp_path / "a"), partitions=1, order=order, seed=4)
    write_synthetic(model, n=n, out=str(tmp_path / "b"), partitions=5, order=order, seed=4, row_group_size=1000)
    write_synthetic(model, n=n, out=str(tmp_path / "c"), partitions=5, order=order, seed=5)
    a, _ = read(tmp_path / "a")
    b, _ = read(tmp_path / "b")
    c, _ = read(tmp_path / "c")
    for col in ("key", "score", "label"):
        np.testing.assert_array_equal(a[col], b[col])
    assert not np.array_equal(a["score"], c["score"])  # the seed matters
    meta = pq.ParquetFile(next((tmp_path / "b").glob("part-*.parquet"))).metadata
    assert meta.num_row_groups > 1 and meta.row_group(0).num_rows == 1000


def test_a_key_offset_gives_other_keys_and_the_same_items(tmp_path, capsys):
    """Releases given disjoint key ranges share no key (labels of one never answer for another);
    scores, labels and rank order are those without the offset."""
    from prdist.ranking import key_hash

    model = MODELS["bumped"]
    n = BLOCK_ROWS + 77
    write_synthetic(model, n=n, out=str(tmp_path / "a"), partitions=2, seed=4)
    shifted = write_synthetic(model, n=n, out=str(tmp_path / "b"), partitions=2, seed=4, key_offset=n)
    a, _ = read(tmp_path / "a")
    b, _ = read(tmp_path / "b")
    np.testing.assert_array_equal(a["score"], b["score"])
    np.testing.assert_array_equal(a["label"], b["label"])
    assert not set(a["key"].tolist()) & set(b["key"].tolist())
    assert np.all(np.diff(key_hash(b["key"]).astype(np.uint64)) == 1)  # file order = ascending hash: the tie-break holds
    assert shifted.key_offset == n and synth.read_synth_metadata(str(tmp_path / "b")).key_offset == n
    assert synth.read_synth_metadata(str(tmp_path / "a")).key_offset == 0
    assert main(["synth", "--n", "1000", "--seed", "1", "--key-offset", "1000", "--out", str(tmp_path / "c")]) == 0
    assert synth.read_synth_metadata(str(tmp_path / "c")).key_offset == 1000
    assert main(["synth", "--n", "1000", "--seed", "1", "--key-offset", "-1", "--out", str(tmp_path / "d")]) == 2
    assert "--key-offset" in capsys.readouterr().err


@pytest.fixture(scope="module")
def clusters():
    """Real clusters: 1 in-process worker, and 2 worker processes (so tasks must pickle)."""
    made = {}
    for workers, processes in ((1, False), (2, True)):
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=processes, dashboard_address="127.0.0.1:0",
            scheduler_kwargs={"dashboard": False},
        )
        # Not the default client: tests without client= must keep running in this process.
        made[workers] = (cluster, Client(cluster, set_as_default=False))
    yield {w: client for w, (_, client) in made.items()}
    for cluster, client in made.values():
        client.close()
        cluster.close()


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_same_bytes_in_process_and_on_1_and_2_workers(tmp_path, clusters, order):
    model = MODELS["binormal"]
    kwargs = dict(n=3 * BLOCK_ROWS + 5, partitions=4, order=order, seed=2026, row_group_size=50_000)
    write_synthetic(model, out=str(tmp_path / "local"), **kwargs)
    reference = files_bytes(tmp_path / "local")
    assert sorted(reference) == [SYNTH_MARKER] + [f"part-{k:05d}.parquet" for k in range(4)]
    for workers, client in clusters.items():
        out = tmp_path / f"w{workers}"
        with get_task_stream(client) as stream:
            write_synthetic(model, out=str(out), client=client, **kwargs)
        assert files_bytes(out) == reference, workers
        # The partitions really were shared by every worker.
        used = {task["worker"] for task in stream.data if "_partition_task" in str(task["key"])}
        assert len(used) == workers


# --- metadata and publication ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_metadata_round_trip_rebuilds_the_model(tmp_path, name):
    model = MODELS[name]
    written = write_synthetic(model, n=1_000, out=str(tmp_path / "r"), partitions=2, order="shuffled", seed=8)
    back = read_synth_metadata(str(tmp_path / "r"))
    assert (back.n, back.order, back.seed, back.partitions, back.files) == (
        1_000, "shuffled", 8, 2, written.files,
    )  # fmt: skip
    assert repr(back.model) == repr(model) and back.model.family == model.family
    t = np.array([0.001, 0.1, 0.5, 1.0])
    np.testing.assert_array_equal(back.model.precision_at_fraction(t), model.precision_at_fraction(t))
    # Every file carries the truth in its Parquet key-value metadata.
    for part in sorted((tmp_path / "r").glob("part-*.parquet")):
        embedded = json.loads(pq.read_schema(part).metadata[METADATA_KEY])
        assert embedded["model"]["family"] == model.family and embedded["seed"] == 8


def test_metadata_refuses_incomplete_or_altered_datasets(tmp_path):
    write_synthetic(MODELS["uniform"], n=500, out=str(tmp_path / "r"), partitions=2, seed=1)
    marker = tmp_path / "r" / SYNTH_MARKER
    text = marker.read_text()
    marker.write_text(text.replace('"seed": 1', '"seed": 2'))
    with pytest.raises(DataError, match="modified after it was written"):
        read_synth_metadata(str(tmp_path / "r"))
    marker.unlink()
    with pytest.raises(DataError, match="no _prdist_synth.json"):
        read_synth_metadata(str(tmp_path / "r"))


def test_existing_output_is_refused(tmp_path):
    out = tmp_path / "r"
    write_synthetic(MODELS["uniform"], n=100, out=str(out), seed=1)
    before = files_bytes(out)
    with pytest.raises(InputError, match="exists already"):
        write_synthetic(MODELS["uniform"], n=100, out=str(out), seed=2)
    assert files_bytes(out) == before
    (tmp_path / "empty").mkdir()  # an empty directory is fine
    write_synthetic(MODELS["uniform"], n=100, out=str(tmp_path / "empty"), seed=2)


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    calls = []

    def failing_block(model, seed, j, rows, **kwargs):
        calls.append(j)
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(synth, "_sorted_block", failing_block)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_synthetic(MODELS["binormal"], n=1_000, out=str(tmp_path / "r"), partitions=2, seed=1)
    assert calls and list(tmp_path.iterdir()) == []  # neither the output nor a staging directory


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n=0), "'n' parameter"),
        (dict(n=10, partitions=11), "'partitions' parameter"),
        (dict(order="random"), "'order' parameter"),
        (dict(seed=-1), "'seed' parameter"),
        (dict(row_group_size=0), "'row_group_size' parameter"),
        (dict(out=""), "'out' parameter"),
        (dict(model="binormal"), "'model' parameter"),
    ],
)
def test_parameters_are_checked(tmp_path, kwargs, match):
    args = dict(model=MODELS["binormal"], n=10, out=str(tmp_path / "r"), seed=1) | kwargs
    model = args.pop("model")
    with pytest.raises(ParameterError, match=match):
        write_synthetic(model, **args)
    assert not (tmp_path / "r").exists()


# --- S3 (a real SeaweedFS server) -------------------------------------------------------------


def s3_files(s3_server, url) -> dict[str, bytes]:
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_server.storage_options)
    # Objects only: SeaweedFS also lists the (empty) directory it keeps for a prefix.
    found = fs.find(url, detail=True)
    return {path.rsplit("/", 1)[1]: fs.cat_file(path) for path, info in found.items() if info["type"] == "file"}


def test_s3_round_trip_gives_the_local_bytes(tmp_path, s3_server, s3_url):
    model = MODELS["discrete"]
    kwargs = dict(n=BLOCK_ROWS + 100, partitions=3, seed=11, row_group_size=20_000)
    options = s3_server.storage_options
    written = write_synthetic(model, out=s3_url, storage_options=options, **kwargs)
    assert written.url == s3_url
    write_synthetic(model, out=str(tmp_path / "local"), **kwargs)
    assert s3_files(s3_server, s3_url) == files_bytes(tmp_path / "local")
    back = read_synth_metadata(s3_url, storage_options=options)
    assert repr(back.model) == repr(model) and back.files == written.files
    rows, _ = read(s3_url, options)
    np.testing.assert_array_equal(rank_order(rows["score"], rows["key"]), np.arange(kwargs["n"]))
    with pytest.raises(InputError, match="exists already"):
        write_synthetic(model, out=s3_url, storage_options=options, **kwargs)


def test_s3_failures_leave_nothing_and_create_no_bucket(s3_server, s3_url, monkeypatch):
    options = s3_server.storage_options
    missing = f"s3://no-such-bucket-{os.getpid()}/r"
    with pytest.raises(InputError, match="does not exist"):
        write_synthetic(MODELS["uniform"], n=100, out=missing, storage_options=options, seed=1)
    assert not s3fs.S3FileSystem(skip_instance_cache=True, **options).exists(missing.split("/")[2])

    def failing_block(model, seed, j, rows, **kwargs):
        if j == 1:
            raise RuntimeError("worker lost")
        return real_block(model, seed, j, rows, **kwargs)

    real_block = synth._sorted_block
    monkeypatch.setattr(synth, "_sorted_block", failing_block)
    with pytest.raises(RuntimeError, match="worker lost"):
        write_synthetic(MODELS["uniform"], n=2 * BLOCK_ROWS, out=s3_url, partitions=2, storage_options=options, seed=1)
    assert s3_files(s3_server, s3_url) == {}
    monkeypatch.setattr(synth, "_sorted_block", real_block)  # the retry succeeds
    write_synthetic(MODELS["uniform"], n=2 * BLOCK_ROWS, out=s3_url, partitions=2, storage_options=options, seed=1)
    assert sorted(s3_files(s3_server, s3_url)) == [SYNTH_MARKER, "part-00000.parquet", "part-00001.parquet"]


def test_cli_writes_to_s3_with_storage_options(s3_server, s3_url, capsys):
    code, stdout, stderr = run_cli(
        capsys, "--model", "uniform", "--n", "1000", "--seed", "3", "--out", s3_url,
        "--storage-options", json.dumps(s3_server.storage_options),
    )  # fmt: skip
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[-1] == s3_url
    assert s3_server.secret not in stdout
    assert read_synth_metadata(s3_url, storage_options=s3_server.storage_options).n == 1000


# --- command line ----------------------------------------------------------------------------


def run_cli(capsys, *args):
    code = main(["synth", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_defaults_write_a_binormal_resource(tmp_path, capsys):
    out = str(tmp_path / "r")
    code, stdout, stderr = run_cli(capsys, "--model", "binormal", "--n", "20000", "--seed", "1", "--out", out)
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[-1] == out
    back = read_synth_metadata(out)
    assert repr(back.model) == repr(population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5))
    assert (back.n, back.order, back.seed) == (20_000, "sorted", 1)


def test_cli_model_options_and_a_cluster(tmp_path, capsys, clusters):
    out = str(tmp_path / "r")
    address = clusters[2].scheduler.address
    code, stdout, stderr = run_cli(
        capsys, "--model", "discrete", "--neg", "0.1,0.2,0.2", "--pos", "0.2,0.3", "--prevalence", "0.25",
        "--n", "5000", "--partitions", "3", "--order", "shuffled", "--seed", "7", "--out", out,
        "--scheduler", address,
    )  # fmt: skip
    assert (code, stderr) == (0, ""), stderr
    assert stdout.splitlines()[-1] == out
    back = read_synth_metadata(out)
    assert repr(back.model) == repr(population.discrete(neg=[0.1, 0.2, 0.2], pos=[0.2, 0.3], prevalence=0.25))
    assert (back.partitions, back.order) == (3, "shuffled")
    code, stdout, _ = run_cli(
        capsys, "--model", "bibeta", "--bump=0.2,0.05,0.3", "--n", "100", "--seed", "1", "--out", out + "b"
    )
    assert code == 0 and read_synth_metadata(out + "b").model.family == "bumped"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "gaussian"], "invalid choice: 'gaussian'"),
        (["--n", "-5"], "'--n' parameter of prdist synth"),
        (["--neg", "0"], "--neg for --model binormal must be 2 comma-separated numbers"),
        (["--pos", "1,0"], "'pos' parameter of binormal"),
        (["--prevalence", "1.5"], "'prevalence' parameter"),
        (["--partitions", "0"], "'--partitions' parameter"),
        (["--storage-options", "[1]"], "--storage-options must be a JSON object"),
        (["--model", "discrete", "--bump=0,1,0.1"], "--bump needs a continuous model"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    base = {"--n": "100", "--seed": "1", "--out": str(tmp_path / "r")}
    for flag in args:
        base.pop(flag, None)
    argv = [x for kv in base.items() for x in kv] + args
    code, stdout, stderr = run_cli(capsys, *argv)
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1 and message in stderr, stderr
    assert not (tmp_path / "r").exists()


def test_cli_refuses_an_existing_output(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    code, _, stderr = run_cli(capsys, "--n", "100", "--seed", "1", "--out", str(out))
    assert code == 2 and "exists already" in stderr
    assert os.listdir(out) == ["precious.txt"]


def test_cli_judge_accuracy_adds_a_judge_column_and_refuses_outside_0_1(tmp_path, capsys):
    import pyarrow.dataset as ds

    out = str(tmp_path / "r")
    code, _, stderr = run_cli(capsys, "--n", "2000", "--seed", "3", "--judge-accuracy", "0.9", "--out", out)
    assert (code, stderr) == (0, "")
    table = ds.dataset(out, format="parquet").to_table(columns=["label", "judge"])
    agree = (table["label"].to_numpy() == table["judge"].to_numpy()).mean()
    assert 0.85 < agree < 0.95 and read_synth_metadata(out).judge_accuracy == 0.9
    for bad in ("0", "1.5"):
        code, _, stderr = run_cli(capsys, "--n", "10", "--seed", "3", "--judge-accuracy", bad, "--out", out + bad)
        assert code == 2 and "--judge-accuracy" in stderr and len(stderr.strip().splitlines()) == 1
