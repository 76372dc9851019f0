"""Faults survived: a lost Dask worker, an S3 outage, a crash between artifact writes, concurrent runs.

Every fault is real: worker *processes* killed with SIGKILL, a SeaweedFS server stopped and
started again, a ``prdist run`` process killed between its writes, two processes evaluating the
same release at once. What is checked is what the contracts promise: a run either completes with
the artifacts an undisturbed run writes (manifest timings aside), or fails without a committed
manifest, and a rerun completes it; concurrent attempts leave one committed result; no label is
ever lost.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support import seaweed
from tests.support.paths import ROOT
from prdist.cli import main
from prdist.dataflow.labels.store import lookup_labels

ARTIFACTS = ("plan.parquet", "bounds.parquet", "report.html")


def cli(*argv):
    """Run ``prdist`` in-process; return (exit code, stdout, stderr) (see tests/integration/test_run_cli.py)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else ""


def write_resource(root: Path, *, n: int, files: int, seed: int, shuffled: bool) -> str:
    """``n`` items with a 0/1 ``label`` column in ``files`` Parquet files; sorted or shuffled."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=n)
    labels = (rng.random(n) < 1 / (1 + np.exp(-2 * scores))).astype(np.int8)
    keys = rng.permutation(n).astype(np.int64) * 11 + 7
    order = rng.permutation(n) if shuffled else np.argsort(-scores, kind="stable")
    root.mkdir(parents=True)
    for i, part in enumerate(np.array_split(order, files)):
        table = pa.table({"key": keys[part], "score": scores[part], "label": labels[part]})
        pq.write_table(table, root / f"part-{i}.parquet", row_group_size=1 << 16)
    return str(root)


def manifest_without_timings(run: Path) -> dict:
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("timings")
    return manifest


def assert_same_run(run: Path, reference: Path) -> None:
    """Same run id, same Parquet bytes, same manifest apart from its timings."""
    assert run.name == reference.name
    for name in ("plan.parquet", "bounds.parquet"):
        assert (run / name).read_bytes() == (reference / name).read_bytes(), name
    assert manifest_without_timings(run) == manifest_without_timings(reference)


def visible_files(root: Path) -> list[str]:
    """Files a reader sees: hidden names (temporary files of atomic writes) excluded."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def small_release(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    return write_resource(root / "resource", n=40_000, files=2, seed=11, shuffled=False)


# --------------------------------------------------------------------------------------------
# (c) A crash between artifact writes


@pytest.mark.parametrize("crash_at", ["bounds.parquet", "report.html", "manifest.json"])
def test_a_crash_between_artifact_writes_leaves_no_run_and_the_rerun_completes_it(tmp_path, small_release, dask_client, monkeypatch, crash_at):
    import flows._evaluate_release as flow_module
    from prdist.dataflow.io.artifacts import RunDirectory

    args = ["--resource", small_release, "--oracle-column", "label", "--eps", "0.1", "--window", "20",
            "--scheduler", dask_client.scheduler.address]
    code, out, err = cli("run", *args, "--out", str(tmp_path / "reference"))
    assert code == 0, err
    reference = Path(last_line(out))

    crashed = []

    def crash(*_args, **_kwargs):
        crashed.append(crash_at)
        raise OSError(f"simulated crash before writing {crash_at}")

    if crash_at == "manifest.json":
        monkeypatch.setattr(RunDirectory, "commit", crash)
    else:
        writer = "write_bytes" if crash_at.endswith(".html") else "write_table"
        original = getattr(RunDirectory, writer)
        monkeypatch.setattr(RunDirectory, writer, lambda self, name, *a, **k: crash() if name == crash_at else original(self, name, *a, **k))
    # A crash is not retried within the run here (the retry delays would only slow the test).
    monkeypatch.setattr(flow_module, "write_task", flow_module.write_task.with_options(retries=0))
    out_root = tmp_path / "runs"
    code, out, err = cli("run", *args, "--out", str(out_root))
    assert code == 1 and crashed, err
    assert "prdist: failed: OSError: simulated crash" in err
    run = out_root / reference.name
    assert run.is_dir() and not (run / "manifest.json").exists()  # artifacts maybe, a run no

    monkeypatch.undo()
    code, out, err = cli("run", *args, "--out", str(out_root))
    assert code == 0, err
    assert Path(last_line(out)) == run
    assert_same_run(run, reference)
    assert visible_files(run) == visible_files(reference)


