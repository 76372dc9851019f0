"""Reader for the ReVerb open-IE evaluation data (Fader, Soderland & Etzioni, EMNLP 2011).

Six extractors (reverb, reverb_no_lex, textrunner, textrunner_reverb, woe_parse, woe_pos) ran over
the same 500 web sentences; ``extractions/<system>.txt`` holds their output, one extraction a line
(sentence id, argument 1, relation, argument 2, confidence; tab-separated), and ``labels.txt`` the
2,474 labels two annotators agreed on (label, sentence id, argument 1, relation, argument 2). An
extraction is identified by its (sentence id, argument 1, relation, argument 2) tuple, so a label
is shared by every system that produced the same tuple.

Keys are the tuple joined by tabs ("73\\the\\t's been seeking for\\ttwo years"): the files are
tab-separated, so no field holds a tab and the key is injective and stable.

Duplicates. woe_pos lists three tuples twice with different confidences (the same words extracted
at two places in the sentence). The published counts (861 extractions, 756 labeled, 218 correct)
count those rows; an item of a resource is one key, so by default each tuple is kept once with its
highest confidence (858 / 753 / 218). ``duplicates="keep"`` returns the rows as published.

A test helper, outside the package: it reads files, which the pure core never does; the
estimators it feeds live in :mod:`prdist.importance`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from prdist._validation import check_choice
from prdist.errors import DataError

__all__ = ["REVERB_SYSTEMS", "ReverbData", "reverb_key", "load_reverb"]

REVERB_SYSTEMS = (
    "reverb",
    "reverb_no_lex",
    "textrunner",
    "textrunner_reverb",
    "woe_parse",
    "woe_pos",
)
_TUPLE = ["sentence", "arg1", "relation", "arg2"]
_DUPLICATES = ("max", "keep")


def reverb_key(sentence, arg1, relation, arg2):
    """Return the key of an extraction: its four fields joined by tabs.

    Works on scalars and, element-wise, on pandas Series.

    >>> reverb_key(73, "he", "'s been seeking for", "two years")
    "73\\the\\t's been seeking for\\ttwo years"
    """
    if isinstance(sentence, pd.Series):
        return sentence.astype(str) + "\t" + arg1 + "\t" + relation + "\t" + arg2
    return f"{sentence}\t{arg1}\t{relation}\t{arg2}"


@dataclass(frozen=True, eq=False)
class ReverbData:
    """The six systems' extractions and the agreed labels.

    Attributes
    ----------
    systems : Mapping[str, pandas.DataFrame]
        One frame per system (in :data:`REVERB_SYSTEMS` order) with columns ``key`` (str),
        ``score`` (float64) and ``label`` (float64: 1 correct, 0 incorrect, NaN without an agreed
        label), in file order.
    labels : pandas.DataFrame
        Columns ``key`` and ``label`` (float64), one row per agreed label, in file order.
    duplicates_dropped : Mapping[str, int]
        Rows each system lost to the duplicate policy (0 everywhere with ``"keep"``).
    """

    systems: Mapping[str, pd.DataFrame]
    labels: pd.DataFrame
    duplicates_dropped: Mapping[str, int]


def _read_tsv(path: Path, names: list[str]) -> pd.DataFrame:
    """Read a tab-separated file of exactly ``len(names)`` verbatim text fields a line."""
    if not path.is_file():
        raise DataError(f"ReVerb data file {str(path)!r} is missing. Point load_reverb at the "
                        "'reverb-emnlp2011' directory of the released data.")
    # Plain splitting: text fields hold quotes and words like "NA", which CSV readers reinterpret,
    # and a short line must be an error rather than a silently empty field.
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    for number, row in enumerate(rows, start=1):
        if len(row) != len(names):
            raise DataError(f"{str(path)!r} line {number} has {len(row)} fields; the file must "
                            f"have {len(names)} tab-separated fields a line ({', '.join(names)}).")
    frame = pd.DataFrame(rows, columns=names, dtype=str)
    ids = pd.to_numeric(frame["sentence"], errors="coerce")
    if ids.isna().any() or (ids % 1 != 0).any():
        line = int(np.flatnonzero(ids.isna() | (ids % 1 != 0))[0]) + 1
        raise DataError(f"{str(path)!r} line {line}: the sentence id is not an integer.")
    frame["sentence"] = ids.astype(np.int64)
    return frame


def load_reverb(path, *, duplicates="max") -> ReverbData:
    """Read the ReVerb EMNLP 2011 evaluation data.

    Parameters
    ----------
    path : str or path-like
        The ``reverb-emnlp2011`` directory (holding ``labels.txt`` and ``extractions/``).
    duplicates : {"max", "keep"}, default="max"
        A tuple a system lists twice: ``"max"`` keeps it once with its highest score (keys are
        then unique, as a resource requires); ``"keep"`` returns every row as published.

    Returns
    -------
    ReverbData

    Raises
    ------
    DataError
        A file is missing or malformed, a score is not finite, or one tuple has two labels.
    """
    owner = "load_reverb"
    check_choice(duplicates, name="duplicates", owner=owner, choices=_DUPLICATES)
    root = Path(path)
    labels = _read_tsv(root / "labels.txt", ["label", *_TUPLE])
    if not labels["label"].isin(["0", "1"]).all():
        bad = labels.loc[~labels["label"].isin(["0", "1"]), "label"].iloc[0]
        raise DataError(f"labels.txt holds label {bad!r}; labels must be 0 or 1.")
    labels = pd.DataFrame(
        {"key": reverb_key(*(labels[c] for c in _TUPLE)), "label": labels["label"].astype(np.float64)}
    )
    conflicts = labels.groupby("key")["label"].nunique()
    if (conflicts > 1).any():
        raise DataError(f"labels.txt labels {conflicts.index[conflicts > 1][0]!r} both 0 and 1.")
    labels = labels.drop_duplicates("key", ignore_index=True)
    by_key = labels.set_index("key")["label"]

    systems, dropped = {}, {}
    for name in REVERB_SYSTEMS:
        raw = _read_tsv(root / "extractions" / f"{name}.txt", [*_TUPLE, "score"])
        score = pd.to_numeric(raw["score"], errors="coerce").astype(np.float64)
        if not np.isfinite(score).all():
            line = int(np.flatnonzero(~np.isfinite(score))[0]) + 1
            raise DataError(
                f"extractions/{name}.txt line {line}: the confidence is not a finite number."
            )
        frame = pd.DataFrame({"key": reverb_key(*(raw[c] for c in _TUPLE)), "score": score})
        if duplicates == "max":
            # Keep the first row of the highest score among a tuple's rows, in file order.
            best = frame.groupby("key", sort=False)["score"].idxmax()
            kept = frame.loc[np.sort(best.to_numpy())].reset_index(drop=True)
            dropped[name] = len(frame) - len(kept)
            frame = kept
        else:
            dropped[name] = 0
        frame["label"] = frame["key"].map(by_key).astype(np.float64)
        systems[name] = frame
    return ReverbData(
        systems=MappingProxyType(systems),
        labels=labels,
        duplicates_dropped=MappingProxyType(dropped),
    )
