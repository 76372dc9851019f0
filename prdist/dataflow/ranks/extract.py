"""Extract ranks from a resource sorted by descending score, reading only where they are.

A resource sorted by score is in rank order except inside runs of equal scores; such a run is
read whole and ordered by (key hash, key) (:func:`prdist.ranking.sorted_block_order`), even when
it spans row groups and files.

DESIGN. Runs once, in the user's session: :func:`extract_ranks` checks the order claim (from
statistics), maps the requested ranks to blocks of row groups (:func:`_blocks`) and groups them
by file. Runs many times, in tasks: :func:`_blocks_task`, one per file, through
:mod:`prdist.dataflow.engine.executor`. A block too large for one task (a huge run of tied scores)
goes to :mod:`prdist.dataflow.ranks.select`'s bounded-memory selection instead.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from prdist._validation import check_int
from prdist.frames.arrays import distinct
from prdist.frames.columns import arrow_numpy, take_rows
from prdist.errors import DataError
from prdist.ranking import key_ordered_rows, sorted_block_order
from prdist.dataflow.engine.executor import run_tasks
from prdist.dataflow.ranks.extraction import Extraction, check_labels, empty_result, items_frame, result_table
from prdist.dataflow.io.parquet import (
    DEFAULT_PARTITION_ROWS,
    Resource,
    displays,
    footers_of,
    open_parquet,
    open_resource,
    order_from_statistics,
    refs_of,
)
from prdist.dataflow.io.parquet_tasks import check_unique, keys_of, read_group, scores_of
from prdist.dataflow.ranks.select import requested_positions, select_positions, selection

__all__ = ["DEFAULT_BLOCK_ROWS", "by_rank", "extract", "extract_ranks", "sorted_extraction"]

#: :func:`extract_ranks` reads a block of row groups whole (one task, one local sort) up to this
#: many rows; a larger block — a huge run of tied scores — goes through the bounded-memory
#: selection of :mod:`prdist.dataflow.ranks.select` instead.
DEFAULT_BLOCK_ROWS = 1 << 22


def _blocks(resource: Resource, positions: np.ndarray) -> list[tuple[int, int]]:
    """Runs of row groups [g0, g1] that hold the requested positions and whole tie runs.

    A block starts where the previous row group's minimum is strictly above its maximum (so no
    tie run crosses the boundary) and likewise ends: its rows are a contiguous range of ranks.
    """
    groups = resource.row_groups
    offsets = resource.offsets
    hit = distinct(np.searchsorted(offsets, positions, side="right") - 1)
    blocks: list[tuple[int, int]] = []
    for g in hit.tolist():
        if blocks and g <= blocks[-1][1]:
            continue
        g0 = g
        while g0 > 0 and groups[g0 - 1].score_min == groups[g0].score_max:
            g0 -= 1
        g1 = g
        while g1 + 1 < len(groups) and groups[g1].score_min == groups[g1 + 1].score_max:
            g1 += 1
        if blocks and g0 <= blocks[-1][1]:
            g0 = blocks.pop()[0]
        blocks.append((g0, g1))
    return blocks


def by_rank(items: pa.Table) -> pa.Table:
    """``items`` in rank order (the blocks read directly come in rank order already; the tied
    runs selected apart follow them)."""
    ranks = arrow_numpy(items.column("rank"))
    if np.all(ranks[1:] > ranks[:-1]):
        return items
    return take_rows(items, np.argsort(ranks, kind="stable"))


def _runs_of_rows(blocks: list[tuple[object, int]], max_rows: int) -> list[list]:
    """``blocks`` (block, rows) cut into consecutive runs of at most ``max_rows`` rows (a larger
    block alone), without their row counts.

    Examples
    --------
    >>> _runs_of_rows([("a", 3), ("b", 3), ("c", 5), ("d", 9), ("e", 1)], 6)
    [['a', 'b'], ['c'], ['d'], ['e']]
    """
    runs, rows = [], 0
    for block, size in blocks:
        if not runs or rows + size > max_rows:
            runs.append([])
            rows = 0
        runs[-1].append(block)
        rows += size
    return runs


def _blocks_task(task, fs, key: str, score: str, extras: list[str], names: dict) -> list[pa.Table]:
    """Read blocks of row groups whole, order each by rank, keep the wanted positions (one table).

    The blocks of one task mostly lie in one file, which is opened once for all of them, with
    the footer ``open_resource`` read (``footers``: path -> FileMetaData): on object storage a
    footer costs a request, and with small row groups its bytes rival those of the row groups
    read.
    """
    blocks, footers = task
    positions, found_keys, found_scores, found_extras = [], [], [], []
    with contextlib.ExitStack() as stack:
        opened: dict[str, pq.ParquetFile] = {}

        def parquet_of(path):
            if path not in opened:
                opened[path] = stack.enter_context(open_parquet(fs, path, display=names[path], footer=footers.get(path)))
            return opened[path]

        for refs, start, wanted in blocks:
            key_parts, score_parts, extra_parts = [], [], []
            for path, indices in refs:
                display = names[path]
                for index in indices:
                    table = read_group(parquet_of(path), index, [key, score, *extras], display=display)
                    where = f"{display} row group {index}"
                    key_parts.append(keys_of(table, key, where))
                    score_parts.append(scores_of(table, score, where))
                    if extras:
                        extra_parts.append(table.select(extras))
            keys = np.concatenate(key_parts)
            scores = np.concatenate(score_parts)
            # The keys that decide an order must be unique; the items taken are checked together
            # in sorted_extraction. Checking every key read cost as much as reading them, and
            # found a duplicate only when both rows fell in one block.
            by_key = key_ordered_rows(scores)
            check_unique(keys[by_key], f"the rows ordered by key among ranks {start + 1}..{start + scores.size} "
                                       f"({names[refs[0][0]]} ...)")
            take = sorted_block_order(scores, keys, by_key)[wanted - start]
            if extras:
                found_extras.append(take_rows(pa.concat_tables(extra_parts, promote_options="permissive"), take))
            positions.append(wanted)
            found_keys.append(keys[take])
            found_scores.append(scores[take])
    # One table per task, not per block: a task may hold a hundred blocks.
    extras_table = pa.concat_tables(found_extras, promote_options="permissive") if extras else None
    return [result_table(np.concatenate(positions), np.concatenate(found_keys), np.concatenate(found_scores), extras_table)]


def extract_ranks(resource: Resource, ranks, *, client=None, columns=None, max_block_rows: int = DEFAULT_BLOCK_ROWS):
    """Return the items at ``ranks`` of a resource sorted by descending score.

    Reads only the row groups that hold the requested ranks, extended over any run of tied
    scores that crosses their boundaries: inside such a run rank order is by key hash, so the
    whole run is read and ordered by (key hash, key).

    Parameters
    ----------
    resource : Resource
        Must satisfy :meth:`Resource.is_sorted_claim` (row-group statistics in descending order).
    ranks : array-like of int
        1-based ranks in [1, n]; duplicates are ignored.
    client : distributed.Client, optional
        Read the blocks of row groups as tasks on this cluster; default in-process.
    columns : list of str, optional
        Extra columns to return. Default: the label column, if the resource has one.
    max_block_rows : int, default=2**22
        Largest block of row groups read whole by one task; a larger block (a run of tied scores
        over many row groups) is resolved by :func:`prdist.dataflow.ranks.select.select_ranks`'s
        bounded-memory selection restricted to that block.

    Returns
    -------
    pandas.DataFrame
        Columns ``rank`` (int64), ``key``, ``score`` (float64), then ``columns``; one row per
        distinct requested rank, in rank order. :func:`sorted_extraction` returns them with the
        compressed Parquet bytes and the row groups read (the items as an Arrow table).

    Raises
    ------
    DataError
        The statistics do not show descending order (use ``select_ranks`` for unsorted input),
        a key occurs twice among the items returned or among the rows of a block read whose order
        their keys decide (its tied scores; every row of a block not in descending order inside);
        in a run of tied scores over ``max_block_rows``, among the candidates the selection keeps.
        Other duplicates are not looked for (:func:`prdist.dataflow.ranks.select.check_unique_keys`
        reads every key). Or a score read is null or not finite.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from prdist.ranking import rank_order
    >>> d = tempfile.mkdtemp()
    >>> scores = [0.9, 0.7, 0.7, 0.7, 0.2]
    >>> pq.write_table(pa.table({"key": [10, 11, 12, 13, 14], "score": scores}), os.path.join(d, "a.parquet"), row_group_size=2)
    >>> res = open_resource(d)
    >>> extract_ranks(res, [2, 3, 4])["key"].tolist() == [[10, 11, 12, 13, 14][i] for i in rank_order(scores, [10, 11, 12, 13, 14])[1:4]]
    True
    """
    return items_frame(sorted_extraction(resource, ranks, client=client, columns=columns, max_block_rows=max_block_rows).items)


def extract(resource: Resource, ranks, *, client=None, columns=None) -> Extraction:
    """The items at ``ranks`` of any resource, with the read's statistics.

    Read where they are when the row-group statistics show descending order
    (:func:`sorted_extraction`), found by the sort-free selection otherwise
    (:func:`prdist.dataflow.ranks.select.selection`); the parameters are :func:`extract_ranks`'s.
    """
    find = sorted_extraction if resource.is_sorted_claim() else selection
    return find(resource, ranks, client=client, columns=columns)


def sorted_extraction(resource: Resource, ranks, *, client=None, columns=None,
                      max_block_rows: int = DEFAULT_BLOCK_ROWS) -> Extraction:
    """:func:`extract_ranks`'s items with the compressed Parquet bytes and the row groups read
    (same parameters, same checks)."""
    owner = "extract_ranks"
    wanted, extras = requested_positions(resource, ranks, columns, owner=owner)
    max_block_rows = check_int(max_block_rows, name="max_block_rows", owner=owner, low=1)
    check = order_from_statistics(resource)
    if not check.sorted:
        raise DataError(
            f"extract_ranks needs a resource sorted by descending score, and {resource.url} is not: "
            f"{check.detail}. Use prdist.dataflow.ranks.select.select_ranks for unsorted input."
        )
    if wanted.size == 0:
        return Extraction(empty_result(resource, extras), bytes_read=0)
    offsets = resource.offsets
    direct, large = [], []
    for g0, g1 in _blocks(resource, wanted):
        start, stop = int(offsets[g0]), int(offsets[g1 + 1])
        lo, hi = np.searchsorted(wanted, [start, stop])
        block = (g0, g1, start, wanted[lo:hi])
        (direct if stop - start <= max_block_rows else large).append(block)

    read_columns = [resource.key, resource.score, *extras]
    frames, bytes_read, groups_read = [], 0, 0
    if direct:
        # Tasks of the blocks of one file (the file of a block's first row group), each reading up
        # to a partition's rows: a file of many row groups gives the threads or workers several
        # tasks (at 10^7 items one task per file left one of two threads idle), and every task
        # opens its file with the footer open_resource read, so no footer is read again.
        by_file: dict[int, list] = {}
        for g0, g1, start, block_wanted in direct:
            refs = refs_of(resource, range(g0, g1 + 1))
            rows = int(offsets[g1 + 1] - offsets[g0])
            by_file.setdefault(resource.row_groups[g0].file, []).append(((refs, start, block_wanted), rows))
            bytes_read += resource.bytes_of(range(g0, g1 + 1), read_columns)
            groups_read += g1 - g0 + 1
        tasks = [(chunk, footers_of(resource, file)) for file, blocks in by_file.items()
                 for chunk in _runs_of_rows(blocks, DEFAULT_PARTITION_ROWS)]
        for found in run_tasks(client, _blocks_task, tasks, resource.fs, resource.key, resource.score, extras,
                               displays(resource)):
            frames += found
    for g0, g1, start, block_wanted in large:
        found = select_positions(resource, block_wanted, units=range(g0, g1 + 1), base=start, client=client, extras=extras)
        bytes_read += found.bytes_read
        groups_read += found.row_groups_read
        frames.append(found.items)
    result = by_rank(pa.concat_tables(frames, promote_options="permissive"))
    check_unique(arrow_numpy(result.column("key")), f"the rows extracted from {resource.url}")
    check_labels(result, resource.label, resource.url)
    return Extraction(result, bytes_read=int(bytes_read), row_groups_read=int(groups_read))
