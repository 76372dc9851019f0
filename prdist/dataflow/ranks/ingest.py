"""Bring your own data: turn CSV, TSV, JSONL or Parquet dumps into a resource ``prdist run`` reads.

A resource is a Parquet dataset with a unique text or integer ``key`` and a finite float64
``score`` (:mod:`prdist.dataflow.io.parquet`). :func:`ingest` reads the input files, builds the key
(several key columns are joined with ``|``), refuses a key that is not unique (the count, an
example and the fix; ``duplicates="keep-highest"`` keeps the row with the highest score of each
key instead, and reports the count dropped), refuses bad rows with their line numbers, and
publishes the rows **in rank order** with row groups of 2^14 rows and statistics on the score, so
that later runs detect the order and read only the row groups that hold the planned ranks.

Two paths, one result. When the input files are small enough to hold in memory
(``memory_limit`` bytes, decompressed: a compressed file is counted by streaming it once, and one
that decompresses beyond :data:`DECOMPRESSED_LIMIT` is refused before anything is parsed), they
are read, deduplicated and sorted here with :func:`prdist.ranking.rank_order`. Otherwise each file is read and checked in its own Dask task,
rows are shuffled by key and deduplicated per partition with the same kernel, staged unsorted (on
the engine :func:`prdist.dataflow.engine.executor.compute_all` chooses: the cluster, or in-process), and
sorted by :func:`prdist.dataflow.ranks.ranked.write_ranked_copy`; the staging directory is removed (and
one that a killed ingest left is removed by a later one: :func:`prdist.dataflow.io.publishing.remove_dead_staging`). Both
give the same rows in the same order (among duplicates of equal score, the in-memory path keeps
the first read, the Dask path any one). Either way the output appears whole or not at all (the
publication of :func:`prdist.dataflow.io.publishing.dataset_publication`, commit marker written last:
:data:`INGEST_MARKER`, or the ranked copy's on the Dask path).

Each file is read whole, by this process or by one Dask task, so one input file must fit in memory
(a CSV's parsed frame takes several times its size on disk: a 400 MB CSV peaked at 3.4 GB); split
very large dumps into several files.

Every input passes through :mod:`prdist.input_gate`: a shape this reader does not know (a JSON line
nested too deeply, a column holding numbers on one line and text on another, a key that is a
boolean, a number with a fraction, a list or an object, an integer beyond int64, true/false as a
score, a key typed as a number in one file and as text in another, a zip archive of several
files) is refused naming the file, the line and the fix; any other exception of a parser becomes
one refusal naming the file. Line numbers are lines of the file, also when a quoted CSV cell holds
line breaks.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import json
import lzma
import os
import posixpath
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prdist._validation import check_choice
from prdist.errors import DataError, InputError, ParameterError
from prdist.input_gate import gate, json_lines, refusal
from prdist.ranking import rank_order
from prdist.redaction import display_url, terminal_text
from prdist.dataflow.io.parquet import open_resource
from prdist.dataflow.io.publishing import dataset_publication, publish, remove_dead_staging, staging_path
from prdist.dataflow.io.storage import filesystem, resolve
from prdist.dataflow.io.storage_errors import storage_errors

__all__ = ["DECOMPRESSED_LIMIT", "DUPLICATE_POLICIES", "FORMATS", "INGEST_MARKER", "IngestResult", "IngestSpec", "ingest", "read_rows"]

FORMATS = ("csv", "tsv", "jsonl", "parquet")
#: What to do with a key that more than one row holds: refuse the input (the default: a key that
#: is not unique usually means too few ``--key`` columns), or keep the row with the highest score.
DUPLICATE_POLICIES = ("refuse", "keep-highest")
INT64_MAX = (1 << 63) - 1
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
    duplicates : {"refuse", "keep-highest"}
        A key held by several rows: refused with the count and an example (default), or the row
        with the highest score kept (the count of rows dropped is reported).
    """

    score: str
    keys: tuple[str, ...]
    format: str | None = None
    columns: tuple[str, ...] | None = None
    duplicates: str = "refuse"

    def __post_init__(self):
        owner = "ingest"
        if not self.keys:
            raise ParameterError("ingest needs at least one key column (--key COL).")
        if self.format is not None:
            check_choice(self.format, name="format", owner=owner, choices=FORMATS)
        check_choice(self.duplicates, name="duplicates", owner=owner, choices=DUPLICATE_POLICIES)
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


