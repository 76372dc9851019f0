"""Verdict sources with a role: annotators, automatic judges and gold (pure, no I/O).

Every label record has a role (records written before roles existed are an annotator's):

``annotator``
    a person's verdict, voted with the other annotators' by the run's rule
    (:func:`prdist.verdicts.aggregation.aggregate`), as always.
``judge``
    an automatic verdict (a model, a classifier). The judges' records of a key are voted by the
    majority rule among themselves, and that verdict stands for the key only where no annotator
    gave one: with a judge, only the gold audit awaits people.
``gold``
    an expert adjudication, kept apart and never voted: the latest gold record of a key is its
    gold verdict, against which the bounds certify and the other sources' quality is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prdist.verdicts.choices import ROLES
from prdist.verdicts.aggregation import aggregate

__all__ = ["ROLES", "RoleVerdicts", "role_verdicts", "split_roles"]


def split_roles(records: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The records of each role (a record without a role is an annotator's).

    Examples
    --------
    >>> r = pd.DataFrame({"key": ["a", "b", "c"], "verdict": [1, 0, 1], "role": ["judge", None, "gold"]})
    >>> {role: frame["key"].tolist() for role, frame in split_roles(r).items()}
    {'annotator': ['b'], 'judge': ['a'], 'gold': ['c']}
    """
    role = records["role"].fillna("annotator") if "role" in records.columns else pd.Series("annotator", index=records.index)
    return {name: records.loc[(role == name).to_numpy()] for name in ROLES}


@dataclass(frozen=True, eq=False)
class RoleVerdicts:
    """The judges' and the gold verdicts of some keys, each a float label (1 / 0 / NaN) per key.

    ``gold_kinds`` says why a gold label is unknown: "cannot_judge" (the expert could not: never
    requested again) or "missing" (no gold record yet).
    """

    judge: pd.Series
    gold: pd.Series
    gold_kinds: pd.Series


def role_verdicts(by_role: dict[str, pd.DataFrame], keys) -> RoleVerdicts:
    """The judge verdict (majority of the judges) and the gold verdict (latest) of every key.

    Examples
    --------
    >>> r = pd.DataFrame({"key": ["a", "a", "b"], "verdict": [1, 0, -1], "annotator": ["x", "x", "y"],
    ...                   "time": pd.to_datetime([1, 2, 3]), "role": ["gold", "gold", "gold"]})
    >>> v = role_verdicts(split_roles(r), ["a", "b", "c"])
    >>> v.gold.tolist()[0], v.gold_kinds.tolist()
    (0.0, ['incorrect', 'cannot_judge', 'missing'])
    """
    keys = pd.Index(keys)

    def outcomes(records: pd.DataFrame, rule: str) -> pd.DataFrame:
        if not len(records):
            return pd.DataFrame({"kind": "missing", "label": np.nan}, index=keys)
        return aggregate(records, rule).for_keys(keys)

    judge, gold = outcomes(by_role["judge"], "majority"), outcomes(by_role["gold"], "latest")
    return RoleVerdicts(judge=judge["label"].astype(np.float64), gold=gold["label"].astype(np.float64),
                        gold_kinds=gold["kind"].astype(object))

