"""Task policies shared by the flows, and :func:`step`, the task decorator that runs with or without Prefect.

Importing this module (and the flow bodies built on it) does not import Prefect: the in-process
runner never needs it, and it costs most of a small run's start-up. Prefect is imported where a
flow run uses it: a step's task, an artifact, a state.
"""

from __future__ import annotations

import functools
import json
import sys
import time

from prdist.dataflow.run import strict_json
from prdist.dataflow.storage import StorageUnavailable, is_permanent, join_url
from prdist.dataflow.summary import awaiting_message
from prdist.errors import PrdistError
from prdist.redaction import redact_url


def is_transient(exc: BaseException) -> bool:
    """Retry I/O failures, never bad input: a wrong URL or schema does not fix itself.

    An unreachable storage endpoint is retried too: it may be a typo, or an outage that passes.
    """
    if isinstance(exc, StorageUnavailable):
        return True
    if isinstance(exc, OSError) and is_permanent(exc):
        return False  # a permission or a read-only disk does not fix itself
    return isinstance(exc, Exception) and not isinstance(exc, PrdistError)


def transient(task, task_run, state) -> bool:
    """Prefect's retry condition: :func:`is_transient` of the exception a failed task run holds."""
    try:
        state.result()
    except BaseException as exc:  # noqa: BLE001 (judged, not swallowed: the task run has failed)
        return is_transient(exc)
    return False


def in_flow_run() -> bool:
    """Whether the caller runs inside a Prefect flow run (the Prefect runner) or not (in-process)."""
    if "prefect" not in sys.modules:  # a flow run imports Prefect first: without it, none is running
        return False
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


#: ``cache_policy`` of :data:`IN_MEMORY`: Prefect's NO_CACHE, looked up when a step's task is made.
NO_CACHE = "NO_CACHE"


class Step:
    """A flow step: a Prefect task inside a flow run, the plain function it wraps outside one.

    Inside a flow run it is an ordinary task run (:attr:`task`, made on first use), recorded by
    the Prefect API. Outside one (the command line's in-process runner calls the flow's body) a
    Prefect 3 task would still create a task run against the API and so start a temporary
    server; a step calls its function instead, under the same retry policy: as many retries, the
    same delays, only for :func:`is_transient` failures. A flaky object store is as flaky without
    a server, so the runners do not differ.
    """

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        functools.update_wrapper(self, fn)

    @functools.cached_property
    def task(self):
        """The Prefect task of this step."""
        from prefect import Task
        from prefect.cache_policies import NO_CACHE as prefect_no_cache

        options = dict(self.options)
        if options.get("cache_policy") == NO_CACHE:
            options["cache_policy"] = prefect_no_cache
        return Task(fn=self.fn, **options)

    def __call__(self, *args, **kwargs):
        if in_flow_run():
            return self.task(*args, **kwargs)
        retries = self.options.get("retries") or 0
        delays = self.options.get("retry_delay_seconds") or [0]
        delays = delays if isinstance(delays, list) else [delays]
        for attempt in range(retries + 1):
            try:
                return self.fn(*args, **kwargs)
            except Exception as exc:
                if attempt == retries or not is_transient(exc):
                    raise
                time.sleep(delays[min(attempt, len(delays) - 1)])

    def with_options(self, **options) -> Step:
        """The same step with some options replaced (tests turn retries off)."""
        return type(self)(self.fn, **{**self.options, **options})


def step(**options):
    """``@step(**IO_RETRIES)``: a :class:`Step` of the decorated function (Prefect's ``@task`` options)."""
    return lambda fn: Step(fn, **options)


# Results stay in memory: task results hold opened resources (whose filesystems carry
# credentials) and data read from input, which must never be pickled to Prefect's result store.
# Resuming is the job of prdist's own staged Parquet files and committed run directories.
IN_MEMORY = dict(cache_policy=NO_CACHE, persist_result=False)

IO_RETRIES = dict(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=transient, **IN_MEMORY)


