"""Items at given ranks of an unsorted resource, without a sort or a shuffle.

The rank order (:mod:`prdist.ranking`) is the lexicographic order of (descending score, key hash,
key). :func:`select_ranks` finds the items at the requested ranks by *radix selection* over that
order, in streaming passes over the resource:

1. Every score maps exactly to a 64-bit ordinal that ascends as the score descends
   (:func:`prdist.ranking.descending_ordinal`). Each requested rank lies in an
   interval of ordinals with a known count of items before it; at first one interval holds
   everything (from the row-group statistics, without reading data).
2. A histogram pass: every Dask task reads the score column of its row groups, one row group at
   a time, and counts the items of every open interval in bins, noting the smallest and largest
   ordinal seen in each bin; a tree reduction merges them. The first pass cuts the score range
   of the statistics into ``histogram_bins`` bins of equal *score* width; later passes cut each
   open interval into ``2**bits`` equal ranges of ordinals (the bins of all intervals add up to
   ``histogram_bins``). Each requested rank moves to the bin that holds it, tightened to the
   ordinals seen there, and the count of items before it stays exact. (The tightening matters
   for discrete scores: a bin holding a single score value becomes a run of ties at once.)
3. An interval stops when it holds at most ``cap`` items, or only requested ranks; all of them
   stop when they hold at most ``max_candidates`` items in all. An interval reduced to a single
   score with more than ``cap`` items is a run of tied scores; inside it the rank order is by
   key hash, so the selection goes on in the same way over the 64-bit key hash of the items
   with that score (reading the key column too).
4. An extraction pass: every task returns only the items of the final intervals; the driver
   orders them by (ordinal, key hash, key) and reads off the ranks, each interval starting at its
   known position.

Most items of a pass lie in no open interval; a table of up to 2**20 buckets over the intervals
rejects them with a shift and a lookup, and only the rest are binary-searched (:class:`_IntervalSet`).

The result is identical to a full sort with the same tie-break. In practice one histogram pass
suffices up to some 10^8 items (the PAULA plan of eps 0.03 and windows of 100 on 10^7 shuffled
binormal scores: 30,392 ranks, 1 histogram pass, 42,884 candidates); each further pass narrows
every interval by a factor 2**bits, so their number does not grow with N beyond that.

Memory
------
A task holds one row group (score, key and requested columns) plus its histogram, or the
candidates it extracts; the driver holds the histogram and all candidates. With R requested
ranks, I intervals and row groups of at most G rows: O(G + max(B, 16 I)) per histogram task,
O(G + C) per extraction task and O(max(B, 16 I) + C) on the driver, where B is
``histogram_bins`` and C <= max(R + cap * I, ``max_candidates``) the number of candidates:
independent of N.

DESIGN
------
Runs once, in the user's session: :func:`select_positions`'s loop over passes (triage of the
intervals, the bins of the next pass, the split of the counts) and the final ordering of the
candidates (:func:`prdist.ranking.rank_sort`). Runs many times, in tasks, through
:mod:`prdist.dataflow.engine.executor` (``client=None``: in-process): :func:`_histogram_task` (merged by
``map_reduce``'s tree), :func:`_extract_task` and the uniqueness tasks, each reading its row
groups with :func:`prdist.dataflow.io.parquet_tasks.row_groups_of`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prdist.frames.arrays import distinct, members
from prdist._validation import check_int
from prdist.frames.columns import arrow_table, take_rows
from prdist.errors import DataError
from prdist.ranking import descending_ordinal, key_hash, rank_sort, score_of_ordinal
from prdist.dataflow.engine.executor import map_reduce, run_tasks
from prdist.dataflow.ranks.extraction import (
    Extraction,
    check_labels,
    check_ranks,
    empty_result,
    extra_columns,
    items_frame,
    result_table,
)
from prdist.dataflow.io.parquet import DEFAULT_PARTITION_ROWS, Partition, Resource, displays
from prdist.dataflow.io.parquet_tasks import check_unique, keys_of, row_groups_of, scores_of

__all__ = ["DEFAULT_CAP", "DEFAULT_MAX_CANDIDATES", "DEFAULT_HISTOGRAM_BINS", "check_unique_keys", "select_ranks", "selection"]

#: An interval with at most this many items is extracted as it is: the items it holds besides
#: the requested ones cost memory on the driver, at most ``cap`` per interval.
DEFAULT_CAP = 1024

#: Histogram bins of one pass, shared by the open intervals (at least 16 each): 2 MiB of int64
#: counts per task.
DEFAULT_HISTOGRAM_BINS = 1 << 18

#: After a histogram pass, if all the intervals left hold at most this many items in all, they
#: are extracted at once (however many items each holds) instead of narrowed by another pass:
#: an extra pass reads the whole score column, a million candidates cost the driver ~0.3 s.
DEFAULT_MAX_CANDIDATES = 1 << 20

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
    """What a histogram task counts: for every interval, its bins of width 2**shift.

    Or, when ``linear`` = (top, scale) is set (the first pass over a score range known from the
    statistics), one interval cut into ``total`` bins of equal width in *score*: bin
    floor((top - score) * scale). Floating-point subtraction and scaling are monotone, so these
    bins too are consecutive stretches of the rank order.
    """

    intervals: _IntervalTable
    shifts: np.ndarray
    offsets: np.ndarray
    total: int
    linear: tuple[float, float] | None = None


@dataclass(frozen=True, eq=False)
class _IntervalTable:
    """Intervals as columns, which is how tasks receive them: thousands of interval objects
    would cost every task some 20 ms to unpickle and sort out, a few arrays cost nothing."""

    level: np.ndarray  # int8
    tie: np.ndarray  # uint64
    lo: np.ndarray  # uint64
    hi: np.ndarray  # uint64
    score_buckets: tuple[float, float] | None  # see _IntervalSet

    @functools.cached_property
    def locator(self) -> _Locator:
        """The lookup structure of these intervals, built once per table: once per pass
        in-process, once per worker on a cluster (every pass broadcasts its table)."""
        return _Locator(self)

    @classmethod
    def of(cls, intervals, score_buckets=None) -> _IntervalTable:
        return cls(
            np.array([iv.level for iv in intervals], dtype=np.int8),
            np.array([iv.tie for iv in intervals], dtype=np.uint64),
            np.array([iv.lo for iv in intervals], dtype=np.uint64),
            np.array([iv.hi for iv in intervals], dtype=np.uint64),
            score_buckets,
        )


class _IntervalSet:
    """Disjoint closed intervals of uint64 values; finds which one holds each value, if any.

    A binary search over thousands of intervals costs some 40 ns per value, and most values of a
    pass lie in no interval. So a table of up to 2**20 equal buckets marks the buckets that meet
    an interval: a few arithmetic steps and one table lookup reject most values, and only the
    rest are searched. The buckets are equal ranges of the values (key hashes, uniform), or,
    for score ordinals when ``score_buckets`` = (top, scale) is given, equal ranges of the
    *score* (the score range of the statistics): equal ordinal ranges would spend nearly all
    buckets on the binades near zero that hold no score.
    """

    TABLE_BITS = 20

    def __init__(self, lo, hi, ids, *, score_buckets: tuple[float, float] | None = None):
        order = np.argsort(lo, kind="stable")
        self.lo = np.asarray(lo, dtype=np.uint64)[order]
        self.hi = np.asarray(hi, dtype=np.uint64)[order]
        self.ids = np.asarray(ids, dtype=np.int64)[order]
        self.score_buckets = score_buckets
        if self.lo.size == 0:
            return
        if score_buckets is not None:
            buckets = 1 << self.TABLE_BITS
            first = self._score_bucket(score_of_ordinal(self.lo))
            last = self._score_bucket(score_of_ordinal(self.hi))
        else:
            self.base = self.lo[0]
            span = int(self.hi.max()) - int(self.base)
            self.shift = np.uint64(max(0, span.bit_length() - self.TABLE_BITS))
            buckets = (span >> int(self.shift)) + 1
            first = ((self.lo - self.base) >> self.shift).astype(np.int64)
            last = ((self.hi - self.base) >> self.shift).astype(np.int64)
        # Marked buckets by a difference array: +1 where an interval's buckets start, -1 after.
        edges = np.zeros(buckets + 2, dtype=np.int32)  # int32: half the traffic of the cumsum
        np.add.at(edges, first, 1)
        np.add.at(edges, last + 1, -1)
        self.marked = np.cumsum(edges[:-1], dtype=np.int32) > 0  # the last slot (never marked) takes the misses
        self.last_bucket = np.uint64(buckets)

    def _score_bucket(self, scores: np.ndarray) -> np.ndarray:
        # Monotone in the score, like the ordinal: an interval's items lie in its buckets. The
        # interval edges may be +-inf or near +-1e308, whose products overflow to +-inf: clipped.
        with np.errstate(over="ignore"):
            return _linear_slots(scores, *self.score_buckets, 1 << self.TABLE_BITS)

    def find(self, values: np.ndarray | None = None, *, scores: np.ndarray | None = None) -> np.ndarray:
        """Id of the interval holding each value, or -1. Score ordinals may come as ``scores``
        instead: with ``score_buckets`` their ordinals are then computed only for the few items
        in a marked bucket."""
        if values is None and self.score_buckets is None:
            values = descending_ordinal(scores)
        found = np.full((values if values is not None else scores).shape, -1, dtype=np.int64)
        if self.lo.size == 0:
            return found
        if self.score_buckets is not None:
            bucket = self._score_bucket(scores)
        else:
            # Values below the base wrap around to huge buckets: the minimum sends them, and
            # those above the span, to the unmarked last slot.
            bucket = values - self.base
            bucket >>= self.shift
            np.minimum(bucket, self.last_bucket, out=bucket)
        maybe = np.flatnonzero(self.marked[bucket])
        near = values[maybe] if values is not None else descending_ordinal(scores[maybe])
        slot = np.searchsorted(self.lo, near, side="right") - 1
        inside = slot >= 0
        slot = np.maximum(slot, 0)
        inside &= near <= self.hi[slot]
        found[maybe[inside]] = self.ids[slot[inside]]
        return found


class _Locator:
    """Finds, for arrays of ordinals and hashes, which of a set of disjoint intervals holds each item."""

    def __init__(self, table: _IntervalTable):
        score = np.flatnonzero(table.level == _SCORE)
        self.scores = _IntervalSet(table.lo[score], table.hi[score], score, score_buckets=table.score_buckets)
        hashed = np.flatnonzero(table.level == _HASH)
        self.tie_values = distinct(table.tie[hashed])
        self.ties = {}
        for tie in self.tie_values.tolist():
            ids = hashed[table.tie[hashed] == np.uint64(tie)]
            self.ties[tie] = _IntervalSet(table.lo[ids], table.hi[ids], ids)

    @property
    def needs_keys(self) -> bool:
        return bool(self.ties)

    def locate(self, scores: np.ndarray, keys: np.ndarray | None):
        """Return (interval id or -1 per item, key hashes of the items in tie intervals or None)."""
        found = self.scores.find(scores=scores)
        if not self.ties:
            return found, None
        ordinals = descending_ordinal(scores)
        in_tie = np.flatnonzero(members(ordinals, self.tie_values))
        hashes = key_hash(keys[in_tie])
        tie_of = ordinals[in_tie]
        for tie, intervals in self.ties.items():
            mine = tie_of == np.uint64(tie)
            found[in_tie[mine]] = intervals.find(hashes[mine])
        return found, (in_tie, hashes)


def _histogram_task(partition: Partition, fs, columns, bins: _Bins, names: dict):
    """Count, and find the smallest and largest value in, every bin of every open interval.

    Equal score bins (``bins.linear``) are only counted: (counts, None, None).
    """
    key, score = columns
    counts = np.zeros(bins.total, dtype=np.int64)
    locator = None
    if bins.linear is None:  # equal score bins hold every item: nothing to locate
        locator = bins.intervals.locator
        lo, shift, offset = bins.intervals.lo, bins.shifts, bins.offsets
        smallest = np.full(bins.total, _FULL, dtype=np.uint64)
        largest = np.zeros(bins.total, dtype=np.uint64)
    read = [score, key] if locator is not None and locator.needs_keys else [score]
    for group in row_groups_of(fs, partition, names):
        table = group.read(read)
        scores = scores_of(table, score, group.where)
        if bins.linear is not None:
            # Equal score bins have known edges (_linear_edges): counting is all it takes.
            np.add.at(counts, _linear_slots(scores, *bins.linear, bins.total), 1)
            continue
        keys = keys_of(table, key, group.where) if locator.needs_keys else None
        found, tied = locator.locate(scores, keys)
        hit = np.flatnonzero(found >= 0)
        ids = found[hit]
        # The value binned: the score ordinal, or the key hash inside a run of tied scores.
        if tied is None:
            values = descending_ordinal(scores[hit])
        else:
            values = descending_ordinal(scores)
            values[tied[0]] = tied[1]
            values = values[hit]
        slots = offset[ids] + ((values - lo[ids]) >> shift[ids]).astype(np.int64)
        # ufunc.at, not bincount: no fresh array of every bin per row group.
        np.add.at(counts, slots, 1)
        np.minimum.at(smallest, slots, values)
        np.maximum.at(largest, slots, values)
    if bins.linear is not None:
        return counts, None, None
    return counts, smallest, largest


def _linear_bins(stats, bins: int) -> tuple[float, float] | None:
    """(top, scale) of ``bins`` equal score bins over the statistics' range, if it has a width.

    Equal *score* bins suit the first pass: equal bins of the 64-bit ordinal are equal in the
    logarithm of the score, so most of them cover ranges no score reaches (every binade down to
    1e-308 gets as many bins as [1, 2)), and the populated ones hold too many items to finish in
    one pass. None (ordinal bins) when the range is empty or too wide for float arithmetic.
    """
    if not stats or not all(rg.has_score_range for rg in stats):
        return None
    top = float(max(rg.score_max for rg in stats))
    width = top - float(min(rg.score_min for rg in stats))
    scale = bins / width if width > 0 else math.inf
    return (top, scale) if math.isfinite(width) and math.isfinite(scale) else None


def _linear_slots(scores: np.ndarray, top: float, scale: float, total: int) -> np.ndarray:
    """Bin floor((top - score) * scale), clipped to [0, total - 1] before the cast.

    Clipping is monotone too: a score outside the range the statistics promised lands in an end
    bin, still in rank order. Every step is one IEEE-754 operation, so the driver's
    :func:`_linear_edges` reproduces the bins bit for bit.
    """
    slots = np.subtract(top, scores)
    slots *= scale
    np.clip(slots, 0.0, total - 1, out=slots)
    return slots.astype(np.int64)


#: Ordinals of +inf and -inf: every finite score's ordinal lies between them.
_ORDINAL_TOP, _ORDINAL_BOTTOM = (int(o) for o in descending_ordinal(np.array([np.inf, -np.inf])))


def _linear_edges(bins: np.ndarray, top: float, scale: float, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact ordinal range [lo, hi] of the scores :func:`_linear_slots` puts in each of ``bins``.

    The slot is a non-decreasing function of the ordinal, so the first ordinal of bin b is found
    by bisection over the ordinals of +inf .. -inf (no NaN among them), vectorised over the
    bins: 64 steps. The edge bins reach +inf and -inf, since clipping sends there any score
    beyond the statistics' range.
    """

    def first_at_least(wanted: np.ndarray) -> np.ndarray:
        lo = np.full(wanted.shape, _ORDINAL_TOP, dtype=np.uint64)
        hi = np.full(wanted.shape, _ORDINAL_BOTTOM + 1, dtype=np.uint64)  # "none": past -inf
        while (open_ := np.flatnonzero(lo < hi)).size:
            mid = lo[open_] + (hi[open_] - lo[open_]) // np.uint64(2)  # <= the ordinal of -inf
            with np.errstate(over="ignore"):  # probes near +-1e308: (top - score) * scale is +-inf, clipped
                reached = _linear_slots(score_of_ordinal(mid), top, scale, total) >= wanted[open_]
            hi[open_] = np.where(reached, mid, hi[open_])
            lo[open_] = np.where(reached, lo[open_], mid + np.uint64(1))
        return lo

    bins = np.asarray(bins, dtype=np.int64)
    return first_at_least(bins), first_at_least(bins + 1) - np.uint64(1)


