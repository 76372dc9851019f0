"""Several systems (or releases) sharing labels, at scale: the dataflow behind ``prdist compare``.

Systems are Parquet resources (``key``, ``score``) on any fsspec URL; the estimators are those of
:mod:`prdist.importance` (Chaganty et al., EMNLP 2017). One comparison runs these steps, each a
function here that the Prefect flow ``flows/compare_systems.py`` calls as one task:

1. **Open** every system from its Parquet metadata (:func:`open_systems`): row counts, row groups,
   fingerprint. All systems type their keys alike: a key is one item in every system and in the
   label store.
2. **Weigh** (:func:`system_weights`). System i's sampling distribution is p_i(x) = w_i(x) / W_i
   with the unnormalised weight w_i(x) = 1 (uniform), 1 on the k items of highest rank and 0
   elsewhere (top-k), or score(x) ** a (score-power). The per-row-group totals of w_i and the
   normaliser W_i come from the Parquet metadata for the uniform distribution (row counts) and
   from one distributed sum over the score column otherwise; top-k first finds the item at rank k
   without a sort (:func:`prdist.dataflow.select.select_ranks`).
3. **Allocate** the total budget over the systems (:func:`allocate_budget`): ``"even"`` (default)
   gives every system ``budget // m`` draws, the first ``budget % m`` systems one more;
   ``"proportional"`` gives every system 2 draws, then the rest in proportion to its support size
   (N, k, or the items of positive score) by largest remainders, ties to the earlier system, so
   that the pooled draws spread like a uniform sample of the pooled outputs. Every system needs
   at least 2 draws: its variance term needs them.
4. **Draw** (:func:`draw_items`) n_i items i.i.d. from p_i: n_i uniforms u from system i's own
   child of ``SeedSequence(seed)``, each mapped by the inverse cumulative distribution over the
   rows in storage order (files in natural path order, row groups in file order). The row-group
   totals say which row group holds each draw; only those row groups are read.
5. **Join** (:func:`join_sample`), one pass over every system, one Dask task per partition:
   (a) a *semi-join*: the partition keeps the rows whose key is in the broadcast set of sampled
   keys, which gives p_i(x) of every sampled key in every system (and the pool membership of an
   exhaustive sample's keys); (b) a *hash shuffle* of the support (key, weight) pairs into
   buckets by key hash; one task per bucket adds Σ_x w_i(x) w_j(x) and collects the distinct
   support patterns {i : w_i(x) > 0}, the two summaries of the full outputs that
   :class:`prdist.importance.JointSample` needs (the default weights and the check that every
   mixture covers its system). No system is ever collected whole: a task reads one row group at a
   time and holds the support of its partition (at most ``partition_rows`` rows), a bucket task
   about ``bucket_rows`` support items of all systems together; the driver holds only the sampled
   keys, an (m, m) matrix per bucket and the distinct patterns.
6. **Labels** (:func:`attach_labels`) from the shared label store, by key: one label serves every
   system and every release that outputs the item. Missing labels go to an annotation task
   (:func:`annotation_items`: each key with the systems that output it and their scores).
7. **Estimate** (:func:`estimate_systems`) the joint precision of every system with its
   interval, and recall when an exhaustive sample is given; **write** (:func:`write_compare`)
   ``compare.parquet``, ``sample.parquet`` and, last, ``manifest.json`` into a run directory.

Draws and the in-memory core
----------------------------
With rows in storage order, the draw of step 4 is the one :func:`prdist.importance.draw_joint_sample`
makes on the same rows with the same seed: ``Generator.choice(N, p=p)`` draws one uniform u per
draw and returns the first row whose cumulative probability exceeds u. Here the uniform
distribution takes row ``floor(u N)``, top-k the ``floor(u k)``-th member of the top k in storage
order, and score-power the first row whose cumulative weight exceeds ``u W``. The two agree unless
u falls within floating-point rounding of a boundary between two rows (NumPy accumulates p in
floating point; the first two rules here are exact integer arithmetic): over all N boundaries an
event of probability at most about N²·1e-16 per draw (1e-8 at N = 10^4, 1e-4 at N = 10^6). The
dataflow's own rule is exact; only the agreement with NumPy's is approximate. The draws do not depend on how the rows are cut into files, row groups
or tasks, except (score-power only) through that same rounding of the cumulative sums.

Recall
------
Recall needs an exhaustive sample: keys labeled exhaustively within some scope (say, every
extraction of some sentences), passed as ``exhaustive`` (a label file: CSV, JSONL or Parquet with
``key`` and ``label``). Its correct keys give the pool recall θ̂ (the share the pool of systems
holds); with the pooled recall ν̂_i of the draws, recall r̂_i = θ̂ ν̂_i
(:func:`prdist.importance.estimate_recall`, balance weights over the pool). Without an exhaustive
sample, ``recall`` and ``recall_se`` are NaN (the manifest says so) and only ``pooled_recall`` (the
share of the pool's correct items that each system outputs) is reported. The exhaustive file's
labels answer no draw: import it into the label store as well for that.
"""

