"""The rows of a run's ``plan.parquet``: every planned item with its role, label and verdict,
and the gold audit's columns (an Arrow table, so that a run needs no pandas)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from prdist.frames.columns import arrow_array, arrow_table, column
from prdist.verdicts.kinds import kinds_of
from prdist.dataflow.run.evaluate import PlannedRanks

__all__ = ["PLAN_PANDAS_DTYPES", "plan_table"]


def plan_table(planned: PlannedRanks, items: pa.Table, labels: np.ndarray, kinds: np.ndarray | None = None,
               gold: np.ndarray | None = None, judge: np.ndarray | None = None) -> pa.Table:
    """The rows of plan.parquet: rank, key, score, role, grid_index, label, verdict.

    ``verdict`` says why a label is what it is: correct, incorrect, cannot_judge, disputed or
    missing (see :class:`prdist.dataflow.run.evaluate.LabelResolution`); without ``kinds`` it follows from the labels. A run
    with a gold audit adds ``gold_audit`` (bool: the row is in the random gold audit) and
    ``gold`` (float64: its gold verdict, NaN where none or outside the audit), and with a judge
    also ``judge`` (float64: the judge's probability or 0/1 verdict, NaN where none: what its
    gold bounds used, so that ``prdist history`` bounds it again alike); an audit drawn by a
    judge column's classes adds ``audit_class`` (int8: the judge's class of the row, 0 incorrect,
    1 correct or silent; the audit was drawn from the method's plan rows by it); ``role`` keeps
    the plan's own role (an audit row is also a prefix / window / random / stratum row).
    ``grid_index`` is int32, null off the grid (pandas reads it as ``Int32``: :data:`PLAN_PANDAS_DTYPES`).
    """
    if kinds is None:
        kinds = kinds_of(labels)
    table = _plan_rows(planned, items, labels, kinds)
    if planned.in_audit is not None:
        table = table.append_column("gold_audit", arrow_array(np.asarray(planned.in_audit, dtype=bool)))
        table = table.append_column("gold", arrow_array(np.where(planned.in_audit, gold, np.nan).astype(np.float64)))
        if judge is not None:
            table = table.append_column("judge", arrow_array(np.asarray(judge, dtype=np.float64)))
        if planned.audit_judge is not None:
            table = table.append_column("audit_class", arrow_array(np.where(planned.audit_judge < 0.5, 0, 1).astype(np.int8)))
    return table


#: The pandas dtypes of plan.parquet's columns that Arrow's types alone do not say.
PLAN_PANDAS_DTYPES = {"grid_index": "Int32"}


def _plan_rows(planned: PlannedRanks, items: pa.Table, labels: np.ndarray, kinds: np.ndarray) -> pa.Table:
    key = items.column("key")
    on_grid = planned.grid_index >= 0
    return arrow_table(
        {
            "rank": planned.ranks.astype(np.int64),
            "key": key.cast(pa.large_string()) if pa.types.is_string(key.type) else key,
            "score": column(items, "score", np.float64),
            "role": arrow_array(planned.role.astype(str), type=pa.large_string()),
            "grid_index": arrow_array(planned.grid_index.astype(np.int32), mask=~on_grid),
            "label": labels.astype(np.float64),
            "verdict": arrow_array(np.asarray(kinds, dtype=str), type=pa.large_string()),
        }
    )
