"""Synthetic resources with known truth, written at billion scale without a sort.

A synthetic resource is ``n`` items drawn i.i.d. from a population model
(:mod:`prdist.population`): a label Y ~ Bernoulli(prevalence) and a score from the positive or
negative score distribution. Its precision at every cut-off is therefore known exactly, which makes
it the test oracle and demo input of the whole pipeline.

Two layouts:

``order="sorted"``
    The rows are written in rank order (descending score) **without sorting anything**. If
    ``u_(1) < ... < u_(n)`` are the order statistics of ``n`` i.i.d. uniforms, row ``i`` gets the
    score ``Q(v_i)`` with ``v_i = 1 - u_(i)``, where ``Q`` is the model's inverse mixture cdf
    (``model.score_quantile``); its label is then drawn from ``P(Y=1 | score)``. ``Q(1 - U)`` has
    the law of a score, so this is exactly the joint law of an i.i.d. sample of (score, label)
    pairs, listed in rank order.

    The order statistics come hierarchically. The rows are cut into generation blocks of
    :data:`BLOCK_ROWS` rows. The cdf level at the last row of every block is an order statistic;
    given the previous one, ``v_j = v_{j-1} * B_j`` with ``B_j ~ Beta(n - c_j + 1, m_j)`` (``c_j``
    rows up to and including block ``j``, ``m_j`` in it), drawn from the master seed. Given its
    two boundary values, the inside of a block holds ``m_j - 1`` i.i.d. uniforms between them,
    sorted; normalised cumulative sums of ``m_j`` exponential spacings give those sorted uniforms
    exactly, in O(m) without a sort. Every block has its own seed, so a block's rows do not depend
    on which worker computes it, nor on how blocks are grouped into partition files.

``order="shuffled"``
    Every block is an i.i.d. sample (``model.sample``) with its own seed: the same distribution,
    in no particular order.

Keys. The item at generation position ``i`` (0-based, over the whole resource) gets the int64
key whose :func:`prdist.ranking.key_hash` is ``i``. For integer keys that hash is the bijective
splitmix64 finaliser, so the key is its exact inverse: keys are unique without any bookkeeping, look
random, and — in a sorted resource — rows of equal score (discrete models) are already in the order
of :func:`prdist.ranking.rank_order`, ties broken by ascending key hash, *also across partition
files*. A sorted synthetic file is thus in true rank order, row for row.

Determinism. The rows depend only on (model, n, order, seed): not on the number of partitions,
row groups or workers. With the same partitioning the files are byte-identical whatever the
cluster (on one platform: the model's special functions may round differently on other CPUs).

Known truth. Every file carries the model (family and parameters), n, order, seed and layout in
its Parquet key-value metadata under :data:`METADATA_KEY`, and so does the commit marker
:data:`SYNTH_MARKER` (with the file list); :func:`read_synth_metadata` rebuilds the model from them, and
``model.precision_at_fraction(r / n)`` is then the expected precision at rank r.

Publication. One Dask task per partition file; a task holds about one row group, so memory does
not grow with n. On local disk the files go to a hidden sibling directory that is renamed into
place at the end: the dataset appears whole or not at all. Object stores cannot rename a prefix,
so there each file appears whole (a create-only upload) and :data:`SYNTH_MARKER`, written last with a
create-only write, commits the dataset; readers that need completeness check for it
(:func:`read_synth_metadata` does). A failed write removes what it wrote.
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from prdist import population
from prdist._validation import check_choice, check_int
from prdist.errors import DataError, ParameterError
from prdist.params import JUDGE_ACCURACY, KEY_OFFSET, PARTITIONS, SEED
from prdist.ranking import key_hash
# publish() streams a partition row group by row group, appearing whole or not at all.
from prdist.dataflow.engine.executor import run_all
from prdist.dataflow.io.publishing import dataset_publication, publish
from prdist.dataflow.io.storage import Location, resolve
from prdist.dataflow.io.storage_errors import storage_errors

__all__ = [
    "BLOCK_ROWS",
    "DEFAULT_FILE_ROWS",
    "DEFAULT_ROW_GROUP_ROWS",
    "METADATA_KEY",
    "SYNTH_MARKER",
    "SyntheticResource",
    "read_synth_metadata",
    "synthetic_keys",
    "write_synthetic",
]

#: Rows per generation block: the unit of randomness. Fixed, so that the rows of a resource do not
#: depend on how it is cut into files. Small, so that a partition that starts or ends inside a
#: block wastes little work, and so that a block's float arrays (64 KiB) stay below glibc's mmap
#: threshold: Dask's worker processes run with MALLOC_TRIM_THRESHOLD_ set, which pins that
#: threshold at 128 KiB, and there every larger temporary array costs an mmap and fresh page
#: faults (65536-row blocks ran 4-7x slower in a worker process than in the client process).
BLOCK_ROWS = 1 << 13
#: Default rows per partition file (about 70 MB of Parquet): 239 files for 10^9 rows.
DEFAULT_FILE_ROWS = 1 << 22
#: Default rows per Parquet row group (about 2 MB): a partition task holds about one row group in
#: memory, and a reader that extracts a window of ranks reads whole row groups, so small ones
#: keep both low.
DEFAULT_ROW_GROUP_ROWS = 1 << 17
#: Parquet key-value metadata key under which every file records the resource's known truth.
METADATA_KEY = b"prdist.synth"
#: The commit marker: written last; a dataset without it is not a (complete) synthetic resource.
SYNTH_MARKER = "_prdist_synth.json"
_FORMAT_VERSION = 1

SCHEMA = pa.schema([("key", pa.int64()), ("score", pa.float64()), ("label", pa.int8())])
#: The schema of a resource with a judge column (``judge_accuracy``): a noisy copy of the label.
JUDGE_SCHEMA = SCHEMA.append(pa.field("judge", pa.int8()))

# Independent SeedSequence streams: spawn_key = (stream, index).
_BOUNDARY_STREAM, _SORTED_STREAM, _SHUFFLED_STREAM, _JUDGE_STREAM = 0, 1, 2, 3

# Cdf levels are kept inside [_V_MIN, _V_MAX] so that the inverse cdf stays finite (Q(1) is
# +inf for unbounded models). An exact order statistic falls outside only with
# probability below n * 2**-53 (2e-7 at n = 1e9), so the clip changes the law by at most that much
# in total variation.
_V_MIN = float(np.finfo(np.float64).tiny)
_V_MAX = 1.0 - 2.0**-53

# pandas hashes integers with the splitmix64 finaliser; these undo its two multiplications.
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_UNMIX1, _UNMIX2 = pow(_MIX1, -1, 1 << 64), pow(_MIX2, -1, 1 << 64)


def synthetic_keys(start: int, stop: int) -> np.ndarray:
    """Return the keys of the items at generation positions ``start .. stop - 1``.

    The key of position ``i`` is the int64 whose :func:`prdist.ranking.key_hash` equals ``i``, so
    keys are unique and ascending positions have ascending hashes (the rank tie-break).

    Parameters
    ----------
    start, stop : int
        Half-open range of 0-based positions, ``0 <= start <= stop <= 2**63``.

    Returns
    -------
    ndarray of int64, shape (stop - start,)

    Examples
    --------
    >>> from prdist.ranking import key_hash
    >>> keys = synthetic_keys(5, 8)
    >>> key_hash(keys).tolist()
    [5, 6, 7]
    """
    x = np.arange(start, stop, dtype=np.uint64)
    # Invert x ^= x >> s (s >= 22: two terms suffice), then the multiplications, in reverse order.
    x ^= (x >> np.uint64(31)) ^ (x >> np.uint64(62))
    x *= np.uint64(_UNMIX2)
    x ^= (x >> np.uint64(27)) ^ (x >> np.uint64(54))
    x *= np.uint64(_UNMIX1)
    x ^= (x >> np.uint64(30)) ^ (x >> np.uint64(60))
    return x.view(np.int64)


def _check_key_hash_inverse() -> None:
    # The rank-order guarantee of sorted output rests on key_hash being the splitmix64 finaliser
    # for integers; fail loudly (not silently mis-ordered ties) if that ever changes.
    probe = np.array([0, 1, 2, 12345, 2**40 + 7, 2**63 - 1], dtype=np.uint64)
    for p in probe:
        got = key_hash(synthetic_keys(int(p), int(p) + 1))[0]
        if got != p:
            raise RuntimeError(
                "prdist.ranking.key_hash no longer hashes integers with the splitmix64 finaliser, "
                "so synthetic keys would break the rank tie-break; update synthetic_keys to match."
            )


def _block_sizes(n: int) -> np.ndarray:
    count = -(-n // BLOCK_ROWS)
    sizes = np.full(count, BLOCK_ROWS, dtype=np.int64)
    sizes[-1] = n - BLOCK_ROWS * (count - 1)
    return sizes


def _block_levels(n: int, seed: int) -> np.ndarray:
    """Cdf level v_j = 1 - u_(c_j) at the last row of every block j (non-increasing).

    With c_j rows up to and including block j, the c_j-th smallest of n uniforms satisfies
    1 - U_(c_j) = (1 - U_(c_{j-1})) * B_j, B_j ~ Beta(n - c_j + 1, m_j), independently of the past
    (given U_(c_{j-1}), the other n - c_{j-1} uniforms are i.i.d. above it). Drawing B_j rather than
    1 - B_j keeps full relative precision where the cdf level is tiny (the last ranks).
    """
    sizes = _block_sizes(n)
    ends = np.cumsum(sizes)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_BOUNDARY_STREAM,)))
    ratios = rng.beta((n - ends + 1).astype(np.float64), sizes.astype(np.float64))
    return np.clip(np.cumprod(ratios), _V_MIN, _V_MAX)


def _sorted_block(model, seed: int, j: int, rows: int, v_hi: float, v_lo: float, s_hi: float, s_lo: float):
    """Rows of block j of a sorted resource: cdf levels in (v_lo, v_hi) descending to v_lo.

    ``s_hi`` and ``s_lo`` are the scores of the two boundaries (the previous block's last row and
    this block's last row), computed once by the caller, so that blocks meet in descending order
    whatever the rounding of the model's inverse cdf.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SORTED_STREAM, j)))
    spacings = rng.standard_exponential(rows)
    # w_i = (sum of the spacings after i) / (sum of all): the m - 1 sorted uniforms between the
    # boundaries, descending, then 0 for the block's last row (which sits on v_lo exactly).
    after = np.cumsum(spacings[::-1])[::-1]
    w = np.empty(rows)
    w[:-1] = after[1:] / after[0]
    w[-1] = 0.0
    v = v_lo + (v_hi - v_lo) * w
    np.minimum(v, _V_MAX, out=v)
    scores = np.asarray(model.score_quantile(v), dtype=np.float64)
    # A numerical inverse cdf can be non-monotone by its rounding or root-finding tolerance; the
    # running minimum and the clip to the boundary scores restore the descending order while
    # moving no score by more than that tolerance.
    np.clip(scores, s_lo, s_hi, out=scores)
    scores[-1] = s_lo
    np.minimum.accumulate(scores, out=scores)
    positive = np.asarray(model.positive_probability(scores), dtype=np.float64)
    labels = (rng.random(rows) < positive).astype(np.int8)
    return scores, labels


def _shuffled_block(model, seed: int, j: int, rows: int):
    """Rows of block j of a shuffled resource: an i.i.d. sample with the block's own seed."""
    scores, labels = model.sample(rows, seed=np.random.SeedSequence(seed, spawn_key=(_SHUFFLED_STREAM, j)))
    return np.asarray(scores, dtype=np.float64), np.asarray(labels).astype(np.int8)


@dataclass(frozen=True)
class _PartitionSpec:
    """What one partition task needs: its rows [start, stop) and, for sorted output, the cdf
    levels and scores of the block boundaries around them (first_block - 1 .. last block)."""

    name: str
    order: str
    seed: int
    n: int
    start: int
    stop: int
    levels: np.ndarray | None
    boundary_scores: np.ndarray | None
    key_offset: int = 0
    judge_accuracy: float | None = None

    @property
    def first_block(self) -> int:
        return self.start // BLOCK_ROWS

    @property
    def last_block(self) -> int:
        return (self.stop - 1) // BLOCK_ROWS


def _partition_tables(model, spec: _PartitionSpec):
    """Yield the rows of one partition as Arrow tables, block by block, in file order."""
    for i, j in enumerate(range(spec.first_block, spec.last_block + 1)):
        block_start = j * BLOCK_ROWS
        rows = min(BLOCK_ROWS, spec.n - block_start)
        if spec.order == "sorted":
            scores, labels = _sorted_block(
                model,
                spec.seed,
                j,
                rows,
                v_hi=float(spec.levels[i]),
                v_lo=float(spec.levels[i + 1]),
                s_hi=float(spec.boundary_scores[i]),
                s_lo=float(spec.boundary_scores[i + 1]),
            )
        else:
            scores, labels = _shuffled_block(model, spec.seed, j, rows)
        lo = max(spec.start, block_start) - block_start
        hi = min(spec.stop, block_start + rows) - block_start
        columns = [synthetic_keys(spec.key_offset + block_start + lo, spec.key_offset + block_start + hi), scores[lo:hi], labels[lo:hi]]
        if spec.judge_accuracy is None:
            yield pa.table(columns, schema=SCHEMA)
        else:
            yield pa.table([*columns, _judge_block(labels, spec.judge_accuracy, spec.seed, j)[lo:hi]], schema=JUDGE_SCHEMA)


def _judge_block(labels: np.ndarray, accuracy: float, seed: int, j: int) -> np.ndarray:
    """A judge's 0/1 verdicts on block j: each the label with probability ``accuracy``, else flipped
    (independently, from the block's own seed stream, so the verdicts do not depend on the files).

    Examples
    --------
    >>> labels = np.array([1, 0] * 5000, dtype=np.int8)
    >>> round(float(np.mean(_judge_block(labels, 0.9, seed=1, j=0) == labels)), 2)
    0.9
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_JUDGE_STREAM, j)))
    wrong = rng.random(labels.size) >= accuracy
    return np.where(wrong, 1 - labels, labels).astype(np.int8)


def _partition_task(spec: _PartitionSpec, directory: Location, metadata: bytes, row_group_size: int, *, model) -> int:
    """Generate one partition and write it as one Parquet file; return its row count.

    Memory stays about one row group plus one block, whatever the partition size. The file
    appears whole or not at all, and never replaces another (storage's create-only write).
    """
    schema = (SCHEMA if spec.judge_accuracy is None else JUDGE_SCHEMA).with_metadata({METADATA_KEY: metadata})
    # Dictionary encoding only where values repeat: tried on the unique keys and continuous
    # scores it is abandoned page by page, which made writing 4-7x slower and the files 25%
    # larger. Statistics (score min/max per row group) are what readers check the order with and
    # where selection starts from; those of the key and label columns would be read with every
    # footer for nothing (with row groups of 2**11 rows, the footers of 1e8 rows were 15 MB).
    dictionary = ["label", "score"] if isinstance(model, population.DiscreteScoreModel) else ["label"]
    dictionary += [] if spec.judge_accuracy is None else ["judge"]

    def write(sink) -> None:
        pending, pending_rows = [], 0
        with pq.ParquetWriter(sink, schema, use_dictionary=dictionary, write_statistics=["score"]) as writer:
            for table in _partition_tables(model, spec):
                pending.append(table)
                pending_rows += table.num_rows
                while pending_rows >= row_group_size:
                    joined = pa.concat_tables(pending)
                    writer.write_table(joined.slice(0, row_group_size), row_group_size=row_group_size)
                    pending = [joined.slice(row_group_size)]
                    pending_rows = pending[0].num_rows
            if pending_rows:
                writer.write_table(pa.concat_tables(pending), row_group_size=row_group_size)

    publish(directory.child(spec.name), write, exclusive=True)
    return spec.stop - spec.start


# ---------------------------------------------------------------------------------------------
# The model in the metadata

_FAMILIES = ("binormal", "bilognormal", "bibeta", "uniform", "discrete", "bumped")


def describe_model(model) -> dict:
    """{"family", "parameters"} of a population model, nested models described in turn."""
    params = {}
    for name, value in model.parameters.items():
        if isinstance(value, population.ScoreModel):
            params[name] = describe_model(value)
        elif isinstance(value, tuple):
            params[name] = list(value)
        else:
            params[name] = value
    return {"family": model.family, "parameters": params}


def model_from_description(description: dict):
    family = description.get("family")
    if family not in _FAMILIES:
        raise DataError(
            f"The synthetic-resource metadata names the model family {family!r}, which this "
            f"version of prdist does not know (known: {', '.join(_FAMILIES)}). Upgrade prdist."
        )
    params = {
        name: model_from_description(value) if isinstance(value, dict) else value
        for name, value in description["parameters"].items()
    }
    return getattr(population, family)(**params)


# ---------------------------------------------------------------------------------------------
# Public API


@dataclass(frozen=True, eq=False)
class SyntheticResource:
    """A synthetic resource and its known truth.

    Attributes
    ----------
    url : str
        Where the Parquet dataset lives (a directory of ``part-*.parquet`` files in file order).
    model : prdist.population.ScoreModel
        The population model the rows were drawn from: ``model.precision_at_fraction(r / n)`` is
        the expected precision at rank r.
    n : int
        Number of rows.
    order : {"sorted", "shuffled"}
        "sorted": rows in rank order (descending score, ties by key hash); "shuffled": i.i.d.
    seed : int
        The master seed.
    partitions : int
        Number of Parquet files.
    files : tuple of (str, int)
        (file name, row count) of every file, in order.
    key_offset : int
        The keys are those of generation positions ``key_offset .. key_offset + n - 1``.
    """

    url: str
    model: object
    n: int
    order: str
    seed: int
    partitions: int
    files: tuple
    key_offset: int = 0
    judge_accuracy: float | None = None


def write_synthetic(
    model,
    *,
    n,
    out,
    partitions=None,
    order="sorted",
    seed,
    storage_options=None,
    client=None,
    row_group_size=DEFAULT_ROW_GROUP_ROWS,
    key_offset=0,
    judge_accuracy=None,
) -> SyntheticResource:
    """Write ``n`` i.i.d. items of a population model as a Parquet dataset, in parallel with Dask.

    Columns: ``key`` (int64, unique), ``score`` (float64), ``label`` (int8, 0/1). One Dask task
    writes each partition file; a task holds about one row group in memory, so 10^9 rows need
    no more memory per worker than 10^6.

    Parameters
    ----------
    model : prdist.population.ScoreModel
        The population model (``prdist.population.binormal(...)``, ``discrete(...)``, ...).
    n : int
        Number of items, >= 1.
    out : str
        Destination: a local path or any fsspec URL (``s3://bucket/prefix`` through s3fs). It must
        not exist yet (an existing empty directory is accepted).
    partitions : int, optional
        Number of Parquet files, in [1, n]. Default: one per 2**22 rows. The rows themselves do
        not depend on it, only how they are cut into files.
    order : {"sorted", "shuffled"}, default="sorted"
        "sorted" writes rows in rank order without sorting (see the module notes); "shuffled"
        in random order.
    seed : int
        Master seed, >= 0. The same seed gives the same rows; with the same ``partitions`` and
        ``row_group_size`` the same bytes, whatever the number of workers.
    storage_options : dict, optional
        fsspec options for ``out`` (endpoint, credentials, ...).
    client : distributed.Client, optional
        Run the partition tasks on this cluster; its workers write the files, so ``out`` must be
        storage they all reach (an object store, or a local path on a local cluster). Default:
        in-process, one partition after the other (:mod:`prdist.dataflow.engine.executor`).
    row_group_size : int, default=2**17
        Rows per Parquet row group, >= 1.
    key_offset : int, default=0
        The items' keys are those of generation positions ``key_offset .. key_offset + n - 1``
        (:func:`synthetic_keys`): resources written with disjoint ranges share no key, so labels
        of one never answer for another (successive releases of a series). Ranks, scores and
        labels do not depend on it; the rank tie-break (ascending key hash) keeps the file order.
    judge_accuracy : float in (0, 1], optional
        Add a column ``judge`` (int8): an automatic judge's verdict on each item, equal to its
        label with probability ``judge_accuracy`` and flipped otherwise, independently (seeded by
        ``seed``), e.g. for ``prdist run --judge-column judge``.

    Returns
    -------
    SyntheticResource

    Raises
    ------
    ParameterError
        A parameter outside its domain.
    InputError
        ``out`` exists already or cannot be written.

    Notes
    -----
    Publication is atomic on a local filesystem: the files are written into a hidden sibling
    directory that is renamed to ``out`` at the end. On object stores, where nothing renames a
    prefix atomically, the files are written in place and the dataset is committed by
    ``_prdist_synth.json``, written last with a create-only write; :func:`read_synth_metadata`
    refuses a dataset without it.

    Examples
    --------
    >>> import tempfile, os
    >>> from prdist import population
    >>> model = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.3)
    >>> out = os.path.join(tempfile.mkdtemp(), "resource")
    >>> res = write_synthetic(model, n=1000, out=out, partitions=2, seed=7)
    >>> res.n, res.partitions, [rows for _, rows in res.files]
    (1000, 2, [500, 500])
    >>> read_synth_metadata(out).model
    binormal(neg=(0.0, 1.0), pos=(1.0, 1.0), prevalence=0.3)
    """
    owner = "write_synthetic"
    if not isinstance(model, population.ScoreModel):
        raise ParameterError(
            f"The 'model' parameter of {owner} must be a population model (prdist.population."
            f"binormal(...), discrete(...), ...). Got {model!r} instead."
        )
    if model.family not in _FAMILIES:
        raise ParameterError(
            f"The 'model' parameter of {owner} must be a model of family {', '.join(_FAMILIES)}. "
            f"Got {model.family!r} instead."
        )
    n = check_int(n, name="n", owner=owner, low=1, high=2**62)
    seed = SEED.check(seed, owner=owner)
    order = check_choice(order, name="order", owner=owner, choices=("sorted", "shuffled"))
    if partitions is None:
        partitions = -(-n // DEFAULT_FILE_ROWS)
    partitions = PARTITIONS.check(partitions, owner=owner, bound=n)
    row_group_size = check_int(row_group_size, name="row_group_size", owner=owner, low=1)
    key_offset = KEY_OFFSET.check(key_offset, owner=owner, bound=n)
    judge_accuracy = JUDGE_ACCURACY.check(judge_accuracy, owner=owner)
    if not isinstance(out, (str, os.PathLike)) or not os.fspath(out):
        raise ParameterError(f"The 'out' parameter of {owner} must be a path or URL. Got {out!r} instead.")
    location = resolve(out, storage_options=storage_options)
    _check_key_hash_inverse()

    description = {
        "format": _FORMAT_VERSION,
        "model": describe_model(model),
        "n": n,
        "order": order,
        "seed": seed,
        "partitions": partitions,
        "block_rows": BLOCK_ROWS,
    }
    if key_offset:  # recorded only when set: resources without it keep their bytes
        description["key_offset"] = key_offset
    if judge_accuracy is not None:  # likewise
        description["judge_accuracy"] = judge_accuracy
    metadata = json.dumps(description, sort_keys=True, separators=(",", ":")).encode()
    specs = [replace(spec, judge_accuracy=judge_accuracy)
             for spec in _partition_specs(model, n=n, order=order, seed=seed, partitions=partitions, key_offset=key_offset)]
    files = tuple((spec.name, spec.stop - spec.start) for spec in specs)
    marker = (json.dumps({**description, "files": [list(f) for f in files]}, indent=1, sort_keys=True) + "\n").encode()

    with dataset_publication(location, [spec.name for spec in specs], marker, marker_name=SYNTH_MARKER) as directory:
        # The model on every worker up front: each unpickles it once (and builds the quantile
        # table a numerical inverse cdf caches on it once), and no worker is preferred for
        # holding it, so the partitions spread over the whole cluster.
        run_all(client, _partition_task, specs, directory, metadata, row_group_size, broadcast={"model": model})
    return SyntheticResource(
        url=_display(location), model=model, n=n, order=order, seed=seed, partitions=partitions, files=files, key_offset=key_offset,
        judge_accuracy=judge_accuracy,
    )


def _partition_specs(model, *, n: int, order: str, seed: int, partitions: int, key_offset: int = 0) -> list[_PartitionSpec]:
    # Sizes differ by at most one row: the first n % partitions files hold one more.
    base, extra = divmod(n, partitions)
    starts = [k * base + min(k, extra) for k in range(partitions + 1)]
    width = max(5, len(str(partitions - 1)))
    if order == "sorted":
        # Levels and scores of every block boundary, with the top of the first block (level 1,
        # clipped) in front; partition k needs those of blocks first-1 .. last.
        levels = np.concatenate(([1.0], _block_levels(n, seed)))
        boundary_scores = np.asarray(model.score_quantile(np.minimum(levels, _V_MAX)), dtype=np.float64)
        if not np.all(np.isfinite(boundary_scores)):
            raise DataError(
                f"The model {model!r} has infinite scores at cdf levels inside (0, 1), so its "
                "resource cannot be written; choose parameters with finite quantiles."
            )
    specs = []
    for k in range(partitions):
        start, stop = starts[k], starts[k + 1]
        window = slice(start // BLOCK_ROWS, (stop - 1) // BLOCK_ROWS + 2)
        specs.append(
            _PartitionSpec(
                name=f"part-{k:0{width}d}.parquet",
                order=order,
                seed=seed,
                n=n,
                start=start,
                stop=stop,
                levels=levels[window] if order == "sorted" else None,
                boundary_scores=boundary_scores[window] if order == "sorted" else None,
                key_offset=key_offset,
            )
        )
    return specs


def read_synth_metadata(url, *, storage_options=None) -> SyntheticResource:
    """Read back what a synthetic resource was drawn from, with the model rebuilt.

    Parameters
    ----------
    url : str
        The dataset written by :func:`write_synthetic` (local path or fsspec URL).
    storage_options : dict, optional
        fsspec options for ``url``.

    Returns
    -------
    SyntheticResource
        ``.model`` is the population model, so ``.model.precision_at_fraction(r / .n)`` is the
        expected precision at rank r of a sorted resource.

    Raises
    ------
    DataError
        ``url`` is not a complete synthetic resource (no commit marker, or files whose metadata
        disagree with it).
    """
    location = resolve(url, storage_options=storage_options)
    fs, root = location.fs, location.path.rstrip("/")
    with storage_errors(location, action="read"):
        try:
            with fs.open(posixpath.join(root, SYNTH_MARKER), "rb") as fh:
                marker = json.load(fh)
        except FileNotFoundError:
            raise DataError(
                f"{location.url} is not a complete synthetic resource: it has no {SYNTH_MARKER} (an "
                "interrupted write, or a resource not made by prdist synth). Write it again."
            ) from None
        files = tuple((str(name), int(rows)) for name, rows in marker["files"])
        # The truth travels with the data: the first file's key-value metadata must agree.
        with fs.open(posixpath.join(root, files[0][0]), "rb") as fh:
            embedded = pq.read_schema(fh).metadata or {}
    recorded = {k: v for k, v in marker.items() if k != "files"}
    if METADATA_KEY not in embedded or json.loads(embedded[METADATA_KEY]) != recorded:
        raise DataError(
            f"The files of {location.url} do not carry the {METADATA_KEY.decode()} metadata its "
            f"{SYNTH_MARKER} describes: the dataset was modified after it was written. Write it again."
        )
    return SyntheticResource(
        url=_display(location),
        model=model_from_description(marker["model"]),
        n=int(marker["n"]),
        order=marker["order"],
        seed=int(marker["seed"]),
        partitions=int(marker["partitions"]),
        files=files,
        key_offset=int(marker.get("key_offset", 0)),
        judge_accuracy=marker.get("judge_accuracy"),
    )


def _display(location: Location) -> str:
    """How a resource is named to users: a plain absolute path on local disk, else its URL."""
    return location.path if location.is_local else location.url