from __future__ import annotations

import math
import operator
import platform
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import __version__
from .._validation import check_choice, check_float, check_int
from ..errors import DataError, InputError, ParameterError
from ..importance import (
    BALANCE,
    OVERLAP,
    SCORE_POWER,
    TOP_K,
    UNIFORM,
    JointSample,
    SamplingDistribution,
    estimate_precision,
    estimate_recall,
)
from ..ranking import key_hash
from .artifacts import RunDirectory, RunOutcome, run_id
from .labels import export_annotation_task, lookup_labels, normalise_keys, read_label_file
from .resource import (
    DEFAULT_PARTITION_ROWS,
    Partition,
    Resource,
    descending_ordinal,
    displays,
    extract_ranks,
    keys_of,
    open_parquet,
    open_resource,
    read_group,
    run_tasks,
    scores_of,
)
from .select import select_ranks

__all__ = [
    "ALLOCATIONS",
    "DEFAULT_BUCKET_ROWS",
    "CompareParams",
    "DrawnSample",
    "ExhaustiveSample",
    "LabeledSample",
    "System",
    "SystemWeights",
    "allocate_budget",
    "annotation_items",
    "attach_labels",
    "draw_items",
    "draw_sample",
    "estimate_systems",
    "join_sample",
    "open_systems",
    "parse_system",
    "read_exhaustive",
    "system_weights",
    "write_compare",
]

EVEN, PROPORTIONAL = "even", "proportional"
ALLOCATIONS = (EVEN, PROPORTIONAL)

#: Support items per bucket of the hash shuffle of :func:`join_sample` (memory of one bucket task).
DEFAULT_BUCKET_ROWS = 1 << 22

