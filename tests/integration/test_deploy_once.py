"""Unattended on a real Prefect server: one computation per release, labels that re-evaluate what they
touch, a notification for runs awaiting labels.

The harness is tests/integration/test_deploy_server.py's (``prefect server start`` on a free loopback port, the
deployments registered by deploy/register.sh, ``prefect worker start --pool prdist-process``, a Dask
scheduler passed as PRDIST_SCHEDULER). Notifications go to a webhook notification block that
points at an HTTP server of this test on loopback.
"""

from __future__ import annotations

import csv
import http.server
import json
import subprocess
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.test_deploy_server import BIN, RUN_TIMEOUT, TRIGGER_TIMEOUT, _clean_env, _poll, _prdist_events, _register, _start, _stop, _tail
from tests.integration.test_deploy_server import prefect_server  # noqa: F401 (the module's own server)


def _release(path: Path, prefix: str, n: int = 20_000, *, shuffled: bool = False) -> str:
    """A release whose keys carry ``prefix`` (releases share no key): sorted, or in a seeded random
    order (then its extraction passes over every row, which takes seconds at 10^6)."""
    path.mkdir(parents=True)
    scores = 1.0 - np.arange(n) / n
    if shuffled:
        scores = np.random.default_rng(0).permutation(scores)
    pq.write_table(pa.table({"key": [f"{prefix}-{i}" for i in range(n)], "score": scores}), path / "part-0.parquet")
    return str(path)


