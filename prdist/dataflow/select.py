"""Items at given ranks of an unsorted resource, without a sort or a shuffle.

The rank order (:mod:`prdist.ranking`) is the lexicographic order of (descending score, key hash,
key). :func:`select_ranks` finds the items at the requested ranks by *radix selection* over that
order, in streaming passes over the resource:

1. Every score maps exactly to a 64-bit ordinal that ascends as the score descends
   (:func:`prdist.dataflow.resource.descending_ordinal`). Each requested rank lies in an
   interval of ordinals with a known count of items before it; at first one interval holds
   everything (from the row-group statistics, without reading data).
2. A histogram pass: every Dask task reads the score column of its row groups, one row group at
   a time, and counts the items of every open interval in ``2**bits`` equal bins (adjacent ranges
   of ordinals), noting the smallest and largest ordinal seen in each bin; a tree reduction
   merges them. Each requested rank moves to the bin that holds it, tightened to the ordinals
   seen there: its interval shrinks by at least ``2**bits`` and the count of items before it
   stays exact. (The tightening matters for discrete scores: a bin holding a single score value
   becomes a run of ties at once.)
3. An interval stops when it holds at most ``cap`` items, or only requested ranks. An interval
   reduced to a single score with more than ``cap`` items is a run of tied scores; inside it the
   rank order is by key hash, so the selection goes on in the same way over the 64-bit key hash
   of the items with that score (reading the key column too).
4. An extraction pass: every task returns only the items of the final intervals; the driver
   orders them by (ordinal, key hash, key) and reads off the ranks, each interval starting at its
   known position.

The result is identical to a full sort with the same tie-break. The number of histogram passes
is at most 64 / bits per level, in practice 1-3 (one million normal scores and the 22,592 ranks
of a PAULA plan: 2 histogram passes, 41,945 candidates): it does not grow with N beyond that.

Memory
------
A task holds one row group (score, key and requested columns) plus its histogram, or the
candidates it extracts; the driver holds the histogram and all candidates. With R requested
ranks, I intervals and row groups of at most G rows: O(G + max(B, 16 I)) per histogram task,
O(G + C) per extraction task and O(max(B, 16 I) + C) on the driver, where B is
``histogram_bins`` and C <= R + cap * I the number of candidates: independent of N.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from .._validation import check_int
from ..errors import DataError
from ..ranking import key_hash
from .progress import report_progress
from .resource import (
    DEFAULT_PARTITION_ROWS,
    Partition,
    Resource,
    check_labels,
    check_ranks,
    check_unique,
    descending_ordinal,
    displays,
    empty_result,
    extra_columns,
    keys_of,
    open_parquet,
    rank_sort,
    read_group,
    result_frame,
    run_tasks,
    scores_of,
)

__all__ = ["DEFAULT_CAP", "DEFAULT_HISTOGRAM_BINS", "check_unique_keys", "select_ranks"]

#: An interval with at most this many items is extracted as it is: the items it holds besides
#: the requested ones cost memory on the driver, at most ``cap`` per interval.
DEFAULT_CAP = 1024

#: Histogram bins of one pass, shared by the open intervals (at least 16 each): 2 MiB of int64
#: counts per task.
DEFAULT_HISTOGRAM_BINS = 1 << 18

_FULL = (1 << 64) - 1
_SCORE, _HASH = 0, 1


@dataclass(frozen=True)
class _Interval:
    """Items whose score ordinal lies in [lo, hi] (level 0), or whose score ordinal is ``tie``
    and key hash lies in [lo, hi] (level 1). They hold ranks start+1 .. start+count."""

    level: int
    tie: int
    lo: int
    hi: int
    start: int
    count: int


@dataclass(frozen=True)
class _Bins:
    """What a histogram task counts: for every interval, its bins of width 2**shift."""

    intervals: tuple[_Interval, ...]
    shifts: tuple[int, ...]
    offsets: tuple[int, ...]
    total: int


class _Locator:
    """Finds, for arrays of ordinals and hashes, which of a set of disjoint intervals holds each item."""

    def __init__(self, intervals):
        self.intervals = list(intervals)
        score = [i for i, iv in enumerate(self.intervals) if iv.level == _SCORE]
        score.sort(key=lambda i: self.intervals[i].lo)
        self.score_ids = np.array(score, dtype=np.int64)
        self.score_lo = np.array([self.intervals[i].lo for i in score], dtype=np.uint64)
        self.score_hi = np.array([self.intervals[i].hi for i in score], dtype=np.uint64)
        ties: dict[int, list[int]] = {}
        for i, iv in enumerate(self.intervals):
            if iv.level == _HASH:
                ties.setdefault(iv.tie, []).append(i)
        self.ties = {}
        for tie, ids in ties.items():
            ids.sort(key=lambda i: self.intervals[i].lo)
            self.ties[tie] = (
                np.array(ids, dtype=np.int64),
                np.array([self.intervals[i].lo for i in ids], dtype=np.uint64),
                np.array([self.intervals[i].hi for i in ids], dtype=np.uint64),
            )
        self.tie_values = np.array(sorted(self.ties), dtype=np.uint64)

    @property
    def needs_keys(self) -> bool:
        return bool(self.ties)

    @staticmethod
    def _find(values, lo, hi, ids):
        if lo.size == 0:
            return np.full(values.shape, -1, dtype=np.int64)
        slot = np.searchsorted(lo, values, side="right") - 1
        inside = slot >= 0
        slot = np.maximum(slot, 0)
        inside &= values <= hi[slot]
        return np.where(inside, ids[slot], -1)

    def locate(self, ordinals: np.ndarray, keys: np.ndarray | None):
        """Return (interval id or -1 per item, key hashes of the items in tie intervals or None)."""
        found = self._find(ordinals, self.score_lo, self.score_hi, self.score_ids)
        if not self.ties:
            return found, None
        in_tie = np.flatnonzero(np.isin(ordinals, self.tie_values))
        hashes = key_hash(keys[in_tie])
        tie_of = ordinals[in_tie]
        for tie, (ids, lo, hi) in self.ties.items():
            mine = tie_of == np.uint64(tie)
            found[in_tie[mine]] = self._find(hashes[mine], lo, hi, ids)
        return found, (in_tie, hashes)


def _histogram_task(partition: Partition, fs, columns, bins: _Bins, names: dict):
    """Count, and find the smallest and largest value in, every bin of every open interval."""
    key, score = columns
    locator = _Locator(bins.intervals)
    lo = np.array([iv.lo for iv in bins.intervals], dtype=np.uint64)
    shift = np.array(bins.shifts, dtype=np.uint64)
    offset = np.array(bins.offsets, dtype=np.int64)
    counts = np.zeros(bins.total, dtype=np.int64)
    smallest = np.full(bins.total, _FULL, dtype=np.uint64)
    largest = np.zeros(bins.total, dtype=np.uint64)
    read = [score, key] if locator.needs_keys else [score]
    display = names[partition.path]
    with open_parquet(fs, partition.path, display=display) as parquet:
        for index in partition.indices:
            where = f"{display} row group {index}"
            table = read_group(parquet, index, read, display=display)
            ordinals = descending_ordinal(scores_of(table, score, where))
            keys = keys_of(table, key, where) if locator.needs_keys else None
            found, tied = locator.locate(ordinals, keys)
            # The value binned: the score ordinal, or the key hash inside a run of tied scores.
            values = ordinals
            if tied is not None:
                values = ordinals.copy()
                values[tied[0]] = tied[1]
            hit = np.flatnonzero(found >= 0)
            ids = found[hit]
            values = values[hit]
            slots = offset[ids] + ((values - lo[ids]) >> shift[ids]).astype(np.int64)
            counts += np.bincount(slots, minlength=bins.total)
            np.minimum.at(smallest, slots, values)
            np.maximum.at(largest, slots, values)
    return counts, smallest, largest


def _merge(*parts):
    counts, smallest, largest = (array.copy() for array in parts[0])
    for c, s, g in parts[1:]:
        counts += c
        np.minimum(smallest, s, out=smallest)
        np.maximum(largest, g, out=largest)
    return counts, smallest, largest


def _histogram(client, partitions, fs, columns, bins: _Bins, names):
    """Merge the per-task histograms: a tree reduction on the cluster, a running merge in-process."""
    if client is None:
        total = None
        for partition in partitions:
            part = _histogram_task(partition, fs, columns, bins, names)
            total = part if total is None else _merge(total, part)
        return total
    shared = client.scatter(bins, broadcast=True, hash=False)
    futures = client.map(_histogram_task, partitions, fs=fs, columns=columns, bins=shared, names=names, pure=False)
    report_progress(futures, "histogram")
    while len(futures) > 1:
        futures = [client.submit(_merge, *futures[i:i + 8], pure=False) for i in range(0, len(futures), 8)]
    result = futures[0].result()
    futures[0].release()
    shared.release()
    return result


def _extract_task(partition: Partition, fs, columns, extras, intervals, names: dict):
    key, score = columns
    locator = _Locator(intervals)
    display = names[partition.path]
    pieces = []
    with open_parquet(fs, partition.path, display=display) as parquet:
        for index in partition.indices:
            where = f"{display} row group {index}"
            table = read_group(parquet, index, [score, key], display=display)
            scores = scores_of(table, score, where)
            keys = keys_of(table, key, where)
            found, _ = locator.locate(descending_ordinal(scores), keys)
            hit = np.flatnonzero(found >= 0)
            if hit.size == 0:
                continue
            taken = pa.array(hit)
            piece = pa.table({"key": pa.array(keys[hit]), "score": pa.array(scores[hit])})
            if extras:
                extra = read_group(parquet, index, extras, display=display).take(taken)
                for name in extras:
                    piece = piece.append_column(name, extra.column(name))
            pieces.append((index, piece))
    return pieces


def select_positions(resource: Resource, positions, *, units=None, base: int = 0, client=None, extras=(),
                     cap: int = DEFAULT_CAP, histogram_bins: int = DEFAULT_HISTOGRAM_BINS,
                     partition_rows: int = DEFAULT_PARTITION_ROWS) -> pd.DataFrame:
    """Items at 0-based rank ``positions`` among the row groups ``units`` (all by default).

    The rows of ``units`` must hold exactly the ranks ``base+1 .. base+rows`` of the resource:
    all of it, or a block of a sorted resource bounded by strict score drops (which is how
    :func:`prdist.dataflow.resource.extract_ranks` resolves a huge run of tied scores).
    ``positions`` is sorted, distinct and inside that range. See :func:`select_ranks`.
    """
    scope = list(range(len(resource.row_groups)) if units is None else units)
    rows = sum(resource.row_groups[u].num_rows for u in scope)
    positions = np.asarray(positions, dtype=np.int64)
    extras = list(extras)
    if positions.size == 0:
        frame = empty_result(resource, extras)
        frame.attrs.update(passes=0, candidates=0, intervals=0)
        return frame
    partitions = resource.partitions(partition_rows, scope)
    names = displays(resource)
    columns = (resource.key, resource.score)
    targets = positions

    # Start from the statistics when every row group has them: fewer passes.
    stats = [resource.row_groups[u] for u in scope]
    if all(rg.has_score_range for rg in stats):
        top = descending_ordinal(np.array([max(rg.score_max for rg in stats)]))[0]
        bottom = descending_ordinal(np.array([min(rg.score_min for rg in stats)]))[0]
        first = _Interval(_SCORE, 0, int(top), int(bottom), base, rows)
    else:
        first = _Interval(_SCORE, 0, 0, _FULL, base, rows)

    def requested(iv: _Interval) -> int:
        return int(np.searchsorted(targets, iv.start + iv.count) - np.searchsorted(targets, iv.start))

    final: list[_Interval] = []
    pending = [first]
    passes = 0
    bytes_read = 0
    score_bytes = resource.bytes_of(scope, [resource.score])
    key_bytes = resource.bytes_of(scope, [resource.key])
    while pending:
        refine = []
        for iv in pending:
            wanted = requested(iv)
            if wanted == 0:
                continue
            if iv.count <= cap or wanted == iv.count:
                final.append(iv)
            elif iv.lo == iv.hi and iv.level == _SCORE:
                # A run of more than `cap` tied scores: select inside it by key hash.
                refine.append(_Interval(_HASH, iv.lo, 0, _FULL, iv.start, iv.count))
            elif iv.lo == iv.hi:
                final.append(iv)  # items sharing score and key hash: extracted whole, ordered by key
            else:
                refine.append(iv)
        if not refine:
            break
        bits = int(np.clip(np.floor(np.log2(histogram_bins / len(refine))), 4, 24))
        shifts, offsets, total = [], [], 0
        for iv in refine:
            shift = max(0, (iv.hi - iv.lo).bit_length() - bits)
            shifts.append(shift)
            offsets.append(total)
            total += ((iv.hi - iv.lo) >> shift) + 1
        bins = _Bins(tuple(refine), tuple(shifts), tuple(offsets), total)
        counts, smallest, largest = _histogram(client, partitions, resource.fs, columns, bins, names)
        passes += 1
        bytes_read += score_bytes + (key_bytes if any(iv.level == _HASH for iv in refine) else 0)
        pending = []
        for iv, shift, offset in zip(refine, shifts, offsets):
            nbins = ((iv.hi - iv.lo) >> shift) + 1
            h = counts[offset:offset + nbins]
            if int(h.sum()) != iv.count:
                raise DataError(
                    f"{resource.url} changed while it was being read (a pass counted {int(h.sum())} "
                    f"items where the one before counted {iv.count}). Run again on data that stays put."
                )
            ends = np.cumsum(h)
            inside = targets[np.searchsorted(targets, iv.start):np.searchsorted(targets, iv.start + iv.count)]
            for b in np.unique(np.searchsorted(ends, inside - iv.start, side="right")).tolist():
                # The bin, tightened to the values seen in it: a bin holding one distinct score
                # becomes a run of ties at once, however wide the bin.
                pending.append(_Interval(iv.level, iv.tie, int(smallest[offset + b]), int(largest[offset + b]),
                                         iv.start + int(ends[b] - h[b]), int(h[b])))

    final.sort(key=lambda iv: iv.start)
    pieces = run_tasks(client, _extract_task, partitions, resource.fs, columns, extras, tuple(final), names)
    bytes_read += score_bytes + key_bytes
    matched_groups = {}
    tables = []
    for partition, found in zip(partitions, pieces):
        unit_of = dict(zip(partition.indices, partition.units))
        for index, table in found:
            matched_groups[unit_of[index]] = True
            tables.append(table)
    if extras:
        bytes_read += resource.bytes_of(matched_groups, extras)
    candidates = pa.concat_tables(tables, promote_options="permissive") if tables else None
    expected = sum(iv.count for iv in final)
    if candidates is None or candidates.num_rows != expected:
        raise DataError(
            f"{resource.url} changed while it was being read (the extraction pass found "
            f"{0 if candidates is None else candidates.num_rows} items where the counts promised {expected}). "
            "Run again on data that stays put."
        )
    keys = keys_of(candidates, "key", resource.url)
    scores = scores_of(candidates, "score", resource.url)
    check_unique(keys, f"the rows read from {resource.url}")
    order = rank_sort(descending_ordinal(scores), key_hash(keys), keys)
    # Final intervals are disjoint stretches of the rank order, so sorted candidates run through
    # them in order of start, each filling start .. start+count-1.
    rank_of_sorted = np.concatenate([np.arange(iv.start, iv.start + iv.count, dtype=np.int64) for iv in final])
    keep = np.flatnonzero(np.isin(rank_of_sorted, positions))
    take = order[keep]
    extras_table = candidates.select(extras).take(pa.array(take)) if extras else None
    frame = result_frame(rank_of_sorted[keep], keys[take], scores[take], extras_table)
    frame.attrs = {
        "bytes_read": int(bytes_read),
        "row_groups_read": len(scope),
        "passes": passes + 1,
        "candidates": int(expected),
        "intervals": len(final),
    }
    return frame


def select_ranks(resource: Resource, ranks, *, client=None, columns=None, cap: int = DEFAULT_CAP,
                 histogram_bins: int = DEFAULT_HISTOGRAM_BINS, partition_rows: int = DEFAULT_PARTITION_ROWS) -> pd.DataFrame:
    """Return the items at ``ranks`` of a resource in any order, without sorting it.

    Radix selection over (descending score, key hash, key): histogram passes narrow every
    requested rank to a small interval, then one pass extracts only the items of those intervals
    (see the module notes). The result equals a full sort by :func:`prdist.ranking.rank_order`.

    Parameters
    ----------
    resource : Resource
        From :func:`prdist.dataflow.resource.open_resource`; sorted or not.
    ranks : array-like of int
        1-based ranks in [1, n]; duplicates are ignored.
    client : distributed.Client, optional
        Run the passes as Dask tasks on this cluster (one per partition). Default: in-process.
    columns : list of str, optional
        Extra columns to return. Default: the label column, if the resource has one.
    cap : int, default=1024
        Stop narrowing an interval once it holds at most ``cap`` items (more passes, fewer
        candidates when smaller).
    histogram_bins : int, default=2**18
        Bins per histogram pass, shared by the open intervals.
    partition_rows : int, default=2**22
        Rows per Dask task (whole row groups).

    Returns
    -------
    pandas.DataFrame
        Columns ``rank`` (int64), ``key``, ``score`` (float64), then ``columns``; one row per
        distinct requested rank, in rank order. ``attrs`` holds ``bytes_read`` (compressed
        Parquet bytes), ``passes`` (histogram passes + the extraction pass), ``candidates``
        (items extracted), ``intervals`` (final intervals: candidates <= requested ranks +
        ``cap`` x intervals) and ``row_groups_read``.

    Raises
    ------
    DataError
        A score is null or not finite, two of the items extracted share a key, a label read is
        not 0/1, or the data changed between passes.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from prdist.dataflow.resource import open_resource
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3, 4], "score": [0.2, 0.9, 0.5, 0.7]}), os.path.join(d, "a.parquet"))
    >>> select_ranks(open_resource(d), [1, 2])[["rank", "key"]].to_numpy().tolist()
    [[1, 2], [2, 4]]
    """
    owner = "select_ranks"
    positions = check_ranks(ranks, resource.n, owner=owner) - 1
    extras = extra_columns(resource, columns)
    cap = check_int(cap, name="cap", owner=owner, low=1)
    histogram_bins = check_int(histogram_bins, name="histogram_bins", owner=owner, low=16, high=1 << 26)
    partition_rows = check_int(partition_rows, name="partition_rows", owner=owner, low=1)
    frame = select_positions(resource, positions, client=client, extras=extras, cap=cap,
                             histogram_bins=histogram_bins, partition_rows=partition_rows)
    check_labels(frame, resource.label, resource.url)
    return frame


# --------------------------------------------------------------------------------------------
# Uniqueness


def _hash_slice_task(partition: Partition, fs, key: str, lo: int, hi: int, names: dict) -> np.ndarray:
    display = names[partition.path]
    parts = []
    with open_parquet(fs, partition.path, display=display) as parquet:
        for index in partition.indices:
            keys = keys_of(read_group(parquet, index, [key], display=display), key, f"{display} row group {index}")
            hashes = key_hash(keys)
            parts.append(hashes[(hashes >= np.uint64(lo)) & (hashes <= np.uint64(hi))])
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)


def _keys_with_hashes_task(partition: Partition, fs, key: str, wanted: np.ndarray, names: dict) -> np.ndarray:
    display = names[partition.path]
    parts = []
    with open_parquet(fs, partition.path, display=display) as parquet:
        for index in partition.indices:
            keys = keys_of(read_group(parquet, index, [key], display=display), key, f"{display} row group {index}")
            parts.append(keys[np.isin(key_hash(keys), wanted)])
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def check_unique_keys(resource: Resource, *, client=None, max_slice_rows: int = 1 << 24,
                      partition_rows: int = DEFAULT_PARTITION_ROWS) -> None:
    """Check that no key occurs twice in the whole resource; raise DataError naming one if so.

    The 64-bit key hashes are checked slice by slice of the hash range, one pass over the key
    column per slice, so the driver never holds more than about ``max_slice_rows`` hashes; the
    keys behind any repeated hash are then compared (hashes may collide, keys may not).

    Parameters
    ----------
    resource : Resource
    client : distributed.Client, optional
        Run the passes on this cluster; default in-process.
    max_slice_rows : int, default=2**24
        Expected hashes per slice: ``ceil(n / max_slice_rows)`` passes over the key column.
    partition_rows : int, default=2**22
        Rows per Dask task.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from prdist.dataflow.resource import open_resource
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": ["a", "b", "a"], "score": [0.2, 0.9, 0.5]}), os.path.join(d, "a.parquet"))
    >>> try:
    ...     check_unique_keys(open_resource(d))
    ... except DataError as exc:
    ...     print(str(exc)[:36])
    The key 'a' occurs more than once in
    """
    owner = "check_unique_keys"
    max_slice_rows = check_int(max_slice_rows, name="max_slice_rows", owner=owner, low=1)
    partition_rows = check_int(partition_rows, name="partition_rows", owner=owner, low=1)
    partitions = resource.partitions(partition_rows)
    names = displays(resource)
    slices = -(-resource.n // max_slice_rows)
    width = -(-(1 << 64) // slices)
    repeated = []
    for s in range(slices):
        lo, hi = s * width, min(_FULL, (s + 1) * width - 1)
        hashes = np.sort(np.concatenate(run_tasks(client, _hash_slice_task, partitions, resource.fs, resource.key, lo, hi, names)))
        repeated.append(np.unique(hashes[1:][hashes[1:] == hashes[:-1]]))
    repeated = np.concatenate(repeated)
    if repeated.size == 0:
        return
    keys = np.concatenate(run_tasks(client, _keys_with_hashes_task, partitions, resource.fs, resource.key, repeated, names))
    check_unique(keys, resource.url)
