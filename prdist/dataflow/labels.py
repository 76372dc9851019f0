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

import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DataError, InputError
from ..verdicts import CANNOT_JUDGE, Agreement, Outcomes, VerdictWords, aggregate, agreement
from . import spreadsheet_csv
from .label_formats import raw_records
from .storage import check_regular_file, exists, filesystem, join_url, publish, resolve, storage_errors, write_bytes_exclusive

__all__ = [
    "LabelLookup",
    "export_annotation_task",
    "import_labels",
    "keys_missing_from",
    "lookup_labels",
    "normalise_keys",
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


def read_label_file(url: str, *, fmt: str = "auto", words: VerdictWords = VerdictWords(), storage_options=None) -> pd.DataFrame:
    """Read and validate one label file: plain CSV / JSONL / Parquet or a tool's export.

    ``fmt`` is one of :data:`prdist.dataflow.label_formats.FORMATS`; "auto" detects the tool from
    the content (see :mod:`prdist.dataflow.label_formats`).

    Returns
    -------
    DataFrame with one row per verdict: key (str), label (int8: 1, 0, -1 = cannot judge),
    annotator (str or None) and time (UTC, NaT when the file does not say). Rows with an empty
    verdict (a task not finished yet) are skipped; ``attrs["skipped_blank"]`` counts them and
    ``attrs["format"]`` names the format read.
    """
    fs, path = filesystem(url, storage_options)
    if check_regular_file(fs, path, where=url, role="label file") is None:
        raise InputError(f"Label file {url!r} does not exist. Check the path.")
    with storage_errors(url, action="read"), fs.open(path, "rb") as fh:
        data = fh.read()
    found, raw = raw_records(data, origin=url, fmt=fmt)
    if found == "csv":  # undo the apostrophe a task's CSV puts before =, +, -, @ (spreadsheet_csv)
        raw["key"] = raw["key"].map(spreadsheet_csv.restore)
    if raw["key"].isna().any():
        raise DataError(f"Label file {url!r} has {int(raw['key'].isna().sum())} row(s) without a key.")
    blank = raw["value"].isna() | (raw["value"].astype(str).str.strip() == "")
    raw = raw.loc[~blank.to_numpy()].reset_index(drop=True)
    labels = words.parse(raw["value"].to_numpy(dtype=object), origin=url, rows=raw["row"].to_numpy())
    try:
        time = pd.to_datetime(raw["time"], utc=True, format="mixed").astype("datetime64[us, UTC]")
    except (ValueError, TypeError) as exc:
        raise DataError(f"Label file {url!r} has a time that is not a date: {exc}. Fix or drop the time column.") from None
    annotator = raw["annotator"].astype(object).where(raw["annotator"].notna(), None)
    out = pd.DataFrame({"key": normalise_keys(raw["key"].to_numpy()).to_numpy(), "label": labels,
                        "annotator": annotator.map(lambda a: None if a is None else str(a)).to_numpy(dtype=object),
                        "time": time.array})
    out.attrs.update(skipped_blank=int(blank.sum()), format=found)
    return out


@dataclass(frozen=True)
class ImportSummary:
    """What one ``import_labels`` call appended."""

    written: str
    labels: int  # verdict records
    positives: int
    cannot_judge: int
    keys: int
    annotators: int
    files: tuple[str, ...]
    formats: tuple[str, ...] = ()


def import_labels(store: str, files, *, storage_options=None, source: str | None = None, annotator: str | None = None,
                  resource: str | None = None, key: str = "key", score: str = "score", fmt: str = "auto",
                  words: VerdictWords = VerdictWords()) -> ImportSummary:
    """Append the verdicts of ``files`` to the store at ``store`` in one create-only write.

    Every file is read and validated before anything is written, so a bad file leaves the store
    untouched. Records that cannot be told apart (one key, one annotator, one time) but disagree
    are refused. With ``resource`` (a Parquet resource URL with columns ``key`` and ``score``),
    labels for keys the resource does not hold are refused too (:func:`keys_missing_from`: one
    pass over its key column). Without it any key is accepted: one store serves many resources,
    and a run uses only its own keys' labels.
    """
    files = tuple(files)
    if not files:
        raise InputError("No label files given. Name at least one label file or tool export.")
    resolve(store, storage_options=storage_options)  # a bad store URL is refused before any file is read
    now = pd.Timestamp(datetime.now(timezone.utc))
    frames, formats = [], []
    for url in files:
        frame = read_label_file(url, fmt=fmt, words=words, storage_options=storage_options)
        formats.append(frame.attrs["format"])
        frame["source"] = source or PurePosixPath(url).name
        frame["annotator"] = frame["annotator"].where(frame["annotator"].notna(), annotator or "")
        frame["time"] = frame["time"].fillna(now)
        frames.append(frame)
    batch = pd.concat(frames, ignore_index=True)
    clash = batch.groupby(["key", "annotator", "time"])["label"].nunique()
    clash = clash[clash > 1]
    if len(clash):
        raise DataError(
            f"The import gives {len(clash)} key(s) different verdicts from one annotator at one time, e.g. "
            f"{clash.index[0][0]!r}. Resolve the disagreement in the files (or name the annotators) and import again."
        )
    batch = batch.drop_duplicates(["key", "annotator", "time"], keep="last")
    if resource is not None:
        url, missing = keys_missing_from(resource, batch["key"], storage_options=storage_options, key=key, score=score)
        if len(missing):
            raise DataError(
                f"The import labels {len(missing)} key(s) that {url} does not hold, e.g. {missing[0]!r}. "
                "Check that the files label this resource (and its --key column), or import without --resource."
            )
    table = pa.Table.from_pandas(batch[["key", "label", "source", "annotator", "time"]], schema=STORE_SCHEMA, preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    target = join_url(store, f"labels-{stamp}-{uuid.uuid4().hex[:12]}.parquet")
    write_bytes_exclusive(target, sink.getvalue().to_pybytes(), storage_options=storage_options)
    return ImportSummary(written=target, labels=len(batch), positives=int((batch["label"] == 1).sum()),
                         cannot_judge=int((batch["label"] == CANNOT_JUDGE).sum()), keys=int(batch["key"].nunique()),
                         annotators=int(batch["annotator"].nunique()), files=files, formats=tuple(formats))


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

    records: pd.DataFrame  # key, verdict, annotator, time
    files: int
    fingerprint: str  # of the store's file names and sizes: its files are create-only
    outcomes: dict = field(default_factory=dict, repr=False)  # rule -> Outcomes, filled by store_outcomes

    def scope(self) -> dict:
        """What a store-wide model was fitted on, as the run's manifest records it."""
        return {"records": int(len(self.records)), "keys": int(self.records["key"].nunique()),
                "annotators": int(self.records["annotator"].nunique()), "files": self.files,
                "fingerprint": self.fingerprint}


# The last store read whole, with its outcomes by rule: one command fits a store-wide model once,
# however many lookups it makes. Keyed by the store's URL and fingerprint, so an import in between
# (a new file) is never answered from it.
_LAST_STORE: dict = {}


def _store_listing(store: str, storage_options=None):
    """(filesystem, [(path, size)] of the store's Parquet files sorted by path), or None when the
    store certainly does not exist."""
    fs, path = filesystem(store, storage_options)
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
    """The store's records (key, label, source, annotator, time), only those of ``keys`` if given.

    Only the rows whose key is asked for are materialised (a filtered Parquet scan). A store that
    does not exist yet holds no records. ``label`` is 1, 0 or -1 (cannot judge).
    """
    listing = None if store is None else _store_listing(store, storage_options)
    return _read_listing(store, listing, keys)


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
    return found


def whole_store(store: str | None, *, storage_options=None) -> StoreRecords:
    """Every record of the store, read once per command (the last store read is kept)."""
    listing = None if store is None else _store_listing(store, storage_options)
    files = [] if listing is None else listing[1]
    fingerprint = hashlib.sha256("\n".join(f"{PurePosixPath(n).name}\t{size}" for n, size in files).encode()).hexdigest()[:16]
    if (cached := _LAST_STORE.get((store, fingerprint))) is not None:
        return cached
    # Without "source": nothing aggregated needs it, and it is a string per record.
    records = _read_listing(store, listing, columns=("key", "label", "annotator", "time")).rename(columns={"label": "verdict"})
    _LAST_STORE.clear()
    entry = _LAST_STORE[store, fingerprint] = StoreRecords(records, files=len(files), fingerprint=fingerprint)
    return entry


def store_outcomes(store: StoreRecords, rule: str) -> Outcomes | None:
    """One outcome per key of the whole store by ``rule`` (None for an empty store), computed once
    per store read: a store-wide model is fitted on every record, whoever asks."""
    if not len(store.records):
        return None
    if rule not in store.outcomes:
        store.outcomes[rule] = aggregate(store.records, rule)
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
        records = whole.records[whole.records["key"].isin(wanted)]
        outcomes = store_outcomes(whole, rule)
        fitted_on = whole.scope() if outcomes is not None else None
    else:
        records = read_store(store, wanted, storage_options=storage_options).rename(columns={"label": "verdict"})
        outcomes = aggregate(records, rule) if len(records) else None
    if outcomes is None or not len(records):
        return LabelLookup(labels=pd.Series(np.nan, index=wanted, dtype=np.float64),
                           kinds=pd.Series("missing", index=wanted, dtype=object), rule=rule, fitted_on=fitted_on)
    found = outcomes.for_keys(wanted)
    disagree = records.groupby("key")["verdict"].nunique()
    disagree = disagree[disagree > 1]
    return LabelLookup(labels=found["label"].astype(np.float64), kinds=found["kind"], relabeled=len(disagree),
                       examples=tuple(disagree.index[:5]), agreement=agreement(records), rule=rule, fitted_on=fitted_on)


def export_annotation_task(items: pd.DataFrame, out_dir: str, *, storage_options=None) -> tuple[str, str]:
    """Write the items still needing a label as ``annotation_task.csv`` and ``.jsonl``.

    ``items`` holds key, score, rank and whatever other columns the resource has, so the annotator
    sees each item; a ``label`` column is added empty for the annotator to fill in. The CSV is
    safe to open in a spreadsheet and imports back to the original keys (:mod:`.spreadsheet_csv`).
    """
    task = items.drop(columns=[c for c in ("label",) if c in items.columns]).copy()
    task["label"] = ""
    csv_url, jsonl_url = join_url(out_dir, "annotation_task.csv"), join_url(out_dir, "annotation_task.jsonl")
    for url, payload in (
        (csv_url, spreadsheet_csv.to_csv(task)),  # safe to open in a spreadsheet, reads back exactly
        (jsonl_url, task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")),
    ):
        publish(resolve(url, storage_options=storage_options), lambda fh, payload=payload: fh.write(payload), exclusive=False)
    return csv_url, jsonl_url


EXPORT_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet", ".json": "label-studio"}
# What annotators must not see unless asked: the system's confidence biases the verdict.
_SCORE_COLUMNS = ("rank", "score")
CHOICES = ("correct", "incorrect", "cannot judge")


def write_annotation_file(run_dir: str, out: str, *, storage_options=None, fmt: str | None = None,
                          show_score: bool = False) -> int:
    """Write a run's annotation task to ``out`` for annotators; return its item count.

    ``fmt`` is csv, jsonl, parquet or label-studio (default: from the suffix of ``out``; .json
    means label-studio). Label Studio gets tasks ``{"data": {key, every item column}}`` and, beside
    ``out``, ``<out>.xml``: a labeling config with the choices correct / incorrect / cannot judge
    (skipping a task also means cannot judge). What the systems say about an item is left out
    unless ``show_score``, because it biases the verdict: score and rank of a ``prdist run``, and
    of a ``prdist compare`` each system's ``score_<system>``, the ``systems`` that output the item
    and its ``draws`` (which follow the scores under top-k and score-power sampling). A run with
    nothing to annotate writes an empty task with the same columns.
    """
    fs, task_path = filesystem(join_url(run_dir, "annotation_task.csv"), storage_options)
    run_fs, manifest_path = filesystem(join_url(run_dir, "manifest.json"), storage_options)
    if not exists(run_fs, manifest_path, where=run_dir):
        raise InputError(f"{run_dir!r} is not a committed run directory (no manifest.json). "
                         "Name a directory printed by 'prdist run' or 'prdist compare'.")
    fmt = fmt or EXPORT_FORMATS.get(PurePosixPath(out).suffix.lower())
    if fmt not in EXPORT_FORMATS.values():
        raise InputError(f"The annotation file {out!r} must end in .csv, .jsonl, .parquet or .json (Label Studio), or give --format.")
    if exists(fs, task_path, where=run_dir):
        with fs.open(task_path, "rb") as fh:
            task = spreadsheet_csv.read_csv(fh, keep_default_na=False, na_values=[""], dtype={"key": str})
    else:
        task = pd.DataFrame(columns=["rank", "key", "score", "label"])
    if not show_score:
        task = task.drop(columns=[c for c in _biasing_columns(run_fs, manifest_path, run_dir) if c in task.columns])
    target = resolve(out, storage_options=storage_options)
    check_regular_file(target.fs, target.path, where=target, role="annotation file")  # replaced only if a file
    if fmt == "label-studio":
        items = task.drop(columns=["label"], errors="ignore").rename(columns=xml_text)
        tasks = [{"data": row} for row in json.loads(items.to_json(orient="records", force_ascii=False))]
        payload = json.dumps(tasks, ensure_ascii=False, indent=1).encode("utf-8")
        config = label_studio_config(list(items.columns)).encode("utf-8")
        publish(resolve(out + ".xml", storage_options=storage_options), lambda fh: fh.write(config), exclusive=False)
        publish(target, lambda fh: fh.write(payload), exclusive=False)
        return len(task)

    def write(fh):
        if fmt == "csv":
            fh.write(spreadsheet_csv.to_csv(task))
        elif fmt == "jsonl":
            fh.write(task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8"))
        else:
            pq.write_table(pa.Table.from_pandas(task.astype({"label": "string"}), preserve_index=False), fh)

    publish(target, write, exclusive=False)  # whole or not at all
    return len(task)


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
    }
    if rule == "dawid-skene" and outcomes is not None:
        status["fitted_on"] = whole.scope()
    return status
