"""The evaluate-release flow's body: evaluate one release of a ranked resource.

open -> plan -> extract the planned items -> labels -> estimate -> (bands) -> write the run.
Wiring only: every step calls one function of ``prdist``. Steps are :func:`flows._policies.step`
tasks: task runs on Prefect (the flow ``flows.evaluate_release.evaluate_release`` is this body),
the plain functions when the command line runs the body in-process (``flows/_runner.py``), which
then imports no Prefect. The steps that compute drive Dask through a ``distributed.Client`` of one
cluster per run (started when first needed, none below the size where one pays); retries are on
the I/O steps only. The extraction of planned items (the expensive pass over the resource) is
staged as a Parquet file keyed by the input fingerprint and the parameters, so a rerun after a
crash or after labels arrive resumes there; the run itself is found by its id and not redone. On
Prefect, a lock per release and runs root (:func:`flows._policies.release_lock`) makes concurrent
attempts compute once: each looks for the committed run first, under the lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flows._awaiting import awaiting_releases, is_touched
from flows._policies import (
    IN_MEMORY,
    IO_RETRIES,
    conclude,
    log_dashboard,
    note,
    release_lock,
    release_lock_name,
    run_artifacts,
    step,
    subflow,
    unsealed,
)
from flows.release import current_release
from prdist import params as P
from prdist.frames.columns import column
from prdist.redaction import redact_url
from flows.events import announce_evaluation
from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.engine.cluster import dask_client, one_cluster
from prdist.dataflow.io.storage import Location, resolve, run_locations
from prdist.dataflow.io.artifacts import RunOutcome
from prdist.dataflow.run.steps import (
    committed_run,
    cutoff_bounds,
    exact_precision,
    extract_items,
    open_for_run,
    write_run,
)
from prdist.render.markdown import evaluation_markdown

if TYPE_CHECKING:  # the storage options' annotation: resolved where Prefect wraps the body
    import pydantic  # (flows._policies.resolved_signature), never imported by an in-process run


@step(**IO_RETRIES)
def open_resource_task(at: Location, key: str, score: str, oracle_column: str | None):
    return open_for_run(at, key=key, score=score, oracle_column=oracle_column)


@step(**IO_RETRIES)
def committed_task(resource, params: ev.EvaluationParams, out: Location, labels: Location | None, series: str | None) -> RunOutcome | None:
    return committed_run(resource, params, out=out, labels=labels, series=series)


@step(**IO_RETRIES)
def current_task(url: str, storage_options: dict | None) -> str:
    return current_release(url, storage_options=storage_options)


@step(**IO_RETRIES)
def touched_task(out: str, labels: str | None, storage_options: dict | None, key: str, score: str) -> list:
    releases = awaiting_releases(out, storage_options=storage_options)
    # The runs root and the label store resolved once for every release (each release's resource on its own).
    runs = resolve(out, storage_options=storage_options)
    store = None if labels is None else resolve(labels, storage_options=storage_options)
    touched = [r for r in releases if is_touched(r, out=runs, labels=store, storage_options=storage_options, key=key, score=score)]
    note(f"{len(releases)} release(s) under {redact_url(out)} await labels; the label store's verdicts change the plans of "
         f"{len(touched)}: {', '.join(redact_url(r.resource) for r in touched) or 'none'}")
    return touched


@step(**IN_MEMORY)
def plan_task(n: int, params: ev.EvaluationParams) -> ev.PlannedRanks:
    return ev.make_plan(n, params)


@step(**IO_RETRIES)
def extract_task(resource, ranks: np.ndarray, scheduler: str | None, staging: Location) -> Location:
    with dask_client(scheduler, items=resource.n) as client:
        log_dashboard(client)
        return extract_items(resource, ranks, client=client, staging=staging)


@step(**IO_RETRIES)
def labels_task(staged: Location, planned: ev.PlannedRanks, params: ev.EvaluationParams, store: Location | None):
    """The extracted items, the plan with its gold audit (drawn here when a judge column shapes
    it) and the items' labels."""
    from prdist.dataflow.run.steps import read_items

    extraction = read_items(staged)
    planned = ev.with_judge_audit(planned, extraction.items, params)
    return planned, extraction, ev.resolve_labels(extraction.items, oracle_column=params.oracle_column, store=store,
                                                  rule=params.aggregate, judge_column=params.judge_column,
                                                  audit=planned.in_audit)


@step(**IN_MEMORY)
def estimate_task(planned: ev.PlannedRanks, labels: np.ndarray, params: ev.EvaluationParams, gold: np.ndarray | None = None,
                  judge: np.ndarray | None = None) -> ev.Estimate:
    return ev.estimate(planned, labels, params, gold=gold, judge=judge)


@step(**IN_MEMORY)
def bands_task(planned: ev.PlannedRanks, items, labels: np.ndarray, params: ev.EvaluationParams, scheduler: str | None,
               settled: np.ndarray | None = None):
    if planned.in_band_arm is None:
        return None
    with dask_client(scheduler) as client:
        log_dashboard(client)
        return ev.bands(planned, items, labels, params, client=client, settled=settled)