def _merge(*parts):
    counts = parts[0][0].copy()
    for c, _, _ in parts[1:]:
        counts += c
    if parts[0][1] is None:  # equal score bins: counts only
        return counts, None, None
    smallest, largest = parts[0][1].copy(), parts[0][2].copy()
    for _, s, g in parts[1:]:
        np.minimum(smallest, s, out=smallest)
        np.maximum(largest, g, out=largest)
    return counts, smallest, largest


def _extract_task(partition: Partition, fs, columns, extras, names: dict, *, intervals: _IntervalTable):
    key, score = columns
    locator = intervals.locator
    pieces = []
    for group in row_groups_of(fs, partition, names):
        table = group.read([score, key])
        scores = scores_of(table, score, group.where)
        keys = keys_of(table, key, group.where)
        found, _ = locator.locate(scores, keys)
        hit = np.flatnonzero(found >= 0)
        if hit.size == 0:
            continue
        piece = arrow_table({"key": keys[hit], "score": scores[hit]})
        if extras:
            extra = take_rows(group.read(extras), hit)
            for name in extras:
                piece = piece.append_column(name, extra.column(name))
        pieces.append((group.index, piece))
    return pieces


def select_positions(resource: Resource, positions, *, units=None, base: int = 0, client=None, extras=(),
                     cap: int = DEFAULT_CAP, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                     histogram_bins: int = DEFAULT_HISTOGRAM_BINS,
                     partition_rows: int = DEFAULT_PARTITION_ROWS) -> Extraction:
    """Items at 0-based rank ``positions`` among the row groups ``units`` (all by default).

    The rows of ``units`` must hold exactly the ranks ``base+1 .. base+rows`` of the resource:
    all of it, or a block of a sorted resource bounded by strict score drops (which is how
    :func:`prdist.dataflow.ranks.extract.extract_ranks` resolves a huge run of tied scores).
    ``positions`` is sorted, distinct and inside that range. See :func:`select_ranks`.
    """
    scope = list(range(len(resource.row_groups)) if units is None else units)
    rows = sum(resource.row_groups[u].num_rows for u in scope)
    positions = np.asarray(positions, dtype=np.int64)
    extras = list(extras)
    if positions.size == 0:
        return Extraction(empty_result(resource, extras), bytes_read=0)
    partitions = resource.partitions(partition_rows, scope)
    names = displays(resource)
    columns = (resource.key, resource.score)
    stats = [resource.row_groups[u] for u in scope]
    first = _first_interval(stats, base, rows)
    score_buckets = _linear_bins(stats, 1 << _IntervalSet.TABLE_BITS)

    final: list[_Interval] = []
    pending = [first]
    passes = 0
    bytes_read = 0
    score_bytes = resource.bytes_of(scope, [resource.score])
    key_bytes = resource.bytes_of(scope, [resource.key])
    while pending:
        # Few enough candidates in all: extract them now rather than pay for another pass.
        small = passes > 0 and sum(iv.count for iv in pending) + sum(iv.count for iv in final) <= max_candidates
        refine = _triage(pending, final, positions, cap=cap, small=small)
        if not refine:
            break
        linear = _linear_bins(stats, histogram_bins) if refine == [first] else None
        bins, sizes = _bins_of(refine, first, linear, histogram_bins, score_buckets)
        counts, smallest, largest = map_reduce(client, _histogram_task, _merge, partitions, fs=resource.fs,
                                                columns=columns, names=names, broadcast={"bins": bins})
        passes += 1
        bytes_read += score_bytes + (key_bytes if any(iv.level == _HASH for iv in refine) else 0)
        pending = _split(refine, bins.offsets.tolist(), sizes, counts, (smallest, largest), linear, positions,
                         url=resource.url)

    final.sort(key=lambda iv: iv.start)
    pieces = run_tasks(client, _extract_task, partitions, resource.fs, columns, extras, names,
                       broadcast={"intervals": _IntervalTable.of(final, score_buckets)})
    bytes_read += score_bytes + key_bytes
    frame, extra_bytes = _ranked_candidates(resource, partitions, pieces, final, positions, extras)
    return Extraction(frame, bytes_read=int(bytes_read) + extra_bytes, row_groups_read=len(scope), passes=passes + 1,
                      candidates=int(sum(iv.count for iv in final)), intervals=len(final))


