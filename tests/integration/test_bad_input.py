"""Bad input is refused clearly: exit code 2, one line naming the problem and the fix, nothing written.

Every case goes through the command line in-process (``prdist.cli.main`` with its streams
redirected) and asserts the whole contract of exit code 2:

- the exit code is 2;
- stderr holds exactly one line of prdist's, ``prdist: error: ...``, with the fragments that name
  the problem and the fix; every other line is a one-line record of Prefect's console log (its
  handler writes to the redirected stream, as it does to a terminal); no traceback anywhere
  (``--debug`` adds it: see ``test_debug_shows_the_traceback``);
- nothing is written or changed: every file under the watched roots (the output root, the label
  store, the resource itself) has the same bytes afterwards, and no run directory appears.

Each case also names the API call that fails the same way and the typed exception it raises, so
that the library and the command line agree. The behaviours that are *not* errors (a resource
smaller than the plan's prefix, store labels for keys of other resources, a sorted claim that only
holds between row groups) and the detection of a resource that changes under a run are tested at
the end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flows.evaluate_release  # noqa: F401 (Prefect configures its logging on import, before the tests touch it)
from prdist import plan_paula, population, precision_function, random_sampling_budget
from tests.support.cli_run import cli
from prdist.dataflow.io.artifacts import RunDirectory
from prdist.dataflow.run.evaluate import EvaluationParams
from prdist.dataflow.labels.task import write_annotation_file
from prdist.dataflow.labels.importer import import_labels
from prdist.dataflow import extract_ranks, open_resource, verify_order
from prdist.dataflow.io.publishing import write_bytes_exclusive
from prdist.dataflow.io.storage import parse_storage_options
from prdist.dataflow.synth import write_synthetic
from prdist.errors import DataError, InputError, ParameterError
from prdist.ranking import rank_order

PREFECT_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| (INFO|WARNING|ERROR) +\| ")
N = 600  # below the default plan's prefix g_l (3,492): every item is planned, so every row is read


@pytest.fixture(scope="module")
def cluster():
    """In-process workers with the plugin of ``prdist run``'s local cluster (prdist errors found
    inside tasks are reported once, by the driver)."""
    from distributed import Client, LocalCluster

    from prdist.dataflow.engine.cluster import QuietPrdistErrors

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                      scheduler_kwargs={"dashboard": False}) as local, Client(local) as client:
        client.register_plugin(QuietPrdistErrors())
        yield client


def snapshot(*roots) -> dict:
    """Every file under ``roots`` (paths; a missing root holds nothing) -> its bytes."""
    files = {}
    for root in roots:
        root = Path(root)
        if root.is_file():
            files[str(root)] = root.read_bytes()
        elif root.is_dir():
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    files[str(path)] = path.read_bytes()
    return files


def assert_refused(argv, *, says, watched=(), absent=()):
    """Run ``argv``; assert the exit-2 contract; return the message."""
    before = snapshot(*watched)
    code, out, err = cli(*argv)
    assert code == 2, f"exit {code}\nstdout: {out}\nstderr: {err}"
    lines = err.strip().splitlines()
    ours = [line for line in lines if line.startswith("prdist")]
    assert len(ours) == 1 and ours[0].startswith("prdist: error: "), err
    # Anything else is one-line records of Prefect's console log (the flow and task states).
    assert all(PREFECT_LOG_LINE.match(line) for line in lines if line not in ours), err
    assert "Traceback" not in err
    message = ours[0]
    for fragment in says:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in {message!r}"
    for secret in absent:
        assert secret not in err and secret not in out
    assert snapshot(*watched) == before, "bad input changed files"
    return message


def write_table(path: Path, table: pa.Table, **options) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **options)
    return str(path.parent)


def good_columns(n: int = N, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(n))[::-1]
    return {
        "key": np.arange(n, dtype=np.int64) * 3 + 1,
        "score": scores,
        "label": (rng.random(n) < scores).astype(np.int8),
    }


def resource_with(tmp_path: Path, **changes) -> str:
    """A small sorted resource whose columns are the good ones with ``changes`` (None drops one)."""
    columns = good_columns()
    for name, value in changes.items():
        if value is None:
            columns.pop(name)
        else:
            columns[name] = value
    return write_table(tmp_path / "resource" / "part-0.parquet", pa.table(columns), row_group_size=100)


def truncated(tmp_path: Path) -> str:
    root = Path(resource_with(tmp_path))
    path = root / "part-0.parquet"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return str(root)


def garbled_pages(tmp_path: Path) -> str:
    """Footer intact, the score column's pages of row group 2 overwritten: found when read."""
    root = Path(resource_with(tmp_path))
    path = root / "part-0.parquet"
    chunk = pq.ParquetFile(path).metadata.row_group(2).column(1)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + 8 : start + chunk.total_compressed_size - 8] = b"\xab" * (chunk.total_compressed_size - 16)
    path.write_bytes(bytes(data))
    return str(root)


