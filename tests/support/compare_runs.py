"""The compare-systems flow on the in-process runner (the command line's default), for tests."""

from __future__ import annotations

import json

from flows._runner import run_flow
from prdist.dataflow.io.artifacts import RunOutcome
from prdist.dataflow.io.storage import filesystem, join_url


def compare_in_process(systems, *, out: str, params, labels: str | None = None, exhaustive: str | None = None,
                       storage_options: dict | None = None, scheduler: str | None = None) -> RunOutcome:
    """Run ``compare_systems`` in-process for ``params`` (a CompareParams); its run as a RunOutcome."""
    d = params.distribution
    done = run_flow("compare_systems", "compare_systems", dict(
        systems=dict(systems), budget=params.budget, out=out, labels=labels, seed=params.seed,
        distribution=d.kind, k=d.k, power=d.power, allocation=params.allocation, weights=params.weights,
        confidence=params.confidence, exhaustive=exhaustive, scheduler=scheduler, storage_options=storage_options,
    ), on_prefect=False)  # fmt: skip
    fs, path = filesystem(join_url(done.url, "manifest.json"), storage_options)
    with fs.open(path, "rb") as fh:
        manifest = json.load(fh)
    return RunOutcome(done.url, manifest, manifest["counts"]["unknown"], manifest.get("annotation_task"))
