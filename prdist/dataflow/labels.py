"""The label store: append-only Parquet records of verdicts, shared by every release and system.

One human verdict serves every resource that contains the item, so labels live apart from runs
and resources. Each import appends one new Parquet file (a create-only write, so concurrent imports
never overwrite each other) holding one record per verdict: ``key, label, source, annotator,
time``, where ``label`` is 1 (correct), 0 (incorrect) or -1 (cannot judge) and ``time`` is when
the annotator gave it (the import time when the tool does not say). Keys are stored as text (an
integer key 42 is stored as "42"), which makes the store independent of how each resource types
its key column. Stores written before verdicts had annotators (key, label 0/1) read unchanged.

A key's verdict comes from all its records by a stated rule (:func:`prdist.verdicts.aggregate`):
by default the majority of each annotator's latest verdict, a tie being "disputed". Records from
one anonymous annotator reduce to "the latest import wins" (a correction); keys whose records
disagree are counted, so that disagreement is visible, never silent.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import posixpath
import re
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from datetime import datetime, timezone
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._validation import check_choice
from ..errors import DataError, InputError
from ..input_gate import expect, gate, json_document, json_lines, refusal
from ..label_choices import ROLES
from ..verdict_roles import RoleVerdicts, role_verdicts, split_roles
from ..verdicts import CANNOT_JUDGE, Agreement, Outcomes, VerdictWords, aggregate, agreement
from . import spreadsheet_csv
from .label_formats import Layout, raw_records
from .publishing import publish, write_bytes_exclusive
from .storage import filesystem, given_url, join_url, modified_time, resolve
from .storage_errors import check_regular_file, exists, storage_errors

__all__ = [
    "LabelLookup",
    "ExportSummary",
    "FillSummary",
    "export_annotation_task",
    "fill_task",
    "import_labels",
    "keys_missing_from",
    "lookup_labels",
    "newest_run",
    "read_text_table",
    "normalise_keys",
    "read_annotator_map",
    "read_label_file",
    "label_studio_config",
    "read_store",
    "store_exists",
    "store_status",
    "write_annotation_file",
]

STORE_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("label", pa.int8()),
        ("source", pa.string()),
        ("annotator", pa.string()),
        ("time", pa.timestamp("us", tz="UTC")),
        ("role", pa.string()),  # judge30: annotator / judge / gold (prdist.verdict_roles); null in older stores
    ]
)


def normalise_keys(keys) -> pd.Series:
    """Item keys as text, the form the label store uses (integers in decimal)."""
    s = pd.Series(keys)
    if s.dtype.kind in "iu":
        return s.astype(str)  # any width, in decimal as it is (no wrap of unsigned keys >= 2^63)
    if s.dtype.kind == "f":
        if not np.all(np.isfinite(s)) or not np.all(s == np.floor(s)):
            raise DataError("Item keys must be integers or text; found fractional or missing numeric keys.")
        return s.astype("int64").astype(str)
    return s.astype(str)


def read_label_file(url: str, *, fmt: str = "auto", words: VerdictWords = VerdictWords(), storage_options=None,
                    layout: Layout | None = None, annotators: Mapping[str, str] | None = None, now=None) -> pd.DataFrame:
    """Read and validate one label file: plain CSV / JSONL / Parquet or a tool's export.

    ``layout`` (a :class:`~prdist.dataflow.label_formats.Layout`) names the format (else ``fmt``),
    the verdict's question (``control``) and where the key is (``key_field``); "auto" detects the
    tool from the content (see :mod:`prdist.dataflow.label_formats`). ``annotators`` maps an
    annotator id to the person (ids it does not hold stay as they are). A time later than ``now``
    (default: the current time) plus one day is refused: it would outrank every later correction.

    Returns
    -------
    DataFrame with one row per verdict: key (str), label (int8: 1, 0, -1 = cannot judge),
    annotator (str or None) and time (UTC, NaT when the file does not say). Records that are not
    verdicts are left out and counted in ``attrs["skipped"]`` (reason -> count: blank, draft,
    rejected, several choices, ...); ``attrs["format"]`` names the format read and
    ``attrs["notes"]`` what the import must say about it (e.g. a flat export without skips).
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
    out.attrs.update(skipped=skipped, skipped_blank=skipped.get("blank", 0), format=read.format, notes=read.notes)
    return out


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

    Every record gets ``role`` (annotator, judge or gold: :mod:`prdist.verdict_roles`).

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
        frame = read_label_file(url, words=words, storage_options=storage_options, layout=layout, annotators=annotators, now=now)
        formats.append(frame.attrs["format"])
        skipped.update(frame.attrs["skipped"])
        notes += [f"{PurePosixPath(url).name}: {note}" for note in frame.attrs["notes"]]
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


