"""Storage: URLs, credentials, create-only writes and readable errors.

Every resource, label store and run directory is named by a URL: a plain path or ``file://``
URL (local disk, the default), ``s3://bucket/prefix`` (through s3fs) or any other fsspec URL.
``storage_options`` (a dict, or JSON text from the command line) go to the fsspec filesystem;
without them S3 credentials come from the standard AWS chain (``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, profiles, instance roles).

Credentials never leave this module in text: :func:`redact` and :func:`redact_url` (from
:mod:`prdist.redaction`, re-exported here) produce what may be logged or written into a manifest,
and every error message names the URL in its redacted form.

Writes are create-only and never half-visible:

- local disk: the bytes go to a hidden temporary file in the target directory, which is then
  hard-linked to the final name (``link`` fails if the name exists: an atomic exclusive create)
  and removed;
- S3: a conditional PUT (``If-None-Match: *``) — single-part, or on the completion of a multipart
  upload — so an object appears whole or not at all, and never replaces another;
- other fsspec filesystems: a temporary name moved into place after checking the target does not
  exist (best effort: the check and the move are two steps there).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import re
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ..errors import DataError, InputError, ParameterError, PrdistError
from ..redaction import redact, redact_url, refuse_credentials

__all__ = [
    "AlreadyExists",
    "Location",
    "StorageUnavailable",
    "CONNECT_TIMEOUT",
    "READ_TIMEOUT",
    "check_reachable",
    "check_regular_file",
    "is_permanent",
    "modified_time",
    "dataset_publication",
    "exists",
    "filesystem",
    "info_or_none",
    "join_url",
    "parse_storage_options",
    "publish",
    "read_parquet",
    "redact",
    "redact_url",
    "resolve",
    "storage_errors",
    "write_bytes_exclusive",
    "write_parquet",
]

#: AWS error codes meaning "these credentials are not valid" (as opposed to "not allowed").
_BAD_CREDENTIAL_CODES = frozenset(
    {"SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken", "InvalidClientTokenId", "AuthorizationHeaderMalformed"}
)


#: Seconds to wait for a connection to a remote store, and for each read of its answer. Every
#: S3 and HTTP(S) filesystem prdist opens gets them (storage options may set others), so no
#: request waits for ever on an endpoint that accepts and never answers.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 15.0
#: Attempts per S3 request by botocore (s3fs adds its own loop of 5 on timeouts and broken
#: connections): a request to a silent endpoint gives up after at most 10 read timeouts.
S3_ATTEMPTS = 2

#: Exceptions meaning "the endpoint cannot be reached or does not answer" (botocore, aiohttp,
#: fsspec), by name: a wrong endpoint or an outage.
_UNREACHABLE = frozenset({
    "EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError", "ReadTimeoutError",
    "ClientConnectorError", "ServerDisconnectedError", "ServerTimeoutError", "ConnectionTimeoutError",
    "SocketTimeoutError", "FSTimeoutError",
})  # fmt: skip


class AlreadyExists(InputError, FileExistsError):
    """A create-only write found its target already there."""


class StorageUnavailable(InputError):
    """The storage endpoint cannot be reached.

    A wrong endpoint (bad input) or an outage (it may pass): the flows retry it, unlike other
    input errors, and report it as bad input when it does not pass.
    """


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

    Built by :func:`resolve`. ``url`` is protocol-qualified and redacted (safe to print and to
    store); ``storage_options`` are kept for opening sibling URLs but never shown.
    """

    url: str
    protocol: str
    path: str
    fs: fsspec.AbstractFileSystem = field(repr=False, compare=False)
    storage_options: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_local(self) -> bool:
        """True for the local filesystem."""
        return isinstance(self.fs, LocalFileSystem)

    def child(self, *names: str) -> Location:
        """Return the location of ``names`` below this one."""
        path = posixpath.join(self.path, *names)
        return Location(
            url=redact_url(self.fs.unstrip_protocol(path)),
            protocol=self.protocol,
            path=path,
            fs=self.fs,
            storage_options=self.storage_options,
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
    """Resolve a path or fsspec URL into a :class:`Location`.

    Parameters
    ----------
    url : str or os.PathLike
        A plain path (relative to the working directory or absolute), ``file://...``,
        ``s3://bucket/prefix`` or any URL fsspec knows.
    storage_options : dict or JSON text, optional
        Options for the fsspec filesystem (``key``/``secret``/``endpoint_url`` for S3, ...).
        Without them S3 uses the standard AWS credential chain and ``AWS_ENDPOINT_URL``.

    Returns
    -------
    Location

    Examples
    --------
    >>> loc = resolve("s3://bucket/resource", storage_options={"anon": True})
    >>> loc.protocol, loc.path, loc.url
    ('s3', 'bucket/resource', 's3://bucket/resource')
    """
    options = parse_storage_options(storage_options, owner="resolve")
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


def join_url(url, *names: str) -> str:
    """Join path components to a path or URL with ``/``, keeping its protocol.

    Examples
    --------
    >>> join_url("s3://bucket/runs/", "run-1", "manifest.json")
    's3://bucket/runs/run-1/manifest.json'
    >>> join_url("out", "plan.parquet")
    'out/plan.parquet'
    """
    text = os.fspath(url) if isinstance(url, os.PathLike) else str(url)
    for name in names:
        text = text.rstrip("/") + "/" + str(name).lstrip("/")
    return text


# --------------------------------------------------------------------------------------------
# Errors


def _aws_error(exc: BaseException):
    """Return (code, http_status) of the botocore ClientError behind ``exc``, if there is one."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        response = getattr(exc, "response", None)
        if isinstance(response, Mapping) and "Error" in response:
            code = str(response["Error"].get("Code", ""))
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return code, status
        exc = exc.__cause__ or exc.__context__
    return None, None


def _unreachable_cause(exc: BaseException) -> BaseException | None:
    """The "cannot reach the endpoint" error behind ``exc``, if there is one.

    Some filesystems hide it: fsspec's HTTP ``info`` raises FileNotFoundError from it.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ in _UNREACHABLE or isinstance(exc, (ConnectionRefusedError, TimeoutError)):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _is_precondition_failure(exc: BaseException) -> bool:
    code, status = _aws_error(exc)
    return code in ("PreconditionFailed", "412") or status == 412


def _bucket(location: Location | None) -> str | None:
    if location is None or location.protocol not in ("s3", "s3a", "gs", "gcs", "abfs", "az"):
        return None
    return location.path.split("/", 1)[0]


#: OS errors that retrying cannot fix: the path names something unusable (bad input).
_OS_ERRORS = {
    errno.EROFS: "the filesystem is read-only. Choose a writable location.",
    errno.ELOOP: "symbolic links loop there. Fix the links or name the real path.",
    errno.ENAMETOOLONG: "the path is too long. Choose a shorter one.",
    errno.ENXIO: "it is a special file (a FIFO or device) with nothing behind it. Name a regular file.",
}


def _translate(exc: BaseException, display: str, action: str, location: Location | None) -> BaseException | None:
    """Return the prdist error for a storage exception, or None to let it propagate."""
    if isinstance(exc, PrdistError):
        return None
    code, status = _aws_error(exc)
    name = type(exc).__name__
    what = f"Cannot {action} {display}"
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return InputError(
            f"{what}: no usable credentials were found where it was read. Set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or an AWS profile) in the environment of the process that reads "
            "it (with --scheduler: every Dask worker's, not only this command's), pass storage "
            "options with 'key' and 'secret' (they travel to the workers sealed), or {\"anon\": true} "
            "for a public bucket."
        )
    unreachable = _unreachable_cause(exc)
    if unreachable is not None:
        reason = " ".join(str(unreachable).split()) or type(unreachable).__name__
        return StorageUnavailable(
            f"{what}: the storage endpoint cannot be reached or does not answer ({reason}). Check "
            "AWS_ENDPOINT_URL or the 'endpoint_url' storage option, and that the server is running."
        )
    if code == "NoSuchBucket" or (isinstance(exc, FileNotFoundError) and "bucket does not exist" in str(exc).lower()):
        bucket = _bucket(location) or "of this URL"
        return InputError(f"{what}: the bucket '{bucket}' does not exist. Create the bucket or fix the URL.")
    if code == "InvalidBucketName":
        bucket = _bucket(location) or "of this URL"
        return InputError(f"{what}: '{bucket}' is not a valid bucket name (3-63 lower-case letters, digits, dots, hyphens). Fix the URL.")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{what}: it is a directory where a file was expected. Name the file, not its directory.")
    if isinstance(exc, (NotADirectoryError, FileExistsError)):
        return InputError(f"{what}: a component of the path is a file, not a directory. Fix the path.")
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{what}: no such file or directory. Check the path or URL.")
    if isinstance(exc, OSError) and exc.errno in _OS_ERRORS:
        return InputError(f"{what}: {_OS_ERRORS[exc.errno]}")
    if code in _BAD_CREDENTIAL_CODES:
        return InputError(
            f"{what}: the storage rejected the credentials ({code}). Check the access key id and "
            "secret (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the 'key' / 'secret' storage "
            "options)."
        )
    if code == "AccessDenied":
        return InputError(
            f"{what}: permission denied (AccessDenied). The credentials are valid but not allowed to "
            f"{action} here; use credentials with that permission or grant it."
        )
    if isinstance(exc, PermissionError) or status == 403:
        local = location.is_local if location is not None else display.startswith("file://") or "://" not in display
        if local:
            return InputError(f"{what}: permission denied by the local filesystem. Fix the file permissions or choose another path.")
        return InputError(
            f"{what}: access denied (HTTP 403): the credentials are wrong or lack the permission. "
            "Check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the 'key' / 'secret' storage "
            "options) and the bucket policy."
        )
    return None


@contextlib.contextmanager
def storage_errors(where, *, action: str = "access"):
    """Translate fsspec / botocore / OS errors raised in the block into :class:`InputError`.

    Parameters
    ----------
    where : Location or str
        What is being accessed; named (redacted) in the message.
    action : str
        The verb for the message: "read", "write", "list", ...

    Errors that do not say something the user can fix (a lost connection in mid-transfer, a bug)
    propagate unchanged.
    """
    location = where if isinstance(where, Location) else None
    display = where.url if isinstance(where, Location) else redact_url(where)
    try:
        yield
    except Exception as exc:
        translated = _translate(exc, display, action, location)
        if translated is None:
            raise
        raise translated from exc


def info_or_none(fs, path: str, *, where) -> dict | None:
    """fsspec's ``info`` of ``path``, or None when nothing is there.

    Only "not found" (or a file where a directory would be) means absent. fsspec's own ``exists`` answers False on *any* error (s3fs for
    a bucket, the base class always), so an unreachable store would read as an empty one; here
    every other failure is raised, translated (``where`` is named in the message).
    """
    with storage_errors(where, action="read"):
        try:
            return fs.info(path)
        except (FileNotFoundError, NotADirectoryError) as exc:  # nothing can be below a file
            if _unreachable_cause(exc) is not None:
                raise
            return None


def exists(fs, path: str, *, where) -> bool:
    """Whether ``path`` exists on ``fs``; a failure to tell is raised, never read as "no".

    Examples
    --------
    >>> import tempfile
    >>> fs, path = filesystem(tempfile.mkdtemp())
    >>> exists(fs, path, where=path), exists(fs, path + "/missing", where=path)
    (True, False)
    """
    return info_or_none(fs, path, where=where) is not None


def check_regular_file(fs, path: str, *, where, role: str = "file") -> dict | None:
    """The ``info`` of ``path`` if it is a regular file (symbolic links followed), None if absent.

    A directory, a FIFO, a socket or a device where a file is expected is refused with one line
    (``role`` names it: "label file", "output file"), before anything opens it: opening a FIFO
    would block until a writer comes, for ever.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> os.mkfifo(os.path.join(d, "labels.csv"))
    >>> fs, path = filesystem(os.path.join(d, "labels.csv"))
    >>> try:
    ...     check_regular_file(fs, path, where=path, role="label file")
    ... except InputError as exc:
    ...     print(str(exc).split(" is ")[-1])
    a FIFO, not a regular file. Name a regular file.
    """
    display = where.url if isinstance(where, Location) else redact_url(where)
    if isinstance(fs, LocalFileSystem):
        with storage_errors(where, action="read"):
            try:
                mode = os.stat(path).st_mode  # follows symbolic links
            except FileNotFoundError:
                if os.path.islink(path):
                    raise InputError(f"The {role} {display} is a broken symbolic link. Fix the link or name the real file.") from None
                return None
        if stat.S_ISDIR(mode):
            raise InputError(f"The {role} {display} is a directory where a file was expected. Name the file, not its directory.")
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            raise InputError(f"The {role} {display} is {kind}, not a regular file. Name a regular file.")
    info = info_or_none(fs, path, where=where)
    if info is not None and info.get("type") == "directory":
        raise InputError(f"The {role} {display} is a directory where a file was expected. Name the file, not its directory.")
    return info


def is_permanent(exc: BaseException) -> bool:
    """Whether an OS error names something retrying cannot fix (bad input, not an outage).

    Permissions, read-only filesystems, a directory where a file is expected and the like stay
    as they are; the flows do not retry them.
    """
    return isinstance(exc, (PermissionError, IsADirectoryError, NotADirectoryError, FileNotFoundError, FileExistsError)) or (
        isinstance(exc, OSError) and exc.errno in _OS_ERRORS
    )


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
            if _unreachable_cause(exc) is not None:
                raise  # translated below: the store did not answer
            # Otherwise the store answered; what the command may do there is checked when it does it.
        except FSTimeoutError:
            raise StorageUnavailable(
                f"Cannot reach {location.url}: the storage endpoint did not answer within {deadline:g} s. "
                "Check AWS_ENDPOINT_URL or the 'endpoint_url' storage option, and that the server is running."
            ) from None
    return location


# --------------------------------------------------------------------------------------------
# Create-only, all-or-nothing writes


def _exists_error(location: Location) -> AlreadyExists:
    return AlreadyExists(
        f"{location.url} exists already and prdist never overwrites. Choose a new name or remove "
        "the old object first."
    )


def _publish_local(location: Location, write: Callable, *, exclusive: bool) -> None:
    path = location.path
    directory, name = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
    # Hidden name in the same directory: readers skip it, and link/rename stay on one device.
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".prdist-tmp", dir=directory)
    # mkstemp creates 0600; published files get the permissions any new file would get.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if not exclusive:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise _exists_error(location) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            # No hard links here (some network and FUSE filesystems): exclusive create instead,
            # still refusing to overwrite, at the price of a moment of partial visibility.
            try:
                with open(tmp, "rb") as src, open(path, "xb") as dst:
                    while chunk := src.read(1 << 24):
                        dst.write(chunk)
            except FileExistsError:
                raise _exists_error(location) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _publish_s3(location: Location, write: Callable, *, exclusive: bool) -> None:
    # Nothing is visible before the upload completes; autocommit=False lets a failure abort the
    # multipart upload instead of committing what was written so far.
    fh = location.fs.open(location.path, "xb" if exclusive else "wb", autocommit=False)
    try:
        write(fh)
        fh.close()
        fh.commit()
    except BaseException as exc:
        # fsspec's protocol for an uncommitted file: close it (the multipart upload stays
        # incomplete, so invisible), then discard it (abort the upload).
        with contextlib.suppress(Exception):
            fh.close()
        with contextlib.suppress(Exception):
            fh.discard()
        if exclusive and isinstance(exc, OSError) and _is_precondition_failure(exc):
            raise _exists_error(location) from None
        raise


