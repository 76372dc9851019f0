"""Task policies shared by the flows, and :func:`step`, the task decorator that runs with or without Prefect.

Importing this module (and the flow bodies built on it) does not import Prefect: the in-process
runner never needs it, and it costs most of a small run's start-up. Prefect is imported where a
flow run uses it: a step's task, an artifact, a state.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import sys
import time

from prdist.dataflow.run.steps import strict_json
from prdist.dataflow.io.storage import join_url
from prdist.dataflow.io.storage_errors import StorageUnavailable, is_permanent
from prdist.errors import PrdistError
from prdist.redaction import redact_url
from prdist.render.terminal import awaiting_message, counts_message


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

# A flow run that fails for a transient reason (an object store down for longer than a step's
# retries, ~45 s) runs again after a minute, twice: an outage of up to ~4 min recovers by itself,
# and the rerun resumes from the staged extraction and finds a committed run. Bad input is not
# retried (:func:`final_on_bad_input`). A flow run (not the in-process runner) lasting longer than
# FLOW_TIMEOUT fails "TimedOut" (and is retried like any failure): nothing runs forever. The
# largest measured run, 10^9 items, took 25 s; the bound is for slow stores and far larger data.
FLOW_RETRIES = dict(retries=2, retry_delay_seconds=60)
FLOW_TIMEOUT = dict(timeout_seconds=6 * 3600)


def final_on_bad_input(body):
    """A flow's ``body`` whose failures on bad input Prefect does not retry.

    Prefect retries a failed flow run whatever the exception (a flow has no retry condition);
    bad input (:func:`is_transient` false) fails the same way every time, so before such an
    exception leaves a flow run, its retries are set to 0 on the server.
    """

    @functools.wraps(body)
    def flow_body(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except Exception as exc:
            if not is_transient(exc) and in_flow_run():
                _no_more_retries()
            raise

    flow_body.__signature__ = resolved_signature(body)
    return flow_body


def as_flow_body(body):
    """``body`` with the signature Prefect reads its parameters from (:func:`resolved_signature`)."""

    @functools.wraps(body)
    def flow_body(*args, **kwargs):
        return body(*args, **kwargs)

    flow_body.__signature__ = resolved_signature(body)
    return flow_body


def resolved_signature(body) -> inspect.Signature:
    """``body``'s signature with its annotations resolved, as a flow's parameters are read.

    Prefect reads a flow's parameters from its signature and would resolve string annotations in
    the function's module; a wrapper lives in another module, so they come resolved. The bodies
    name ``pydantic.SecretStr`` (the sealed storage options) without importing pydantic, which
    Prefect has loaded already and an in-process run, which calls a body directly, never needs.
    """
    import pydantic

    return inspect.signature(body, eval_str=True, globals={**body.__globals__, "pydantic": pydantic})


def _no_more_retries() -> None:
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    run = FlowRunContext.get().flow_run
    with get_client(sync_client=True) as client:
        client.update_flow_run(run.id, empirical_policy=run.empirical_policy.model_copy(update={"retries": 0}))


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


def note(message: str) -> None:
    """Log ``message`` in the flow run's log (Prefect's run logger), or on the ``prdist`` logger outside one."""
    import logging

    if in_flow_run():
        from prefect import get_run_logger

        get_run_logger().info(message)
    else:
        logging.getLogger("prdist").info(message)


def subflow(module: str, name: str):
    """The flow ``flows.<module>.<name>`` inside a flow run (a call makes a subflow run), else its
    body ``flows._<module>.<name>`` (a plain call, no Prefect)."""
    import importlib

    return getattr(importlib.import_module(f"flows.{module}" if in_flow_run() else f"flows._{module}"), name)


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
    if "kind" not in outcome.manifest:  # an evaluation (a comparison's manifest says "kind": "compare")
        logger.info(counts_message(outcome))
    logger.info("run directory: %s", outcome.url)
    if outcome.missing:
        logger.warning(message)
        return Completed(name="AwaitingLabels", message=message, data=outcome.url)
    return outcome.url


#: The variable that maps run directories on an object store to the web address serving them.
REPORT_BASE_VARIABLE = "PRDIST_REPORT_BASE_URL"


def report_location(url: str) -> str:
    """``url`` (a run's report or task) as a web address when ``PRDIST_REPORT_BASE_URL`` maps it.

    ``PRDIST_REPORT_BASE_URL`` is ``PREFIX=BASE``, e.g.
    ``s3://prdist=https://s3.example.org/prdist``: a URL under PREFIX is BASE followed by the rest.
    Any other URL is returned as it is.

    Examples
    --------
    >>> os.environ[REPORT_BASE_VARIABLE] = "s3://prdist/runs=https://reports.example.org/runs"
    >>> report_location("s3://prdist/runs/abc/report.html")
    'https://reports.example.org/runs/abc/report.html'
    >>> report_location("s3://other/abc/report.html")
    's3://other/abc/report.html'
    >>> del os.environ[REPORT_BASE_VARIABLE]
    """
    prefix, base = _report_base()
    if prefix is None or not (url == prefix or url.startswith(prefix + "/")):
        return url
    return base + url[len(prefix):]


def _report_base() -> tuple[str | None, str | None]:
    value = os.environ.get(REPORT_BASE_VARIABLE, "").strip()
    if not value:
        return None, None
    prefix, sep, base = value.partition("=")
    if not sep or "://" not in prefix or not base.startswith(("http://", "https://")):
        from prdist.errors import InputError

        raise InputError(
            f"{REPORT_BASE_VARIABLE} must be PREFIX=BASE, a storage prefix and the http(s) address serving it, "
            f"e.g. s3://prdist=https://s3.example.org/prdist. Got {redact_url(value)!r}."
        )
    return prefix.rstrip("/"), base.rstrip("/")


def run_artifacts(outcome, bounds) -> None:
    """A flow run's table artifact (``bounds``: the bounds at the cut-offs; None for a run found
    committed, whose own flow run holds them) and its report artifact.

    The report is a link artifact when a browser can open it (an http(s) address, also through
    ``PRDIST_REPORT_BASE_URL``, or a local file); an object-store location (``s3://...``) is
    shown as such, in a markdown artifact that says how to make it a link. Outside a flow run
    (the in-process runner) there is no API to hold them: nothing is made.
    """
    if not in_flow_run():
        return
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    run_id = outcome.manifest["run_id"]
    if bounds is not None:
        publish_artifact(lambda: create_table_artifact(
            table=strict_json(bounds.to_pylist()), key="prdist-bounds",
            description=f"Precision bounds of run {run_id} at its guaranteed cut-offs and the powers of ten",
        ), what="prdist-bounds table", url=outcome.url)
    report = report_location(redact_url(join_url(outcome.url, "report.html")))
    description = "The run's HTML report"
    if report.startswith(("http://", "https://", "file://", "/")):
        publish_artifact(lambda: create_link_artifact(link=report, link_text=f"report of run {run_id}", key="prdist-report",
                                                      description=description), what="prdist-report link", url=outcome.url)
    else:
        publish_artifact(lambda: create_markdown_artifact(key="prdist-report", description=description, markdown=(
            f"The report of run {run_id} is the object `{report}` on the object store: not a web address a browser "
            f"opens. Copy it out, or set {REPORT_BASE_VARIABLE}=PREFIX=BASE in the flow runs' environment (e.g. "
            f"s3://prdist=https://s3.example.org/prdist) to link the reports here.")),  # fmt: skip
            what="prdist-report note", url=outcome.url)


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


def _scheduler_serves_dashboard(dask_scheduler=None) -> bool:
    """Run on the scheduler: whether its dashboard works there (Dask serves it with bokeh only)."""
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def dashboard_link(client) -> str | None:
    """The Dask dashboard of ``client``'s scheduler when it serves one that works, else None.

    Without bokeh on the scheduler, Dask still announces a dashboard address whose pages only
    say "Dask needs bokeh>=3.1.0": that is not a link to give anyone. The scheduler is asked
    (a scheduler that cannot answer, e.g. one without prdist installed, counts as serving none).
    """
    try:
        link = client.dashboard_link
    except KeyError:  # a scheduler that serves no dashboard
        return None
    if not link:
        return None
    try:
        working = client.run_on_scheduler(_scheduler_serves_dashboard)
    except Exception:  # noqa: BLE001 (only decides whether a link is logged)
        return None
    return link if working else None


def log_dashboard(client) -> None:
    """Log the Dask dashboard of ``client`` in the flow run's log, when there is one that works."""
    if client is None or not in_flow_run():
        return
    link = dashboard_link(client)
    if link:
        from prefect import get_run_logger

        get_run_logger().info("Dask dashboard: %s", link)


#: Seconds a release's lock outlives a holder that stopped renewing it (a killed flow run); the
#: server's repossessor then frees it within about 15 s more. Prefect's minimum lease.
LOCK_LEASE_SECONDS = 60


def release_lock_name(out: str, fingerprint: str, run_key: str) -> str:
    """The name of the lock of one computation: the runs root, the release's fingerprint, the parameters.

    Examples
    --------
    >>> name = release_lock_name("s3://prdist/runs", "f" * 64, "k1")
    >>> name.startswith("prdist-run-"), len(name), name == release_lock_name("s3://prdist/runs", "f" * 64, "k1")
    (True, 35, True)
    """
    import hashlib

    return "prdist-run-" + hashlib.sha256(json.dumps([out, fingerprint, run_key]).encode()).hexdigest()[:24]


@contextlib.contextmanager
def release_lock(name: str):
    """Hold the lock ``name`` (:func:`release_lock_name`) while a release is computed and committed.

    In a flow run it is a Prefect global concurrency limit of one slot (created when missing),
    held on a lease the flow run renews: every flow run of every worker on every host that talks
    to the same Prefect server waits for it, and a holder that dies frees it when its lease
    lapses (:data:`LOCK_LEASE_SECONDS`). Outside a flow run (the in-process runner, no server) it
    holds nothing: concurrent attempts then compute twice, and the create-only commit keeps one.
    """
    if not in_flow_run():
        yield
        return
    from prefect import get_run_logger
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.concurrency.sync import concurrency
    from prefect.exceptions import ObjectAlreadyExists

    logger = get_run_logger()
    with get_client(sync_client=True) as client:
        with contextlib.suppress(ObjectAlreadyExists):
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
        if client.read_global_concurrency_limit_by_name(name).active_slots:
            logger.info("another run of this release holds %s: waiting for it", name)
    started = time.monotonic()
    with concurrency(name, occupy=1, lease_duration=LOCK_LEASE_SECONDS, strict=True):
        logger.info("holding %s (acquired in %.1f s)", name, time.monotonic() - started)
        yield
