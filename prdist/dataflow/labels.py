"""The label store: append-only Parquet keyed by item key, shared by every release and system.

One human label serves every resource that contains the item, so labels live apart from runs and
resources. Each import appends one new Parquet file (a create-only write, so concurrent imports
never overwrite each other) holding ``key, label, source, annotator, time``. Keys are stored as
text (an integer key 42 is stored as "42"), which makes the store independent of how each
resource types its key column.

Conflicts: two labels for one key inside one import are refused. Across imports the most recent
label wins (a correction), and lookups report how many keys were relabeled so that disagreement is
visible, never silent.
"""

from __future__ import annotations

import io
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ..errors import DataError, InputError
from .storage import check_regular_file, exists, filesystem, join_url, publish, resolve, storage_errors, write_bytes_exclusive

__all__ = [
    "LabelLookup",
    "export_annotation_task",
    "import_labels",
    "keys_missing_from",
    "lookup_labels",
    "normalise_keys",
    "read_label_file",
    "write_annotation_file",
]

STORE_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("label", pa.int8()),
        ("source", pa.string()),
        ("annotator", pa.string()),
        ("time", pa.timestamp("us", tz="UTC")),
    ]
)
_TRUE = {"1", "1.0", "true", "yes", "correct"}
_FALSE = {"0", "0.0", "false", "no", "incorrect"}


def normalise_keys(keys) -> pd.Series:
    """Item keys as text, the form the label store uses (integers in decimal)."""
    s = pd.Series(keys)
    if s.dtype.kind in "iu":
        return s.astype("int64").astype(str)
    if s.dtype.kind == "f":
        if not np.all(np.isfinite(s)) or not np.all(s == np.floor(s)):
            raise DataError("Item keys must be integers or text; found fractional or missing numeric keys.")
        return s.astype("int64").astype(str)
    return s.astype(str)


def _parse_labels(values: pd.Series, origin: str) -> np.ndarray:
    """0/1 labels from numbers, booleans or words; anything else is refused with its row."""
    if values.dtype == bool:
        return values.to_numpy().astype(np.int8)
    text = values.astype(str).str.strip().str.lower()
    out = np.full(len(text), -1, dtype=np.int8)
    out[text.isin(_TRUE).to_numpy()] = 1
    out[text.isin(_FALSE).to_numpy()] = 0
    bad = np.flatnonzero(out < 0)
    if bad.size:
        i = int(bad[0])
        value = values.iloc[i]
        value = value.item() if hasattr(value, "item") else value
        raise DataError(
            f"{origin}: label on row {i + 1} is {value!r}; labels must be 0 or 1 "
            f"(also accepted: true/false, yes/no). {bad.size} row(s) are affected. Fix them and import again."
        )
    return out


def read_label_file(url: str, *, storage_options=None) -> pd.DataFrame:
    """Read and validate one label file (CSV, JSONL or Parquet, by extension).

    Returns
    -------
    DataFrame with columns key (str), label (int8), and annotator / source when the file has them.
    Rows with an empty label (a task not finished yet) are skipped; ``attrs["skipped_blank"]``
    counts them.
    """
    fs, path = filesystem(url, storage_options)
    suffix = PurePosixPath(path).suffix.lower()
    readers = {".csv": _read_csv, ".jsonl": _read_jsonl, ".json": _read_jsonl, ".parquet": _read_parquet}
    if suffix not in readers:
        raise InputError(
            f"Label file {url!r} has an unknown format {suffix or '(no extension)'!r}; use .csv, .jsonl or .parquet."
        )
    if check_regular_file(fs, path, where=url, role="label file") is None:
        raise InputError(f"Label file {url!r} does not exist. Check the path.")
    try:
        with storage_errors(url, action="read"), fs.open(path, "rb") as fh:
            frame = readers[suffix](fh)
    except (ValueError, pa.ArrowException, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"Label file {url!r} could not be read as {suffix[1:].upper()}: {exc}. Check its format.") from None
    missing = {"key", "label"} - set(frame.columns)
    if missing:
        raise DataError(
            f"Label file {url!r} lacks the column(s) {sorted(missing)}; it has {list(frame.columns)}. "
            "A label file needs at least 'key' and 'label'."
        )
    if frame["key"].isna().any():
        raise DataError(f"Label file {url!r} has {int(frame['key'].isna().sum())} row(s) without a key.")
    # An annotation task comes back partly done: rows whose label is still empty are skipped.
    blank = frame["label"].isna() | (frame["label"].astype(str).str.strip() == "")
    frame = frame.loc[~blank].reset_index(drop=True)
    out = pd.DataFrame({"key": normalise_keys(frame["key"]).to_numpy(), "label": _parse_labels(frame["label"], url)})
    out.attrs["skipped_blank"] = int(blank.sum())
    for extra in ("annotator", "source"):
        if extra in frame.columns:
            out[extra] = frame[extra].astype(str).to_numpy()
    return out


