"""The outcome kinds of a key's verdicts, the kind of plain labels and the annotators' agreement:
NumPy only, so that a run that takes no verdicts from a label store (an oracle column, or none
yet) loads no pandas (:mod:`prdist.verdicts.aggregation` makes them from a store's records)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KINDS", "Agreement", "kinds_of"]

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


@dataclass(frozen=True)
class Agreement:
    """Inter-annotator agreement over the keys that at least two annotators judged."""

    alpha: float | None  # Krippendorff's alpha (nominal; cannot judge is missing); None: undefined
    annotators: int
    pairable_keys: int  # keys with correct / incorrect verdicts from two or more annotators

    def to_dict(self) -> dict:
        return {"krippendorff_alpha": self.alpha, "annotators": self.annotators, "pairable_keys": self.pairable_keys}
