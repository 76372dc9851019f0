"""Create-only, all-or-nothing writes: a file or a dataset appears whole or not at all.

- local disk: the bytes go to a hidden temporary file in the target directory, which is then
  hard-linked to the final name (``link`` fails if the name exists: an atomic exclusive create)
  and removed;
- S3: a conditional PUT (``If-None-Match: *``) — single-part, or on the completion of a multipart
  upload — so an object appears whole or not at all, and never replaces another;
- other fsspec filesystems: a temporary name moved into place after checking the target does not
  exist (best effort: the check and the move are two steps there).

Every writer takes a :class:`prdist.dataflow.io.storage.Location` (or a URL and its options, resolved
through :func:`prdist.dataflow.io.storage.resolve`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable

from prdist.errors import InputError, ParameterError
from prdist.dataflow.io.storage import Location, resolve
from prdist.dataflow.io.storage_errors import (
    AlreadyExists,
    info_or_none,
    is_precondition_failure,
    storage_errors,
)

__all__ = [
    "STALE_SECONDS",
    "dataset_publication",
    "publish",
    "read_parquet",
    "remove_dead_staging",
    "staging_path",
    "write_bytes_exclusive",
    "write_parquet",
]

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
        if exclusive and isinstance(exc, OSError) and is_precondition_failure(exc):
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
                if is_precondition_failure(exc) or isinstance(exc, FileExistsError):
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

