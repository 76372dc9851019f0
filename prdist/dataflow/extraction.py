"""What reading items out of a resource returns: the items, and what the read cost.

An :class:`Extraction` is the typed result of :func:`prdist.dataflow.extract.extract` (and of
the sorted and unsorted paths behind it, :func:`~prdist.dataflow.extract.sorted_extraction` and
:func:`~prdist.dataflow.select.selection`) and of
:func:`prdist.dataflow.compare_sampling.item_columns`. The read statistics travel in it to the
manifest, rather than in a frame's ``attrs`` (which pandas calls experimental and which do not
survive every operation on a frame).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Extraction"]


@dataclass(frozen=True)
class Extraction:
    """Items read from a resource and the read's statistics.

    Attributes
    ----------
    items : pandas.DataFrame
        The items: for ranks, columns ``rank`` (int64), ``key``, ``score`` (float64), then the
        extra columns, one row per distinct requested rank, in rank order.
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

    items: pd.DataFrame
    bytes_read: int
    row_groups_read: int = 0
    passes: int = 0
    candidates: int = 0
    intervals: int = 0
    seconds: float = 0.0
