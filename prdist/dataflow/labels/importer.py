"""Label files into the label store: read and validate a file or a tool's export, append its verdicts.

:func:`read_label_file` reads one plain CSV / JSONL / Parquet file or annotation-tool export
(:mod:`prdist.dataflow.labels.formats` detects and reads the tools) into a :class:`LabelFile`;
:func:`import_labels` validates every file before it appends their verdicts to the store
(:mod:`prdist.dataflow.labels.store`) in one create-only write, and says in an :class:`ImportSummary`
what it appended and what it left out, and why.
"""

from __future__ import annotations

import io
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prdist._validation import check_choice
from prdist.dataflow.io import spreadsheet_csv
from prdist.dataflow.labels.formats import Layout, raw_records
from prdist.dataflow.labels.store import STORE_SCHEMA, keys_missing_from, normalise_keys
from prdist.dataflow.io.publishing import write_bytes_exclusive
from prdist.dataflow.io.storage import filesystem, join_url, resolve
from prdist.dataflow.io.storage_errors import check_regular_file, storage_errors
from prdist.errors import DataError, InputError
from prdist.input_gate import expect, gate, json_document, refusal
from prdist.verdicts.choices import ROLES
from prdist.verdicts.aggregation import CANNOT_JUDGE, VerdictWords

__all__ = ["ImportSummary", "LabelFile", "import_labels", "read_annotator_map", "read_label_file"]


@dataclass(frozen=True, eq=False)
class LabelFile:
    """One label file read and validated (:func:`read_label_file`).

    Attributes
    ----------
    verdicts : pandas.DataFrame
        One row per verdict: key (str), label (int8: 1, 0, -1 = cannot judge), annotator (str or
        None) and time (UTC, NaT when the file does not say).
    format : str
        The format read (one of :data:`prdist.verdicts.choices.LABEL_FORMATS` but "auto").
    skipped : tuple of (str, int)
        Records that are not verdicts, left out: (reason, count), e.g. ("blank", 3), ("draft", 2).
    notes : tuple of str
        What the import must say about the file (e.g. a flat export without skips).
    """

    verdicts: pd.DataFrame
    format: str
    skipped: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def skipped_blank(self) -> int:
        """Records without a verdict (an empty cell)."""
        return dict(self.skipped).get("blank", 0)


def read_label_file(url: str, *, fmt: str = "auto", words: VerdictWords = VerdictWords(), storage_options=None,
                    layout: Layout | None = None, annotators: Mapping[str, str] | None = None, now=None) -> LabelFile:
    """Read and validate one label file: plain CSV / JSONL / Parquet or a tool's export.

    ``layout`` (a :class:`~prdist.dataflow.labels.formats.Layout`) names the format (else ``fmt``),
    the verdict's question (``control``) and where the key is (``key_field``); "auto" detects the
    tool from the content (see :mod:`prdist.dataflow.labels.formats`). ``annotators`` maps an
    annotator id to the person (ids it does not hold stay as they are). A time later than ``now``
    (default: the current time) plus one day is refused: it would outrank every later correction.

    Returns
    -------
    LabelFile
        The verdicts (one row per verdict), the format read, the records left out by reason and
        what the import must say about the file.
    """
    layout = layout or Layout(fmt=fmt)
    fs, path = filesystem(url, storage_options)
    if check_regular_file(fs, path, where=url, role="label file") is None:
        raise InputError(f"Label file {url!r} does not exist. Check the path.")
    with storage_errors(url, action="read"), fs.open(path, "rb") as fh:
        data = fh.read()
    read = raw_records(data, origin=url, layout=layout)
    raw = read.records
    if read.format == "csv":  # undo the apostrophe a task's CSV puts before =, +, -, @ (spreadsheet_csv)
        raw["key"] = raw["key"].map(spreadsheet_csv.restore)
    if raw["key"].isna().any():
        raise DataError(f"Label file {url!r} has {int(raw['key'].isna().sum())} row(s) without a key.")
    blank = raw["value"].isna() | (raw["value"].astype(str).str.strip() == "")
    reason = raw["skip"].where(raw["skip"].notna(), np.where(blank, "blank", None))
    skipped = {str(k): int(v) for k, v in reason.value_counts().items()}
    raw = raw.loc[reason.isna().to_numpy()].reset_index(drop=True)
    labels = words.parse(raw["value"].to_numpy(dtype=object), origin=url, rows=raw["row"].to_numpy())
    time = _times(raw, url, now)
    annotator = raw["annotator"].astype(object).where(raw["annotator"].notna(), None)
    annotator = annotator.map(lambda a: None if a is None else str(a))
    if annotators:
        annotator = annotator.map(lambda a: annotators.get(a, a) if a is not None else None)
    out = pd.DataFrame({"key": normalise_keys(raw["key"].to_numpy()).to_numpy(), "label": labels,
                        "annotator": annotator.to_numpy(dtype=object), "time": time.array})
    return LabelFile(out, format=read.format, skipped=tuple(skipped.items()), notes=tuple(read.notes))


