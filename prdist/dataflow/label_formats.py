"""Readers of label files as annotation tools export them, each into plain label records.

Every reader turns one file's content into a frame of *raw* records: ``row`` (where in the file,
for messages), ``key``, ``value`` (the verdict as the tool wrote it), ``annotator`` and ``time``
(None when the tool does not say). Verdict words are parsed afterwards, in one place
(:func:`prdist.verdicts.parse_verdicts`), so that every format accepts the same words and fails
with the same message.

Shapes read (as the tools write them):

- Label Studio JSON export: a JSON array of tasks ``{"id", "data": {...}, "annotations": [{"result":
  [{"type": "choices", "value": {"choices": [...]}}], "completed_by", "was_cancelled",
  "created_at", "updated_at"}]}``; JSON-MIN: one flat object per annotation with the task data,
  the choice under its control name, ``annotator``, ``annotation_id``, ``created_at``,
  ``updated_at``, ``lead_time``; CSV: the same columns. The key is the task data's ``key``; a
  cancelled (skipped) annotation is "cannot judge".
- MTurk batch results CSV: ``HITId, ..., WorkerId, AssignmentStatus, SubmitTime, ..., Input.key,
  Answer.<name>``; rejected assignments are left out.
- Prodigy ``db-out`` JSONL: ``key`` or ``meta.key``, ``answer`` (accept / reject / ignore; with a
  choice interface the single accepted option), ``_annotator_id`` (else ``_session_id``),
  ``_timestamp``.
- Argilla exported records (``dataset.records.to_json``): ``{"id", "fields", "metadata",
  "responses": {question: [{"value", "user_id"}]}, ...}``; also the v1 list form
  ``"responses": [{"user_id", "values": {question: {"value"}}, "status"}]`` (a discarded
  response is "cannot judge"). The key is ``metadata.key``, else ``fields.key``, else ``id``.
- Plain CSV / JSONL / Parquet with ``key``, ``label`` (and optionally ``annotator``, ``time``);
  a ``.json`` file holding one JSON array is read as one.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..label_choices import LABEL_FORMATS
from ..errors import DataError, InputError

__all__ = ["FORMATS", "detect_format", "raw_records"]

FORMATS = LABEL_FORMATS
RAW_COLUMNS = ["row", "key", "value", "annotator", "time"]
# The name of the choice a tool's export holds the verdict under, in order of preference.
VERDICT_NAMES = ("verdict", "label", "answer", "judgement", "judgment", "correct")
CANCELLED = "cannot judge"


def raw_records(data: bytes, *, origin: str, fmt: str = "auto") -> tuple[str, pd.DataFrame]:
    """Read one file's bytes as ``fmt`` (detected from the content when "auto").

    Returns the format used and the raw records (columns :data:`RAW_COLUMNS`).
    """
    if fmt not in FORMATS:
        raise InputError(f"The label format {fmt!r} is not one of {', '.join(FORMATS)}.")
    if fmt == "parquet" or (fmt == "auto" and data[:4] == b"PAR1"):
        return "parquet", _plain(_read_parquet(data, origin), origin)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"Label file {origin!r} is neither UTF-8 text nor Parquet. Export it as CSV, JSON or JSONL.") from None
    shape, content = _parse_text(text, origin, fmt)
    found = detect_format(shape, content) if fmt == "auto" else fmt
    reader = _READERS[found]
    return found, reader(content, origin)


def detect_format(shape: str, content) -> str:
    """The tool that wrote a parsed file: ``shape`` is "json" (a list of objects) or "csv" (a frame).

    Examples
    --------
    >>> detect_format("json", [{"data": {"key": 1}, "annotations": []}])
    'label-studio'
    >>> detect_format("csv", pd.DataFrame(columns=["HITId", "WorkerId", "Input.key", "Answer.label"]))
    'mturk'
    >>> detect_format("json", [{"key": 1, "label": 1}])
    'jsonl'
    """
    if shape == "csv":
        columns = set(content.columns)
        if any(c.startswith("Input.") for c in columns) and any(c.startswith("Answer.") for c in columns):
            return "mturk"
        if {"annotation_id", "annotator"} <= columns:
            return "label-studio"
        return "csv"
    first = content[0] if content else {}
    if "annotations" in first and "data" in first:
        return "label-studio"
    if {"annotation_id", "annotator"} <= set(first):
        return "label-studio"
    if "responses" in first and "fields" in first:
        return "argilla"
    if "answer" in first and any(k in first for k in ("_input_hash", "_task_hash", "_annotator_id", "_view_id", "meta")):
        return "prodigy"
    return "jsonl"


def _parse_text(text: str, origin: str, fmt: str):
    """("json", list of objects) for a JSON array or JSON Lines, ("csv", frame) otherwise."""
    head = text.lstrip()[:1]
    json_named = PurePosixPath(origin).suffix.lower() in (".json", ".jsonl")
    if fmt in ("csv", "mturk") or (fmt in ("auto", "label-studio") and head not in ("[", "{") and not json_named):
        try:
            frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
        except (ValueError, csv.Error) as exc:
            raise DataError(f"Label file {origin!r} could not be read as CSV: {exc}. Check its format.") from None
        return "csv", frame
    try:
        if head == "[":
            rows = json.loads(text)
        else:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        kind = "JSON" if head == "[" else "JSONL"
        raise DataError(f"Label file {origin!r} could not be read as {kind}: {exc}. Check its format.") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataError(f"Label file {origin!r} must hold JSON objects (one per line, or one array of them).")
    return "json", rows


def _read_parquet(data: bytes, origin: str) -> pd.DataFrame:
    try:
        return pq.read_table(pa.BufferReader(data)).to_pandas()
    except (pa.ArrowException, ValueError) as exc:
        raise DataError(f"Label file {origin!r} could not be read as Parquet: {exc}. Check its format.") from None


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=RAW_COLUMNS)
    return frame.astype({"row": "int64"})


def _plain(content, origin: str) -> pd.DataFrame:
    """key, label[, annotator, time] columns, as prdist's own files and stores have them."""
    frame = content if isinstance(content, pd.DataFrame) else pd.DataFrame(content)
    missing = {"key", "label"} - set(frame.columns)
    if missing:
        raise DataError(
            f"Label file {origin!r} lacks the column(s) {sorted(missing)}; it has {list(frame.columns)}. "
            "A label file needs at least 'key' and 'label' (or give --format for a tool's export)."
        )
    return pd.DataFrame({
        "row": range(1, len(frame) + 1),
        "key": frame["key"].to_numpy(dtype=object),
        "value": frame["label"].to_numpy(dtype=object),
        "annotator": frame["annotator"].to_numpy(dtype=object) if "annotator" in frame else None,
        "time": frame["time"].to_numpy(dtype=object) if "time" in frame else None,
    })