def empty_resource(tmp_path: Path) -> str:
    columns = good_columns()
    return write_table(tmp_path / "resource" / "part-0.parquet", pa.table({k: v[:0] for k, v in columns.items()}))


def no_parquet(tmp_path: Path) -> str:
    root = tmp_path / "resource"
    root.mkdir()
    (root / "notes.txt").write_text("not a dataset")
    return str(root)


def with_value(name, index, value):
    def build(tmp_path):
        columns = good_columns()
        array = columns[name].astype(np.float64) if name == "score" else columns[name].copy()
        array[index] = value
        return resource_with(tmp_path, **{name: array})

    return build


@dataclass(frozen=True)
class Case:
    """One bad input: how to build it, the run options, what the message says, the API twin."""

    id: str
    build: Callable[[Path], str]
    says: tuple[str, ...]
    api: Callable[[str], object]
    error: type
    options: tuple[str, ...] = ()


def _open(**kwargs):
    return lambda url: open_resource(url, **kwargs)


def _extract_all(url):
    return extract_ranks(open_resource(url), np.arange(1, N + 1))


RESOURCE_CASES = [
    Case("missing-score-column", lambda p: resource_with(p, score=None),
         ("no score column 'score'", "name the right column"), _open(), DataError),
    Case("misnamed-key-column", lambda p: resource_with(p),
         ("no key column 'id'", "name the right column"), _open(key="id"), DataError, ("--key", "id")),
    Case("score-as-string", lambda p: resource_with(p, score=pa.array([f"{s:.3f}" for s in good_columns()["score"]])),
         ("score column 'score'", "type string", "cast the column to float64"), _open(), DataError),
    Case("non-numeric-score", lambda p: resource_with(p, score=pa.array(["high", "low"] * (N // 2)).dictionary_encode()),
         ("scores must be float", "cast the column to float64"), _open(), DataError),
    Case("key-as-float", lambda p: resource_with(p, key=good_columns()["key"].astype(np.float64) + 0.5),
         ("key column 'key'", "type double", "cast the column to int64 or string"), _open(), DataError),
    Case("null-score", lambda p: resource_with(p, score=pa.array([None if i == 7 else s for i, s in enumerate(good_columns()["score"])])),
         ("null values", "drop or repair"), _open(), DataError),
    Case("nan-score", with_value("score", 250, np.nan),
         ("non-finite score (nan)", "drop or repair"), _extract_all, DataError),
    Case("plus-inf-score", with_value("score", 0, np.inf),
         ("infinite score", "drop or repair"), _open(), DataError),
    Case("minus-inf-score", with_value("score", N - 1, -np.inf),
         ("infinite score", "drop or repair"), _open(), DataError),
    Case("duplicate-keys", with_value("key", 400, 1),
         ("the key 1 occurs more than once", "deduplicate"), _extract_all, DataError),
    Case("empty-resource", empty_resource, ("holds no rows", "non-empty dataset"), _open(), DataError),
    Case("no-parquet-files", no_parquet, ("holds no parquet files", "point the url at a parquet file"), _open(), InputError),
    Case("missing-path", lambda p: str(p / "no-such-resource"),
         ("no such file or directory", "check the path"), _open(), InputError),
    Case("truncated-parquet", truncated,
         ("not a readable parquet file", "rewrite it, or remove it"), _open(), DataError),
    Case("corrupted-pages", garbled_pages,
         ("row group 2", "not a readable parquet file", "rewrite it"), _extract_all, DataError),
    Case("oracle-labels-outside-0-1", with_value("label", 3, 2),
         ("label column 'label'", "outside 0/1", "map labels to 0 and 1"), _open(label="label"), DataError,
         ("--oracle-column", "label")),
    Case("oracle-column-missing", lambda p: resource_with(p),
         ("no label column 'truth'", "name the right column"), _open(label="truth"), DataError,
         ("--oracle-column", "truth")),
]


@pytest.mark.parametrize("case", RESOURCE_CASES, ids=lambda c: c.id)
def test_bad_resources_are_refused(tmp_path, case, cluster):
    url = case.build(tmp_path)
    out = tmp_path / "runs"
    store = tmp_path / "store"
    store.mkdir()  # an empty store
    argv = ["run", "--resource", url, "--out", str(out), "--labels", str(store), "--confidence", "none",
            "--scheduler", cluster.scheduler.address, *case.options]
    assert_refused(argv, says=case.says, watched=[tmp_path])
    assert not out.exists(), "a refused run created its output root"
    with pytest.raises(case.error) as info:
        case.api(url)
    assert case.says[0].lower() in str(info.value).lower()


@pytest.mark.parametrize(
    "options, says, api",
    [
        (["--eps", "0"], ["'--eps' parameter of prdist run", "a float in (0, 1]", "got 0.0"], lambda: EvaluationParams(eps=0.0)),
        (["--eps", "1.5"], ["'--eps' parameter", "a float in (0, 1]"], lambda: plan_paula(1000, eps=1.5)),
        (["--eps", "nan"], ["'--eps' parameter", "a float in (0, 1]"], lambda: plan_paula(1000, eps=float("nan"))),
        (["--window", "0"], ["'--window' parameter of prdist run", "an int >= 1", "got 0"], lambda: plan_paula(1000, window=0)),
        (["--r-tilde", "-3"], ["'--r-tilde' parameter", "an int >= 1"], lambda: EvaluationParams(r_tilde=-3)),
        (["--seed", "-1"], ["'--seed' parameter", "an int >= 0"], lambda: EvaluationParams(seed=-1)),
        (["--confidence", "1.5"], ["--confidence must be a number in (0, 1)", "or 'none'"], lambda: EvaluationParams(confidence=1.5)),
        (["--method", "magic"], ["invalid choice: 'magic'", "--help"], lambda: EvaluationParams(method="magic")),
        (["--method", "random", "--confidence", "none"], ["--method random gives intervals", "--confidence 0.95"],
         lambda: EvaluationParams(method="random")),
        (["--bands", "--confidence", "none"], ["--bands gives intervals", "--confidence 0.95"], lambda: EvaluationParams(bands=True)),
        (["--storage-options", '{"anon": tru'], ["--storage-options must be a json object", '{"anon": false}'],
         lambda: parse_storage_options('{"anon": tru')),
        (["--storage-options", "[1, 2]"], ["--storage-options must be a json object"], lambda: parse_storage_options("[1, 2]")),
    ],
    ids=["eps-zero", "eps-above-one", "eps-nan", "window-zero", "r-tilde-negative", "seed-negative",
         "confidence-above-one", "unknown-method", "random-without-level", "bands-without-level", "storage-options-not-json", "storage-options-not-object"],
)
def test_bad_run_options_are_refused_before_anything_runs(tmp_path, options, says, api):
    url = resource_with(tmp_path)
    out = tmp_path / "runs"
    assert_refused(["run", "--resource", url, "--out", str(out), *options], says=says, watched=[tmp_path])
    assert not out.exists()
    with pytest.raises(ParameterError):
        api()


@pytest.mark.parametrize(
    "argv, says, api",
    [
        (["budget", "--n", "1000", "--eps", "2"], ["'--eps' parameter of prdist budget", "(0, 1]"], lambda tmp: plan_paula(1000, eps=2.0)),
        (["budget", "--n", "1000", "--window", "0"], ["'--window' parameter of prdist budget"], lambda tmp: plan_paula(1000, window=0)),
        (["budget", "--n", "1000", "--delta", "1"], ["'--delta' parameter of prdist budget", "(0, 1)"],
         lambda tmp: random_sampling_budget(1000, alpha=0.1, p=0.5, delta=1.0)),
        (["budget", "--n", "0"], ["'--n' parameter of prdist budget"], lambda tmp: plan_paula(0)),
        (["synth", "--n", "100", "--seed", "1", "--prevalence", "1.5"], ["prevalence", "1.5"],
         lambda tmp: population.binormal(neg=(0, 1), pos=(1, 1), prevalence=1.5)),
        (["synth", "--n", "0", "--seed", "1"], ["'--n' parameter of prdist synth"],
         lambda tmp: write_synthetic(population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5), n=0, out=str(tmp / "synthetic"), seed=1)),
        (["synth", "--n", "100", "--seed", "1", "--model", "uniform", "--neg", "1,0"], ["'neg' parameter of uniform", "low < high"],
         lambda tmp: population.uniform(neg=(1, 0), pos=(0, 1), prevalence=0.5)),
        (["synth", "--n", "100", "--seed", "1", "--storage-options", "{"], ["--storage-options must be a json object"],
         lambda tmp: parse_storage_options("{")),
    ],
    ids=["budget-eps", "budget-window", "budget-delta", "budget-n", "synth-prevalence", "synth-n", "synth-model-options", "synth-storage-options"],
)
def test_bad_budget_and_synth_options_are_refused(tmp_path, argv, says, api):
    out = tmp_path / "synthetic"
    if argv[0] == "synth":
        argv = [*argv, "--out", str(out)]
    assert_refused(argv, says=says, watched=[tmp_path])
    assert not out.exists()
    with pytest.raises(ParameterError):
        api(tmp_path)
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# Output locations that cannot be written


def test_an_output_root_below_a_file_is_refused(tmp_path, cluster):
    url = resource_with(tmp_path)
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the output root should be")
    assert_refused(
        ["run", "--resource", url, "--out", str(blocker / "inner"), "--oracle-column", "label", "--scheduler", cluster.scheduler.address],
        says=["cannot write", "a component of the path is a file", "fix the path"],
        watched=[tmp_path],
    )
    with pytest.raises(InputError, match="a component of the path is a file"):
        RunDirectory(str(blocker / "inner"), "run-1").write_bytes("report.html", b"x")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_output_root_is_refused(tmp_path, cluster):
    url = resource_with(tmp_path)
    out = tmp_path / "runs"
    out.mkdir()
    out.chmod(0o555)
    try:
        assert_refused(
            ["run", "--resource", url, "--out", str(out), "--oracle-column", "label", "--scheduler", cluster.scheduler.address],
            says=["permission denied", "fix the file permissions"],
            watched=[tmp_path],
        )
        with pytest.raises(InputError, match="permission denied"):
            write_bytes_exclusive(str(out / "x"), b"x")
    finally:
        out.chmod(0o755)


def _s3_listing(server, prefix: str) -> dict:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options)
    return {path: fs.cat_file(path) for path in sorted(fs.find(prefix.removeprefix("s3://")))}


def _s3_resource(server, url: str) -> str:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options)
    with fs.open(f"{url}/part-0.parquet", "wb") as fh:
        pq.write_table(pa.table(good_columns()), fh, row_group_size=100)
    return url


