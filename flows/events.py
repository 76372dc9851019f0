"""prdist's events, sent through Prefect's event API for automations to act on.

=============================  ==================================  =====================================
event                          resource id                         payload
=============================  ==================================  =====================================
``prdist.run.completed``       ``prdist.run.<run id>``             run, report, resource, series, n,
                                                                   counts, cut-offs, awaiting, reused
``prdist.run.awaiting-labels`` ``prdist.run.<run id>``             run, resource, series, count, task
``prdist.precision.changed``   ``prdist.series.<series>``          run, resource, series, direction,
                                                                   changes (rank, change, bounds)
``prdist.labels.imported``     ``prdist.labels.<store URL>``       store, count, keys, files
=============================  ==================================  =====================================

So that an automation's ``match`` can pick events without reading payloads, the resource of a
run event carries the label ``prdist.series`` (and names the series as a related resource), and
that of ``precision.changed`` the label ``prdist.direction``: ``down``, ``up`` or ``mixed``.

Events are sent only where a Prefect API is: inside a flow run, or when one is configured
(``PREFECT_API_URL`` or a profile). The in-process runner without one emits nothing and never
starts Prefect's temporary server. URLs pass through :func:`prdist.redaction.redact_url`, and no
storage option is ever part of an event: Prefect keeps events in plain text.
"""

from __future__ import annotations

import logging
import os

import pandas as pd

from flows._policies import in_flow_run
from flows._runner import configured_api, may_have_api
from prdist.dataflow.history import run_changes
from prdist.dataflow.run import strict_json
from prdist.dataflow.storage import join_url
from prdist.redaction import redact_url

__all__ = [
    "AWAITING_LABELS", "LABELS_IMPORTED", "PRECISION_CHANGED", "RUN_COMPLETED",
    "announce_changes", "announce_evaluation", "announce_labels", "announce_run", "events_enabled",
]

RUN_COMPLETED = "prdist.run.completed"
AWAITING_LABELS = "prdist.run.awaiting-labels"
PRECISION_CHANGED = "prdist.precision.changed"
LABELS_IMPORTED = "prdist.labels.imported"

#: Seconds a command waits for its events to reach the server before it exits.
DELIVERY_TIMEOUT = 30.0


def events_enabled() -> bool:
    """Whether events go anywhere: inside a flow run, or with a configured Prefect API."""
    return in_flow_run() or (may_have_api() and configured_api() is not None)


def _emit(name: str, resource: dict, payload: dict, related: list[dict] | None = None):
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker

    event = emit_event(name, resource=resource, payload=strict_json(payload), related=related or [])
    if not in_flow_run():
        # A command exits right after: deliver now rather than at interpreter exit.
        EventsWorker.drain_all(timeout=DELIVERY_TIMEOUT)
    return event


def _series_id(series: str) -> str:
    return f"prdist.series.{redact_url(series)}"


def announce_run(outcome) -> list:
    """``prdist.run.completed`` for a committed evaluation run, and ``awaiting-labels`` when it waits.

    ``outcome`` is a :class:`prdist.dataflow.artifacts.RunOutcome`. Returns the events sent.
    """
    if not events_enabled():
        return []
    m = outcome.manifest
    run, series = redact_url(outcome.url), m.get("series")
    resource = {"prefect.resource.id": f"prdist.run.{m['run_id']}", "prefect.resource.name": run, "prdist.series": redact_url(series)}
    related = [{"prefect.resource.id": _series_id(series), "prefect.resource.role": "series"}]
    common = {"run_id": m["run_id"], "run": run, "resource": redact_url(m["input"]["url"]), "series": series}
    sent = [_emit(RUN_COMPLETED, resource, {
        **common, "report": join_url(run, "report.html"), "n": m["n"], "counts": m["counts"],
        "cutoffs": m.get("cutoffs", []), "awaiting_labels": outcome.missing, "reused": outcome.reused,
    }, related)]  # fmt: skip
    if outcome.missing:
        task = outcome.task and redact_url(outcome.task)
        sent.append(_emit(AWAITING_LABELS, resource, {**common, "count": outcome.missing, "task": task}, related))
    return sent


def announce_changes(series: str, rows: pd.DataFrame, *, runs: str) -> object:
    """``prdist.precision.changed`` for the certain changes ``rows`` of the newest release of ``series``.

    ``rows`` are rows of a history table (:data:`prdist.dataflow.history.HISTORY_COLUMNS`) of one
    run, each with a change; ``runs`` is the runs root they were read from.
    """
    if not events_enabled():
        return None
    directions = sorted(set(rows["change"]))
    direction = directions[0] if len(directions) == 1 else "mixed"
    run_id = str(rows["run_id"].iloc[0])
    changes = [
        {"rank": int(r.rank), "change": r.change, "precision_lower": r.precision_lower, "precision_upper": r.precision_upper}
        for r in rows.itertuples()
    ]  # fmt: skip
    resource = {"prefect.resource.id": _series_id(series), "prefect.resource.name": redact_url(series), "prdist.direction": direction}
    payload = {
        "series": redact_url(series), "run_id": run_id, "run": redact_url(join_url(runs, run_id)),
        "resource": redact_url(str(rows["resource"].iloc[0])), "direction": direction,
        "ranks": [c["rank"] for c in changes], "changes": changes,
    }  # fmt: skip
    return _emit(PRECISION_CHANGED, resource, payload)


def announce_labels(store: str, *, count: int, keys: int, files: int) -> object:
    """``prdist.labels.imported``: ``count`` verdicts on ``keys`` keys from ``files`` files reached ``store``."""
    if not events_enabled():
        return None
    # A local store by its absolute path: what a deployment's trigger (PRDIST_LABELS) names.
    shown = redact_url(store if "://" in store else os.path.abspath(store))
    resource = {"prefect.resource.id": f"prdist.labels.{shown}", "prefect.resource.name": shown}
    return _emit(LABELS_IMPORTED, resource, {"store": shown, "count": count, "keys": keys, "files": files})


def announce_evaluation(outcome, *, method: str, runs: str, storage_options=None) -> list:
    """The events of an evaluation run: :func:`announce_run`, then ``precision.changed`` when the
    run is a new PAULA run, the newest release of its series, and certainly changes its precision.

    The comparison reads the series' last two releases under ``runs``
    (:func:`prdist.dataflow.history.run_changes`). It only informs: when it cannot be made (another
    run under ``runs`` is unreadable), a warning says so and the run stands.
    """
    if not events_enabled():
        return []
    sent = announce_run(outcome)
    if method != "paula" or outcome.reused:
        return sent
    series = outcome.manifest["series"]
    try:
        changes = run_changes(runs, outcome.manifest["run_id"], series, storage_options=storage_options)
    except Exception as exc:  # noqa: BLE001 (reported: an alert that cannot be computed must not undo the run)
        _logger().warning("no %s for series %s: its history could not be read (%s: %s)", PRECISION_CHANGED,
                          redact_url(series), type(exc).__name__, exc)
        return sent
    if changes is not None:
        sent.append(announce_changes(series, changes, runs=runs))
    return sent


def _logger():
    from prefect import get_run_logger

    return get_run_logger() if in_flow_run() else logging.getLogger("prdist")