def _choice_column(columns, origin: str, *, prefix: str = "") -> str:
    """The column holding the verdict: the preferred names, else the only candidate."""
    for name in VERDICT_NAMES:
        if prefix + name in columns:
            return prefix + name
    candidates = [c for c in columns if c.startswith(prefix)] if prefix else []
    if len(candidates) == 1:
        return candidates[0]
    raise DataError(
        f"Label file {origin!r}: no verdict column found among {sorted(map(str, columns))}; name the choice "
        f"{prefix}verdict (or {prefix}label) in the annotation tool."
    )


def _label_studio(content, origin: str) -> pd.DataFrame:
    if isinstance(content, pd.DataFrame) or (content and "annotations" not in content[0]):
        return _label_studio_min(content if isinstance(content, pd.DataFrame) else pd.DataFrame(content), origin)
    rows = []
    for n, task in enumerate(content, start=1):
        data = task.get("data") or {}
        if "key" not in data:
            raise DataError(f"Label file {origin!r}: task {n} (id {task.get('id')}) has no 'key' in its data. Export tasks made by 'prdist labels export'.")
        for ann in task.get("annotations") or []:
            value = CANCELLED if ann.get("was_cancelled") else _ls_choice(ann.get("result") or [])
            rows.append({"row": n, "key": data["key"], "value": value, "annotator": _ls_user(ann.get("completed_by")),
                         "time": ann.get("updated_at") or ann.get("created_at")})
    return _frame(rows)


def _ls_choice(result: list) -> str | None:
    """The first choice of a Label Studio annotation result (None: nothing chosen)."""
    for region in result:
        choices = (region.get("value") or {}).get("choices")
        if choices:
            return choices[0]
    return None


def _ls_user(user) -> str | None:
    if isinstance(user, dict):
        return str(user.get("email") or user.get("id"))
    return None if user is None else str(user)


def _label_studio_min(frame: pd.DataFrame, origin: str) -> pd.DataFrame:
    if "key" not in frame.columns:
        raise DataError(f"Label file {origin!r} (Label Studio JSON-MIN/CSV) has no 'key' column; it has {list(frame.columns)}.")
    column = _choice_column(frame.columns, origin)
    value = frame[column].astype(object)
    if "was_cancelled" in frame.columns:
        cancelled = frame["was_cancelled"].astype(str).str.lower().isin(["true", "1"])
        value = value.where(~cancelled, CANCELLED)
    time = frame["updated_at"] if "updated_at" in frame else frame.get("created_at")
    return pd.DataFrame({"row": range(1, len(frame) + 1), "key": frame["key"].to_numpy(dtype=object), "value": value.to_numpy(),
                         "annotator": frame["annotator"].astype(object).to_numpy(), "time": None if time is None else time.to_numpy(dtype=object)})