class _Hook(http.server.BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    _Hook.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", _Hook.received
    finally:
        server.shutdown()


def _flow_runs(api: str) -> list[dict]:
    response = httpx.post(f"{api}/flow_runs/filter", timeout=30, json={"sort": "START_TIME_ASC", "limit": 100})
    response.raise_for_status()
    return response.json()


def _task_runs(api: str, flow_run_ids: list[str]) -> list[dict]:
    response = httpx.post(f"{api}/task_runs/filter", timeout=30, json={"flow_runs": {"id": {"any_": flow_run_ids}}, "limit": 200})
    response.raise_for_status()
    return response.json()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_computation_per_release_and_labels_that_reach_every_release_they_touch(prefect_server, webhook, tmp_path):  # noqa: F811
    from distributed import LocalCluster
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = prefect_server.api_url
    hook_url, received = webhook
    releases = tmp_path / "releases"
    # r1's computation takes seconds, so that the two flow runs of it overlap.
    r1, r2 = _release(releases / "r1", "a", 1_000_000, shuffled=True), _release(releases / "r2", "b")
    pointer = str(releases / "current.json")
    runs, labels = tmp_path / "runs", tmp_path / "labels"
    (tmp_path / "home").mkdir()
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                      worker_dashboard_address=None) as cluster, \
            temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:  # fmt: skip
        CustomWebhookNotificationBlock(name="prdist-test", url=hook_url,
                                       json_data={"subject": "{{subject}}", "body": "{{body}}"}).save("prdist-test", overwrite=True)  # fmt: skip
        env = _clean_env(
            PREFECT_HOME=str(tmp_path / "home"), PREFECT_API_URL=api, PREFECT_CLI_PROMPT="false",
            PRDIST_RESOURCE=pointer, PRDIST_RUNS=str(runs), PRDIST_LABELS=str(labels),
            PRDIST_SCHEDULER=cluster.scheduler_address, PRDIST_NOTIFY_BLOCK="custom-webhook/prdist-test",
        )  # fmt: skip

        def prdist(*argv: str) -> subprocess.CompletedProcess:
            done = subprocess.run([str(BIN / "prdist"), *argv], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            return done

        worker = _start([str(BIN / "prefect"), "worker", "start", "--pool", "prdist-process", "--type", "process"],
                        env=env, log=tmp_path / "worker.log", cwd=tmp_path)  # fmt: skip
        try:
            _register(["nightly", "on-release", "on-labels", "automations"], env=env, logs=tmp_path)
            assert {a.name for a in client.read_automations()} >= {"prdist awaiting labels", "prdist precision dropped"}
            nightly = client.read_deployment_by_name("evaluate-release/nightly")
            # r2 is published as the series' current release (the pointer the deployments name).
            prdist("release", "--resource", r2, "--current", pointer)
            # r1 announced twice, and a scheduled deployment started for it at the same time.
            prdist("release", "--resource", r1)
            prdist("release", "--resource", r1)
            client.create_flow_run_from_deployment(nightly.id, parameters={"resource": r1})

            def of(resource):
                return [r for r in _flow_runs(api) if r["parameters"].get("resource") == resource]

            def settled():
                found = of(r1) + of(r2)
                return found if len(found) >= 3 and all(r["state_type"] in ("COMPLETED", "FAILED", "CRASHED") for r in found) else None

            try:
                _poll(settled, timeout=RUN_TIMEOUT, interval=2.0, what="the flow runs of r1 and r2")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nworker log:\n{_tail(tmp_path / 'worker.log', 80)}") from None
            time.sleep(5)  # a second on-release run of r1, if the trigger started one, shows by now
            first = of(r1)
            # Two announcements, one triggered run; with the scheduled one, two flow runs of r1...
            assert len(first) == 2, [r["name"] for r in first]
            assert all(r["state_name"] == "AwaitingLabels" for r in first), [(r["name"], r["state_name"]) for r in first]
            # ...and one computation: one extraction, one run directory, one run.completed.
            extractions = [t for t in _task_runs(api, [r["id"] for r in first]) if t["task_key"].startswith("extract_task")]
            assert len(extractions) == 1, extractions
            # (Without the lock both extract: r1's extraction takes seconds, and the two runs reach it
            # within a second of each other.)
            (run1,) = [p.parent for p in runs.glob("*/manifest.json") if json.loads(p.read_text())["input"]["url"].endswith("/r1")]
            # The current release (the pointer's) was evaluated: the pointer names r2.
            assert [r["state_name"] for r in of(r2)] == ["AwaitingLabels"]

            def notified():
                bodies = [m["body"] for m in received]
                return bodies if len(bodies) >= 2 else None

            bodies = _poll(notified, timeout=TRIGGER_TIMEOUT, what="the awaiting-labels notifications")
            assert sum(run1.name in body for body in bodies) == 1 and all("annotation_task.csv" in b for b in bodies)

            # Labels for r1's planned keys: the on-labels run evaluates the current release (r2,
            # nothing new) and, as a subflow, r1, whose plan the verdicts change.
            with open(run1 / "annotation_task.csv", newline="") as fh:
                keys = [row["key"] for row in csv.DictReader(fh)][:5]
            (tmp_path / "done.csv").write_text("key,label\n" + "".join(f"{key},1\n" for key in keys))
            prdist("labels", "import", "--store", str(labels), "done.csv")

            def relabeled():
                found = [json.loads(p.read_text()) for p in runs.glob("*/manifest.json")]
                return [m for m in found if m["input"]["url"].endswith("/r1") and m["counts"]["labeled"] == 5] or None

            try:
                _poll(relabeled, timeout=RUN_TIMEOUT, interval=2.0, what="r1 evaluated again with its labels")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nworker log:\n{_tail(tmp_path / 'worker.log', 80)}") from None
            # The on-labels run of the pointer is named after the release it names. (The nightly's
            # auto-scheduled runs of the pointer have not started: Prefect names a run when it starts.)
            started = [r for r in _flow_runs(api) if r["parameters"].get("resource") == pointer and not r.get("auto_scheduled")]
            assert [r["name"].rsplit(" @ ", 1)[1] for r in started] == ["r2"]
        finally:
            _stop(worker)

        def completed_events():
            events = [e for e in _prdist_events(api) if e["event"] == "prdist.run.completed" and str(tmp_path) in json.dumps(e["payload"])]
            return events if len(events) >= 3 else None

        events = _poll(completed_events, timeout=60, what="the run.completed events")
        # One per run directory: r1's first run, r2's, r1's relabeled run.
        runs_announced = [e["payload"]["run"] for e in events]
        assert len(runs_announced) == len(set(runs_announced)) == 3
