"""Readers of label files as annotation tools export them, each into plain label records.

Every reader turns one file's content into a frame of *raw* records: ``row`` (where in the file,
for messages), ``key``, ``value`` (the verdict as the tool wrote it), ``annotator``, ``time``
(None when the tool does not say) and ``skip`` (None, or why the record is not a verdict: a draft,
a rejected annotation, several choices, ...). Verdict words are parsed afterwards, in one place
(:func:`prdist.verdicts.aggregation.parse_verdicts`), so that every format accepts the same words and fails
with the same message. Every file is parsed through :mod:`prdist.input_gate`: a shape a reader does
not know is refused in one line naming the file, the place and the fix, never guessed.

What each format's fields mean (anything else in the file is ignored; a record that is not a
verdict is counted under its reason, never dropped silently):

Label Studio JSON
    a list of tasks ``{"id", "data", "annotations", "drafts"}``. Key: ``data.key`` (``--key-field``
    names another path, e.g. ``data.id``). Verdict: the one choice of the *verdict control*:
    ``--control NAME``, else the Choices control named verdict / label / answer / judgement /
    judgment / correct, else the only Choices control (several, none named: refused, listing them).
    Several choices, or no answer to that control: reported, not a verdict. ``was_cancelled`` (a
    skipped task) = cannot judge. An annotation a reviewer rejected (``last_action`` "rejected",
    or a last ``reviews`` entry with ``accepted: false``) is left out (reported). When a task has
    ground-truth annotations (``ground_truth: true``), only they are read (the others are
    reported as superseded). ``drafts`` are never verdicts (reported). Annotator: ``completed_by`` (an id, or
    the e-mail of an object); time: ``updated_at``, else ``created_at``.
Label Studio JSON-MIN and CSV
    one flat record per annotation (the converter's ``JSON_MIN`` / ``CSV``): the task data's
    columns, the verdict control's column (same choice of control), ``annotator``, ``updated_at``. A
    multi-choice answer (``{"choices": [...]}``) is reported, not a verdict. These exports carry no
    skipped (cancelled) annotations, drafts or reviews: items every annotator skipped are missing
    instead of cannot judge (the import says so).
MTurk batch results CSV
    one row per assignment: ``Input.key`` (or ``Input.key_1 ... key_n`` for several items per HIT,
    each answered by ``Answer.<control>_i``), the answer ``Answer.<control>`` (``--control``, else
    the preferred names, else the only answer), or the crowd-form ``Answer.taskAnswers`` JSON (its
    ``<control>`` field: a word, ``{"label": word}`` or radio buttons ``{option: {"on": true}}``);
    ``WorkerId``, ``SubmitTime``. Rejected assignments are left out (reported), and so is an item
    that several of the row's answer objects answer (``several answers``: never guessed between).
Prodigy db-out JSONL
    one task per line. Key: ``key``, else ``meta.key`` (``--key-field`` for another path, e.g.
    ``_input_hash``). ``answer``: accept / reject / ignore (= cannot judge). A choice task
    (``options``): an accepted answer with exactly one selected option has that option's id as its
    verdict (the option's text when the id is a number); none or several selected, or a rejected
    choice task, is reported, not a verdict.
    Annotator ``_annotator_id``, else ``_session_id``; time ``_timestamp`` (seconds since 1970).
Argilla records
    ``records.to_json`` (2.x: ``responses: {question: [{"value", "user_id", "status"}]}``) or the
    1.x list ``responses: [{"user_id", "values", "status"}]``. Key: ``metadata.key``, else
    ``fields.key``, else ``id`` (or ``--key-field``). Question: ``--control``, else the preferred
    names, else the only question. Status submitted = a verdict, discarded = cannot judge, draft =
    reported, not a verdict. A response without a status (the released 2.x SDK's ``to_json`` writes
    none) is read as submitted, and the import says so.
Plain CSV, JSONL and Parquet
    ``key``, ``label`` (and optionally ``annotator``, ``time`` as date-time text); ``--key-field``
    and ``--control`` name other key and verdict columns. A ``.json`` file holding one JSON array
    (or one object) is read as one.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prdist.errors import DataError, InputError
from prdist.input_gate import expect, gate, json_document, json_lines, refusal
from prdist.verdicts.choices import LABEL_FORMATS

__all__ = ["FORMATS", "Layout", "Raw", "detect_format", "raw_records"]

FORMATS = LABEL_FORMATS
RAW_COLUMNS = ["row", "key", "value", "annotator", "time", "skip"]
# The name of the question a tool's export holds the verdict under, in order of preference.
VERDICT_NAMES = ("verdict", "label", "answer", "judgement", "judgment", "correct")
CANCELLED = "cannot judge"
# Why a record is not a verdict (counted and reported by the import).
DRAFT, REJECTED, SEVERAL = "draft", "rejected", "several choices"
NO_ANSWER, SUPERSEDED = "no answer to the verdict question", "superseded by ground truth"
NO_OPTION, REJECTED_CHOICE = "no single option selected", "choice task rejected"
SEVERAL_ANSWERS = "several answers"
FLAT_NOTE = ("Label Studio JSON-MIN and CSV exports carry no skipped tasks, drafts or reviews: items every annotator "
             "skipped are missing, not cannot judge; import the JSON export to count them")
NO_STATUS_NOTE = ("the Argilla export has no status on {n} response(s) (the 2.x SDK's records.to_json writes none): "
                  "they were read as submitted, so a draft among them counts as a verdict")
_KEY_FIX = "give every item one key, text or a whole number (--key-field names the field that holds it)"
_LS_FIX = "export the project again from Label Studio (JSON, JSON-MIN or CSV)"


@dataclass(frozen=True)
class Layout:
    """How to read a file: its format, the question that holds the verdict, where the key is.

    ``control``: the verdict's question (Label Studio control ``from_name``, MTurk answer name,
    Argilla question); None picks it as the module docstring says. ``key_field``: a dotted path
    to the key in each record (``data.id``, ``meta.key``, ``_input_hash``); for flat exports the
    column (``data.`` or ``Input.`` prefixes are allowed); None: the format's default.
    """

    fmt: str = "auto"
    control: str | None = None
    key_field: str | None = None


@dataclass(frozen=True, eq=False)
class Raw:
    """One file's raw records (:data:`RAW_COLUMNS`), the format read and what the import must say."""

    format: str
    records: pd.DataFrame
    notes: tuple[str, ...] = ()