@step(**IO_RETRIES)
def exact_task(resource, bounds_ranks: np.ndarray, items, scheduler: str | None):
    with dask_client(scheduler, items=resource.n) as client:
        return exact_precision(resource, bounds_ranks, items, client=client)


@step(**IO_RETRIES)
def write_task(resource, planned, extraction, resolution, estimate, params, out: Location, bands, exact, series: str | None) -> RunOutcome:
    return write_run(resource, planned, extraction, resolution, estimate, params, out=out, bands=bands, exact=exact, series=series)


def evaluate_release(
    resource: str,
    out: str = "prdist-runs",
    method: str = P.METHOD.default,
    eps: float = P.EPS.default,
    window: int = P.WINDOW.default,
    r_tilde: int | None = None,
    confidence: float | None = P.CONFIDENCE.default,
    labels: str | None = None,
    oracle_column: str | None = None,
    bands: bool = False,
    seed: int = P.SEED.default,
    scheduler: str | None = None,
    storage_options: dict | pydantic.SecretStr | None = None,
    key: str = "key",
    score: str = "score",
    aggregate: str = P.AGGREGATE.default,
    series: str | None = None,
    awaiting: bool = False,
    judge_column: str | None = None,
    gold_budget: int | None = None,
) -> str:
    """Evaluate the resource at ``resource`` and write one run directory under ``out``.

    Returns the run directory's URL. When planned labels are missing the flow still writes the
    whole run (status "awaiting labels") with conservative bounds plus ``annotation_task.csv``/``.jsonl``, and ends in
    the state named "AwaitingLabels". ``series`` names the line of releases the run belongs to
    (``prdist history``); default: the resource URL's parent. ``resource`` may be a release
    pointer written by ``prdist release --current`` (a ``.json`` file naming the series' current
    release): the release it names is evaluated. With ``awaiting`` (the on-labels deployment),
    every other release under ``out`` awaiting labels whose plan the label store's verdicts now
    change is evaluated again too, each as its own (sub)flow run (:mod:`flows._awaiting`).
    ``judge_column`` and ``gold_budget``: verdicts of known quality (``EvaluationParams``).
    The parameters' defaults and constraints are declared once, in :mod:`prdist.params`.
    """
    params = ev.EvaluationParams.of(locals())  # the arguments that decide the numbers, checked once here
    options = unsealed(storage_options)
    resource = current_task(resource, options)
    # Each URL through the one credentials gate, once: the resource, the runs root and the label
    # store each keep the credentials they were resolved with (the one --storage-options today).
    where = run_locations(resource, out, labels, storage_options=options)
    with one_cluster():  # one Dask cluster for every step of the run, started when first needed
        res = open_resource_task(where.resource, key, score, oracle_column)
        planned = plan_task(res.n, params)
        # One computation per release: concurrent attempts (announcements, a schedule and a
        # trigger, label imports) wait here; the first computes and commits, the others find its run.
        with release_lock(release_lock_name(out, res.fingerprint, ev.run_key(params))):
            outcome, bounds = committed_task(res, params, where.out, where.labels, series), None
            if outcome is None:
                outcome, bounds = _compute(res, planned, params, out=where.out, labels=where.labels, scheduler=scheduler,
                                           series=series)
    # Events for automations (none in-process without a Prefect API): the run, and a certain change.
    announce_evaluation(outcome, method=method, runs=where.out)
    run_artifacts(outcome, bounds)
    if awaiting:
        _evaluate_touched(out, labels, scheduler, storage_options, key, score)
    return conclude(outcome, summary=evaluation_markdown(outcome), artifact_key="prdist-evaluation", waiting_for="planned items")


def _compute(res, planned, params: ev.EvaluationParams, *, out: Location, labels: Location | None, scheduler: str | None,
             series: str | None):
    """Extract, label, estimate, (bands, exact precision), write: the run's outcome and its cut-off bounds."""
    staged = extract_task(res, planned.ranks, scheduler, ev.staging_url(out, res, params))
    planned, extraction, resolution = labels_task(staged, planned, params, labels)
    items = extraction.items
    est = estimate_task(planned, resolution.labels, params, resolution.certified_gold, resolution.judge)
    pr_bands = bands_task(planned, items, resolution.labels, params, scheduler, settled=resolution.kinds == "cannot_judge")
    # In simulation the truth is known: record the exact precision beside the bounds.
    exact = exact_task(res, column(est.bounds, "rank"), items, scheduler) if params.oracle_column else None
    outcome = write_task(res, planned, extraction, resolution, est, params, out, pr_bands, exact, series)
    return outcome, cutoff_bounds(est, res.n)


def _evaluate_touched(out: str, labels: str | None, scheduler: str | None, storage_options, key: str, score: str) -> list:
    """Evaluate again each release :func:`touched_task` finds: a subflow run each on Prefect, this body in-process."""
    evaluate = subflow("evaluate_release", "evaluate_release")
    return [
        evaluate(resource=r.resource, out=out, labels=labels, scheduler=scheduler, storage_options=storage_options, key=key,
                 score=score, series=r.series, **dict(r.parameters))
        for r in touched_task(out, labels, unsealed(storage_options), key, score)
    ]  # fmt: skip