@dataclass(frozen=True, eq=False)
class LabelLookup:
    """The verdicts the store holds for a set of keys, aggregated by one rule."""

    labels: pd.Series  # float64 indexed by key text: 1 / 0, NaN where unknown (any reason)
    kinds: pd.Series  # indexed by key text: correct / incorrect / cannot_judge / disputed / missing
    relabeled: int = 0  # keys whose records disagree (across annotators or corrections)
    examples: tuple[str, ...] = field(default=())
    agreement: Agreement = field(default_factory=lambda: Agreement(None, 0, 0))
    rule: str = "majority"
    fitted_on: dict | None = None  # the store a store-wide model (dawid-skene) was fitted on
    # judge30: verdicts by role (prdist.verdict_roles). ``labels`` / ``kinds`` hold the judges'
    # verdict where no annotator gave one (``judged`` True there); gold stays apart.
    judged: pd.Series | None = None  # bool per key
    roles: RoleVerdicts | None = None

    @property
    def missing(self) -> int:
        return int(self.labels.isna().sum())

    def agreement_record(self) -> dict:
        """The manifest's "agreement": alpha over the looked-up keys, the rule and, for a
        store-wide model, what it was fitted on (:meth:`StoreRecords.scope`)."""
        extra = {} if self.fitted_on is None else {"fitted_on": self.fitted_on}
        return dict(self.agreement.to_dict(), rule=self.rule, **extra)


@dataclass(frozen=True, eq=False)
class StoreRecords:
    """Every record of a store as one read found it, and the outcomes aggregated from them."""

    records: pd.DataFrame  # key, verdict, annotator, time, role
    files: int
    fingerprint: str  # of the store's file names and sizes: its files are create-only
    outcomes: dict = field(default_factory=dict, repr=False)  # rule -> Outcomes, filled by store_outcomes

    @cached_property
    def by_role(self) -> dict[str, pd.DataFrame]:
        """The records of each role (:func:`prdist.verdict_roles.split_roles`): only the
        annotators' are voted; judges and gold stand apart."""
        return split_roles(self.records)

    def scope(self) -> dict:
        """What a store-wide model was fitted on (the annotators' records), as the run's manifest records it."""
        voted = self.by_role["annotator"]
        return {"records": int(len(voted)), "keys": int(voted["key"].nunique()),
                "annotators": int(voted["annotator"].nunique()), "files": self.files,
                "fingerprint": self.fingerprint}


# The last store read whole, with its outcomes by rule: one command fits a store-wide model once,
# however many lookups it makes. Keyed by the store's URL and fingerprint, so an import in between
# (a new file) is never answered from it.
_LAST_STORE: dict = {}


def _store_listing(store, storage_options=None):
    """(filesystem, [(path, size)] of the store's Parquet files sorted by path), or None when the
    store certainly does not exist. ``store``: its Location, or a URL and its options."""
    at = resolve(store, storage_options=storage_options)
    fs, path, store = at.fs, at.path, at.given
    # Only a store that is certainly absent holds no labels: an outage must never read as "no labels".
    if not exists(fs, path, where=store):
        return None
    with storage_errors(store, action="list"):
        found = fs.find(path, detail=True)
    return fs, sorted((name, int(info.get("size") or 0)) for name, info in found.items() if name.endswith(".parquet"))


def store_exists(store: str, *, storage_options=None) -> bool:
    """Whether a label store is at ``store`` (an existing directory may be empty)."""
    return _store_listing(store, storage_options) is not None


