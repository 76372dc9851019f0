"""The bytes of a run's annotation task, made from an Arrow table without pandas.

``annotation_task.csv`` and ``.jsonl`` were written by pandas (``to_csv`` through
:func:`prdist.dataflow.io.spreadsheet_csv.to_csv`, ``to_json(orient="records", lines=True,
force_ascii=False)``); a run holds its items as an Arrow table and loads no pandas, so the same
bytes are made here, column by column with NumPy, for the columns a run's task has: integers,
float64, booleans (none of them null) and text. :func:`task_bytes` returns None for a table with
any other column, which the caller then writes through pandas.

What pandas writes, kept exactly:

- CSV: floats as Python's ``repr`` (the shortest text that reads back), NaN and null text as an
  empty field, booleans as True / False, text neutralised for spreadsheets
  (:func:`~prdist.dataflow.io.spreadsheet_csv.neutralise`) and quoted where it holds a comma, a
  quote or a line break; rows end in CRLF.
- JSON Lines: floats with at most 10 decimals as pandas' encoder rounds them
  (:func:`json_doubles`), NaN and null as ``null``, text escaped as JSON with ``/`` as ``\\/``.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa

from prdist.frames.columns import arrow_numpy
from prdist.dataflow.io import spreadsheet_csv
from prdist.dataflow.io.publishing import publish
from prdist.dataflow.io.spreadsheet_csv import neutralise
from prdist.dataflow.io.storage import resolve

__all__ = ["export_annotation_task", "json_doubles", "task_bytes"]


def export_annotation_task(items, out_dir, *, storage_options=None) -> tuple[str, str]:
    """Write the items still needing a label as ``annotation_task.csv`` and ``.jsonl`` in ``out_dir``
    (a run directory's Location, or a URL and its options); return their URLs as written.

    ``items`` (an Arrow table, or a pandas DataFrame) holds key, score, rank and whatever other
    columns the resource has, so the annotator sees each item; a ``label`` column is added empty
    for the annotator to fill in. The CSV is safe to open in a spreadsheet and imports back to
    the original keys (:mod:`prdist.dataflow.io.spreadsheet_csv`). An Arrow table is written by
    :func:`task_bytes` where it can, without pandas; the same bytes either way.
    """
    payloads = None
    if isinstance(items, pa.Table):
        task = items.drop_columns([c for c in ("label",) if c in items.column_names])
        task = task.append_column("label", _empty_texts(task.num_rows))
        payloads = task_bytes(task)
        if payloads is None:  # a column type only pandas writes
            items = task.to_pandas()
    if payloads is None:
        task = items.drop(columns=[c for c in ("label",) if c in items.columns]).copy()
        task["label"] = ""
        payloads = (spreadsheet_csv.to_csv(task),  # safe to open in a spreadsheet, reads back exactly
                    task.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8"))
    out_dir = resolve(out_dir, storage_options=storage_options)
    csv_at, jsonl_at = out_dir.child("annotation_task.csv"), out_dir.child("annotation_task.jsonl")
    for at, payload in zip((csv_at, jsonl_at), payloads):
        publish(at, lambda fh, payload=payload: fh.write(payload), exclusive=False)
    return csv_at.given, jsonl_at.given

#: pandas' JSON encoder writes a float in fixed notation between these magnitudes, else with %.10g.
_FIXED_LOW, _FIXED_HIGH = 1e-15, 1e16
#: The decimals of ``to_json``'s default ``double_precision``.
_DECIMALS = 10


def task_bytes(table: pa.Table) -> tuple[bytes, bytes] | None:
    """(CSV, JSON Lines) of ``table`` as pandas writes them, or None when a column's type is one
    this module does not write (see the module notes)."""
    cells = [_cells(table.column(name)) for name in table.column_names]
    if any(c is None for c in cells):
        return None
    names = table.column_names
    header = ",".join(_csv_quoted(neutralise(str(name))) for name in names) + "\r\n"
    csv = header + _lines(["", *[","] * (len(names) - 1), "\r\n"], [c[0] for c in cells], table.num_rows)
    keys = [_json_text(name) + ":" for name in names]
    jsonl = _lines(["{" + keys[0], *["," + key for key in keys[1:]], "}\n"], [c[1] for c in cells], table.num_rows)
    return csv.encode("utf-8"), jsonl.encode("utf-8")


def _lines(separators: list[str], columns: list[list[str]], rows: int) -> str:
    """Every row's cells of ``columns`` between ``separators`` (one more than the columns): the
    pieces interleaved by slice assignment and joined once, in half the time of a format per row."""
    width = 2 * len(columns) + 1
    pieces = [""] * (rows * width)
    for j, (separator, cells) in enumerate(zip(separators, columns)):
        pieces[2 * j::width] = [separator] * rows
        pieces[2 * j + 1::width] = cells
    pieces[width - 1::width] = [separators[-1]] * rows
    return "".join(pieces)


def _cells(chunks: pa.ChunkedArray) -> tuple[list[str], list[str]] | None:
    """The (CSV, JSON) text of every cell of a column, or None for a type written by pandas only."""
    kind = chunks.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if not chunks.null_count and all(_text_bytes(chunk) == 0 for chunk in chunks.chunks):  # the label column
            return [""] * len(chunks), ['""'] * len(chunks)
        return _text_cells(chunks.to_pylist())
    if chunks.null_count:
        return None
    values = arrow_numpy(chunks)
    if pa.types.is_integer(kind):
        text = list(map(str, values.tolist()))
        return text, text
    if pa.types.is_boolean(kind):
        return np.where(values, "True", "False").tolist(), np.where(values, "true", "false").tolist()
    if kind == pa.float64():
        csv = list(map(repr, values.tolist()))
        for i in np.flatnonzero(np.isnan(values)).tolist():
            csv[i] = ""
        finite = np.isfinite(values)
        if finite.all():
            return csv, json_doubles(values)
        jsn = ["null"] * values.size  # NaN and ±inf: pandas' JSON writes null
        for i, text in zip(np.flatnonzero(finite).tolist(), json_doubles(values[finite])):
            jsn[i] = text
        return csv, jsn
    return None


def _empty_texts(rows: int) -> pa.Array:
    """A text column of ``rows`` empty strings (built from its buffers: no string per row)."""
    return pa.Array.from_buffers(pa.large_string(), rows, [None, pa.py_buffer(np.zeros(rows + 1, dtype=np.int64)), pa.py_buffer(b"")])


def _text_bytes(chunk: pa.Array) -> int:
    """The bytes of text a string array's values hold together, from its offsets."""
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset:chunk.offset + len(chunk) + 1]
    return int(offsets[-1] - offsets[0]) if len(chunk) else 0


