"""Annotation tasks: the items a run still needs verdicts for, as files annotators and their tools read.

A run writes its task (:func:`export_annotation_task`: ``annotation_task.csv`` and ``.jsonl``);
``prdist labels export`` turns it into a file for annotators (:func:`write_annotation_file`: CSV,
JSON Lines, Parquet or a Label Studio import with its labeling config), joined with whatever
columns show them the item (:func:`read_text_table`), and without what biases the verdict;
``prdist labels fill`` fills its labels from a table of verdicts (:func:`fill_task`). What
annotators send back is read by :mod:`prdist.dataflow.labels.importer`.
"""

from __future__ import annotations

import csv
import json
import posixpath
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prdist.dataflow.io import spreadsheet_csv
from prdist.dataflow.io.publishing import publish
from prdist.dataflow.labels.task_files import export_annotation_task
from prdist.dataflow.io.storage import filesystem, join_url, modified_time, resolve
from prdist.dataflow.io.storage_errors import check_regular_file, exists, storage_errors
from prdist.errors import DataError, InputError
from prdist.input_gate import gate, json_lines, refusal
from prdist.verdicts.aggregation import VerdictWords

__all__ = ["CHOICES", "EXPORT_FORMATS", "ExportSummary", "FillSummary", "export_annotation_task", "fill_task",
           "label_studio_config", "newest_run", "read_text_table", "write_annotation_file", "xml_text"]


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