def raw_records(data: bytes, *, origin: str, layout: Layout = Layout()) -> Raw:
    """Read one file's bytes as ``layout.fmt`` (detected from the content when "auto")."""
    fmt = layout.fmt
    if fmt not in FORMATS:
        raise InputError(f"The label format {fmt!r} is not one of {', '.join(FORMATS)}.")
    with gate(origin):
        if fmt == "parquet" or (fmt == "auto" and data[:4] == b"PAR1"):
            return Raw("parquet", _checked(_plain(_read_parquet(data, origin), origin, layout), origin))
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DataError(f"Label file {origin!r} is neither UTF-8 text nor Parquet. Export it as CSV, JSON or JSONL.") from None
        shape, content = _parse_text(text, origin, fmt)
        found = detect_format(shape, content) if fmt == "auto" else fmt
        if found == "mturk" and shape != "csv":
            raise refusal(origin, None, "MTurk batch results are a CSV file, and this is JSON",
                          "download the batch results CSV from the requester site, or give the format this file has")
        frame, notes = _READERS[found](content, origin, layout)
        return Raw(found, _checked(frame, origin), tuple(notes))


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
    if fmt in ("csv", "mturk") and head in ("[", "{"):
        raise refusal(origin, None, f"--format {fmt} reads CSV, and this file is JSON",
                      "give --format auto (or the tool that wrote it)")
    if fmt in ("csv", "mturk") or (fmt in ("auto", "label-studio") and head not in ("[", "{") and not json_named):
        return "csv", _read_csv(text, origin)
    if head == "[":
        rows = json_document(text, origin)
        rows = expect(rows, list, origin, None, "write one JSON array of objects, or one JSON object per line")
        return "json", [expect(r, dict, origin, f"record {n}", "write one JSON object per record")
                        for n, r in enumerate(rows, start=1)]
    try:
        return "json", [record for _, record in json_lines(text, origin)]
    except DataError:
        whole = _one_object(text)  # one pretty-printed object (a single task), not JSON Lines
        if whole is None:
            raise
        return "json", [whole]


def _one_object(text: str) -> dict | None:
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return whole if isinstance(whole, dict) else None