@pytest.fixture
def tcp_cluster():
    """A scheduler on loopback TCP with in-process workers: subprocesses can use it as --scheduler."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                           dashboard_address=":0", scheduler_kwargs={"dashboard": False})
    client = Client(cluster)
    yield cluster.scheduler_address
    client.close()
    cluster.close()


def _prdist_process(argv, *, env_extra=None, preamble=""):
    """Start ``prdist`` as a process of its own (its own session, so the test can end it whole)."""
    # In-process, as with nothing configured (the runners are compared in tests/integration/test_runners.py).
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           **(env_extra or {})}
    code = f"import sys\n{preamble}\nfrom prdist.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True, cwd=ROOT)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


# The process kills itself (SIGKILL: no cleanup, no exception handler, no atexit) at the moment
# it would commit the run: after every artifact was written, before the manifest.
_KILL_AT_COMMIT = """
import os, signal
from prdist.dataflow.io.artifacts import RunDirectory
def _die(self, manifest):
    os.kill(os.getpid(), signal.SIGKILL)
RunDirectory.commit = _die
"""


@pytest.mark.slow
def test_a_process_killed_before_its_commit_leaves_no_run(tmp_path, small_release, tcp_cluster):
    args = ["run", "--resource", small_release, "--oracle-column", "label", "--eps", "0.1", "--window", "20",
            "--scheduler", tcp_cluster]
    code, out, err = cli(*args, "--out", str(tmp_path / "reference"))
    assert code == 0, err
    reference = Path(last_line(out))

    out_root = tmp_path / "runs"
    proc = _prdist_process([*args, "--out", str(out_root)], preamble=_KILL_AT_COMMIT)
    try:
        proc.wait(timeout=170)
    finally:
        _end(proc)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    run = out_root / reference.name
    assert (run / "report.html").exists() and not (run / "manifest.json").exists()

    code, out, err = cli(*args, "--out", str(out_root))
    assert code == 0, err
    assert Path(last_line(out)) == run
    assert_same_run(run, reference)


# --------------------------------------------------------------------------------------------
# (d) Concurrent runs and imports


@pytest.mark.slow
def test_two_runs_of_one_release_at_once_commit_one_result(tmp_path, small_release, tcp_cluster):
    out_root = tmp_path / "runs"
    args = ["run", "--resource", small_release, "--oracle-column", "label", "--eps", "0.1", "--window", "20",
            "--scheduler", tcp_cluster, "--out", str(out_root)]
    procs = [_prdist_process(args) for _ in range(2)]
    try:
        results = [proc.communicate(timeout=170) for proc in procs]
    finally:
        for proc in procs:
            _end(proc)
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in results]
    runs = {last_line(stdout) for stdout, _ in results}
    assert len(runs) == 1
    run = Path(runs.pop())
    code, out, err = cli(*args[:-1], str(tmp_path / "reference"))
    assert code == 0, err
    assert_same_run(run, Path(last_line(out)))
    assert sorted(p.name for p in out_root.iterdir()) == sorted(["_staging", run.name])
    assert visible_files(run) == visible_files(Path(last_line(out)))


def test_racing_attempts_of_one_run_commit_once(tmp_path, small_release, dask_client, monkeypatch):
    """Two attempts of the same run reach the commit together: one commits, both report it."""
    from prdist.dataflow.run import evaluate as ev
    from prdist.dataflow.run import steps as run_module
    from prdist.dataflow.io.artifacts import RunDirectory

    resource = run_module.open_for_run(small_release, oracle_column="label")
    params = ev.EvaluationParams(eps=0.1, window=20, oracle_column="label")
    planned = ev.make_plan(resource.n, params)
    staging = ev.staging_url(str(tmp_path / "runs"), resource, params)
    extraction = run_module.read_items(run_module.extract_items(resource, planned.ranks, client=dask_client, staging=staging))
    resolution = ev.resolve_labels(extraction.items, oracle_column="label")
    estimate = ev.estimate(planned, resolution.labels, params)

    both_at_commit = threading.Barrier(2, timeout=60)
    commit = RunDirectory.commit

    def commit_together(self, manifest):
        both_at_commit.wait()
        return commit(self, manifest)

    monkeypatch.setattr(RunDirectory, "commit", commit_together)
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: run_module.write_run(resource, planned, extraction, resolution, estimate, params,
                                                                out=str(tmp_path / "runs"), bands=None), range(2)))
    assert outcomes[0].url == outcomes[1].url
    assert sorted(o.reused for o in outcomes) == [False, True]  # one committed, one found it committed
    assert outcomes[0].manifest == outcomes[1].manifest
    assert json.loads((Path(outcomes[0].url) / "manifest.json").read_text()) == outcomes[0].manifest


def test_label_imports_at_once_keep_every_label(tmp_path):
    """Three ``prdist labels import`` processes into one store at the same moment."""
    store = tmp_path / "store"
    files = []
    for i in range(3):
        path = tmp_path / f"batch-{i}.csv"
        pd.DataFrame({"key": np.arange(i * 100, (i + 1) * 100), "label": np.arange(100) % 2}).to_csv(path, index=False)
        files.append(str(path))
    procs = [
        subprocess.Popen([sys.executable, "-m", "prdist", "labels", "import", "--store", str(store), f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        for f in files
    ]
    try:
        results = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            _end(proc)
    assert [proc.returncode for proc in procs] == [0] * 3, [err for _, err in results]
    assert len({last_line(out) for out, _ in results}) == 3  # three distinct files in the store
    found = lookup_labels(str(store), np.arange(300))
    assert found.missing == 0 and found.labels.tolist() == [float(k % 2) for k in range(300)]


# --------------------------------------------------------------------------------------------
# (a) A Dask worker process killed while the ranks are selected


@pytest.fixture
def process_cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=":0", scheduler_kwargs={"dashboard": False})
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
def test_a_worker_killed_during_rank_selection_changes_nothing(tmp_path, process_cluster, monkeypatch):
    from prdist.dataflow.ranks import extract as extract_module

    # Unsorted: the ranks are found by the selection's passes over every file, one task per file.
    url = write_resource(tmp_path / "resource", n=1_200_000, files=12, seed=3, shuffled=True)
    address = process_cluster.scheduler.address
    args = ["run", "--resource", url, "--oracle-column", "label", "--eps", "0.05", "--window", "50",
            "--scheduler", address]
    code, out, err = cli(*args, "--out", str(tmp_path / "reference"))
    assert code == 0, err
    reference = Path(last_line(out))

    killed = []
    select = extract_module.selection  # what the run's extraction calls on an unsorted resource

    def select_with_a_kill(*a, **k):
        pids = process_cluster.run(os.getpid)

        def killer():
            # Kill the first worker seen running a task of the selection, mid-task.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                for worker, keys in process_cluster.processing().items():
                    if any("histogram" in str(key) or "extract" in str(key) for key in keys):
                        os.kill(pids[worker], signal.SIGKILL)
                        killed.append((worker, keys))
                        return
                time.sleep(0.005)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        try:
            return select(*a, **k)
        finally:
            thread.join(timeout=60)

    monkeypatch.setattr(extract_module, "selection", select_with_a_kill)
    started = time.monotonic()
    code, out, err = cli(*args, "--out", str(tmp_path / "runs"))
    elapsed = time.monotonic() - started
    assert killed, "no selection task was seen running: nothing was killed"
    assert code == 0, err
    assert_same_run(Path(last_line(out)), reference)
    print(f"run with a killed worker: {elapsed:.1f} s; killed {killed[0][0]} running {killed[0][1]}")


# --------------------------------------------------------------------------------------------
# (b) The S3 server stopped and started again during a run


class RestartableS3:
    """A SeaweedFS server of its own, which a test may stop and start again on the same ports."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.key, self.secret = "fault-key", f"fault-secret-{uuid.uuid4().hex}"
        (workdir / "data").mkdir(parents=True)
        (workdir / "s3.json").write_text(json.dumps({"identities": [seaweed.admin_identity(self.key, self.secret)]}))
        self.ports = seaweed.free_ports(8)
        self.endpoint = f"http://127.0.0.1:{self.ports[0]}"
        self.proc = None
        self.starts = 0

    @property
    def storage_options(self) -> dict:
        return {"key": self.key, "secret": self.secret, "endpoint_url": self.endpoint}

    def start(self) -> float:
        started = time.monotonic()
        log = self.workdir / f"weed-{self.starts}.log"
        self.proc = seaweed.start_weed(self.workdir, self.ports, log)
        self.starts += 1
        seaweed.wait_for_s3(self.proc, self.endpoint, self.key, self.secret, log, started + seaweed.S3_START_TIMEOUT,
                            seaweed.S3_START_TIMEOUT)
        return time.monotonic() - started

    def stop(self) -> None:
        if self.proc is not None:
            seaweed.stop(self.proc)

    def sockets(self) -> list[Path]:
        return seaweed.grpc_sockets(self.ports)


