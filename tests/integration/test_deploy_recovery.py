"""Unattended runs on a real Prefect server: schedules fire, lost runs end, outages recover.

One ``prefect server start`` for the module (tests/integration/test_deploy_server.py's harness) with its
scheduler looping every 2 s instead of 60 s; ``evaluate-release/nightly`` registered by
deploy/register.sh and the automations of deploy/automations/ by deploy/automations.py (what
register.sh runs without arguments); flow runs executed by ``prefect worker start``. The flows
compute on a Dask scheduler of this process that starts with no worker, so a flow run waits in
its first pass (Running, sending heartbeats) until the test adds one: a run is certainly alive
when the test kills it. The S3 outage test stops and restarts a SeaweedFS server of its own.

Timings on the shared 2-core machine: see each test's docstring. Retries are observed as the
server records them (a run's run_count), not by timing their delays.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml
from tests.integration.test_deploy_server import BIN, ROOT, _clean_env, _poll, _register, _start, _stop, _tail, running_server
from tests.integration.test_faults import restartable_s3  # noqa: F401 (a fixture)
from tests.support.prefect_runs import of_flow_run, retried

AUTOMATIONS = ROOT / "deploy" / "automations"
PREFECT_YAML = yaml.safe_load((ROOT / "deploy" / "prefect.yaml").read_text())
SCHEDULER_LOOP = "2"  # s between the server scheduler's passes (Prefect's default: 60)
# s between a flow run's heartbeats: the work pool's job variables
HEARTBEAT = int(PREFECT_YAML["definitions"]["work_pool"]["job_variables"]["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"])
ZOMBIE_WITHIN = yaml.safe_load((AUTOMATIONS / "crash-zombies.yaml").read_text())["trigger"]["within"]  # s after a heartbeat
CANCEL_WITHIN = yaml.safe_load((AUTOMATIONS / "finish-cancelling.yaml").read_text())["trigger"]["within"]  # s in Cancelling
PROACTIVE_PERIOD = 5  # s between the server's evaluations of proactive triggers (Prefect's default)
SLACK = 30  # s for a loaded machine: event delivery, the action's API call


class Stack:
    """The module's server, the nightly deployment's environment and the Dask cluster it names."""

    def __init__(self, server, env: dict, cluster, runs: Path, resource: str):
        self.server, self.env, self.cluster, self.runs, self.resource = server, env, cluster, runs, resource

    @contextlib.contextmanager
    def client(self):
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.server.api_url}), get_client(sync_client=True) as client:
            yield client


def _flow_run_event(name: str, tags: list[str]):
    """A ``prefect.flow-run.<name>`` event of a flow run with ``tags``, as the server receives it."""
    from prefect.server.events.schemas.events import Event

    return Event.model_validate({
        "id": str(uuid.uuid4()), "occurred": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "event": f"prefect.flow-run.{name}", "resource": {"prefect.resource.id": f"prefect.flow-run.{uuid.uuid4()}"},
        "related": [{"prefect.resource.id": f"prefect.tag.{tag}", "prefect.resource.role": "tag"} for tag in tags],
    }).receive()  # fmt: skip


def test_the_automations_watch_the_runs_of_every_deployment_and_no_other():
    """Each automation file is valid; its trigger (as the server evaluates it) covers the runs of
    every deployment in prefect.yaml (tagged `prdist`) and no untagged run, starts on a heartbeat or
    on Cancelling and is satisfied by a state of any name."""
    from prefect.events.schemas.automations import AutomationCore
    from prefect.server.events.schemas.automations import EventTrigger

    assert all("prdist" in deployment["tags"] for deployment in PREFECT_YAML["deployments"])
    assert HEARTBEAT * 3 <= ZOMBIE_WITHIN  # three missed heartbeats, not one late one
    starts = {"crash-zombies.yaml": ("heartbeat", "CRASHED"), "finish-cancelling.yaml": ("Cancelling", "CANCELLED")}
    assert set(starts) <= {p.name for p in AUTOMATIONS.glob("*.yaml")}
    for name, (after, state) in starts.items():
        automation = AutomationCore.model_validate(yaml.safe_load((AUTOMATIONS / name).read_text()))
        trigger = EventTrigger.model_validate(automation.trigger.model_dump())
        assert trigger.posture == "Proactive" and trigger.starts_after(f"prefect.flow-run.{after}")
        assert trigger.covers(_flow_run_event(after, ["prdist", "scheduled"]))
        assert not trigger.covers(_flow_run_event(after, [])) and not trigger.covers(_flow_run_event(after, ["other"]))
        assert all(trigger.expects(f"prefect.flow-run.{s}") for s in ("heartbeat", "Completed", "AwaitingLabels", "TimedOut", "Crashed"))
        (action,) = automation.actions
        assert action.type == "change-flow-run-state" and action.state == state


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from distributed import LocalCluster

    from prdist import population
    from prdist.dataflow.synth import write_synthetic

    home = tmp_path_factory.mktemp("recovery")
    model = population.binormal(neg=(0, 1), pos=(1.5, 1), prevalence=0.3)
    resource = write_synthetic(model, n=20_000, out=str(home / "kb-current"), seed=21)
    (home / "client").mkdir()
    with running_server(home, PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS=SCHEDULER_LOOP) as server, \
            LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                         dashboard_address=":0", worker_dashboard_address=None) as cluster:  # fmt: skip
        env = _clean_env(
            PREFECT_HOME=str(home / "client"), PREFECT_API_URL=server.api_url, PREFECT_CLI_PROMPT="false",
            PRDIST_RESOURCE=resource.url, PRDIST_RUNS=str(home / "runs"), PRDIST_LABELS=str(home / "labels"),
            PRDIST_SCHEDULER=cluster.scheduler_address,
        )  # fmt: skip
        automations = subprocess.run([str(BIN / "python"), str(ROOT / "deploy" / "automations.py")], env=env,
                                     capture_output=True, text=True, timeout=300, cwd=ROOT)  # fmt: skip
        assert automations.returncode == 0, automations.stderr
        _register(["nightly"], env=env, logs=home)
        yield Stack(server, env, cluster, home / "runs", resource.url)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_nightly_schedule_creates_its_runs(stack):
    """The server's scheduler creates the nightly cron's next runs (Prefect's minimum: 3).

    Fails with sqlalchemy 2.1 (prefect 3.8.8's scheduler service raises "Can't evaluate bulk DML
    statement" on every pass and creates nothing). ~5 s after registration here; the module's
    server start and registration 17-44 s at load 1-5.
    """
    from prefect.client.schemas.filters import DeploymentFilter

    with stack.client() as client:
        nightly = client.read_deployment_by_name("evaluate-release/nightly")

        def scheduled():
            found = client.read_flow_runs(deployment_filter=DeploymentFilter(id={"any_": [nightly.id]}), limit=10, offset=0)
            return [run for run in found if run.auto_scheduled] if len(found) >= 3 else None

        runs = _poll(scheduled, timeout=120, what=f"the nightly schedule's runs\n{_tail(stack.server.log)}")
        (schedule,) = nightly.schedules
        # Nothing may run from it during this module's other tests (a CI job at 02:30 UTC).
        client.update_deployment_schedule(nightly.id, schedule.id, active=False)
    starts = sorted(run.expected_start_time.astimezone(datetime.timezone.utc) for run in runs)
    assert all((t.hour, t.minute) == (2, 30) for t in starts), starts
    assert [(b - a).days for a, b in zip(starts, starts[1:])] == [1] * (len(starts) - 1)
    assert all(run.state.is_scheduled() for run in runs)
    assert "Can't evaluate bulk DML" not in stack.server.log.read_text(errors="replace")


def _flow_processes(run_id) -> list[int]:
    """The pids of the processes running flow run ``run_id`` (the worker sets PREFECT__FLOW_RUN_ID)."""
    mark = f"PREFECT__FLOW_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if mark in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def _environ(pid: int) -> dict[str, str]:
    pairs = (item.split(b"=", 1) for item in (Path("/proc") / str(pid) / "environ").read_bytes().split(b"\0") if b"=" in item)
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


def _heartbeats(api: str, run_id) -> int:
    import httpx

    response = httpx.post(f"{api}/events/filter", timeout=30, json={
        "filter": {"event": {"name": ["prefect.flow-run.heartbeat"]}, "resource": {"id": [f"prefect.flow-run.{run_id}"]}},
        "limit": 10,
    })  # fmt: skip
    response.raise_for_status()
    return len(response.json()["events"])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_lost_node_crashes_its_run_cancellation_completes_and_a_rerun_completes(stack, tmp_path):
    """The worker and both flow processes it runs are SIGKILLed at once, as when a node is lost.

    The run left Running becomes Crashed (deploy/automations/crash-zombies.yaml) at most
    ZOMBIE_WITHIN + PROACTIVE_PERIOD s after its last heartbeat; the run cancelled after the loss
    becomes Cancelled (finish-cancelling.yaml) at most CANCEL_WITHIN + PROACTIVE_PERIOD s after
    the cancel. Then a new worker (and a Dask worker) run the deployment again to completion.
    110-140 s here at load 1-5.
    """
    from prefect.client.schemas.objects import StateType

    with stack.client() as client:
        nightly = client.read_deployment_by_name("evaluate-release/nightly")
        worker = _start([str(BIN / "prefect"), "worker", "start", "--pool", "prdist-process", "--type", "process"],
                        env=stack.env, log=tmp_path / "worker.log", cwd=tmp_path)  # fmt: skip
        try:
            lost, cancelled = (client.create_flow_run_from_deployment(nightly.id, parameters={"oracle_column": "label"}) for _ in range(2))

            def alive():  # Running and heard from: the Dask scheduler has no worker, the runs wait in their first pass
                states = [client.read_flow_run(run.id).state for run in (lost, cancelled)]
                beating = all(state.is_running() for state in states) and all(_heartbeats(stack.server.api_url, r.id) for r in (lost, cancelled))
                return beating and [pid for run in (lost, cancelled) for pid in _flow_processes(run.id)]

            pids = _poll(alive, timeout=300, interval=2.0, what=f"both runs running\n{_tail(tmp_path / 'worker.log', 60)}")
            assert _environ(pids[0]).get("PREFECT_FLOWS_HEARTBEAT_FREQUENCY") == str(HEARTBEAT)  # the pool's job variables
        finally:
            # The node is lost: worker and flow processes at once, no chance to report anything.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            for run in (lost, cancelled):
                for pid in _flow_processes(run.id):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            worker.wait(timeout=30)
        killed = time.monotonic()
        assert client.read_flow_run(lost.id).state.is_running()  # nothing else would ever end it

        cancel = subprocess.run([str(BIN / "prefect"), "flow-run", "cancel", str(cancelled.id)], env=stack.env,
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert cancel.returncode == 0, cancel.stderr
        cancel_sent = time.monotonic()
        assert client.read_flow_run(cancelled.id).state.type == StateType.CANCELLING

        ended: dict[str, float] = {}

        def final():
            for name, run in (("lost", lost), ("cancelled", cancelled)):
                if name not in ended and client.read_flow_run(run.id).state.is_final():
                    ended[name] = time.monotonic()
            return len(ended) == 2

        _poll(final, timeout=ZOMBIE_WITHIN + PROACTIVE_PERIOD + SLACK + 60, interval=1.0, what="the automations")
        lost_state, cancelled_state = (client.read_flow_run(run.id).state for run in (lost, cancelled))
        assert lost_state.type == StateType.CRASHED and "prdist crash zombie flow runs" in lost_state.message, lost_state
        assert cancelled_state.type == StateType.CANCELLED and "prdist finish cancelling" in cancelled_state.message, cancelled_state
        crash_after, cancel_after = ended["lost"] - killed, ended["cancelled"] - cancel_sent
        print(f"Crashed {crash_after:.0f} s after the kill; Cancelled {cancel_after:.0f} s after the cancel")
        assert crash_after <= ZOMBIE_WITHIN + PROACTIVE_PERIOD + SLACK
        assert cancel_after <= CANCEL_WITHIN + PROACTIVE_PERIOD + SLACK

        # A rerun on a new worker, with a Dask worker this time, completes.
        stack.cluster.scale(1)
        worker = _start([str(BIN / "prefect"), "worker", "start", "--pool", "prdist-process", "--type", "process"],
                        env=stack.env, log=tmp_path / "worker-2.log", cwd=tmp_path)  # fmt: skip
        try:
            rerun = client.create_flow_run_from_deployment(nightly.id, parameters={"oracle_column": "label"})
            state = _poll(lambda: (s := client.read_flow_run(rerun.id).state).is_final() and s, timeout=300, interval=2.0,
                          what=f"the rerun\n{_tail(tmp_path / 'worker-2.log', 60)}")  # fmt: skip
        finally:
            _stop(worker)
        assert state.name == "Completed", (state, _tail(tmp_path / "worker-2.log", 60))
        assert list(stack.runs.glob("*/bounds.parquet"))


@contextlib.contextmanager
def _flow_runs_on(stack):
    """Flows called here run as flow runs of the module's server (not in-process); their logs are
    sent before the block ends (at exit, the server would be gone)."""
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: stack.server.api_url}):
        try:
            yield
        finally:
            APILogWorker.drain_all(timeout=30)


OUTAGE = 90.0  # s the object store is down in the middle of a run


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_90_s_s3_outage_mid_run_ends_completed_with_the_same_bounds(stack, restartable_s3, tmp_path, monkeypatch):
    """SeaweedFS stopped at the start of the extraction and started 90 s later (13-22 s to start) on the same ports
    and data: the steps' retries (2/10/30 s) run out, the flow run fails, and its flow-level retry
    a minute later completes it, with the bounds of an undisturbed run byte for byte. Not a
    deployment run, so the zombie automation (runs tagged `prdist`) must leave its silence alone.
    110-135 s here at load 2-6.
    """
    import s3fs

    from flows.evaluate_release import evaluate_release
    from tests.integration.test_faults import outage_at_extraction, write_resource

    server = restartable_s3
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options)
    fs.mkdir("outage")
    fs.put(write_resource(tmp_path / "resource", n=40_000, files=2, seed=5, shuffled=False), "outage/resource", recursive=True)
    params = dict(resource="s3://outage/resource", oracle_column="label", eps=0.1, window=20, storage_options=server.storage_options)

    with _flow_runs_on(stack):
        reference = evaluate_release(**params, out="s3://outage/reference", return_state=True)
        assert reference.name == "Completed", reference
        outage = outage_at_extraction(server, monkeypatch, seconds=OUTAGE)
        started = time.monotonic()
        state = evaluate_release(**params, out="s3://outage/runs", return_state=True)
        ended = time.monotonic()
    outage["thread"].join(timeout=120)
    assert "back" in outage, "SeaweedFS did not come back"
    assert state.name == "Completed", state
    with stack.client() as client:
        flow_run = client.read_flow_run(state.state_details.flow_run_id)
    assert flow_run.run_count == 2, "the outage outlasted the steps' retries: the flow's retry completed the run"
    print(f"outage {outage['back'] - outage['stopped']:.0f} s; the run ended Completed {ended - started:.0f} s after it started")
    run, ref = state.result(), reference.result()
    assert fs.cat_file(f"{run}/bounds.parquet") == fs.cat_file(f"{ref}/bounds.parquet")


@pytest.mark.slow
def test_bad_input_fails_a_flow_run_without_its_retries(stack, tmp_path):
    """Prefect retries any failed flow run; bad input (a resource that does not exist) fails the
    same way every time, so the run ends Failed at its first attempt, without the retries'
    minute-long delays."""
    from flows.evaluate_release import evaluate_release

    with _flow_runs_on(stack):
        state = evaluate_release(resource=str(tmp_path / "missing"), out=str(tmp_path / "runs"), return_state=True)
    assert state.is_failed(), state
    with stack.client() as client:
        runs = of_flow_run(client, state.state_details.flow_run_id)
    # Counted, not timed: neither the flow run nor any of its task runs ran twice or awaits a retry.
    assert len(runs) > 1 and retried(runs) == [], retried(runs)
