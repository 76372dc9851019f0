"""The notebook surface: one object that holds a ranked resource, its plan and its labels.

``prdist.evaluate(scores)`` ranks the items (descending score, ties broken by the key hash of
:mod:`prdist.ranking`), plans the PAULA annotations and tells which items to label
(``to_label``); ``with_labels(mapping)`` returns a new :class:`Evaluation` holding the verdicts
given so far, whose ``bounds``, ``cutoffs``, ``plot()`` and HTML view are computed from the core
(:func:`prdist.paula_bounds`, :func:`prdist.paula.derived.deepest_rank`). Nothing here reads files or
starts a cluster: for resources that do not fit in memory use ``prdist run``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from prdist.paula import derived
from prdist.verdicts import aggregation as verdicts
from prdist._validation import as_label_array, check_confidence
from prdist.paula.bounds import PaulaBounds, paula_bounds
from prdist.errors import DataError, InputError, ParameterError
from prdist.params import EPS, WINDOW
from prdist.paula.plan import PaulaPlan, plan_paula
from prdist.render.plotting import plot_bounds
from prdist.ranking import as_key_array, rank_order
from prdist.render.report import render_report, render_summary

__all__ = ["Evaluation", "evaluate", "verdict_labels"]

_OWNER = "evaluate"


def verdict_labels(mapping) -> pd.Series:
    """Verdicts keyed by item key, as labels: 1.0 correct, 0.0 incorrect, NaN cannot judge.

    The labels of the bounds (NaN: unknown), made from the verdict codes of
    :func:`prdist.verdicts.aggregation.parse_verdicts` (1, 0, -1 = cannot judge). Accepts a dict or a pandas Series whose values are the verdict words of label files, through
    the same parser (:func:`prdist.verdicts.aggregation.parse_verdicts`, case-insensitive): 1/0, True/False,
    yes/no, correct/incorrect, accept/reject, and skip/unsure/cannot judge/ignore (-1) for an item
    the annotator cannot judge, which is then never requested again. ``None``, NaN and blank text
    mean "no verdict yet" (a label file's empty cell) and are left out.

    >>> verdict_labels({"a": 1, "b": False, "c": "skip", "d": None, "e": "Correct", "f": "cannot judge"}).to_dict()
    {'a': 1.0, 'b': 0.0, 'c': nan, 'e': 1.0, 'f': nan}
    """
    if isinstance(mapping, pd.Series):
        series = mapping
    elif isinstance(mapping, dict):
        series = pd.Series(mapping, dtype=object)
    else:
        raise DataError(
            f"Labels for with_labels must be a dict or a pandas Series (key -> 1, 0, 'correct', 'skip', ...); "
            f"got {type(mapping).__name__}. Build one with dict(zip(keys, labels))."
        )
    if series.index.has_duplicates:
        key = series.index[series.index.duplicated()][0]
        raise DataError(f"The labels name key {key!r} twice; give one verdict per key.")
    given = series[~series.map(_no_verdict).to_numpy(dtype=bool)]
    try:
        codes = verdicts.parse_verdicts(given.to_numpy(dtype=object), origin="with_labels")
    except InputError:
        key, value = next((k, v) for k, v in given.items() if not _is_verdict(v))
        raise DataError(
            f"The verdict of key {key!r} is {value!r}; a verdict is 1/0, True/False, yes/no, correct/incorrect, "
            "accept/reject, or skip/unsure/cannot judge/ignore (cannot judge). Map it first."
        ) from None
    return pd.Series(np.where(codes == verdicts.CANNOT_JUDGE, np.nan, codes.astype(np.float64)), index=given.index,
                     dtype=np.float64)


def _no_verdict(value) -> bool:
    """None, NaN (pandas' missing values) and blank text: no verdict yet."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or (np.ndim(value) == 0 and bool(pd.isna(value)))


def _is_verdict(value) -> bool:
    try:
        verdicts.parse_verdicts([value], origin="with_labels")
    except InputError:
        return False
    return True


@dataclass(frozen=True, eq=False)
class Evaluation:
    """A ranked resource in memory, its PAULA plan and the verdicts given so far.

    Built by :func:`evaluate`; immutable (:meth:`with_labels` returns a new one).

    Attributes
    ----------
    scores, keys : ndarray
        Scores and keys in rank order (rank r at position r - 1).
    plan : PaulaPlan
        The planned ranks.
    verdicts : pandas.Series
        Verdicts by key: 1.0 correct, 0.0 incorrect, NaN cannot judge.
    confidence : float or None
        Confidence level of the bounds: they hold at every rank at once with this probability
        when the verdicts are independent draws from a rate that does not rise with rank (the
        probability is over those draws, not annotator error: they bound the verdicts'
        precision). None for the paper's deterministic bounds.
    truth : ndarray or None
        Labels of every item in rank order, when ``evaluate`` was given a complete label array
        (simulations); drawn as the exact precision function.
    unmatched : int
        Verdicts given for keys that are not items of the resource (ignored).
    """

    scores: np.ndarray
    keys: np.ndarray
    plan: PaulaPlan
    verdicts: pd.Series
    confidence: float | None
    truth: np.ndarray | None = None
    unmatched: int = 0

    @property
    def n(self) -> int:
        """Number of items."""
        return self.plan.n

    @cached_property
    def planned(self) -> pd.DataFrame:
        """Every planned item, by rank: rank, key, score, label (NaN: unknown or cannot judge)."""
        ranks = self.plan.ranks
        keys = self.keys[ranks - 1]
        return pd.DataFrame(
            {"rank": ranks, "key": keys, "score": self.scores[ranks - 1], "label": self.verdicts.reindex(keys).to_numpy()}
        )

    @property
    def to_label(self) -> pd.DataFrame:
        """The planned items without a verdict, by rank: rank, key, score."""
        planned = self.planned
        waiting = ~planned["key"].isin(self.verdicts.index).to_numpy()
        return planned.loc[waiting, ["rank", "key", "score"]].reset_index(drop=True)

    @property
    def labels(self) -> np.ndarray:
        """Labels aligned with ``plan.ranks`` (NaN: unknown or cannot judge)."""
        return self.planned["label"].to_numpy(dtype=np.float64)

    @cached_property
    def bounds(self) -> PaulaBounds:
        """The PAULA bounds from the verdicts given so far (unknown labels count against them)."""
        return paula_bounds(self.plan, self.labels, confidence=self.confidence)

    @cached_property
    def cutoffs(self) -> pd.DataFrame:
        """The deepest rank whose precision is guaranteed to reach each target.

        Columns target, rank (0: no rank is guaranteed), score (the score at that rank: keeping
        the items scored at least that high keeps the guarantee, ties aside).
        """
        ranks = [derived.deepest_rank(self.bounds, t) for t in derived.TARGETS]
        scores = [float(self.scores[r - 1]) if r > 0 else np.nan for r in ranks]
        return pd.DataFrame({"target": derived.TARGETS, "rank": np.asarray(ranks, dtype=np.int64), "score": scores})

    @cached_property
    def counts(self) -> dict:
        """Planned labels, in the run manifest's terms: annotations, labeled, unknown (awaiting or
        cannot judge), cannot_judge, awaiting (no verdict yet)."""
        label = self.planned["label"].to_numpy(dtype=np.float64)
        awaiting = len(self.to_label)
        labeled = int(np.isfinite(label).sum())
        unknown = self.plan.size - labeled
        return {"annotations": self.plan.size, "labeled": labeled, "unknown": unknown,
                "cannot_judge": unknown - awaiting, "awaiting": awaiting}

    def with_labels(self, mapping) -> Evaluation:
        """A new Evaluation with these verdicts added (a key's newest verdict wins).

        Parameters
        ----------
        mapping : dict or pandas.Series
            Item key -> a verdict in the words label files use (1/0, True/False, "correct",
            "incorrect", "yes", "no", "skip", "cannot judge", ...: :func:`verdict_labels`). None,
            NaN and blank text are ignored. Keys that are not items of the resource are counted in
            ``unmatched`` and otherwise ignored (a label file often covers other systems too);
            a mapping none of whose keys is an item is refused (DataError).
        """
        new = verdict_labels(mapping)
        matched = new.index.isin(pd.Index(self.keys))
        if new.size and not matched.any():
            # Not one key in common: the keys are spelled otherwise (text against integers, another
            # separator), which silently ignoring them would hide.
            raise DataError(
                f"None of the {new.size} labeled keys is an item of this evaluation (labels use keys like "
                f"{new.index[0]!r}, items like {self.keys[0]!r}); build the label keys as the items' keys."
            )
        verdicts = pd.concat([self.verdicts[~self.verdicts.index.isin(new.index)], new[matched]])
        return replace(self, verdicts=verdicts, unmatched=self.unmatched + int((~matched).sum()))

    def exact(self) -> pd.DataFrame | None:
        """The exact precision function (rank, precision) when every item's label is known."""
        if self.truth is None:
            return None
        ranks = np.arange(1, self.n + 1, dtype=np.int64)
        return pd.DataFrame({"rank": ranks, "precision": np.cumsum(self.truth) / ranks})

    def plot(self, ax=None):
        """Draw the bounds on p(r) against the rank (log scale); see :func:`prdist.render.plotting.plot_bounds`.

        Returns the matplotlib Axes. Needs matplotlib (``pip install 'prdist[plot]'``).
        """
        return plot_bounds(self.bounds, ax=ax, exact=self.exact())

    def report(self, title: str | None = None) -> str:
        """The full HTML report (as ``prdist run`` writes it): summary, precision and PR plots,
        cut-offs, labels and diagnostics, as one self-contained document to save or mail.

        >>> page = evaluate([0.9, 0.5, 0.1], [1, 1, 0]).report()
        >>> page.startswith("<!DOCTYPE html>"), page.count("<svg")
        (True, 2)
        """
        role, _ = self.plan.roles()
        plan = self.planned.assign(role=role)
        return render_report(manifest=self._manifest(), bounds=self.bounds.table(), plan=plan,
                             cutoffs=self.cutoffs, exact=self.exact(), title=title)

    def _repr_html_(self) -> str:
        return render_summary(self._manifest(), self.bounds.table(), exact=self.exact())

    def _manifest(self) -> dict:
        """What the report's summary shows, in the run manifest's terms."""
        params = {"method": "paula", "eps": self.plan.eps, "window": self.plan.window, "confidence": self.confidence}
        return {
            "n": self.n,
            "status": "awaiting labels" if self.counts["awaiting"] else "complete",
            "params": params,
            "counts": self.counts,
            "diagnostics": self.bounds.diagnostics.to_dict(),
            "ap_bounds": list(derived.average_precision_bounds(self.bounds)),
        }

    def __repr__(self) -> str:
        b = self.bounds.table().iloc[-1]
        c = self.counts
        return (
            f"Evaluation(n={self.n}, planned={c['annotations']}, labeled={c['labeled']}, awaiting={c['awaiting']}, "
            f"precision at n in [{b['precision_lower']:.3f}, {b['precision_upper']:.3f}])"
        )


def evaluate(scores, labels=None, *, keys=None, method="paula", eps=0.03, window=100, confidence=0.95) -> Evaluation:
    """Rank a resource held in memory, plan its annotations and bound its precision function.

    Parameters
    ----------
    scores : array-like, pandas Series or DataFrame column, shape (n,)
        Finite confidence scores; higher ranks first.
    labels : array-like of shape (n,) or dict or pandas Series, optional
        Either labels aligned with ``scores`` (1, 0, NaN = unknown; a simulation or a validation
        set) or a mapping key -> verdict as :meth:`Evaluation.with_labels` takes. A dict or a
        pandas Series is read as a mapping by key; pass ``series.to_numpy()`` for labels aligned
        by position.
    keys : array-like of int or str, shape (n,), optional
        Unique item keys; default the positions 0..n-1 (the index is ignored).
    method : {"paula"}, default="paula"
        The annotation plan.
    eps : float, default=0.03
        PAULA's grid spacing, in (0, 1] (see :func:`prdist.plan_paula`).
    window : int, default=100
        PAULA's window width Delta, >= 1 (see :func:`prdist.plan_paula`).
    confidence : float in (0, 1) or None, default 0.95
        Bounds that hold at every rank at once with this probability when the verdicts are
        independent draws from a rate that does not rise with rank; they bound the verdicts'
        precision, not the truth where verdicts err. None for the paper's deterministic bounds.

    Returns
    -------
    Evaluation

    Examples
    --------
    >>> ev = evaluate([0.9, 0.8, 0.7, 0.6], keys=["a", "b", "c", "d"])
    >>> ev.to_label["key"].tolist()
    ['a', 'b', 'c', 'd']
    >>> ev = ev.with_labels({"a": 1, "b": 1, "c": "skip", "d": 0})
    >>> ev.counts
    {'annotations': 4, 'labeled': 3, 'unknown': 1, 'cannot_judge': 1, 'awaiting': 0}
    >>> ev.bounds.lower(4).item(), ev.bounds.upper(4).item()
    (0.5, 0.75)
    """
    if method != "paula":
        raise ParameterError(
            f"The 'method' parameter of {_OWNER} must be 'paula'. Got {method!r} instead; the sampling "
            "baselines are prdist run --method random|stratified."
        )
    EPS.check(eps, owner=_OWNER)
    WINDOW.check(window, owner=_OWNER)
    if confidence is not None:
        confidence = check_confidence(confidence, owner=_OWNER)
    raw = np.asarray(scores.to_numpy() if isinstance(scores, pd.Series) else scores)
    if raw.ndim != 1 or raw.size == 0:
        raise DataError(f"The scores of {_OWNER} must be a non-empty 1-d array; got shape {raw.shape}.")
    try:
        s = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise DataError(f"The scores of {_OWNER} must be numbers; got dtype {raw.dtype}. Convert them to float first.") from None
    k = np.arange(s.size, dtype=np.int64) if keys is None else as_key_array(keys.to_numpy() if isinstance(keys, pd.Series) else keys)
    if k.shape != s.shape:
        raise DataError(f"{_OWNER} got {s.size} scores but {k.size} keys; give one key per score.")
    if pd.Index(k).has_duplicates:
        dup = pd.Index(k)[pd.Index(k).duplicated()][0]
        raise DataError(f"Item keys must be unique; {dup!r} occurs more than once. Deduplicate the items first.")
    order = rank_order(s, k)
    ev = Evaluation(
        scores=s[order], keys=k[order], plan=plan_paula(s.size, eps=eps, window=window),
        verdicts=pd.Series([], dtype=np.float64), confidence=confidence,
    )
    if labels is None:
        return ev
    if isinstance(labels, (dict, pd.Series)):
        return ev.with_labels(labels)
    return _with_label_array(ev, labels, order)


def _with_label_array(ev: Evaluation, labels, order: np.ndarray) -> Evaluation:
    """Labels aligned with the input scores: NaN unknown; complete labels are also the truth."""
    v = as_label_array(labels, owner=_OWNER)
    if v.size != order.size:
        raise DataError(f"{_OWNER} got {order.size} scores but {v.size} labels; align the labels with the scores.")
    ranked = v[order]
    known = ~np.isnan(ranked)
    verdicts = pd.Series(ranked[known], index=ev.keys[known], dtype=np.float64)
    return replace(ev, verdicts=verdicts, truth=ranked if known.all() else None)
