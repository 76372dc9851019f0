"""The tables of a run directory as the pages read them: checked once, then arrays.

Each table is checked for its contract columns and for finite, in-range values where it enters a
page (:func:`frame_checked`, :func:`finite_column`); the bounds table becomes a :class:`BoundsView`,
the interface :mod:`prdist.paula.derived` expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sys

import numpy as np
import pyarrow as pa

from prdist.frames.columns import column, column_names
from prdist.errors import DataError, ParameterError

__all__ = ["BANDS_COLUMNS", "BOUNDS_COLUMNS", "CUTOFF_COLUMNS", "EXACT_COLUMNS", "OWNER", "PLAN_COLUMNS", "BoundsView",
           "exact_curve", "finite_column", "frame_checked", "prefix_end_of", "rank_column"]

OWNER = "render_report"

BOUNDS_COLUMNS = ("rank", "precision_lower", "precision_upper", "yield_lower", "yield_upper")
PLAN_COLUMNS = ("rank", "key", "score", "role", "label")
BANDS_COLUMNS = ("recall", "precision", "band_lower", "band_upper", "pointwise_lower", "pointwise_upper")
EXACT_COLUMNS = ("rank", "precision")
CUTOFF_COLUMNS = ("target", "rank", "score")


def is_table(frame) -> bool:
    """Whether ``frame`` is an Arrow table or a pandas DataFrame (pandas is not imported to tell:
    a DataFrame exists only once pandas is loaded)."""
    pandas = sys.modules.get("pandas")
    return isinstance(frame, pa.Table) or (pandas is not None and isinstance(frame, pandas.DataFrame))


def frame_checked(frame, name: str, columns: tuple[str, ...], *, optional: bool = False):
    """``frame`` when it is an Arrow table or a pandas DataFrame with ``columns`` (None when
    optional and absent); else the error naming the table."""
    if frame is None and optional:
        return None
    if not is_table(frame):
        raise ParameterError(
            f"The {name!r} parameter of {OWNER} must be a pandas DataFrame with columns "
            f"{', '.join(columns)}. Got {type(frame).__name__} instead."
        )
    missing = [c for c in columns if c not in column_names(frame)]
    if missing:
        raise DataError(
            f"The {name!r} table of {OWNER} lacks the column(s) {', '.join(missing)}; it needs "
            f"{', '.join(columns)} (see CONTRACTS.md, run directory)."
        )
    return frame


def numbers(frame, name: str) -> np.ndarray:
    """Column ``name`` as float64, what is not a number as NaN (pandas' ``to_numeric``, loaded
    only for a column that is not numeric already)."""
    try:
        return column(frame, name, np.float64)
    except (TypeError, ValueError):
        import pandas as pd

        return pd.to_numeric(pd.Series(column(frame, name)), errors="coerce").to_numpy(dtype=np.float64)


def finite_column(frame, name: str, column_name: str, *, low=None, high=None) -> np.ndarray:
    """A column as float64, refused unless numeric, finite and in [low, high] (the first bad row named)."""
    try:
        values = column(frame, column_name, np.float64)
    except (TypeError, ValueError):
        raise DataError(f"The {column_name!r} column of the {name!r} table of {OWNER} must be numeric.") from None
    bad = ~np.isfinite(values)
    if low is not None:
        bad |= values < low - 1e-9
    if high is not None:
        bad |= values > high + 1e-9
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        span = "" if low is None else f" in [{low:g}, {high:g}]"
        raise DataError(
            f"The {column_name!r} column of the {name!r} table of {OWNER} must hold finite numbers{span}; "
            f"row {i} (counting from 0) holds {float(values[i])!r}."
        )
    return values


def rank_column(frame, name: str) -> np.ndarray:
    """The ``rank`` column as int64, refused unless whole numbers >= 1."""
    ranks = finite_column(frame, name, "rank", low=1, high=np.inf)
    if not np.all(ranks == np.floor(ranks)):
        raise DataError(f"The 'rank' column of the {name!r} table of {OWNER} must hold integers.")
    return ranks.astype(np.int64)


@dataclass(frozen=True)
class BoundsView:
    """The bounds table as arrays, with the interface :mod:`prdist.paula.derived` expects."""

    ranks: np.ndarray
    precision_lower: np.ndarray
    precision_upper: np.ndarray
    ylo: np.ndarray
    yhi: np.ndarray

    @classmethod
    def from_frame(cls, frame) -> BoundsView:
        if len(frame) == 0:
            raise DataError(f"The 'bounds' table of {OWNER} is empty; it needs a row for every grid rank and n.")
        ranks = rank_column(frame, "bounds")
        order = np.argsort(ranks, kind="stable")
        ranks = ranks[order]
        if np.any(ranks[1:] == ranks[:-1]):
            dup = int(ranks[1:][ranks[1:] == ranks[:-1]][0])
            raise DataError(f"The 'bounds' table of {OWNER} holds rank {dup} twice; ranks must be unique.")
        lo = finite_column(frame, "bounds", "precision_lower", low=0.0, high=1.0)[order]
        hi = finite_column(frame, "bounds", "precision_upper", low=0.0, high=1.0)[order]
        ylo = finite_column(frame, "bounds", "yield_lower", low=0.0, high=np.inf)[order]
        yhi = finite_column(frame, "bounds", "yield_upper", low=0.0, high=np.inf)[order]
        if np.any(lo > hi + 1e-9) or np.any(ylo > yhi + 1e-9):
            raise DataError(f"The 'bounds' table of {OWNER} has a lower bound above its upper bound.")
        return cls(ranks, lo, hi, ylo, yhi)

    @property
    def n(self) -> int:
        return int(self.ranks[-1])

    def _at(self, values: np.ndarray, r):
        idx = np.searchsorted(self.ranks, np.asarray(r, dtype=np.int64))
        return values[idx]

    def yield_lower(self, r):
        return self._at(self.ylo, r)

    def yield_upper(self, r):
        return self._at(self.yhi, r)

    def evaluation_ranks(self) -> np.ndarray:
        return self.ranks


def exact_curve(exact, n: int) -> dict[str, np.ndarray]:
    """The exact precision function sorted by rank, refused past rank ``n`` of the bounds."""
    ranks = rank_column(exact, "exact")
    if ranks.size and ranks.max() > n:
        raise DataError(
            f"The 'exact' table of {OWNER} reaches rank {int(ranks.max())}, past n = {n} of the bounds; "
            "pass the precision function of the same resource."
        )
    precision = finite_column(exact, "exact", "precision", low=0.0, high=1.0)
    order = np.argsort(ranks, kind="stable")
    return {"rank": ranks[order], "precision": precision[order]}


def prefix_end_of(view: BoundsView, plan, params: Mapping) -> int:
    """Last rank of the fully labeled prefix, or 0 when the plan has none."""
    if plan is not None:
        prefix = rank_column(plan, "plan")[column(plan, "role").astype(str) == "prefix"]
        return int(prefix.max()) if prefix.size else 0
    if params.get("method") not in (None, "paula"):
        return 0
    # A PAULA bounds table holds every rank 1..g_l and then grid ranks that are at least m + 1
    # apart, so its contiguous run from rank 1 is the prefix.
    ranks = view.ranks
    if ranks[0] != 1:
        return 0
    breaks = np.flatnonzero(np.diff(ranks) != 1)
    return int(ranks[breaks[0]] if breaks.size else ranks[-1])
