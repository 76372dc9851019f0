"""Announce a release: the ``prdist.release.published`` event behind ``prdist release``.

A Prefect server that runs the deployments of ``deploy/prefect.yaml`` starts
``evaluate-release/on-release`` for every event named :data:`EVENT` whose resource id starts with
:data:`RESOURCE_PREFIX`; the trigger passes ``payload.resource`` (and ``payload.labels`` and
``payload.out`` when they are set) as the flow's parameters.

The event carries URLs only. Credentials never travel in it: Prefect stores events and flow-run
parameters in plain text and shows them in its UI, so a URL with embedded credentials
(``user:password@``, a signed query) is refused, and storage options are not an input at all —
the worker that runs the flow takes its credentials from its own environment.

Like :mod:`prdist.cli`, this module sits above the layers: building an event needs only the
standard library; sending one imports Prefect.
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from prdist.redaction import redact_url, refuse_credentials
from prdist.errors import DataError, InputError, ParameterError

__all__ = ["EVENT", "POINTER_SUFFIX", "RESOURCE_PREFIX", "ReleaseEvent", "current_release", "emit_release", "release_event",
           "write_current"]

#: Name of the event a trigger of ``deploy/prefect.yaml`` listens for.
EVENT = "prdist.release.published"

#: Prefix of the event's resource id; the rest is the resource URL.
RESOURCE_PREFIX = "prdist.resource."

#: How a release pointer's name ends: ``prdist release --current POINTER`` writes one, and an
#: evaluation whose ``resource`` names one evaluates the release it names.
POINTER_SUFFIX = ".json"

#: Seconds to wait for the server to answer (health check, websocket connection).
_TIMEOUT = 10.0


@dataclass(frozen=True)
class ReleaseEvent:
    """A ``prdist.release.published`` event, ready to send.

    Attributes
    ----------
    resource : str
        URL of the released resource (a Parquet dataset).
    labels : str or None
        Label store the triggered run reads; None leaves the deployment's.
    out : str or None
        Root of the run directories; None leaves the deployment's.
    id : uuid.UUID
        The event id (the server keeps one event per id).
    occurred : datetime.datetime
        When the release was announced (UTC).
    """

    resource: str
    labels: str | None
    out: str | None
    id: uuid.UUID
    occurred: datetime.datetime

    @property
    def name(self) -> str:
        """The event name, :data:`EVENT`."""
        return EVENT

    def to_dict(self) -> dict:
        """The event as Prefect's event schema, JSON-ready.

        ``[event.to_dict()]`` is the body ``POST <api>/events`` of a Prefect server accepts.
        ``labels`` and ``out`` are always present (null when unset): the trigger's templates read
        them by name.

        Examples
        --------
        >>> import datetime, uuid
        >>> event = release_event("s3://releases/kb-2026-08", event_id=uuid.UUID(int=1),
        ...                       occurred=datetime.datetime(2026, 8, 1, tzinfo=datetime.timezone.utc))
        >>> body = event.to_dict()
        >>> body["event"], body["resource"]["prefect.resource.id"]
        ('prdist.release.published', 'prdist.resource.s3://releases/kb-2026-08')
        >>> body["payload"]
        {'resource': 's3://releases/kb-2026-08', 'labels': None, 'out': None}
        >>> body["occurred"]
        '2026-08-01T00:00:00+00:00'
        """
        return {
            "id": str(self.id),
            "occurred": self.occurred.isoformat(),
            "event": EVENT,
            "resource": {
                "prefect.resource.id": RESOURCE_PREFIX + self.resource,
                "prefect.resource.name": self.resource,
            },
            "related": [],
            "payload": {"resource": self.resource, "labels": self.labels, "out": self.out},
        }


def _check_url(value, *, option: str, owner: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"The {option!r} parameter of {owner} must be a path or URL. Got {value!r} instead.")
    if value != value.strip() or any(ch in value for ch in "\r\n\t"):
        raise ParameterError(
            f"The {option!r} parameter of {owner} must not contain surrounding blanks or line breaks. "
            f"Got {redact_url(value)!r} instead."
        )
    # Prefect keeps events and parameters in plain text: refuse instead of sending a secret (the
    # worker that runs the flow reads storage credentials from its own environment).
    refuse_credentials(value, what=option)
    if "://" not in value and not os.path.isabs(value):
        raise InputError(
            f"{option} {value!r} is a relative path, which means nothing to a worker with another "
            f"working directory. Pass an absolute path (e.g. {os.path.abspath(value)!r}) or a URL "
            "such as s3://bucket/prefix."
        )
    return value


def release_event(resource, *, labels=None, out=None, event_id=None, occurred=None) -> ReleaseEvent:
    """Build the event that announces a release of ``resource``.

    Parameters
    ----------
    resource : str
        URL of the released resource: an absolute path or an fsspec URL (``s3://bucket/prefix``).
    labels : str, optional
        Label store for the triggered run. Default: the on-release deployment's.
    out : str, optional
        Root of the run directories for the triggered run. Default: the deployment's.
    event_id : uuid.UUID, optional
        Default: a random UUID. Pass a fixed one to make a retried announcement idempotent.
    occurred : datetime.datetime, optional
        Timezone-aware time of the release. Default: now (UTC).

    Returns
    -------
    ReleaseEvent

    Raises
    ------
    ParameterError
        A URL that is empty, not a string, or has surrounding blanks; a naive ``occurred``.
    InputError
        A URL that embeds credentials, or a relative path.

    Examples
    --------
    >>> event = release_event("s3://releases/kb-2026-08", labels="s3://prdist/labels")
    >>> event.name, event.resource, event.labels, event.out
    ('prdist.release.published', 's3://releases/kb-2026-08', 's3://prdist/labels', None)
    """
    owner = "release_event"
    resource = _check_url(resource, option="--resource", owner=owner)
    if labels is not None:
        labels = _check_url(labels, option="--labels", owner=owner)
    if out is not None:
        out = _check_url(out, option="--out", owner=owner)
    if event_id is None:
        event_id = uuid.uuid4()
    elif not isinstance(event_id, uuid.UUID):
        raise ParameterError(f"The 'event_id' parameter of {owner} must be a uuid.UUID. Got {event_id!r} instead.")
    if occurred is None:
        occurred = datetime.datetime.now(datetime.timezone.utc)
    elif not isinstance(occurred, datetime.datetime) or occurred.utcoffset() is None:
        raise ParameterError(
            f"The 'occurred' parameter of {owner} must be a timezone-aware datetime. Got {occurred!r} instead."
        )
    return ReleaseEvent(resource=resource, labels=labels, out=out, id=event_id, occurred=occurred)


def _api_url(api_url) -> str:
    from prefect.settings import PREFECT_API_URL

    url = api_url if api_url is not None else PREFECT_API_URL.value()
    if not url:
        raise InputError(
            "No Prefect API to announce the release to. Pass --api-url http://HOST:4200/api or set "
            "PREFECT_API_URL (e.g. 'prefect config set PREFECT_API_URL=http://127.0.0.1:4200/api'). "
            "Only a running server ('prefect server start') has the trigger that starts the run."
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--api-url must be an http(s) URL such as http://127.0.0.1:4200/api. Got {redact_url(url)!r}.")
    return url


async def _send(event: ReleaseEvent) -> None:
    from prefect.events import Event
    from prefect.events.clients import get_events_client

    # checkpoint_every=1: after sending, the client pings the server and waits for the pong, so
    # the event has reached the server when emit() returns (Prefect's own delivery confirmation).
    async with get_events_client(reconnection_attempts=2, checkpoint_every=1) as client:
        await client.emit(Event.model_validate(event.to_dict()))


def emit_release(event: ReleaseEvent, *, api_url=None) -> str:
    """Send ``event`` to a Prefect server and return the API URL it went to.

    Parameters
    ----------
    event : ReleaseEvent
        From :func:`release_event`.
    api_url : str, optional
        The Prefect API (``http://HOST:4200/api``). Default: the ``PREFECT_API_URL`` setting.

    Raises
    ------
    InputError
        No API configured, or the server does not answer its health check.
    """
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if not isinstance(event, ReleaseEvent):
        raise ParameterError(f"The 'event' parameter of emit_release must be a ReleaseEvent. Got {event!r} instead.")
    url = _api_url(api_url)
    shown = redact_url(url)
    with temporary_settings(updates={PREFECT_API_URL: url}):
        # Check first: the events client would otherwise retry silently and log, not fail.
        with get_client(sync_client=True, httpx_settings={"timeout": _TIMEOUT}) as client:
            problem = client.api_healthcheck()
        if problem is not None:
            raise InputError(
                f"The Prefect API at {shown} does not answer ({type(problem).__name__}: {problem}). "
                "Start the server ('prefect server start') or fix --api-url / PREFECT_API_URL."
            )
        from websockets.exceptions import WebSocketException

        try:
            asyncio.run(asyncio.wait_for(_send(event), timeout=3 * _TIMEOUT))
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise InputError(
                f"The Prefect API at {shown} answered its health check but refused the event stream "
                f"({type(exc).__name__}: {exc}). Check that websockets reach {shown}/events/in."
            ) from None
    return shown


def write_current(pointer: str, resource: str, *, storage_options=None) -> dict:
    """Publish ``resource`` as the current release of its series: write the pointer file ``pointer``.

    The pointer is a small JSON object ``{"resource": URL, "published": ISO time}``, replaced
    whole (a reader sees the old one or the new one). A deployment whose ``resource`` is the
    pointer (``PRDIST_RESOURCE=s3://prdist/releases/current.json``) evaluates the release it
    names at each run (:func:`current_release`). Returns the object written.

    Raises
    ------
    InputError
        ``pointer`` or ``resource`` is not an absolute path or URL, embeds credentials, or
        ``pointer`` does not end in ``.json``.
    """
    from prdist.dataflow.io.publishing import publish
    from prdist.dataflow.io.storage import resolve

    resource = _check_url(resource, option="--resource", owner="write_current")
    pointer = _check_url(pointer, option="--current", owner="write_current")
    if not pointer.endswith(POINTER_SUFFIX):
        raise InputError(f"--current names the pointer file to write and must end in {POINTER_SUFFIX}, e.g. "
                         f"s3://prdist/releases/current.json. Got {redact_url(pointer)!r}.")
    record = {"resource": resource, "published": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    data = (json.dumps(record, indent=2) + "\n").encode()
    publish(resolve(pointer, storage_options=storage_options), lambda fh: fh.write(data), exclusive=False)
    return record


def current_release(url: str, *, storage_options=None) -> str:
    """The release ``url`` names: the one a release pointer (``*.json``) holds, else ``url`` itself.

    Raises
    ------
    DataError
        The pointer is not a JSON object whose ``resource`` is an absolute path or URL.

    Examples
    --------
    >>> current_release("s3://prdist/releases/2026-08")
    's3://prdist/releases/2026-08'
    """
    if not str(url).endswith(POINTER_SUFFIX):
        return url
    from prdist.dataflow.io.storage import filesystem

    fs, path = filesystem(url, storage_options)
    with fs.open(path, "rb") as fh:
        text = fh.read()
    try:
        record = json.loads(text)
        return _check_url(record["resource"], option="resource", owner=f"the release pointer {redact_url(url)}")
    except (ValueError, KeyError, TypeError, InputError) as exc:
        raise DataError(
            f"{redact_url(url)} is not a release pointer ({type(exc).__name__}: {exc}). Write it with "
            f"'prdist release --resource URL --current {redact_url(url)}'."
        ) from None
