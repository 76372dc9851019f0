"""Ranked resources: Parquet datasets opened from their metadata alone.

A resource is one Parquet file or a directory of them (read recursively; names starting with
``.`` or ``_`` are skipped: temporary files, ``_SUCCESS``, ``_metadata``). Files are taken in
*natural* order of their paths (``part.2`` before ``part.10``) and row groups in file order; that
order is the storage order a sorted resource is sorted in.

Opening reads only the Parquet footers: row counts, the schema and the score column's min/max
statistics of every row group. Those statistics verify a claim of descending order cheaply and
map ranks to row groups, so :func:`prdist.dataflow.ranks.extract.extract_ranks` reads only the row
groups that hold the requested ranks.

Rank order (:mod:`prdist.ranking`) is descending score, ties broken by the 64-bit hash of the
key, then by the key.

DESIGN (like the ``Engine`` split of dask's ``dataframe/io/parquet``):

- metadata first, once, in the user's session (this module): :func:`open_resource` (list the
  files, read every footer on a thread pool, validate the schema, build the :class:`Resource`
  model and its fingerprint), and from it the :class:`Partition` s of a pass
  (:meth:`Resource.partitions`), the order its statistics show (:func:`order_from_statistics`)
  and what a task is sent (:func:`displays`, :func:`footers_of`, :func:`refs_of`);
- many times, inside tasks (:mod:`prdist.dataflow.io.parquet_tasks`): the readers
  (:func:`open_parquet` here, shared with the footer reads; ``read_group``, ``row_groups_of``,
  ``read_row_groups``, ``scores_of``, ``keys_of`` there). A task gets a :class:`Partition`
  (consecutive row groups of one file, with the footer read at opening, sent to the cluster once
  by :mod:`prdist.dataflow.engine.executor`) and never sees the :class:`Resource`;
- what an extraction is asked and returns (:mod:`prdist.dataflow.ranks.extraction`): the checks of
  ranks and columns, the result frame and its read statistics.

Steps built on this module: :mod:`~prdist.dataflow.ranks.order` (verify a claim of sorted order),
:mod:`~prdist.dataflow.ranks.extract` (ranks of a sorted resource), :mod:`~prdist.dataflow.ranks.select`
(ranks of an unsorted one).

Column types
------------
- key: any integer type or a string type, never null. Keys must be unique.
- score: float32/float64, or an integer type, never null, finite. Every score is compared as a
  float64 — as :func:`prdist.ranking.rank_order` does — so integers above 2**53 that round to the
  same float64 tie.
- label (optional): integer, boolean or float holding only 0 and 1.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import posixpath
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from prdist.errors import DataError, InputError, ParameterError
from prdist.dataflow.io.storage import Location, redact, resolve
from prdist.dataflow.io.storage_errors import check_regular_file, storage_errors

__all__ = [
    "DEFAULT_PARTITION_ROWS",
    "Footer",
    "OrderCheck",
    "Partition",
    "Resource",
    "RowGroup",
    "displays",
    "footers_of",
    "open_parquet",
    "open_resource",
    "order_from_statistics",
    "refs_of",
]

#: Rows per Dask task when a pass maps over a resource. A task holds one row group at a time,
#: so this bounds the number of tasks, not memory: 2**20 rows (some 20 ms of work per pass)
#: give tens of tasks from 10^7 rows up, enough to keep every worker busy to the end of a pass.
DEFAULT_PARTITION_ROWS = 1 << 20




@dataclass(frozen=True)
class RowGroup:
    """One Parquet row group: where it is, how many rows, its score range and column sizes."""

    file: int
    index: int
    num_rows: int
    score_min: float | None
    score_max: float | None
    column_bytes: tuple[tuple[str, int], ...] = field(repr=False)

    @property
    def has_score_range(self) -> bool:
        return self.score_min is not None and self.score_max is not None

    def bytes_of(self, columns) -> int:
        """Compressed bytes of these columns' chunks in this row group."""
        wanted = set(columns)
        return sum(size for name, size in self.column_bytes if name in wanted)


@dataclass(frozen=True, eq=False)
class Footer:
    """A file's footer as read when the resource was opened, and the file's size then."""

    metadata: pq.FileMetaData
    size: int


