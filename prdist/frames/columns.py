"""Columns of a table, whether an Arrow table or a pandas DataFrame: the run path's frames.

A run holds its tables as Arrow tables and NumPy arrays, and never imports pandas; a user may
hand the same functions (the report, the terminal summary) a pandas DataFrame. Both are read
here, so neither this module nor its callers import pandas.

Between Arrow and NumPy the run goes through here too: pyarrow's own ``pa.array``,
``pa.table`` of NumPy arrays and ``to_numpy`` ask its pandas shim whether a value is a pandas
object, and the shim imports pandas whenever it is installed (0.3 s). :func:`arrow_array`,
:func:`arrow_table` and :func:`arrow_numpy` move the same values through Arrow's buffers
(``pa.Array.from_buffers``, ``pa.py_buffer``, ``np.frombuffer``), which ask nothing.
"""

from __future__ import annotations

import numpy as np

from prdist.errors import DataError

__all__ = ["arrow_array", "arrow_numpy", "arrow_table", "column", "column_names", "take_rows"]


def column_names(table) -> list[str]:
    """The column names of an Arrow table or a pandas DataFrame.

    Examples
    --------
    >>> import pyarrow as pa
    >>> column_names(pa.table({"rank": [1, 2], "score": [0.5, 0.2]}))
    ['rank', 'score']
    """
    names = getattr(table, "column_names", None)
    return list(table.columns if names is None else names)


def column(table, name: str, dtype=None) -> np.ndarray:
    """Column ``name`` of an Arrow table or a pandas DataFrame as a NumPy array (of ``dtype``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> column(pa.table({"rank": [1, 2], "score": [0.5, None]}), "score", np.float64).tolist()
    [0.5, nan]
    """
    values = table[name]
    values = arrow_numpy(values) if hasattr(values, "type") else values.to_numpy()
    return np.asarray(values, dtype=dtype)


#: NumPy's names of Arrow's float and boolean types (Arrow's integer names are NumPy's).
_NUMPY_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64", "bool": "bool"}


def arrow_numpy(values) -> np.ndarray:
    """An Arrow array or chunked array as NumPy, as its ``to_numpy(zero_copy_only=False)`` gives
    it for numbers, booleans and text: numbers and booleans in their NumPy type, numbers with
    nulls as float64 with NaN there, booleans with nulls and text as Python objects (None for
    null); other types (dates, times) as Python objects, where pyarrow gives datetime64.

    Examples
    --------
    >>> import pyarrow as pa
    >>> arrow_numpy(pa.chunked_array([arrow_array([1, 2]), arrow_array([3])])).tolist()
    [1, 2, 3]
    >>> arrow_numpy(arrow_array([1.5, 2.0], mask=[False, True])).tolist()
    [1.5, nan]
    """
    import pyarrow as pa

    chunks = values.chunks if hasattr(values, "chunks") else [values]
    kind = values.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
        return np.array(values.to_pylist(), dtype=object)
    dtype = np.dtype(_NUMPY_NAMES.get(str(kind), str(kind)))
    parts = [_primitive(chunk, dtype) for chunk in chunks]
    if any(part.dtype != dtype for part in parts):  # nulls somewhere: float64 with NaN (objects) throughout
        parts = [part.astype(_with_nulls(dtype)) for part in parts]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _bits(buffer, offset: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")[offset:offset + n].astype(bool)


def _valid(chunk) -> np.ndarray:
    """Whether each row of an Arrow array is not null."""
    if not chunk.null_count:
        return np.ones(len(chunk), dtype=bool)
    return _bits(chunk.buffers()[0], chunk.offset, len(chunk))


def _primitive(chunk, dtype: np.dtype) -> np.ndarray:
    validity, data = chunk.buffers()[:2]
    n, offset = len(chunk), chunk.offset
    if n == 0:
        return np.empty(0, dtype=dtype)
    values = _bits(data, offset, n) if dtype == np.bool_ else np.frombuffer(data, dtype=dtype)[offset:offset + n]
    if not chunk.null_count:
        return values
    out = values.astype(_with_nulls(dtype))
    out[~_valid(chunk)] = None if dtype == np.bool_ else np.nan
    return out


def _with_nulls(dtype: np.dtype):
    """The NumPy type of a column of ``dtype`` with nulls: floats keep theirs (NaN), integers
    become float64 (NaN), booleans objects (None)."""
    return object if dtype == np.bool_ else dtype if dtype.kind == "f" else np.float64


def arrow_array(values, type=None, mask=None):
    """``values`` (a NumPy array or a list) as an Arrow array of ``type`` (default: from the
    NumPy type; text, and None in text, as ``string``), null where ``mask`` is True.

    Examples
    --------
    >>> import pyarrow as pa
    >>> arrow_array([1, 2], mask=[False, True]).to_pylist(), arrow_array(["a", None], pa.large_string()).to_pylist()
    ([1, None], ['a', None])
    >>> arrow_array(np.array([True, False])).to_pylist()
    [True, False]
    """
    import pyarrow as pa

    values = np.asarray(values)
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    text = pa.types.is_string(type) or pa.types.is_large_string(type) if type is not None else values.dtype.kind in "OUS"
    if text:
        return _text_array(values, pa.string() if type is None else type, mask)
    kind = pa.from_numpy_dtype(values.dtype) if type is None else type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
        return pa.array(values, type=kind, mask=mask)  # dates, times, decimals...: pyarrow's own way
    if pa.types.is_boolean(kind):
        data = np.packbits(values.astype(bool), bitorder="little")
    else:
        data = np.ascontiguousarray(values, dtype=np.dtype(_NUMPY_NAMES.get(str(kind), str(kind))))
    nulls = 0 if mask is None else int(mask.sum())
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(kind, values.size, [validity, pa.py_buffer(data)], null_count=nulls)


def _text_array(values: np.ndarray, kind, mask):
    import pyarrow as pa

    null = np.array([v is None for v in values.tolist()], dtype=bool) if mask is None else mask
    encoded = [b"" if gone else str(v).encode("utf-8") for v, gone in zip(values.tolist(), null.tolist())]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if not pa.types.is_large_string(kind):
        if offsets[-1] > np.iinfo(np.int32).max:  # string offsets are int32: never let them wrap
            raise DataError(f"A text column of {int(offsets[-1]):,} bytes does not fit Arrow's string type (2 GiB at most); "
                            "store it as large_string.")
        offsets = offsets.astype(np.int32)
    nulls = int(null.sum())
    validity = pa.py_buffer(np.packbits(~null, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(kind, len(encoded), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))],
                                 null_count=nulls)


