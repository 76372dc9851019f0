"""Security: credentials stay secret, input is never executed, outputs stay confined and escaped.

- A run on S3 with a recognisable secret in ``--storage-options`` is searched for it everywhere it
  could land: stdout, stderr (with Prefect's console log), every log record of the process,
  Prefect's records on its server (flow run parameters, logs, artifacts, task runs) and every
  object the run wrote (manifest, report, plan and bounds, annotation task, staged items).
- The source of prdist and the flows is scanned (by syntax tree) for calls that would execute or
  unpickle input; every Prefect task keeps its result in memory (no cache, no persisted result).
- Artifact names, run ids and system names cannot leave their directory.
- The report of a resource whose keys, extra column and URL hold HTML escapes all of it.
"""

from __future__ import annotations

import ast
import asyncio
import html
import importlib
import json
import logging
import pkgutil
import posixpath
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flows.evaluate_release  # noqa: F401 (Prefect configures logging on import: before handlers are added)
from tests.support.cli_run import cli
from prdist.dataflow.io.artifacts import RunDirectory, run_id
from prdist.cli import parse_system
from prdist.errors import InputError, ParameterError

pytestmark = pytest.mark.usefixtures("prefect_harness")

from tests.support.paths import ROOT  # noqa: E402


class _Everything(logging.Handler):
    """Every log record of the process, formatted with its traceback."""

    def __init__(self):
        super().__init__(level=0)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))


async def _prefect_records(since: datetime, resource: str) -> dict:
    """The flow runs of ``resource`` started after ``since``, with their logs, artifacts and task runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterStartTime,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.logging.handlers import APILogHandler

    await APILogHandler.aflush()
    async with get_client() as client:
        runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)), limit=200)
        runs = [run for run in runs if run.parameters.get("resource") == resource]
        ids = [run.id for run in runs]
        logs = await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)), limit=200, offset=0)
        artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids)), limit=200, offset=0)
        task_runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=200, offset=0)
    return {"runs": runs, "logs": logs, "artifacts": artifacts, "task_runs": task_runs}


def test_credentials_never_leave_a_run_on_s3(s3_server, s3_url, dask_client):
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_server.storage_options)
    rng = np.random.default_rng(2)
    n = 5_000
    scores = np.sort(rng.random(n))[::-1]
    keys = np.arange(n, dtype=np.int64)
    with fs.open(f"{s3_url}/resource/part-0.parquet", "wb") as fh:
        pq.write_table(pa.table({"key": keys, "score": scores, "text": [f"item {k}" for k in keys]}), fh, row_group_size=1_000)
    # Half of the top labeled: the run writes bounds, a report, and an annotation task for the rest.
    labels = pd.DataFrame({"key": keys[::2][:400], "label": (scores[::2][:400] > 0.5).astype(int)})
    with fs.open(f"{s3_url}/labels.csv", "wb") as fh:
        fh.write(labels.to_csv(index=False).encode())

    secrets = [s3_server.secret, s3_server.key]
    options = json.dumps(s3_server.storage_options)
    code, out, err = cli("labels", "import", "--store", f"{s3_url}/store", f"{s3_url}/labels.csv", "--storage-options", options)
    assert code == 0, err

    capture = _Everything()
    logging.getLogger().addHandler(capture)
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    try:
        code, run_out, run_err = cli("run", "--resource", f"{s3_url}/resource", "--out", f"{s3_url}/runs",
                                     "--labels", f"{s3_url}/store", "--eps", "0.1", "--window", "20",
                                     "--storage-options", options, "--scheduler", dask_client.scheduler.address)
    finally:
        logging.getLogger().removeHandler(capture)
    assert code == 3, run_err
    records = asyncio.run(_prefect_records(since, f"{s3_url}/resource"))

    # The run did write what is searched below.
    written = {path: fs.cat_file(path) for path in fs.find(f"{s3_url}/runs".removeprefix("s3://"))}
    names = {posixpath.basename(path) for path in written}
    assert {"manifest.json", "report.html", "plan.parquet", "bounds.parquet", "annotation_task.csv", "annotation_task.jsonl"} <= names
    assert any("/_staging/" in path for path in written)
    assert len(records["runs"]) == 1 and records["logs"] and records["artifacts"] and records["task_runs"]
    assert records["runs"][0].parameters["storage_options"] == "**********"  # sealed, not merely absent

    places = {
        "stdout": out + run_out,
        "stderr": err + run_err,
        "log records": "\n".join(capture.lines),
        "flow run": records["runs"][0].model_dump_json(),
        "Prefect logs": "\n".join(log.model_dump_json() for log in records["logs"]),
        "Prefect artifacts": "\n".join(artifact.model_dump_json() for artifact in records["artifacts"]),
        "task runs": "\n".join(task.model_dump_json() for task in records["task_runs"]),
    }
    places.update({path: data.decode("latin-1") for path, data in written.items()})
    assert len(capture.lines) > 10 and "run directory" in places["log records"]
    for place, text in places.items():
        for secret in secrets:
            assert secret not in text, f"a credential appears in {place}"


# --------------------------------------------------------------------------------------------
# Input is never executed


def _python_files():
    for package in ("prdist", "flows"):
        yield from sorted((ROOT / package).rglob("*.py"))


def _dangerous_calls(tree: ast.AST) -> list[str]:
    """Calls that execute code or unpickle data: eval/exec/compile, pickle-like loads, unsafe YAML."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        keywords = {kw.arg: kw.value for kw in node.keywords}
        if isinstance(func, ast.Name) and name in ("eval", "exec", "compile", "__import__"):
            found.append(name)
        elif owner in ("pickle", "cPickle", "cloudpickle", "dill", "marshal", "shelve", "joblib") and name in ("load", "loads", "open"):
            found.append(f"{owner}.{name}")
        elif name in ("read_pickle", "from_pickle"):
            found.append(name)
        elif owner == "yaml" and name in ("load", "load_all", "unsafe_load", "full_load"):
            loader = keywords.get("Loader")
            if name != "load" or not (isinstance(loader, ast.Attribute) and loader.attr in ("SafeLoader", "CSafeLoader")):
                found.append(f"yaml.{name}")
        elif owner in ("np", "numpy") and name == "load":
            allow = keywords.get("allow_pickle")
            if isinstance(allow, ast.Constant) and allow.value is True:
                found.append("np.load(allow_pickle=True)")
    return found


