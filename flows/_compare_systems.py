"""The compare-systems flow's body: compare several systems (or releases) that share one label store.

The flow ``flows.compare_systems.compare_systems`` is this body; the command line's in-process
runner calls it directly and then imports no Prefect.

open -> (exhaustive sample) -> draw and join -> labels -> (item columns of the awaiting items)
-> estimate -> write the run.
Wiring only: every task calls one function of ``prdist.dataflow.compare``. The draw-and-join
task drives Dask through a ``distributed.Client`` itself; the draws are seeded, so a rerun once
labels arrive draws the same sample again (task results stay in memory: they hold data read from
input, which is never pickled to Prefect's result store). Retries are on the I/O tasks only. Missing labels end the flow in a Completed state named
"AwaitingLabels" whose result is the run directory holding the annotation task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flows._policies import IN_MEMORY, IO_RETRIES, conclude, step, unsealed
from prdist import params as P
from prdist.dataflow import compare as cmp
from prdist.dataflow.io.storage import Location, resolve
from prdist.dataflow.labels.unjudged import estimate_labeled
from prdist.dataflow.engine.cluster import dask_client, one_cluster
from prdist.importance import SamplingDistribution
from prdist.render.markdown import comparison_markdown

if TYPE_CHECKING:  # the storage options' annotation: resolved where Prefect wraps the body
    import pydantic  # (flows._policies.resolved_signature), never imported by an in-process run


@step(**IO_RETRIES)
def open_systems_task(systems: dict, storage_options: dict | None, key: str, score: str):
    return cmp.open_systems(systems, storage_options=storage_options, key=key, score=score)


@step(**IO_RETRIES)
def exhaustive_task(url: str, key_kind: str, storage_options: dict | None):
    return cmp.read_exhaustive(url, key_kind=key_kind, storage_options=storage_options)


@step(**IO_RETRIES)
def sample_task(systems, params: cmp.CompareParams, exhaustive, scheduler: str | None):
    with dask_client(scheduler, items=sum(s.resource.n for s in systems)) as client:
        return cmp.draw_sample(systems, params, extra_keys=None if exhaustive is None else exhaustive.keys, client=client)


@step(**IO_RETRIES)
def labels_task(drawn, store: Location | None, rule: str = "majority", params: cmp.CompareParams | None = None):
    audit = None if params is None else cmp.plan_key_audit(drawn, params)
    return cmp.attach_labels(drawn, store, rule=rule, audit=audit)


@step(**IO_RETRIES)
def items_task(systems, drawn, labeled, scheduler: str | None):
    with dask_client(scheduler, items=sum(s.resource.n for s in systems)) as client:
        return cmp.item_columns(systems, drawn, labeled.awaiting, client=client)


@step(**IN_MEMORY)
def estimate_task(labeled, drawn, params: cmp.CompareParams):
    by_verdicts = estimate_labeled(labeled, drawn, params, exhaustive_in_pool=drawn.extra_in_pool)
    if labeled.two_phase:  # a complete designed gold audit: the precision as gold says it
        return cmp.estimate_audited(labeled, by_verdicts, params)
    return by_verdicts


@step(**IO_RETRIES)
def write_task(systems, drawn, labeled, params, out: Location, estimates, store: Location | None, exhaustive, items=None):
    frame, diagnostics = estimates if estimates is not None else (None, None)
    return cmp.write_compare(systems, drawn, labeled, params, out=out, frame=frame, diagnostics=diagnostics,
                             labels=store, exhaustive=exhaustive, items=items)


def compare_systems(
    systems: dict[str, str],
    budget: int,
    out: str = "prdist-runs",
    labels: str | None = None,
    seed: int = P.SEED.default,
    distribution: str = P.DISTRIBUTION.default,
    k: int | None = None,
    power: float | None = None,
    allocation: str = P.ALLOCATION.default,
    weights: str = P.WEIGHTS.default,
    confidence: float = P.CONFIDENCE.default,
    exhaustive: str | None = None,
    scheduler: str | None = None,
    storage_options: dict | pydantic.SecretStr | None = None,
    key: str = "key",
    score: str = "score",
    aggregate: str = P.AGGREGATE.default,
    gold_budget: int | None = None,
) -> str:
    """Compare the systems ``{name: Parquet URL}`` under a total budget of draws; return the run directory.

    ``distribution`` is "uniform", "top_k" (with ``k``) or "score_power" (with ``power``). When
    drawn items lack labels the run holds ``annotation_task.csv``/``.jsonl`` and the flow ends in
    the state named "AwaitingLabels". ``gold_budget``: a designed gold audit of that many drawn
    keys (:func:`prdist.dataflow.compare.plan_key_audit`).
    """
    params = cmp.CompareParams(
        budget=budget, seed=seed, distribution=SamplingDistribution(distribution, k=k, power=power),
        allocation=allocation, weights=weights, confidence=confidence, gold_budget=gold_budget,
    )  # fmt: skip
    storage_options = unsealed(storage_options)
    # The runs root and the label store through the one credentials gate, once each; every system
    # is resolved as it is opened. All take the one --storage-options.
    out = resolve(out, storage_options=storage_options)
    labels = None if labels is None else resolve(labels, storage_options=storage_options)
    opened = open_systems_task(systems, storage_options, key, score)
    sample_of = None
    if exhaustive is not None:
        sample_of = exhaustive_task(exhaustive, opened[0].resource.key_kind, storage_options)
    with one_cluster():  # the draw and the item columns share one Dask cluster, started when first needed
        drawn = sample_task(opened, params, sample_of, scheduler)
        labeled = labels_task(drawn, labels, aggregate, params)
        # What an annotator reads about each awaiting item: read only when some item awaits.
        items = items_task(opened, drawn, labeled, scheduler) if labeled.missing else None
    estimates = estimate_task(labeled, drawn, params) if labeled.missing == 0 else None
    outcome = write_task(opened, drawn, labeled, params, out, estimates, labels, sample_of, items)
    return conclude(outcome, summary=comparison_markdown(outcome), artifact_key="prdist-comparison", waiting_for="drawn items")