def sealed(storage_options: dict | None):
    """Storage options as a flow parameter that Prefect records and shows as '**********'.

    Prefect stores every flow run's parameters on its server, and storage options may hold
    credentials: the command line hands them to a flow run sealed (a pydantic ``SecretStr``),
    the flow unseals them.
    """
    from pydantic import SecretStr

    return None if storage_options is None else SecretStr(json.dumps(storage_options))


def unsealed(storage_options) -> dict | None:
    """The storage options a flow was given: sealed by :func:`sealed`, or a plain dict (deployments,
    the in-process runner)."""
    if hasattr(storage_options, "get_secret_value"):
        return json.loads(storage_options.get_secret_value())
    return storage_options


def conclude(outcome, *, summary: str, artifact_key: str, waiting_for: str):
    """End a flow on its run directory: a markdown artifact, then the URL or "AwaitingLabels".

    ``outcome`` is a prdist RunOutcome; in a flow run, a run with missing labels ends in a
    Completed state named "AwaitingLabels" whose result is still the run directory. Outside a flow
    run (the in-process runner) there is no API to hold an artifact, logs or a state: the body
    returns the :class:`flows._runner.FlowOutcome` the runner makes of that state.
    """
    from flows._runner import FlowOutcome

    message = awaiting_message(outcome, waiting_for)
    if not in_flow_run():
        return FlowOutcome(outcome.url, message if outcome.missing else None)
    from prefect import get_run_logger
    from prefect.artifacts import create_markdown_artifact
    from prefect.states import Completed

    logger = get_run_logger()
    publish_artifact(lambda: create_markdown_artifact(markdown=summary, key=artifact_key, description=f"{artifact_key} summary"),
                     what=f"{artifact_key} summary", url=outcome.url)
    logger.info("run directory: %s", outcome.url)
    if outcome.missing:
        logger.warning(message)
        return Completed(name="AwaitingLabels", message=message, data=outcome.url)
    return outcome.url


def run_artifacts(outcome, bounds) -> None:
    """A flow run's table artifact (``bounds``: the bounds at the cut-offs) and link artifact (the report).

    Outside a flow run (the in-process runner) there is no API to hold them: nothing is made.
    """
    if not in_flow_run():
        return
    from prefect.artifacts import create_link_artifact, create_table_artifact

    run_id = outcome.manifest["run_id"]
    publish_artifact(lambda: create_table_artifact(
        table=strict_json(bounds.to_dict(orient="records")), key="prdist-bounds",
        description=f"Precision bounds of run {run_id} at its guaranteed cut-offs and the powers of ten",
    ), what="prdist-bounds table", url=outcome.url)
    publish_artifact(lambda: create_link_artifact(
        link=redact_url(join_url(outcome.url, "report.html")), link_text=f"report of run {run_id}", key="prdist-report",
        description="The run's HTML report",
    ), what="prdist-report link", url=outcome.url)


def publish_artifact(create, *, what: str, url: str) -> bool:
    """Call ``create`` (one Prefect artifact of a committed run); a failure is one warning line, not the run's.

    The run directory ``url`` is committed before its artifacts are made, so a Prefect server that
    stops answering then (after Prefect's own retries) costs the artifact, never the run.
    """
    from prefect import get_run_logger

    try:
        create()
    except Exception as exc:  # the server's failure, whatever its kind: the run stands
        get_run_logger().warning("prdist: the %s artifact was not published (%s: %s); the run is committed at %s",
                                 what, type(exc).__name__, " ".join(str(exc).split()), redact_url(url))
        return False
    return True


def log_dashboard(client) -> None:
    """Log the Dask dashboard of ``client`` in the flow run's log, when there is one to link."""
    if client is None or not in_flow_run():
        return
    try:
        link = client.dashboard_link
    except KeyError:  # a scheduler that serves no dashboard
        link = None
    if link:
        from prefect import get_run_logger

        get_run_logger().info("Dask dashboard: %s", link)