def test_no_source_file_executes_or_unpickles_input():
    files = list(_python_files())
    assert len(files) > 20
    offenders = {}
    for path in files:
        calls = _dangerous_calls(ast.parse(path.read_text(), filename=str(path)))
        if calls:
            offenders[str(path.relative_to(ROOT))] = calls
    assert offenders == {}


def test_the_scan_finds_what_it_looks_for():
    source = (
        "import pickle, yaml, numpy as np\n"
        "pickle.loads(b)\neval(t)\nexec(t)\nyaml.load(t)\nyaml.load(t, Loader=yaml.SafeLoader)\n"
        "np.load(f, allow_pickle=True)\nnp.load(f)\npd.read_pickle(f)\n"
    )
    assert _dangerous_calls(ast.parse(source)) == ["pickle.loads", "eval", "exec", "yaml.load", "np.load(allow_pickle=True)", "read_pickle"]


def test_every_prefect_task_keeps_its_result_in_memory():
    import flows
    from prefect import Task
    from prefect.cache_policies import NO_CACHE

    from flows._policies import Step, transient

    tasks = {}
    for info in pkgutil.iter_modules(flows.__path__):
        module = importlib.import_module(f"flows.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, Step) and obj.fn.__module__ == module.__name__:
                obj = obj.task  # the Prefect task a flow run runs
            if isinstance(obj, Task) and obj.fn.__module__ == module.__name__:
                tasks[f"{info.name}.{name}"] = obj
    assert len(tasks) >= 10 and "_evaluate_release.extract_task" in tasks
    for name, task in tasks.items():
        # Results hold opened resources (filesystems with credentials) and data read from input.
        assert task.cache_policy is NO_CACHE, name
        assert task.persist_result is False, name
        if task.retries:
            assert task.retry_condition_fn is transient, name


# --------------------------------------------------------------------------------------------
# Confinement


@pytest.mark.parametrize("name", ["../escape", "..", ".", "", "/etc/passwd", "a/b", "a/../../b", "..\\x", "x\\..\\y",
                                  ".hidden", "%2e%2e", "name\x00", "~user", "C:report", " report.html", "a..b"])
def test_artifact_names_cannot_leave_the_run_directory(name):
    with pytest.raises(InputError, match="not a plain file name"):
        RunDirectory("s3://bucket/runs", "run-1").path_of(name)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_every_accepted_artifact_name_is_one_component_inside_the_run(name):
    run = RunDirectory("s3://bucket/runs", "0123abcd")
    try:
        path = run.path_of(name)
    except InputError:
        return
    assert path == f"s3://bucket/runs/0123abcd/{name}"
    assert "/" not in name and "\\" not in name and ".." not in name and not name.startswith(".")
    assert posixpath.normpath(path.removeprefix("s3://")) == f"bucket/runs/0123abcd/{name}"


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda children: st.lists(children) | st.dictionaries(st.text(), children)))
def test_run_ids_are_hex_whatever_they_are_made_of(parts):
    assert re.fullmatch(r"[0-9a-f]{20}", run_id(parts, "../../etc"))


