"""Joint sampling at scale: weigh, draw and join (steps 2, 4 and 5 of :mod:`prdist.dataflow.compare`).

DESIGN. Runs once, in the user's session: :func:`system_weights` (the per-row-group totals),
:func:`draw_items` (which row group holds each draw), :func:`join_sample`'s assembly of the
semi-join and of the bucket summaries, and :func:`draw_sample`, which chains them. Runs many
times, in tasks (through :mod:`prdist.dataflow.engine.executor`; ``client=None``: in-process):
:func:`_totals_task` and :func:`_draw_task` (one per partition or file), :func:`_join_task` (one
per partition of every system), :func:`_bucket_task` (one per hash bucket) and, for the drawn
keys awaiting labels, :func:`_items_task` (one per file holding one). Every task of the first four
reads with :func:`_read_weighted`, the one place a row's weight w(x) is computed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from prdist._validation import check_int
from prdist.errors import DataError, ParameterError
from prdist.importance import JointSample, SamplingDistribution
from prdist.importance.systems import SCORE_POWER, TOP_K, UNIFORM
from prdist.ranking import RankPosition, descending_ordinal, key_hash
from prdist.dataflow.compare.params import CompareParams, System, allocate_budget
from prdist.dataflow.engine.executor import map_shuffle, run_tasks
from prdist.dataflow.ranks.extract import extract
from prdist.dataflow.ranks.extraction import Extraction
from prdist.dataflow.io.parquet import DEFAULT_PARTITION_ROWS, Partition, displays, open_parquet
from prdist.dataflow.io.parquet_tasks import RowGroupReader, keys_of, row_groups_of, scores_of

__all__ = [
    "DEFAULT_BUCKET_ROWS",
    "DrawnSample",
    "SystemWeights",
    "draw_items",
    "draw_sample",
    "item_column_names",
    "item_columns",
    "join_sample",
    "system_weights",
]

#: Support items per bucket of the hash shuffle of :func:`join_sample` (memory of one bucket task).
DEFAULT_BUCKET_ROWS = 1 << 22


# --------------------------------------------------------------------------------------------
# Weights: p_i(x) = w_i(x) / W_i
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WeightSpec:
    """How a task computes w(x): the distribution, and for top-k the item at rank k."""

    kind: str
    power: float | None = None
    threshold: RankPosition | None = None  # top-k: the item at rank k


def _read_weighted(group: RowGroupReader, spec: _WeightSpec, key: str, score: str, *, with_keys: bool,
                   with_scores: bool):
    """Read one row group; return (keys or None, scores or None, w) with w float64.

    The one place a row's weight w(x) is computed, for every task of a comparison.
    """
    where = group.where
    need_scores = with_scores or spec.kind != UNIFORM
    columns = ([key] if with_keys else []) + ([score] if need_scores else [])
    table = group.read(columns) if columns else None
    keys = keys_of(table, key, where) if with_keys else None
    scores = scores_of(table, score, where) if need_scores else None
    if spec.kind == UNIFORM:
        return keys, scores, np.ones(group.num_rows)
    if spec.kind == SCORE_POWER:
        if (scores < 0).any():
            raise DataError(
                f"Score-power sampling needs non-negative scores; {where} holds {float(scores.min())!r}. "
                "Shift or transform the scores, or sample uniformly."
            )
        with np.errstate(over="ignore"):
            w = scores**spec.power
        if not np.isfinite(w).all():
            raise DataError(f"score ** {spec.power:g} overflows in {where}. Rescale the scores or lower the power.")
        return keys, scores, w
    # Top-k: a member stands at or before the item at rank k.
    member = spec.threshold.at_or_before(
        descending_ordinal(scores),
        lambda: keys if keys is not None else keys_of(group.read([key]), key, where),
    )
    return keys, scores, member.astype(np.float64)


def _totals_task(partition: Partition, fs, key: str, score: str, spec: _WeightSpec, names: dict):
    """Per row group of the partition: (Σ w, number of items with w > 0)."""
    out = []
    for group in row_groups_of(fs, partition, names):
        _, _, w = _read_weighted(group, spec, key, score, with_keys=False, with_scores=False)
        out.append((float(w.sum()), int(np.count_nonzero(w))))
    return out


@dataclass(frozen=True, eq=False)
class SystemWeights:
    """The unnormalised weights of one system, summarised per row group.

    Attributes
    ----------
    name : str
    n : int
        Items (rows) of the system.
    support : int
        Items of positive probability (N, k, or the items of positive score).
    totals : ndarray of float64, shape (G,)
        Σ w over every row group, in storage order.
    normaliser : float
        W = Σ w (N, k, or Σ score ** a).
    spec : _WeightSpec
        What the tasks need to compute w (for top-k, the item at rank k).
    threshold : dict or None
        Top-k: rank, score and key of the item at rank k (for the manifest).
    bytes_read : int
        Compressed Parquet bytes read to weigh the system.
    """

    name: str
    n: int
    support: int
    totals: np.ndarray
    normaliser: float
    spec: _WeightSpec
    threshold: dict | None
    bytes_read: int

    def describe(self) -> dict:
        return {"n": self.n, "support": self.support, "normaliser": self.normaliser, "top_k_threshold": self.threshold}


def system_weights(system: System, distribution: SamplingDistribution, *, client=None,
                   partition_rows: int = DEFAULT_PARTITION_ROWS) -> SystemWeights:
    """Return the per-row-group totals and the normaliser of a system's distribution.

    Uniform: from the metadata alone. Top-k: the item at rank k without a sort, then one pass
    counting the members of every row group. Score-power: one pass summing score ** a.

    Parameters
    ----------
    system : System
    distribution : SamplingDistribution
    client : distributed.Client, optional
        Run the passes on this cluster (one task per partition); default in-process.
    partition_rows : int, default=2**20
        Rows per task.

    Returns
    -------
    SystemWeights
    """
    owner = "system_weights"
    res = system.resource
    partition_rows = check_int(partition_rows, name="partition_rows", owner=owner, low=1)
    if distribution.kind == UNIFORM:
        totals = np.diff(res.offsets).astype(np.float64)
        totals.setflags(write=False)
        return SystemWeights(system.name, res.n, res.n, totals, float(res.n), _WeightSpec(UNIFORM), None, 0)

    threshold = None
    bytes_read = 0
    if distribution.kind == TOP_K:
        k = distribution.k
        if k > res.n:
            raise ParameterError(
                f"Top-k sampling with k = {k} needs at least k items, and system {system.name!r} "
                f"has {res.n}. Lower k."
            )
        found = extract(res, [k], client=client, columns=[])
        item = found.items
        bytes_read += found.bytes_read
        key_k, score_k = item.column("key")[0].as_py(), float(item.column("score")[0].as_py())
        key_k = int(key_k) if res.key_kind == "int" else str(key_k)
        spec = _WeightSpec(TOP_K, threshold=RankPosition.of(score_k, key_k))
        threshold = {"rank": k, "score": score_k, "key": str(key_k)}
    else:
        spec = _WeightSpec(SCORE_POWER, power=distribution.power)
    parts = res.partitions(partition_rows)
    per_group = [t for part in run_tasks(client, _totals_task, parts, res.fs, res.key, res.score, spec, displays(res)) for t in part]
    totals = np.array([t for t, _ in per_group], dtype=np.float64)
    support = int(sum(c for _, c in per_group))
    bytes_read += res.bytes_of(range(len(res.row_groups)), [res.score])
    # fsum: no rounding beyond that of each row group's own total.
    normaliser = math.fsum(totals.tolist())
    if distribution.kind == TOP_K and support != distribution.k:
        raise DataError(
            f"System {system.name!r} ({res.url}) holds {support} items at or above rank "
            f"{distribution.k}, not {distribution.k}: its keys are not unique, or it changed while "
            "it was read. Deduplicate it, or evaluate a stable snapshot."
        )
    if not (math.isfinite(normaliser) and normaliser > 0):
        raise DataError(
            f"score ** {distribution.power:g} sums to {normaliser!r} over system {system.name!r} "
            f"({res.url}); it must be finite and positive. Rescale the scores."
        )
    totals.setflags(write=False)
    return SystemWeights(system.name, res.n, support, totals, normaliser, spec, threshold, bytes_read)


# --------------------------------------------------------------------------------------------
# Draws
# --------------------------------------------------------------------------------------------


def _draw_task(item, fs, key: str, score: str, spec: _WeightSpec, names: dict):
    """Read the row groups holding draws; return (draw ids, keys) of the drawn rows."""
    (path, groups), footers = item
    display = names[path]
    ids, keys = [], []
    with open_parquet(fs, path, display=display, footer=footers.get(path)) as parquet:
        for index, draw_ids, targets in groups:
            group_keys, _, w = _read_weighted(RowGroupReader(parquet, index, display), spec, key, score, with_keys=True,
                                              with_scores=False)
            if spec.kind == UNIFORM:
                rows = targets.astype(np.int64)
            else:
                # The first row whose cumulative weight exceeds the target; past the end (rounding
                # of the row-group total) the last row of positive weight.
                rows = np.searchsorted(np.cumsum(w), targets, side="right")
                rows = np.minimum(rows, np.flatnonzero(w > 0)[-1])
            ids.append(draw_ids)
            keys.append(group_keys[rows])
    return np.concatenate(ids), np.concatenate(keys)


def draw_items(system: System, weights: SystemWeights, size: int, rng: np.random.Generator, *,
               client=None) -> tuple[np.ndarray, int]:
    """Draw ``size`` items i.i.d. from a system's distribution, reading only the row groups that hold them.

    One uniform u per draw (``rng.random(size)``): row ``floor(u N)`` (uniform), the
    ``floor(u k)``-th member of the top k in storage order (top-k), the first row whose cumulative
    weight exceeds ``u W`` (score-power); see the module notes.

    Parameters
    ----------
    system : System
    weights : SystemWeights
        From :func:`system_weights` on the same system and distribution.
    size : int
        Draws, >= 0.
    rng : numpy.random.Generator
        The system's own generator.
    client : distributed.Client, optional

    Returns
    -------
    keys : ndarray, shape (size,)
        The drawn keys in draw order (with repeats).
    bytes_read : int
        Compressed Parquet bytes read.
    """
    res = system.resource
    size = check_int(size, name="size", owner="draw_items", low=0)
    if not isinstance(weights, SystemWeights) or weights.name != system.name or weights.totals.size != len(res.row_groups):
        raise ParameterError(
            f"The 'weights' parameter of draw_items must be the SystemWeights of system {system.name!r} "
            "(from system_weights on the same system)."
        )
    if size == 0:
        return np.empty(0, dtype=np.int64 if res.key_kind == "int" else object), 0
    u = rng.random(size)
    totals = weights.totals
    prefix = np.concatenate(([0.0], np.cumsum(totals)))
    if weights.spec.kind == UNIFORM:
        targets = np.minimum(np.floor(u * res.n), res.n - 1)
    elif weights.spec.kind == TOP_K:
        targets = np.minimum(np.floor(u * weights.support), weights.support - 1)
    else:
        targets = u * prefix[-1]
    groups = np.searchsorted(prefix[1:], targets, side="right")
    # Past the last row group (rounding of the float prefix, score-power only): the last row group
    # of positive weight.
    groups = np.minimum(groups, np.flatnonzero(totals > 0)[-1])
    local = np.maximum(targets - prefix[groups], 0.0)
    by_file: dict[str, list] = {}
    file_of = {}
    for g in np.unique(groups).tolist():
        rg = res.row_groups[g]
        chosen = np.flatnonzero(groups == g)
        by_file.setdefault(res.files[rg.file], []).append((rg.index, chosen, local[chosen]))
        file_of[res.files[rg.file]] = rg.file
    # Each task gets the footer read at opening (shipped once by the executor), not a re-read.
    items = [((path, groups), {path: res.footer(file_of[path])} if res.footer(file_of[path]) is not None else {})
             for path, groups in by_file.items()]
    results = run_tasks(client, _draw_task, items, res.fs, res.key, res.score, weights.spec, displays(res))
    columns = [res.key] + ([] if weights.spec.kind == UNIFORM else [res.score])
    bytes_read = res.bytes_of(np.unique(groups).tolist(), columns)
    ids = np.concatenate([r[0] for r in results])
    keys = np.concatenate([r[1] for r in results])
    out = np.empty(size, dtype=keys.dtype)
    out[ids] = keys
    return out, int(bytes_read)


# --------------------------------------------------------------------------------------------
# Join: semi-join of the sampled keys, hash shuffle of the supports
# --------------------------------------------------------------------------------------------


def _key_index(keys: np.ndarray) -> pd.Index:
    # Keep the NumPy dtype: pandas would otherwise convert object keys to its string dtype.
    return pd.Index(keys, dtype=keys.dtype)


def _join_task(partition: Partition, fs, key: str, score: str, spec: _WeightSpec, names: dict, *,
               wanted: pd.Index, buckets: int):
    """One partition of one system: its rows with a wanted key, and its support hashed into buckets.

    Returns ((keys, scores, w, row group, row) of the matching rows, [(keys, w) of bucket b for b
    in range(buckets)]); "row group" indexes ``Resource.row_groups``, "row" counts inside it.
    """
    matched, pieces = [], [[] for _ in range(buckets)]
    for i, group in enumerate(row_groups_of(fs, partition, names)):
        keys, scores, w = _read_weighted(group, spec, key, score, with_keys=True, with_scores=True)
        hit = np.flatnonzero(wanted.get_indexer(keys) >= 0)
        unit = np.full(hit.size, partition.units[i], dtype=np.int64)
        matched.append((keys[hit], scores[hit], w[hit], unit, hit.astype(np.int64)))
        support = w > 0
        support_keys, support_w = keys[support], w[support]
        bucket = (key_hash(support_keys) % np.uint64(buckets)).astype(np.intp)
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(buckets + 1))
        for b in range(buckets):
            rows = order[bounds[b]:bounds[b + 1]]
            if rows.size:
                pieces[b].append((support_keys[rows], support_w[rows]))
    match = tuple(np.concatenate([m[i] for m in matched]) for i in range(5))
    return match, [_concat_pieces(p) for p in pieces]


def _concat_pieces(pieces):
    if not pieces:
        return None
    return np.concatenate([k for k, _ in pieces]), np.concatenate([w for _, w in pieces])


def _unique_rows(packed: np.ndarray) -> np.ndarray:
    """Distinct rows of a (rows, bytes) uint8 matrix, sorted as bytes (as the core orders patterns)."""
    if packed.shape[0] == 0:
        return packed
    rows = np.unique(np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel())
    return rows.view(np.uint8).reshape(-1, packed.shape[1])


def _bucket_task(m: int, system_ids: list[int], *pieces):
    """One bucket: Σ_x w_i(x) w_j(x) (m, m), the packed distinct support patterns, and a repeated key."""
    present = [(j, p) for j, p in zip(system_ids, pieces) if p is not None]
    gram = np.zeros((m, m))
    if not present:
        return gram, np.zeros((0, (m + 7) // 8), dtype=np.uint8), None
    keys = np.concatenate([p[0] for _, p in present])
    w = np.concatenate([p[1] for _, p in present])
    system = np.concatenate([np.full(p[0].size, j, dtype=np.int64) for j, p in present])
    codes, uniques = pd.factorize(keys)
    pair = codes.astype(np.int64) * m + system
    repeated = pd.Series(pair).duplicated().to_numpy()
    if repeated.any():
        i = int(np.flatnonzero(repeated)[0])
        return gram, None, (int(system[i]), keys[i])
    matrix = np.zeros((len(uniques), m))
    matrix[codes, system] = w
    return matrix.T @ matrix, _unique_rows(np.packbits(matrix > 0, axis=1)), None


@dataclass(frozen=True, eq=False)
class DrawnSample:
    """The draws of every system joined with every system's output (unlabeled).

    Attributes
    ----------
    sample : JointSample
        Unlabeled joint sample: drawn keys, p_j(x) of every system, counts, overlaps, patterns.
    scores : ndarray of float64, shape (U, m)
        Score of every drawn key in every system; NaN where the system does not output it.
    weights : tuple of SystemWeights
    sizes : ndarray of int64, shape (m,)
        Draws per system.
    extra_in_pool : ndarray of bool or None
        For every extra key given to :func:`join_sample` (an exhaustive sample's correct keys),
        whether some system holds it with positive probability.
    stats : dict
        Seconds, bytes read, tasks and buckets of every step.
    locations : ndarray of int64, shape (U, m, 2), optional
        Where every drawn key is in every system: its row group (an index of
        ``Resource.row_groups``) and its row inside it; -1 where the system does not output it.
        :func:`item_columns` reads the item columns there.
    """

    sample: JointSample
    scores: np.ndarray
    weights: tuple[SystemWeights, ...]
    sizes: np.ndarray
    extra_in_pool: np.ndarray | None
    stats: dict
    locations: np.ndarray | None = None


def join_sample(systems, weights, draws, *, extra_keys=None, client=None,
                partition_rows: int = DEFAULT_PARTITION_ROWS,
                bucket_rows: int = DEFAULT_BUCKET_ROWS) -> tuple[JointSample, np.ndarray, np.ndarray, np.ndarray | None, dict]:
    """Join the draws with every system in one distributed pass.

    Every partition of every system (a) keeps its rows whose key is among the broadcast sampled
    (and extra) keys — the semi-join giving p_i(x) = w_i(x) / W_i of every sampled key in every
    system — and (b) hashes its support (key, w) pairs into ``B = ceil(Σ support / bucket_rows)``
    buckets; one task per bucket computes that bucket's Σ w_i w_j and support patterns, and
    checks that no system lists a key twice.

    Parameters
    ----------
    systems : sequence of System, length m
    weights : sequence of SystemWeights, length m
    draws : sequence of ndarray, length m
        Every system's drawn keys (with repeats).
    extra_keys : ndarray, optional
        Further keys whose pool membership is wanted (an exhaustive sample's correct keys).
    client : distributed.Client, optional
        Default in-process.
    partition_rows : int, default=2**20
        Rows per task.
    bucket_rows : int, default=2**22
        Support items per bucket task.

    Returns
    -------
    sample : JointSample
        Unlabeled; keys in order of first draw (system by system), as
        :meth:`prdist.importance.JointSample.from_draws` orders them.
    scores : ndarray of float64, shape (U, m)
    locations : ndarray of int64, shape (U, m, 2)
        Row group and row of every drawn key in every system (-1: absent), see :class:`DrawnSample`.
    extra_in_pool : ndarray of bool or None
    stats : dict
    """
    owner = "join_sample"
    systems, weights, draws = tuple(systems), tuple(weights), [np.asarray(d) for d in draws]
    m = len(systems)
    if not (len(weights) == len(draws) == m) or m == 0:
        raise ParameterError(f"{owner} needs one SystemWeights and one draw array per system.")
    partition_rows = check_int(partition_rows, name="partition_rows", owner=owner, low=1)
    bucket_rows = check_int(bucket_rows, name="bucket_rows", owner=owner, low=1)
    started = time.perf_counter()
    drawn = _key_index(np.concatenate(draws)).unique()
    universe = drawn
    if extra_keys is not None and len(extra_keys):
        universe = drawn.append(_key_index(np.asarray(extra_keys))).unique()
    buckets = max(1, -(-sum(w.support for w in weights) // bucket_rows))
    partitions = [s.resource.partitions(partition_rows) for s in systems]
    groups = [(_join_task, parts, (s.resource.fs, s.resource.key, s.resource.score, w.spec, displays(s.resource)))
              for s, w, parts in zip(systems, weights, partitions)]
    owners = [j for j, parts in enumerate(partitions) for _ in parts]
    matches, bucket_results = map_shuffle(client, groups, _bucket_task, buckets, reduce_args=(m, owners),
                                          broadcast={"wanted": universe, "buckets": buckets})
    normalisers = np.array([w.normaliser for w in weights])
    overlaps, patterns = _bucket_summaries(bucket_results, systems, normalisers)
    scores, w_matrix, locations = _semi_join(matches, owners, systems, universe)

    u = len(drawn)
    probabilities = w_matrix[:u] / normalisers
    counts = np.column_stack([np.bincount(drawn.get_indexer(d), minlength=u) for d in draws]) if u else np.zeros((0, m), np.int64)
    outside = (counts > 0) & (probabilities <= 0)
    if outside.any():
        x, j = np.argwhere(outside)[0]
        raise DataError(
            f"System {systems[j].name!r} ({systems[j].resource.url}) changed while it was read: "
            f"its drawn key {drawn[x]!r} is no longer in it with positive probability. Compare a "
            "stable snapshot of every system."
        )
    sample = JointSample(
        systems=tuple(s.name for s in systems),
        keys=np.asarray(drawn),
        probabilities=probabilities,
        counts=counts,
        labels=np.full(u, np.nan),
        overlaps=overlaps,
        support_patterns=patterns,
    )
    extra_in_pool = None
    if extra_keys is not None:
        rows = universe.get_indexer(_key_index(np.asarray(extra_keys)))
        extra_in_pool = (w_matrix[rows] > 0).any(axis=1)
    stats = {
        "seconds": time.perf_counter() - started,
        "bytes_read": int(sum(s.resource.bytes_of(range(len(s.resource.row_groups)), [s.resource.key, s.resource.score]) for s in systems)),
        "tasks": len(owners),
        "buckets": buckets,
    }
    return sample, scores[:u], locations[:u], extra_in_pool, stats


def _duplicate_key_error(system: System, key) -> DataError:
    return DataError(
        f"The key {key!r} occurs more than once in system {system.name!r} ({system.resource.url}). "
        "Keys must be unique: deduplicate the system (for example keep the highest score)."
    )


def _bucket_summaries(bucket_results, systems, normalisers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Duplicates first, then Σ w_i w_j / (W_i W_j) and the distinct support patterns."""
    for _, _, repeated in bucket_results:
        if repeated is not None:
            j, dup = repeated
            raise _duplicate_key_error(systems[j], dup)
    overlaps = sum(r[0] for r in bucket_results) / np.outer(normalisers, normalisers)
    packed = np.concatenate([r[1] for r in bucket_results])
    patterns = np.unpackbits(_unique_rows(packed), axis=1, count=len(systems)).astype(bool)
    return overlaps, patterns


def _semi_join(matches, owners: list[int], systems, universe: pd.Index) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The score (NaN: absent) and the weight of every wanted key in every system, (U, m) each,
    and its (row group, row), (U, m, 2) (-1: absent)."""
    m = len(systems)
    scores = np.full((len(universe), m), np.nan)
    w_matrix = np.zeros((len(universe), m))
    locations = np.full((len(universe), m, 2), -1, dtype=np.int64)
    for j in range(m):
        parts = [match for match, owner in zip(matches, owners) if owner == j]
        keys = np.concatenate([p[0] for p in parts])
        dup = pd.Series(keys).duplicated().to_numpy()
        if dup.any():
            raise _duplicate_key_error(systems[j], keys[np.flatnonzero(dup)[0]])
        rows = universe.get_indexer(keys)
        scores[rows, j] = np.concatenate([p[1] for p in parts])
        w_matrix[rows, j] = np.concatenate([p[2] for p in parts])
        locations[rows, j, 0] = np.concatenate([p[3] for p in parts])
        locations[rows, j, 1] = np.concatenate([p[4] for p in parts])
    return scores, w_matrix, locations


# --------------------------------------------------------------------------------------------
# Item columns: what an annotator reads about a drawn key
# --------------------------------------------------------------------------------------------


def item_column_names(resource) -> list[str]:
    """The columns of a system that describe its items: all but the key, the score and ``label``
    (a truth column, in simulations, must never reach an annotator)."""
    return [c for c in resource.schema.names if c not in (resource.key, resource.score, "label")]


def _items_task(item, fs, key: str, columns: list[str], names: dict):
    """Read ``columns`` at the given rows of the row groups of one file; return (positions, frame).

    The key is read too and must be the one the join found there: a file replaced since would
    otherwise lend another item's columns.
    """
    (path, groups), footers = item
    display = names[path]
    positions, frames = [], []
    with open_parquet(fs, path, display=display, footer=footers.get(path)) as parquet:
        for index, rows, wanted_positions, expected in groups:
            group = RowGroupReader(parquet, index, display)
            table = group.read([key, *columns]).take(pa.array(rows))
            where = group.where
            if not np.array_equal(keys_of(table, key, where), expected):
                raise DataError(f"{where} changed while it was read: its rows hold other keys than the join found. "
                                "Compare a stable snapshot of every system.")
            positions.append(wanted_positions)
            frames.append(table.select(columns).to_pandas(types_mapper=_nullable_integers))
    return np.concatenate(positions), pd.concat(frames, ignore_index=True)


def _nullable_integers(dtype: pa.DataType):
    # Integer columns stay integers where another system's items lack them (NaN would make 7 "7.0").
    return pd.Int64Dtype() if pa.types.is_integer(dtype) and not pa.types.is_uint64(dtype) else None


def item_columns(systems, drawn: DrawnSample, wanted: np.ndarray, *, client=None) -> Extraction:
    """The item columns of the drawn keys ``wanted``, read where the join found them.

    Every key's columns come from the *first* system (in the order given) that outputs it and has
    item columns, whole: where two systems output one key with different item columns, the first
    system's values are taken, and a column only a later system has stays empty for that key (a
    key that no system with item columns outputs gets an empty row). Only the row groups
    holding a wanted key in its first system are read, and only the key and item columns of those
    (:func:`item_column_names`): a targeted pass after the join, so that a rerun whose drawn items
    are all labeled reads nothing.

    Parameters
    ----------
    systems : sequence of System
        The systems of ``drawn``, in its order.
    drawn : DrawnSample
        With ``locations`` (from :func:`draw_sample`).
    wanted : ndarray of bool, shape (U,)
        Which drawn keys (``drawn.sample.keys``) to describe.
    client : distributed.Client, optional
        One task per file holding wanted rows; default in-process.

    Returns
    -------
    Extraction
        ``items``: one row per wanted key, in the order of ``drawn.sample.keys``, the union of
        the systems' item columns (the first system's first); ``bytes_read``: the compressed
        bytes read.
    """
    systems = tuple(systems)
    wanted = np.asarray(wanted, dtype=bool)
    if drawn.locations is None or wanted.shape != drawn.sample.keys.shape:
        raise ParameterError("item_columns needs a DrawnSample from draw_sample and one flag per drawn key.")
    chosen = np.flatnonzero(wanted)
    locations = drawn.locations[chosen]
    described = np.array([bool(item_column_names(s.resource)) for s in systems])
    holds = (locations[:, :, 0] >= 0) & described
    # The first describing system of each key; -1 where none outputs it.
    first = np.where(holds.any(axis=1), np.argmax(holds, axis=1), -1)
    found, frames, bytes_read = [], [], 0
    for j, system in enumerate(systems):
        columns, mine = item_column_names(system.resource), np.flatnonzero(first == j)
        if not mine.size:
            continue
        res = system.resource
        items, units = _item_reads(res, locations[mine, j], mine, drawn.sample.keys[chosen[mine]])
        for positions, frame in run_tasks(client, _items_task, items, res.fs, res.key, columns, displays(res)):
            found.append(positions)
            frames.append(frame)
        bytes_read += res.bytes_of(units, [res.key, *columns])
    if not frames:
        out = pd.DataFrame(index=range(chosen.size))
    else:
        out = pd.concat(frames, ignore_index=True, sort=False)
        out.index = np.concatenate(found)
        out = out.reindex(range(chosen.size))
    return Extraction(out, bytes_read=int(bytes_read))


def _item_reads(res, locations: np.ndarray, positions: np.ndarray, keys: np.ndarray) -> tuple[list, list[int]]:
    """The tasks of :func:`item_columns` for one system: one per file, ((path, groups), {path:
    footer}) with groups [(row-group index, rows, positions, keys)] (the footer read at opening,
    shipped once by the executor, as the draws' tasks get it), and the row groups read."""
    by_file: dict[int, list] = {}
    order = np.argsort(locations[:, 0], kind="stable")
    units, starts = np.unique(locations[order, 0], return_index=True)
    for unit, at in zip(units.tolist(), np.split(order, starts[1:])):
        rg = res.row_groups[unit]
        by_file.setdefault(rg.file, []).append((rg.index, locations[at, 1], positions[at], keys[at]))
    footers = {f: {} if res.footer(f) is None else {res.files[f]: res.footer(f)} for f in by_file}
    return [((res.files[f], groups), footers[f]) for f, groups in by_file.items()], units.tolist()


def draw_sample(systems, params: CompareParams, *, extra_keys=None, client=None,
                partition_rows: int = DEFAULT_PARTITION_ROWS,
                bucket_rows: int = DEFAULT_BUCKET_ROWS) -> DrawnSample:
    """Weigh, allocate, draw and join: the unlabeled joint sample of every system.

    Parameters
    ----------
    systems : sequence of System
    params : CompareParams
    extra_keys : ndarray, optional
        Keys whose pool membership is wanted too (an exhaustive sample's correct keys).
    client : distributed.Client, optional
        Default in-process.
    partition_rows, bucket_rows : int
        Rows per task and support items per bucket (see :func:`join_sample`).

    Returns
    -------
    DrawnSample
    """
    systems = tuple(systems)
    if not isinstance(params, CompareParams):
        raise ParameterError(f"The 'params' parameter of draw_sample must be CompareParams. Got {params!r} instead.")
    seconds, bytes_read = {}, {}
    started = time.perf_counter()
    weights = tuple(system_weights(s, params.distribution, client=client, partition_rows=partition_rows) for s in systems)
    seconds["weigh"] = time.perf_counter() - started
    bytes_read["weigh"] = sum(w.bytes_read for w in weights)
    sizes = allocate_budget([w.support for w in weights], params.budget, params.allocation)

    started = time.perf_counter()
    generators = [np.random.default_rng(child) for child in np.random.SeedSequence(params.seed).spawn(len(systems))]
    draws, bytes_read["draw"] = [], 0
    for system, w, n, rng in zip(systems, weights, sizes.tolist(), generators):
        keys, read = draw_items(system, w, n, rng, client=client)
        draws.append(keys)
        bytes_read["draw"] += read
    seconds["draw"] = time.perf_counter() - started

    sample, scores, locations, in_pool, join_stats = join_sample(
        systems, weights, draws, extra_keys=extra_keys, client=client,
        partition_rows=partition_rows, bucket_rows=bucket_rows,
    )  # fmt: skip
    seconds["join"] = join_stats["seconds"]
    bytes_read["join"] = join_stats["bytes_read"]
    stats = {"seconds": seconds, "bytes_read": bytes_read, "join_tasks": join_stats["tasks"], "buckets": join_stats["buckets"]}
    scores.setflags(write=False)
    locations.setflags(write=False)
    return DrawnSample(sample, scores, weights, sizes, in_pool, stats, locations)


