"""Which releases a label import touches: the runs awaiting labels whose plans the store now changes.

The rule of ``evaluate-release/on-labels`` (``awaiting=True``): every release with a committed run
under the runs root that awaits labels is looked at again; it is evaluated again when the label
store's verdicts on its planned keys are no longer those its latest run used, i.e. when the run
these inputs make now is not committed (:func:`prdist.dataflow.run.steps.committed_run`). Releases no
verdict touched are left alone, and nothing is computed to tell: the staged extraction gives the
planned keys, the store their verdicts. Every awaiting run is taken to read the label store it is
checked against (the deployment's ``PRDIST_LABELS`` for the deployment's ``PRDIST_RUNS``).

Imports no Prefect: the flow body (``flows/_evaluate_release.py``) calls it on either runner.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from prdist.dataflow.run import evaluate as ev
from prdist.dataflow.io.artifacts import MANIFEST
from prdist.dataflow.history import readable_run
from prdist.dataflow.run.steps import committed_run, open_for_run
from prdist.dataflow.io.storage import filesystem, run_locations
from prdist.dataflow.io.storage_errors import exists

__all__ = ["FLOW_PARAMETERS", "AwaitingRelease", "awaiting_releases", "is_touched"]

#: The evaluation parameters an evaluate-release flow run takes; a run made with others (through
#: the Python API) cannot be made again by the flow and is left to its maker.
FLOW_PARAMETERS = ("method", "eps", "window", "r_tilde", "confidence", "seed", "oracle_column", "bands", "aggregate",
                   "judge_column", "gold_budget")


@dataclass(frozen=True)
class AwaitingRelease:
    """A release whose latest committed run under a runs root awaits labels.

    ``parameters`` are the flow parameters (:data:`FLOW_PARAMETERS`) that made the run, as a
    tuple of (name, value) pairs.
    """

    resource: str
    series: str
    parameters: tuple
    run: str

    @property
    def params(self) -> ev.EvaluationParams:
        return ev.EvaluationParams(**dict(self.parameters))


def awaiting_releases(out: str, *, storage_options=None) -> list[AwaitingRelease]:
    """The distinct (resource, parameters, series) of the committed runs under ``out`` that await labels."""
    fs, root = filesystem(out, storage_options)
    if not exists(fs, root, where=out):
        return []
    found: dict[tuple, AwaitingRelease] = {}
    for path in sorted(fs.glob(posixpath.join(root, "*", MANIFEST))):
        manifest = readable_run(fs, path)
        if manifest is None:
            continue  # a damaged run directory: `prdist history` names it; nothing to re-evaluate
        if manifest.get("kind") == "compare" or not manifest.get("awaiting_labels"):
            continue  # a comparison, or a run with every planned verdict
        # A parameter the manifest leaves out had no effect on the run and took its default.
        parameters = tuple((name, manifest["params"][name]) for name in FLOW_PARAMETERS if name in manifest["params"])
        if json.loads(json.dumps(ev.EvaluationParams(**dict(parameters)).to_dict())) != manifest["params"]:
            continue
        release = AwaitingRelease(manifest["input"]["url"], manifest["series"], parameters, posixpath.dirname(path))
        found.setdefault((release.resource, release.series, parameters), release)
    return list(found.values())


def is_touched(release: AwaitingRelease, *, out: str, labels: str | None, storage_options=None, key: str = "key",
               score: str = "score") -> bool:
    """Whether the verdicts in ``labels`` change what ``release``'s plan is labeled with (or its data changed)."""
    params = release.params
    where = run_locations(release.resource, out, labels, storage_options=storage_options)
    resource = open_for_run(where.resource, key=key, score=score, oracle_column=params.oracle_column)
    return committed_run(resource, params, out=where.out, labels=where.labels, series=release.series) is None