def _first_interval(stats, base: int, rows: int) -> _Interval:
    """The interval of every score; from the statistics when every row group has them (fewer passes)."""
    if all(rg.has_score_range for rg in stats):
        top = descending_ordinal(np.array([max(rg.score_max for rg in stats)]))[0]
        bottom = descending_ordinal(np.array([min(rg.score_min for rg in stats)]))[0]
        return _Interval(_SCORE, 0, int(top), int(bottom), base, rows)
    return _Interval(_SCORE, 0, 0, _FULL, base, rows)


def _requested(intervals: list[_Interval], targets: np.ndarray) -> list[int]:
    """How many requested ranks each interval holds."""
    starts = np.array([iv.start for iv in intervals], dtype=np.int64)
    ends = starts + np.array([iv.count for iv in intervals], dtype=np.int64)
    return (np.searchsorted(targets, ends) - np.searchsorted(targets, starts)).tolist()


def _triage(pending, final: list, targets: np.ndarray, *, cap: int, small: bool) -> list[_Interval]:
    """Move the intervals to extract as they are into ``final``; return those to refine."""
    # Every pending interval holds a requested rank (it is the bin of one).
    refine = []
    for iv, wanted in zip(pending, _requested(pending, targets)):
        if iv.count <= cap or wanted == iv.count or small:
            final.append(iv)
        elif iv.lo == iv.hi and iv.level == _SCORE:
            # A run of more than `cap` tied scores: select inside it by key hash.
            refine.append(_Interval(_HASH, iv.lo, 0, _FULL, iv.start, iv.count))
        elif iv.lo == iv.hi:
            final.append(iv)  # items sharing score and key hash: extracted whole, ordered by key
        else:
            refine.append(iv)
    return refine


