"""Verify a claim of sorted order: from row-group statistics, or from every score.

DESIGN. :func:`verify_order` runs in the user's session; with ``full=True`` it maps
:func:`_order_task` (runs many times, one task per :class:`~prdist.dataflow.io.parquet.Partition`)
through :mod:`prdist.dataflow.engine.executor` and joins the per-row-group results in storage order.
"""

from __future__ import annotations

import numpy as np

from prdist.dataflow.engine.executor import run_tasks
from prdist.dataflow.io.parquet import (
    OrderCheck,
    Partition,
    Resource,
    displays,
    open_resource,
    order_from_statistics,
)  # noqa: F401 (open_resource: doctests)
from prdist.dataflow.io.parquet_tasks import read_row_groups, scores_of

__all__ = ["verify_order"]


def _order_task(partition: Partition, fs, score: str, names: dict):
    """Per row group: (first score, last score, first row where the score rises, or None)."""
    out = []
    display = names[partition.path]
    for index, table in read_row_groups(fs, partition.path, partition.indices, [score], display=display,
                                        footer=partition.footer):
        values = scores_of(table, score, f"{display} row group {index}")
        rises = np.flatnonzero(np.diff(values) > 0)
        violation = None if rises.size == 0 else int(rises[0]) + 1
        out.append((float(values[0]), float(values[-1]), violation))
    return out


def verify_order(resource: Resource, *, full: bool = False, client=None) -> OrderCheck:
    """Check that the resource is sorted by descending score.

    Parameters
    ----------
    resource : Resource
    full : bool, default=False
        False: from row-group statistics only (no data read; every boundary between row groups
        and files, not the order inside row groups). True: read every score, one Dask task per
        partition, and check every pair of neighbouring rows (and finiteness on the way).
    client : distributed.Client, optional
        Cluster for the full check; default in-process.

    Returns
    -------
    OrderCheck

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3], "score": [0.1, 0.5, 0.3]}), os.path.join(d, "a.parquet"))
    >>> res = open_resource(d)
    >>> res.is_sorted_claim()  # one row group: its statistics cannot see inside it
    True
    >>> verify_order(res, full=True)
    OrderCheck(sorted=False, method='full', detail='a.parquet row group 0: the score rises at row 1')
    """
    if not full:
        return order_from_statistics(resource)
    parts = resource.partitions()
    results = run_tasks(client, _order_task, parts, resource.fs, resource.score, displays(resource))
    previous = None
    for part, per_group in zip(parts, results):
        for unit, (first, last, violation) in zip(part.units, per_group):
            rg = resource.row_groups[unit]
            where = f"{resource.relative_name(rg.file)} row group {rg.index}"
            if violation is not None:
                return OrderCheck(False, "full", f"{where}: the score rises at row {violation}")
            if previous is not None and previous[0] < first:
                return OrderCheck(False, "full", f"{where} starts at score {first!r}, above the last score {previous[0]!r} of {previous[1]}")
            previous = (last, where)
    return OrderCheck(True, "full")
