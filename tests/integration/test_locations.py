"""Storage resolved once: a run's resource, label store and runs root are each resolved at the edge
(:func:`prdist.dataflow.io.storage.run_locations`) and passed as locations, which carry their own
credentials and never show them."""

from __future__ import annotations

import collections
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows._evaluate_release import evaluate_release
from prdist.dataflow.io import storage
from prdist.dataflow.io.storage import Location, given_url, join_url, resolve, run_locations
from prdist.errors import ParameterError

SMALL = dict(eps=0.2, window=10)
SECRET = "not-a-real-secret-4f1c"


def _release(path, n: int = 3_000) -> str:
    path.mkdir(parents=True)
    pq.write_table(pa.table({"key": [f"k-{i}" for i in range(n)], "score": [1.0 - i / n for i in range(n)]}), path / "part-0.parquet")
    return str(path)


@pytest.fixture
def resolutions(monkeypatch):
    """Count the filesystems :func:`prdist.dataflow.io.storage.resolve` builds, by URL as given."""
    built = collections.Counter()
    bounded = storage._with_network_bounds

    def counting(url, options):
        built[url] += 1
        return bounded(url, options)

    monkeypatch.setattr(storage, "_with_network_bounds", counting)
    return built


def test_an_evaluation_resolves_its_runs_root_and_label_store_once_and_nothing_below_them(tmp_path, resolutions):
    resource, runs, store = _release(tmp_path / "r1"), str(tmp_path / "runs"), str(tmp_path / "labels")
    outcome = evaluate_release(resource, out=runs, labels=store, **SMALL)  # awaits labels: writes the annotation task too
    assert outcome.awaiting
    # Every file below them is a child location. The resource is opened once, and its footers are
    # read again once (at its file:// URL), to see that it did not change while it was read.
    assert dict(resolutions) == {resource: 1, runs: 1, store: 1, f"file://{resource}": 1}
    resolutions.clear()
    again = evaluate_release(resource, out=runs, labels=store, **SMALL)  # the committed run, found
    assert again.url == outcome.url and dict(resolutions) == {resource: 1, runs: 1, store: 1}


def test_a_location_shows_no_credentials_and_keeps_the_url_as_written():
    options = {"key": "AKIAEXAMPLE", "secret": SECRET, "endpoint_url": "http://127.0.0.1:9"}
    runs = resolve("s3://bucket/runs", storage_options=options)
    task = join_url(runs, "run-1", "annotation_task.csv")
    assert isinstance(task, Location) and task.storage_options == options and task.fs is runs.fs
    assert (task.url, task.given, task.path) == ("s3://bucket/runs/run-1/annotation_task.csv",) * 2 + ("bucket/runs/run-1/annotation_task.csv",)
    for shown in (repr(runs), repr(task), str(task), task.url, given_url(task)):
        assert SECRET not in shown
    local = resolve("runs").child("run-1")
    assert local.given == "runs/run-1" and local.url.startswith("file:///") and local.url.endswith("/runs/run-1")


def test_a_location_passes_the_gate_once_and_refuses_other_credentials():
    options = {"anon": True}
    store = resolve("s3://bucket/labels", storage_options=options)
    assert resolve(store) is store and resolve(store, storage_options={"anon": True}) is store
    with pytest.raises(ParameterError, match="resolved with its own storage options"):
        resolve(store, storage_options={"key": "other", "secret": SECRET})


def test_run_locations_give_the_resource_store_and_runs_root_each_the_options_named_for_them():
    text = json.dumps({"anon": True})  # as --storage-options gives them: parsed once for the three
    where = run_locations("s3://kb/r1", "s3://kb/runs", "s3://kb/labels", storage_options=text)
    assert [w.path for w in (where.resource, where.out, where.labels)] == ["kb/r1", "kb/runs", "kb/labels"]
    assert all(w.storage_options == {"anon": True} for w in (where.resource, where.out, where.labels))
    assert run_locations("s3://kb/r1", "s3://kb/runs", storage_options=text).labels is None


def test_a_run_on_s3_uses_the_storage_options_for_its_runs_root_and_label_store(tmp_path, s3_server, s3_url, monkeypatch):
    # No AWS variables: only the storage options hold the credentials, for the store and the runs root
    # on S3 as for the resource on local disk.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    resource, runs, store = _release(tmp_path / "r1"), f"{s3_url}/runs", f"{s3_url}/labels"
    options = s3_server.storage_options
    outcome = evaluate_release(resource, out=runs, labels=store, storage_options=options, **SMALL)
    assert outcome.awaiting and outcome.url.startswith(f"{runs}/")
    fs, path = storage.filesystem(join_url(outcome.url, "manifest.json"), options)
    manifest = json.loads(fs.cat_file(path))
    assert manifest["annotation_task"] == f"{outcome.url}/annotation_task.csv"  # the URL as given, as before
    assert evaluate_release(resource, out=runs, labels=store, storage_options=options, **SMALL).url == outcome.url
