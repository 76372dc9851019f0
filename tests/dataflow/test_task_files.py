"""A run's annotation task written from Arrow without pandas has the bytes pandas wrote
(``prdist.dataflow.labels.task_files``): every kind of cell a run's task holds, against pandas'
own ``to_csv`` (through ``spreadsheet_csv``) and ``to_json``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from prdist.dataflow.io import spreadsheet_csv
from prdist.dataflow.labels.task_files import json_doubles, task_bytes

#: Text that spreadsheets run, that CSV quotes and that JSON escapes, and text that needs nothing.
WORDS = ["a/b", 'q"x', "b\\s", "nl\nx", "cr\rx", "tab\tx", "\x01\x1f\x7f", "é€😀", "=cmd", "'=x", "-3", "+1", "@a",
         "a,b", "", " sp", "plain", "%s", "{}"]


def _pandas_bytes(table: pa.Table) -> tuple[bytes, bytes]:
    frame = table.to_pandas()
    return spreadsheet_csv.to_csv(frame), frame.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")


@pytest.mark.parametrize("seed", [0, 1])
def test_a_task_has_the_bytes_pandas_wrote(seed):
    rng = np.random.default_rng(seed)
    n = 20_000
    scores = rng.normal(0, 1, n) * 10.0 ** rng.integers(-22, 22, n)
    scores[::97] = np.nan
    scores[5::211], scores[7::211] = np.inf, -np.inf  # pandas' JSON writes null, its CSV inf
    scores[::101] = rng.integers(-5, 5, scores[::101].size) * 0.5e-10  # ties of the encoder's rounding
    text = np.array(WORDS, dtype=object)[rng.integers(0, len(WORDS), n)]
    table = pa.table({"rank": np.arange(1, n + 1), "key": pa.array(text.tolist(), pa.string()), "score": scores,
                      "gold_audit": rng.random(n) < 0.5, "small": rng.integers(-3, 3, n).astype(np.int8),
                      "note": pa.array([None if i % 7 == 0 else w for i, w in enumerate(text.tolist())], pa.large_string()),
                      "=header/\"x\"": rng.integers(0, 9, n), "label": pa.array([""] * n, pa.large_string())})
    assert task_bytes(table) == _pandas_bytes(table)


def test_floats_have_the_digits_pandas_json_gives_them():
    edges = [0.0, -0.0, 1e16, 1.0000000000000002e16, 1e-15, 9.99e-16, 1.5e-10, 2.5e-10, 5e-11, 0.99999999995,
             9.99999999995, 123456789.123456789, 1e21, -1e-300, 2.0 ** 53, 0.1, 1 / 3]
    values = np.array(edges + list(np.random.default_rng(2).normal(0, 1, 5_000) * 1e4))
    lines = pd.DataFrame({"x": values}).to_json(orient="records", lines=True, double_precision=10).splitlines()
    assert json_doubles(values) == [line[5:-1] for line in lines]


def test_an_empty_float_column_has_no_digits():
    assert json_doubles(np.array([])) == []


def test_a_column_of_another_type_is_left_to_pandas():
    assert task_bytes(pa.table({"rank": [1], "when": pa.array([0], pa.timestamp("s"))})) is None
    assert task_bytes(pa.table({"rank": pa.array([1, None])})) is None  # integers with nulls: pandas makes floats
