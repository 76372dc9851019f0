"""The exact precision of a simulated resource at given ranks: counted, not sorted.

In a simulation the resource carries its truth (an oracle label column), and a run records the
exact precision p(r) = y(r) / r beside the bounds, at the ranks of the bounds table. y(r), the
positives among the top r items, needs no sort: the items at those ranks (the *thresholds*) are
known, mostly among the run's extracted items, and one pass over the score and label columns
counts the positives between consecutive thresholds.

1. Thresholds: the items at the wanted ranks, taken from the extracted items where they are,
   found by :func:`~prdist.dataflow.ranks.extract.extract` (the sort-free selection, or a read where
   they are on sorted input) where not. Their distinct
   score ordinals O_0 < O_1 < ... (rank order) cut the resource into buckets: 2u holds the items
   strictly between O_{u-1} and O_u, 2u+1 the items whose score is that of O_u.
2. A counting pass (one task per partition, merged by a tree): the bucket of every item, and per
   bucket the items, the positives and the unknown (null) labels. Most items are bucketed by one
   lookup in a table of equal score slots; only those in a slot that holds a threshold are
   binary-searched.
3. A threshold that is the last item of its score (always, with continuous scores) has
   y = the positives of every bucket up to its own. Inside a longer run of tied scores the rank
   order is by key hash (:mod:`prdist.ranking`): only then does a second pass read the keys of
   the items of those scores and count them by the thresholds they precede.

y at a threshold is unknown (NaN, as a running sum of the labels in rank order makes it) when an
unknown label lies at or above it. Labels must be 0, 1 or null.

DESIGN. Runs once, in the user's session: :func:`exact_precision` (the thresholds, the reading of
the counts). Runs many times, in tasks through :mod:`prdist.dataflow.engine.executor`:
:func:`_count_task` and :func:`_tie_task`. Memory: a task holds one row group and the counts of
2m+1 buckets for m thresholds; the driver the thresholds and the counts: independent of n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prdist.frames.columns import arrow_numpy, arrow_table, column
from prdist.errors import DataError
from prdist.ranking import as_key_array, descending_ordinal, key_hash
from prdist.dataflow.engine.executor import map_reduce
from prdist.dataflow.ranks.extract import extract
from prdist.dataflow.io.parquet import Resource, displays
from prdist.dataflow.io.parquet_tasks import keys_of, row_groups_of, scores_of

__all__ = ["exact_precision"]

#: Equal score slots of the bucketing table: an item in a slot without a threshold is bucketed by
#: one lookup (a 256 KiB table, cache-resident); the others are binary-searched.
SLOTS = 1 << 16


def _slots(scores: np.ndarray, top: float, scale: float) -> np.ndarray:
    """Slot 1 + trunc((top - score) * scale), clipped to [0, SLOTS - 1]: non-increasing in the
    score (every step is monotone), which is all the bucketing relies on."""
    if scale == 0.0:  # one threshold score (or a range too wide for floats): every item is searched
        return np.ones(scores.shape, dtype=np.int64)
    with np.errstate(over="ignore"):
        slots = np.subtract(top, scores)
        slots *= scale
    np.clip(slots, -1.0, SLOTS - 2.0, out=slots)
    out = slots.astype(np.int64)
    out += 1
    return out


@dataclass(frozen=True, eq=False)
class _Thresholds:
    """The items at the wanted ranks, in rank order, as every counting task needs them.

    ``ordinals``: their distinct score ordinals, ascending; ``group``: each threshold's index
    there; ``last``: per distinct ordinal, the index of its last threshold. The slot table:
    ``first[k]`` distinct ordinals lie in slots before k, ``busy[k]`` says whether slot k holds one.
    """

    ranks: np.ndarray
    ordinal: np.ndarray
    hash: np.ndarray
    key: np.ndarray
    ordinals: np.ndarray
    group: np.ndarray
    last: np.ndarray
    top: float
    scale: float
    first: np.ndarray
    busy: np.ndarray

    @classmethod
    def of(cls, ranks: np.ndarray, keys: np.ndarray, scores: np.ndarray) -> _Thresholds:
        ordinal = descending_ordinal(scores)
        if np.any(ordinal[1:] < ordinal[:-1]):
            raise RuntimeError("the items at the wanted ranks are not in rank order")  # an internal bug
        ordinals, index, group = np.unique(ordinal, return_index=True, return_inverse=True)
        distinct = scores[index]
        top = float(distinct[0])
        width = top - float(distinct[-1])
        # SLOTS - 3 slots over the thresholds' score range, from slot 1: slot 0 takes the scores
        # above it and slot SLOTS - 1 those below, and neither holds a threshold.
        scale = (SLOTS - 3) / width if 0 < width < np.inf else 0.0
        scale = scale if np.isfinite(scale) else 0.0  # a subnormal width
        taken = _slots(distinct, top, scale)
        busy = np.zeros(SLOTS, dtype=bool)
        busy[taken] = True
        first = np.searchsorted(taken, np.arange(SLOTS), side="left").astype(np.int32)
        last = np.searchsorted(group, np.arange(ordinals.size), side="right") - 1
        keys = as_key_array(keys)
        return cls(np.asarray(ranks, dtype=np.int64), ordinal, key_hash(keys), keys, ordinals, group.astype(np.int64),
                   last, top, scale, first, busy)

    @property
    def buckets(self) -> int:
        return 2 * self.ordinals.size + 1

    def bucket(self, scores: np.ndarray) -> np.ndarray:
        """Bucket of every score: 2u strictly between distinct ordinals u-1 and u, 2u+1 equal to u."""
        slot = _slots(scores, self.top, self.scale)
        # In a slot without a threshold, every distinct ordinal of an earlier slot lies before.
        bucket = self.first[slot].astype(np.int64)
        bucket *= 2
        near = np.flatnonzero(self.busy[slot])
        if near.size:
            ordinal = descending_ordinal(scores[near])
            j = np.searchsorted(self.ordinals, ordinal, side="left")
            equal = self.ordinals[np.minimum(j, self.ordinals.size - 1)] == ordinal
            bucket[near] = 2 * j + equal
        return bucket

    def before(self, ordinals: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """How many thresholds stand strictly before each item in rank order (ordinal, key hash, key)."""
        m = self.ranks.size
        keys = as_key_array(keys)
        flag = np.concatenate((np.ones(m, dtype=np.int8), np.zeros(keys.size, dtype=np.int8)))
        # An item equal to a threshold (the threshold itself) sorts first: it is not before itself.
        order = np.lexsort((flag, np.concatenate((self.key, keys)), np.concatenate((self.hash, key_hash(keys))),
                            np.concatenate((self.ordinal, ordinals))))
        is_threshold = order < m
        seen = np.cumsum(is_threshold)
        out = np.empty(keys.size, dtype=np.int64)
        out[order[~is_threshold] - m] = seen[~is_threshold]
        return out


def _label_masks(table, label: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(positive, unknown) masks of a label column; DataError for a value other than 0, 1 or null."""
    values = np.asarray(arrow_numpy(table.column(label)), dtype=np.float64)  # null -> NaN
    positive = values == 1
    unknown = np.isnan(values)
    bad = ~(positive | unknown | (values == 0))
    if bad.any():
        raise DataError(
            f"The label column {label!r} holds {values[bad][0]} in {where}; labels must be 0 or 1. "
            "Map the labels to 0/1 first."
        )
    return positive, unknown


