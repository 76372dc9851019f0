"""Bring your own data: turn CSV, TSV, JSONL or Parquet dumps into a resource ``prdist run`` reads.

A resource is a Parquet dataset with a unique text or integer ``key`` and a finite float64
``score`` (:mod:`prdist.dataflow.parquet`). :func:`ingest` reads the input files, builds the key
(several key columns are joined with ``|``), keeps one row per key (the one with the highest
score; the count of dropped rows is reported), refuses bad rows with their line numbers, and
publishes the rows **in rank order** with row groups of 2^14 rows and statistics on the score, so
that later runs detect the order and read only the row groups that hold the planned ranks.

Two paths, one result. When the input files are small enough to hold in memory
(``memory_limit`` bytes, decompressed: a compressed file is counted by streaming it once, and one
that decompresses beyond :data:`DECOMPRESSED_LIMIT` is refused before anything is parsed), they
are read, deduplicated and sorted here with :func:`prdist.ranking.rank_order`. Otherwise each file is read and checked in its own Dask task,
rows are shuffled by key and deduplicated per partition with the same kernel, staged unsorted, and
sorted by :func:`prdist.dataflow.ranked.write_ranked_copy`; the staging directory is removed (and
one that a killed ingest left is removed by a later one: :func:`prdist.dataflow.storage.remove_dead_staging`). Both
give the same rows in the same order (among duplicates of equal score, the in-memory path keeps
the first read, the Dask path any one). Either way the output appears whole or not at all (the
publication of :func:`prdist.dataflow.storage.dataset_publication`, commit marker written last:
:data:`INGEST_MARKER`, or the ranked copy's on the Dask path).

Each file is read whole by one task, so one input file must fit in a worker's memory; split very
large dumps into several files.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import posixpath
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._validation import check_choice
from ..errors import DataError, InputError, ParameterError
from ..ranking import rank_order
from ..redaction import display_url
from .parquet import open_resource
from .storage import dataset_publication, filesystem, publish, remove_dead_staging, resolve, staging_path, storage_errors

__all__ = ["DECOMPRESSED_LIMIT", "FORMATS", "INGEST_MARKER", "IngestResult", "IngestSpec", "ingest", "read_rows"]

FORMATS = ("csv", "tsv", "jsonl", "parquet")
INGEST_MARKER = "_prdist_ingest.json"
ROW_GROUP_ROWS = 1 << 14
KEY_SEPARATOR = "|"
# Input bytes sorted in memory; beyond, a Dask sort. Text keys cost far more in memory than on
# disk: a 29 MB CSV of 10^6 rows with a two-column key peaked at 650 MB (measured, load 5).
MEMORY_LIMIT = 128 << 20
#: The most bytes one compressed input file may decompress to. Each file is read whole, in
#: memory, so a file that decompresses beyond it (a gzip bomb: a few MB that hold many GB) is
#: refused before any row is parsed; ``ingest(..., decompressed_limit=)`` moves it.
DECOMPRESSED_LIMIT = 1 << 30
_SHOWN_LINES = 5
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
               ".parquet": "parquet", ".pq": "parquet"}
_COMPRESSION = (".gz", ".bz2", ".xz", ".zst", ".zip")


@dataclass(frozen=True)
class IngestSpec:
    """How to read the input: the score column, the key column(s), the format and column names.

    Parameters
    ----------
    score : str
        Column holding the confidence score (any finite number).
    keys : tuple of str
        Column(s) that identify an item; several are joined with ``|`` into a text key.
    format : {"csv", "tsv", "jsonl", "parquet"} or None
        None: from each file's extension (``.csv``, ``.tsv``, ``.jsonl``, ``.parquet``, optionally
        compressed, e.g. ``.csv.gz``).
    columns : tuple of str or None
        Names of the columns of CSV/TSV files that have no header row, in file order.
    """

    score: str
    keys: tuple[str, ...]
    format: str | None = None
    columns: tuple[str, ...] | None = None

    def __post_init__(self):
        owner = "ingest"
        if not self.keys:
            raise ParameterError("ingest needs at least one key column (--key COL).")
        if self.format is not None:
            check_choice(self.format, name="format", owner=owner, choices=FORMATS)
        if self.columns is not None:
            if len(set(self.columns)) != len(self.columns) or not all(self.columns):
                raise ParameterError(f"--columns must name every column once; got {','.join(self.columns)!r}.")
        if self.score in self.keys:
            raise ParameterError(f"The score column {self.score!r} cannot also be a key column.")


@dataclass(frozen=True)
class IngestResult:
    """What :func:`ingest` wrote: the resource's URL, its rows and the duplicate rows dropped."""

    url: str
    rows: int
    duplicates: int
    sources: int


