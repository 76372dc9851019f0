"""The outcome kinds of a key's verdicts, and the kind of plain labels: NumPy only, so that a run
that takes no verdicts from a label store (an oracle column, or none yet) loads no pandas
(:mod:`prdist.verdicts.aggregation` makes the kinds of a store's records)."""

from __future__ import annotations

import numpy as np

__all__ = ["KINDS", "kinds_of"]

# Outcome of a key, in the order reports list them; "missing" = no record at all.
KINDS = ("correct", "incorrect", "cannot_judge", "disputed", "missing")


def kinds_of(labels) -> np.ndarray:
    """The outcome kind of plain labels (1 / 0 / NaN = no verdict yet), e.g. an oracle column's.

    Examples
    --------
    >>> kinds_of([1.0, 0.0, float("nan")]).tolist()
    ['correct', 'incorrect', 'missing']
    """
    labels = np.asarray(labels, dtype=np.float64)
    return np.where(np.isnan(labels), "missing", np.where(labels == 1, "correct", "incorrect"))
