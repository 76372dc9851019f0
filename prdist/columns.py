"""Columns of a table, whether an Arrow table or a pandas DataFrame: the run path's frames.

A run holds its tables as Arrow tables and NumPy arrays, and never imports pandas; a user may
hand the same functions (the report, the terminal summary) a pandas DataFrame. Both are read
here, through what they share (``table[name].to_numpy()``, ``len(table)``), so neither this
module nor its callers import pandas.
"""

from __future__ import annotations

import numpy as np

__all__ = ["column", "column_names"]


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
    return np.asarray(table[name].to_numpy(), dtype=dtype)
