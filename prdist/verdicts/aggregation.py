"""Verdicts of annotators and how several of them make one label per item (pure, no I/O).

A verdict is correct (1), incorrect (0) or *cannot judge* (:data:`CANNOT_JUDGE`, stored as -1).
A label record is (key, verdict, annotator, time); an item may have many. :func:`aggregate`
turns the records of each key into one outcome by a stated rule:

``majority`` (default)
    the plurality of each annotator's latest correct / incorrect verdict; a tie is *disputed*.
``latest``
    the most recent record, whoever gave it (one annotator correcting earlier imports), cannot
    judge included.
``dawid-skene``
    the Dawid-Skene estimate (one confusion matrix per annotator, fitted by EM) over every
    annotator's latest correct / incorrect verdict on every key of the records it is given (for a
    label store: the whole store, so that a key's verdict does not depend on which keys a command
    asks about). The model learns an annotator's accuracy from keys others judged too, so it needs
    at least one key judged correct / incorrect by three or more annotators (three verdicts on an
    item identify the binary model); without one it is refused. A posterior of exactly one half is
    disputed.

**Cannot judge in the vote.** "Cannot judge" says that an annotator could not tell, not that the
item is neither correct nor incorrect, so it never votes against a verdict: under ``majority`` and
``dawid-skene`` a key with any correct / incorrect verdict (each annotator's latest) is decided
among those, and a key is *cannot judge* only when every annotator's latest verdict is cannot
judge. Agreement (:func:`agreement`) likewise treats it as a missing value.

For the bounds, an outcome becomes a label: 1 or 0 when known, NaN (unknown: counted as 0 by lower
bounds and 1 by upper bounds) when cannot judge, disputed or missing. The kinds stay counted apart,
because a cannot-judge item is never requested again while a disputed or missing one is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prdist.errors import InputError
from prdist.verdicts.choices import AGGREGATIONS
from prdist.verdicts.kinds import KINDS, Agreement, kinds_of

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
    if rule == "latest":
        ordered = records.assign(_order=np.arange(len(records))).sort_values(["time", "_order"], kind="stable")
        latest = ordered.drop_duplicates("key", keep="last").set_index("key")["verdict"]
        counts = ordered.groupby("key")["annotator"].nunique()
        kinds = latest.map({1: "correct", 0: "incorrect", CANNOT_JUDGE: "cannot_judge"})
        return _outcomes(kinds, counts.reindex(kinds.index), rule)
    votes = _latest_per_annotator(records)
    counts = votes.groupby("key")["annotator"].size()
    kinds = _majority(votes) if rule == "majority" else _dawid_skene(votes)
    return _outcomes(kinds, counts.reindex(kinds.index), rule)


def _outcomes(kinds: pd.Series, annotators: pd.Series, rule: str) -> Outcomes:
    label = kinds.map({"correct": 1.0, "incorrect": 0.0}).astype(np.float64)
    table = pd.DataFrame({"kind": kinds.astype(object), "label": label, "annotators": annotators.astype(np.int64)})
    table.index.name = "key"
    return Outcomes(table.sort_index(), rule)


def _majority(votes: pd.DataFrame) -> pd.Series:
    """The plurality of each key's correct / incorrect votes (a tie is disputed); cannot judge
    when every vote is cannot judge."""
    kinds = pd.Series("cannot_judge", index=pd.Index(votes["key"].unique()), dtype=object)
    judged = votes[votes["verdict"].to_numpy() != CANNOT_JUDGE]
    if len(judged):
        yes = judged.groupby("key")["verdict"].agg(["sum", "size"])
        ones, zeros = yes["sum"].to_numpy(), (yes["size"] - yes["sum"]).to_numpy()
        kinds[yes.index] = np.where(ones == zeros, "disputed", np.where(ones > zeros, "correct", "incorrect"))
    return kinds


def _dawid_skene(votes: pd.DataFrame) -> pd.Series:
    judged = votes[votes["verdict"] != CANNOT_JUDGE]
    most = int(judged.groupby("key")["annotator"].size().max()) if len(judged) else 0
    if most < _MIN_DAWID_SKENE_ANNOTATORS:
        raise InputError(
            f"Dawid-Skene needs a key judged correct/incorrect by at least {_MIN_DAWID_SKENE_ANNOTATORS} annotators "
            f"to learn their accuracies; the most any key has is {most}. Use --aggregate majority."
        )
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
    v = np.asarray(verdicts, dtype=np.int64)
    n_keys, n_ann = len(key_index), len(ann_index)
    # Each vote is one of 2 x annotators cells (annotator, verdict): the M-step sums t per cell and
    # the E-step looks each vote's log-likelihood up in a table of cells, one pass over the votes each.
    cell = 2 * ann_codes + v
    per_cell = np.bincount(cell, minlength=2 * n_ann).reshape(n_ann, 2)
    t = np.bincount(key_codes, weights=v, minlength=n_keys) / np.bincount(key_codes, minlength=n_keys)
    clip = lambda x: np.clip(x, 1e-6, 1 - 1e-6)  # noqa: E731
    for _ in range(max_iter):
        pi = clip(t.mean())
        said_if_1 = np.bincount(cell, t[key_codes], 2 * n_ann).reshape(n_ann, 2)  # sum of t per cell
        said_if_0 = per_cell - said_if_1  # sum of 1 - t per cell
        sens = clip(said_if_1[:, 1] / np.maximum(said_if_1.sum(axis=1), 1e-12))
        spec = clip(said_if_0[:, 0] / np.maximum(said_if_0.sum(axis=1), 1e-12))
        given_1 = np.column_stack([np.log1p(-sens), np.log(sens)]).ravel()  # log P(verdict | correct) per cell
        given_0 = np.column_stack([np.log(spec), np.log1p(-spec)]).ravel()  # log P(verdict | incorrect)
        log1 = np.log(pi) + np.bincount(key_codes, given_1[cell], n_keys)
        log0 = np.log1p(-pi) + np.bincount(key_codes, given_0[cell], n_keys)
        new = 1.0 / (1.0 + np.exp(log0 - log1))
        done = np.max(np.abs(new - t)) < tol
        t = new
        if done:
            break
    return pd.Series(t, index=key_index)


def agreement(records: pd.DataFrame) -> Agreement:
    """Krippendorff's alpha (nominal) of each annotator's latest verdict per key.

    "Cannot judge" is a missing value, as Krippendorff (2011) treats a coder who does not code a
    unit: it says nothing about which category the item is in, so annotators who agree on every
    correct / incorrect verdict have alpha 1 whatever their cannot-judge verdicts. Computed from the
    per-key counts of correct and incorrect verdicts (the package's ``value_counts``), so its memory
    grows with the keys, not keys x annotators. Undefined (None) when no key has correct / incorrect
    verdicts from two annotators, or when all of those verdicts are the same. ``annotators``
    counts everyone who gave a verdict, cannot judge included.

    Examples
    --------
    >>> r = pd.DataFrame({"key": list("abcdabcd"), "verdict": [1, 1, 0, 0, 1, 0, 0, 0],
    ...                   "annotator": list("xxxxyyyy"), "time": pd.to_datetime(range(8))})
    >>> round(agreement(r).alpha, 4)  # 1 - (2/8) / (30/56)
    0.5333
    >>> r.loc[5, "verdict"] = CANNOT_JUDGE  # y could not judge b, where it disagreed
    >>> agreement(r).alpha
    1.0
    """
    import krippendorff

    votes = _latest_per_annotator(records)
    annotators = int(votes["annotator"].nunique())
    judged = votes[votes["verdict"].to_numpy() != CANNOT_JUDGE]
    counts = judged.groupby("key")["verdict"].agg(["sum", "size"])
    counts = counts[counts["size"].to_numpy() >= 2]
    ones = counts["sum"].to_numpy(dtype=np.float64)
    value_counts = np.column_stack([counts["size"].to_numpy(dtype=np.float64) - ones, ones])
    alpha = None
    if len(counts) and value_counts.sum(axis=0).min() > 0:
        alpha = float(krippendorff.alpha(value_counts=value_counts, level_of_measurement="nominal"))
    return Agreement(alpha=alpha, annotators=annotators, pairable_keys=len(counts))


def _latest_per_annotator(records: pd.DataFrame) -> pd.DataFrame:
    """Each annotator's latest record per key, records taken in ``time`` order (ties: as given)."""
    ordered = records.assign(_order=np.arange(len(records))).sort_values(["time", "_order"], kind="stable")
    return ordered.drop_duplicates(["key", "annotator"], keep="last")