# --------------------------------------------------------------------------------------------
# Reading one file (the per-file kernel of both paths)
# --------------------------------------------------------------------------------------------
def file_format(url: str, spec: IngestSpec) -> str:
    """The format of ``url``: the spec's, or its extension's (refused when neither says)."""
    fmt = spec.format
    if fmt is None:
        name = url.lower()
        for suffix in _COMPRESSION:
            name = name.removesuffix(suffix)
        fmt = _EXTENSIONS.get(posixpath.splitext(name)[1])
    if fmt is None:
        raise InputError(f"Cannot tell the format of {display_url(url)} from its name; give --format csv, tsv, jsonl or parquet.")
    if spec.columns is not None and fmt not in ("csv", "tsv"):
        raise ParameterError(f"--columns names the columns of header-less CSV/TSV files; {display_url(url)} is {fmt}, which names its own. Drop --columns.")
    return fmt


def _read_text_table(fh, fmt: str, spec: IngestSpec) -> pd.DataFrame:
    """CSV/TSV as text columns indexed by line number; every line kept (blank ones become bad
    rows). The first line fixes the number of fields, so a longer line later is refused."""
    options = dict(sep="," if fmt == "csv" else "\t", dtype=str, keep_default_na=False, na_values=[""],
                   skip_blank_lines=False, header=None, index_col=False)
    if fmt == "tsv":
        options["quoting"] = csv.QUOTE_NONE  # TSV dumps hold quotes as text (ReVerb: 's, "...")
    try:
        frame = pd.read_csv(fh, **options)
    except pd.errors.ParserError as exc:
        raise DataError(f"{' '.join(str(exc).split())}; fix the row or name the right --format / --columns.") from None
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=list(spec.columns or ()))
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    if spec.columns is None:
        names, frame = frame.iloc[0].tolist(), frame.iloc[1:]
        if any(not isinstance(name, str) for name in names) or len(set(names)) != len(names):
            raise DataError(f"the header line must name every column once; got {names}. Fix it, or give --columns for a file without one.")
    else:
        names = list(spec.columns)
        if frame.shape[1] != len(names):
            raise DataError(f"line 1 has {frame.shape[1]} fields but --columns names {len(names)}; name every column.")
    frame.columns = names
    return frame


def _read_jsonl(fh) -> pd.DataFrame:
    records, lines = [], []
    for number, line in enumerate(fh, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"line {number} is not JSON ({exc.msg}); fix or drop it.") from None
        if not isinstance(record, dict):
            raise DataError(f"line {number} is not a JSON object; every line must hold one record.")
        records.append(record)
        lines.append(number)
    frame = pd.DataFrame.from_records(records)
    frame.index = pd.Index(lines)
    return frame


def read_rows(url: str, spec: IngestSpec, storage_options=None) -> pd.DataFrame:
    """Read one input file as a frame with ``key`` (text or int64), ``score`` (float64) and the
    other columns, each row indexed by its line number (Parquet: row number from 1).

    Raises
    ------
    DataError
        Missing columns, or rows with a missing key or a score that is not a finite number (all
        their line numbers, up to five shown, in one line).
    """
    fmt = file_format(url, spec)
    fs, path = filesystem(url, storage_options)
    where = display_url(url)
    with storage_errors(url, action="read"):
        try:
            if fmt == "parquet":
                with fs.open(path, "rb") as fh:
                    frame = pq.read_table(fh).to_pandas()
                frame.index = pd.RangeIndex(1, len(frame) + 1)
            else:
                with fs.open(path, "rt", compression="infer", encoding="utf-8", newline="" if fmt != "jsonl" else None) as fh:
                    if fmt == "jsonl":
                        frame = _read_jsonl(fh)
                    else:
                        frame = _read_text_table(fh, fmt, spec)
        except DataError as exc:
            raise DataError(f"{where}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise DataError(f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start}); convert it or give --format parquet.") from None
    return _keyed(frame, spec, where)