def _bins_of(refine, first, linear, histogram_bins: int, score_buckets) -> tuple[_Bins, list[int]]:
    """The bins of the next pass (linear in the score on the first pass when it can) and their sizes."""
    if linear is not None:
        zero = np.zeros(1, dtype=np.int64)
        return _Bins(_IntervalTable.of([first]), zero.astype(np.uint64), zero, histogram_bins, linear), [histogram_bins]
    bits = int(np.clip(np.floor(np.log2(histogram_bins / len(refine))), 4, 24))
    shifts, offsets, sizes, total = [], [], [], 0
    for iv in refine:
        shift = max(0, (iv.hi - iv.lo).bit_length() - bits)
        shifts.append(shift)
        offsets.append(total)
        sizes.append(((iv.hi - iv.lo) >> shift) + 1)
        total += sizes[-1]
    bins = _Bins(_IntervalTable.of(refine, score_buckets), np.array(shifts, dtype=np.uint64),
                 np.array(offsets, dtype=np.int64), total)
    return bins, sizes


def _split(refine, offsets, sizes, counts, seen, linear, targets: np.ndarray, *, url: str) -> list[_Interval]:
    """The bins of a pass that hold a requested rank, as the intervals of the next pass."""
    smallest, largest = seen
    pending = []
    for iv, offset, nbins in zip(refine, offsets, sizes):
        h = counts[offset:offset + nbins]
        if int(h.sum()) != iv.count:
            raise DataError(
                f"{url} changed while it was being read (a pass counted {int(h.sum())} "
                f"items where the one before counted {iv.count}). Run again on data that stays put."
            )
        ends = np.cumsum(h)
        inside = targets[np.searchsorted(targets, iv.start):np.searchsorted(targets, iv.start + iv.count)]
        chosen = distinct(np.searchsorted(ends, inside - iv.start, side="right"))
        if linear is not None:
            edge_lo, edge_hi = _linear_edges(chosen, *linear, nbins)
        else:
            # The bin, tightened to the values seen in it: a bin holding one distinct score
            # becomes a run of ties at once, however wide the bin.
            edge_lo, edge_hi = smallest[offset + chosen], largest[offset + chosen]
        for b, b_lo, b_hi in zip(chosen.tolist(), edge_lo.tolist(), edge_hi.tolist()):
            pending.append(_Interval(iv.level, iv.tie, b_lo, b_hi, iv.start + int(ends[b] - h[b]), int(h[b])))
    return pending