def _publish_other(location: Location, write: Callable, *, exclusive: bool) -> None:
    fs, path = location.fs, location.path
    if exclusive and fs.exists(path):
        raise _exists_error(location)
    directory, name = posixpath.split(path)
    tmp = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.prdist-tmp")
    try:
        with fs.open(tmp, "wb") as fh:
            write(fh)
        if exclusive and fs.exists(path):
            raise _exists_error(location)
        fs.mv(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError, OSError):
            if fs.exists(tmp):
                fs.rm(tmp)


def publish(location: Location, write: Callable, *, exclusive: bool) -> None:
    """Write a file produced by ``write(fh)`` so that it appears whole or not at all.

    With ``exclusive`` an existing file is refused (:class:`AlreadyExists`); otherwise it is
    replaced atomically. This is the streaming form of :func:`write_bytes_exclusive` and
    :func:`write_parquet`.
    """
    with storage_errors(location, action="write"):
        if location.is_local:
            _publish_local(location, write, exclusive=exclusive)
        elif location.protocol in ("s3", "s3a"):
            _publish_s3(location, write, exclusive=exclusive)
        else:
            _publish_other(location, write, exclusive=exclusive)


#: A staging directory's name: hidden, beside its output, naming the host and process that own it.
_STAGING = re.compile(r"\.(?P<name>.+)\.(?P<host>[A-Za-z0-9_]+)\.(?P<pid>\d+)\.[0-9a-f]{32}\.prdist-(staging|ingest)")
#: A staging directory older than this whose process is gone is removed (see remove_dead_staging).
STALE_SECONDS = 3600


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", os.uname().nodename) or "host"


