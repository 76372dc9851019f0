"""Several systems (or releases) sharing labels, at scale: the dataflow behind ``prdist compare``.

Systems are Parquet resources (``key``, ``score``) on any fsspec URL; the estimators are those of
:mod:`prdist.importance` (Chaganty et al., EMNLP 2017). One comparison runs these steps, each a
function here that the Prefect flow ``flows/_compare_systems.py`` calls as one task:

1. **Open** every system from its Parquet metadata (:func:`open_systems`): row counts, row groups,
   fingerprint. All systems type their keys alike: a key is one item in every system and in the
   label store.
2. **Weigh** (:func:`system_weights`). System i's sampling distribution is p_i(x) = w_i(x) / W_i
   with the unnormalised weight w_i(x) = 1 (uniform), 1 on the k items of highest rank and 0
   elsewhere (top-k), or score(x) ** a (score-power). The per-row-group totals of w_i and the
   normaliser W_i come from the Parquet metadata for the uniform distribution (row counts) and
   from one distributed sum over the score column otherwise; top-k first finds the item at rank k
   without a sort (:func:`prdist.dataflow.ranks.select.select_ranks`).
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
   system and every release that outputs the item (with ``gold_budget``, a designed gold audit
   of the drawn keys awaits gold verdicts too: :func:`plan_key_audit`). Missing labels go to an annotation task
   (:func:`annotation_items`: each key with its item columns, the systems that output it and
   their scores). The item columns (every column but the key and the score) are read by
   :func:`item_columns` in a targeted pass after the join, only for the awaiting keys, only in
   the row groups where the join found them, from the first system (in the order given) that
   outputs each key.
7. **Estimate** (:func:`estimate_systems`) the joint precision of every system with its
   interval, and recall when an exhaustive sample is given (with a complete gold audit,
   :func:`estimate_audited`: the precision as gold says it); **write** (:func:`write_compare`)
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

Modules
-------
This module names the steps; they live in :mod:`~prdist.dataflow.compare.params` (parameters,
systems, budget), :mod:`~prdist.dataflow.compare.sampling` (weigh, draw, join: the Dask part)
and :mod:`~prdist.dataflow.compare.estimation` (labels, estimates, run directory: in memory).
"""

from __future__ import annotations

from prdist.dataflow.compare.estimation import (
    ExhaustiveSample,
    LabeledSample,
    annotation_items,
    attach_labels,
    estimate_audited,
    estimate_systems,
    plan_key_audit,
    read_exhaustive,
    write_compare,
)
from prdist.dataflow.compare.params import ALLOCATIONS, CompareParams, System, allocate_budget, open_systems
from prdist.dataflow.compare.sampling import (
    DEFAULT_BUCKET_ROWS,
    DrawnSample,
    SystemWeights,
    draw_items,
    draw_sample,
    item_column_names,
    item_columns,
    join_sample,
    system_weights,
)

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
    "estimate_audited",
    "draw_sample",
    "estimate_systems",
    "item_column_names",
    "item_columns",
    "join_sample",
    "open_systems",
    "plan_key_audit",
    "read_exhaustive",
    "system_weights",
    "write_compare",
]