def _ranked_candidates(resource: Resource, partitions, pieces, final, positions, extras) -> tuple[pa.Table, int]:
    """Order the extracted candidates by rank and keep the requested positions.

    Returns the items and the bytes of the extra columns read (of the row groups that matched).
    """
    matched_groups = {}
    tables = []
    for partition, found in zip(partitions, pieces):
        unit_of = dict(zip(partition.indices, partition.units))
        for index, table in found:
            matched_groups[unit_of[index]] = True
            tables.append(table)
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
    keep = np.flatnonzero(members(rank_of_sorted, positions))
    take = order[keep]
    extras_table = take_rows(candidates.select(extras), take) if extras else None
    frame = result_table(rank_of_sorted[keep], keys[take], scores[take], extras_table)
    return frame, resource.bytes_of(matched_groups, extras) if extras else 0


def requested_positions(resource: Resource, ranks, columns, *, owner: str) -> tuple[np.ndarray, list[str]]:
    """The 0-based positions of the requested 1-based ``ranks`` and the extra ``columns`` to carry,
    both checked against ``resource`` (the common start of :func:`select_ranks` and
    :func:`prdist.dataflow.ranks.extract.extract_ranks`)."""
    return check_ranks(ranks, resource.n, owner=owner) - 1, extra_columns(resource, columns)