def _read_csv(text: str, origin: str) -> pd.DataFrame:
    first = text.split("\n", 1)[0]
    if "\t" in first and "," not in first:
        raise refusal(origin, "line 1", "the columns are separated by tabs", "save the file with commas (CSV), or as JSONL")
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
    except (ValueError, csv.Error) as exc:
        fix = "give every row as many comma-separated cells as the header, and quote cells that hold commas"
        cells = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if cells:
            raise refusal(origin, f"line {cells.group(2)}", f"{cells.group(3)} cells where the header has {cells.group(1)}", fix) from None
        detail = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__
        raise refusal(origin, None, f"not readable as CSV ({detail})", fix) from None


def _read_parquet(data: bytes, origin: str) -> pd.DataFrame:
    try:
        return pq.read_table(pa.BufferReader(data)).to_pandas()
    except (pa.ArrowException, ValueError) as exc:
        raise DataError(f"Label file {origin!r} could not be read as Parquet: {exc}. Check its format.") from None


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=RAW_COLUMNS)
    return frame.astype({"row": "int64"})


def _row(row: int, key, value, annotator=None, time=None, skip=None) -> dict:
    return {"row": row, "key": key, "value": value, "annotator": annotator, "time": time, "skip": skip}


# ---------------------------------------------------------------------------------------------
# Keys and fields: one shape, checked where found


def _path(record: dict, path: str):
    """The value at the dotted ``path`` of a JSON record (None when any step is absent)."""
    value = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _key(value, origin: str, place: str):
    """``value`` if it can be a key (text or a whole number), else the refusal naming ``place``."""
    if value is None or (isinstance(value, (float, np.floating)) and np.isnan(value)):
        return None
    if isinstance(value, str) or (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))):
        return value
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and value == np.floor(value) and abs(value) < 2**53:
        return value
    kind = {list: "a list", np.ndarray: "a list", dict: "a JSON object", bool: "a boolean", np.bool_: "a boolean"}.get(
        type(value), f"{type(value).__name__} {value!r}"[:80])
    raise refusal(origin, place, f"the key is {kind}", _KEY_FIX)


def _checked(frame: pd.DataFrame, origin: str) -> pd.DataFrame:
    """Refuse keys that are not one scalar and values or times that are JSON objects or lists."""
    for name, column in (("key", "key"), ("verdict", "value"), ("annotator", "annotator"), ("time", "time")):
        if frame[column].dtype != object and not (column == "time" and frame[column].dtype.kind in "iuf"):
            continue  # a typed column (Parquet) holds scalars
        values = frame[column].to_numpy(dtype=object)
        for row, value in zip(frame["row"].to_numpy(), values):
            if column == "key":
                _key(value, origin, f"row {row}")
            elif isinstance(value, (list, dict, np.ndarray)):
                raise refusal(origin, f"row {row}", f"the {name} is {'a JSON object' if isinstance(value, dict) else 'a list'}",
                              f"give one {name} per record as text")
            elif column == "time" and isinstance(value, (int, float, np.integer, np.floating)) and not pd.isna(value):
                raise refusal(origin, f"row {row}", f"the time is the number {value!r}, not a date-time",
                              "write times as date-time text such as 2026-11-25T06:30:00Z, or drop the column")
    return frame


def _scalar(value, origin: str, place: str, what: str):
    """A verdict or annotator as found: text, a number or a boolean (None when absent)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise refusal(origin, place, f"the {what} is {'a list' if isinstance(value, list) else 'a JSON object'}",
                  f"give one {what} per record")


def _pick(names, wanted: str | None, origin: str, what: str) -> str | None:
    """The verdict's question among ``names``: ``wanted``, a preferred name, or the only one."""
    names = list(dict.fromkeys(str(n) for n in names))
    if wanted is not None:
        if wanted in names or not names:
            return wanted
        raise refusal(origin, None, f"no {what} named {wanted!r}; it has {', '.join(map(repr, names))}",
                      "give --control one of those names")
    for name in VERDICT_NAMES:
        named = [n for n in names if n.lower() == name]  # "Verdict" is the one named verdict
        if len(named) == 1:
            return named[0]
    if len(names) <= 1:
        return names[0] if names else None
    raise refusal(origin, None, f"{len(names)} {what}s could hold the verdict ({', '.join(map(repr, names))})",
                  "name the verdict's with --control NAME")


# ---------------------------------------------------------------------------------------------
# Plain files


_HINTS = {"verdict": "label", "answer": "label", "id": "key", "item": "key"}