def test_a_read_only_s3_identity_cannot_write_runs(s3_server, s3_url, cluster):
    resource = _s3_resource(s3_server, f"{s3_url}/resource")
    before = _s3_listing(s3_server, s3_url)
    readonly = s3_server.readonly_storage_options
    assert_refused(
        ["run", "--resource", resource, "--out", f"{s3_url}/runs", "--oracle-column", "label",
         "--storage-options", json.dumps(readonly), "--scheduler", cluster.scheduler.address],
        says=["cannot write", "permission denied (AccessDenied)", "use credentials with that permission"],
        absent=[s3_server.readonly_secret, s3_server.secret],
    )
    assert _s3_listing(s3_server, s3_url) == before
    with pytest.raises(InputError, match="AccessDenied"):
        write_bytes_exclusive(f"{s3_url}/runs/x", b"x", storage_options=readonly)


def test_wrong_s3_credentials_are_refused_without_showing_them(s3_server, s3_url):
    resource = _s3_resource(s3_server, f"{s3_url}/resource")
    before = _s3_listing(s3_server, s3_url)
    wrong = {**s3_server.storage_options, "secret": "wrong-secret-4f1d"}
    assert_refused(
        ["run", "--resource", resource, "--out", f"{s3_url}/runs", "--storage-options", json.dumps(wrong)],
        # The first request is the output guard's listing (SignatureDoesNotMatch); SeaweedFS answers
        # a HEAD with a bare 403, as AWS does: either way the credentials are named, never shown.
        says=["cannot open", "credentials", "aws_access_key_id / aws_secret_access_key"],
        absent=["wrong-secret-4f1d", s3_server.secret],
    )
    assert _s3_listing(s3_server, s3_url) == before
    with pytest.raises(InputError, match="credentials"):
        open_resource(resource, storage_options=wrong)