def read_store(store: str | None, keys=None, *, storage_options=None) -> pd.DataFrame:
    """The store's records (key, label, source, annotator, time, role), only those of ``keys`` if given.

    Only the rows whose key is asked for are materialised (a filtered Parquet scan). A store that
    does not exist yet holds no records. ``label`` is 1, 0 or -1 (cannot judge).
    """
    listing = None if store is None else _store_listing(store, storage_options)
    return _read_listing(None if store is None else given_url(store), listing, keys)


def _read_listing(store, listing, keys=None, columns=tuple(STORE_SCHEMA.names)) -> pd.DataFrame:
    if not listing or not listing[1]:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
    fs, files = listing
    import pyarrow.dataset as ds  # here: 13 ms, which a run without a label store does without

    try:
        with storage_errors(store, action="read"):
            dataset = ds.dataset([name for name, _ in files], schema=STORE_SCHEMA, format="parquet", filesystem=fs)
            where = None if keys is None else ds.field("key").isin(pa.array(pd.Index(keys).to_numpy(dtype=object), pa.string()))
            found = dataset.to_table(columns=list(columns), filter=where).to_pandas()
    except pa.ArrowException as exc:
        raise DataError(f"The label store {store!r} holds an unreadable file ({exc}). Move the damaged file aside.") from None
    found["annotator"] = found["annotator"].fillna("")
    found["role"] = found["role"].fillna("annotator")  # judge30: records from before roles are annotators'
    return found


def whole_store(store: str | None, *, storage_options=None) -> StoreRecords:
    """Every record of the store, read once per command (the last store read is kept)."""
    listing = None if store is None else _store_listing(store, storage_options)
    store = None if store is None else given_url(store)
    files = [] if listing is None else listing[1]
    fingerprint = hashlib.sha256("\n".join(f"{PurePosixPath(n).name}\t{size}" for n, size in files).encode()).hexdigest()[:16]
    if (cached := _LAST_STORE.get((store, fingerprint))) is not None:
        return cached
    # Without "source": nothing aggregated needs it, and it is a string per record.
    records = _read_listing(store, listing, columns=("key", "label", "annotator", "time", "role")).rename(columns={"label": "verdict"})
    _LAST_STORE.clear()
    entry = _LAST_STORE[store, fingerprint] = StoreRecords(records, files=len(files), fingerprint=fingerprint)
    return entry


def store_outcomes(store: StoreRecords, rule: str) -> Outcomes | None:
    """One outcome per key of the whole store by ``rule`` (None for an empty store), computed once
    per store read: a store-wide model is fitted on every record, whoever asks."""
    voted = store.by_role["annotator"]
    if not len(voted):
        return None
    if rule not in store.outcomes:
        store.outcomes[rule] = aggregate(voted, rule)
    return store.outcomes[rule]


def lookup_labels(store: str | None, keys, *, storage_options=None, rule: str = "majority") -> LabelLookup:
    """Look up the verdict of every key by ``rule``.

    ``majority`` and ``latest`` decide each key from its own records, so only the records of
    ``keys`` are read (a filtered scan). ``dawid-skene`` learns every annotator's accuracy from the
    whole store, so the store is read whole and the model fitted on all of it, once per command
    (:func:`whole_store`): a key gets the same verdict whichever keys a command asks about.
    """
    wanted = pd.Index(normalise_keys(keys).unique())
    fitted_on = None
    if rule == "dawid-skene":
        whole = whole_store(store, storage_options=storage_options)
        by_role = {role: frame[frame["key"].isin(wanted)] for role, frame in whole.by_role.items()}
        outcomes = store_outcomes(whole, rule)
        fitted_on = whole.scope() if outcomes is not None else None
    else:
        by_role = split_roles(read_store(store, wanted, storage_options=storage_options).rename(columns={"label": "verdict"}))
        outcomes = aggregate(by_role["annotator"], rule) if len(by_role["annotator"]) else None
    records = by_role["annotator"]  # judge30: only annotators' records are voted
    if outcomes is None or not len(records):
        lookup = LabelLookup(labels=pd.Series(np.nan, index=wanted, dtype=np.float64),
                             kinds=pd.Series("missing", index=wanted, dtype=object), rule=rule, fitted_on=fitted_on)
    else:
        found = outcomes.for_keys(wanted)
        disagree = records.groupby("key")["verdict"].nunique()
        disagree = disagree[disagree > 1]
        lookup = LabelLookup(labels=found["label"].astype(np.float64), kinds=found["kind"], relabeled=len(disagree),
                             examples=tuple(disagree.index[:5]), agreement=agreement(records), rule=rule, fitted_on=fitted_on)
    return with_judges(lookup, role_verdicts(by_role, wanted))  # judge30


