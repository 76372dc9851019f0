"""Estimates that need every label, when some drawn items can never be judged.

Nobody can judge some items; waiting for them would block forever. The comparison proceeds
without them and says how, twice:

- the estimate with those items left out of the sample, valid under the stated assumption that
  they are *missing at random* (their correctness unrelated to being unjudgeable); and
- the worst case without any assumption: the estimate with them all incorrect and all correct,
  the interval between the lower and upper confidence limits of those two.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from .compare_estimation import LabeledSample, estimate_systems
from .compare_sampling import DrawnSample

__all__ = ["estimate_labeled"]


def estimate_labeled(labeled: LabeledSample, drawn: DrawnSample, params, *, exhaustive_in_pool=None) -> tuple[pd.DataFrame, dict]:
    """:func:`~prdist.dataflow.compare.estimate_systems` on a sample whose only unknown labels
    belong to items nobody can judge.

    With no such item this is ``estimate_systems`` itself. Otherwise the rows are the
    missing-at-random estimates, plus ``precision_worst_low`` / ``precision_worst_high``: the lower
    confidence limit with every unjudged item incorrect and the upper one with every unjudged item
    correct (assumption-free), and the diagnostics say so.
    """
    sample = labeled.sample
    never = np.zeros(sample.keys.size, bool) if labeled.cannot_judge is None else labeled.cannot_judge & np.isnan(sample.labels)
    if not never.any():
        return estimate_systems(sample, drawn, params, exhaustive_in_pool=exhaustive_in_pool)
    kept = ~never
    judged = replace(sample, keys=sample.keys[kept], probabilities=sample.probabilities[kept], counts=sample.counts[kept],
                     labels=sample.labels[kept])
    frame, diagnostics = estimate_systems(judged, drawn, params, exhaustive_in_pool=exhaustive_in_pool)
    worst = {}
    for fill in (0.0, 1.0):
        filled = replace(sample, labels=np.where(never, fill, sample.labels))
        worst[fill], _ = estimate_systems(filled, drawn, params, exhaustive_in_pool=exhaustive_in_pool)
    frame["precision_worst_low"] = worst[0.0]["precision_ci_low"].to_numpy()
    frame["precision_worst_high"] = worst[1.0]["precision_ci_high"].to_numpy()
    k = int(never.sum())
    diagnostics["cannot_judge"] = {
        "items": k,
        "assumption": "missing at random",
        "precision_if_incorrect": worst[0.0]["precision"].tolist(),
        "precision_if_correct": worst[1.0]["precision"].tolist(),
    }
    diagnostics.setdefault("notes", []).append(
        f"{k} drawn item(s) nobody can judge are left out of the estimates, assuming they are missing at random; "
        "precision_worst_low / precision_worst_high bound the precision without that assumption "
        "(all of them incorrect / all correct)."
    )
    return frame, diagnostics