def _read_csv(fh) -> pd.DataFrame:
    return pd.read_csv(fh, dtype={"key": str}, keep_default_na=False, na_values=[""])


def _read_jsonl(fh) -> pd.DataFrame:
    rows = [json.loads(line) for line in io.TextIOWrapper(fh, encoding="utf-8") if line.strip()]
    if rows and not all(isinstance(r, dict) for r in rows):
        raise ValueError("every line must be a JSON object")
    return pd.DataFrame(rows)


def _read_parquet(fh) -> pd.DataFrame:
    return pq.read_table(fh).to_pandas()


@dataclass(frozen=True)
class ImportSummary:
    """What one ``import_labels`` call appended."""

    written: str
    labels: int
    positives: int
    files: tuple[str, ...]


def import_labels(store: str, files, *, storage_options=None, source: str | None = None, annotator: str | None = None,
                  resource: str | None = None, key: str = "key", score: str = "score") -> ImportSummary:
    """Append the labels of ``files`` to the store at ``store`` in one create-only write.

    Every file is read and validated before anything is written, so a bad file leaves the store
    untouched. Two different labels for one key within the import are refused. With ``resource``
    (a Parquet resource URL with columns ``key`` and ``score``), labels for keys the resource does
    not hold are refused too (:func:`keys_missing_from`: one pass over its key column). Without it
    any key is accepted: one store serves many resources, and a run uses only its own keys' labels.
    """
    files = tuple(files)
    if not files:
        raise InputError("No label files given. Name at least one CSV, JSONL or Parquet file.")
    resolve(store, storage_options=storage_options)  # a bad store URL is refused before any file is read
    frames = []
    for url in files:
        frame = read_label_file(url, storage_options=storage_options)
        frame["source"] = frame["source"] if "source" in frame else (source or PurePosixPath(url).name)
        frame["annotator"] = frame["annotator"] if "annotator" in frame else (annotator or "")
        frames.append(frame)
    batch = pd.concat(frames, ignore_index=True)
    clash = batch.groupby("key")["label"].nunique()
    clash = clash[clash > 1]
    if len(clash):
        raise DataError(
            f"The import labels {len(clash)} key(s) both 0 and 1, e.g. {clash.index[0]!r}. "
            "Resolve the disagreement in the files and import again."
        )
    batch = batch.drop_duplicates("key", keep="last")
    if resource is not None:
        url, missing = keys_missing_from(resource, batch["key"], storage_options=storage_options, key=key, score=score)
        if len(missing):
            raise DataError(
                f"The import labels {len(missing)} key(s) that {url} does not hold, e.g. {missing[0]!r}. "
                "Check that the files label this resource (and its --key column), or import without --resource."
            )
    batch["time"] = pd.Timestamp(datetime.now(timezone.utc))
    table = pa.Table.from_pandas(batch[["key", "label", "source", "annotator", "time"]], schema=STORE_SCHEMA, preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = join_url(store, f"labels-{stamp}-{uuid.uuid4().hex[:12]}.parquet")
    write_bytes_exclusive(target, sink.getvalue().to_pybytes(), storage_options=storage_options)
    return ImportSummary(written=target, labels=len(batch), positives=int(batch["label"].sum()), files=files)


def keys_missing_from(resource: str, keys, *, storage_options=None, key: str = "key", score: str = "score") -> tuple[str, list[str]]:
    """Return (the resource's printable URL, the ``keys`` it does not hold, as text).

    Reads the key column of the Parquet resource at ``resource`` once, one row group at a time.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.9, 0.5, 0.1]}), os.path.join(d, "a.parquet"))
    >>> keys_missing_from(d, [3, 4, 5])[1]
    ['4', '5']
    """
    from .parquet import displays, keys_of, open_resource, read_row_groups

    opened = open_resource(resource, storage_options=storage_options, key=key, score=score)
    wanted = pd.Index(normalise_keys(keys).unique())
    held = np.zeros(len(wanted), dtype=bool)
    names = displays(opened)
    for part in opened.partitions():
        display = names[part.path]
        for index, table in read_row_groups(opened.fs, part.path, part.indices, [key], display=display,
                                            footer=part.footer):
            held |= wanted.isin(normalise_keys(keys_of(table, key, f"{display} row group {index}")))
    return opened.url, wanted[~held].tolist()


@dataclass(frozen=True)
class LabelLookup:
    """Labels found in the store for a set of keys."""

    labels: pd.Series  # float64 indexed by key text; NaN where the store has no label
    relabeled: int = 0  # keys whose label changed between imports (the latest one is used)
    examples: tuple[str, ...] = field(default=())

    @property
    def missing(self) -> int:
        return int(self.labels.isna().sum())


def lookup_labels(store: str | None, keys, *, storage_options=None) -> LabelLookup:
    """Look up the latest label of every key without loading the store whole.

    Only the rows whose key is asked for are materialised (a filtered Parquet scan of the store).
    A store that does not exist yet holds no labels.
    """
    wanted = pd.Index(normalise_keys(keys).unique())
    empty = LabelLookup(labels=pd.Series(np.nan, index=wanted, dtype=np.float64))
    if store is None:
        return empty
    fs, path = filesystem(store, storage_options)
    # Only a store that is certainly absent holds no labels: an outage must never read as "no labels".
    if not exists(fs, path, where=store):
        return empty
    with storage_errors(store, action="list"):
        files = sorted(f for f in fs.find(path) if f.endswith(".parquet"))
    if not files:
        return empty
    try:
        with storage_errors(store, action="read"):
            dataset = ds.dataset(files, schema=STORE_SCHEMA, format="parquet", filesystem=fs)
            found = dataset.to_table(
                columns=["key", "label", "time"], filter=ds.field("key").isin(pa.array(wanted.to_numpy(), pa.string()))
            ).to_pandas()
    except pa.ArrowException as exc:
        raise DataError(f"The label store {store!r} holds an unreadable file ({exc}). Move the damaged file aside.") from None
    if found.empty:
        return empty
    found = found.sort_values(["key", "time"], kind="stable")
    relabeled = found.groupby("key")["label"].nunique()
    relabeled = relabeled[relabeled > 1]
    latest = found.drop_duplicates("key", keep="last").set_index("key")["label"].astype(np.float64)
    return LabelLookup(
        labels=latest.reindex(wanted),
        relabeled=len(relabeled),
        examples=tuple(relabeled.index[:5]),
    )


def export_annotation_task(items: pd.DataFrame, out_dir: str, *, storage_options=None) -> tuple[str, str]:
    """Write the items still needing a label as ``annotation_task.csv`` and ``.jsonl``.

    ``items`` holds key, score, rank and whatever other columns the resource has, so the annotator
    sees each item; a ``label`` column is added empty for the annotator to fill in.
    """
    task = items.drop(columns=[c for c in ("label",) if c in items.columns]).copy()
    task["label"] = ""
    csv_url, jsonl_url = join_url(out_dir, "annotation_task.csv"), join_url(out_dir, "annotation_task.jsonl")
    for url, payload in (
        (csv_url, task.to_csv(index=False).encode("utf-8")),
        (jsonl_url, task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")),
    ):
        publish(resolve(url, storage_options=storage_options), lambda fh, payload=payload: fh.write(payload), exclusive=False)
    return csv_url, jsonl_url


def write_annotation_file(run_dir: str, out: str, *, storage_options=None) -> int:
    """Copy a run's annotation task to ``out`` (.csv, .jsonl or .parquet); return its item count.

    A run with nothing to annotate writes an empty task with the same columns.
    """
    fs, task_path = filesystem(join_url(run_dir, "annotation_task.csv"), storage_options)
    run_fs, manifest = filesystem(join_url(run_dir, "manifest.json"), storage_options)
    if not exists(run_fs, manifest, where=run_dir):
        raise InputError(f"{run_dir!r} is not a committed run directory (no manifest.json). Name a directory printed by 'prdist run'.")
    suffix = PurePosixPath(out).suffix.lower()
    if suffix not in (".csv", ".jsonl", ".parquet"):
        raise InputError(f"The annotation file {out!r} must end in .csv, .jsonl or .parquet.")
    if exists(fs, task_path, where=run_dir):
        with fs.open(task_path, "rb") as fh:
            task = pd.read_csv(fh, keep_default_na=False, na_values=[""], dtype={"key": str})
    else:
        task = pd.DataFrame(columns=["rank", "key", "score", "label"])
    def write(fh):
        if suffix == ".csv":
            fh.write(task.to_csv(index=False).encode("utf-8"))
        elif suffix == ".jsonl":
            fh.write(task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8"))
        else:
            pq.write_table(pa.Table.from_pandas(task.astype({"label": "string"}), preserve_index=False), fh)

    target = resolve(out, storage_options=storage_options)
    check_regular_file(target.fs, target.path, where=target, role="annotation file")  # replaced only if a file
    publish(target, write, exclusive=False)  # whole or not at all
    return len(task)