def _keyed(frame: pd.DataFrame, spec: IngestSpec, where: str) -> pd.DataFrame:
    """The frame with ``key`` and ``score`` built and checked; bad rows refused by line number."""
    needed = [*spec.keys, spec.score]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        shown = ", ".join(map(str, frame.columns[:12]))
        raise DataError(f"{where} has no column {', '.join(map(repr, missing))} (its columns: {shown}); name them with --key/--score, or --columns for header-less files.")
    for name, role in (("key", spec.keys), ("score", (spec.score,))):
        if name in frame.columns and name not in role:
            raise DataError(f"{where} has a column {name!r} that is not the {name} (--{name}); rename that column first.")
    score = pd.to_numeric(frame[spec.score], errors="coerce").to_numpy(dtype=np.float64)
    parts = [frame[c] for c in spec.keys]
    bad = ~np.isfinite(score)
    for part in parts:
        bad |= part.isna().to_numpy()
    if len(parts) > 1:
        text = [p.astype(str) for p in parts]
        for p in text:
            bad |= p.str.contains(KEY_SEPARATOR, regex=False).to_numpy()
        key = text[0].str.cat(text[1:], sep=KEY_SEPARATOR)
    else:
        key = parts[0]
        if key.dtype.kind not in "iu":
            key = key.astype(str)
    if bad.any():
        lines = frame.index.to_numpy()[bad]
        shown = ", ".join(str(int(x)) for x in lines[:_SHOWN_LINES]) + (", ..." if lines.size > _SHOWN_LINES else "")
        what = "a missing key field, a key field holding '|', or a score that is not a finite number" if len(parts) > 1 else "a missing key or a score that is not a finite number"
        raise DataError(f"{where}: {lines.size} bad row(s) ({what}) at line(s) {shown}; fix or drop them and ingest again.")
    rest = frame.drop(columns=[spec.score, *([] if len(parts) > 1 else list(spec.keys))])
    return pd.concat([pd.DataFrame({"key": key.to_numpy(), "score": score}, index=frame.index), rest], axis=1)


