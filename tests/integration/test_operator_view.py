"""What an operator sees in Prefect: counts in the log, a report link a browser opens (or plainly an
object-store location), a Dask dashboard link only when it works. Real Prefect (the session's
ephemeral backend), a real Dask scheduler."""

from __future__ import annotations

import pytest

from flows._policies import REPORT_BASE_VARIABLE, conclude, dashboard_link, run_artifacts
from prdist.dataflow.io.artifacts import RunOutcome

MANIFEST = {
    "run_id": "abc123", "n": 20_000, "input": {"url": "s3://prdist/releases/r1", "bytes_read": 3 * 1024**2},
    "counts": {"annotations": 300, "labeled": 280, "unknown": 20, "cannot_judge": 0, "disputed": 0, "awaiting": 20},
}  # fmt: skip


def _flow_run_of(fn):
    """Run ``fn`` inside a real flow run; return the flow run's id and its artifacts and logs."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId

    @flow(name="operator-view")
    def probe():
        from prefect.runtime import flow_run

        fn()
        return flow_run.id

    from prefect.logging.handlers import APILogHandler

    run_id = probe()
    APILogHandler().flush()  # logs travel in the background
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
    return {a.key: a for a in artifacts}, [log.message for log in logs]


def test_an_object_store_report_is_said_to_be_one_and_a_mapped_one_is_a_link(prefect_harness, monkeypatch):
    outcome = RunOutcome("s3://prdist/runs/abc123", MANIFEST, 20, "s3://prdist/runs/abc123/annotation_task.csv")
    monkeypatch.delenv(REPORT_BASE_VARIABLE, raising=False)
    artifacts, _ = _flow_run_of(lambda: run_artifacts(outcome, None))
    plain = artifacts["prdist-report"]
    assert plain.type == "markdown" and "`s3://prdist/runs/abc123/report.html`" in plain.data
    assert "not a web address" in plain.data and REPORT_BASE_VARIABLE in plain.data
    assert "prdist-bounds" not in artifacts  # a run found committed: its own flow run holds them

    monkeypatch.setenv(REPORT_BASE_VARIABLE, "s3://prdist=https://s3.example.org/prdist")
    artifacts, _ = _flow_run_of(lambda: run_artifacts(outcome, None))
    linked = artifacts["prdist-report"]
    assert linked.type == "markdown" and "(https://s3.example.org/prdist/runs/abc123/report.html)" in linked.data


def test_the_log_counts_items_bytes_and_labels(prefect_harness):
    outcome = RunOutcome("s3://prdist/runs/abc123", MANIFEST, 20, "s3://prdist/runs/abc123/annotation_task.csv")
    _, logs = _flow_run_of(lambda: conclude(outcome, summary="# x", artifact_key="prdist-evaluation", waiting_for="planned items"))
    (counts,) = [m for m in logs if "planned labels" in m]
    assert counts == ("run abc123 (new): 20,000 items, 3.0 MB read, 300 planned labels: 280 known, 20 awaited, "
                      "0 cannot judge, 0 disputed")  # fmt: skip


def test_a_bad_report_base_is_one_line_naming_the_variable(monkeypatch):
    from flows._policies import report_location
    from prdist.errors import InputError

    monkeypatch.setenv(REPORT_BASE_VARIABLE, "https://s3.example.org/prdist")
    with pytest.raises(InputError, match=f"{REPORT_BASE_VARIABLE} must be PREFIX=BASE"):
        report_location("s3://prdist/runs/abc/report.html")


@pytest.mark.filterwarnings("ignore:Port .* is already in use")
def test_no_dashboard_link_from_a_scheduler_without_bokeh():
    import importlib.util

    from distributed import Client, LocalCluster

    if importlib.util.find_spec("bokeh") is not None:
        pytest.skip("bokeh is installed: the dashboard works")
    # Dask announces a dashboard address even without bokeh; its pages say "Dask needs bokeh".
    with LocalCluster(n_workers=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        assert client.dashboard_link
        assert dashboard_link(client) is None
    with LocalCluster(n_workers=1, processes=False, dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}) as cluster, Client(cluster) as client:
        assert dashboard_link(client) is None