#: Maps the record numbers of one file (its frame's index) to the lines they start on.
Lines = Callable[[np.ndarray], np.ndarray]
#: What a damaged compressed file raises while it is decompressed.
_DAMAGED = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile, lzma.LZMAError)
_READ_FIX = "check that the file is what its name or --format says"


@contextlib.contextmanager
def _reading(url: str):
    """Every read of an input file: storage errors translated, a damaged compressed file or any
    shape the parsers do not know refused naming the file (through :func:`prdist.input_gate.gate`)."""
    where = display_url(url)
    with storage_errors(url, action="read"), gate(where, _READ_FIX, passing=(OSError,)):
        try:
            yield where
        except _DAMAGED as exc:
            raise refusal(where, None, f"a damaged or truncated compressed file ({type(exc).__name__}: {exc})",
                          "copy or compress it again") from None
        except UnicodeDecodeError as exc:
            raise refusal(where, f"byte {exc.start}", f"not UTF-8 text ({exc.reason})",
                          "convert it to UTF-8, or give --format parquet") from None


def _read_text_table(fh, fmt: str, spec: IngestSpec, where: str) -> pd.DataFrame:
    """CSV/TSV as text columns indexed by record number; every record kept (blank ones become bad
    rows). The first line fixes the number of fields, so a longer line later is refused."""
    options = dict(sep="," if fmt == "csv" else "\t", dtype=str, keep_default_na=False, na_values=[""],
                   skip_blank_lines=False, header=None, index_col=False)
    if fmt == "tsv":
        options["quoting"] = csv.QUOTE_NONE  # TSV dumps hold quotes as text (ReVerb: 's, "...")
    try:
        frame = pd.read_csv(fh, **options)
    except pd.errors.ParserError as exc:
        raise refusal(where, None, " ".join(str(exc).split()), "fix the row or name the right --format / --columns") from None
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=list(spec.columns or ()))
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    if spec.columns is None:
        names, frame = frame.iloc[0].tolist(), frame.iloc[1:]
        if any(not isinstance(name, str) for name in names) or len(set(names)) != len(names):
            raise refusal(where, "line 1", f"the header line must name every column once; got {terminal_text(names)}",
                          "fix it, or give --columns for a file without one")
    else:
        names = list(spec.columns)
        if frame.shape[1] != len(names):
            raise refusal(where, "line 1", f"{frame.shape[1]} fields but --columns names {len(names)}", "name every column")
    frame.columns = names
    return frame


def _csv_lines(fs, path: str) -> Lines:
    """The line each CSV record starts on, found by reading the file again only when a message
    needs it (a quoted cell may hold line breaks, so record and line numbers differ)."""
    def lines(records: np.ndarray) -> np.ndarray:
        wanted = np.asarray(records, dtype=np.int64)
        starts, line = {}, 1
        if wanted.size:
            with fs.open(path, "rt", compression="infer", encoding="utf-8-sig", newline="") as fh:
                reader = csv.reader(fh)
                for number, _ in enumerate(reader, start=1):
                    starts[number] = line
                    if number >= wanted.max():
                        break
                    line = reader.line_num + 1
        return np.array([starts.get(int(r), int(r)) for r in wanted], dtype=np.int64)
    return lines


def _same_lines(records: np.ndarray) -> np.ndarray:
    return np.asarray(records, dtype=np.int64)


