"""Verdicts of annotators and how several of them make one label per item (pure, no I/O).

A verdict is correct (1), incorrect (0) or *cannot judge* (:data:`CANNOT_JUDGE`, stored as -1).
A label record is (key, verdict, annotator, time); an item may have many. :func:`aggregate`
turns the records of each key into one outcome by a stated rule:

``majority`` (default)
    the plurality of each annotator's latest verdict; a tie between the most frequent verdicts is
    *disputed*.
``latest``
    the most recent record, whoever gave it (one annotator correcting earlier imports).
``dawid-skene``
    the Dawid-Skene estimate (one confusion matrix per annotator, fitted by EM) over the correct /
    incorrect verdicts; needs at least three annotators. A key with only cannot-judge verdicts is
    cannot judge; a posterior of exactly one half is disputed.

For the bounds, an outcome becomes a label: 1 or 0 when known, NaN (unknown: counted as 0 by lower
bounds and 1 by upper bounds) when cannot judge, disputed or missing. The kinds stay counted apart,
because a cannot-judge item is never requested again while a disputed or missing one is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import InputError
from .label_choices import AGGREGATIONS

__all__ = [
    "AGGREGATIONS",
    "CANNOT_JUDGE",
    "KINDS",
    "Agreement",
    "Outcomes",
    "VerdictWords",
    "aggregate",
    "agreement",
    "dawid_skene_posterior",
    "kinds_of",
    "parse_verdicts",
]

CANNOT_JUDGE = -1
# Outcome of a key, in the order reports list them; "missing" = no record at all.
KINDS = ("correct", "incorrect", "cannot_judge", "disputed", "missing")
_WORDS = {
    1: ("1", "1.0", "true", "yes", "correct", "accept", "accepted"),
    0: ("0", "0.0", "false", "no", "incorrect", "reject", "rejected"),
    CANNOT_JUDGE: ("-1", "skip", "skipped", "unsure", "cannot judge", "cannot_judge", "ignore", "ignored"),
}
_MIN_DAWID_SKENE_ANNOTATORS = 3


@dataclass(frozen=True)
class VerdictWords:
    """A tool's own verdict words, added to the standard ones (compared case-insensitively)."""

    positive: tuple[str, ...] = ()
    negative: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()

    def parse(self, values, *, origin: str, rows=None) -> np.ndarray:
        return parse_verdicts(values, origin=origin, rows=rows, positive=self.positive, negative=self.negative, skip=self.skip)


def parse_verdicts(values, *, origin: str, rows=None, positive=(), negative=(), skip=()) -> np.ndarray:
    """Verdict codes (int8: 1, 0, :data:`CANNOT_JUDGE`) of verdict words, case-insensitive.

    ``positive`` / ``negative`` / ``skip`` add a tool's own words (e.g. a Label Studio choice
    "Relevant"); a word given there means what it is given for, also when it is a built-in word
    of another verdict (``positive=["no"]``: "no" is correct). Anything unrecognised is refused with the row and the value; ``rows`` are the
    row numbers to name (default: 1-based positions).

    Examples
    --------
    >>> parse_verdicts(["Yes", "reject", "Cannot judge", True, 0], origin="f.csv").tolist()
    [1, 0, -1, 1, 0]
    >>> parse_verdicts(["Relevant", "off"], origin="f.csv", positive=["relevant"], negative=["off"]).tolist()
    [1, 0]
    >>> parse_verdicts(["no", "yes"], origin="f.csv", positive=["no"], negative=["yes"]).tolist()
    [1, 0]
    >>> parse_verdicts(["1", "maybe"], origin="f.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    prdist.errors.InputError: f.csv: row 2 has the verdict 'maybe'; ...
    """
    words = {code: set(w) for code, w in _WORDS.items()}
    given = {code: {str(w).strip().lower() for w in extra} for code, extra in ((1, positive), (0, negative), (CANNOT_JUDGE, skip))}
    for code, extra in given.items():
        for other, theirs in given.items():
            if other != code and extra & theirs:
                raise InputError(f"The word {sorted(extra & theirs)[0]!r} is given for two verdicts; give each word once "
                                 "among --positive, --negative and --skip.")
        for other in words:  # a tool's own word wins over the same built-in word ("no" = correct)
            words[other] -= extra
    for code, extra in given.items():
        words[code] |= extra
    text = pd.Series(values, dtype=object).map(_word)
    out = np.full(len(text), -2, dtype=np.int8)
    for code, accepted in words.items():
        out[text.isin(accepted).to_numpy()] = code
    bad = np.flatnonzero(out == -2)
    if bad.size:
        i = int(bad[0])
        row = i + 1 if rows is None else int(np.asarray(rows)[i])
        raise InputError(
            f"{origin}: row {row} has the verdict {_plain(pd.Series(values, dtype=object).iloc[i])!r}; a verdict is "
            "1/0, true/false, yes/no, correct/incorrect, accept/reject, or skip/unsure/cannot judge/ignore "
            f"({bad.size} row(s) affected; map a tool's own words with --positive/--negative/--skip)."
        )
    return out