def _plain(content, origin: str, layout: Layout) -> pd.DataFrame:
    """key, label[, annotator, time] columns, as prdist's own files and stores have them."""
    frame = content if isinstance(content, pd.DataFrame) else pd.DataFrame(content)
    key, label = layout.key_field or "key", layout.control or "label"
    missing = [c for c in (key, label) if c not in frame.columns]
    if missing:
        raise DataError(f"Label file {origin!r} lacks the column(s) {missing}; it has {list(map(str, frame.columns))[:20]}. "
                        f"{_plain_hint(frame, key)}")
    out = pd.DataFrame({
        "row": range(1, len(frame) + 1),
        "key": frame[key].to_numpy(dtype=object),
        "value": frame[label].to_numpy(dtype=object),
        "annotator": frame["annotator"].to_numpy(dtype=object) if "annotator" in frame else None,
        "time": frame["time"].to_numpy(dtype=object) if "time" in frame else None,
        "skip": None,
    })
    return out


def _plain_hint(frame: pd.DataFrame, key: str) -> str:
    """The one-line fix for a label file whose header is not ``key,label``."""
    columns = [str(c) for c in frame.columns]
    lower = {c.lower().strip(): c for c in columns}
    if {key, "label"} <= set(lower):
        return f"Column names are case-sensitive: rename {lower[key]!r} to '{key}' and {lower['label']!r} to 'label'."
    for wrong, right in _HINTS.items():
        if wrong in lower and right not in lower:
            option = "--key-field" if right == "key" else "--control"
            return (f"Rename the column {lower[wrong]!r} to '{right}', or give {option} {lower[wrong]} "
                    "(a label file has the columns key,label[,annotator,time]).")
    if len(columns) == 1 and ("\t" in columns[0] or ";" in columns[0]):
        return "The columns are not separated by commas: save the file as CSV (comma-separated) with the header key,label."
    if 2 <= len(columns) <= 4 and key not in lower and _looks_like_a_verdict(columns[1]):
        return "The file has no header row: add the line key,label at its top."
    return "A label file needs at least 'key' and 'label' (or give --format for a tool's export)."


def _looks_like_a_verdict(name: str) -> bool:
    """Whether a header cell is rather a verdict (pandas renames a repeated one "1" to "1.1")."""
    word = re.sub(r"\.\d+$", "", name).strip().lower() if not re.fullmatch(r"-?\d+\.\d+", name) else name
    return bool(re.fullmatch(r"-?\d+(\.\d+)?", word)) or word in ("yes", "no", "true", "false", "correct", "incorrect",
                                                                 "accept", "reject", "skip", "unsure")


def _plain_reader(content, origin: str, layout: Layout):
    return _plain(content, origin, layout), []


# ---------------------------------------------------------------------------------------------
# Label Studio


def _label_studio(content, origin: str, layout: Layout):
    if isinstance(content, pd.DataFrame) or (content and "annotations" not in content[0]):
        frame = content if isinstance(content, pd.DataFrame) else pd.DataFrame(content)
        return _label_studio_min(frame, origin, layout), [FLAT_NOTE]
    tasks = [_ls_task(task, n, origin) for n, task in enumerate(content, 1)]
    regions = [region for n, _, anns in tasks for i, a in enumerate(anns, 1) for region in _ls_regions(a, origin, f"task {n}, annotation {i}")]
    controls = [region.get("from_name") for region in regions if _is_choices(region)]
    if regions and not controls:
        others = ", ".join(dict.fromkeys(f"{r.get('from_name')!r} ({r.get('type')})" for r in regions))
        raise refusal(origin, None, f"no Choices control holds the verdict; its controls are {others}",
                      "label the verdict with a Choices control (as 'prdist labels export' configures it) and export again")
    control = _pick(controls, layout.control, origin, "Choices control")
    rows = []
    for n, task, anns in tasks:
        key = _ls_key(task, n, origin, layout.key_field)
        truth = any(a.get("ground_truth") is True for a in anns)
        for i, ann in enumerate(anns, 1):
            place = f"task {n}, annotation {i}"
            skip = SUPERSEDED if truth and ann.get("ground_truth") is not True else _ls_rejected(ann, origin, place)
            value, why = (CANCELLED, None) if ann.get("was_cancelled") is True else _ls_choice(ann, control, origin, place)
            rows.append(_row(n, key, value, _ls_user(ann.get("completed_by"), origin, place),
                             ann.get("updated_at") or ann.get("created_at"), skip or why))
        drafts = expect(task.get("drafts") or [], list, origin, f"task {n}, field 'drafts'", _LS_FIX)
        rows += [_row(n, key, None, skip=DRAFT) for _ in drafts]
    return _frame(rows), []