# A system name names rows of compare.parquet and columns of the annotation task.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# compare.parquet: the contract's columns first, then the rest.
_CONTRACT_COLUMNS = [
    "system", "precision", "precision_se", "precision_ci_low", "precision_ci_high",
    "recall", "recall_se", "n_samples",
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Parameters and systems
# --------------------------------------------------------------------------------------------


def parse_system(text: str) -> tuple[str, str]:
    """Split a ``NAME=URL`` system option into its name and URL.

    Examples
    --------
    >>> parse_system("reverb=s3://bucket/reverb")
    ('reverb', 's3://bucket/reverb')
    """
    name, sep, url = str(text).partition("=")
    if not sep or not name or not url.strip():
        raise InputError(
            f"--system {text!r} is not NAME=URL. Write it like 'reverb=s3://bucket/systems/reverb'."
        )
    _check_name(name)
    return name, url


def _check_name(name) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ParameterError(
            f"The system name {name!r} must start with a letter or digit and hold only letters, "
            "digits, '_', '.' and '-' (it names rows and columns of the results). Rename it."
        )
    return name


@dataclass(frozen=True)
class CompareParams:
    """Everything that decides the numbers of a comparison (and so its run id).

    Parameters
    ----------
    budget : int
        Total draws over all systems, >= 2 per system.
    seed : int, default=0
        Seed of every draw: system j draws from child j of ``SeedSequence(seed)``.
    distribution : SamplingDistribution, default=uniform
        The sampling distribution of every system (uniform, top-k or score-power).
    allocation : {"even", "proportional"}, default="even"
        How the budget is split (see the module notes).
    weights : {"overlap", "balance"}, default="overlap"
        Mixture weights of the joint precision estimator (:func:`prdist.importance.mixture_weights`).
    confidence : float, default=0.95
        Level of the normal-approximation intervals, in (0, 1).

    Examples
    --------
    >>> CompareParams(budget=600, seed=1).to_dict()["distribution"]
    {'kind': 'uniform', 'k': None, 'power': None}
    """

    budget: int
    seed: int = 0
    distribution: SamplingDistribution = field(default_factory=SamplingDistribution)
    allocation: str = EVEN
    weights: str = OVERLAP
    confidence: float = 0.95

    def __post_init__(self):
        owner = "CompareParams"
        object.__setattr__(self, "budget", check_int(self.budget, name="budget", owner=owner, low=2))
        object.__setattr__(self, "seed", check_int(self.seed, name="seed", owner=owner, low=0))
        if not isinstance(self.distribution, SamplingDistribution):
            raise ParameterError(
                f"The 'distribution' parameter of {owner} must be a SamplingDistribution. "
                f"Got {self.distribution!r} instead."
            )
        check_choice(self.allocation, name="allocation", owner=owner, choices=ALLOCATIONS)
        check_choice(self.weights, name="weights", owner=owner, choices=(OVERLAP, BALANCE))
        confidence = check_float(self.confidence, name="confidence", owner=owner, low=0.0, high=1.0,
                                 low_open=True, high_open=True)
        object.__setattr__(self, "confidence", confidence)

    def to_dict(self) -> dict:
        d = self.distribution
        return {
            "budget": self.budget,
            "seed": self.seed,
            "distribution": {"kind": d.kind, "k": d.k, "power": d.power},
            "allocation": self.allocation,
            "weights": self.weights,
            "confidence": self.confidence,
        }


@dataclass(frozen=True, eq=False)
class System:
    """One named system: an opened Parquet resource."""

    name: str
    resource: Resource


def open_systems(systems, *, storage_options=None, key: str = "key", score: str = "score") -> tuple[System, ...]:
    """Open every system from its Parquet metadata.

    Parameters
    ----------
    systems : mapping of str to str, or sequence of (name, url) pairs
        Unique system names and their Parquet datasets (path or fsspec URL), in result order.
    storage_options : dict, optional
        fsspec options for every URL.
    key, score : str, default="key", "score"
        Column names, the same in every system.

    Returns
    -------
    tuple of System

    Raises
    ------
    InputError
        A name repeats or is malformed, a URL cannot be opened, or the systems type their keys
        differently.
    """
    pairs = list(systems.items()) if isinstance(systems, Mapping) else [tuple(p) for p in systems]
    if not pairs or not all(len(p) == 2 for p in pairs):
        raise ParameterError("Name at least one system as NAME=URL (a name and a Parquet dataset).")
    names = [_check_name(name) for name, _ in pairs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ParameterError(f"The system name {repeated[0]!r} is given twice; every system needs its own name.")
    opened = tuple(
        System(name, open_resource(url, storage_options=storage_options, key=key, score=score))
        for name, url in pairs
    )
    kinds = {s.resource.key_kind for s in opened}
    if len(kinds) > 1:
        first = opened[0]
        other = next(s for s in opened if s.resource.key_kind != first.resource.key_kind)
        raise DataError(
            f"The systems type their keys differently: {first.name!r} has {first.resource.key_kind} "
            f"keys, {other.name!r} {other.resource.key_kind} keys. An item must have one key in "
            "every system: write every system with one key type."
        )
    return opened


def allocate_budget(support_sizes, budget, allocation: str = EVEN) -> np.ndarray:
    """Split a total budget of draws over the systems.

    Parameters
    ----------
    support_sizes : array-like of int, shape (m,)
        Items with positive probability in every system (used by ``"proportional"``).
    budget : int
        Total draws, at least 2 per system.
    allocation : {"even", "proportional"}, default="even"
        ``"even"``: ``budget // m`` each, one more for the first ``budget % m`` systems.
        ``"proportional"``: 2 each, the rest in proportion to the support sizes (largest
        remainders; ties go to the earlier system).

    Returns
    -------
    ndarray of int64, shape (m,)
        Draws per system, summing to ``budget``.

    Examples
    --------
    >>> allocate_budget([100, 300, 50], 10).tolist()
    [4, 3, 3]
    >>> allocate_budget([100, 300], 10, "proportional").tolist()
    [4, 6]
    """
    owner = "allocate_budget"
    sizes = np.asarray(support_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu" or (sizes < 1).any():
        raise ParameterError(f"The 'support_sizes' parameter of {owner} must be positive integers, one per system. Got {support_sizes!r}.")
    m = sizes.size
    budget = check_int(budget, name="budget", owner=owner, low=1)
    check_choice(allocation, name="allocation", owner=owner, choices=ALLOCATIONS)
    if budget < 2 * m:
        raise ParameterError(
            f"The budget must be at least 2 draws per system (2 x {m} = {2 * m}): each system's "
            f"variance needs two draws. Got {budget} instead."
        )
    if allocation == EVEN:
        out = np.full(m, budget // m, dtype=np.int64)
        out[: budget % m] += 1
        return out
    rest = budget - 2 * m
    share = rest * sizes.astype(np.float64) / sizes.sum()
    out = np.floor(share).astype(np.int64)
    order = np.argsort(-(share - out), kind="stable")
    out[order[: rest - int(out.sum())]] += 1
    return out + 2


# --------------------------------------------------------------------------------------------
# Weights: p_i(x) = w_i(x) / W_i
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WeightSpec:
    """How a task computes w(x): the distribution, and for top-k the item at rank k."""

    kind: str
    power: float | None = None
    threshold_ordinal: int | None = None  # descending_ordinal of the rank-k score
    threshold_hash: int | None = None  # key hash of the rank-k item
    threshold_key: object = None


def _read_weighted(parquet, index: int, spec: _WeightSpec, key: str, score: str, *, display: str,
                   with_keys: bool, with_scores: bool):
    """Read one row group; return (keys or None, scores or None, w) with w float64."""
    where = f"{display} row group {index}"
    need_scores = with_scores or spec.kind != UNIFORM
    columns = ([key] if with_keys else []) + ([score] if need_scores else [])
    table = read_group(parquet, index, columns, display=display) if columns else None
    keys = keys_of(table, key, where) if with_keys else None
    scores = scores_of(table, score, where) if need_scores else None
    if spec.kind == UNIFORM:
        return keys, scores, np.ones(parquet.metadata.row_group(index).num_rows)
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
    # Top-k: rank order is (descending score, key hash, key); a member is at or before rank k.
    ordinal = descending_ordinal(scores)
    threshold = np.uint64(spec.threshold_ordinal)
    member = ordinal < threshold
    tied = ordinal == threshold
    if tied.any():
        if keys is None:
            keys_all = keys_of(read_group(parquet, index, [key], display=display), key, where)
        else:
            keys_all = keys
        tied_keys = keys_all[tied]
        hashes = key_hash(tied_keys)
        h = np.uint64(spec.threshold_hash)
        member[tied] = (hashes < h) | ((hashes == h) & (tied_keys <= spec.threshold_key))
    return keys, scores, member.astype(np.float64)


def _totals_task(partition: Partition, fs, key: str, score: str, spec: _WeightSpec, names: dict):
    """Per row group of the partition: (Σ w, number of items with w > 0)."""
    display = names[partition.path]
    out = []
    with open_parquet(fs, partition.path, display=display, footer=partition.footer) as parquet:
        for index in partition.indices:
            _, _, w = _read_weighted(parquet, index, spec, key, score, display=display, with_keys=False, with_scores=False)
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
        find = extract_ranks if res.is_sorted_claim() else select_ranks
        item = find(res, [k], client=client, columns=[])
        bytes_read += int(item.attrs.get("bytes_read", 0))
        key_k, score_k = item["key"].iloc[0], float(item["score"].iloc[0])
        key_k = int(key_k) if res.key_kind == "int" else str(key_k)
        spec = _WeightSpec(
            TOP_K,
            threshold_ordinal=int(descending_ordinal(np.array([score_k]))[0]),
            threshold_hash=int(key_hash(np.array([key_k], dtype=np.int64 if res.key_kind == "int" else object))[0]),
            threshold_key=key_k,
        )
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
    path, groups = item
    display = names[path]
    ids, keys = [], []
    with open_parquet(fs, path, display=display) as parquet:
        for index, draw_ids, targets in groups:
            group_keys, _, w = _read_weighted(parquet, index, spec, key, score, display=display, with_keys=True, with_scores=False)
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
    for g in np.unique(groups).tolist():
        rg = res.row_groups[g]
        chosen = np.flatnonzero(groups == g)
        by_file.setdefault(res.files[rg.file], []).append((rg.index, chosen, local[chosen]))
    items = list(by_file.items())
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


def _join_task(partition: Partition, fs, key: str, score: str, spec: _WeightSpec, wanted: pd.Index,
               buckets: int, names: dict):
    """One partition of one system: its rows with a wanted key, and its support hashed into buckets.

    Returns ((keys, scores, w) of the matching rows, [(keys, w) of bucket b for b in range(buckets)]).
    """
    display = names[partition.path]
    matched, pieces = [], [[] for _ in range(buckets)]
    with open_parquet(fs, partition.path, display=display, footer=partition.footer) as parquet:
        for index in partition.indices:
            keys, scores, w = _read_weighted(parquet, index, spec, key, score, display=display, with_keys=True, with_scores=True)
            hit = wanted.get_indexer(keys) >= 0
            matched.append((keys[hit], scores[hit], w[hit]))
            support = w > 0
            support_keys, support_w = keys[support], w[support]
            bucket = (key_hash(support_keys) % np.uint64(buckets)).astype(np.intp)
            order = np.argsort(bucket, kind="stable")
            bounds = np.searchsorted(bucket[order], np.arange(buckets + 1))
            for b in range(buckets):
                rows = order[bounds[b]:bounds[b + 1]]
                if rows.size:
                    pieces[b].append((support_keys[rows], support_w[rows]))
    match = tuple(np.concatenate([m[i] for m in matched]) for i in range(3))
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


def _piece(result, b: int):
    return result[1][b]


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
    """

    sample: JointSample
    scores: np.ndarray
    weights: tuple[SystemWeights, ...]
    sizes: np.ndarray
    extra_in_pool: np.ndarray | None
    stats: dict


def join_sample(systems, weights, draws, *, extra_keys=None, client=None,
                partition_rows: int = DEFAULT_PARTITION_ROWS,
                bucket_rows: int = DEFAULT_BUCKET_ROWS) -> tuple[JointSample, np.ndarray, np.ndarray | None, dict]:
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
    u_all = len(universe)
    buckets = max(1, -(-sum(w.support for w in weights) // bucket_rows))

    tasks = [(j, part) for j, s in enumerate(systems) for part in s.resource.partitions(partition_rows)]
    names = [displays(s.resource) for s in systems]

    def task_args(j, part):
        res = systems[j].resource
        return (part, res.fs, res.key, res.score, weights[j].spec)

    if client is None:
        results = [_join_task(*task_args(j, part), universe, buckets, names[j]) for j, part in tasks]
        matches = [r[0] for r in results]
        bucket_results = [
            _bucket_task(m, [j for j, _ in tasks], *[r[1][b] for r in results]) for b in range(buckets)
        ]
    else:
        [wanted] = client.scatter([universe], broadcast=True)
        futures = [client.submit(_join_task, *task_args(j, part), wanted, buckets, names[j], pure=False) for j, part in tasks]
        match_futures = [client.submit(operator.itemgetter(0), f, pure=False) for f in futures]
        bucket_futures = [
            client.submit(_bucket_task, m, [j for j, _ in tasks], *[client.submit(_piece, f, b, pure=False) for f in futures], pure=False)
            for b in range(buckets)
        ]
        try:
            matches = client.gather(match_futures)
            bucket_results = client.gather(bucket_futures)
        finally:
            for f in [*futures, *match_futures, *bucket_futures, wanted]:
                f.release()

    # Bucket summaries: duplicates first, then Σ w_i w_j / (W_i W_j) and the support patterns.
    for _, _, repeated in bucket_results:
        if repeated is not None:
            j, dup = repeated
            raise DataError(
                f"The key {dup!r} occurs more than once in system {systems[j].name!r} "
                f"({systems[j].resource.url}). Keys must be unique: deduplicate the system (for "
                "example keep the highest score)."
            )
    normalisers = np.array([w.normaliser for w in weights])
    overlaps = sum(r[0] for r in bucket_results) / np.outer(normalisers, normalisers)
    packed = np.concatenate([r[1] for r in bucket_results])
    patterns = np.unpackbits(_unique_rows(packed), axis=1, count=m).astype(bool)

    # Semi-join results: the score and weight of every wanted key in every system.
    scores = np.full((u_all, m), np.nan)
    w_matrix = np.zeros((u_all, m))
    for j in range(m):
        parts = [matches[i] for i, (jj, _) in enumerate(tasks) if jj == j]
        keys = np.concatenate([p[0] for p in parts])
        dup = pd.Series(keys).duplicated().to_numpy()
        if dup.any():
            raise DataError(
                f"The key {keys[np.flatnonzero(dup)[0]]!r} occurs more than once in system "
                f"{systems[j].name!r} ({systems[j].resource.url}). Keys must be unique: deduplicate "
                "the system (for example keep the highest score)."
            )
        rows = universe.get_indexer(keys)
        scores[rows, j] = np.concatenate([p[1] for p in parts])
        w_matrix[rows, j] = np.concatenate([p[2] for p in parts])

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
        "tasks": len(tasks),
        "buckets": buckets,
    }
    return sample, scores[:u], extra_in_pool, stats


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

    sample, scores, in_pool, join_stats = join_sample(
        systems, weights, draws, extra_keys=extra_keys, client=client,
        partition_rows=partition_rows, bucket_rows=bucket_rows,
    )  # fmt: skip
    seconds["join"] = join_stats["seconds"]
    bytes_read["join"] = join_stats["bytes_read"]
    stats = {"seconds": seconds, "bytes_read": bytes_read, "join_tasks": join_stats["tasks"], "buckets": join_stats["buckets"]}
    scores.setflags(write=False)
    return DrawnSample(sample, scores, weights, sizes, in_pool, stats)


# --------------------------------------------------------------------------------------------
# Exhaustive sample, labels, annotation task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ExhaustiveSample:
    """The correct keys of an exhaustively labeled scope (for recall).

    ``keys`` are typed like the systems' keys; ``labeled`` counts every labeled key of the file,
    ``fingerprint`` identifies its content.
    """

    url: str
    keys: np.ndarray
    labeled: int
    fingerprint: str


def read_exhaustive(url: str, *, key_kind: str, storage_options=None) -> ExhaustiveSample:
    """Read an exhaustive sample: a label file (CSV, JSONL or Parquet with ``key``, ``label``).

    Parameters
    ----------
    url : str
        The label file.
    key_kind : {"int", "string"}
        The systems' key type (``Resource.key_kind``); keys are converted to it.
    storage_options : dict, optional

    Returns
    -------
    ExhaustiveSample
        Its correct keys (label 1), at least 2 of them.
    """
    check_choice(key_kind, name="key_kind", owner="read_exhaustive", choices=("int", "string"))
    frame = read_label_file(url, storage_options=storage_options)
    if frame["key"].duplicated().any():
        clash = frame.groupby("key")["label"].nunique()
        if (clash > 1).any():
            raise DataError(
                f"The exhaustive sample {url!r} labels {clash.index[clash > 1][0]!r} both 0 and 1. "
                "Resolve the disagreement first."
            )
        frame = frame.drop_duplicates("key")
    text = frame.loc[frame["label"] == 1, "key"].astype(str).to_numpy(dtype=object)
    if text.size < 2:
        raise DataError(
            f"The exhaustive sample {url!r} holds {text.size} correct item(s); recall needs at least "
            "2. Label a larger scope exhaustively."
        )
    if key_kind == "int":
        numbers = pd.to_numeric(pd.Series(text), errors="coerce")
        bad = numbers.isna() | (numbers % 1 != 0)
        if bad.any():
            raise DataError(
                f"The exhaustive sample {url!r} has the key {text[int(np.flatnonzero(bad)[0])]!r}, "
                "but the systems have integer keys. Use the systems' keys."
            )
        keys = numbers.to_numpy().astype(np.int64)
    else:
        keys = text
    return ExhaustiveSample(url=url, keys=keys, labeled=len(frame), fingerprint=run_id(sorted(map(str, text.tolist()))))


@dataclass(frozen=True, eq=False)
class LabeledSample:
    """The joint sample with the labels the store holds, and what the lookup found."""

    sample: JointSample
    missing: int
    relabeled: int
    relabeled_examples: tuple[str, ...]


def attach_labels(drawn: DrawnSample, store: str | None, *, storage_options=None) -> LabeledSample:
    """Look every drawn key up in the shared label store (by key: one label serves every system).

    A store that does not exist yet holds no labels.
    """
    keys = drawn.sample.keys
    lookup = lookup_labels(store, keys, storage_options=storage_options)
    values = lookup.labels.reindex(normalise_keys(keys).to_numpy()).to_numpy(dtype=np.float64)
    sample = drawn.sample.with_labels(keys, values)
    return LabeledSample(sample, int(np.isnan(sample.labels).sum()), lookup.relabeled, lookup.examples)


def annotation_items(drawn: DrawnSample, sample: JointSample) -> pd.DataFrame:
    """The drawn items still without a label: what an annotator needs to see.

    Returns
    -------
    pandas.DataFrame
        One row per unlabeled drawn key, in order of first draw: ``key``, ``systems`` (the
        systems that output it, ``;``-separated), ``draws`` (how often it was drawn in all), then
        ``score_<system>`` for every system (NaN where the system does not output it).
    """
    unknown = np.isnan(sample.labels)
    names = np.array(sample.systems, dtype=object)
    present = ~np.isnan(drawn.scores[unknown])
    frame = pd.DataFrame(
        {
            "key": sample.keys[unknown],
            "systems": [";".join(names[row]) for row in present],
            "draws": sample.counts[unknown].sum(axis=1),
        }
    )
    for j, name in enumerate(sample.systems):
        frame[f"score_{name}"] = drawn.scores[unknown, j]
    return frame


# --------------------------------------------------------------------------------------------
# Estimates
# --------------------------------------------------------------------------------------------


def estimate_systems(sample: JointSample, drawn: DrawnSample, params: CompareParams, *,
                     exhaustive_in_pool=None) -> tuple[pd.DataFrame, dict]:
    """Estimate every system's precision (and recall, given an exhaustive sample).

    Parameters
    ----------
    sample : JointSample
        Fully labeled (else :class:`~prdist.errors.AwaitingLabels`).
    drawn : DrawnSample
        For the system sizes.
    params : CompareParams
    exhaustive_in_pool : array-like of bool, optional
        Pool membership of an exhaustive sample's correct keys (``DrawnSample.extra_in_pool``).

    Returns
    -------
    frame : pandas.DataFrame
        The rows of compare.parquet: system, precision, precision_se, precision_ci_low,
        precision_ci_high, recall, recall_se, n_samples, then recall_ci_low, recall_ci_high,
        pooled_recall, pooled_recall_se, simple_precision, simple_precision_se, simple_ci_low,
        simple_ci_high, n_items, support.
    diagnostics : dict
        Mixture weights, overlaps, pool recall and notes (why a recall is NaN).
    """
    est = estimate_precision(sample, weights=params.weights, confidence=params.confidence)
    frame = est.to_frame()
    m = len(sample.systems)
    notes = []
    diagnostics = {"weights": est.weights.tolist(), "overlaps": sample.overlaps.tolist()}
    nan = np.full(m, np.nan)
    recall = {"recall": nan, "recall_se": nan, "recall_ci_low": nan, "recall_ci_high": nan,
              "pooled_recall": nan, "pooled_recall_se": nan}
    if exhaustive_in_pool is None:
        # ν̂ does not depend on the exhaustive sample (only θ̂ does): any valid one gives ν̂ alone.
        in_pool, note = np.ones(2, dtype=bool), (
            "recall is NaN: it needs an exhaustive sample (--exhaustive); pooled_recall is the share "
            "of the pool's correct items that each system outputs."
        )
    else:
        in_pool, note = np.asarray(exhaustive_in_pool, dtype=bool), None
    try:
        rec = estimate_recall(sample, exhaustive_in_pool=in_pool, confidence=params.confidence)
    except DataError as exc:
        # No correct item among the draws: recall cannot be weighed, precision still stands.
        notes.append(f"recall and pooled_recall are NaN: {exc}")
    else:
        recall["pooled_recall"] = rec.pooled_recall
        recall["pooled_recall_se"] = np.sqrt(rec.pooled_recall_variance)
        if note is None:
            recall.update(recall=rec.recall, recall_se=rec.se, recall_ci_low=rec.ci_low, recall_ci_high=rec.ci_high)
            diagnostics.update(pool_recall=rec.pool_recall, pool_recall_se=math.sqrt(rec.pool_recall_variance),
                               n_exhaustive=rec.n_exhaustive)
        else:
            notes.append(note)
    for name, values in recall.items():
        frame[name] = values
    frame["n_items"] = np.array([w.n for w in drawn.weights], dtype=np.int64)
    frame["support"] = np.array([w.support for w in drawn.weights], dtype=np.int64)
    rest = [c for c in frame.columns if c not in _CONTRACT_COLUMNS]
    diagnostics["notes"] = notes
    return frame[_CONTRACT_COLUMNS + rest], diagnostics


# --------------------------------------------------------------------------------------------
# Run directory
# --------------------------------------------------------------------------------------------


def _sample_table(drawn: DrawnSample, sample: JointSample) -> pd.DataFrame:
    """sample.parquet: one row per (drawn key, system that outputs or drew it)."""
    present = ~np.isnan(drawn.scores) | (sample.counts > 0)
    x, j = np.nonzero(present)
    return pd.DataFrame(
        {
            "key": sample.keys[x],
            "system": np.array(sample.systems, dtype=object)[j],
            "score": drawn.scores[x, j],
            "probability": sample.probabilities[x, j],
            "draws": sample.counts[x, j],
            "label": sample.labels[x],
        }
    )


def write_compare(systems, drawn: DrawnSample, labeled: LabeledSample, params: CompareParams, *, out: str,
                  frame: pd.DataFrame | None = None, diagnostics: dict | None = None, labels: str | None = None,
                  exhaustive: ExhaustiveSample | None = None, storage_options=None) -> RunOutcome:
    """Write one comparison's run directory under ``out``, the manifest last.

    Complete (every drawn item labeled): ``compare.parquet``, ``sample.parquet``, ``manifest.json``.
    Awaiting labels: ``sample.parquet``, ``annotation_task.csv`` / ``.jsonl`` and the manifest
    (``awaiting_labels: true``). The run id hashes the systems' fingerprints, the parameters, the
    exhaustive sample and the drawn items' labels: a rerun with the same inputs and labels finds
    the committed run and writes nothing; new labels make a new run.
    """
    systems = tuple(systems)
    sample = labeled.sample
    missing = labeled.missing
    if missing == 0 and frame is None:
        raise ParameterError("write_compare needs the estimates ('frame') of a fully labeled sample.")
    labels_fp = run_id(np.nan_to_num(sample.labels, nan=-1).astype(np.int8).tobytes().hex())
    fingerprints = [[s.name, s.resource.fingerprint] for s in systems]
    exhaustive_fp = None if exhaustive is None else exhaustive.fingerprint
    run = RunDirectory(out, run_id("compare", fingerprints, params.to_dict(), exhaustive_fp, labels_fp), storage_options)
    if run.is_committed():
        manifest = run.read_manifest()
        return RunOutcome(run.url, manifest, manifest["counts"]["unknown"], manifest.get("annotation_task"), reused=True)

    run.write_table("sample.parquet", _sample_table(drawn, sample))
    task_url = None
    results = None
    if missing:
        task_url, _ = export_annotation_task(annotation_items(drawn, sample), run.url, storage_options=storage_options)
    else:
        run.write_table("compare.parquet", frame)
        results = frame[["system", "precision", "precision_ci_low", "precision_ci_high", "recall", "pooled_recall", "n_samples"]]
        results = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                   for row in results.to_dict(orient="records")]
    total_draws = int(sample.counts.sum())
    manifest = {
        "status": "complete",
        "kind": "compare",
        "awaiting_labels": bool(missing),
        "run_id": run.run_id,
        "params": params.to_dict(),
        "n": {s.name: s.resource.n for s in systems},
        "systems": [
            {"name": s.name, "url": s.resource.url, "fingerprint": s.resource.fingerprint,
             "n_samples": int(n), **w.describe()}
            for s, w, n in zip(systems, drawn.weights, drawn.sizes)
        ],
        "input": {
            "url": [s.resource.url for s in systems],
            "fingerprint": run_id(fingerprints),
            "labels": labels,
            "exhaustive": None if exhaustive is None else {
                "url": exhaustive.url, "fingerprint": exhaustive.fingerprint,
                "labeled": exhaustive.labeled, "correct": int(exhaustive.keys.size),
            },
        },
        "counts": {
            "annotations": int(sample.keys.size),
            "labeled": int(sample.keys.size - missing),
            "unknown": int(missing),
            "draws": total_draws,
            "relabeled": labeled.relabeled,
        },
        "results": results,
        "diagnostics": diagnostics or {},
        "annotation_task": task_url,
        "versions": {"prdist": __version__, "python": platform.python_version(), "numpy": np.__version__,
                     "pandas": pd.__version__, "pyarrow": pa.__version__},
        "timings": drawn.stats["seconds"],
        "bytes_read": drawn.stats["bytes_read"],
        "dask": {"join_tasks": drawn.stats["join_tasks"], "buckets": drawn.stats["buckets"]},
    }
    committed = run.commit(manifest)
    if not committed:  # a concurrent attempt of the same run committed first: its result stands
        manifest = run.read_manifest()
    return RunOutcome(run.url, manifest, missing, task_url, reused=not committed)

