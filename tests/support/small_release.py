"""A small ranked release on local disk for the command tests: one Parquet file, scores in
decreasing order, each item correct with probability 0.1 + 0.85·score."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def ranked_scores_and_labels(n: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` scores in decreasing order and their 0/1 labels (int8), precision falling with rank."""
    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(n))[::-1]
    labels = (rng.random(n) < 0.1 + 0.85 * scores).astype(np.int8)
    return scores, labels


def write_release(root: Path, table: pa.Table, *, row_group_size: int) -> str:
    """Write ``table`` as the one file of a new release folder ``root``; return its path."""
    root.mkdir()
    pq.write_table(table, root / "part-0.parquet", row_group_size=row_group_size)
    return str(root)