@pytest.mark.parametrize("where", ["missing-bucket", "missing-prefix"])
def test_s3_urls_that_do_not_exist_are_refused(s3_server, s3_url, where):
    url = "s3://no-such-bucket-prdist/resource" if where == "missing-bucket" else f"{s3_url}/no-such-resource"
    says = ["bucket 'no-such-bucket-prdist' does not exist", "create the bucket or fix the url"] if where == "missing-bucket" else [
        "no such file or directory", "check the path or url"]
    assert_refused(
        ["run", "--resource", url, "--out", f"{s3_url}/runs", "--storage-options", json.dumps(s3_server.storage_options)],
        says=says, absent=[s3_server.secret],
    )
    assert _s3_listing(s3_server, s3_url) == {}
    with pytest.raises(InputError, match=says[0].split("'")[0].strip()):
        open_resource(url, storage_options=s3_server.storage_options)


# --------------------------------------------------------------------------------------------
# Label files


def _store_with_one_import(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    seed = tmp_path / "seed.csv"
    pd.DataFrame({"key": [1, 4], "label": [1, 0]}).to_csv(seed, index=False)
    import_labels(str(store), [str(seed)])
    return store


LABEL_CASES = [
    ("label-outside-0-1", "labels.csv", "key,label\n1,1\n4,2\n", ["labels.csv: row 2 has the verdict '2'", "a verdict is 1/0", "--positive/--negative/--skip"], InputError),
    ("label-unparseable", "labels.csv", "key,label\n1,maybe\n", ["row 1 has the verdict 'maybe'", "skip/unsure/cannot judge/ignore"], InputError),
    ("jsonl-not-json", "labels.jsonl", '{"key": 1, "label": 1}\n{"key": 4, "label":\n', ["labels.jsonl, line 2: not valid json", "fix or drop that line"], DataError),
    ("jsonl-not-objects", "labels.jsonl", "[1, 1]\n", ["record 1: a json object was expected, not an integer"], DataError),
    ("unknown-shape", "labels.txt", "1 1\n", ["lacks the column(s) ['key', 'label']", "or give --format for a tool's export"], DataError),
    ("parquet-not-parquet", "labels.parquet", "PAR1 key,label\n1,1\n", ["could not be read as parquet", "check its format"], DataError),
    ("missing-label-column", "labels.csv", "key,correct\n1,1\n", ["lacks the column(s) ['label']", "needs at least 'key' and 'label'"], DataError),
    ("missing-key", "labels.csv", "key,label\n,1\n", ["1 row(s) without a key"], DataError),
    ("conflict-in-one-import", "labels.csv", "key,label\n9,1\n9,0\n", ["different verdicts from one annotator", "resolve the disagreement"], DataError),
]


@pytest.mark.parametrize("name, filename, content, says, error", LABEL_CASES, ids=[c[0] for c in LABEL_CASES])
def test_bad_label_files_leave_the_store_untouched(tmp_path, name, filename, content, says, error):
    store = _store_with_one_import(tmp_path)
    good = tmp_path / "good.csv"
    pd.DataFrame({"key": [10], "label": [1]}).to_csv(good, index=False)
    bad = tmp_path / filename
    bad.write_text(content)
    # The good file comes first: nothing of it may be written either.
    assert_refused(["labels", "import", "--store", str(store), str(good), str(bad)], says=says, watched=[tmp_path])
    before = snapshot(store)
    with pytest.raises(error):
        import_labels(str(store), [str(good), str(bad)])
    assert snapshot(store) == before and len(before) == 1


def test_labels_for_keys_outside_the_named_resource_are_refused(tmp_path):
    url = resource_with(tmp_path)  # keys 1, 4, 7, ...
    store = _store_with_one_import(tmp_path)
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"key": [1, 4, 5, 8], "label": [1, 0, 1, 1]}).to_csv(labels, index=False)
    assert_refused(["labels", "import", "--store", str(store), str(labels), "--resource", url],
                   says=["2 key(s) that", "does not hold, e.g. '5'", "or import without --resource"], watched=[tmp_path])
    with pytest.raises(DataError, match="does not hold"):
        import_labels(str(store), [str(labels)], resource=url)
    # Without --resource the same file is welcome: one store serves many resources.
    held = tmp_path / "held.csv"
    pd.DataFrame({"key": [1, 4], "label": [1, 0]}).to_csv(held, index=False)
    assert cli("labels", "import", "--store", str(store), str(held), "--resource", url)[0] == 0
    assert cli("labels", "import", "--store", str(store), str(labels))[0] == 0
    assert len(list(store.glob("*.parquet"))) == 3


