"""The dataflow layer: Dask over ranked Parquet resources on fsspec storage.

- :mod:`~prdist.dataflow.storage`: URLs, storage options and credentials (redacted), create-only
  writes that never leave anything half-written, readable storage errors.
- :mod:`~prdist.dataflow.parquet`: open a resource from its Parquet metadata; the readers tasks use.
- :mod:`~prdist.dataflow.executor`: the one way work runs on Dask (``client=None``: in-process).
- :mod:`~prdist.dataflow.order`: verify a claim of sorted order.
- :mod:`~prdist.dataflow.extract`: ranks of a sorted resource, reading only the row groups that
  hold them.
- :mod:`~prdist.dataflow.select`: the items at given ranks of an unsorted resource, without a
  sort or a shuffle.
- :mod:`~prdist.dataflow.labels`: the shared, append-only label store and annotation tasks.
- :mod:`~prdist.dataflow.artifacts`: run directories committed by a create-only manifest.
- :mod:`~prdist.dataflow.evaluate` and :mod:`~prdist.dataflow.run`: the steps of an evaluation
  (plan, extract, labels, estimate, bands, write), which ``flows/evaluate_release.py`` wires.
- :mod:`~prdist.dataflow.compare`: several systems or releases sharing labels.
- :mod:`~prdist.dataflow.synth`: synthetic resources with known truth.
- :mod:`~prdist.dataflow.ranked`: a ranked copy of a resource (one Dask sort), for cheap reads.

Every function takes an optional ``client`` (a ``distributed.Client``); without one the same
tasks run in-process. The pure kernels they call live in the core modules of :mod:`prdist`.
"""

from .extract import extract_ranks
from .order import verify_order
from .parquet import OrderCheck, Resource, open_resource
from .labels import import_labels, keys_missing_from, lookup_labels
from .ranked import write_ranked_copy
from .select import check_unique_keys, select_ranks
from .storage import AlreadyExists, StorageUnavailable, redact, redact_url, write_bytes_exclusive, write_parquet

__all__ = [
    "AlreadyExists",
    "StorageUnavailable",
    "import_labels",
    "keys_missing_from",
    "lookup_labels",
    "OrderCheck",
    "Resource",
    "check_unique_keys",
    "extract_ranks",
    "open_resource",
    "redact",
    "redact_url",
    "select_ranks",
    "verify_order",
    "write_bytes_exclusive",
    "write_ranked_copy",
    "write_parquet",
]
