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

import json
import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._validation import check_choice
from ..errors import DataError, InputError
from ..label_choices import ROLES
from ..verdict_roles import RoleVerdicts, role_verdicts, split_roles
from ..verdicts import CANNOT_JUDGE, Agreement, VerdictWords, aggregate, agreement
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
                  words: VerdictWords = VerdictWords(), role: str = "annotator") -> ImportSummary:
    """Append the verdicts of ``files`` to the store at ``store`` in one create-only write.

    Every record gets ``role`` (annotator, judge or gold: :mod:`prdist.verdict_roles`).

    Every file is read and validated before anything is written, so a bad file leaves the store
    untouched. Records that cannot be told apart (one key, one annotator, one time) but disagree
    are refused. With ``resource`` (a Parquet resource URL with columns ``key`` and ``score``),
    labels for keys the resource does not hold are refused too (:func:`keys_missing_from`: one
    pass over its key column). Without it any key is accepted: one store serves many resources,
    and a run uses only its own keys' labels.
    """
    check_choice(role, name="role", owner="import_labels", choices=ROLES)
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
    batch = batch.drop_duplicates(["key", "annotator", "time"], keep="last")
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
    # judge30: verdicts by role (prdist.verdict_roles). ``labels`` / ``kinds`` hold the judges'
    # verdict where no annotator gave one (``judged`` True there); gold stays apart.
    judged: pd.Series | None = None  # bool per key
    roles: RoleVerdicts | None = None

    @property
    def missing(self) -> int:
        return int(self.labels.isna().sum())


def read_store(store: str | None, keys=None, *, storage_options=None) -> pd.DataFrame:
    """The store's records (key, label, source, annotator, time, role), only those of ``keys`` if given.

    Only the rows whose key is asked for are materialised (a filtered Parquet scan). A store that
    does not exist yet holds no records. ``label`` is 1, 0 or -1 (cannot judge).
    """
    empty = pd.DataFrame({name: pd.Series(dtype=object) for name in STORE_SCHEMA.names})
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
    import pyarrow.dataset as ds  # here: 13 ms, which a run without a label store does without

    try:
        with storage_errors(store, action="read"):
            dataset = ds.dataset(files, schema=STORE_SCHEMA, format="parquet", filesystem=fs)
            where = None if keys is None else ds.field("key").isin(pa.array(pd.Index(keys).to_numpy(dtype=object), pa.string()))
            found = dataset.to_table(filter=where).to_pandas()
    except pa.ArrowException as exc:
        raise DataError(f"The label store {store!r} holds an unreadable file ({exc}). Move the damaged file aside.") from None
    found["annotator"] = found["annotator"].fillna("")
    found["role"] = found["role"].fillna("annotator")  # judge30: records from before roles are annotators'
    return found


def lookup_labels(store: str | None, keys, *, storage_options=None, rule: str = "majority") -> LabelLookup:
    """Look up the verdict of every key by ``rule`` without loading the store whole."""
    wanted = pd.Index(normalise_keys(keys).unique())
    records = read_store(store, wanted, storage_options=storage_options)
    records = records.rename(columns={"label": "verdict"})
    by_role = split_roles(records)  # judge30: only annotators' records are voted
    records = by_role["annotator"]
    outcomes = aggregate(records, rule).for_keys(wanted) if len(records) else None
    if outcomes is None:
        lookup = LabelLookup(labels=pd.Series(np.nan, index=wanted, dtype=np.float64),
                             kinds=pd.Series("missing", index=wanted, dtype=object), rule=rule)
    else:
        disagree = records.groupby("key")["verdict"].nunique()
        disagree = disagree[disagree > 1]
        lookup = LabelLookup(labels=outcomes["label"].astype(np.float64), kinds=outcomes["kind"], relabeled=len(disagree),
                             examples=tuple(disagree.index[:5]), agreement=agreement(records), rule=rule)
    return with_judges(lookup, role_verdicts(by_role, wanted))  # judge30


def with_judges(lookup: LabelLookup, roles: RoleVerdicts) -> LabelLookup:
    """``lookup`` with the judges' verdict standing for every key that no annotator judged, and
    the gold verdicts kept beside (:mod:`prdist.verdict_roles`)."""
    judged = (lookup.kinds == "missing") & roles.judge.notna()
    labels = lookup.labels.where(~judged, roles.judge)
    kinds = lookup.kinds.where(~judged, np.where(roles.judge == 1, "correct", "incorrect"))
    return replace(lookup, labels=labels, kinds=kinds, judged=judged, roles=roles)


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
    """What the store holds: items, verdicts by kind, annotators with their record counts,
    agreement and the disputed keys (only the keys of ``resource`` when given)."""
    records = read_store(store, storage_options=storage_options).rename(columns={"label": "verdict"})
    if resource is not None and len(records):
        _, outside = keys_missing_from(resource, records["key"].unique(), storage_options=storage_options, key=key, score=score)
        records = records[~records["key"].isin(outside)]
    by_role = split_roles(records)  # judge30: the verdicts below are the annotators'; judges and gold apart
    roles = role_status(by_role)
    records = by_role["annotator"]
    kinds = {k: 0 for k in ("correct", "incorrect", "cannot_judge", "disputed")}
    disputed: list = []
    if len(records):
        outcomes = aggregate(records, rule)
        kinds.update(outcomes.table["kind"].value_counts().to_dict())
        disputed = outcomes.disputed()
    return {
        "store": store,
        "rule": rule,
        "items": int(records["key"].nunique()),
        "records": int(len(records)),
        "verdicts": {k: int(v) for k, v in kinds.items()},
        "annotators": {str(a): int(n) for a, n in records["annotator"].value_counts().sort_index().items()},
        "agreement": agreement(records).to_dict() if len(records) else {"krippendorff_alpha": None, "annotators": 0, "pairable_keys": 0},
        "disputed_keys": [str(k) for k in disputed],
        **roles,
    }


def role_status(by_role: dict[str, pd.DataFrame]) -> dict:
    """Records and items per role, and the judges' quality against gold on the keys both judged."""
    counts = {role: {"records": int(len(frame)), "items": int(frame["key"].nunique())} for role, frame in by_role.items()}
    keys = pd.Index(by_role["gold"]["key"].unique())
    if not len(keys) or not len(by_role["judge"]):
        return {"roles": counts, "judge_quality": None}
    from ..known_quality import verdict_quality

    verdicts = role_verdicts(by_role, keys)
    return {"roles": counts, "judge_quality": verdict_quality(verdicts.judge.to_numpy(), verdicts.gold.to_numpy()).to_dict()}