def arrow_table(columns: dict):
    """An Arrow table of ``columns`` (name -> NumPy array, list, or Arrow array), in order.

    Examples
    --------
    >>> arrow_table({"rank": np.array([1, 2]), "score": [0.5, 0.25]}).column_names
    ['rank', 'score']
    """
    import pyarrow as pa

    arrays = [v if isinstance(v, (pa.Array, pa.ChunkedArray)) else arrow_array(v) for v in columns.values()]
    return pa.Table.from_arrays(arrays, names=list(columns))


def _integer_values(values, kind) -> np.ndarray:
    """The integers of a chunked integer column as stored (whatever its null slots hold)."""
    dtype = np.dtype(_NUMPY_NAMES.get(str(kind), str(kind)))
    parts = [np.zeros(len(c), dtype=dtype) if c.buffers()[1] is None
             else np.frombuffer(c.buffers()[1], dtype=dtype)[c.offset: c.offset + len(c)] for c in values.chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def take_rows(table, indices: np.ndarray):
    """The rows ``indices`` of an Arrow table. Columns of numbers, booleans and text are taken
    with NumPy (``Table.take`` imports ``pyarrow.compute``, 50 ms, which a run needs nothing
    else of); a table with any other column goes through ``Table.take``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> take_rows(arrow_table({"a": np.array([1, 2, 3]), "s": np.array(["x", None, "z"], dtype=object)}), np.array([2, 0])).to_pylist()
    [{'a': 3, 's': 'z'}, {'a': 1, 's': 'x'}]
    """
    import pyarrow as pa

    indices = np.asarray(indices, dtype=np.int64)
    taken = {}
    for name, field in zip(table.column_names, table.schema):
        kind, values = field.type, table.column(name)
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        plain = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
        if not (text or plain):
            return table.take(arrow_array(indices))
        if text:
            taken[name] = arrow_array(np.array(values.to_pylist(), dtype=object)[indices], type=kind)
            continue
        # integers with nulls from their data buffers: arrow_numpy's float64 would round those over 2^53
        array = (_integer_values(values, kind) if values.null_count and pa.types.is_integer(kind) else arrow_numpy(values))[indices]
        mask = None
        if values.null_count:  # null where the row was null (a NaN that is not null stays NaN)
            mask = ~np.concatenate([_valid(chunk) for chunk in values.chunks])[indices]
            array = np.where(mask, 0, array)
        taken[name] = arrow_array(array, type=kind, mask=mask)
    return pa.Table.from_arrays(list(taken.values()), names=list(taken), metadata=table.schema.metadata)