def _read_jsonl(fh, where: str) -> pd.DataFrame:
    numbered = json_lines(fh.read(), where)
    frame = pd.DataFrame.from_records([record for _, record in numbered])
    frame.index = pd.Index([number for number, _ in numbered], dtype=np.int64)
    return frame


def _read_parquet(fh, where: str) -> pd.DataFrame:
    try:
        table = pq.read_table(fh)
    except pa.ArrowInvalid as exc:
        raise refusal(where, None, f"not a readable Parquet file ({' '.join(str(exc).split())[:160]})",
                      "write it again, or name its --format") from None
    frame = table.to_pandas()
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    return frame


def read_rows(url: str, spec: IngestSpec, storage_options=None) -> pd.DataFrame:
    """Read one input file as a frame with ``key`` (text or int64), ``score`` (float64) and the
    other columns, each row indexed by its record number (Parquet: row number from 1); messages
    name lines of the file.

    Raises
    ------
    DataError
        Missing columns, values of a shape a resource cannot hold (see the module's docstring),
        or rows with a missing key or a score that is not a finite number (all their line
        numbers, up to five shown, in one line).
    """
    fmt = file_format(url, spec)
    fs, path = filesystem(url, storage_options)
    with _reading(url) as where:
        if fmt == "parquet":
            with fs.open(path, "rb") as fh:
                frame = _read_parquet(fh, where)
        else:
            with fs.open(path, "rt", compression="infer", encoding="utf-8-sig", newline="" if fmt != "jsonl" else None) as fh:
                frame = _read_jsonl(fh, where) if fmt == "jsonl" else _read_text_table(fh, fmt, spec, where)
        lines = _csv_lines(fs, path) if fmt == "csv" else _same_lines
        if fmt == "jsonl":
            _check_column_kinds(frame, where, lines, numeric=spec.score)
        return _keyed(frame, spec, where, lines)


def _shown(lines: np.ndarray) -> str:
    return ", ".join(str(int(x)) for x in lines[:_SHOWN_LINES]) + (", ..." if lines.size > _SHOWN_LINES else "")