@dataclass(frozen=True)
class Partition:
    """A unit of Dask work: consecutive row groups of one file.

    ``units`` index :attr:`Resource.row_groups`; ``indices`` are the row-group numbers inside
    ``path``.
    """

    path: str
    indices: tuple[int, ...]
    units: tuple[int, ...]
    num_rows: int
    #: The file's footer as read by open_resource, so that the task does not read it again (on
    #: object storage a request, and with small row groups as many bytes as the row groups a
    #: selection reads).
    footer: Footer | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class OrderCheck:
    """Outcome of :func:`verify_order`.

    ``sorted`` is True when the order is descending; ``method`` is "statistics" (row-group
    min/max only: verifies every boundary between row groups, not the order inside them) or
    "full" (every score read); ``detail`` says where the order breaks, or why it could not be
    verified.
    """

    sorted: bool
    method: str
    detail: str = ""


@dataclass(frozen=True, eq=False)
class Resource:
    """An opened Parquet resource: files, row groups, row count, schema, fingerprint.

    Built by :func:`open_resource`. ``url`` is redacted (safe to print and store); ``fs`` and
    ``storage_options`` (which may hold credentials) are never shown.
    """

    url: str
    files: tuple[str, ...]
    row_groups: tuple[RowGroup, ...]
    n: int
    key: str
    score: str
    label: str | None
    key_kind: str
    fingerprint: str
    schema: pa.Schema = field(repr=False)
    root: str = field(repr=False)
    fs: object = field(repr=False)
    storage_options: dict = field(default_factory=dict, repr=False)
    #: Every file's :class:`Footer`, in file order: tasks open files with it.
    footers: tuple[Footer, ...] = field(default=(), repr=False, compare=False)

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        """Storage position (0-based) of the first row of every row group, then ``n``.

        For a sorted resource, row group ``g`` holds ranks ``offsets[g] + 1 .. offsets[g+1]``
        (up to a run of tied scores that crosses its boundary).
        """
        counts = np.fromiter((rg.num_rows for rg in self.row_groups), dtype=np.int64, count=len(self.row_groups))
        out = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=out[1:])
        out.flags.writeable = False
        return out

    def relative_name(self, file: int) -> str:
        """Path of file number ``file`` relative to the resource root."""
        path = self.files[file]
        if path == self.root:
            return posixpath.basename(path)
        return posixpath.relpath(path, self.root)

    def is_sorted_claim(self) -> bool:
        """True when row-group statistics show descending score order across every boundary.

        Cheap (metadata only): every row group's minimum is >= the next row group's maximum,
        across files too. It does not look inside row groups; :func:`verify_order` with
        ``full=True`` does. :func:`extract_ranks` needs exactly this claim, no more: it orders
        the rows it reads itself.
        """
        return order_from_statistics(self).sorted

    def rank_ranges(self):
        """One row per row group: file, row_group, num_rows, first_rank, last_rank, score_max, score_min.

        Ranks are storage positions + 1: the ranks of a sorted resource, except that the items
        of a run of tied scores crossing a row-group boundary share that run's ranks. A pandas
        DataFrame (pandas loads here, not with the module).
        """
        import pandas as pd

        offsets = self.offsets
        return pd.DataFrame(
            {
                "file": [self.relative_name(rg.file) for rg in self.row_groups],
                "row_group": np.array([rg.index for rg in self.row_groups], dtype=np.int32),
                "num_rows": np.diff(offsets),
                "first_rank": offsets[:-1] + 1,
                "last_rank": offsets[1:],
                "score_max": np.array([np.nan if rg.score_max is None else rg.score_max for rg in self.row_groups]),
                "score_min": np.array([np.nan if rg.score_min is None else rg.score_min for rg in self.row_groups]),
            }
        )

    def partitions(self, max_rows: int = DEFAULT_PARTITION_ROWS, units: Sequence[int] | None = None) -> tuple[Partition, ...]:
        """Cut the row groups (all, or ``units``) into Dask tasks of at most ``max_rows`` rows.

        A partition never spans files; a row group larger than ``max_rows`` is a partition of its own.
        """
        chosen = range(len(self.row_groups)) if units is None else units
        parts: list[Partition] = []
        current: list[int] = []
        rows = 0

        def flush():
            if current:
                first = self.row_groups[current[0]]
                parts.append(
                    Partition(
                        path=self.files[first.file],
                        indices=tuple(self.row_groups[u].index for u in current),
                        units=tuple(current),
                        num_rows=rows,
                        footer=self.footer(first.file),
                    )
                )

        for unit in chosen:
            rg = self.row_groups[unit]
            if current and (self.row_groups[current[-1]].file != rg.file or rows + rg.num_rows > max_rows):
                flush()
                current, rows = [], 0
            current.append(unit)
            rows += rg.num_rows
        flush()
        return tuple(parts)

    def footer(self, file: int):
        """The footer of file number ``file`` as read when the resource was opened, or None."""
        return self.footers[file] if file < len(self.footers) else None

    def bytes_of(self, units, columns) -> int:
        """Compressed bytes of ``columns`` in the row groups ``units``."""
        return sum(self.row_groups[u].bytes_of(columns) for u in units)

    def describe(self) -> dict:
        """What a manifest records about the input: no credentials, only the redacted URL."""
        return {
            "url": self.url,
            "fingerprint": self.fingerprint,
            "n": self.n,
            "files": len(self.files),
            "row_groups": len(self.row_groups),
            "key": self.key,
            "score": self.score,
            "label": self.label,
            "sorted_claim": self.is_sorted_claim(),
            "storage_options": redact(self.storage_options),
        }


_PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def _find_remote(location: Location, root: str) -> dict[str, dict]:
    with storage_errors(location, action="list"):
        return location.fs.find(root, detail=True)


def _natural_key(path: str):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def _is_hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


def _find_local(location: Location, root: str) -> dict[str, dict]:
    """Every Parquet file below a local directory, symbolic links followed, each reached once.

    fsspec's ``find`` reports a symbolic link as neither file nor directory: a linked part file
    or directory would be skipped without a word. Here links are followed; a broken link, a
    FIFO or device named like a Parquet file, an unreadable directory, and a file or directory
    reached twice (or a loop) are refused: the resource is never smaller or larger than it is.
    """
    seen_dirs: dict[str, str] = {}
    seen_files: dict[str, str] = {}
    entries = {}

    def refuse(exc: OSError):
        raise exc  # os.walk skips what it cannot read unless told otherwise

    def shown(path: str) -> str:
        return location.url if path == root else location.child(posixpath.relpath(path, root)).url

    with storage_errors(location, action="list"):
        for directory, dirnames, filenames in os.walk(root, followlinks=True, onerror=refuse):
            real = os.path.realpath(directory)
            if real in seen_dirs:
                raise InputError(
                    f"{location.url}: the directories {shown(seen_dirs[real])} and {shown(directory)} are one (symbolic "
                    "links lead there twice, "
                    "or loop). Remove the extra link: every file of a resource is read once."
                )
            seen_dirs[real] = directory
            dirnames[:] = sorted(d for d in dirnames if not _is_hidden(d))
            for name in filenames:
                path = posixpath.join(directory, name)
                if _is_hidden(name) or not name.endswith(_PARQUET_SUFFIXES):
                    continue
                if check_regular_file(location.fs, path, where=shown(path), role="Parquet file") is None:
                    raise InputError(f"The Parquet file {shown(path)} disappeared while the resource was listed. Run again on data that stays put.")
                twin = seen_files.setdefault(os.path.realpath(path), path)
                if twin != path:
                    raise InputError(
                        f"{shown(path)} and {shown(twin)} are one file (a symbolic link leads there twice). Remove "
                        "the extra link: every file of a resource is read once."
                    )
                entries[path] = {**location.fs.info(path), "type": "file"}
    return entries


def _list_files(location: Location) -> list[tuple[str, dict]]:
    fs, root = location.fs, location.path.rstrip("/") or location.path
    with storage_errors(location, action="open"):
        info = fs.info(root)
    if info.get("type") == "directory":
        entries = _find_local(location, root) if location.is_local else _find_remote(location, root)
    else:
        check_regular_file(fs, root, where=location, role="resource")
        entries = {root: info}
    files = []
    for path, entry in entries.items():
        if entry.get("type", "file") != "file":
            continue
        relative = posixpath.relpath(path, root) if path != root else posixpath.basename(path)
        if path != root and _is_hidden(relative):
            continue
        if path != root and not relative.endswith(_PARQUET_SUFFIXES):
            continue
        files.append((path, entry))
    if not files:
        raise InputError(
            f"{location.url} holds no Parquet files (names ending in .parquet; names starting with "
            "'.' or '_' are skipped). Point the URL at a Parquet file or a directory of them."
        )
    files.sort(key=lambda item: _natural_key(item[0]))
    return files


