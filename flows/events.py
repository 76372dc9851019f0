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
storage option is ever part of an event: Prefect keeps events in plain text. Runs, resources,
tasks, reports and stores on local disk are named by their absolute paths (:func:`event_place`),
whatever directory the command ran in.

**Once.** ``run.completed`` and ``run.awaiting-labels`` are sent once per run directory, and
``precision.changed`` once per change (series, run, changed ranks and directions), however many
attempts, reruns or ``prdist history`` commands meet them: each has an id derived from what it is
about (:func:`event_id`; a Prefect server stores one event per id) and, once sent, is recorded in
the ledger ``<runs root>/_events/<id>.json`` (create-only), which later senders read first.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import uuid


from flows._policies import in_flow_run, report_location
from flows._runner import configured_api, may_have_api
from prdist.dataflow.history import run_changes
from prdist.dataflow.run.steps import strict_json
from prdist.dataflow.io.publishing import write_bytes_exclusive
from prdist.dataflow.io.storage import filesystem, given_url, join_url
from prdist.dataflow.io.storage_errors import AlreadyExists, exists
from prdist.errors import PrdistError
from prdist.redaction import redact_url

__all__ = [
    "AWAITING_LABELS", "LABELS_IMPORTED", "PRECISION_CHANGED", "RUN_COMPLETED",
    "announce_changes", "announce_evaluation", "announce_labels", "announce_run", "event_place", "events_enabled",
]

RUN_COMPLETED = "prdist.run.completed"
AWAITING_LABELS = "prdist.run.awaiting-labels"
PRECISION_CHANGED = "prdist.precision.changed"
LABELS_IMPORTED = "prdist.labels.imported"

#: Seconds a command waits for its events to reach the server before it exits.
DELIVERY_TIMEOUT = 30.0

#: The ledger of events sent once, under a runs root: one small JSON file per event, named by its id.
LEDGER = "_events"

#: Namespace of the ids of events sent once: ``uuid5(EVENT_NAMESPACE, "<event>\\n<identity>")``.
EVENT_NAMESPACE = uuid.UUID("6f1d0c1e-2b47-5d0a-9c39-7d1f5e2a0b25")


def events_enabled() -> bool:
    """Whether events go anywhere: inside a flow run, or with a configured Prefect API."""
    return in_flow_run() or (may_have_api() and configured_api() is not None)


def _emit(name: str, resource: dict, payload: dict, related: list[dict] | None = None, event_id: uuid.UUID | None = None):
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker

    event = emit_event(name, resource=resource, payload=strict_json(payload), related=related or [], id=event_id)
    if not in_flow_run():
        # A command exits right after: deliver now rather than at interpreter exit.
        EventsWorker.drain_all(timeout=DELIVERY_TIMEOUT)
    return event


def event_id(name: str, identity: str) -> uuid.UUID:
    """The id of the event ``name`` about ``identity``: the same whoever sends it, however often.

    Examples
    --------
    >>> event_id(RUN_COMPLETED, "s3://prdist/runs/abc") == event_id(RUN_COMPLETED, "s3://prdist/runs/abc")
    True
    """
    return uuid.uuid5(EVENT_NAMESPACE, f"{name}\n{identity}")