def _word(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    return str(value).strip().lower()


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def kinds_of(labels) -> np.ndarray:
    """The outcome kind of plain labels (1 / 0 / NaN = no verdict yet), e.g. an oracle column's.

    Examples
    --------
    >>> kinds_of([1.0, 0.0, float("nan")]).tolist()
    ['correct', 'incorrect', 'missing']
    """
    labels = np.asarray(labels, dtype=np.float64)
    return np.where(np.isnan(labels), "missing", np.where(labels == 1, "correct", "incorrect"))


@dataclass(frozen=True, eq=False)
class Outcomes:
    """One outcome per key: ``kind`` (see :data:`KINDS`), ``label`` (1.0 / 0.0 / NaN), ``annotators``."""

    table: pd.DataFrame  # indexed by key: kind, label, annotators
    rule: str

    def for_keys(self, keys) -> pd.DataFrame:
        """The outcomes of ``keys`` in their order; keys without a record are "missing"."""
        out = self.table.reindex(pd.Index(keys))
        out["kind"] = out["kind"].fillna("missing")
        out["annotators"] = out["annotators"].fillna(0).astype(np.int64)
        return out

    def disputed(self) -> list:
        return self.table.index[self.table["kind"].to_numpy() == "disputed"].tolist()


def aggregate(records: pd.DataFrame, rule: str = "majority") -> Outcomes:
    """One outcome per key from label records (columns key, verdict, annotator, time).

    Records are taken in ``time`` order (ties: the order given), so "latest" is well defined.

    Examples
    --------
    >>> r = pd.DataFrame({"key": ["a", "a", "a", "b", "b", "c"], "verdict": [1, 0, 1, 1, 0, -1],
    ...                   "annotator": ["x", "y", "z", "x", "y", "x"], "time": pd.to_datetime([1, 2, 3, 4, 5, 6])})
    >>> aggregate(r).table[["kind", "label"]]
                 kind  label
    key
    a         correct    1.0
    b        disputed    NaN
    c    cannot_judge    NaN
    >>> aggregate(r, "latest").table.loc["b", "kind"]
    'incorrect'
    """
    if rule not in AGGREGATIONS:
        raise InputError(f"The aggregation {rule!r} is not one of {', '.join(AGGREGATIONS)}.")
    ordered = records.assign(_order=np.arange(len(records))).sort_values(["time", "_order"], kind="stable")
    if rule == "latest":
        latest = ordered.drop_duplicates("key", keep="last").set_index("key")["verdict"]
        counts = ordered.groupby("key")["annotator"].nunique()
        kinds = latest.map({1: "correct", 0: "incorrect", CANNOT_JUDGE: "cannot_judge"})
        return _outcomes(kinds, counts.reindex(kinds.index), rule)
    votes = ordered.drop_duplicates(["key", "annotator"], keep="last")
    counts = votes.groupby("key")["annotator"].size()
    kinds = _majority(votes) if rule == "majority" else _dawid_skene(votes)
    return _outcomes(kinds, counts.reindex(kinds.index), rule)


def _outcomes(kinds: pd.Series, annotators: pd.Series, rule: str) -> Outcomes:
    label = kinds.map({"correct": 1.0, "incorrect": 0.0}).astype(np.float64)
    table = pd.DataFrame({"kind": kinds.astype(object), "label": label, "annotators": annotators.astype(np.int64)})
    table.index.name = "key"
    return Outcomes(table.sort_index(), rule)


def _majority(votes: pd.DataFrame) -> pd.Series:
    """The plurality verdict of each key; a tie between the most frequent verdicts is disputed."""
    tally = votes.groupby(["key", "verdict"]).size().unstack(fill_value=0)
    top = tally.to_numpy().max(axis=1, keepdims=True)
    winners = tally.to_numpy() == top
    names = np.array([{1: "correct", 0: "incorrect", CANNOT_JUDGE: "cannot_judge"}[v] for v in tally.columns], dtype=object)
    kinds = np.where(winners.sum(axis=1) > 1, "disputed", names[winners.argmax(axis=1)])
    return pd.Series(kinds, index=tally.index, dtype=object)


def _dawid_skene(votes: pd.DataFrame) -> pd.Series:
    annotators = votes["annotator"].nunique()
    if annotators < _MIN_DAWID_SKENE_ANNOTATORS:
        raise InputError(
            f"Dawid-Skene needs at least {_MIN_DAWID_SKENE_ANNOTATORS} annotators; the records have {annotators}. "
            "Use --aggregate majority."
        )
    judged = votes[votes["verdict"] != CANNOT_JUDGE]
    keys = pd.Index(votes["key"].unique())
    kinds = pd.Series("cannot_judge", index=keys, dtype=object)
    if len(judged):
        posterior = dawid_skene_posterior(judged["key"], judged["annotator"], judged["verdict"].to_numpy())
        p = posterior.to_numpy()
        kinds[posterior.index] = np.where(np.isclose(p, 0.5, rtol=0, atol=1e-12), "disputed",
                                          np.where(p > 0.5, "correct", "incorrect"))
    return kinds


def dawid_skene_posterior(keys, annotators, verdicts, *, max_iter: int = 200, tol: float = 1e-9) -> pd.Series:
    """P(correct) of each key under the binary Dawid-Skene model, fitted by EM.

    Each annotator j has a sensitivity a_j = P(says 1 | correct) and a specificity
    b_j = P(says 0 | incorrect); items are correct with prevalence pi. EM starts from the vote
    fractions (soft majority), as Dawid and Skene (1979) do. Probabilities are clipped to
    [1e-6, 1 - 1e-6] so that a perfect annotator does not make the likelihood degenerate.
    """
    key_codes, key_index = pd.factorize(pd.Series(keys), sort=True)
    ann_codes, ann_index = pd.factorize(pd.Series(annotators), sort=True)
    v = np.asarray(verdicts, dtype=np.float64)
    n_keys, n_ann = len(key_index), len(ann_index)
    per_key = np.bincount(key_codes, minlength=n_keys)
    t = np.bincount(key_codes, weights=v, minlength=n_keys) / per_key
    clip = lambda x: np.clip(x, 1e-6, 1 - 1e-6)  # noqa: E731
    for _ in range(max_iter):
        tv = t[key_codes]
        pi = clip(t.mean())
        sens = clip(np.bincount(ann_codes, tv * v, n_ann) / np.maximum(np.bincount(ann_codes, tv, n_ann), 1e-12))
        spec = clip(np.bincount(ann_codes, (1 - tv) * (1 - v), n_ann) / np.maximum(np.bincount(ann_codes, 1 - tv, n_ann), 1e-12))
        a, b = sens[ann_codes], spec[ann_codes]
        log1 = np.log(pi) + np.bincount(key_codes, v * np.log(a) + (1 - v) * np.log1p(-a), n_keys)
        log0 = np.log1p(-pi) + np.bincount(key_codes, (1 - v) * np.log(b) + v * np.log1p(-b), n_keys)
        new = 1.0 / (1.0 + np.exp(log0 - log1))
        done = np.max(np.abs(new - t)) < tol
        t = new
        if done:
            break
    return pd.Series(t, index=key_index)


@dataclass(frozen=True)
class Agreement:
    """Inter-annotator agreement over the keys that at least two annotators judged."""

    alpha: float | None  # Krippendorff's alpha (nominal; cannot judge is a category); None: undefined
    annotators: int
    pairable_keys: int  # keys with verdicts from two or more annotators

    def to_dict(self) -> dict:
        return {"krippendorff_alpha": self.alpha, "annotators": self.annotators, "pairable_keys": self.pairable_keys}


def agreement(records: pd.DataFrame) -> Agreement:
    """Krippendorff's alpha (nominal) of each annotator's latest verdict per key.

    Undefined (None) with fewer than two annotators on any key, or when every verdict is the same.

    Examples
    --------
    >>> r = pd.DataFrame({"key": list("abcdabcd"), "verdict": [1, 1, 0, 0, 1, 0, 0, 0],
    ...                   "annotator": list("xxxxyyyy"), "time": pd.to_datetime(range(8))})
    >>> round(agreement(r).alpha, 4)  # 1 - (2/8) / (30/56)
    0.5333
    """
    import krippendorff

    ordered = records.assign(_order=np.arange(len(records))).sort_values(["time", "_order"], kind="stable")
    votes = ordered.drop_duplicates(["key", "annotator"], keep="last")
    annotators = int(votes["annotator"].nunique())
    per_key = votes.groupby("key")["annotator"].size()
    pairable = int((per_key >= 2).sum())
    alpha = None
    if pairable and votes["verdict"].nunique() > 1:
        matrix = votes.pivot(index="annotator", columns="key", values="verdict").to_numpy(dtype=np.float64)
        value = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
        alpha = value if np.isfinite(value) else None  # no spread among the pairable verdicts
    return Agreement(alpha=alpha, annotators=annotators, pairable_keys=pairable)