def _plain_type(dtype: pa.DataType) -> pa.DataType:
    """A column's type up to encoding: dictionary, large and view variants are the same data."""
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return pa.string()
    if pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype):
        return pa.binary()
    return dtype


def _check_same_columns(first_schema: pa.Schema, schema: pa.Schema, *, first: str, other: str, key: str) -> None:
    """Every file of a resource has the columns of the first, with the same types (the key's
    kind is checked apart): a column missing from one file would fail a read deep in a run."""
    for name in first_schema.names:
        if name not in schema.names:
            raise DataError(
                f"{other} lacks the column {name!r} that {first} has. Every file of a resource needs the "
                "same columns: rewrite the files with one schema, or drop the column from every file."
            )
    for name in schema.names:
        if name not in first_schema.names:
            raise DataError(
                f"{other} has a column {name!r} that {first} lacks. Every file of a resource needs the "
                "same columns: rewrite the files with one schema, or drop the column from every file."
            )
        mine, theirs = _plain_type(schema.field(name).type), _plain_type(first_schema.field(name).type)
        numeric = all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in (mine, theirs))
        if name != key and mine != theirs and not numeric:
            raise DataError(
                f"The column {name!r} is {mine} in {other} and {theirs} in {first}. Write every file with "
                "one type per column."
            )


def _key_kind(dtype: pa.DataType) -> str | None:
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_integer(dtype):
        return "int"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return "string"
    return None


def _read_footer(fs, path: str, display: str):
    with open_parquet(fs, path, display=display) as parquet:
        return parquet.metadata, parquet.schema_arrow


def store_failed(exc: BaseException) -> bool:
    """Whether a read error is the store's, not the bytes': an OSError with an errno (the OS's, or
    the object store client's, e.g. s3fs's EREMOTEIO for a restarting SeaweedFS's HTTP 500 "please
    try again"). Arrow's own errors on bad bytes carry none. Such an error is retried, not called
    corrupt data."""
    return isinstance(exc, OSError) and exc.errno is not None


def corrupt_file_error(display: str, exc: BaseException) -> DataError:
    """The DataError for a file that is not readable Parquet."""
    reason = " ".join(str(exc).split())  # pyarrow's reasons span lines; a message is one
    if "magic bytes" in reason and display.lower().removesuffix(".gz").endswith(TEXT_SUFFIXES):  # a dump
        return DataError(
            f"{display} is not Parquet but, by its name, a text dump: make a ranked resource of it with "
            "'prdist ingest FILE --out DIR --score COL --key COL' (CSV, TSV or JSON Lines) and give that DIR."
        )
    return DataError(
        f"{display} is not a readable Parquet file ({reason}). It is corrupted, truncated or not "
        "Parquet at all: rewrite it, or remove it from the dataset (a CSV, TSV or JSON Lines dump "
        "becomes a resource with 'prdist ingest')."
    )


#: File name endings of the text dumps that ``prdist ingest`` reads (also compressed with gzip).
TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".tab", ".jsonl", ".ndjson", ".json")


def _finite_or_none(value):
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


#: How each column role is named on the command line and in the API, for messages read by both.
_ROLE_OPTIONS = {"key": ("--key", "key"), "score": ("--score", "score"), "label": ("--oracle-column", "label")}


def _validate_schema(schema: pa.Schema, display: str, *, key: str, score: str, label: str | None) -> str:
    names = schema.names
    for role, name in (("key", key), ("score", score), ("label", label)):
        if name is not None and name not in names:
            flag, parameter = _ROLE_OPTIONS[role]
            raise DataError(
                f"{display} has no {role} column {name!r} (columns: {', '.join(names)}). Name the "
                f"right column with {flag} (the {parameter!r} parameter in Python), or add it."
            )
    kind = _key_kind(schema.field(key).type)
    if kind is None:
        raise DataError(
            f"The key column {key!r} of {display} has type {schema.field(key).type}; keys must be "
            "integers or strings. Cast the column to int64 or string."
        )
    score_type = schema.field(score).type
    if not (pa.types.is_floating(score_type) or pa.types.is_integer(score_type)):
        raise DataError(
            f"The score column {score!r} of {display} has type {score_type}; scores must be float "
            "(or integer) numbers. Cast the column to float64."
        )
    if label is not None:
        label_type = schema.field(label).type
        if not (pa.types.is_integer(label_type) or pa.types.is_boolean(label_type) or pa.types.is_floating(label_type)):
            raise DataError(
                f"The label column {label!r} of {display} has type {label_type}; labels must be 0/1 "
                "numbers. Cast the column to int8."
            )
    return kind