def _counts(buckets: np.ndarray, positive: np.ndarray, unknown: np.ndarray, size: int) -> np.ndarray:
    """Items, positives and unknown labels per bucket: shape (3, size)."""
    return np.stack([np.bincount(buckets, minlength=size), np.bincount(buckets[positive], minlength=size),
                     np.bincount(buckets[unknown], minlength=size)])


def _count_task(partition, fs, columns, thresholds: _Thresholds, names: dict) -> np.ndarray:
    score, label = columns
    total = np.zeros((3, thresholds.buckets), dtype=np.int64)
    for group in row_groups_of(fs, partition, names):
        table = group.read([score, label])
        buckets = thresholds.bucket(scores_of(table, score, group.where))
        total += _counts(buckets, *_label_masks(table, label, group.where), thresholds.buckets)
    return total


def _tie_task(partition, fs, columns, thresholds: _Thresholds, open_: np.ndarray, names: dict) -> np.ndarray:
    """Counts by "thresholds before the item" of the items whose score is an open distinct ordinal,
    each up to the last threshold of its score."""
    score, label, key = columns
    total = np.zeros((3, thresholds.ranks.size), dtype=np.int64)
    for group in row_groups_of(fs, partition, names):
        table = group.read([score, label])
        scores = scores_of(table, score, group.where)
        buckets = thresholds.bucket(scores)
        tied = np.flatnonzero((buckets & 1).astype(bool) & open_[buckets >> 1])
        if tied.size == 0:
            continue
        keys = keys_of(group.read([key]), key, group.where)[tied]
        before = thresholds.before(descending_ordinal(scores[tied]), keys)
        counted = before <= thresholds.last[buckets[tied] >> 1]  # after its score's last threshold: not needed
        positive, unknown = _label_masks(table, label, group.where)
        total += _counts(before[counted], positive[tied][counted], unknown[tied][counted], thresholds.ranks.size)
    return total


