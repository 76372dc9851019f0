"""What a Prefect API recorded of the runs a test started: how often each ran (shared by tests).

A retry shows in the API as a run whose ``run_count`` is above 1 (or one awaiting its retry),
whatever its delay: tests observe retries there instead of timing the command.
"""

from __future__ import annotations

from datetime import datetime

#: The states of a run that failed and will run again.
RETRY_STATES = {"AwaitingRetry", "Retrying"}


def started_since(client, since: datetime) -> list:
    """Every flow run and task run that ``client``'s API saw start after ``since`` (a sync client)."""
    from prefect.client.schemas.filters import (FlowRunFilter, FlowRunFilterStartTime, TaskRunFilter,
                                                TaskRunFilterStartTime)

    flows = client.read_flow_runs(flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)), limit=200)
    tasks = client.read_task_runs(task_run_filter=TaskRunFilter(start_time=TaskRunFilterStartTime(after_=since)), limit=200)
    return [*flows, *tasks]


def of_flow_run(client, flow_run_id) -> list:
    """The flow run ``flow_run_id`` and its task runs."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    only = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    return [client.read_flow_run(flow_run_id), *client.read_task_runs(flow_run_filter=only, limit=200)]


def retried(runs) -> list[str]:
    """The runs among ``runs`` that ran more than once or await a retry, as 'name (state, runs)'."""
    return [f"{run.name} ({run.state_name}, run {run.run_count} times)" for run in runs
            if run.run_count > 1 or run.state_name in RETRY_STATES]