def select_ranks(resource: Resource, ranks, *, client=None, columns=None, cap: int = DEFAULT_CAP,
                 max_candidates: int = DEFAULT_MAX_CANDIDATES, histogram_bins: int = DEFAULT_HISTOGRAM_BINS, partition_rows: int = DEFAULT_PARTITION_ROWS):
    """Return the items at ``ranks`` of a resource in any order, without sorting it.

    Radix selection over (descending score, key hash, key): histogram passes narrow every
    requested rank to a small interval, then one pass extracts only the items of those intervals
    (see the module notes). The result equals a full sort by :func:`prdist.ranking.rank_order`.

    Parameters
    ----------
    resource : Resource
        From :func:`prdist.dataflow.io.parquet.open_resource`; sorted or not.
    ranks : array-like of int
        1-based ranks in [1, n]; duplicates are ignored.
    client : distributed.Client, optional
        Run the passes as Dask tasks on this cluster (one per partition). Default: in-process.
    columns : list of str, optional
        Extra columns to return. Default: the label column, if the resource has one.
    cap : int, default=1024
        Stop narrowing an interval once it holds at most ``cap`` items (more passes, fewer
        candidates when smaller).
    max_candidates : int, default=2**20
        Stop narrowing every interval once they hold at most this many items in all: they are
        then extracted in the next pass (0: narrow down to ``cap`` always).
    histogram_bins : int, default=2**18
        Bins per histogram pass, shared by the open intervals.
    partition_rows : int, default=2**20
        Rows per Dask task (whole row groups).

    Returns
    -------
    pandas.DataFrame
        Columns ``rank`` (int64), ``key``, ``score`` (float64), then ``columns``; one row per
        distinct requested rank, in rank order. :func:`selection` returns them with the read's
        statistics (bytes read, passes, candidates, intervals).

    Raises
    ------
    DataError
        A score is null or not finite, two of the items extracted share a key, a label read is
        not 0/1, or the data changed between passes.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from prdist.dataflow.io.parquet import open_resource
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"key": [1, 2, 3, 4], "score": [0.2, 0.9, 0.5, 0.7]}), os.path.join(d, "a.parquet"))
    >>> select_ranks(open_resource(d), [1, 2])[["rank", "key"]].to_numpy().tolist()
    [[1, 2], [2, 4]]
    """
    return items_frame(selection(resource, ranks, client=client, columns=columns, cap=cap, max_candidates=max_candidates,
                                 histogram_bins=histogram_bins, partition_rows=partition_rows).items)


