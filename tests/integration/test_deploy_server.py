"""End to end: the deployments of deploy/prefect.yaml on a real Prefect server, and the compose init job.

The server is ``prefect server start`` on a free loopback port (SQLite in a temporary
PREFECT_HOME, analytics and UI off); deployments are registered from deploy/prefect.yaml by
deploy/register.sh (the compose job: ``prefect deploy`` per deployment), runs are executed by ``prefect worker start --pool prdist-process``, and the
flows compute on a Dask scheduler passed through PRDIST_SCHEDULER, as in deploy/compose.yaml. A
release is announced with ``prdist release``; the on-release trigger must start the run, and labels
imported with ``prdist labels import`` must start evaluate-release/on-labels. The events that runs,
imports and ``prdist history`` send are read back from the server. Every
process started here is stopped (SIGTERM, then SIGKILL) in a ``finally``. The init job's retries are
observed on a clock it is handed (the waits it asks for), not timed; only its user-set --timeout is.

Timings on the 2-core development machine (shared, load 4-8): server start 25-40 s, each
``prefect deploy`` 12-15 s, a flow run 15-50 s (process start-up dominates); the whole test ~2 min.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.paths import ROOT  # noqa: E402
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent

SERVER_START_TIMEOUT = 180.0  # s; ~30 s on a loaded 2-core machine
TRIGGER_TIMEOUT = 90.0  # s from the event to the triggered flow run (a few seconds when idle)
RUN_TIMEOUT = 300.0  # s for both flow runs to finish
STOP_GRACE = 10.0  # s between SIGTERM and SIGKILL (an idle `prefect worker` ignored SIGTERM for 18 s here)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: no inherited Prefect or AWS settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "AWS_", "PRDIST_"))}
    # The project's executables first (register.sh calls `prefect`), as in the image.
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", **extra)
    return env


def _start(args: list[str], *, env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group we started, then SIGKILL it if it is still there."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _poll(check, *, timeout: float, interval: float = 1.0, what: str):
    """``check()`` until it returns something true, for up to ``timeout`` seconds. A request of
    ``check`` that times out counts as "not yet": the server answers slowly on a loaded machine
    (its SQLite), and what the caller waits for is the state, by the deadline."""
    deadline = time.monotonic() + timeout
    slow = None
    while True:
        try:
            result = check()
        except httpx.TimeoutException as exc:
            result, slow = None, exc
        if result:
            return result
        if time.monotonic() > deadline:
            late = f" (a request timed out: {slow!r})" if slow is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{late}")
        time.sleep(interval)


class Server:
    def __init__(self, api_url: str, log: Path):
        self.api_url, self.log = api_url, log


@contextlib.contextmanager
def running_server(home: Path, **settings: str):
    """``prefect server start`` on a free loopback port, its SQLite and log under ``home``, with the
    server ``settings`` (``PREFECT_SERVER_*`` variables); yields a :class:`Server` once healthy."""
    port = _free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = _clean_env(PREFECT_HOME=str(home), PREFECT_UI_ENABLED="false", **settings)
    log = home / "server.log"
    proc = _start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env, log=log, cwd=home)
    try:
        def healthy():
            if proc.poll() is not None:
                raise AssertionError(f"prefect server exited with {proc.returncode}:\n{_tail(log)}")
            with contextlib.suppress(httpx.HTTPError):
                return httpx.get(f"{api_url}/health", timeout=5).status_code == 200
            return False

        _poll(healthy, timeout=SERVER_START_TIMEOUT, what=f"{api_url}/health\n{_tail(log)}")
        yield Server(api_url, log)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


def _register(names: list[str], *, env: dict, logs: Path) -> None:
    """deploy/register.sh (the compose job), one process per deployment, concurrently."""
    procs = {name: _start(["sh", str(DEPLOY / "register.sh"), name], env=env, log=logs / f"register-{name}.log", cwd=ROOT)
             for name in names}  # fmt: skip
    for name, proc in procs.items():
        log = logs / f"register-{name}.log"
        code = proc.wait(timeout=300)
        assert code == 0, f"register.sh {name} failed with {code}:\n{_tail(log)}"


def _manifests(runs: Path) -> dict[tuple[str, str | None], dict]:
    """{(input URL, oracle column): manifest} of the committed runs under ``runs``."""
    found = {}
    for path in runs.glob("*/manifest.json"):
        manifest = json.loads(path.read_text())
        found[manifest["input"]["url"], manifest["params"]["oracle_column"]] = {**manifest, "_dir": path.parent}
    return found


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_deployments_run_on_a_prefect_server(prefect_server, tmp_path):
    from distributed import LocalCluster
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.client.schemas.filters import DeploymentFilter
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from prdist import population
    from prdist.dataflow.synth import write_synthetic

    api = prefect_server.api_url
    model = population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.3)
    tracked = write_synthetic(model, n=20_000, out=str(tmp_path / "kb-current"), seed=11)
    released = write_synthetic(model, n=20_000, out=str(tmp_path / "kb-2026-08"), seed=12)
    relayed = write_synthetic(model, n=20_000, out=str(tmp_path / "kb-2026-09"), seed=13)
    runs, labels = tmp_path / "runs", tmp_path / "labels"
    client_home = tmp_path / "prefect-client"
    client_home.mkdir()

    # The flows compute on this scheduler (in-process workers over TCP), as compose passes its own.
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                      worker_dashboard_address=None) as cluster, \
            temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:  # fmt: skip
        env = _clean_env(
            PREFECT_HOME=str(client_home), PREFECT_API_URL=api, PREFECT_CLI_PROMPT="false",
            PRDIST_RESOURCE=tracked.url, PRDIST_RUNS=str(runs), PRDIST_LABELS=str(labels),
            PRDIST_SCHEDULER=cluster.scheduler_address,
        )  # fmt: skip
        # The Kubernetes pool's template passes the server's validation (no cluster needed for that).
        template = json.loads((DEPLOY / "kubernetes" / "base-job-template.json").read_text())
        client.create_work_pool(WorkPoolCreate(name="prdist-kubernetes", type="kubernetes", base_job_template=template))
        assert client.read_work_pool("prdist-kubernetes").base_job_template == template

        worker = _start([str(BIN / "prefect"), "worker", "start", "--pool", "prdist-process", "--type", "process"],
                        env=env, log=tmp_path / "worker.log", cwd=tmp_path)  # fmt: skip
        try:
            _register(["nightly", "on-release", "on-labels"], env=env, logs=tmp_path)
            assert client.read_work_pool("prdist-process").type == "process"
            nightly = client.read_deployment_by_name("evaluate-release/nightly")
            on_release = client.read_deployment_by_name("evaluate-release/on-release")
            assert nightly.parameters == {"resource": tracked.url, "out": str(runs), "labels": str(labels),
                                          "scheduler": cluster.scheduler_address}  # fmt: skip
            assert [s.schedule.cron for s in nightly.schedules] == ["30 2 * * *"]
            (automation,) = client.read_resource_related_automations(f"prefect.deployment.{on_release.id}")
            assert automation.trigger.expect == {"prdist.release.published"}

            # A scheduled deployment, run now (with the resource's own labels as the oracle).
            nightly_run = client.create_flow_run_from_deployment(nightly.id, parameters={"oracle_column": "label"})

            # A release announced by `prdist release` starts the on-release deployment.
            announced = subprocess.run([str(BIN / "prdist"), "release", "--resource", released.url, "--api-url", api],
                                       env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
            assert announced.returncode == 0, announced.stderr
            uuid.UUID(announced.stdout.split()[-1])

            # The relay path of deploy/README.md: the event as JSON, POSTed to <api>/events, with
            # its own label store and run root.
            relayed_event = {
                "id": str(uuid.uuid4()), "occurred": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                "event": "prdist.release.published",
                "resource": {"prefect.resource.id": f"prdist.resource.{relayed.url}"},
                "payload": {"resource": relayed.url, "labels": str(tmp_path / "labels-b"), "out": str(tmp_path / "runs-b")},
            }  # fmt: skip
            posted = httpx.post(f"{api}/events", json=[relayed_event], timeout=30)
            assert posted.status_code == 204, posted.text

            def triggered():
                found = client.read_flow_runs(
                    deployment_filter=DeploymentFilter(id={"any_": [on_release.id]}),
                    sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=10, offset=0,
                )  # fmt: skip
                return {run.parameters["resource"]: run for run in found} if len(found) == 2 else None

            by_resource = _poll(triggered, timeout=TRIGGER_TIMEOUT, what="the on-release trigger (twice)")
            release_run, relayed_run = by_resource[released.url], by_resource[relayed.url]

            # Labels imported into the tracked store start evaluate-release/on-labels.
            on_labels = client.read_deployment_by_name("evaluate-release/on-labels")
            (tmp_path / "done.csv").write_text("key,label\nk1,1\n")
            imported = subprocess.run([str(BIN / "prdist"), "labels", "import", "--store", str(labels), str(tmp_path / "done.csv")],
                                      env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
            assert imported.returncode == 0, imported.stderr

            def relabeled():
                found = client.read_flow_runs(deployment_filter=DeploymentFilter(id={"any_": [on_labels.id]}), limit=10, offset=0)
                return found[0] if found else None

            labels_run = _poll(relabeled, timeout=TRIGGER_TIMEOUT, what="the on-labels trigger")
            assert labels_run.parameters == {"resource": tracked.url, "out": str(runs), "labels": str(labels),
                                             "scheduler": cluster.scheduler_address, "awaiting": True}  # fmt: skip
            # The event's resource; the deployment's label store, run root and scheduler...
            assert release_run.parameters == {"resource": released.url, "labels": str(labels), "out": str(runs),
                                              "scheduler": cluster.scheduler_address}  # fmt: skip
            # ...unless the event names its own.
            assert relayed_run.parameters == {"resource": relayed.url, "labels": str(tmp_path / "labels-b"),
                                              "out": str(tmp_path / "runs-b"), "scheduler": cluster.scheduler_address}  # fmt: skip

            def finished():
                states = [client.read_flow_run(run.id).state for run in (nightly_run, release_run, relayed_run, labels_run)]
                return states if all(state.is_final() for state in states) else None

            try:
                nightly_state, release_state, relayed_state, labels_state = _poll(finished, timeout=RUN_TIMEOUT, interval=2.0, what="the flow runs")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nworker log:\n{_tail(tmp_path / 'worker.log', 80)}") from None
        finally:
            _stop(worker)

        assert nightly_state.is_completed() and nightly_state.name == "Completed", (nightly_state, _tail(tmp_path / "worker.log", 80))
        assert release_state.is_completed() and release_state.name == "AwaitingLabels", (release_state, _tail(tmp_path / "worker.log", 80))
        assert relayed_state.is_completed() and relayed_state.name == "AwaitingLabels", (relayed_state, _tail(tmp_path / "worker.log", 80))
        assert labels_state.is_completed() and labels_state.name == "AwaitingLabels", (labels_state, _tail(tmp_path / "worker.log", 80))
        assert list((tmp_path / "runs-b").glob("*/annotation_task.csv"))

        manifests = _manifests(runs)
        complete = manifests[tracked.url if "://" in tracked.url else f"file://{tracked.url}", "label"]
        assert complete["status"] == "complete" and complete["counts"]["unknown"] == 0
        assert complete["params"]["oracle_column"] == "label"
        for name in ("plan.parquet", "bounds.parquet", "report.html"):
            assert (complete["_dir"] / name).is_file()
        awaiting = manifests[released.url if "://" in released.url else f"file://{released.url}", None]
        # The run the label import started: the tracked resource, its labels from the store.
        assert manifests[tracked.url if "://" in tracked.url else f"file://{tracked.url}", None]["counts"]["labeled"] == 0
        assert awaiting["counts"]["unknown"] > 0
        assert (awaiting["_dir"] / "annotation_task.csv").is_file()
        # The flow's Prefect artifact names the run directory (raw HTTP: an empty task-run filter
        # in the client's read_artifacts would keep only task-level artifacts).
        response = httpx.post(f"{api}/artifacts/filter", timeout=30, json={
            "flow_runs": {"id": {"any_": [str(nightly_run.id)]}}, "sort": "CREATED_DESC", "limit": 10, "offset": 0,
        })  # fmt: skip
        response.raise_for_status()
        artifacts = {a["key"]: a for a in response.json()}
        assert set(artifacts) == {"prdist-evaluation", "prdist-bounds", "prdist-report"}
        assert complete["_dir"].name in artifacts["prdist-evaluation"]["data"]
        # The table artifact holds the bounds at the guaranteed cut-offs; the link artifact, the report.
        table = json.loads(artifacts["prdist-bounds"]["data"])
        assert {row["rank"] for row in table} >= {c["rank"] for c in complete["cutoffs"] if c["rank"] > 0}
        assert f"({complete['_dir'] / 'report.html'})" in artifacts["prdist-report"]["data"]  # a markdown link


# ---------------------------------------------------------------------------------------------
# The compose init job against a real S3 server


def _create_bucket(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DEPLOY / "create_bucket.py"), *args], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())  # fmt: skip


def test_create_bucket_job_against_seaweedfs(s3_env):
    import s3fs

    bucket = f"prdist-{uuid.uuid4().hex[:10]}"
    first = _create_bucket(bucket)
    assert first.returncode == 0, first.stderr
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    assert fs.exists(bucket)
    # Idempotent: the job runs on every `docker compose up`.
    fs.pipe(f"{bucket}/kept", b"x")
    again = _create_bucket(bucket)
    assert again.returncode == 0, again.stderr
    assert fs.cat(f"{bucket}/kept") == b"x"


class ManualClock:
    """A clock that moves only when slept on, recording the waits asked of it."""

    def __init__(self):
        self.now, self.waits = 0.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        assert self.now < 3600, "still retrying after an hour on the clock"


def _bucket_job():
    """deploy/create_bucket.py as a module (the job is a script, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("create_bucket_job", DEPLOY / "create_bucket.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_create_bucket_job_fails_fast_on_refused_credentials(s3_env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    clock = ManualClock()
    with pytest.raises(PermissionError):
        _bucket_job().create_bucket(f"prdist-{uuid.uuid4().hex[:10]}", timeout=60, sleep=clock.sleep, clock=clock)
    assert clock.waits == [], "refused credentials must not be retried until the timeout"
    refused = _create_bucket(f"prdist-{uuid.uuid4().hex[:10]}", "--timeout", "60")
    assert refused.returncode == 1
    assert "cannot create" in refused.stderr and "did not answer" not in refused.stderr, refused.stderr


def test_create_bucket_job_gives_up_when_the_store_never_answers(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    job, clock = _bucket_job(), ManualClock()
    with pytest.raises(TimeoutError, match="did not answer within 4 s"):
        job.create_bucket("prdist", timeout=4, sleep=clock.sleep, clock=clock)
    # Attempts at 0, 2 and 4 s: the waits between them end at the deadline, never past it.
    assert clock.waits == [job.RETRY_SECONDS] * 2
    # The job as compose runs it, on the real clock: the --timeout a user gives is the contract.
    # Generous for start-up on a loaded machine (4 s of waiting), and far below a job that
    # never gives up.
    started = time.monotonic()
    gave_up = _create_bucket("prdist", "--timeout", "4")
    assert gave_up.returncode == 1 and "did not answer within 4 s" in gave_up.stderr
    assert time.monotonic() - started < 40


@pytest.mark.slow
def test_a_configured_api_records_command_line_runs(prefect_server, tmp_path):
    """`prdist run` with PREFECT_API_URL set runs as a flow run of that server, tasks and all; the
    same command without it runs in-process and the server sees nothing new."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    resource = tmp_path / "release"
    resource.mkdir()
    n = 5_000
    pq.write_table(pa.table({"key": list(range(n)), "score": [1.0 - i / n for i in range(n)], "label": [i % 2 for i in range(n)]}),
                   resource / "part-0.parquet")
    argv = [str(BIN / "prdist"), "run", "--resource", str(resource), "--oracle-column", "label", "--eps", "0.2", "--window", "10"]

    def flow_runs() -> list:
        with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}), get_client(sync_client=True) as client:
            return client.read_flow_runs()

    before = len(flow_runs())
    recorded = subprocess.run([*argv, "--out", str(tmp_path / "recorded")], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path, env=_clean_env(PREFECT_API_URL=prefect_server.api_url, PREFECT_HOME=str(tmp_path / "home")))
    assert recorded.returncode == 0, recorded.stderr
    assert "running in-process" not in recorded.stderr
    runs = flow_runs()
    assert len(runs) == before + 1
    (latest,) = [r for r in runs if r.parameters.get("out") == str(tmp_path / "recorded")]
    assert latest.state.is_completed()
    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}), get_client(sync_client=True) as client:
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[latest.id])))
    assert {"open_resource_task", "extract_task", "write_task"} <= {t.task_key.split("-")[0] for t in tasks}

    alone = subprocess.run([*argv, "--out", str(tmp_path / "alone")], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path, env=_clean_env(PREFECT_HOME=str(tmp_path / "home")))
    assert alone.returncode == 0, alone.stderr
    assert "running in-process" in alone.stderr
    assert len(flow_runs()) == before + 1
    assert Path(alone.stdout.strip().splitlines()[-1]).name == Path(recorded.stdout.strip().splitlines()[-1]).name


# ---------------------------------------------------------------------------------------------
# The events of flows/events.py, as a Prefect server records them


def _prdist_events(api: str) -> list[dict]:
    """Every ``prdist.*`` event the server has stored, oldest first."""
    response = httpx.post(f"{api}/events/filter", timeout=30, json={
        "filter": {"event": {"prefix": ["prdist."]}, "order": "ASC"}, "limit": 50,
    })  # fmt: skip
    response.raise_for_status()
    return response.json()["events"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_runs_imports_and_history_send_their_events_to_the_server(prefect_server, tmp_path):
    """Two releases of one series, the second certainly worse; a run awaiting labels; an import;
    the history. The server stores every event, with the payloads the README promises."""
    from prdist import population
    from prdist.dataflow.synth import write_synthetic

    api = prefect_server.api_url
    steady = population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.3)
    worse = population.binormal(neg=(0, 1), pos=(0.5, 1), prevalence=0.15)
    first = write_synthetic(steady, n=50_000, out=str(tmp_path / "releases" / "r1"), seed=1)
    second = write_synthetic(worse, n=50_000, out=str(tmp_path / "releases" / "r2"), seed=3)
    runs, store = tmp_path / "runs", tmp_path / "labels"
    store.mkdir()  # an empty store
    env = _clean_env(PREFECT_API_URL=api, PREFECT_HOME=str(tmp_path / "home"))
    before = {e["id"] for e in _prdist_events(api)}

    def prdist(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "prdist"), *argv], capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)

    common = ["--out", str(runs), "--eps", "0.1", "--window", "50", "--series", "kb"]
    for release in (first, second):
        done = prdist("run", "--resource", release.url, "--oracle-column", "label", *common)
        assert done.returncode == 0, done.stderr
    # Awaiting labels, under another root: a release evaluated again counts by its latest run, and
    # this one's conservative bounds would hide the drop from the history below.
    awaiting = prdist("run", "--resource", second.url, "--labels", str(store), *common, "--out", str(tmp_path / "annotating"))
    assert awaiting.returncode == 3, awaiting.stderr
    (tmp_path / "done.csv").write_text("key,label\nk1,1\nk2,0\n")
    assert prdist("labels", "import", "--store", str(store), "done.csv").returncode == 0
    for _ in range(2):  # the drop is announced once, however often the history runs
        history = prdist("history", "--runs", str(runs), "--series", "kb")
        assert history.returncode == 0, history.stderr

    def stored():
        # This test's events name its own paths: an earlier test's event that the server stores
        # late (it persists events asynchronously) is not counted here.
        ours = str(tmp_path)
        events = [e for e in _prdist_events(api) if e["id"] not in before and ours in json.dumps(e["payload"])]
        return events if len(events) >= 6 else None

    events = _poll(stored, timeout=60, what=f"the events on the server\n{_tail(prefect_server.log)}")
    by_name: dict[str, list[dict]] = {}
    for event in events:
        by_name.setdefault(event["event"], []).append(event)
    assert {k: len(v) for k, v in by_name.items()} == {
        "prdist.run.completed": 3, "prdist.run.awaiting-labels": 1, "prdist.precision.changed": 1, "prdist.labels.imported": 1,
    }
    completed = by_name["prdist.run.completed"]
    assert [Path(e["payload"]["resource"]).name for e in completed] == ["r1", "r2", "r2"]
    assert all(e["payload"]["series"] == "kb" and e["payload"]["n"] == 50_000 for e in completed)
    (waiting,) = by_name["prdist.run.awaiting-labels"]
    assert waiting["payload"]["count"] > 0 and waiting["payload"]["task"].endswith("annotation_task.csv")
    assert [e["payload"]["awaiting_labels"] for e in completed] == [0, 0, waiting["payload"]["count"]]
    # The drop, from the second run itself; the histories found it sent (the ledger under the runs root).
    (changed,) = by_name["prdist.precision.changed"]
    assert changed["resource"]["prefect.resource.id"] == "prdist.series.kb"
    assert changed["resource"]["prdist.direction"] == "down" and changed["payload"]["run_id"] == completed[1]["payload"]["run_id"]
    assert changed["payload"]["ranks"] != [] and changed["id"] in {p.stem for p in (runs / "_events").glob("*.json")}
    (imported,) = by_name["prdist.labels.imported"]
    assert imported["payload"] == {"store": str(store), "count": 2, "keys": 2, "files": 1}

    # The flow runs are named after series and release, and carry the bounds and the report.
    with_names = httpx.post(f"{api}/flow_runs/filter", timeout=30, json={"sort": "START_TIME_ASC", "limit": 50}).json()
    names = [r["name"] for r in with_names if r["parameters"].get("series") == "kb"]
    assert names == ["kb @ r1", "kb @ r2", "kb @ r2"]
    artifacts = httpx.post(f"{api}/artifacts/filter", timeout=30, json={"sort": "CREATED_DESC", "limit": 50}).json()
    keys = {a["key"] for a in artifacts if a["flow_run_id"] == [r for r in with_names if r["name"] == "kb @ r1"][0]["id"]}
    assert keys == {"prdist-evaluation", "prdist-bounds", "prdist-report"}