@pytest.fixture
def restartable_s3(tmp_path_factory):
    server = RestartableS3(tmp_path_factory.mktemp("weed"))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        for sock in server.sockets():
            with contextlib.suppress(FileNotFoundError):
                sock.unlink()
        shutil.rmtree(server.workdir, ignore_errors=True)


def outage_at_extraction(server: RestartableS3, monkeypatch, *, seconds: float) -> dict:
    """Stop ``server`` when a run first extracts ranks, and start it again ``seconds`` later.

    Returns the outage's record, filled as it happens: monotonic "stopped" and "back" times,
    "restart_seconds", and the restarting "thread".
    """
    from prdist.dataflow.run import steps as run_module

    outage = {}
    extract = run_module.extract  # the run's one extraction entry, sorted or not

    def extract_during_an_outage(*a, **k):
        if not outage:
            server.stop()
            outage["stopped"] = time.monotonic()

            def restart():
                time.sleep(seconds)
                outage["restart_seconds"] = server.start()
                outage["back"] = time.monotonic()

            outage["thread"] = threading.Thread(target=restart, daemon=True)
            outage["thread"].start()
        return extract(*a, **k)

    monkeypatch.setattr(run_module, "extract", extract_during_an_outage)
    return outage


@pytest.mark.slow
def test_an_s3_outage_during_a_run_is_survived_or_fails_cleanly(tmp_path, restartable_s3, dask_client, monkeypatch):
    import s3fs

    server = restartable_s3
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options)
    fs.mkdir("faults")
    local = write_resource(tmp_path / "resource", n=40_000, files=2, seed=5, shuffled=False)
    fs.put(local, "faults/resource", recursive=True)
    options = json.dumps(server.storage_options)
    args = ["run", "--resource", "s3://faults/resource", "--out", "s3://faults/runs", "--oracle-column", "label",
            "--eps", "0.1", "--window", "20", "--storage-options", options, "--scheduler", dask_client.scheduler.address]
    code, out, err = cli(*args[:4], "s3://faults/reference", *args[5:])
    assert code == 0, err
    reference = last_line(out)

    outage = outage_at_extraction(server, monkeypatch, seconds=3)
    started = time.monotonic()
    code, out, err = cli(*args)
    elapsed = time.monotonic() - started
    assert "thread" in outage, "the run never extracted: no outage happened"
    outage["thread"].join(timeout=90)  # the restart, however long the run took
    assert "back" in outage, "the server did not come back"
    print(f"outage {outage['back'] - outage['stopped']:.1f} s (restart {outage['restart_seconds']:.1f} s); run exit {code} after {elapsed:.1f} s")
    print(err)
    if code != 0:
        # Failed cleanly (the outage outlasted the retries): nothing committed; the rerun completes.
        assert code == 2 and "the storage endpoint cannot be reached" in err, err
        assert not [p for p in fs.find("faults/runs") if p.endswith("manifest.json")]
        monkeypatch.undo()
        code, out, err = cli(*args)
        assert code == 0, err
    run = last_line(out)
    for name in ("plan.parquet", "bounds.parquet"):
        assert fs.cat_file(f"{run}/{name}") == fs.cat_file(f"{reference}/{name}")
    manifests = [json.loads(fs.cat_file(f"{url}/manifest.json")) for url in (run, reference)]
    for m in manifests:
        m.pop("timings")
    assert manifests[0] == manifests[1]