def staging_path(path: str, kind: str) -> str:
    """A hidden sibling of ``path`` to stage a dataset in (``kind``: "staging" or "ingest"); its
    name says which host and process own it, so that :func:`remove_dead_staging` can tell a dead one."""
    parent, name = posixpath.split(path.rstrip("/"))
    return posixpath.join(parent, f".{name}.{_host()}.{os.getpid()}.{uuid.uuid4().hex}.prdist-{kind}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_dead_staging(directory: str) -> list[str]:
    """Remove the staging directories that killed writers left in the local ``directory``; return them.

    Only what is certainly dead goes: a directory named by :func:`staging_path` on this host,
    whose process no longer runs, untouched for :data:`STALE_SECONDS`. Anything else (another
    host's, a running writer's, a recent one) is left alone.
    """
    removed, now = [], time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            match = _STAGING.fullmatch(entry.name)
            if (match is None or match["host"] != _host() or _alive(int(match["pid"])) or not entry.is_dir(follow_symlinks=False)
                    or now - entry.stat(follow_symlinks=False).st_mtime < STALE_SECONDS):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


@contextlib.contextmanager
def dataset_publication(out: Location, names: list[str], marker: bytes | Callable[[], bytes], *, marker_name: str):
    """Yield the directory to write the files ``names`` into; publish them when the block succeeds.

    Local disk: a hidden sibling directory renamed to ``out`` at the end (atomic). Elsewhere: the
    files go in place and the commit marker (``marker``, or what ``marker()`` returns once the
    block has written the files, named ``marker_name``) is written last, create-only. On failure
    the files are removed: nothing half-written stays behind.
    """
    fs, root = out.fs, out.path.rstrip("/")
    with storage_errors(out, action="write"):
        # Some object stores list a prefix's own "directory" object (key "prefix/"); it is empty.
        info = info_or_none(fs, root, where=out)
        taken = info is not None and (
            info.get("type") != "directory" or any(p.rstrip("/") != root for p in fs.ls(root, detail=False))
        )
        if taken:
            raise InputError(
                f"The output {out.url} exists already. Choose a new output URL (--out), or delete "
                "the old dataset first."
            )
    if out.is_local:
        remove_dead_staging(posixpath.dirname(root))
        target = resolve(staging_path(root, "staging"))
    else:
        target = out  # object stores have no directories (and makedirs would create a bucket)
    try:
        if out.is_local:
            with storage_errors(target, action="write"):
                os.makedirs(target.path)
        yield target
        if callable(marker):
            marker = marker()
        if out.is_local:
            write_bytes_exclusive(target.child(marker_name).path, marker)
            try:
                os.rename(target.path, root)  # replaces an empty directory, refuses a non-empty one
            except OSError as exc:
                raise InputError(
                    f"The output {out.url} appeared while the resource was being written "
                    f"({exc.strerror}). Choose a new output URL (--out)."
                ) from None
        else:
            marker_url = out.fs.unstrip_protocol(out.child(marker_name).path)  # unredacted
            write_bytes_exclusive(marker_url, marker, storage_options=out.storage_options)
    except BaseException:
        # Best effort: the error being raised is the one to report. On an object store only this
        # write's file names are removed, never the prefix: it may hold another writer's files.
        if out.is_local:
            with contextlib.suppress(Exception):
                target.fs.rm(target.path, recursive=True)
        else:
            for name in names:
                with contextlib.suppress(Exception):
                    target.fs.rm(target.child(name).path)
        raise


def write_bytes_exclusive(url, data, *, storage_options=None) -> None:
    """Write ``data`` to ``url`` if, and only if, nothing is there yet.

    The object appears whole or not at all. Of several writers racing for one name exactly one
    succeeds (local disk: ``link``; S3: ``If-None-Match: *``).

    Parameters
    ----------
    url : str
        Target path or fsspec URL.
    data : bytes-like
    storage_options : dict or JSON text, optional

    Raises
    ------
    AlreadyExists
        The target exists.
    InputError
        The target cannot be written (missing bucket, wrong credentials, permission denied).

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "marker.json")
    >>> write_bytes_exclusive(target, b"{}")
    >>> try:
    ...     write_bytes_exclusive(target, b"{}")
    ... except AlreadyExists:
    ...     print("refused")
    refused
    """
    payload = bytes(data)
    location = resolve(url, storage_options=storage_options)
    if location.protocol in ("s3", "s3a"):
        # One request: s3fs sends a conditional PUT (multipart above 2 x 50 MiB).
        with storage_errors(location, action="write"):
            try:
                location.fs.pipe_file(location.path, payload, mode="create")
            except OSError as exc:
                if _is_precondition_failure(exc) or isinstance(exc, FileExistsError):
                    raise _exists_error(location) from None
                raise
        return
    publish(location, lambda fh: fh.write(payload), exclusive=True)


def write_parquet(table, url, *, storage_options=None, exclusive: bool = True, **parquet_options) -> None:
    """Write a pyarrow Table as one Parquet file that appears whole or not at all.

    Parameters
    ----------
    table : pyarrow.Table
    url : str
        Target path or fsspec URL of the file.
    storage_options : dict or JSON text, optional
    exclusive : bool, default=True
        Refuse to replace an existing file (:class:`AlreadyExists`). With False an existing
        file is replaced atomically.
    **parquet_options
        Passed to :func:`pyarrow.parquet.write_table` (``row_group_size``, ``compression``...).
        Column statistics are always written: readers rely on them.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> target = os.path.join(tempfile.mkdtemp(), "plan.parquet")
    >>> write_parquet(pa.table({"rank": [1, 2]}), target)
    >>> pq.read_table(target).num_rows
    2
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        raise ParameterError(f"The 'table' parameter of write_parquet must be a pyarrow.Table. Got {type(table).__name__} instead.")
    if parquet_options.get("write_statistics", True) is not True:
        raise ParameterError("write_parquet always writes column statistics; remove 'write_statistics'.")
    parquet_options.pop("write_statistics", None)
    location = resolve(url, storage_options=storage_options)

    def write(fh):
        pq.write_table(table, fh, write_statistics=True, **parquet_options)

    publish(location, write, exclusive=exclusive)


def read_parquet(fh):
    """The whole Parquet file open in ``fh`` as a pyarrow Table, as ``pyarrow.parquet.read_table``
    reads it, without going through ``pyarrow.dataset`` (13 ms to import, of a run that needs it
    for nothing else).

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> buffer = io.BytesIO()
    >>> pq.write_table(pa.table({"rank": [1, 2]}), buffer)
    >>> read_parquet(buffer).column("rank").to_pylist()
    [1, 2]
    """
    import pyarrow.parquet as pq

    return pq.ParquetFile(fh, pre_buffer=True).read()  # read_table pre-buffers too: fewer requests


# --------------------------------------------------------------------------------------------
# Where an output may go

#: Label-store files are named so (prdist.dataflow.labels.import_labels); any other Parquet file
#: in a directory makes it a dataset: a resource, or a run's artifacts.
LABEL_FILE = re.compile(r"labels-[^/]*\.parquet")


def _place_kind(fs, path: str, where, *, toward: str = "") -> tuple[str, str] | None:
    """What the directory ``path`` is, if anything an output must not land in: (kind, evidence).

    "committed run directory" (it holds manifest.json); "label store" (label files only) or
    "Parquet dataset" (a resource: other Parquet files), each only when its files are Parquet
    files (and hidden or ``_``-prefixed metadata) alone, so that a working directory holding a
    Parquet file beside others is neither. ``toward`` (the entry below ``path`` that the output
    is or lies in; empty for the output itself) does not count, and a directory above the output
    is a Parquet dataset only when prdist wrote it (its ``_prdist`` marker): a loose Parquet file
    beside a new output is not a resource. None for anything else, or no directory.
    """
    with storage_errors(where, action="open"):
        try:
            entries = fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return None
    files = [posixpath.basename(e["name"].rstrip("/")) for e in entries if e.get("type") != "directory"]
    if [e["name"].rstrip("/") for e in entries] == [path] and files:  # a file lists as itself: no directory
        return None
    if "manifest.json" in files:
        return "committed run directory", "it holds manifest.json"
    files = [name for name in files if name != toward and not name.startswith((".", "_"))]
    parquet = sorted(name for name in files if name.endswith(".parquet"))
    if not parquet or len(parquet) < len(files):
        return None
    others = [name for name in parquet if not LABEL_FILE.fullmatch(name)]
    if not others:
        return "label store", f"it holds {parquet[0]}"
    marked = any(posixpath.basename(e["name"]).startswith("_prdist") for e in entries)
    return ("Parquet dataset", f"it holds {others[0]}") if marked or not toward else None


def _check_store_holds_labels_only(store: Location) -> None:
    with storage_errors(store.url, action="open"):
        try:
            found = store.fs.find(store.path)
        except (FileNotFoundError, NotADirectoryError):
            return
    others = sorted(f for f in found if f.endswith(".parquet") and not LABEL_FILE.fullmatch(posixpath.basename(f)))
    if others:
        raise OutputConflict(f"--store {store.url} holds Parquet files that are not label files, e.g. "
                             f"{redact_url(store.fs.unstrip_protocol(others[0]))}: it is a resource or a runs root, not a "
                             "label store. Name a directory of its own for the store, e.g. 'labels'.")


#: Why an output must not land in each kind of place, and what to do instead.
_PLACE_REASONS = {
    "committed run directory": "a committed run is never changed",
    "Parquet dataset": "a resource must not change under its runs",
    "label store": "every Parquet file in a store is read as labels",
}


class OutputConflict(InputError):
    """An output that would land on an input or a committed run (:func:`check_output_place`)."""


def check_output_place(url, *, option: str, storage_options=None, inputs=(),
                       store: bool = False) -> None:
    """Refuse an output that would land on an input or on a committed run: one guard for every writer.

    ``url`` is where a command writes (a file, a root of run directories, or the label store:
    ``store=True``); ``option`` names it as the user wrote it; ``inputs`` are (option, URL) pairs of what
    the command reads. Refused (:class:`OutputConflict`, before anything
    is written):

    - ``url`` equal to or inside one of ``inputs``;
    - with ``store``, a directory that holds Parquet files other than label files, at any depth
      (the store reads every Parquet file below it);
    - ``url`` equal to or inside a committed run directory (one that holds ``manifest.json``) or
      a label store (unless ``store``: the store itself); equal to a Parquet dataset (a resource),
      or inside one that prdist wrote (``ingest``, ``synth``: its ``_prdist`` marker).

    Every directory from ``url`` up to its filesystem's root is listed once (a few listings).

    Examples
    --------
    >>> import os, tempfile
    >>> run = tempfile.mkdtemp()
    >>> open(os.path.join(run, "manifest.json"), "w").close()
    >>> try:
    ...     check_output_place(os.path.join(run, "task.csv"), option="--out")
    ... except OutputConflict as exc:
    ...     print(str(exc).split(" (")[0].replace(run, "RUN"))
    --out file://RUN/task.csv is inside the committed run directory file://RUN
    """
    target = resolve(url, storage_options=storage_options)
    path, toward = target.path.rstrip("/") or "/", ""
    while True:
        found = _place_kind(target.fs, path, target.url, toward=toward)
        if found is not None and not (store and path == target.path.rstrip("/") and found[0] == "label store"):
            kind, evidence = found
            place = "is" if path == target.path.rstrip("/") else "is inside"
            raise OutputConflict(f"{option} {target.url} {place} the {kind} {redact_url(target.fs.unstrip_protocol(path))} "
                                 f"({evidence}): {_PLACE_REASONS[kind]}. Choose a place outside it.")
        parent = posixpath.dirname(path)
        if not parent or parent == path:
            break
        path, toward = parent, posixpath.basename(path)
    if store:
        _check_store_holds_labels_only(target)
    for name, other in inputs:
        source = resolve(other, storage_options=storage_options)
        a, b = target.path.rstrip("/"), source.path.rstrip("/")
        if source.protocol == target.protocol and (a == b or a.startswith(b + "/")):
            raise OutputConflict(f"{option} {target.url} would write over {name} {source.url}, which this command reads. "
                                 f"Give {option} a place of its own.")


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
