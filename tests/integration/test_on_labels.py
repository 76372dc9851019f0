"""Labels re-evaluate what they touch, and a release published as its series' current one.

The flow body runs in-process here (no Prefect); tests/integration/test_deploy_server.py runs the on-labels
deployment on a real server.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows._awaiting import awaiting_releases, is_touched
from flows._evaluate_release import evaluate_release
from flows.release import current_release, write_current
from prdist.cli import main
from prdist.errors import DataError, InputError

SMALL = dict(eps=0.2, window=10)


def _release(path, prefix: str, n: int = 3_000) -> str:
    """A sorted release whose keys carry ``prefix``: releases share no key."""
    path.mkdir(parents=True)
    pq.write_table(pa.table({"key": [f"{prefix}-{i}" for i in range(n)], "score": [1.0 - i / n for i in range(n)]}),
                   path / "part-0.parquet")  # fmt: skip
    return str(path)


def _manifest(url: str) -> dict:
    return json.loads(open(f"{url.removeprefix('file://')}/manifest.json").read())


@pytest.fixture
def two_awaiting(tmp_path):
    releases, runs, store = tmp_path / "releases", str(tmp_path / "runs"), str(tmp_path / "labels")
    r1, r2 = _release(releases / "r1", "a"), _release(releases / "r2", "b")
    first, second = (evaluate_release(r, out=runs, labels=store, **SMALL) for r in (r1, r2))
    assert first.awaiting and second.awaiting
    return r1, r2, runs, store, first.url, second.url


def _label(store: str, run_url: str, count: int, tmp_path) -> None:
    task = pd.read_csv(f"{run_url.removeprefix('file://')}/annotation_task.csv")
    done = tmp_path / "done.csv"
    pd.DataFrame({"key": task["key"][:count], "label": 1}).to_csv(done, index=False)
    assert main(["labels", "import", "--store", store, str(done)]) == 0


def test_an_import_touches_the_releases_whose_plans_it_labels(two_awaiting, tmp_path):
    r1, r2, runs, store, run1, run2 = two_awaiting
    waiting = awaiting_releases(runs)
    assert sorted(w.resource.rsplit("/", 1)[-1] for w in waiting) == ["r1", "r2"]
    assert not any(is_touched(w, out=runs, labels=store) for w in waiting)  # nothing imported yet

    _label(store, run1, 5, tmp_path)  # verdicts on r1's planned keys only
    touched = {w.resource.rsplit("/", 1)[-1]: is_touched(w, out=runs, labels=store) for w in awaiting_releases(runs)}
    assert touched == {"r1": True, "r2": False}

    # The on-labels run (awaiting=True) of the tracked release r2 evaluates r1 again too.
    tracked = evaluate_release(r2, out=runs, labels=store, awaiting=True, **SMALL)
    assert tracked.url == run2  # r2: its committed run, nothing new
    manifests = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/manifest.json")]
    again = [m for m in manifests if m["input"]["url"].endswith("/r1") and m["counts"]["labeled"] == 5]
    assert len(again) == 1 and again[0]["run_id"] != _manifest(run1)["run_id"]
    # Now r1's latest run holds every verdict the store has: nothing is touched any more.
    assert not any(is_touched(w, out=runs, labels=store) for w in awaiting_releases(runs))


def test_without_the_option_only_the_named_release_is_evaluated(two_awaiting, tmp_path):
    r1, r2, runs, store, run1, run2 = two_awaiting
    _label(store, run1, 5, tmp_path)
    evaluate_release(r2, out=runs, labels=store, **SMALL)
    assert len(list((tmp_path / "runs").glob("*/manifest.json"))) == 2


def test_runs_with_parameters_a_flow_cannot_take_are_left_alone(two_awaiting, tmp_path):
    r1, r2, runs, store, run1, run2 = two_awaiting
    path = f"{run1.removeprefix('file://')}/manifest.json"
    manifest = _manifest(run1)
    manifest["params"]["replicates"] = 17  # made through the Python API
    open(path, "w").write(json.dumps(manifest))
    assert [w.resource.rsplit("/", 1)[-1] for w in awaiting_releases(runs)] == ["r2"]
    # A comparison awaiting labels is compare-systems' to make again.
    (tmp_path / "runs" / "cmp").mkdir()
    (tmp_path / "runs" / "cmp" / "manifest.json").write_text(json.dumps({"kind": "compare", "awaiting_labels": True, "params": {}}))
    assert [w.resource.rsplit("/", 1)[-1] for w in awaiting_releases(runs)] == ["r2"]
    assert awaiting_releases(str(runs) + "-none") == []


def test_a_release_published_as_current_is_what_a_pointer_evaluates(tmp_path):
    r1, r2 = _release(tmp_path / "releases" / "r1", "a"), _release(tmp_path / "releases" / "r2", "b")
    pointer = str(tmp_path / "releases" / "current.json")
    write_current(pointer, r1)
    assert current_release(pointer) == r1 and current_release(r2) == r2
    write_current(pointer, r2)  # replaced whole
    assert current_release(pointer) == r2
    outcome = evaluate_release(pointer, out=str(tmp_path / "runs"), **SMALL)
    assert _manifest(outcome.url)["input"]["url"].endswith("/releases/r2")

    with pytest.raises(InputError, match="must end in .json"):
        write_current(str(tmp_path / "current"), r1)
    with pytest.raises(InputError, match="relative path"):
        write_current(pointer, "releases/r1")
    (tmp_path / "bad.json").write_text('{"resource": "releases/r1"}')
    with pytest.raises(DataError, match="is not a release pointer"):
        current_release(str(tmp_path / "bad.json"))
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="prdist release --resource URL --current"):
        current_release(str(tmp_path / "bad.json"))


def test_the_release_command_publishes_the_current_release(tmp_path, capsys, monkeypatch):
    r1 = _release(tmp_path / "releases" / "r1", "a")
    pointer = tmp_path / "current.json"
    # A dry run prints the event and writes nothing.
    assert main(["release", "--resource", r1, "--current", str(pointer), "--dry-run"]) == 0
    assert not pointer.exists()
    # Without a server the announcement fails after the pointer is written, in one line, exit 2.
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    code = main(["release", "--resource", r1, "--current", str(pointer), "--api-url", "http://127.0.0.1:9/api"])
    assert code == 2 and "does not answer" in capsys.readouterr().err
    assert json.loads(pointer.read_text())["resource"] == r1
    assert main(["release", "--resource", r1, "--current", str(tmp_path / "current")]) == 2