def test_a_missing_label_file_and_a_non_run_are_refused(tmp_path):
    store = _store_with_one_import(tmp_path)
    assert_refused(["labels", "import", "--store", str(store), str(tmp_path / "nope.csv")],
                   says=["does not exist", "check the path"], watched=[tmp_path])
    assert_refused(["labels", "import", "--store", str(store), str(tmp_path / "nope.csv"), "--storage-options", "{"],
                   says=["--storage-options must be a json object"], watched=[tmp_path])
    not_a_run = tmp_path / "not-a-run"
    not_a_run.mkdir()
    assert_refused(["labels", "export", "--run", str(not_a_run), "--out", str(tmp_path / "task.csv")],
                   says=["is not a committed run directory", "name a directory printed by 'prdist run'"], watched=[tmp_path])
    assert not (tmp_path / "task.csv").exists()
    with pytest.raises(InputError, match="does not exist"):
        import_labels(str(store), [str(tmp_path / "nope.csv")])
    with pytest.raises(InputError, match="not a committed run directory"):
        write_annotation_file(str(not_a_run), str(tmp_path / "task.csv"))


def test_debug_shows_the_traceback(tmp_path):
    code, _, err = cli("--debug", "run", "--resource", str(tmp_path / "missing"), "--out", str(tmp_path / "runs"))
    assert code == 2
    assert "Traceback (most recent call last)" in err and "InputError" in err
    assert err.strip().splitlines()[-1].startswith("prdist: error: ")


