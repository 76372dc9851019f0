"""Where an output may go: never on an input, a resource, a label store or a committed run.

:func:`check_output_place` is the one guard every writer passes before anything is written.
"""

from __future__ import annotations

import posixpath
import re

from prdist.errors import InputError
from prdist.redaction import redact_url
from prdist.dataflow.io.storage import Location, resolve
from prdist.dataflow.io.storage_errors import storage_errors

__all__ = ["LABEL_FILE", "OutputConflict", "check_output_place"]

#: Label-store files are named so (prdist.dataflow.labels.importer.import_labels); any other Parquet file
#: in a directory makes it a dataset: a resource, or a run's artifacts.
LABEL_FILE = re.compile(r"labels-[^/]*\.parquet")


def _place_kind(fs, path: str, where, *, toward: str = "") -> tuple[str, str] | None:
    """What the directory ``path`` is, if anything an output must not land in: (kind, evidence).

    "committed run directory" (it holds manifest.json); "label store" (label files only) or
    "Parquet dataset" (a resource: other Parquet files), each only when its files are Parquet
    files (and hidden or ``_``-prefixed metadata) alone, so that a working directory holding a
    Parquet file beside others is neither. ``toward`` (the entry below ``path`` that the output
    is or lies in; empty for the output itself) does not count, and a directory above the output
    is a Parquet dataset only when prdist wrote it (its ``_prdist`` marker): a loose Parquet file
    beside a new output is not a resource. None for anything else, or no directory.
    """
    with storage_errors(where, action="open"):
        try:
            # Names first: a directory without a Parquet file or a manifest is none of these
            # places, whatever its entries are, and listing names costs no stat per entry on a
            # local disk (a directory of 800 entries above the output: 5 ms with them).
            names = [posixpath.basename(name.rstrip("/")) for name in fs.ls(path, detail=False)]
            if not any(name == "manifest.json" or name.endswith(".parquet") for name in names):
                return None
            entries = fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return None
    files = [posixpath.basename(e["name"].rstrip("/")) for e in entries if e.get("type") != "directory"]
    if [e["name"].rstrip("/") for e in entries] == [path] and files:  # a file lists as itself: no directory
        return None
    if "manifest.json" in files:
        return "committed run directory", "it holds manifest.json"
    files = [name for name in files if name != toward and not name.startswith((".", "_"))]
    parquet = sorted(name for name in files if name.endswith(".parquet"))
    if not parquet or len(parquet) < len(files):
        return None
    others = [name for name in parquet if not LABEL_FILE.fullmatch(name)]
    if not others:
        return "label store", f"it holds {parquet[0]}"
    marked = any(posixpath.basename(e["name"]).startswith("_prdist") for e in entries)
    return ("Parquet dataset", f"it holds {others[0]}") if marked or not toward else None


def _check_store_holds_labels_only(store: Location) -> None:
    with storage_errors(store.url, action="open"):
        try:
            found = store.fs.find(store.path)
        except (FileNotFoundError, NotADirectoryError):
            return
    others = sorted(f for f in found if f.endswith(".parquet") and not LABEL_FILE.fullmatch(posixpath.basename(f)))
    if others:
        raise OutputConflict(f"--store {store.url} holds Parquet files that are not label files, e.g. "
                             f"{redact_url(store.fs.unstrip_protocol(others[0]))}: it is a resource or a runs root, not a "
                             "label store. Name a directory of its own for the store, e.g. 'labels'.")


#: Why an output must not land in each kind of place, and what to do instead.
_PLACE_REASONS = {
    "committed run directory": "a committed run is never changed",
    "Parquet dataset": "a resource must not change under its runs",
    "label store": "every Parquet file in a store is read as labels",
}


class OutputConflict(InputError):
    """An output that would land on an input or a committed run (:func:`check_output_place`)."""


def check_output_place(url, *, option: str, storage_options=None, inputs=(),
                       store: bool = False) -> None:
    """Refuse an output that would land on an input or on a committed run: one guard for every writer.

    ``url`` is where a command writes (a file, a root of run directories, or the label store:
    ``store=True``); ``option`` names it as the user wrote it; ``inputs`` are (option, URL) pairs of what
    the command reads. Refused (:class:`OutputConflict`, before anything
    is written):

    - ``url`` equal to or inside one of ``inputs``;
    - with ``store``, a directory that holds Parquet files other than label files, at any depth
      (the store reads every Parquet file below it);
    - ``url`` equal to or inside a committed run directory (one that holds ``manifest.json``) or
      a label store (unless ``store``: the store itself); equal to a Parquet dataset (a resource),
      or inside one that prdist wrote (``ingest``, ``synth``: its ``_prdist`` marker).

    Every directory from ``url`` up to its filesystem's root is listed once (a few listings).

    Examples
    --------
    >>> import os, tempfile
    >>> run = tempfile.mkdtemp()
    >>> open(os.path.join(run, "manifest.json"), "w").close()
    >>> try:
    ...     check_output_place(os.path.join(run, "task.csv"), option="--out")
    ... except OutputConflict as exc:
    ...     print(str(exc).split(" (")[0].replace(run, "RUN"))
    --out file://RUN/task.csv is inside the committed run directory file://RUN
    """
    target = resolve(url, storage_options=storage_options)
    path, toward = target.path.rstrip("/") or "/", ""
    while True:
        found = _place_kind(target.fs, path, target.url, toward=toward)
        if found is not None and not (store and path == target.path.rstrip("/") and found[0] == "label store"):
            kind, evidence = found
            place = "is" if path == target.path.rstrip("/") else "is inside"
            raise OutputConflict(f"{option} {target.url} {place} the {kind} {redact_url(target.fs.unstrip_protocol(path))} "
                                 f"({evidence}): {_PLACE_REASONS[kind]}. Choose a place outside it.")
        parent = posixpath.dirname(path)
        if not parent or parent == path:
            break
        path, toward = parent, posixpath.basename(path)
    if store:
        _check_store_holds_labels_only(target)
    for name, other in inputs:
        source = resolve(other, storage_options=storage_options)
        a, b = target.path.rstrip("/"), source.path.rstrip("/")
        if source.protocol == target.protocol and (a == b or a.startswith(b + "/")):
            raise OutputConflict(f"{option} {target.url} would write over {name} {source.url}, which this command reads. "
                                 f"Give {option} a place of its own.")

