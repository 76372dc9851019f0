"""prdist.frames.columns moves values between Arrow and NumPy through Arrow's buffers: the same
values as pyarrow's own conversions (which load pandas), for every type a run holds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from prdist.frames.columns import arrow_array, arrow_numpy, take_rows

TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint64(), pa.float32(), pa.float64(), pa.bool_(), pa.string(), pa.large_string()]


def _values(kind, n, rng, nulls):
    if pa.types.is_boolean(kind):
        values = (rng.random(n) < 0.5).tolist()
    elif pa.types.is_floating(kind):
        values = rng.normal(0, 1, n).tolist()
    elif pa.types.is_integer(kind):
        values = rng.integers(0, 100, n).tolist()
    else:
        values = [["", "a", "é€", "x,y"][i % 4] for i in range(n)]
    return [None if nulls and i % 5 == 0 else v for i, v in enumerate(values)]


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("nulls", [False, True])
def test_arrow_numpy_gives_what_to_numpy_gives(kind, nulls):
    rng = np.random.default_rng(0)
    chunks = pa.chunked_array([pa.array(_values(kind, 37, rng, nulls), kind).slice(3, 30), pa.array(_values(kind, 11, rng, nulls), kind)])
    got, want = arrow_numpy(chunks), chunks.to_numpy()
    assert got.dtype == want.dtype
    assert got.tolist() == want.tolist() if got.dtype.kind != "f" else np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("kind", TYPES, ids=str)
def test_arrow_array_builds_what_pa_array_builds(kind):
    rng = np.random.default_rng(1)
    values = _values(kind, 41, rng, nulls=False)
    mask = np.arange(41) % 6 == 0
    text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    numpy_values = np.array(values, dtype=object if text else pa.array(values, kind).to_numpy(zero_copy_only=False).dtype)
    built = arrow_array(numpy_values, type=kind, mask=mask)
    built.validate(full=True)
    assert built.equals(pa.array(numpy_values, type=kind, mask=mask))


def test_take_rows_takes_what_table_take_takes():
    rng = np.random.default_rng(2)
    table = pa.table({str(kind): pa.array(_values(kind, 50, rng, nulls=True), kind) for kind in TYPES})
    rows = rng.integers(0, 50, 80)
    assert take_rows(table, rows).equals(table.take(pa.array(rows)))
    odd = pa.table({"when": pa.array(np.arange(3), pa.timestamp("s"))})  # other types: through Table.take
    assert take_rows(odd, np.array([2, 0])).equals(odd.take(pa.array([2, 0])))


def test_take_rows_keeps_integers_beyond_2_53_beside_nulls():
    """Integers with nulls go through their data buffers, never float64 (which rounds them)."""
    column = pa.chunked_array([pa.array([2**62 + 1, None], pa.int64()), pa.array([2**62 + 3], pa.int64())])
    table = pa.table({"a": column})
    rows = np.array([2, 1, 0])
    assert take_rows(table, rows).equals(table.take(pa.array(rows)))


def test_arrow_array_of_other_types_is_pyarrows_own_even_empty():
    for kind, values in ((pa.timestamp("ms"), np.array([1, 2], dtype="datetime64[ms]")),
                         (pa.date32(), np.array([], dtype="datetime64[D]"))):
        assert arrow_array(values, type=kind).equals(pa.array(values, type=kind))