@pytest.mark.slow
@pytest.mark.parametrize("runner", [(), ("--prefect",)], ids=["in-process", "prefect"])
@pytest.mark.parametrize("case", [c for c in RESOURCE_CASES if c.id in ("missing-score-column", "nan-score")], ids=lambda c: c.id)
def test_the_installed_command_prints_one_line_and_no_traceback(tmp_path, case, runner):
    """The real process, in-process and as a flow run on Prefect's temporary server (whose console
    log would carry a failed task's traceback): one line and no traceback, whether the input fails
    on opening or inside a task (a NaN score is found by the extraction)."""
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_HOME": str(tmp_path / "prefect-home")}
    url = case.build(tmp_path)
    out = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "prdist", "run", *runner, "--resource", url, "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("prdist")]
    assert len(errors) == 1 and case.says[0] in errors[0], done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# What is not an error, and what changes under a run


def test_a_resource_smaller_than_the_prefix_is_labeled_exhaustively_with_exact_bounds(tmp_path, cluster):
    columns = good_columns(n=1000, seed=4)
    url = write_table(tmp_path / "small" / "part-0.parquet", pa.table(columns), row_group_size=128)
    code, out, err = cli("run", "--resource", url, "--out", str(tmp_path / "runs"), "--oracle-column", "label",
                         "--confidence", "none", "--scheduler", cluster.scheduler.address)
    assert code == 0, err
    run = Path(out.strip().splitlines()[-1])
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["annotations"] == 1000 and manifest["counts"]["unknown"] == 0
    bounds = pd.read_parquet(run / "bounds.parquet")
    exact = precision_function(columns["label"][rank_order(columns["score"], columns["key"])].astype(float))
    ranks = bounds["rank"].to_numpy()
    assert ranks.max() == 1000
    np.testing.assert_allclose(bounds["precision_lower"], exact[ranks - 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(bounds["precision_upper"], exact[ranks - 1], rtol=0, atol=1e-12)


def test_store_labels_of_other_resources_are_ignored(tmp_path, cluster):
    url = resource_with(tmp_path)
    columns = good_columns()
    labels = tmp_path / "labels.csv"
    # One store serves many resources: it also labels keys this resource does not hold.
    pd.DataFrame({"key": np.concatenate([columns["key"], [2, 5, 8]]),
                  "label": np.concatenate([columns["label"], [1, 1, 0]])}).to_csv(labels, index=False)
    store = tmp_path / "store"
    assert cli("labels", "import", "--store", str(store), str(labels))[0] == 0
    code, out, err = cli("run", "--resource", url, "--out", str(tmp_path / "runs"), "--labels", str(store),
                         "--scheduler", cluster.scheduler.address)
    assert code == 0, err
    manifest = json.loads((Path(out.strip().splitlines()[-1]) / "manifest.json").read_text())
    assert manifest["counts"]["from_store"] == N and manifest["counts"]["unknown"] == 0


def _unsorted_inside_row_groups(columns: dict, group: int, seed: int) -> dict:
    """The same items, row groups in descending order of their scores, rows shuffled inside each."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([start + rng.permutation(min(group, N - start)) for start in range(0, N, group)])
    return {name: values[order] for name, values in columns.items()}


def test_a_sorted_claim_that_holds_only_between_row_groups_gives_the_same_run(tmp_path, cluster):
    columns = good_columns()
    sorted_url = write_table(tmp_path / "sorted" / "part-0.parquet", pa.table(columns), row_group_size=100)
    mixed_url = write_table(tmp_path / "mixed" / "part-0.parquet", pa.table(_unsorted_inside_row_groups(columns, 100, 5)), row_group_size=100)
    mixed = open_resource(mixed_url)
    # The statistics claim the order; reading every score shows it is false inside the row groups.
    assert mixed.is_sorted_claim()
    check = verify_order(mixed, full=True, client=cluster)
    assert not check.sorted and "the score rises" in check.detail
    # The run does not need more than the claim: every block of row groups it reads is ordered
    # by rank before ranks are read off, so the result is the one of the truly sorted resource.
    runs = []
    for url in (sorted_url, mixed_url):
        code, out, err = cli("run", "--resource", url, "--out", str(tmp_path / "runs"), "--oracle-column", "label",
                             "--scheduler", cluster.scheduler.address)
        assert code == 0, err
        runs.append(Path(out.strip().splitlines()[-1]))
    assert runs[0] != runs[1]  # different files, different fingerprints
    for name in ("plan.parquet", "bounds.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(runs[0] / name), pd.read_parquet(runs[1] / name))


def test_a_changed_resource_is_a_new_run(tmp_path, cluster):
    url = resource_with(tmp_path)
    args = ["run", "--resource", url, "--out", str(tmp_path / "runs"), "--oracle-column", "label",
            "--scheduler", cluster.scheduler.address]
    code, out, err = cli(*args)
    assert code == 0, err
    first = Path(out.strip().splitlines()[-1])
    kept = snapshot(first)
    columns = good_columns(seed=1)  # the next release: same keys, other scores
    write_table(Path(url) / "part-0.parquet", pa.table(columns), row_group_size=100)
    code, out, err = cli(*args)
    assert code == 0, err
    second = Path(out.strip().splitlines()[-1])
    assert second != first and snapshot(first) == kept
    fingerprints = [json.loads((run / "manifest.json").read_text())["input"]["fingerprint"] for run in (first, second)]
    assert fingerprints[0] != fingerprints[1]
    assert len(list((tmp_path / "runs" / "_staging").glob("*.parquet"))) == 2


@pytest.mark.parametrize("change", ["same-shape", "fewer-row-groups"])
def test_a_resource_rewritten_during_a_run_is_detected(tmp_path, cluster, monkeypatch, change):
    import prdist.dataflow.run.steps as run_module

    url = resource_with(tmp_path)
    original = run_module.extract

    def rewrite_then_extract(resource, ranks, **kwargs):
        # Another writer replaces the release between opening and extraction.
        columns = good_columns(seed=9)
        size = 100 if change == "same-shape" else 300
        pq.write_table(pa.table(columns), Path(url) / "part-0.parquet", row_group_size=size)
        return original(resource, ranks, **kwargs)

    monkeypatch.setattr(run_module, "extract", rewrite_then_extract)
    out = tmp_path / "runs"
    assert_refused(
        ["run", "--resource", url, "--out", str(out), "--oracle-column", "label", "--scheduler", cluster.scheduler.address],
        says=["changed", "data that stays put"],
    )
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]