#: Text that CSV quotes or neutralises, or that JSON escapes, somewhere in it; other text is
#: written as it is (CSV) or between quotes (JSON), without a call per cell.
_SPECIAL = re.compile(r"^'*[=+\-@\t\r]|[,\"\r\n\\/\x00-\x1f]")


def _text_cells(values: list) -> tuple[list[str], list[str]]:
    csv, jsn = [], []
    for v in values:
        if v is None:
            csv.append("")
            jsn.append("null")
        elif _SPECIAL.search(v):
            csv.append(_csv_quoted(neutralise(v)))
            jsn.append(_json_text(v))
        else:
            csv.append(v)
            jsn.append('"' + v + '"')
    return csv, jsn


def _csv_quoted(text: str) -> str:
    """A CSV field as Python's csv module writes it (minimal quoting, CRLF line ends)."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _json_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("/", "\\/")


def json_doubles(values: np.ndarray) -> list[str]:
    """Finite float64 ``values`` as pandas' JSON encoder writes them with 10 decimals.

    In fixed notation from 1e-15 to 1e16: the whole part, then the fraction times 10^10 rounded
    as the encoder does (in double arithmetic, a tie to the odd neighbour or up from 0), its
    trailing zeros dropped (at least one digit); else ``%.10g``. -0.0 is written 0.0.

    Examples
    --------
    >>> json_doubles(np.array([6.259964262636824, 1.5e-10, 2.5e-10, 3.0, -0.0, 25048820020.44388, 1e17]))
    ['6.2599642626', '0.0000000002', '0.0000000002', '3.0', '0.0', '25048820020.4438781738', '1e+17']
    """
    values = np.asarray(values, dtype=np.float64)
    negative = values < 0
    fixed = (np.abs(values) <= _FIXED_HIGH) & ((np.abs(values) >= _FIXED_LOW) | (values == 0))
    size = np.where(fixed, np.abs(values), 0.0)
    whole = size.astype(np.uint64)
    scaled = (size - whole.astype(np.float64)) * 10.0**_DECIMALS
    frac = scaled.astype(np.uint64)
    diff = scaled - frac.astype(np.float64)
    up = (diff > 0.5) | ((diff == 0.5) & ((frac == 0) | (frac & np.uint64(1)).astype(bool)))
    frac = frac + up.astype(np.uint64)
    carry = frac >= np.uint64(10**_DECIMALS)  # 0.99999999995 -> 1.0
    frac[carry], whole[carry] = 0, whole[carry] + np.uint64(1)
    # The fraction without its trailing zeros (one digit at least): its digits and its value with
    # them dropped, then one format per value, straight into the list the lines are joined from
    # (NumPy's string functions took as long, and their array then became that list).
    digits = np.full(values.size, _DECIMALS)
    for _ in range(_DECIMALS - 1):
        zero = (frac % np.uint64(10) == 0) & (digits > 1)
        frac[zero] //= np.uint64(10)
        digits -= zero
    signs = np.where(negative & fixed, "-", "").tolist()
    text = ["%s%d.%0*d" % row for row in zip(signs, whole.tolist(), digits.tolist(), frac.tolist())]
    for i in np.flatnonzero(~fixed).tolist():
        text[i] = "%.10g" % values[i]
    return text