@pytest.mark.parametrize("text", ["../evil=/tmp/x", "a/b=/tmp/x", ".hidden=/tmp/x", "<script>=/tmp/x"])
def test_system_names_cannot_name_paths(text):
    with pytest.raises(ParameterError, match="must start with a letter or digit"):
        parse_system(text)


def test_a_run_writes_only_below_its_run_directory_and_staging(tmp_path, dask_client):
    root = tmp_path / "resource"
    root.mkdir()
    n = 3_000
    pq.write_table(pa.table({"key": np.arange(n), "score": np.linspace(1, 0, n), "label": np.arange(n) % 2}), root / "part-0.parquet")
    out = tmp_path / "runs"
    code, stdout, err = cli("run", "--resource", str(root), "--out", str(out), "--oracle-column", "label",
                            "--eps", "0.1", "--window", "20", "--scheduler", dask_client.scheduler.address)
    assert code == 0, err
    run = Path(stdout.strip().splitlines()[-1])
    assert run.parent == out and re.fullmatch(r"[0-9a-f]{20}", run.name)
    everything = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    # Besides the run and its staging, only the events ledger (flows/events.py): one record per
    # event sent, when a Prefect API takes events.
    ledger = [p for p in everything if p.parent == out / "_events" and re.fullmatch(r"[0-9a-f-]{36}\.json", p.name)]
    outside = [p for p in everything if not (p.is_relative_to(run) or p.is_relative_to(out / "_staging") or p.is_relative_to(root))]
    assert sorted(set(outside) - set(ledger)) == []
    assert all(re.fullmatch(r"[0-9a-f]{20}-[0-9a-f]{20}\.parquet", p.name) for p in (out / "_staging").iterdir())


# --------------------------------------------------------------------------------------------
# The report escapes what comes from the resource


HOSTILE = ['<script>alert("key")</script>', '"><img src=x onerror=alert(1)>', "<b onmouseover=alert(2)>bold</b>", "' onload='alert(3)"]


def test_the_report_escapes_every_string_from_the_resource(tmp_path, dask_client):
    # The directory name is hostile too: the report shows the resource URL.
    root = tmp_path / '"><img src=x onerror=alert(9)>'
    root.mkdir()
    n = 2_000
    keys = [*HOSTILE, *(f"item-{i}" for i in range(n - len(HOSTILE)))]
    scores = np.linspace(1.0, 0.0, n)  # the hostile keys are the top-ranked items
    text = [HOSTILE[i % len(HOSTILE)] for i in range(n)]
    pq.write_table(pa.table({"key": keys, "score": scores, "text": text}), root / "part-0.parquet")
    # No labels yet: the report lists the first items awaiting labels, the hostile keys first.
    code, out, err = cli("run", "--resource", str(root), "--out", str(tmp_path / "runs"),
                         "--eps", "0.1", "--window", "20", "--scheduler", dask_client.scheduler.address)
    assert code == 3, err
    page = (Path(out.strip().splitlines()[-1]) / "report.html").read_text()
    for raw in [*HOSTILE, '"><img src=x onerror=alert(9)>']:
        assert raw not in page
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert not re.search(r"<[^>]*\son\w+\s*=", page), "an event-handler attribute in a tag"
    # Escaped, not dropped: the top-ranked keys and the URL are shown to the reader.
    assert all(html.escape(raw, quote=True) in page for raw in HOSTILE)
    assert html.escape('"><img src=x onerror=alert(9)>', quote=True) in page