def _ls_task(task: dict, n: int, origin: str) -> tuple[int, dict, list[dict]]:
    """(number, task, annotations) of one task whose data and annotations have the shapes Label Studio writes."""
    expect(task.get("data"), dict, origin, f"task {n}, field 'data'", _LS_FIX)
    annotations = expect(task.get("annotations") or [], list, origin, f"task {n}, field 'annotations'", _LS_FIX)
    return n, task, [expect(a, dict, origin, f"task {n}, annotation {i}", _LS_FIX) for i, a in enumerate(annotations, 1)]


def _ls_key(task: dict, n: int, origin: str, key_field: str | None):
    where = key_field or "data.key"
    key = _key(_path(task, where), origin, f"task {n}")
    if key is None:
        raise refusal(origin, f"task {n} (id {task.get('id')!r})", f"no key at {where}",
                      "export tasks made by 'prdist labels export', or name the field with --key-field (e.g. data.id)")
    return key


def _is_choices(region: dict) -> bool:
    return str(region.get("type", "")).lower() == "choices"


def _ls_regions(ann: dict, origin: str, place: str) -> list[dict]:
    result = expect(ann.get("result") or [], list, origin, f"{place}, field 'result'", _LS_FIX)
    return [expect(r, dict, origin, f"{place}, result {j}", _LS_FIX) for j, r in enumerate(result, 1)]


def _ls_rejected(ann: dict, origin: str, place: str) -> str | None:
    """REJECTED when a reviewer rejected the annotation: its ``last_action`` (Label Studio's record
    of the last review) is "rejected", or its last entry in ``reviews`` has ``accepted: false``."""
    if ann.get("last_action") == "rejected":
        return REJECTED
    reviews = expect(ann.get("reviews") or [], list, origin, f"{place}, field 'reviews'", _LS_FIX)
    reviews = [expect(r, dict, origin, f"{place}, review {j}", _LS_FIX) for j, r in enumerate(reviews, 1)]
    if not reviews:
        return None
    last = sorted(reviews, key=lambda r: str(r.get("updated_at") or r.get("created_at") or ""))[-1]
    return REJECTED if last.get("accepted") is False else None


def _ls_choice(ann: dict, control: str | None, origin: str, place: str) -> tuple[str | None, str | None]:
    """(the choice, None), or (None, why it is not a verdict) for one annotation."""
    regions = [r for r in _ls_regions(ann, origin, place) if r.get("from_name") == control and _is_choices(r)]
    if not regions:
        return None, NO_ANSWER
    choices = [c for r in regions
               for c in expect(expect(r.get("value") or {}, dict, origin, f"{place}, field 'value'", _LS_FIX).get("choices") or [],
                               list, origin, f"{place}, field 'choices'", _LS_FIX)]
    if len(choices) > 1:
        return None, SEVERAL
    return (_scalar(choices[0], origin, place, "choice"), None) if choices else (None, None)


def _ls_user(user, origin: str, place: str) -> str | None:
    if isinstance(user, dict):
        return str(user.get("email") or user.get("id"))
    return None if user is None else str(_scalar(user, origin, place, "annotator"))


def _label_studio_min(frame: pd.DataFrame, origin: str, layout: Layout) -> pd.DataFrame:
    key = (layout.key_field or "key").removeprefix("data.")
    if layout.key_field == "data.id":
        raise refusal(origin, None, "the converter's 'id' column is Label Studio's task id, not data.id",
                      "import the JSON export with --key-field data.id, or give --key-field id for the task id")
    if key not in frame.columns:
        raise DataError(f"Label file {origin!r} (Label Studio JSON-MIN/CSV) has no {key!r} column; it has {list(map(str, frame.columns))[:20]}. "
                        "Name the key's column with --key-field.")
    data_columns = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "agreement", "history", key}
    column = _pick([c for c in frame.columns if c not in data_columns], layout.control, origin, "column")
    if column is None or column not in frame.columns:
        raise refusal(origin, None, "no column holds the verdict", "give --control the verdict control's name")
    values, skips = zip(*[_min_value(v, origin) for v in frame[column].to_numpy(dtype=object)]) if len(frame) else ((), ())
    value = pd.Series(values, dtype=object)
    if "was_cancelled" in frame.columns:
        cancelled = frame["was_cancelled"].astype(str).str.lower().isin(["true", "1"]).to_numpy()
        value = value.where(~cancelled, CANCELLED)
    time = frame["updated_at"] if "updated_at" in frame else frame.get("created_at")
    return pd.DataFrame({"row": range(1, len(frame) + 1), "key": frame[key].to_numpy(dtype=object), "value": value.to_numpy(),
                         "annotator": frame["annotator"].astype(object).to_numpy() if "annotator" in frame else None,
                         "time": None if time is None else time.to_numpy(dtype=object), "skip": list(skips)})


