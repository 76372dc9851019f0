"""Storage errors translated: what fsspec, botocore and the OS raise, as errors that name the fix.

:func:`storage_errors` wraps every storage access of prdist: a missing bucket, bad credentials,
a refused permission or an endpoint that does not answer become one :class:`InputError` (or
:class:`StorageUnavailable`, which the flows retry) naming the redacted URL and what to do.
:func:`exists` and :func:`info_or_none` tell "absent" from "cannot tell", which fsspec does not.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
import contextlib
from fsspec.implementations.local import LocalFileSystem

from prdist.errors import InputError, PrdistError
from prdist.redaction import redact_url

__all__ = [
    "AlreadyExists",
    "StorageUnavailable",
    "check_regular_file",
    "exists",
    "info_or_none",
    "is_permanent",
    "is_precondition_failure",
    "storage_errors",
    "unreachable_cause",
]

#: AWS error codes meaning "these credentials are not valid" (as opposed to "not allowed").
_BAD_CREDENTIAL_CODES = frozenset(
    {"SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken", "InvalidClientTokenId", "AuthorizationHeaderMalformed"}
)


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


def unreachable_cause(exc: BaseException) -> BaseException | None:
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


def is_precondition_failure(exc: BaseException) -> bool:
    code, status = _aws_error(exc)
    return code in ("PreconditionFailed", "412") or status == 412


def _bucket(location) -> str | None:
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


def _translate(exc: BaseException, display: str, action: str, location) -> BaseException | None:
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
    unreachable = unreachable_cause(exc)
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


def _is_url(where) -> bool:
    return isinstance(where, (str, os.PathLike))


def _display(where) -> str:
    """How ``where`` (a Location or a URL) is named in a message: redacted."""
    return redact_url(where) if _is_url(where) else where.url


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
    location = None if _is_url(where) else where
    display = _display(where)
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
            if unreachable_cause(exc) is not None:
                raise
            return None


def exists(fs, path: str, *, where) -> bool:
    """Whether ``path`` exists on ``fs``; a failure to tell is raised, never read as "no".

    Examples
    --------
    >>> import tempfile
    >>> from prdist.dataflow.io.storage import filesystem
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
    >>> from prdist.dataflow.io.storage import filesystem
    >>> d = tempfile.mkdtemp()
    >>> os.mkfifo(os.path.join(d, "labels.csv"))
    >>> fs, path = filesystem(os.path.join(d, "labels.csv"))
    >>> try:
    ...     check_regular_file(fs, path, where=path, role="label file")
    ... except InputError as exc:
    ...     print(str(exc).split(" is ")[-1])
    a FIFO, not a regular file. Name a regular file.
    """
    display = _display(where)
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

