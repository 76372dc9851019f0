"""spreadsheet_csv edits string columns in one vectorised pass: the same frames and bytes as
neutralise / restore applied to every cell."""

import io

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from prdist.dataflow.io.spreadsheet_csv import neutralise, read_csv, restore, to_csv

# Texts near the escape: the trigger characters, apostrophes before them, CSV's own specials.
texts = st.text(alphabet="=+-@\t\r'ab,\"\n é1", max_size=5)


def cell_by_cell(frame: pd.DataFrame, edit) -> pd.DataFrame:
    """What spreadsheet_csv did before it vectorised: ``edit`` mapped over every text column."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column].dtype):
            out[column] = out[column].map(edit)
    return out


@given(
    values=st.lists(st.one_of(texts, st.none()), max_size=20),
    dtype=st.sampled_from(["str", "string", object]),
)
@settings(max_examples=150, deadline=None)
def test_to_csv_and_read_csv_edit_as_every_cell_would(values, dtype):
    frame = pd.DataFrame({"text": pd.Series(values, dtype=dtype), "n": np.arange(len(values))})
    expected = cell_by_cell(frame, neutralise).to_csv(index=False, lineterminator="\r\n").encode("utf-8")
    data = to_csv(frame)
    assert data == expected
    for options in ({}, {"dtype": {"text": str}, "keep_default_na": False, "na_values": [""]}):
        read = read_csv(io.BytesIO(data), **options)
        reference = cell_by_cell(pd.read_csv(io.BytesIO(data), **options), restore)
        pd.testing.assert_frame_equal(read, reference)  # dtypes too: an all-missing column stays as map makes it