def selection(resource: Resource, ranks, *, client=None, columns=None, cap: int = DEFAULT_CAP,
              max_candidates: int = DEFAULT_MAX_CANDIDATES, histogram_bins: int = DEFAULT_HISTOGRAM_BINS,
              partition_rows: int = DEFAULT_PARTITION_ROWS) -> Extraction:
    """:func:`select_ranks`'s items with the read's statistics (same parameters, same checks).

    Returns
    -------
    Extraction
        ``items`` as :func:`select_ranks` returns them, as an Arrow table; ``bytes_read`` (compressed Parquet
        bytes), ``passes`` (histogram passes + the extraction pass), ``candidates`` (items
        extracted), ``intervals`` (final intervals: candidates <= requested ranks + ``cap`` x
        intervals) and ``row_groups_read``.
    """
    owner = "select_ranks"
    positions, extras = requested_positions(resource, ranks, columns, owner=owner)
    cap = check_int(cap, name="cap", owner=owner, low=1)
    max_candidates = check_int(max_candidates, name="max_candidates", owner=owner, low=0)
    histogram_bins = check_int(histogram_bins, name="histogram_bins", owner=owner, low=16, high=1 << 26)
    partition_rows = check_int(partition_rows, name="partition_rows", owner=owner, low=1)
    found = select_positions(resource, positions, client=client, extras=extras, cap=cap,
                             max_candidates=max_candidates,
                             histogram_bins=histogram_bins, partition_rows=partition_rows)
    check_labels(found.items, resource.label, resource.url)
    return found


# --------------------------------------------------------------------------------------------
# Uniqueness


def _hash_slice_task(partition: Partition, fs, key: str, lo: int, hi: int, names: dict) -> np.ndarray:
    parts = []
    for group in row_groups_of(fs, partition, names):
        hashes = key_hash(keys_of(group.read([key]), key, group.where))
        parts.append(hashes[(hashes >= np.uint64(lo)) & (hashes <= np.uint64(hi))])
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)


def _keys_with_hashes_task(partition: Partition, fs, key: str, wanted: np.ndarray, names: dict) -> np.ndarray:
    parts = []
    for group in row_groups_of(fs, partition, names):
        keys = keys_of(group.read([key]), key, group.where)
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
    partition_rows : int, default=2**20
        Rows per Dask task.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from prdist.dataflow.io.parquet import open_resource
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