def open_resource(url, *, storage_options=None, key: str = "key", score: str = "score", label: str | None = None) -> Resource:
    """Open a Parquet resource from its metadata: files, row groups, N, schema, fingerprint.

    Parameters
    ----------
    url : str
        A Parquet file or a directory of Parquet files: local path, ``file://``, ``s3://`` or any
        fsspec URL.
    storage_options : dict or JSON text, optional
        fsspec options (credentials, ``endpoint_url``). Default: the standard AWS chain for S3.
    key, score : str, default="key", "score"
        Names of the item-key and score columns.
    label : str, optional
        Name of a 0/1 ground-truth column (simulations, validation sets).

    Returns
    -------
    Resource

    Raises
    ------
    InputError
        The URL cannot be opened (no such path or bucket, wrong credentials, no Parquet files).
    DataError
        A file is not readable Parquet, a column is missing or of the wrong type, the files
        disagree on the key type, statistics show nulls or non-finite scores or labels outside
        0/1, or the resource has no rows.

    Notes
    -----
    The fingerprint hashes every file's relative path, size, ETag / modification time and the
    row counts and score ranges of its row groups: it changes when the data does, and costs no
    data read.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.9, 0.5, 0.5]}), os.path.join(d, "a.parquet"))
    >>> res = open_resource(d)
    >>> res.n, len(res.files), res.is_sorted_claim()
    (3, 1, True)
    """
    _check_columns(key, score, label, owner="open_resource")
    location = resolve(url, storage_options=storage_options)
    listed = _list_files(location)
    root = location.path.rstrip("/") or location.path
    relatives = [posixpath.relpath(path, root) if path != root else posixpath.basename(path) for path, _ in listed]
    names = [location.url if path == root else location.child(relative).url for (path, _), relative in zip(listed, relatives)]
    footers = _read_footers(location.fs, [path for path, _ in listed], names)
    key_kind = schema = None
    row_groups: list[RowGroup] = []
    fingerprint_files = []
    for file_number, ((path, entry), (metadata, arrow_schema)) in enumerate(zip(listed, footers)):
        kind = _validate_schema(arrow_schema, names[file_number], key=key, score=score, label=label)
        if key_kind is None:
            key_kind, schema = kind, arrow_schema
        elif kind != key_kind:
            raise DataError(
                f"The files of {location.url} disagree on the key type: {names[file_number]} has {kind} keys, "
                f"earlier files {key_kind} keys. Write every file with one key type."
            )
        else:
            _check_same_columns(schema, arrow_schema, first=names[0], other=names[file_number], key=key)
        groups = _row_groups(metadata, file_number, names[file_number], key=key, score=score, label=label)
        row_groups += groups
        fingerprint_files.append(_file_fingerprint(relatives[file_number], entry, groups))
    n = sum(rg.num_rows for rg in row_groups)
    if n == 0:
        raise DataError(f"The resource {location.url} holds no rows. Point the URL at a non-empty dataset.")
    digest = hashlib.sha256(
        json.dumps({"columns": [key, score, label], "files": fingerprint_files}, sort_keys=True).encode()
    ).hexdigest()
    return Resource(
        url=location.url,
        files=tuple(path for path, _ in listed),
        row_groups=tuple(row_groups),
        n=n,
        key=key,
        score=score,
        label=label,
        key_kind=key_kind,
        fingerprint=digest,
        schema=schema,
        root=root,
        fs=location.fs,
        storage_options=location.storage_options,
        footers=tuple(Footer(metadata, int(entry.get("size") or -1)) for (_, entry), (metadata, _) in zip(listed, footers)),
    )