def _value_kind(value) -> str:
    """What one JSON value is, in a message's words."""
    if isinstance(value, (bool, np.bool_)):
        return "true/false"
    if isinstance(value, (int, np.integer)):
        return "a whole number"
    if isinstance(value, (float, np.floating)):
        return "a number with a decimal point"
    return {str: "text", dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def _check_column_kinds(frame: pd.DataFrame, where: str, lines: Lines, *, numeric: str) -> None:
    """Refuse a JSON field holding values of two kinds (numbers and text, ...) and integers beyond
    int64, naming the field and the lines: Arrow, and the key, can hold neither. The ``numeric``
    field (the score) is refused here only for numbers mixed with numbers in quotes: other text and
    kinds in it (true/false, a list, ...) are refused as scores afterwards."""
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object:
            continue
        inferred = pd.api.types.infer_dtype(column, skipna=True)
        if inferred in ("string", "floating", "boolean", "empty"):
            continue
        values = column.dropna()
        huge = values.index[[isinstance(v, int) and not -INT64_MAX - 1 <= v <= INT64_MAX for v in values]].to_numpy()
        if huge.size:
            raise refusal(where, f"line(s) {_shown(lines(huge))}, field {terminal_text(repr(name))}",
                          "an integer beyond 2^63 - 1, which a resource cannot hold",
                          "write it as text (in quotes) if it is a key, or with a decimal point if it is a score")
        kinds = {}
        for line, value in values.items():
            kinds.setdefault("a number" if "number" in _value_kind(value) else _value_kind(value), line)
        if name == numeric:  # other text in the score is a bad row, refused afterwards
            quoted = [line for line, v in values.items() if isinstance(v, str) and np.isfinite(pd.to_numeric(v, errors="coerce"))]
            mixed = [("a number", kinds["a number"]), ("a number in quotes (text)", quoted[0])] if "a number" in kinds and quoted else []
        else:
            mixed = list(kinds.items())
        if len(mixed) > 1:
            (first, at), (second, then) = mixed[:2]
            found = lines(np.array([at, then]))
            raise refusal(where, f"field {terminal_text(repr(name))}", f"{first} at line {found[0]} but {second} at line {found[1]}",
                          "write every score as a number (without quotes)" if name == numeric else
                          "write one kind of value per field (e.g. every key in quotes), or drop the field")


def _check_score(score: pd.Series, name: str, where: str, lines: Lines) -> None:
    """Refuse a score column of true/false (a number, not a verdict, ranks the items)."""
    truth = score.notna() if score.dtype == bool else score.map(lambda v: isinstance(v, (bool, np.bool_)))
    if score.dtype in (bool, object) and truth.any():
        at = score.index[truth.to_numpy(dtype=bool)].to_numpy()
        raise refusal(where, f"line(s) {_shown(lines(at))}", f"the score column {terminal_text(repr(name))} holds true/false, not scores",
                      "name the confidence-score column with --score (a score is a number)")


def _check_keys(frame: pd.DataFrame, spec: IngestSpec, where: str, lines: Lines) -> None:
    """Refuse a key column that is neither text nor whole numbers of int64 (rows without a key were refused before)."""
    for name in spec.keys:
        column = frame[name]
        if column.dtype.kind in "iu":
            beyond = column.index[column.to_numpy() > INT64_MAX].to_numpy() if column.dtype.kind == "u" else np.empty(0)
            if beyond.size:
                raise refusal(where, f"line(s) {_shown(lines(beyond))}", f"the key {terminal_text(repr(name))} is an integer beyond 2^63 - 1",
                              "write the keys as text")
            continue
        if pd.api.types.infer_dtype(column, skipna=True) == "string":
            continue
        odd = column.map(lambda v: not isinstance(v, str)).to_numpy()
        first = column.index[odd][0]
        raise refusal(where, f"line {lines(np.array([first]))[0]}",
                      f"the key {terminal_text(repr(name))} is {_value_kind(column.loc[first])}, not text or a whole number",
                      "write the keys as text (in quotes), or name other --key columns")


def _keyed(frame: pd.DataFrame, spec: IngestSpec, where: str, lines: Lines = _same_lines) -> pd.DataFrame:
    """The frame with ``key`` and ``score`` built and checked; bad rows refused by line number."""
    if frame.empty and not len(frame.columns):
        raise refusal(where, None, "an empty file: it holds no rows and names no field", "drop it, or ingest a file with rows")
    needed = [*spec.keys, spec.score]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        shown = terminal_text(", ".join(map(str, frame.columns[:12])))
        raise refusal(where, None, f"no column {terminal_text(', '.join(map(repr, missing)))} (its columns: {shown})",
                      "name them with --key/--score, or --columns for header-less files")
    for name, role in (("key", spec.keys), ("score", (spec.score,))):
        if name in frame.columns and name not in role:
            raise refusal(where, None, f"a column {name!r} that is not the {name} (--{name})", "rename that column first")
    _check_score(frame[spec.score], spec.score, where, lines)
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
        at = lines(frame.index.to_numpy()[bad])
        what = "a missing key field, a key field holding '|', or a score that is not a finite number" if len(parts) > 1 else "a missing key or a score that is not a finite number"
        raise refusal(where, None, f"{at.size} bad row(s) ({what}) at line(s) {_shown(at)}", "fix or drop them and ingest again")
    if key.dtype.kind not in "iu" and (empty := (key == "").to_numpy()).any():
        at = lines(frame.index.to_numpy()[empty])
        raise refusal(where, f"line(s) {_shown(at)}", "an empty key (an annotator could not name the item)",
                      "give those items keys, or drop them")
    _check_keys(frame, spec, where, lines)
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


_KINDS = {"string": "text", "boolean": "true/false", "floating": "numbers", "integer": "numbers",
          "mixed-integer-float": "numbers", "empty": None}


def _layout(frame: pd.DataFrame) -> dict:
    """Each column's kind of value ("numbers", "text", "true/false", ...; None: no value yet)."""
    return {name: "numbers" if frame[name].dtype.kind in "iuf" else
            _KINDS.get(kind := pd.api.types.infer_dtype(frame[name], skipna=True), kind) for name in frame.columns}


def _check_layout(frame: pd.DataFrame, source: str, layout: dict, first_source: str) -> pd.DataFrame:
    """``frame`` if it has the first file's columns with the same kinds of values, else the refusal:
    a key that is a number in one file and text in another would be two keys, or none."""
    if list(frame.columns) != list(layout):
        raise refusal(display_url(source), None, f"columns {terminal_text(list(frame.columns))}, unlike the first file's {terminal_text(list(layout))}",
                      "ingest files of one layout together")
    for name, kind in _layout(frame).items():
        if None not in (kind, layout[name]) and kind != layout[name]:
            raise refusal(display_url(source), "the key" if name == "key" else f"field {terminal_text(repr(name))}",
                          f"{kind} here but {layout[name]} in {display_url(first_source)}",
                          "give every file the same kinds of values (CSV and TSV fields are text: write the JSON values "
                          "as strings, or ingest files of one format together)")
    return frame


def _read_like(source: str, spec: IngestSpec, storage_options, layout: dict, first_source: str, dtypes=None) -> pd.DataFrame:
    """:func:`read_rows`, checked against the first file's layout; with ``dtypes`` (one Dask task
    per file, whose partitions must all have the first file's types), numbers cast to them."""
    frame = _check_layout(read_rows(source, spec, storage_options), source, layout, first_source)
    return frame if dtypes is None else _numbers_as(frame, dtypes, source, first_source)


def _numbers_as(frame: pd.DataFrame, dtypes, source: str, first_source: str) -> pd.DataFrame:
    """``frame`` with its number columns cast to ``dtypes``; a fraction where the first file holds
    whole numbers is refused (casting would change the value)."""
    for name, dtype in dtypes.items():
        column = frame[name]
        if column.dtype == dtype or column.dtype.kind not in "iuf" or dtype.kind not in "iuf":
            continue
        if dtype.kind != "f" and not (np.isfinite(column.to_numpy(dtype=np.float64)).all() and (column % 1 == 0).all()):
            raise refusal(display_url(source), f"field {terminal_text(repr(name))}",
                          f"numbers with a decimal point here but whole numbers in {display_url(first_source)}",
                          "write the first file's numbers with a decimal point too (1.0), or name a file whose numbers have one first")
        frame[name] = column.astype(dtype)
    return frame


def duplicate_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Keys held by more than one row: how many, the rows beyond one per key, and an example.

    >>> duplicate_summary(pd.DataFrame({"key": ["a", "b", "a", "a"], "score": [0.1, 0.5, 0.3, 0.2]})).to_dict("records")
    [{'keys': 1, 'rows': 2, 'example': 'a'}]
    """
    repeated = frame["key"].duplicated(keep="first").to_numpy()
    keys = frame["key"].to_numpy()[repeated]
    return pd.DataFrame({"keys": [len(pd.unique(keys))], "rows": [int(repeated.sum())],
                         "example": pd.Series([keys[0] if keys.size else None], dtype=object)})


def _refuse_duplicates(summary: pd.DataFrame, sources) -> None:
    """The refusal of a key that is not unique (``--duplicates refuse``), when any is."""
    repeated = summary[summary["rows"] > 0]
    if repeated.empty:
        return
    example = repeated["example"].iloc[0]
    raise refusal(", ".join(map(display_url, sources)), None,
                  f"the key is not unique: {int(summary['keys'].sum()):,} key(s) are held by more than one row "
                  f"({int(summary['rows'].sum()):,} row(s) beyond one per key), e.g. {terminal_text(repr(example))}",
                  "add --key columns until each row has a key of its own, or give --duplicates keep-highest to keep "
                  "the row with the highest score of each key")


# --------------------------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------------------------
def _input_size(url: str, storage_options, limit: int) -> int:
    """The bytes ``url`` holds as read: its size, or for a compressed file its decompressed size,
    counted by streaming it once (stopping past ``limit``: refused, before anything is parsed)."""
    fs, path = filesystem(url, storage_options)
    with _reading(url):
        stored = int(fs.size(path))
        if not url.lower().endswith(_COMPRESSION):
            return stored
        if url.lower().endswith(".zip"):
            _check_one_member(fs, path, url)
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


def _check_one_member(fs, path: str, url: str) -> None:
    """Refuse a zip archive that holds other than one file: its first would be read as if it were all."""
    with fs.open(path, "rb") as fh:
        members = [m.filename for m in zipfile.ZipFile(fh).infolist() if not m.is_dir()]
    if len(members) != 1:
        shown = terminal_text(", ".join(members[:4]) + (", ..." if len(members) > 4 else ""))
        raise refusal(display_url(url), None, f"a zip archive of {len(members)} files ({shown or 'none'}); one file per archive is read",
                      "unzip it and ingest its files together (prdist ingest FILE FILE ...)")


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
    >>> spec = IngestSpec(score="conf", keys=("s", "o"), duplicates="keep-highest")
    >>> result = ingest([os.path.join(d, "kb.csv")], os.path.join(d, "kb"), spec)
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
    first = read_rows(sources[0], spec, storage_options)
    frames = [first, *(_read_like(s, spec, storage_options, _layout(first), sources[0]) for s in sources[1:])]
    rows = pd.concat(frames, ignore_index=True)
    if spec.duplicates == "refuse":
        _refuse_duplicates(duplicate_summary(rows), sources)
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
        "duplicates": spec.duplicates,
        "duplicates_dropped": result.duplicates,
        "files": files,
    }
    return (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()


def _deduplicated(sources, spec: IngestSpec, storage_options, layout: dict, meta: pd.DataFrame, staging: str) -> list:
    """The Dask collections of a large ingest: the rows of every source shuffled by key, each key's
    highest-scored row written to ``staging``; the rows read; the duplicate summary. Built where
    :func:`prdist.dataflow.engine.executor.compute_all` chooses the engine."""
    import dask
    import dask.dataframe as dd

    parts = [dask.delayed(_read_like)(s, spec, storage_options, layout, sources[0], meta.dtypes) for s in sources]
    frame = dd.from_delayed(parts, meta=meta, verify_meta=True)
    shuffled = frame.shuffle(on="key")
    unique = shuffled.map_partitions(keep_highest, meta=meta)
    summary_meta = pd.DataFrame({"keys": pd.Series(dtype="int64"), "rows": pd.Series(dtype="int64"),
                                 "example": pd.Series(dtype=object)})
    summary = shuffled.map_partitions(duplicate_summary, meta=summary_meta)
    write = unique.to_parquet(staging, storage_options=storage_options or None, write_index=False, compute=False)
    return [write, frame.map_partitions(len).sum(), summary]


def _ingest_with_dask(sources, out, spec, storage_options, client) -> IngestResult:
    from prdist.dataflow.engine.executor import compute_all
    from prdist.dataflow.ranks.ranked import write_ranked_copy

    first = read_rows(sources[0], spec, storage_options)  # the schema, and the first file's errors early
    meta, layout = first.iloc[:0], _layout(first)
    del first
    location = resolve(out, storage_options=storage_options)
    if location.is_local:
        remove_dead_staging(posixpath.dirname(location.path.rstrip("/")))
    staging = location.fs.unstrip_protocol(staging_path(location.path, "ingest"))
    try:
        _, read, summary = compute_all(client, lambda: _deduplicated(sources, spec, storage_options, layout, meta, staging))
        read = int(read)
        if spec.duplicates == "refuse":
            _refuse_duplicates(summary, sources)
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