def _min_value(value, origin: str) -> tuple:
    """A JSON-MIN/CSV cell: one choice, or a multi-choice ``{"choices": [...]}`` (not a verdict)."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        value = json_document(value, origin)
    if isinstance(value, dict):
        choices = value.get("choices")
        return (None, SEVERAL) if isinstance(choices, list) and len(choices) != 1 else (
            (choices[0], None) if isinstance(choices, list) else (value, None))
    if isinstance(value, list):
        return (value[0], None) if len(value) == 1 else (None, SEVERAL)
    return value, None


# ---------------------------------------------------------------------------------------------
# MTurk


_MTURK_ZONES = {"PST": "-0800", "PDT": "-0700", "UTC": "+0000", "GMT": "+0000", "EST": "-0500", "EDT": "-0400"}


def _mturk_time(text, origin: str, place: str) -> pd.Timestamp | None:
    """MTurk's ``Wed Nov 25 06:30:00 PST 2026`` (zone abbreviations replaced by offsets)."""
    if not isinstance(text, str) or not text.strip():
        return None
    match = re.fullmatch(r"(\w{3} \w{3} +\d+ [\d:]+) (\w+) (\d{4})", text.strip())
    try:
        if not match or match.group(2) not in _MTURK_ZONES:
            return pd.Timestamp(text)
        return pd.Timestamp(f"{match.group(1)} {match.group(3)} {_MTURK_ZONES[match.group(2)]}")
    except (ValueError, OverflowError):
        raise refusal(origin, f"{place}, column SubmitTime", f"{text[:60]!r} is not a time",
                      "export the batch results again (MTurk writes e.g. Wed Nov 25 06:30:00 PST 2026)") from None


def _mturk(frame: pd.DataFrame, origin: str, layout: Layout):
    name = (layout.key_field or "key").removeprefix("Input.")
    items = _mturk_items(frame.columns, name)
    if not items:
        raise refusal(origin, None, f"no 'Input.{name}' column (nor Input.{name}_1, ...)",
                      "name the HIT's key input 'key', or give --key-field the input that holds it")
    forms = "Answer.taskAnswers" in frame.columns
    answers, repeated = _crowd_answers(frame, origin) if forms else (None, None)
    control = _mturk_control(frame.columns, answers, layout.control, items, origin)
    rejected = frame["AssignmentStatus"].fillna("").to_numpy() == "Rejected" if "AssignmentStatus" in frame else np.zeros(len(frame), bool)
    workers = frame["WorkerId"].to_numpy(dtype=object) if "WorkerId" in frame else [None] * len(frame)
    submitted = frame["SubmitTime"] if "SubmitTime" in frame else [None] * len(frame)
    times = [_mturk_time(t, origin, f"row {i}") for i, t in enumerate(submitted, 1)]
    rows = []
    for i in range(len(frame)):
        for suffix in items:
            key = frame[f"Input.{name}{suffix}"].iloc[i]
            if pd.isna(key):
                continue  # a HIT with fewer items than the widest one
            if answers is None:
                value, why = frame[f"Answer.{control}{suffix}"].iloc[i], None
            elif _answered_twice(repeated[i], control, suffix):
                value, why = None, SEVERAL_ANSWERS
            else:
                value, why = _crowd_value(answers[i], control, suffix, origin, f"row {i + 1}")
            rows.append(_row(i + 1, key, value, workers[i], times[i], REJECTED if rejected[i] else why))
    return _frame(rows), []


def _mturk_items(columns, name: str) -> list[str]:
    """The suffixes of the key inputs: [""] for ``Input.key``, ["_1", "_2", ...] for several items."""
    if f"Input.{name}" in columns:
        return [""]
    found = sorted((int(m.group(1)), f"_{m.group(1)}") for c in columns if (m := re.fullmatch(rf"Input\.{re.escape(name)}_(\d+)", str(c))))
    return [suffix for _, suffix in found]


