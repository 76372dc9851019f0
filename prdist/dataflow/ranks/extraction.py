"""What reading items out of a resource returns: the items, and what the read cost.

An :class:`Extraction` is the typed result of :func:`prdist.dataflow.ranks.extract.extract` (and of
the sorted and unsorted paths behind it, :func:`~prdist.dataflow.ranks.extract.sorted_extraction` and
:func:`~prdist.dataflow.ranks.select.selection`) and of
:func:`prdist.dataflow.compare.sampling.item_columns`. The read statistics travel in it to the
manifest, rather than in a frame's ``attrs`` (which pandas calls experimental and which do not
survive every operation on a frame).

Also here, what every extraction shares at its two ends, in the user's session: the checks of
what is asked (:func:`check_ranks`, :func:`extra_columns`) and the frame of what is returned
(:func:`result_table`, :func:`empty_result`, :func:`check_labels`). The items are an Arrow table
(the run path imports no pandas); the functions that return a DataFrame to a user turn it into
one with :func:`items_frame`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prdist.frames.columns import arrow_array, arrow_numpy, arrow_table
from prdist.errors import DataError, ParameterError
from prdist.dataflow.io.parquet import Resource, _key_kind

__all__ = ["Extraction", "check_labels", "check_ranks", "empty_result", "extra_columns", "items_frame", "result_table"]


@dataclass(frozen=True)
class Extraction:
    """Items read from a resource and the read's statistics.

    Attributes
    ----------
    items : pyarrow.Table
        The items: for ranks, columns ``rank`` (int64), ``key``, ``score`` (float64), then the
        extra columns, one row per distinct requested rank, in rank order. (The item columns of
        :func:`prdist.dataflow.compare.sampling.item_columns` are a pandas DataFrame.)
    bytes_read : int
        Compressed Parquet bytes of the column chunks read (every pass counted).
    row_groups_read : int, default=0
        Row groups read (a row group read by several passes counted once).
    passes : int, default=0
        For an unsorted resource, the histogram passes plus the extraction pass; 0 where the
        items were read where they are (sorted input) or nothing was read.
    candidates : int, default=0
        For an unsorted resource, the items the extraction pass took out.
    intervals : int, default=0
        For an unsorted resource, the final rank intervals (candidates are at most the
        requested ranks plus ``cap`` per interval).
    seconds : float, default=0.0
        Wall-clock seconds of the extraction, where measured (a staged extraction records them).
    """

    items: pa.Table  # or a DataFrame: item_columns (prdist compare)
    bytes_read: int
    row_groups_read: int = 0
    passes: int = 0
    candidates: int = 0
    intervals: int = 0
    seconds: float = 0.0


def extra_columns(resource: Resource, columns) -> list[str]:
    """Validate the extra output columns (default: the label column, if any)."""
    if columns is None:
        return [resource.label] if resource.label else []
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise ParameterError(f"The 'columns' parameter must be a list of column names. Got {columns!r} instead.")
    names = resource.schema.names
    out = []
    for column in columns:
        if column in (resource.key, resource.score) or column in out:
            continue
        if column not in names:
            raise ParameterError(f"The resource {resource.url} has no column {column!r} (columns: {', '.join(names)}).")
        if column in ("rank", "key", "score"):
            raise ParameterError(f"The extra column {column!r} would collide with an output column of the same name; rename it.")
        out.append(column)
    return out


def check_ranks(ranks, n: int, *, owner: str) -> np.ndarray:
    """Return the sorted distinct 1-based ranks as int64 after checking each is in [1, n]."""
    array = np.asarray(ranks)
    if array.dtype.kind == "f" and np.isfinite(array).all() and (array == np.round(array)).all():
        array = array.astype(np.int64)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ParameterError(f"The 'ranks' parameter of {owner} must be a 1-d array of integers. Got {ranks!r:.80} instead.")
    # Not np.unique, which hashes (NumPy >= 2.3): a stable sort merges the sorted runs of the usual
    # input (a plan's ranks) in linear time, 5 ms less for the 30,000 ranks of a 10^7 run.
    array = np.sort(array.astype(np.int64), kind="stable")
    array = array[np.concatenate(([True], array[1:] != array[:-1]))] if array.size else array
    if array.size and (array[0] < 1 or array[-1] > n):
        bad = array[0] if array[0] < 1 else array[-1]
        raise ParameterError(f"The 'ranks' parameter of {owner} must hold ranks in [1, {n}]. Got {bad} instead.")
    return array


def empty_result(resource: Resource, extras: list[str]) -> pa.Table:
    """The result of extracting no ranks: the right columns, no rows."""
    key_type = resource.schema.field(resource.key).type
    keys = np.empty(0, dtype=np.int64 if _key_kind(key_type) == "int" else object)
    table = arrow_table({name: arrow_array([], type=resource.schema.field(name).type) for name in extras}) if extras else None
    return result_table(np.empty(0, dtype=np.int64), keys, np.empty(0), table)


def check_labels(items: pa.Table, label: str | None, where: str) -> None:
    """Raise DataError if the label column of extracted rows holds anything but 0/1."""
    if label is None or label not in items.column_names:
        return
    values = items.column(label)
    if values.null_count:
        raise DataError(f"The label column {label!r} holds missing values in {where}. Every label must be 0 or 1.")
    values = arrow_numpy(values)
    if values.dtype.kind == "f" and np.isnan(values).any():
        raise DataError(f"The label column {label!r} holds missing values in {where}. Every label must be 0 or 1.")
    bad = ~((values == 0) | (values == 1))
    if bad.any():
        raise DataError(
            f"The label column {label!r} holds {values[bad][0]} in {where}; labels must be 0 or 1. "
            "Map the labels to 0/1 first."
        )


def result_table(positions: np.ndarray, keys: np.ndarray, scores: np.ndarray, extras: pa.Table | None) -> pa.Table:
    """The output of rank extraction: rank, key, score, then the extra columns (as read), by rank."""
    columns = {"rank": arrow_array(positions.astype(np.int64) + 1), "key": arrow_array(keys),
               "score": arrow_array(scores.astype(np.float64))}
    if extras is not None:
        columns.update({name: extras.column(name) for name in extras.column_names})
    return arrow_table(columns)


def items_frame(items: pa.Table):
    """Extracted ``items`` as the pandas DataFrame the public functions return: each column as
    NumPy holds it (an integer column with nulls as float64 with NaN, text as objects)."""
    import pandas as pd  # only for a user who asked for a DataFrame

    return pd.DataFrame({name: items.column(name).to_pandas().to_numpy() for name in items.column_names})