def _check_columns(key, score, label, *, owner: str) -> None:
    for name, value in (("key", key), ("score", score)):
        if not isinstance(value, str) or not value:
            raise ParameterError(f"The {name!r} parameter of {owner} must be a column name. Got {value!r} instead.")
    if label is not None and (not isinstance(label, str) or not label):
        raise ParameterError(f"The 'label' parameter of {owner} must be a column name or None. Got {label!r} instead.")
    if len({key, score, label} - {None}) != 2 + (label is not None):
        raise ParameterError(f"The key, score and label columns of {owner} must be distinct. Got {key!r}, {score!r}, {label!r}.")


def _read_footers(fs, paths: list[str], names: list[str]) -> list[tuple[pq.FileMetaData, pa.Schema]]:
    """Every file's (footer, Arrow schema), in file order."""
    if len(paths) == 1:
        return [_read_footer(fs, paths[0], names[0])]
    # Footers are small; on object stores the latency of one request per file dominates.
    with ThreadPoolExecutor(max_workers=min(16, len(paths))) as pool:
        return list(pool.map(lambda i: _read_footer(fs, paths[i], names[i]), range(len(paths))))


def _row_groups(metadata: pq.FileMetaData, file_number: int, display: str, *, key: str, score: str,
                label: str | None) -> list[RowGroup]:
    """The non-empty row groups of one file, their statistics checked (nulls, infinities, labels)."""
    column_index = {metadata.schema.column(j).path: j for j in range(metadata.num_columns)}
    score_j = column_index[score]
    checked = [(key, column_index[key]), (score, score_j)] + ([(label, column_index[label])] if label else [])
    out = []
    for index in range(metadata.num_row_groups):
        group = metadata.row_group(index)
        if group.num_rows == 0:
            continue
        for name, j in checked:
            stats = group.column(j).statistics
            if stats is not None and stats.has_null_count and stats.null_count > 0:
                raise DataError(
                    f"The {name!r} column of {display} holds {stats.null_count} null values (row "
                    f"group {index}). Drop or repair those items first."
                )
        _check_key_range(group.column(column_index[key]).statistics, display, key=key, index=index)
        lo, hi = _score_range(group.column(score_j).statistics, display, score=score, index=index)
        if label:
            _check_label_range(group.column(column_index[label]).statistics, display, label=label, index=index)
        sizes = tuple(
            (group.column(j).path_in_schema, int(group.column(j).total_compressed_size))
            for j in range(group.num_columns)
        )
        out.append(RowGroup(file_number, index, int(group.num_rows), lo, hi, sizes))
    return out


_INT64_MAX = 2**63 - 1


def _empty_key_error(key: str, where: str) -> DataError:
    return DataError(
        f"The key column {key!r} holds an empty key in {where}. Every item needs a key an annotator "
        "can name: give those items keys, or drop them."
    )


def _uint64_key_error(key: str, where: str, value) -> DataError:
    # Keys are int64 or text through ranking, staging and the label store; wrapping 2^64 - 1000
    # to -1000 would show the wrong key and collide with a real one, so such keys are refused.
    return DataError(
        f"The key column {key!r} holds the unsigned key {value} in {where}, beyond the int64 keys prdist "
        "uses. Cast the key column to string (keys are then shown and stored as they are)."
    )


def _check_key_range(stats, display: str, *, key: str, index: int) -> None:
    """Refuse, from statistics, keys that cannot be told apart or named: "" and integers >= 2^63."""
    if stats is None or not stats.has_min_max:
        return
    where = f"{display} (row group {index})"
    if stats.min in ("", b""):
        raise _empty_key_error(key, where)
    if isinstance(stats.max, int) and stats.max > _INT64_MAX:
        raise _uint64_key_error(key, where, stats.max)


def _score_range(stats, display: str, *, score: str, index: int) -> tuple[float | None, float | None]:
    """A row group's (min, max) score from its statistics; (None, None) without statistics."""
    if stats is None or not stats.has_min_max:
        return None, None
    for value in (stats.min, stats.max):
        if isinstance(value, float) and math.isinf(value):
            raise DataError(
                f"The score column {score!r} of {display} holds an infinite score (row "
                f"group {index}). Scores must be finite: drop or repair those items first."
            )
    return _finite_or_none(stats.min), _finite_or_none(stats.max)


def _check_label_range(stats, display: str, *, label: str, index: int) -> None:
    if stats is not None and stats.has_min_max and (float(stats.min) < 0 or float(stats.max) > 1):
        raise DataError(
            f"The label column {label!r} of {display} holds values outside 0/1 (row group "
            f"{index}: min {stats.min}, max {stats.max}). Map labels to 0 and 1."
        )