def with_judges(lookup: LabelLookup, roles: RoleVerdicts) -> LabelLookup:
    """``lookup`` with the judges' verdict standing for every key that no annotator judged, and
    the gold verdicts kept beside (:mod:`prdist.verdict_roles`)."""
    judged = (lookup.kinds == "missing") & roles.judge.notna()
    labels = lookup.labels.where(~judged, roles.judge)
    kinds = lookup.kinds.where(~judged, np.where(roles.judge == 1, "correct", "incorrect"))
    return replace(lookup, labels=labels, kinds=kinds, judged=judged, roles=roles)


def export_annotation_task(items: pd.DataFrame, out_dir, *, storage_options=None) -> tuple[str, str]:
    """Write the items still needing a label as ``annotation_task.csv`` and ``.jsonl`` in ``out_dir``
    (a run directory's Location, or a URL and its options); return their URLs as written.

    ``items`` holds key, score, rank and whatever other columns the resource has, so the annotator
    sees each item; a ``label`` column is added empty for the annotator to fill in. The CSV is
    safe to open in a spreadsheet and imports back to the original keys (:mod:`.spreadsheet_csv`).
    """
    task = items.drop(columns=[c for c in ("label",) if c in items.columns]).copy()
    task["label"] = ""
    out_dir = resolve(out_dir, storage_options=storage_options)
    csv_at, jsonl_at = out_dir.child("annotation_task.csv"), out_dir.child("annotation_task.jsonl")
    for at, payload in (
        (csv_at, spreadsheet_csv.to_csv(task)),  # safe to open in a spreadsheet, reads back exactly
        (jsonl_at, task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")),
    ):
        publish(at, lambda fh, payload=payload: fh.write(payload), exclusive=False)
    return csv_at.given, jsonl_at.given


EXPORT_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet", ".json": "label-studio"}
# What annotators must not see unless asked: the system's confidence biases the verdict.
_SCORE_COLUMNS = ("rank", "score")
CHOICES = ("correct", "incorrect", "cannot judge")


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`write_annotation_file` wrote: items in the task, and how many of them no
    ``--join`` row matched (their joined columns are blank)."""

    items: int
    unjoined: int


def write_annotation_file(run_dir: str, out: str, *, storage_options=None, fmt: str | None = None,
                          show_score: bool = False, joins=()) -> ExportSummary:
    """Write a run's annotation task to ``out`` for annotators; return what it holds.

    ``fmt`` is csv, jsonl, parquet or label-studio (default: from the suffix of ``out``; .json
    means label-studio). Label Studio gets tasks ``{"data": {key, every item column}}`` and, beside
    ``out``, ``<out>.xml``: a labeling config with the choices correct / incorrect / cannot judge
    (skipping a task also means cannot judge). What the systems say about an item is left out
    unless ``show_score``, because it biases the verdict: score and rank of a ``prdist run``, and
    of a ``prdist compare`` each system's ``score_<system>``, the ``systems`` that output the item
    and its ``draws`` (which follow the scores under top-k and score-power sampling). A run with
    nothing to annotate writes an empty task with the same columns (and refuses ``joins``). ``joins``
    holds ``(table, origin)`` pairs (:func:`read_text_table`): each adds its other columns to the
    items whose values in the columns it shares with the task match, e.g. a sentence's text by its
    id (a table that matches no item is refused). Every column
    keeps its type (the run's JSON Lines task is read: an id "455" stays text).
    """
    fs, task_path = filesystem(join_url(run_dir, "annotation_task.csv"), storage_options)
    run_fs, manifest_path = filesystem(join_url(run_dir, "manifest.json"), storage_options)
    if not exists(run_fs, manifest_path, where=run_dir):
        raise InputError(f"{run_dir!r} is not a committed run directory (no manifest.json). "
                         "Name a directory printed by 'prdist run' or 'prdist compare'.")
    fmt = fmt or EXPORT_FORMATS.get(PurePosixPath(out).suffix.lower())
    if fmt not in EXPORT_FORMATS.values():
        raise InputError(f"The annotation file {out!r} must end in .csv, .jsonl, .parquet or .json (Label Studio), or give --format.")
    task = _run_task(run_dir, storage_options) if exists(fs, task_path, where=run_dir) else \
        pd.DataFrame(columns=["rank", "key", "score", "label"])
    if not show_score:
        task = task.drop(columns=[c for c in _biasing_columns(run_fs, manifest_path, run_dir) if c in task.columns])
    if joins and not len(task):
        raise InputError(f"The run {run_dir} has no item to annotate, so --join has nothing to join; leave --join out.")
    unjoined = np.zeros(len(task), bool)
    for table, origin in joins:
        task, unmatched = _join_on_shared_columns(task, table, origin, what="--join")
        unjoined |= unmatched
    task = task[[c for c in task.columns if c != "label"] + ["label"]]  # the column to fill comes last
    target = resolve(out, storage_options=storage_options)
    check_regular_file(target.fs, target.path, where=target, role="annotation file")  # replaced only if a file
    if fmt == "label-studio":
        items = task.drop(columns=["label"], errors="ignore").rename(columns=xml_text)
        tasks = [{"data": row} for row in json.loads(items.to_json(orient="records", force_ascii=False))]
        payload = json.dumps(tasks, ensure_ascii=False, indent=1).encode("utf-8")
        config = label_studio_config(list(items.columns)).encode("utf-8")
        publish(resolve(out + ".xml", storage_options=storage_options), lambda fh: fh.write(config), exclusive=False)
        publish(target, lambda fh: fh.write(payload), exclusive=False)
        return ExportSummary(items=len(task), unjoined=int(unjoined.sum()))

    def write(fh):
        if fmt == "csv":
            fh.write(spreadsheet_csv.to_csv(task))
        elif fmt == "jsonl":
            fh.write(task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8"))
        else:
            pq.write_table(pa.Table.from_pandas(task.astype({"label": "string"}), preserve_index=False), fh)

    publish(target, write, exclusive=False)  # whole or not at all
    return ExportSummary(items=len(task), unjoined=int(unjoined.sum()))


def _run_task(run_dir: str, storage_options) -> pd.DataFrame:
    """A run's annotation task with the types its items have: from annotation_task.jsonl (the CSV
    for its column names when the task is empty, or when the run has no JSON Lines copy)."""
    url = join_url(run_dir, "annotation_task.jsonl")
    fs, path = filesystem(url, storage_options)
    if exists(fs, path, where=run_dir):
        task = _jsonl_frame(url, storage_options)
        if len(task):
            return task.astype({"key": str, "label": object}).fillna({"label": ""})
    fs, path = filesystem(join_url(run_dir, "annotation_task.csv"), storage_options)
    with fs.open(path, "rb") as fh:
        return spreadsheet_csv.read_csv(fh, keep_default_na=False, na_values=[""], dtype={"key": str})


def newest_run(runs: str, *, storage_options=None) -> str:
    """``runs`` if it is a committed run directory; if it is a root of run directories (the --out
    of prdist run or compare), its newest committed run (by its manifest's modification time)."""
    fs, root = filesystem(runs, storage_options)
    if exists(fs, posixpath.join(root, "manifest.json"), where=runs):
        return runs
    manifests = fs.glob(posixpath.join(root, "*", "manifest.json")) if exists(fs, root, where=runs) else []
    if not manifests:
        raise InputError(f"{runs!r} is not a committed run directory (no manifest.json) nor a root of run "
                         "directories holding one. Name a directory printed by 'prdist run' or 'prdist compare', or their --out.")
    newest = max(manifests, key=lambda path: (modified_time(fs.info(path)), path))
    return join_url(runs, posixpath.basename(posixpath.dirname(newest)))


def read_text_table(url: str, *, columns=None, storage_options=None, option: str = "the column names") -> pd.DataFrame:
    """A CSV (``.csv``) or tab-separated file (any other name, e.g. ReVerb's ``sentences.txt``) as
    text columns; ``columns`` (given as ``option``) names them when the file has no header row: a
    first row of another number of fields is refused, and so is a later row of more fields, at its line."""
    fs, path = filesystem(url, storage_options)
    if check_regular_file(fs, path, where=url, role="file") is None:
        raise InputError(f"{url!r} does not exist. Check the path.")
    sep = "," if PurePosixPath(path).suffix.lower() == ".csv" else "\t"
    header = None if columns else "infer"
    with storage_errors(url, action="read"), fs.open(path, "rb") as fh, \
            gate(url, "give a CSV (.csv) or tab-separated file, and its column names when it has no header row"):
        frame = pd.read_csv(fh, sep=sep, header=header, dtype=str, keep_default_na=False,
                            quoting=csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL, index_col=False)
    if columns and frame.shape[1] != len(columns):
        raise refusal(url, None, f"its rows hold {frame.shape[1]} field(s) but {option} names {len(columns)} column(s)",
                      f"name one column per field with {option}, in the file's order")
    if columns:
        frame.columns = list(columns)
    return frame


def _join_on_shared_columns(task: pd.DataFrame, table: pd.DataFrame, origin: str, *, what: str,
                            exclude=()) -> tuple[pd.DataFrame, np.ndarray]:
    """``task`` with ``table``'s other columns added where the values of their shared columns match
    (compared as text; each combination must occur once in ``table``, up to identical rows), and
    which of its items no row matches. A table that matches no item of a task is refused."""
    shared = [c for c in table.columns if c in task.columns and c not in exclude]
    if not shared:
        raise InputError(f"{what} {origin}: its columns ({', '.join(map(str, table.columns))}) share none with the task's "
                         f"({', '.join(map(str, task.columns))}); name them so that the matching ones agree.")
    table = table.drop_duplicates()
    clash = table.duplicated(subset=shared, keep=False)
    if clash.any():
        first = table.loc[clash, shared].iloc[0].tolist()
        raise refusal(origin, None, f"{int(clash.sum())} rows give different values for the same {', '.join(shared)} "
                      f"(first: {first})", f"keep one row per {', '.join(shared)}")
    added = [c for c in table.columns if c not in shared]
    keys = task[shared].astype(str)
    joined = keys.merge(table, on=shared, how="left", indicator="_matched")
    unmatched = (joined["_matched"] == "left_only").to_numpy()
    if len(task) and unmatched.all():
        raise refusal(f"{what} {origin}", None, f"no row matches any of the task's {len(task):,} item(s) on "
                      f"{', '.join(shared)} (compared as text)",
                      f"check that {what}-columns names the file's columns in their order, and that it holds these items")
    return task.assign(**{c: joined[c].to_numpy() for c in added}), unmatched


@dataclass(frozen=True)
class FillSummary:
    """What :func:`fill_task` did: items in the task, labels taken from the file, set to ``rest``."""

    items: int
    from_file: int
    rest: int


def fill_task(task_url: str, out: str, *, source=None, label: str = "label", rest: str | None = None,
              storage_options=None) -> FillSummary:
    """Fill the empty ``label`` cells of an annotation task (CSV or JSON Lines) and write it to ``out``.

    ``source`` is a ``(table, origin)`` pair (:func:`read_text_table`): an item takes the ``label``
    value of the row whose values in the columns it shares with the task match its own (e.g. the
    verdicts a team already has). Then every label still empty is set to ``rest`` (e.g. "cannot
    judge"). Labels already in the task are kept. ``out`` is what ``prdist labels import`` reads.
    """
    for url, role in ((task_url, "annotation task"), (out, "filled task (--out)")):
        if not url.lower().endswith((".csv", ".jsonl")):
            raise InputError(f"The {role} {url!r} must be a .csv or .jsonl file (for Label Studio, export the task as "
                             "CSV with 'prdist labels export --out task.csv').")
    _check_fill_words(source, label, rest)
    task = _read_task(task_url, storage_options)
    empty = task["label"].astype(str).str.strip() == ""
    found = 0
    if source:
        table, origin = source
        truth = _join_on_shared_columns(task.drop(columns="label"), table.rename(columns={label: "_verdict"}), origin,
                                        what="--from", exclude=("score", "rank"))[0]["_verdict"]
        take = empty & truth.notna().to_numpy()
        task.loc[take, "label"] = truth[take]
        found, empty = int(take.sum()), empty & ~take
    if rest is not None:
        task.loc[empty, "label"] = rest
    target = resolve(out, storage_options=storage_options)
    check_regular_file(target.fs, target.path, where=target, role="filled task")
    payload = spreadsheet_csv.to_csv(task) if out.lower().endswith(".csv") else \
        task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    publish(target, lambda fh: fh.write(payload), exclusive=False)
    return FillSummary(items=len(task), from_file=found, rest=int(empty.sum()) if rest is not None else 0)


def _check_fill_words(source, label: str, rest: str | None) -> None:
    """Refuse, before anything is read or written, a verdict that ``prdist labels import`` would refuse."""
    words = [w for w in (rest,) if w is not None]
    for table, origin in [source] if source else []:
        if label not in table.columns:
            raise InputError(f"--from {origin}: no column {label!r} holds the verdicts (columns: "
                             f"{', '.join(table.columns)}); name it with --label, or name the columns with --from-columns.")
        words += [w for w in table[label].unique() if w.strip()]
    VerdictWords().parse(np.array(words, dtype=object), origin="--from/--rest")


def _read_task(url: str, storage_options) -> pd.DataFrame:
    """An annotation task as written (CSV: every cell text, the spreadsheet escape undone; JSON Lines),
    with a ``label`` column ("" where empty)."""
    if url.lower().endswith(".csv"):
        task = read_text_table(url, storage_options=storage_options)
        task = task.apply(lambda column: column.map(spreadsheet_csv.restore)).rename(columns=spreadsheet_csv.restore)
    else:
        fs, path = filesystem(url, storage_options)
        if check_regular_file(fs, path, where=url, role="annotation task") is None:
            raise InputError(f"{url!r} does not exist. Check the path.")
        task = _jsonl_frame(url, storage_options)
        if task.empty and not len(task.columns):  # nothing to annotate: JSON Lines holds no column names
            task = pd.DataFrame(columns=["key", "label"])
    if "key" not in task.columns:
        raise InputError(f"{url!r} has no key column. Give a task written by 'prdist labels export' or 'prdist run'.")
    task["label"] = task["label"].astype(object).where(task["label"].notna(), "") if "label" in task.columns else ""
    return task


def _jsonl_frame(url: str, storage_options) -> pd.DataFrame:
    """A JSON Lines file of records as a frame, each value of the type JSON gives it."""
    fs, path = filesystem(url, storage_options)
    with storage_errors(url, action="read"), fs.open(path, "rb") as fh:
        return pd.DataFrame.from_records([record for _, record in json_lines(fh.read().decode("utf-8"), url)])


def _biasing_columns(fs, manifest_path: str, run_dir: str) -> list[str]:
    """The task columns that tell an annotator what the systems think of an item (see
    :func:`write_annotation_file`): a run's score and rank; a comparison's scores, systems and draws."""
    with storage_errors(run_dir, action="read"), fs.open(manifest_path, "rb") as fh:
        try:
            manifest = json.load(fh)
        except ValueError:
            raise DataError(f"The manifest.json of {run_dir!r} is not JSON. Run the command that made it again.") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != "compare":
        return list(_SCORE_COLUMNS)
    names = [s.get("name") for s in manifest.get("systems") or [] if isinstance(s, dict)]
    return [*_SCORE_COLUMNS, "systems", "draws", *(f"score_{name}" for name in names)]


#: What XML 1.0 cannot hold, even escaped: C0 controls but tab, line feed and carriage return;
#: lone surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text) -> str:
    """``text`` with every character XML cannot hold replaced by U+FFFD (the replacement character).

    Label Studio's config names the item columns, so a column name from outside must make
    well-formed XML; the tasks' keys are renamed the same way so that ``$column`` still finds them.

    >>> xml_text("note\x01s")
    'note\ufffds'
    """
    return _NOT_XML.sub("\ufffd", str(text))


def label_studio_config(columns) -> str:
    """A Label Studio labeling config showing every item column and asking for one verdict.

    Examples
    --------
    >>> print(label_studio_config(["key", "text"]))  # doctest: +ELLIPSIS
    <View>
      <Header value="key"/>
      <Text name="field_0" value="$key"/>
    ...
      <Choices name="verdict" toName="field_0" choice="single" showInline="true" required="true">
        <Choice value="correct"/>
    ...
    """
    from xml.sax.saxutils import quoteattr

    lines = ["<View>"]
    for i, column in enumerate(columns):
        column = xml_text(column)
        lines += [f"  <Header value={quoteattr(column)}/>", f"  <Text name=\"field_{i}\" value={quoteattr('$' + column)}/>"]
    lines.append('  <Header value="Is this item correct? (Skip the task if nobody could judge it.)"/>')
    lines.append('  <Choices name="verdict" toName="field_0" choice="single" showInline="true" required="true">')
    lines += [f"    <Choice value={quoteattr(c)}/>" for c in CHOICES]
    lines += ["  </Choices>", "</View>"]
    return "\n".join(lines)


def store_status(store: str, *, resource: str | None = None, rule: str = "majority", storage_options=None,
                 key: str = "key", score: str = "score") -> dict:
    """What the store holds, as ``labels status --json`` prints it.

    Keys: store, rule, items, records, verdicts (outcomes by kind), annotators (name -> records),
    annotator_verdicts (name -> records by verdict: correct, incorrect, cannot_judge),
    disagreeing_keys (keys whose records disagree: across annotators or one annotator's
    corrections), agreement, disputed_keys (a list) and, for a store-wide model, fitted_on. With
    ``resource``, only its keys are counted; their verdicts are still those of the whole store
    (:func:`lookup_labels`).
    """
    whole = whole_store(store, storage_options=storage_options)
    outcomes = store_outcomes(whole, rule)
    records = whole.records
    table = outcomes.table if outcomes is not None else pd.DataFrame({"kind": pd.Series(dtype=object)})
    if resource is not None and len(records):
        _, outside = keys_missing_from(resource, records["key"].unique(), storage_options=storage_options, key=key, score=score)
        records = records[~records["key"].isin(outside)]
        table = table[~table.index.isin(outside)]
    by_role = split_roles(records)  # judge30: the verdicts below are the annotators'; judges and gold apart
    roles = role_status(by_role)
    records = by_role["annotator"]
    kinds = {k: 0 for k in ("correct", "incorrect", "cannot_judge", "disputed")}
    kinds.update(table["kind"].value_counts().to_dict())
    named = records["verdict"].map({1: "correct", 0: "incorrect", CANNOT_JUDGE: "cannot_judge"})
    by_verdict = pd.crosstab(records["annotator"], named).reindex(columns=["correct", "incorrect", "cannot_judge"], fill_value=0)
    status = {
        "store": store,
        "rule": rule,
        "items": int(records["key"].nunique()),
        "records": int(len(records)),
        "verdicts": {k: int(v) for k, v in kinds.items()},
        "annotators": {str(a): int(n) for a, n in records["annotator"].value_counts().sort_index().items()},
        "annotator_verdicts": {str(a): {k: int(v) for k, v in row.items()} for a, row in by_verdict.sort_index().iterrows()},
        "disagreeing_keys": int((records.groupby("key")["verdict"].nunique() > 1).sum()),
        "agreement": agreement(records).to_dict() if len(records) else Agreement(None, 0, 0).to_dict(),
        "disputed_keys": [str(k) for k in table.index[table["kind"].to_numpy() == "disputed"]],
        **roles,
    }
    if rule == "dawid-skene" and outcomes is not None:
        status["fitted_on"] = whole.scope()
    return status


def role_status(by_role: dict[str, pd.DataFrame]) -> dict:
    """Records and items per role, and the judges' quality against gold on the keys both judged."""
    counts = {role: {"records": int(len(frame)), "items": int(frame["key"].nunique())} for role, frame in by_role.items()}
    keys = pd.Index(by_role["gold"]["key"].unique())
    if not len(keys) or not len(by_role["judge"]):
        return {"roles": counts, "judge_quality": None}
    from ..known_quality import verdict_quality

    verdicts = role_verdicts(by_role, keys)
    return {"roles": counts, "judge_quality": verdict_quality(verdicts.judge.to_numpy(), verdicts.gold.to_numpy()).to_dict()}
