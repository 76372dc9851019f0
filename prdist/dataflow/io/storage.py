"""Storage locations: URLs, credentials and the filesystems behind them, resolved once.

Every resource, label store and run directory is named by a URL: a plain path or ``file://``
URL (local disk, the default), ``s3://bucket/prefix`` (through s3fs) or any other fsspec URL.
``storage_options`` (a dict, or JSON text from the command line) go to the fsspec filesystem;
without them S3 credentials come from the standard AWS chain (``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, profiles, instance roles).

:func:`resolve` is the one gate every URL passes (runs once per URL, at the edge of a command or
a flow): it parses the options, refuses credentials written into a URL and builds the
filesystem, giving a :class:`Location`. Inside, a location is passed as it is (runs many: its
files are :meth:`Location.child` locations, which parse nothing and build no filesystem), so a
resource, a label store and a run root each keep the credentials they were resolved with.

Credentials never leave this module in text: :func:`redact` and :func:`redact_url` (from
:mod:`prdist.redaction`, re-exported here) produce what may be logged or written into a manifest,
and every error message names the URL in its redacted form. Beside this module:
:mod:`prdist.dataflow.io.storage_errors` (storage exceptions as errors that name the fix),
:mod:`prdist.dataflow.io.publishing` (create-only, all-or-nothing writes) and
:mod:`prdist.dataflow.io.output_place` (where an output may go).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

import fsspec
from fsspec.implementations.local import LocalFileSystem

from prdist.errors import DataError, InputError, ParameterError
from prdist.redaction import redact, redact_url, refuse_credentials
from prdist.dataflow.io.storage_errors import StorageUnavailable, storage_errors, unreachable_cause

__all__ = [
    "Location",
    "CONNECT_TIMEOUT",
    "READ_TIMEOUT",
    "check_reachable",
    "RunLocations",
    "filesystem",
    "given_url",
    "join_url",
    "modified_time",
    "parse_storage_options",
    "redact",
    "redact_url",
    "resolve",
    "run_locations",
]

#: Seconds to wait for a connection to a remote store, and for each read of its answer. Every
#: S3 and HTTP(S) filesystem prdist opens gets them (storage options may set others), so no
#: request waits for ever on an endpoint that accepts and never answers.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 15.0
#: Attempts per S3 request by botocore (s3fs adds its own loop of 5 on timeouts and broken
#: connections): a request to a silent endpoint gives up after at most 10 read timeouts.
S3_ATTEMPTS = 2



def parse_storage_options(storage_options, *, owner: str = "prdist") -> dict:
    """Return ``storage_options`` as a dict: ``None`` → ``{}``, a dict as is, JSON text parsed.

    Examples
    --------
    >>> parse_storage_options('{"anon": true}')
    {'anon': True}
    >>> parse_storage_options(None)
    {}
    """
    if storage_options is None:
        return {}
    if isinstance(storage_options, Mapping):
        return dict(storage_options)
    if isinstance(storage_options, (str, bytes)):
        try:
            parsed = json.loads(storage_options)
        except ValueError as exc:
            raise ParameterError(
                f"The 'storage_options' parameter of {owner} must be a JSON object; it is not valid "
                f"JSON ({exc.args[0]}). Write it like '{{\"anon\": true}}'."
            ) from None
        if not isinstance(parsed, dict):
            raise ParameterError(
                f"The 'storage_options' parameter of {owner} must be a JSON object. Got a JSON "
                f"{type(parsed).__name__} instead."
            )
        return parsed
    raise ParameterError(
        f"The 'storage_options' parameter of {owner} must be a dict, JSON text or None. Got "
        f"{type(storage_options).__name__} instead."
    )


@dataclass(frozen=True)
class Location:
    """A resolved URL: the fsspec filesystem, the path inside it and a printable URL.

    Built by :func:`resolve` (once per URL a command or a flow is given), then passed as it is:
    a resource, a label store and a run root each carry the credentials they were resolved with,
    and a file below one is its :meth:`child`. ``url`` is protocol-qualified and redacted (safe to
    print and to store); ``given`` is the URL as it was written (a relative path stays relative),
    which messages and artifacts name; ``storage_options`` are kept for the Dask workers that open
    the same files, but never shown.
    """

    url: str
    protocol: str
    path: str
    fs: fsspec.AbstractFileSystem = field(repr=False, compare=False)
    storage_options: dict = field(default_factory=dict, repr=False, compare=False)
    given: str = field(default="", compare=False)

    @property
    def is_local(self) -> bool:
        """True for the local filesystem."""
        return isinstance(self.fs, LocalFileSystem)

    def child(self, *names: str) -> Location:
        """Return the location of ``names`` below this one (same filesystem and credentials).

        Examples
        --------
        >>> runs = resolve("s3://bucket/runs", storage_options={"anon": True})
        >>> runs.child("run-1", "manifest.json").path
        'bucket/runs/run-1/manifest.json'
        """
        path = posixpath.join(self.path, *names)
        return Location(
            url=redact_url(self.fs.unstrip_protocol(path)),
            protocol=self.protocol,
            path=path,
            fs=self.fs,
            storage_options=self.storage_options,
            given=join_url(self.given, *names),
        )


def _protocol_of(fs) -> str:
    protocol = fs.protocol
    return protocol[0] if isinstance(protocol, (tuple, list)) else str(protocol)


def _with_network_bounds(url: str, options: dict) -> dict:
    """``options`` plus connect and read timeouts (and bounded S3 retries) the user did not set.

    Only the filesystem gets them; :attr:`Location.storage_options` keep what the user gave.
    """
    protocol = url.split("::")[-1].split("://", 1)[0] if "://" in url else "file"
    if protocol in ("s3", "s3a"):
        config = {"connect_timeout": CONNECT_TIMEOUT, "read_timeout": READ_TIMEOUT,
                  "retries": {"total_max_attempts": S3_ATTEMPTS, "mode": "standard"}}
        return {**options, "config_kwargs": {**config, **options.get("config_kwargs", {})}}
    if protocol in ("http", "https"):
        import aiohttp

        client = {"timeout": aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT)}
        return {**options, "client_kwargs": {**client, **options.get("client_kwargs", {})}}
    return options


def _endpoint_options(options: Mapping):
    """(name, URL) of the endpoint URLs among storage options (top level and ``client_kwargs``)."""
    for where, scope in (("endpoint_url", options), ("client_kwargs.endpoint_url", options.get("client_kwargs"))):
        if isinstance(scope, Mapping) and isinstance(scope.get("endpoint_url"), str):
            yield where, scope["endpoint_url"]


def resolve(url, *, storage_options=None) -> Location:
    """Resolve a path or fsspec URL into a :class:`Location`: the one credentials gate.

    Parameters
    ----------
    url : str, os.PathLike or Location
        A plain path (relative to the working directory or absolute), ``file://...``,
        ``s3://bucket/prefix`` or any URL fsspec knows. A :class:`Location` has passed the gate
        already: it is returned as it is (nothing parsed, no filesystem built).
    storage_options : dict or JSON text, optional
        Options for the fsspec filesystem (``key``/``secret``/``endpoint_url`` for S3, ...).
        Without them S3 uses the standard AWS credential chain and ``AWS_ENDPOINT_URL``. With a
        Location: None, or the options it carries (never other credentials for it).

    Returns
    -------
    Location

    Examples
    --------
    >>> loc = resolve("s3://bucket/resource", storage_options={"anon": True})
    >>> loc.protocol, loc.path, loc.url
    ('s3', 'bucket/resource', 's3://bucket/resource')
    >>> resolve(loc) is loc
    True
    """
    if isinstance(url, Location):
        return _resolved(url, storage_options)
    options = parse_storage_options(storage_options, owner="resolve")
    given = os.fspath(url) if isinstance(url, os.PathLike) else url
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url.strip():
        raise ParameterError(f"A storage URL must be a non-empty path or URL. Got {url!r} instead.")
    # The one gate every URL passes: credentials in a URL would be printed and recorded.
    refuse_credentials(url)
    for where, value in _endpoint_options(options):
        refuse_credentials(value, what=f"The {where!r} storage option")
    display = redact_url(url)
    if "://" not in url and "::" not in url:
        # A plain path: local disk, made absolute so that workers started elsewhere agree.
        url = os.path.abspath(os.path.expanduser(url))
    try:
        fs, path = fsspec.core.url_to_fs(url, **_with_network_bounds(url, options))
    except ImportError as exc:
        raise InputError(
            f"Cannot open {display}: the filesystem for its protocol is not installed ({exc}). "
            "Install the fsspec implementation it needs (e.g. gcsfs for gs://)."
        ) from None
    except ValueError as exc:
        raise InputError(f"Cannot open {display}: {exc}. Use a local path, s3://bucket/prefix or another fsspec URL.") from None
    return Location(
        url=redact_url(fs.unstrip_protocol(path)),
        protocol=_protocol_of(fs),
        path=path,
        fs=fs,
        storage_options=options,
        given=given,
    )


def _resolved(location: Location, storage_options) -> Location:
    """``location`` itself; other storage options for it are a bug of the caller, refused."""
    if storage_options is not None and storage_options != location.storage_options:
        raise ParameterError(f"{location.url} was resolved with its own storage options; pass the Location alone, "
                             "without other options.")
    return location


def given_url(where) -> str:
    """The URL of ``where`` as it was written: a Location's :attr:`~Location.given`, a URL itself.

    Examples
    --------
    >>> given_url(resolve("runs").child("run-1")), given_url("s3://bucket/runs")
    ('runs/run-1', 's3://bucket/runs')
    """
    return where.given if isinstance(where, Location) else os.fspath(where)


@dataclass(frozen=True)
class RunLocations:
    """Where one evaluation reads and writes: the resource, the label store (None without one) and
    the output root of its run directories, each resolved once (:func:`run_locations`)."""

    resource: Location
    out: Location
    labels: Location | None = None


def run_locations(resource, out, labels=None, *, storage_options=None) -> RunLocations:
    """Resolve the resource, the runs root and the label store of a run at its edge, once each.

    The command line has one ``--storage-options`` for all three (``prdist run``: "for
    --resource/--out/--labels"), so each is resolved with those options; from here on each carries
    its own credentials, and none borrows another's (the label store and the runs root are not
    opened with the resource's filesystem). Runs once per command or flow run.

    Examples
    --------
    >>> where = run_locations("s3://kb/r1", "s3://kb/runs", storage_options={"anon": True})
    >>> where.resource.path, where.out.path, where.labels
    ('kb/r1', 'kb/runs', None)
    """
    options = parse_storage_options(storage_options, owner="run_locations")
    return RunLocations(
        resource=resolve(resource, storage_options=options),
        out=resolve(out, storage_options=options),
        labels=None if labels is None else resolve(labels, storage_options=options),
    )


def filesystem(url, storage_options=None):
    """Return ``(fs, path)`` for a path or fsspec URL (see :func:`resolve`).

    Examples
    --------
    >>> fs, path = filesystem("s3://bucket/x", {"anon": True})
    >>> path
    'bucket/x'
    """
    loc = resolve(url, storage_options=storage_options)
    return loc.fs, loc.path


def join_url(url, *names: str):
    """Join path components to a path or URL with ``/``, keeping its protocol.

    A :class:`Location` gives the Location below it (:meth:`Location.child`).

    Examples
    --------
    >>> join_url("s3://bucket/runs/", "run-1", "manifest.json")
    's3://bucket/runs/run-1/manifest.json'
    >>> join_url("out", "plan.parquet")
    'out/plan.parquet'
    """
    if isinstance(url, Location):
        return url.child(*names)
    text = os.fspath(url) if isinstance(url, os.PathLike) else str(url)
    for name in names:
        text = text.rstrip("/") + "/" + str(name).lstrip("/")
    return text



def check_reachable(url, *, storage_options=None) -> Location:
    """Resolve ``url`` and ask its store once whether it answers, within a bounded time.

    Local paths are not asked. A remote store gets one request (the ``info`` of the path; "not
    found" is an answer) that must complete within ``CONNECT_TIMEOUT + READ_TIMEOUT`` seconds,
    retries included: a wrong endpoint, a refused port or a silent server is reported at once as
    :class:`StorageUnavailable`, before a run starts, instead of after every retry of a flow.

    Examples
    --------
    >>> check_reachable("relative/path").protocol
    'file'
    """
    from fsspec.asyn import AsyncFileSystem, sync
    from fsspec.exceptions import FSTimeoutError

    location = resolve(url, storage_options=storage_options)
    if location.is_local:
        return location
    deadline = CONNECT_TIMEOUT + READ_TIMEOUT
    with storage_errors(location, action="reach"):
        try:
            if isinstance(location.fs, AsyncFileSystem):
                sync(location.fs.loop, location.fs._info, location.path, timeout=deadline)
            else:
                location.fs.info(location.path)
        except (FileNotFoundError, PermissionError) as exc:
            if unreachable_cause(exc) is not None:
                raise  # translated below: the store did not answer
            # Otherwise the store answered; what the command may do there is checked when it does it.
        except FSTimeoutError:
            raise StorageUnavailable(
                f"Cannot reach {location.url}: the storage endpoint did not answer within {deadline:g} s. "
                "Check AWS_ENDPOINT_URL or the 'endpoint_url' storage option, and that the server is running."
            ) from None
    return location


def modified_time(info: dict):
    """When a file was last written (local mtime, S3 LastModified; from ``fs.info``), a UTC pandas
    Timestamp to the millisecond."""
    import pandas as pd  # only where needed: storage serves commands that load no pandas

    value = info.get("LastModified", info.get("mtime", info.get("created")))
    if value is None:
        raise DataError(f"The store gives no modification time for {info.get('name')}; prdist orders runs by it: "
                        "use a store that reports one (LastModified or mtime).")
    stamp = pd.Timestamp(value, unit="s") if isinstance(value, (int, float)) else pd.Timestamp(value)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.floor("ms")  # what history.parquet keeps