def _mturk_control(columns, answers, wanted, items, origin):
    suffix = re.compile("|".join(re.escape(s) for s in items if s) + "$") if items != [""] else None
    if answers is not None:
        names = {k for a in answers for k in a}
    else:
        names = {str(c)[len("Answer."):] for c in columns if str(c).startswith("Answer.")}
    bases = {suffix.sub("", n) if suffix else n for n in names}
    if answers is not None and wanted is None and bases and all(_radio(a, n) for a in answers for n in a):
        return None  # radio buttons named by option: the one that is on is the verdict
    control = _pick(sorted(bases), wanted, origin, "answer")
    missing = [f"Answer.{control}{s}" for s in items if f"Answer.{control}{s}" not in columns]
    if answers is None and missing:
        raise refusal(origin, None, f"no answer column {missing[0]!r}",
                      "name the verdict's answer with --control (the HIT's form field name)")
    return control


def _crowd_answers(frame: pd.DataFrame, origin: str) -> tuple[list[dict], list[set]]:
    """The crowd-form answers: ``Answer.taskAnswers`` holds a JSON list of one object per row; with
    the names that several of a row's objects answer (never guessed between: see :func:`_answered_twice`)."""
    out, repeated = [], []
    for i, text in enumerate(frame["Answer.taskAnswers"].fillna("[]"), start=1):
        value = json_document(text, f"{origin}, row {i}, column Answer.taskAnswers")
        value = expect(value, (list, dict), origin, f"row {i}, column Answer.taskAnswers", "export the batch results again")
        value = value if isinstance(value, list) else [value]
        merged: dict = {}
        twice: set = set()
        for part in value:
            part = expect(part, dict, origin, f"row {i}, column Answer.taskAnswers", "export the batch results again")
            twice.update(merged.keys() & part.keys())
            merged.update(part)
        out.append(merged)
        repeated.append(twice)
    return out, repeated


def _answered_twice(twice: set, control, suffix: str) -> bool:
    """Whether several answer objects of a row answer this item's verdict question (any option of
    radio buttons named by option when ``control`` is None)."""
    if control is None:
        return any(not suffix or n.endswith(suffix) for n in twice)
    return f"{control}{suffix}" in twice


def _radio(answer: dict, name) -> bool:
    value = answer.get(name)
    return isinstance(value, dict) and set(value) == {"on"}


def _crowd_value(answer: dict, control, suffix: str, origin: str, place: str) -> tuple:
    """One item's verdict in a crowd-form answer (see the module docstring)."""
    if control is None:
        on = [n for n, v in answer.items() if v.get("on") is True and (not suffix or n.endswith(suffix))]
        return (on[0][: len(on[0]) - len(suffix)], None) if len(on) == 1 else (None, NO_OPTION if not on else SEVERAL)
    value = answer.get(f"{control}{suffix}")
    if isinstance(value, dict) and "label" in value:
        value = value["label"]
    elif isinstance(value, dict) and value and all(isinstance(v, dict) and set(v) == {"on"} for v in value.values()):
        on = [n for n, v in value.items() if v["on"] is True]
        return (on[0], None) if len(on) == 1 else (None, NO_OPTION if not on else SEVERAL)
    if isinstance(value, list):
        return (value[0], None) if len(value) == 1 else (None, SEVERAL)
    return _scalar(value, origin, place, "answer"), None


# ---------------------------------------------------------------------------------------------
# Prodigy


def _prodigy(rows: list[dict], origin: str, layout: Layout):
    out = []
    for n, row in enumerate(rows, start=1):
        place = f"line {n}"
        key = _path(row, layout.key_field) if layout.key_field else (row["key"] if "key" in row else _path(row, "meta.key"))
        if _key(key, origin, place) is None:
            raise refusal(origin, place, f"no key at {layout.key_field or 'key or meta.key'}",
                          "put the item key into the task's meta, or name the field with --key-field (e.g. _input_hash)")
        value, why = _prodigy_answer(row, origin, place)
        time = row.get("_timestamp")
        if time is not None:
            expect(time, (int, float), origin, f"{place}, field '_timestamp'", "give seconds since 1970, as Prodigy writes")
            if not 0 <= time < 2**35:
                raise refusal(origin, f"{place}, field '_timestamp'", f"{time!r} is not a time Prodigy writes (seconds since 1970)",
                              "fix or drop the field")
            time = pd.Timestamp(time, unit="s", tz="UTC")
        annotator = _scalar(row.get("_annotator_id") or row.get("_session_id"), origin, place, "annotator")
        out.append(_row(n, key, value, annotator, time, why))
    return _frame(out), []