_FUTURE = pd.Timedelta(days=1)


def _times(raw: pd.DataFrame, url: str, now) -> pd.Series:
    """The records' times in UTC; a time more than a day after ``now`` is refused with its row."""
    try:
        time = pd.to_datetime(raw["time"], utc=True, format="mixed").astype("datetime64[us, UTC]")
    except (ValueError, TypeError, OverflowError):
        row, value = _first_bad_time(raw)
        raise refusal(url, f"row {row}", f"the time {str(value)[:60]!r} is not a date-time",
                      "write times such as 2026-11-25T06:30:00Z, or drop the time column") from None
    now = pd.Timestamp(now if now is not None else datetime.now(timezone.utc))
    future = (time > now + _FUTURE).to_numpy()
    if future.any():
        i = int(np.flatnonzero(future)[0])
        raise refusal(url, f"row {int(raw['row'].iloc[i])}",
                      f"the time {time.iloc[i].isoformat()} is in the future ({int(future.sum())} record(s)), and would "
                      "outrank every later correction", "fix the clock or time column that wrote it, or drop the time column")
    return time


def _first_bad_time(raw: pd.DataFrame) -> tuple[int, object]:
    for row, value in zip(raw["row"], raw["time"]):
        try:
            pd.to_datetime(pd.Series([value]), utc=True, format="mixed").astype("datetime64[us, UTC]")
        except (ValueError, TypeError, OverflowError):
            return int(row), value
    return int(raw["row"].iloc[0]), raw["time"].iloc[0]


@dataclass(frozen=True)
class ImportSummary:
    """What one ``import_labels`` call appended, and what it read but did not append (and why)."""

    written: str
    labels: int  # verdict records
    positives: int
    cannot_judge: int
    keys: int
    annotators: int
    files: tuple[str, ...]
    formats: tuple[str, ...] = ()
    skipped: tuple[tuple[str, int], ...] = ()  # (reason, records): blank, draft, rejected, duplicate, ...
    notes: tuple[str, ...] = ()  # what a format cannot carry, what was assumed

    @property
    def negatives(self) -> int:
        """The incorrect verdicts: every verdict is correct, incorrect or cannot judge."""
        return self.labels - self.positives - self.cannot_judge

    def skipped_text(self) -> str:
        """The skipped records as one phrase, e.g. "3 blank, 2 draft" ("" when none)."""
        return ", ".join(f"{count:,} {reason}" for reason, count in self.skipped)


def read_annotator_map(url: str, *, storage_options=None) -> dict[str, str]:
    """An annotator map file: a JSON object ``{"id": "person"}`` or a CSV with columns ``id,annotator``."""
    fs, path = filesystem(url, storage_options)
    if check_regular_file(fs, path, where=url, role="annotator map") is None:
        raise InputError(f"The annotator map {url!r} does not exist. Check the path.")
    with storage_errors(url, action="read"), fs.open(path, "rb") as fh:
        data = fh.read()
    fix = 'write a JSON object {"id": "person", ...} or a CSV with the header id,annotator'
    with gate(url, fix):
        text = data.decode("utf-8-sig")
        if text.lstrip().startswith("{"):
            mapping = expect(json_document(text, url), dict, url, None, fix)
        else:
            frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
            if list(frame.columns[:2]) != ["id", "annotator"]:
                raise refusal(url, "line 1", f"the header is {','.join(map(str, frame.columns))}", fix)
            mapping = dict(zip(frame["id"], frame["annotator"]))
        for name, person in mapping.items():
            if not isinstance(person, str) or not person.strip():
                raise refusal(url, f"id {name!r}", "the person is not a name", fix)
    return {str(k): v.strip() for k, v in mapping.items()}