_MTURK_ZONES = {"PST": "-0800", "PDT": "-0700", "UTC": "+0000", "GMT": "+0000", "EST": "-0500", "EDT": "-0400"}


def _mturk_time(text) -> pd.Timestamp | None:
    """MTurk's ``Wed Nov 25 06:30:00 PST 2026`` (zone abbreviations replaced by offsets)."""
    if not isinstance(text, str) or not text.strip():
        return None
    match = re.fullmatch(r"(\w{3} \w{3} +\d+ [\d:]+) (\w+) (\d{4})", text.strip())
    if not match or match.group(2) not in _MTURK_ZONES:
        return pd.Timestamp(text)
    return pd.Timestamp(f"{match.group(1)} {match.group(3)} {_MTURK_ZONES[match.group(2)]}")


def _mturk(frame: pd.DataFrame, origin: str) -> pd.DataFrame:
    if "Input.key" not in frame.columns:
        raise DataError(f"Label file {origin!r} (MTurk batch results) has no 'Input.key' column; name the HIT's key input 'key'.")
    column = _choice_column(frame.columns, origin, prefix="Answer.")
    rows = pd.Series(range(1, len(frame) + 1))
    if "AssignmentStatus" in frame.columns:
        kept = frame["AssignmentStatus"].fillna("") != "Rejected"
        frame, rows = frame.loc[kept.to_numpy()], rows[kept.to_numpy()]
    return pd.DataFrame({"row": rows.to_numpy(), "key": frame["Input.key"].to_numpy(dtype=object),
                         "value": frame[column].to_numpy(dtype=object),
                         "annotator": frame["WorkerId"].to_numpy(dtype=object) if "WorkerId" in frame else None,
                         "time": [_mturk_time(t) for t in frame["SubmitTime"]] if "SubmitTime" in frame else None})


def _prodigy(rows: list[dict], origin: str) -> pd.DataFrame:
    out = []
    for n, row in enumerate(rows, start=1):
        key = row["key"] if "key" in row else (row.get("meta") or {}).get("key")
        if key is None:
            raise DataError(f"Label file {origin!r}: line {n} has neither 'key' nor 'meta.key'. Put the item key into the task's meta.")
        value = row.get("answer")
        accepted = row.get("accept")
        if value == "accept" and isinstance(accepted, list) and len(accepted) == 1:
            value = accepted[0]  # a choice interface: the option picked is the verdict
        time = row.get("_timestamp")
        out.append({"row": n, "key": key, "value": value, "annotator": row.get("_annotator_id") or row.get("_session_id"),
                    "time": None if time is None else pd.Timestamp(time, unit="s", tz="UTC")})
    return _frame(out)


def _argilla(rows: list[dict], origin: str) -> pd.DataFrame:
    out = []
    for n, record in enumerate(rows, start=1):
        key = (record.get("metadata") or {}).get("key", (record.get("fields") or {}).get("key", record.get("id")))
        if key is None:
            raise DataError(f"Label file {origin!r}: record {n} has no key (metadata.key, fields.key or id).")
        for user, value in _argilla_responses(record.get("responses") or {}, origin):
            out.append({"row": n, "key": key, "value": value, "annotator": user, "time": record.get("updated_at")})
    return _frame(out)


def _argilla_responses(responses, origin: str):
    """(user, verdict) pairs of an Argilla v2 record (question -> responses) or v1 (a list)."""
    if isinstance(responses, dict):
        if not responses:
            return
        question = _choice_column(list(responses), origin) if len(responses) > 1 else next(iter(responses))
        for answer in responses[question]:
            discarded = answer.get("status") == "discarded"
            yield answer.get("user_id"), CANCELLED if discarded else answer.get("value")
        return
    for answer in responses:
        values = answer.get("values") or {}
        if answer.get("status") == "discarded":
            yield answer.get("user_id"), CANCELLED
        elif values:
            question = _choice_column(list(values), origin) if len(values) > 1 else next(iter(values))
            yield answer.get("user_id"), (values[question] or {}).get("value")


_READERS: dict[str, Callable] = {
    "csv": _plain,
    "jsonl": _plain,
    "parquet": _plain,
    "label-studio": _label_studio,
    "mturk": _mturk,
    "prodigy": _prodigy,
    "argilla": _argilla,
}

