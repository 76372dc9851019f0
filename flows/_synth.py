"""The synthesize-resource flow's body: write a synthetic resource with known precision (a population score model).

The flow ``flows.synth.synthesize_resource`` is this body; the command line's in-process runner
(the demo's resource) calls it directly and then imports no Prefect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flows._policies import IO_RETRIES, step, unsealed
from prdist.dataflow.engine.cluster import dask_client
from prdist.dataflow.synth import model_from_description, write_synthetic

if TYPE_CHECKING:  # the storage options' annotation: resolved where Prefect wraps the body
    import pydantic  # (flows._policies.resolved_signature), never imported by an in-process run


@step(**IO_RETRIES)
def write_task(model, n: int, out: str, order: str, seed: int, partitions: int | None, storage_options: dict | None, scheduler: str | None,
               key_offset: int = 0, judge_accuracy: float | None = None) -> str:
    with dask_client(scheduler, items=n) as client:
        resource = write_synthetic(model, n=n, out=out, partitions=partitions, order=order, seed=seed, storage_options=storage_options, client=client,
                                   key_offset=key_offset, judge_accuracy=judge_accuracy)
    return resource.url


def synthesize_resource(model, n: int, out: str, order: str = "sorted", seed: int = 0, partitions: int | None = None, storage_options: dict | pydantic.SecretStr | None = None, scheduler: str | None = None,
                        key_offset: int = 0, judge_accuracy: float | None = None) -> str:
    """Write ``n`` items drawn from ``model`` to ``out``; return its URL.

    ``key_offset``: the keys are those of positions ``key_offset .. key_offset + n - 1``, so
    releases given disjoint ranges share no key (:func:`prdist.dataflow.synth.write_synthetic`).
    ``judge_accuracy``: add a ``judge`` column, a noisy copy of the label with that accuracy.

    ``model`` is a prdist.population model, or its JSON description ``{"family": ...,
    "parameters": ...}`` (the form deployments pass and synthetic resources record).
    """
    if isinstance(model, dict):
        model = model_from_description(model)
    return write_task(model, n, out, order, seed, partitions, unsealed(storage_options), scheduler, key_offset, judge_accuracy)