def import_labels(store: str, files, *, storage_options=None, source: str | None = None, annotator: str | None = None,
                  resource: str | None = None, key: str = "key", score: str = "score", fmt: str = "auto",
                  words: VerdictWords = VerdictWords(), layout: Layout | None = None,
                  annotators: Mapping[str, str] | None = None, role: str = "annotator") -> ImportSummary:
    """Append the verdicts of ``files`` to the store at ``store`` in one create-only write.

    Every record gets ``role`` (annotator, judge or gold: :mod:`prdist.verdicts.roles`).

    Every file is read and validated before anything is written, so a bad file leaves the store
    untouched. Records that cannot be told apart (one key, one annotator, one time) but disagree
    are refused; identical ones are kept once (counted as "duplicate"). With ``resource`` (a
    Parquet resource URL with columns ``key`` and ``score``), labels for keys the resource does
    not hold are refused too (:func:`keys_missing_from`: one pass over its key column). Without
    it any key is accepted: one store serves many resources, and a run uses only its own keys'
    labels. ``layout`` and ``annotators`` are as in :func:`read_label_file`; every record read but
    not appended is counted in the summary's ``skipped`` under its reason.
    """
    check_choice(role, name="role", owner="import_labels", choices=ROLES)
    files = tuple(files)
    if not files:
        raise InputError("No label files given. Name at least one label file or tool export.")
    resolve(store, storage_options=storage_options)  # a bad store URL is refused before any file is read
    layout = layout or Layout(fmt=fmt)
    now = pd.Timestamp(datetime.now(timezone.utc))
    frames, formats, skipped, notes = [], [], Counter(), []
    for url in files:
        read = read_label_file(url, words=words, storage_options=storage_options, layout=layout, annotators=annotators, now=now)
        frame = read.verdicts
        formats.append(read.format)
        skipped.update(dict(read.skipped))
        notes += [f"{PurePosixPath(url).name}: {note}" for note in read.notes]
        frame["source"] = source or PurePosixPath(url).name
        frame["annotator"] = frame["annotator"].where(frame["annotator"].notna(), annotator or "")
        frame["time"] = frame["time"].fillna(now)
        frame["role"] = role
        frames.append(frame)
    batch = pd.concat(frames, ignore_index=True)
    clash = batch.groupby(["key", "annotator", "time"])["label"].nunique()
    clash = clash[clash > 1]
    if len(clash):
        raise DataError(
            f"The import gives {len(clash)} key(s) different verdicts from one annotator at one time, e.g. "
            f"{clash.index[0][0]!r}. Resolve the disagreement in the files (or name the annotators) and import again."
        )
    before = len(batch)
    batch = batch.drop_duplicates(["key", "annotator", "time"], keep="last")
    if len(batch) < before:
        skipped["duplicate"] += before - len(batch)
    if not len(batch):
        reasons = ", ".join(f"{count:,} {reason}" for reason, count in skipped.most_common()) or "no records"
        raise DataError(f"{', '.join(map(str, files))}: no verdict to import ({reasons}), so nothing was written. "
                        "Import an export of answered, accepted tasks, or name the verdict's question with --control.")
    if resource is not None:
        url, missing = keys_missing_from(resource, batch["key"], storage_options=storage_options, key=key, score=score)
        if len(missing):
            raise DataError(
                f"The import labels {len(missing)} key(s) that {url} does not hold, e.g. {missing[0]!r}. "
                "Check that the files label this resource (and its --key column), or import without --resource."
            )
    table = pa.Table.from_pandas(batch[list(STORE_SCHEMA.names)], schema=STORE_SCHEMA, preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    target = join_url(store, f"labels-{stamp}-{uuid.uuid4().hex[:12]}.parquet")
    write_bytes_exclusive(target, sink.getvalue().to_pybytes(), storage_options=storage_options)
    return ImportSummary(written=target, labels=len(batch), positives=int((batch["label"] == 1).sum()),
                         cannot_judge=int((batch["label"] == CANNOT_JUDGE).sum()), keys=int(batch["key"].nunique()),
                         annotators=int(batch["annotator"].nunique()), files=files, formats=tuple(formats),
                         skipped=tuple(sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))), notes=tuple(notes))
