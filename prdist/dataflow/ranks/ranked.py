"""A ranked copy of a resource: the same rows, written in rank order, for cheap reads by rank.

prdist never needs a sorted resource: :func:`prdist.dataflow.ranks.select.select_ranks` finds the
items at the planned ranks of an unsorted one in two streaming passes. But a team that evaluates
many plans, releases or systems against the same large resource can pay for one sort, and every
later run then reads only the row groups that hold its ranks
(:func:`prdist.dataflow.ranks.extract.extract_ranks`: well under 1 % of the bytes at 10^9 rows with
row groups of 2^14 rows, see benchmarks/README.md).

:func:`write_ranked_copy` sorts with Dask (``sort_values`` on the rank order of
:mod:`prdist.ranking`: descending score, then key hash, then key) and writes one Parquet file per
sorted partition, in order, with small row groups and statistics on the score column, which is
what the cheap order check and the extraction read. Publication is that of
:func:`prdist.dataflow.synth.write_synthetic`: on local disk a hidden directory renamed into place,
on object stores create-only files and a commit marker, :data:`RANKED_MARKER`, written last.

A Dask sort shuffles the whole resource: its memory and time grow with N (bench_select.py
measured 23 s and 2.4 GiB per worker for 10^8 rows on 2 workers). Rows of one score go to one
partition, so a run of tied scores must fit in a worker's memory.
"""

from __future__ import annotations

import json
import os

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prdist._validation import check_int
from prdist.errors import DataError, ParameterError
from prdist.ranking import descending_ordinal, key_hash
from prdist.dataflow.engine.executor import compute_all
from prdist.dataflow.io.parquet import Resource, open_resource
from prdist.dataflow.io.publishing import dataset_publication, publish
from prdist.dataflow.io.storage import Location, resolve

__all__ = ["DEFAULT_RANKED_ROW_GROUP_ROWS", "RANKED_MARKER", "write_ranked_copy"]

#: Commit marker of a ranked copy (the source's URL and fingerprint, the files and their rows).
RANKED_MARKER = "_prdist_ranked.json"

#: Rows per row group of a ranked copy: a window of planned ranks costs one row group, and at
#: 2^14 rows the footers stay near 0.1 % of the bytes (benchmarks/README.md).
DEFAULT_RANKED_ROW_GROUP_ROWS = 1 << 14

_ORDINAL, _HASH = "__prdist_ordinal", "__prdist_key_hash"


def _with_rank_keys(frame: pd.DataFrame, key: str, score: str) -> pd.DataFrame:
    """The partition with the two columns the rank order sorts by first."""
    scores = frame[score].to_numpy(dtype=np.float64)
    if not np.isfinite(scores).all():
        raise DataError(
            f"The score column {score!r} holds a null or non-finite score. Scores must be finite: "
            "drop or repair those items first."
        )
    out = frame.copy()
    # As int64, shifted by 2^63 so that signed order is the unsigned one: Dask's sort handles
    # uint64 values at or above 2^63 wrongly (it placed the top score in the last partition).
    out[_ORDINAL] = _signed(descending_ordinal(scores))
    out[_HASH] = _signed(key_hash(frame[key].to_numpy()))
    return out


def _signed(values: np.ndarray) -> np.ndarray:
    return (values ^ np.uint64(1 << 63)).view(np.int64)


def _write_part(frame: pd.DataFrame, directory: Location, name: str, columns: list[str], schema: pa.Schema,
                score: str, row_group_size: int) -> int:
    """Write one sorted partition as one Parquet file; return its rows."""
    if frame.empty:
        return 0
    table = pa.Table.from_pandas(frame[columns], schema=schema, preserve_index=False)

    def write(sink) -> None:
        pq.write_table(table, sink, row_group_size=row_group_size, write_statistics=[score])

    publish(directory.child(name), write, exclusive=True)
    return table.num_rows


