"""Run directories: confined names, create-only commit, reruns find the committed run."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from prdist.dataflow.io.artifacts import RunDirectory, run_id
from prdist.errors import InputError


def test_run_id_is_stable_and_sensitive():
    assert run_id({"eps": 0.03}, "fp") == run_id({"eps": 0.03}, "fp")
    assert run_id({"eps": 0.03}, "fp") != run_id({"eps": 0.05}, "fp")


def test_commit_is_create_only(tmp_path):
    run = RunDirectory(str(tmp_path), "abc")
    run.write_table("bounds.parquet", pd.DataFrame({"rank": [1]}))
    assert not run.is_committed()
    assert run.commit({"status": "complete"}) is True
    assert run.commit({"status": "other"}) is False
    assert run.read_manifest() == {"status": "complete"}


def test_racing_commits_leave_one_manifest(tmp_path):
    run = RunDirectory(str(tmp_path), "race")
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(run.commit({"writer": i}))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert run.read_manifest()["writer"] in range(8)


@pytest.mark.parametrize("name", ["../escape.json", "a/b.parquet", "", ".hidden", "x/../../y"])
def test_artifact_names_stay_inside_the_run(tmp_path, name):
    with pytest.raises(InputError, match="plain file name"):
        RunDirectory(str(tmp_path), "abc").write_bytes(name, b"x")


def test_commit_on_s3(s3_server, s3_url):
    run = RunDirectory(s3_url, "r1", s3_server.storage_options)
    run.write_table("plan.parquet", pd.DataFrame({"rank": [1, 2]}))
    assert run.commit({"status": "complete"}) and not run.commit({"status": "again"})
    assert run.read_table("plan.parquet")["rank"].tolist() == [1, 2]
