"""Test helper: the six ReVerb systems as Parquet resources and their shared labels as a label file.

The ReVerb data stay in ../shared/data beside the clone (never copied into the repository); this
helper writes them where a test wants them (``tmp_path`` or an ``s3://`` prefix) in the form
``prdist compare`` reads: one Parquet dataset (``key``, ``score``) per system, rows in file order,
optionally cut into several files and row groups, and one Parquet label file (``key``, ``label``)
for :func:`prdist.dataflow.labels.importer.import_labels`.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prdist.dataflow.io.storage import filesystem, join_url
from tests.support.reverb_data import load_reverb

from tests.support.paths import REVERB  # noqa: E402


def reverb_frames(*, labeled_only: bool = True) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Each system's (key, score) in file order, and the agreed labels (key, label int8).

    ``labeled_only`` keeps each system's labeled extractions only (as the validation of the core
    in tests/unit/test_reverb.py does), so that every draw has a label and every true precision is
    known; otherwise about 15 % of the extractions have no label.
    """
    data = load_reverb(REVERB)
    frames = {}
    for name, frame in data.systems.items():
        kept = frame.loc[frame["label"].notna()] if labeled_only else frame
        frames[name] = kept[["key", "score"]].reset_index(drop=True)
    labels = pd.DataFrame({"key": data.labels["key"], "label": data.labels["label"].astype(np.int8)})
    return frames, labels


def write_frame(frame: pd.DataFrame, url: str, *, files: int = 1, row_group_size: int | None = None,
                storage_options=None) -> str:
    """Write ``frame`` as ``files`` Parquet files ``part-0.parquet``... under ``url`` (rows in order)."""
    fs, path = filesystem(url, storage_options)
    fs.makedirs(path, exist_ok=True)
    cuts = np.linspace(0, len(frame), files + 1).round().astype(int)
    for i in range(files):
        table = pa.Table.from_pandas(frame.iloc[cuts[i]:cuts[i + 1]], preserve_index=False)
        sink = io.BytesIO()
        pq.write_table(table, sink, row_group_size=row_group_size)
        with fs.open(f"{path}/part-{i}.parquet", "wb") as fh:
            fh.write(sink.getvalue())
    return url


def write_reverb_systems(root, *, labeled_only: bool = True, files: int = 1, row_group_size: int | None = None,
                         storage_options=None) -> tuple[dict[str, str], str]:
    """Write the six systems under ``root`` and the labels as ``root/labels.parquet``.

    Returns ({system name: dataset URL}, label file URL).
    """
    root = str(root)
    frames, labels = reverb_frames(labeled_only=labeled_only)
    systems = {
        name: write_frame(frame, join_url(root, "systems", name), files=files, row_group_size=row_group_size,
                          storage_options=storage_options)
        for name, frame in frames.items()
    }
    label_url = join_url(root, "labels.parquet")
    fs, path = filesystem(label_url, storage_options)
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(labels, preserve_index=False), sink)
    with fs.open(path, "wb") as fh:
        fh.write(sink.getvalue())
    return systems, label_url