# --------------------------------------------------------------------------------------------
# Kernels shared by both paths
# --------------------------------------------------------------------------------------------
def keep_highest(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per key: the one with the highest score (the first read among equals).

    >>> keep_highest(pd.DataFrame({"key": ["a", "b", "a"], "score": [0.1, 0.5, 0.3]}))["score"].tolist()
    [0.5, 0.3]
    """
    order = np.argsort(-frame["score"].to_numpy(), kind="stable")
    best = frame.iloc[order]
    return best.loc[~best["key"].duplicated(keep="first").to_numpy()].sort_index(kind="stable") if len(frame) else frame


def _ranked_table(frame: pd.DataFrame) -> pa.Table:
    order = rank_order(frame["score"].to_numpy(), frame["key"].to_numpy())
    return pa.Table.from_pandas(frame.iloc[order].reset_index(drop=True), preserve_index=False)


def _check_schemas(frames: list[pd.DataFrame], sources: list[str]) -> None:
    columns = list(frames[0].columns)
    for frame, source in zip(frames[1:], sources[1:]):
        if list(frame.columns) != columns:
            raise DataError(f"{display_url(source)} has columns {list(frame.columns)}, unlike the first file's {columns}; ingest files of one layout together.")


# --------------------------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------------------------
def _input_size(url: str, storage_options, limit: int) -> int:
    """The bytes ``url`` holds as read: its size, or for a compressed file its decompressed size,
    counted by streaming it once (stopping past ``limit``: refused, before anything is parsed)."""
    fs, path = filesystem(url, storage_options)
    with storage_errors(url, action="read"):
        stored = int(fs.size(path))
        if not url.lower().endswith(_COMPRESSION):
            return stored
        total = 0
        with fs.open(path, "rb", compression="infer") as fh:
            while chunk := fh.read(1 << 20):
                total += len(chunk)
                if total > limit:
                    raise DataError(
                        f"{display_url(url)} decompresses to more than {limit:,} bytes (it holds {stored:,} compressed), the "
                        "most one input file may hold: each file is read whole, in memory. Split the data into smaller files "
                        "(e.g. 'zcat FILE | split -C 500M - part-') and ingest those.")
    return total


def ingest(sources, out: str, spec: IngestSpec, *, storage_options=None, client=None, memory_limit: int = MEMORY_LIMIT,
           decompressed_limit: int = DECOMPRESSED_LIMIT) -> IngestResult:
    """Write the rows of ``sources`` as a ranked resource at ``out``.

    Parameters
    ----------
    sources : list of str
        Input files (paths or fsspec URLs), all of one layout.
    out : str
        Where the resource goes; must not exist yet.
    spec : IngestSpec
        Score and key columns, format, column names.
    storage_options : dict, optional
        fsspec options for the inputs and the output.
    client : distributed.Client, optional
        Cluster for inputs above ``memory_limit``; default Dask's local scheduler.
    memory_limit : int
        Inputs of at most this many bytes (decompressed) are sorted in memory.
    decompressed_limit : int
        The most bytes one compressed file may decompress to (:data:`DECOMPRESSED_LIMIT`); a file
        beyond it is refused before anything is parsed.

    Returns
    -------
    IngestResult

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "kb.csv"), "w") as fh:
    ...     _ = fh.write("s,o,conf\\nParis,France,0.9\\nRome,Italy,0.7\\nParis,France,0.4\\n")
    >>> result = ingest([os.path.join(d, "kb.csv")], os.path.join(d, "kb"), IngestSpec(score="conf", keys=("s", "o")))
    >>> result.rows, result.duplicates
    (2, 1)
    >>> pq.read_table(os.path.join(d, "kb"))["key"].to_pylist()
    ['Paris|France', 'Rome|Italy']
    """
    sources = [os.fspath(s) for s in sources]
    if not sources:
        raise ParameterError("ingest needs at least one input file.")
    if not isinstance(spec, IngestSpec):
        raise ParameterError(f"The 'spec' parameter of ingest must be an IngestSpec. Got {type(spec).__name__} instead.")
    for source in sources:
        file_format(source, spec)  # before any read: a name without a format fails at once
    size = sum(_input_size(source, storage_options, decompressed_limit) for source in sources)
    if size <= memory_limit:
        return _ingest_in_memory(sources, out, spec, storage_options)
    return _ingest_with_dask(sources, out, spec, storage_options, client)


def _ingest_in_memory(sources, out, spec, storage_options) -> IngestResult:
    frames = [read_rows(s, spec, storage_options) for s in sources]
    _check_schemas(frames, sources)
    rows = pd.concat(frames, ignore_index=True)
    unique = keep_highest(rows)
    if unique.empty:
        raise DataError(f"The input ({', '.join(map(display_url, sources))}) holds no rows; a resource needs at least one item.")
    table = _ranked_table(unique)
    name = "part-00000.parquet"
    result = IngestResult(url=out, rows=table.num_rows, duplicates=len(rows) - len(unique), sources=len(sources))
    location = resolve(out, storage_options=storage_options)

    def write(sink) -> None:
        pq.write_table(table, sink, row_group_size=ROW_GROUP_ROWS, write_statistics=["score"])

    with dataset_publication(location, [name], _marker(result, spec, sources, [[name, table.num_rows]]), marker_name=INGEST_MARKER) as directory:
        publish(directory.child(name), write, exclusive=True)
    return result


def _marker(result: IngestResult, spec: IngestSpec, sources, files) -> bytes:
    record = {
        "sources": [display_url(s) for s in sources],
        "score": spec.score,
        "keys": list(spec.keys),
        "key_separator": KEY_SEPARATOR,
        "rows": result.rows,
        "duplicates_dropped": result.duplicates,
        "files": files,
    }
    return (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()


def _ingest_with_dask(sources, out, spec, storage_options, client) -> IngestResult:
    import dask
    import dask.dataframe as dd

    from .ranked import write_ranked_copy

    parts = [dask.delayed(read_rows)(s, spec, storage_options) for s in sources]
    meta = read_rows(sources[0], spec, storage_options).iloc[:0]  # the schema, and the first file's errors early
    frame = dd.from_delayed(parts, meta=meta, verify_meta=True)
    unique = frame.shuffle(on="key").map_partitions(keep_highest, meta=meta)
    location = resolve(out, storage_options=storage_options)
    if location.is_local:
        remove_dead_staging(posixpath.dirname(location.path.rstrip("/")))
    staging = location.fs.unstrip_protocol(staging_path(location.path, "ingest"))
    try:
        write = unique.to_parquet(staging, storage_options=storage_options or None, write_index=False, compute=False)
        counted = frame.map_partitions(len).sum()
        computed = client.compute([write, counted], sync=True) if client is not None else dask.compute(write, counted)
        read = int(computed[1])
        staged = open_resource(staging, storage_options=storage_options)
        copy = write_ranked_copy(staged, out, client=client, storage_options=storage_options, row_group_size=ROW_GROUP_ROWS)
    finally:
        fs, path = filesystem(staging, storage_options)
        fs.invalidate_cache(path)  # the listing cached before the parts were written says "absent"
        with contextlib.suppress(FileNotFoundError):
            fs.rm(path, recursive=True)
        with contextlib.suppress(FileNotFoundError, OSError):
            fs.rm_file(path.rstrip("/") + "/")  # the empty "directory" object some stores keep
    return IngestResult(url=out, rows=copy.n, duplicates=read - copy.n, sources=len(sources))