def _file_fingerprint(relative: str, entry: dict, groups: list[RowGroup]) -> list:
    """What the fingerprint hashes of one file: path, size, ETag or mtime, row counts, score ranges."""
    tag = entry.get("ETag") or entry.get("etag") or entry.get("md5")
    mtime = entry.get("mtime") or entry.get("LastModified") or entry.get("last_modified") or entry.get("updated")
    return [relative, int(entry.get("size") or 0), None if tag is None else str(tag),
            None if mtime is None else str(mtime), [[rg.num_rows, rg.score_min, rg.score_max] for rg in groups]]


# --------------------------------------------------------------------------------------------
# Reading rows (used inside Dask tasks)


@contextlib.contextmanager
def open_parquet(fs, path: str, *, display: str, footer=None):
    """Open one Parquet file for reading row groups; errors name ``display``.

    ``footer``: the file's :class:`Footer` when already known (:attr:`Partition.footer`),
    which spares reading it again, unless the file's size has changed since.
    """
    is_local = isinstance(fs, LocalFileSystem)
    with storage_errors(display, action="read"):
        # A local file is read by Arrow's own file object: reads through a Python file object hold
        # the GIL and cost a third more (two threads reading key, score and label of 10^8 rows:
        # 0.59 s against 0.73 s). Not memory-mapped: a file truncated while mapped would kill the
        # process (SIGBUS) where a read error is reported. No read-ahead on object stores: pyarrow
        # asks for whole column chunks, each one range GET.
        with (pa.OSFile(path, "rb") if is_local else fs.open(path, "rb", cache_type="none")) as fh:
            size = fh.size() if is_local else getattr(fh, "size", None)
            if footer is not None and footer.size >= 0 and size is not None and size != footer.size:
                raise DataError(
                    f"{display} changed after the resource was opened: it has {size} bytes now, "
                    f"{footer.size} then. Open the resource again on data that stays put."
                )
            try:
                parquet = pq.ParquetFile(fh, metadata=None if footer is None else footer.metadata)
            except (pa.ArrowInvalid, pa.ArrowIOError) as exc:
                if store_failed(exc):
                    raise
                raise corrupt_file_error(display, exc) from None
            yield parquet


def order_from_statistics(resource: Resource) -> OrderCheck:
    """The order claim row-group statistics make: every minimum >= the next maximum."""
    groups = resource.row_groups
    for g, rg in enumerate(groups):
        if not rg.has_score_range:
            return OrderCheck(False, "statistics", f"{resource.relative_name(rg.file)} row group {rg.index} has no score statistics")
        if g and groups[g - 1].score_min < rg.score_max:
            prev = groups[g - 1]
            return OrderCheck(
                False,
                "statistics",
                f"{resource.relative_name(rg.file)} row group {rg.index} reaches score {rg.score_max!r}, above "
                f"the minimum {prev.score_min!r} of the row group before it "
                f"({resource.relative_name(prev.file)} row group {prev.index})",
            )
    return OrderCheck(True, "statistics")


def displays(resource: Resource) -> dict[str, str]:
    """File path -> its printable (redacted) URL, for error messages raised inside tasks."""
    out = {}
    for number, path in enumerate(resource.files):
        out[path] = resource.url if path == resource.root else f"{resource.url.rstrip('/')}/{resource.relative_name(number)}"
    return out


def footers_of(resource: Resource, file: int) -> dict:
    """path -> footer of file number ``file`` and of the next one (a block of a run of tied
    scores may cross into it; a block crossing further reads the footers it lacks)."""
    numbers = [f for f in (file, file + 1) if f < len(resource.files) and resource.footer(f) is not None]
    return {resource.files[f]: resource.footer(f) for f in numbers}


def refs_of(resource: Resource, units) -> list[tuple[str, list[int]]]:
    """Group row groups by file: [(path, [row-group index, ...]), ...] in storage order."""
    refs: list[tuple[str, list[int]]] = []
    for unit in units:
        rg = resource.row_groups[unit]
        path = resource.files[rg.file]
        if refs and refs[-1][0] == path:
            refs[-1][1].append(rg.index)
        else:
            refs.append((path, [rg.index]))
    return refs
