"""CSV that annotators can open in a spreadsheet safely, and that reads back exactly.

Annotation tasks are opened in spreadsheets, which execute a cell that starts with ``=``, ``+``,
``-`` or ``@`` (and some treat a leading tab or carriage return alike): a key such as
``=HYPERLINK(...)`` or a text column would become a formula (OWASP "CSV injection"). Every text
cell and every header that starts with one of those characters is written with an apostrophe in
front, which spreadsheets show as text. A cell that starts with apostrophes followed by such a
character gets one more apostrophe, so that the escape can be undone exactly:

- :func:`neutralise` adds one apostrophe to text matching ``'*[=+-@\\t\\r]...``;
- :func:`restore` removes one from text matching ``'+[=+-@\\t\\r]...``; it is the inverse of
  :func:`neutralise` on every string.

Rows end in CRLF, so that a field holding a bare carriage return is quoted (with ``\\n`` line ends
Python's CSV writer leaves it bare, and readers split the row there).

Label files are read with :func:`restore` applied to their ``key`` column (plain CSV only): a
filled task imports back to the original keys, whether the apostrophe survived the editing or a
spreadsheet dropped it. Documented consequence: a key in a hand-written CSV label file that starts
with an apostrophe followed by ``=+-@``, tab or CR is read with one apostrophe fewer.
"""

from __future__ import annotations

import io
import re

__all__ = ["neutralise", "read_csv", "restore", "to_csv"]

_ESCAPED = re.compile(r"'*[=+\-@\t\r]")
_RESTORABLE = re.compile(r"'+[=+\-@\t\r]")


def neutralise(value):
    """``value`` made safe for a spreadsheet cell (text only; anything else as it is).

    Examples
    --------
    >>> neutralise("=HYPERLINK(\\"http://x\\")"), neutralise("'=1"), neutralise("plain"), neutralise(-3)
    ('\\'=HYPERLINK("http://x")', "''=1", 'plain', -3)
    """
    if isinstance(value, str) and _ESCAPED.match(value):
        return "'" + value
    return value


def restore(value):
    """Undo :func:`neutralise`.

    Examples
    --------
    >>> all(restore(neutralise(s)) == s for s in ["=1", "'=1", "''+x", "'plain", "-7", "@a", "\\tx", ""])
    True
    """
    if isinstance(value, str) and _RESTORABLE.match(value):
        return value[1:]
    return value


def to_csv(frame) -> bytes:
    """``frame`` (a pandas DataFrame) as UTF-8 CSV with every text cell and header neutralised
    and CRLF row ends. (pandas is imported by the functions that take a DataFrame: a run writes
    its task without it, :mod:`prdist.dataflow.labels.task_files`.)

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"key": ["=cmd", "a\\rb"], "=col": ["+1", "ok"], "n": [-1, 2]})
    >>> read_csv(io.BytesIO(to_csv(frame))).equals(frame)
    True
    """
    import pandas as pd

    safe = frame.rename(columns=lambda c: neutralise(str(c)))
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column].dtype):
            safe[column] = _edit_text(safe[column], _ESCAPED, neutralise)
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8")


def read_csv(fh, **options):
    """Read a CSV written by :func:`to_csv` back to the (pandas) frame it was written from."""
    import pandas as pd

    frame = pd.read_csv(fh, **options)
    frame = frame.rename(columns=restore)
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column].dtype):
            frame[column] = _edit_text(frame[column], _RESTORABLE, restore)
    return frame


def _edit_text(column, pattern: re.Pattern, edit):
    """``column.map(edit)``, where ``edit`` changes only the text cells that ``pattern`` matches.

    A string column is matched in one vectorised pass and ``edit`` called on the few cells that
    match: a Python call per cell cost a task of 30,000 items ~8 ms a column. Any other column
    (object, categorical, ...) may hold values that are not text and is mapped cell by cell, and
    so is a string column without any text, which ``map`` turns into a float (or null) column.
    """
    import pandas as pd

    if not isinstance(column.dtype, pd.StringDtype) or not column.count():
        return column.map(edit)
    hit = column.str.match(pattern.pattern, na=False)
    return column.mask(hit, column[hit].map(edit)) if hit.any() else column