def _sum(*parts) -> np.ndarray:
    return np.sum(parts, axis=0)


def exact_precision(resource: Resource, ranks, items=None, *, client=None) -> pa.Table:
    """The exact precision at ``ranks`` from the resource's label column (simulations).

    Parameters
    ----------
    resource : Resource
        Opened with its ``label`` column.
    ranks : array-like of int
        1-based ranks.
    items : pyarrow.Table or pandas.DataFrame, optional
        Items already extracted (``rank``, ``key``, ``score``): the thresholds among them are not
        searched again.
    client : distributed.Client, optional
        Run the passes on this cluster; default in-process.

    Returns
    -------
    pyarrow.Table
        ``rank`` (int64, as given) and ``precision`` (float64, NaN where a label at or above the
        rank is unknown): exactly a running sum of the labels in rank order divided by the rank.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    wanted = np.unique(ranks)
    keys, scores = _items_at(resource, wanted, items, client)
    thresholds = _Thresholds.of(wanted, keys, scores)
    partitions = resource.partitions()
    names = displays(resource)
    items_n, positives, unknown = map_reduce(client, _count_task, _sum, partitions, fs=resource.fs,
                                             columns=(resource.score, resource.label), names=names,
                                             broadcast={"thresholds": thresholds})
    u = thresholds.group
    equal = 2 * u + 1
    last_rank = np.cumsum(items_n)[equal]
    if np.any(wanted < last_rank - items_n[equal] + 1) or np.any(wanted > last_rank):
        raise _changed(resource)
    y, z = np.cumsum(positives)[equal], np.cumsum(unknown)[equal]
    inside = wanted < last_rank  # the run of its score goes on after it: ordered by key hash
    if inside.any():
        before = 2 * u[inside]  # the buckets before the run of the threshold's score
        ranked, y_run, z_run = _within_runs(resource, thresholds, inside, partitions, names, client)
        if np.any(np.cumsum(items_n)[before] + ranked != wanted[inside]):
            raise _changed(resource)
        y[inside] = np.cumsum(positives)[before] + y_run
        z[inside] = np.cumsum(unknown)[before] + z_run
    precision = np.where(z > 0, np.nan, y / wanted)
    return arrow_table({"rank": ranks, "precision": precision[np.searchsorted(wanted, ranks)]})


def _within_runs(resource: Resource, thresholds: _Thresholds, inside: np.ndarray, partitions, names, client):
    """For the thresholds ``inside`` a longer run of their score: the items, positives and unknown
    labels of that run at or before each (the second pass, which reads the keys of those runs)."""
    u = thresholds.group
    open_ = np.zeros(thresholds.ordinals.size + 1, dtype=bool)  # + 1: the bucket after every threshold
    open_[u[inside]] = True
    counts = map_reduce(client, _tie_task, _sum, partitions, fs=resource.fs,
                        columns=(resource.score, resource.label, resource.key), names=names,
                        broadcast={"thresholds": thresholds, "open_": open_})
    start = np.searchsorted(u, u[inside], side="left")  # the first threshold of each one's run
    at = np.flatnonzero(inside)
    running = np.concatenate((np.zeros((3, 1), dtype=np.int64), np.cumsum(counts, axis=1)), axis=1)
    return tuple(running[:, at + 1] - running[:, start])


def _changed(resource: Resource) -> DataError:
    return DataError(f"{resource.url} changed while it was being read (the counts disagree with the items "
                     "found at the ranks). Run again on data that stays put.")


def _items_at(resource: Resource, wanted: np.ndarray, items, client) -> tuple[np.ndarray, np.ndarray]:
    """Keys and scores of the items at the ``wanted`` ranks (sorted, distinct): from ``items``
    where they are, from the resource where not."""
    keys = np.empty(wanted.size, dtype=object)
    scores = np.empty(wanted.size, dtype=np.float64)
    missing = np.ones(wanted.size, dtype=bool)
    if items is not None and len(items):
        have = column(items, "rank", np.int64)
        order = np.argsort(have, kind="stable")
        at = order[np.minimum(np.searchsorted(have, wanted, sorter=order), have.size - 1)]
        missing = have[at] != wanted
        keys[~missing] = column(items, "key")[at[~missing]]
        scores[~missing] = column(items, "score", np.float64)[at[~missing]]
    if missing.any():
        found = extract(resource, wanted[missing], client=client, columns=[]).items
        keys[missing] = column(found, "key")
        scores[missing] = column(found, "score", np.float64)
    return as_key_array(keys.astype(np.int64) if resource.key_kind == "int" else keys), scores