def write_ranked_copy(resource: Resource, out, *, client=None, storage_options=None,
                      row_group_size: int = DEFAULT_RANKED_ROW_GROUP_ROWS) -> Resource:
    """Write the rows of ``resource`` in rank order to a new dataset at ``out``, and open it.

    Parameters
    ----------
    resource : Resource
        From :func:`prdist.dataflow.io.parquet.open_resource`; sorted or not.
    out : str
        Path or URL of the copy; must not exist yet.
    client : distributed.Client, optional
        Sort and write on this cluster; default in-process (:func:`prdist.dataflow.engine.executor.compute_all`).
    storage_options : dict or JSON text, optional
        For ``out`` (the resource keeps its own).
    row_group_size : int, default=2**14
        Rows per row group of the copy.

    Returns
    -------
    Resource
        The copy, opened: sorted by the statistics, the same N and columns, every planned rank
        readable with :func:`prdist.dataflow.ranks.extract.extract_ranks`.

    Raises
    ------
    ParameterError
        A parameter outside its domain, or ``resource`` not opened by :func:`open_resource`.
    InputError
        ``out`` exists already or cannot be written.
    DataError
        A score is null or not finite.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.2, 0.9, 0.5]}), os.path.join(d, "a.parquet"))
    >>> copy = write_ranked_copy(open_resource(d), os.path.join(d, "ranked"))
    >>> copy.is_sorted_claim(), pq.read_table(os.path.join(d, "ranked"))["key"].to_pylist()
    (True, [2, 3, 1])
    """
    import dask.dataframe as dd  # here: it takes 0.4 s to import, and only this function needs it

    owner = "write_ranked_copy"
    if not isinstance(resource, Resource):
        raise ParameterError(
            f"The 'resource' parameter of {owner} must be a Resource from open_resource. Got "
            f"{type(resource).__name__} instead."
        )
    row_group_size = check_int(row_group_size, name="row_group_size", owner=owner, low=1)
    if not isinstance(out, (str, os.PathLike)) or not os.fspath(out):
        raise ParameterError(f"The 'out' parameter of {owner} must be a path or URL. Got {out!r} instead.")
    location = resolve(out, storage_options=storage_options)
    columns = list(resource.schema.names)
    schema = resource.schema.remove_metadata()

    urls = [resource.fs.unstrip_protocol(path) for path in resource.files]
    frame = dd.read_parquet(urls, columns=columns, storage_options=resource.storage_options or None)
    meta = frame._meta.assign(**{_ORDINAL: np.array([], dtype=np.int64), _HASH: np.array([], dtype=np.int64)})
    keyed = frame.map_partitions(_with_rank_keys, resource.key, resource.score, meta=meta)
    ordered = keyed.sort_values([_ORDINAL, _HASH, resource.key])
    names = [f"part-{i:05d}.parquet" for i in range(ordered.npartitions)]
    source = {"url": resource.url, "fingerprint": resource.fingerprint, "n": resource.n}

    written: list[int] = []

    def marker() -> bytes:  # called at the commit, once the files are written
        files = [[name, rows] for name, rows in zip(names, written) if rows]
        return (json.dumps({"source": source, "files": files}, indent=1, sort_keys=True) + "\n").encode()

    with dataset_publication(location, names, marker, marker_name=RANKED_MARKER) as directory:

        def graph():
            write = dask.delayed(_write_part, pure=False)
            return [write(part, directory, name, columns, schema, resource.score, row_group_size)
                    for part, name in zip(ordered.to_delayed(), names)]

        results = compute_all(client, graph)
        if sum(results) != resource.n:
            raise DataError(
                f"{resource.url} changed while it was being copied: {sum(results)} rows written, "
                f"{resource.n} when it was opened. Open it again on data that stays put."
            )
        written.extend(results)
    copy = open_resource(location.fs.unstrip_protocol(location.path), storage_options=location.storage_options,
                         key=resource.key, score=resource.score, label=resource.label)
    if not copy.is_sorted_claim():  # the sort's own guarantee: checked, as a reader would
        raise DataError(f"The ranked copy at {copy.url} is not in descending score order across its row groups.")
    return copy