def _emit_once(name: str, identity: str, resource: dict, payload: dict, related=None, *, runs: str, storage_options=None):
    """Send ``name`` about ``identity`` unless the ledger under ``runs`` records it sent; return it or None.

    The event's id is :func:`event_id`: senders racing each other send the same id, and a Prefect
    server stores one event per id (and its triggers act on an id once). After sending, the event
    is recorded create-only as ``<runs>/_events/<id>.json``, so that a later sender (a rerun that
    finds the committed run, the next ``prdist history``) sends nothing. A sender that fails
    between the two sends again next time, with the same id.
    """
    eid = event_id(name, identity)
    marker = join_url(runs, LEDGER, f"{eid}.json")
    fs, path = filesystem(marker, storage_options)
    if exists(fs, path, where=marker):
        return None
    event = _emit(name, resource, payload, related, event_id=eid)
    record = {"event": name, "id": str(eid), "identity": identity, "resource": resource.get("prefect.resource.id"),
              "sent": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    try:
        write_bytes_exclusive(marker, (json.dumps(record, sort_keys=True) + "\n").encode(), storage_options=storage_options)
    except AlreadyExists:
        pass  # a concurrent sender recorded it: the same id, stored once
    except (OSError, PrdistError) as exc:  # noqa: BLE001 (sent already: the record only prevents sending it again)
        _logger().warning("%s %s was sent but could not be recorded under %s (%s: %s); it may be sent again, with the "
                          "same id", name, eid, redact_url(given_url(runs)), type(exc).__name__, exc)
    return event


def _series_id(series: str) -> str:
    return f"prdist.series.{redact_url(series)}"


def event_place(url: str) -> str:
    """A run, resource, task or store as every event names it: a URL redacted, a local one as its
    absolute path (``file://`` dropped), so the run and the resource of one event are alike,
    whatever directory the command ran in.

    >>> event_place("s3://kb/runs/abc"), event_place("file:///data/kb"), event_place("/data/kb")
    ('s3://kb/runs/abc', '/data/kb', '/data/kb')
    """
    text = str(url).removeprefix("file://")
    return redact_url(text if "://" in text else os.path.abspath(text))


def announce_run(outcome, *, runs: str, storage_options=None) -> list:
    """``prdist.run.completed`` for a committed evaluation run, and ``awaiting-labels`` when it waits:
    each once per run (:func:`_emit_once`, recorded under ``runs``, the root the run is in).

    ``outcome`` is a :class:`prdist.dataflow.io.artifacts.RunOutcome`. Returns the events sent: none
    when an earlier attempt (the run that committed it, a rerun that found it) sent them.
    """
    if not events_enabled():
        return []
    m = outcome.manifest
    run, series = event_place(outcome.url), m.get("series")
    resource = {"prefect.resource.id": f"prdist.run.{m['run_id']}", "prefect.resource.name": run, "prdist.series": redact_url(series)}
    related = [{"prefect.resource.id": _series_id(series), "prefect.resource.role": "series"}]
    common = {"run_id": m["run_id"], "run": run, "resource": event_place(m["input"]["url"]), "series": series}
    once = dict(runs=runs, storage_options=storage_options)
    sent = [_emit_once(RUN_COMPLETED, run, resource, {
        **common, "report": report_location(join_url(run, "report.html")), "n": m["n"], "counts": m["counts"],
        "cutoffs": m.get("cutoffs", []), "awaiting_labels": outcome.missing, "reused": outcome.reused,
    }, related, **once)]  # fmt: skip
    if outcome.missing:
        task = outcome.task and report_location(event_place(outcome.task))
        sent.append(_emit_once(AWAITING_LABELS, run, resource, {**common, "count": outcome.missing, "task": task}, related, **once))
    return [event for event in sent if event is not None]


def announce_changes(series: str, rows, *, runs: str, storage_options=None) -> object:
    """``prdist.precision.changed`` for the certain changes ``rows`` of the newest release of ``series``.

    ``rows`` are rows of a history table (:data:`prdist.dataflow.history.HISTORY_COLUMNS`) of one
    run, each with a change; ``runs`` is the runs root they were read from. Sent once per change:
    the series, the run and its changed ranks with their directions (:func:`_emit_once`), whether
    the run itself or any number of ``prdist history`` commands find it. Returns the event, or
    None when it was sent before.
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
        "series": redact_url(series), "run_id": run_id, "run": event_place(join_url(given_url(runs), run_id)),
        "resource": event_place(str(rows["resource"].iloc[0])), "direction": direction,
        "ranks": [c["rank"] for c in changes], "changes": changes,
    }  # fmt: skip
    identity = json.dumps([redact_url(series), payload["run"], [[c["rank"], c["change"]] for c in changes]])
    return _emit_once(PRECISION_CHANGED, identity, resource, payload, runs=runs, storage_options=storage_options)


def announce_labels(store: str, *, count: int, keys: int, files: int) -> object:
    """``prdist.labels.imported``: ``count`` verdicts on ``keys`` keys from ``files`` files reached ``store``."""
    if not events_enabled():
        return None
    shown = event_place(store)  # a local store by its absolute path: what a deployment's trigger (PRDIST_LABELS) names
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
    sent = announce_run(outcome, runs=runs, storage_options=storage_options)
    if method != "paula" or outcome.reused:
        return sent
    series = outcome.manifest["series"]
    try:
        changes = run_changes(runs, outcome.manifest["run_id"], series, storage_options=storage_options)
    except Exception as exc:  # noqa: BLE001 (reported: an alert that cannot be computed must not undo the run)
        _logger().warning("no %s for series %s: its history could not be read (%s: %s)", PRECISION_CHANGED,
                          redact_url(series), type(exc).__name__, exc)
        return sent
    if changes is not None and (changed := announce_changes(series, changes, runs=runs, storage_options=storage_options)) is not None:
        sent.append(changed)
    return sent


def _logger():
    from prefect import get_run_logger

    return get_run_logger() if in_flow_run() else logging.getLogger("prdist")