def _prodigy_answer(row: dict, origin: str, place: str) -> tuple:
    answer = _scalar(row.get("answer"), origin, place, "answer")
    if "options" not in row and not isinstance(row.get("accept"), list):
        return answer, None
    if answer == "ignore":
        return CANCELLED, None
    if answer != "accept":
        return None, REJECTED_CHOICE
    accepted = expect(row.get("accept") or [], list, origin, f"{place}, field 'accept'", "export the dataset again with db-out")
    if len(accepted) != 1:
        return None, NO_OPTION if not accepted else SEVERAL
    chosen = _scalar(accepted[0], origin, place, "option")
    if isinstance(chosen, str):
        return chosen, None
    # A numbered option (id 0, 1, ...): its text is the verdict, never the number.
    options = expect(row.get("options") or [], list, origin, f"{place}, field 'options'", "export the dataset again with db-out")
    texts = [o.get("text") for o in options if isinstance(o, dict) and o.get("id") == chosen]
    if len(texts) != 1 or not isinstance(texts[0], str):
        raise refusal(origin, place, f"the selected option {chosen!r} has no text among the task's options",
                      "give the choice options text ids (e.g. correct / incorrect), or export the dataset again")
    return texts[0], None


# ---------------------------------------------------------------------------------------------
# Argilla


def _argilla(rows: list[dict], origin: str, layout: Layout):
    questions = [q for r in rows for q in _argilla_questions(r.get("responses"), origin)]
    question = _pick(questions, layout.control, origin, "question")
    out, unknown = [], 0
    for n, record in enumerate(rows, start=1):
        place = f"record {n}"
        if layout.key_field:
            key = _path(record, layout.key_field)
        else:
            key = next((v for v in (_path(record, "metadata.key"), _path(record, "fields.key"), record.get("id")) if v is not None), None)
        if _key(key, origin, place) is None:
            raise refusal(origin, place, "no key (metadata.key, fields.key or id)", "name the field with --key-field")
        for user, value, status in _argilla_responses(record.get("responses"), question, origin, place):
            unknown += status is None
            why = DRAFT if status == "draft" else (None if status in (None, "submitted", "discarded") else f"status {status}")
            value, skip = (CANCELLED, None) if status == "discarded" else _one_value(value, origin, place)
            out.append(_row(n, key, value, user, record.get("updated_at"), why or skip))
    return _frame(out), [NO_STATUS_NOTE.format(n=unknown)] if unknown else []


def _argilla_questions(responses, origin: str) -> list[str]:
    if isinstance(responses, dict):
        return list(responses)
    return [q for r in responses or [] if isinstance(r, dict) and isinstance(r.get("values"), dict) for q in r["values"]]


def _argilla_responses(responses, question, origin: str, place: str):
    """(user, value, status) of each response to ``question`` (2.x dict or 1.x list form)."""
    fix = "export the records again with the Argilla SDK"
    responses = expect(responses if responses is not None else {}, (dict, list), origin, f"{place}, field 'responses'", fix)
    if isinstance(responses, dict):
        answers = expect(responses.get(question) or [], list, origin, f"{place}, responses to {question!r}", fix)
        for a in answers:
            a = expect(a, dict, origin, f"{place}, a response to {question!r}", fix)
            yield _scalar(a.get("user_id"), origin, place, "user_id"), a.get("value"), a.get("status")
        return
    for a in responses:
        a = expect(a, dict, origin, f"{place}, a response", fix)
        values = expect(a.get("values") or {}, dict, origin, f"{place}, field 'values'", fix)
        if question in values or a.get("status") in ("discarded", "draft"):
            value = values.get(question)
            value = expect(value, dict, origin, f"{place}, value of {question!r}", fix).get("value") if value is not None else None
            yield _scalar(a.get("user_id"), origin, place, "user_id"), value, a.get("status")


def _one_value(value, origin: str, place: str) -> tuple:
    if isinstance(value, list):
        return (value[0], None) if len(value) == 1 else (None, SEVERAL)
    return _scalar(value, origin, place, "answer"), None


_READERS: dict[str, Callable] = {
    "csv": _plain_reader,
    "jsonl": _plain_reader,
    "parquet": _plain_reader,
    "label-studio": _label_studio,
    "mturk": _mturk,
    "prodigy": _prodigy,
    "argilla": _argilla,
}
