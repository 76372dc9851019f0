"""Run directories: one immutable prefix per run, committed by writing ``manifest.json`` last.

A run's id is a hash of what determines its result (the input fingerprint, the parameters and the
labels it used), so a rerun of the same inputs lands in the same prefix, finds the manifest and
does nothing. Artifacts are written first; the manifest is written with a create-only write
(``If-None-Match: *`` on S3, an exclusive create on local disk), never by renaming or listing. A
run without a manifest is not a run: readers ignore it and the next attempt overwrites its files.

The protocol, the same for an evaluation (:mod:`prdist.dataflow.run.steps`) and a comparison
(:mod:`prdist.dataflow.compare`): :func:`committed_outcome` first (a committed run is reused
as it is), then the artifacts, then :func:`commit_run` (the manifest, create-only; when a
concurrent attempt of the same run committed first, its manifest stands).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import re
from dataclasses import dataclass, field
from typing import Any

import platform

import numpy as np
import pyarrow as pa

from prdist import __version__
from prdist.frames.columns import arrow_array, arrow_numpy
from prdist.errors import InputError
from prdist.dataflow.io.publishing import publish, read_parquet, write_bytes_exclusive, write_parquet
from prdist.dataflow.io.storage import Location, join_url, resolve
from prdist.dataflow.io.storage_errors import AlreadyExists, exists

__all__ = [
    "MANIFEST",
    "RunDirectory",
    "RunOutcome",
    "commit_run",
    "committed_outcome",
    "labels_fingerprint",
    "run_id",
    "versions",
    "with_pandas_metadata",
]

MANIFEST = "manifest.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def run_id(*parts: Any) -> str:
    """A short, stable id for the run determined by ``parts`` (JSON-serialisable values).

    >>> run_id({"eps": 0.03}, "fingerprint") == run_id({"eps": 0.03}, "fingerprint")
    True
    """
    return hashlib.sha256(_canonical(parts).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class RunDirectory:
    """The prefix ``<root>/<run_id>`` of one run.

    ``root`` is the runs root: a :class:`~prdist.dataflow.io.storage.Location` (the run's output,
    resolved once at the edge), or a URL resolved here with ``storage_options``. Every artifact
    name must be a plain file name: nothing can be written outside the prefix.
    """

    root: Location
    run_id: str
    storage_options: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        root = resolve(self.root, storage_options=self.storage_options)
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "storage_options", root.storage_options)  # the root's own, for its files

    @property
    def url(self) -> str:
        return join_url(self.root.given, self.run_id)

    @property
    def location(self) -> Location:
        return self.root.child(self.run_id)

    def path_of(self, name: str) -> str:
        return self._at(name).given

    def _at(self, name: str) -> Location:
        if not _NAME.match(name) or ".." in name:
            raise InputError(f"Artifact name {name!r} is not a plain file name; artifacts stay inside the run directory.")
        return self.location.child(name)

    def is_committed(self) -> bool:
        at = self._at(MANIFEST)
        return exists(at.fs, at.path, where=self.url)

    def read_manifest(self) -> dict:
        at = self._at(MANIFEST)
        with at.fs.open(at.path, "rb") as fh:
            return json.load(fh)

    def write_bytes(self, name: str, data: bytes) -> str:
        """Write an artifact whole or not at all (before the commit; a crashed attempt's file is replaced)."""
        payload = bytes(data)
        publish(self._at(name), lambda fh: fh.write(payload), exclusive=False)
        return self.path_of(name)

    def write_table(self, name: str, table, schema: pa.Schema | None = None, *, pandas_dtypes: dict | None = None) -> str:
        """Write an Arrow ``table`` (with :func:`with_pandas_metadata`, ``pandas_dtypes`` naming
        its columns' pandas dtypes that Arrow's types do not say), or a pandas DataFrame (in
        ``schema``), as Parquet."""
        if isinstance(table, pa.Table):
            table = with_pandas_metadata(table, pandas_dtypes or {})
        else:
            table = pa.Table.from_pandas(table, schema=schema, preserve_index=False)
        write_parquet(table, self._at(name), exclusive=False)
        return self.path_of(name)

    def read_table(self, name: str):
        """The artifact ``name`` as a pandas DataFrame."""
        at = self._at(name)
        with at.fs.open(at.path, "rb") as fh:
            return read_parquet(fh).to_pandas()

    def commit(self, manifest: dict) -> bool:
        """Write the manifest create-only. Returns False when another attempt committed first."""
        data = (json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n").encode()
        try:
            write_bytes_exclusive(self._at(MANIFEST), data)
        except AlreadyExists:
            return False
        return True


@dataclass(frozen=True)
class RunOutcome:
    """Where a run (an evaluation or a comparison) landed: its directory, manifest, missing labels."""

    url: str
    manifest: dict
    missing: int
    task: str | None = None
    reused: bool = False
    cutoffs: dict = field(default_factory=dict)


def labels_fingerprint(labels, kinds=None) -> str:
    """The part of a run id that the labels make: NaN (unknown) as -1, then 0/1, hashed.

    ``kinds`` (the verdict kind of each label) joins the hash when given: a key turning from
    missing to cannot judge changes what the run asks for, so it is another run.

    >>> labels_fingerprint([1.0, float("nan")]) == labels_fingerprint([1.0, float("nan")])
    True
    """
    values = np.nan_to_num(np.asarray(labels, dtype=np.float64), nan=-1).astype(np.int8).tobytes().hex()
    return run_id(values) if kinds is None else run_id(values, np.asarray(kinds).tolist())


def versions() -> dict:
    """The versions a manifest records (pandas' installed version, which a run does not load)."""
    return {"prdist": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "pandas": _pandas_version(), "pyarrow": pa.__version__}


@functools.cache
def _pandas_version() -> str:
    return importlib.metadata.version("pandas")


#: pandas' (pandas_type, numpy_type) of a column of each Arrow type, as pandas 3 writes them.
_PANDAS_TYPES = {pa.int64(): ("int64", "int64"), pa.int32(): ("int32", "int32"), pa.int8(): ("int8", "int8"),
                 pa.float64(): ("float64", "float64"), pa.bool_(): ("bool", "bool"), pa.large_string(): ("object", "str")}
#: The same of a pandas extension dtype, by name.
_PANDAS_EXTENSION_TYPES = {"Int32": ("int32", "Int32")}


def with_pandas_metadata(table: pa.Table, dtypes: dict[str, str]) -> pa.Table:
    """``table`` as ``pa.Table.from_pandas`` makes it from the DataFrame that ``table.to_pandas()``
    gives, made without pandas: NaN in a float column as null, and the ``pandas`` schema
    metadata (no index; ``dtypes``: the columns of a pandas extension dtype, e.g.
    ``{"grid_index": "Int32"}``). So ``pandas.read_parquet`` gives that DataFrame, with those
    dtypes, and the file's bytes are those the DataFrame's would be.

    Examples
    --------
    >>> meta = with_pandas_metadata(pa.table({"rank": [1], "grid": pa.array([None], pa.int32())}), {"grid": "Int32"})
    >>> json.loads(meta.schema.metadata[b"pandas"])["columns"][1]["numpy_type"]
    'Int32'
    """
    for i, f in enumerate(table.schema):
        if pa.types.is_floating(f.type) and table.column(i).null_count < len(table):
            values = arrow_numpy(table.column(i))
            if np.isnan(values).any():
                table = table.set_column(i, f.name, arrow_array(values, type=f.type, mask=np.isnan(values)))
    if any(f.type not in _PANDAS_TYPES and f.name not in dtypes for f in table.schema):
        # a type whose pandas metadata this module does not know: pandas itself makes the table
        return pa.Table.from_pandas(table.to_pandas(), preserve_index=False)
    columns = []
    for f in table.schema:
        pandas_type, numpy_type = _PANDAS_EXTENSION_TYPES[dtypes[f.name]] if f.name in dtypes else _PANDAS_TYPES[f.type]
        columns.append({"name": f.name, "field_name": f.name, "pandas_type": pandas_type, "numpy_type": numpy_type,
                        "metadata": None})
    meta = {"index_columns": [], "column_indexes": [], "columns": columns, "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__}, "pandas_version": _pandas_version()}
    return table.replace_schema_metadata({**(table.schema.metadata or {}), b"pandas": json.dumps(meta).encode()})


def committed_outcome(run: RunDirectory) -> RunOutcome | None:
    """The outcome of ``run`` when it is already committed (reused as it is), else None."""
    if not run.is_committed():
        return None
    manifest = run.read_manifest()
    counts = manifest["counts"]
    return RunOutcome(run.url, manifest, counts.get("awaiting", counts.get("unknown", 0)), manifest.get("annotation_task"), reused=True)


def commit_run(run: RunDirectory, manifest: dict, missing: int, task: str | None, **extra) -> RunOutcome:
    """Commit ``run`` with ``manifest`` (its artifacts written already) and return its outcome.

    When a concurrent attempt of the same run committed first, its result stands: its manifest
    is returned, marked reused.
    """
    committed = run.commit(manifest)
    if not committed:
        manifest = run.read_manifest()
    return RunOutcome(run.url, manifest, missing, task, reused=not committed, **extra)
