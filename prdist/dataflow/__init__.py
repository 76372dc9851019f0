"""The dataflow layer: Dask over ranked Parquet resources on fsspec storage.

- :mod:`~prdist.dataflow.storage`: URLs, storage options and credentials (redacted), resolved
  once into locations; :mod:`~prdist.dataflow.storage_errors`: readable storage errors;
  :mod:`~prdist.dataflow.publishing`: create-only writes that never leave anything half-written;
  :mod:`~prdist.dataflow.output_place`: where an output may go.
- :mod:`~prdist.dataflow.parquet`: open a resource from its Parquet metadata, once (metadata first);
  :mod:`~prdist.dataflow.parquet_tasks`: the readers tasks run, many times.
- :mod:`~prdist.dataflow.extraction`: what an extraction is asked and returns (an
  :class:`~prdist.dataflow.extraction.Extraction`: the items and what reading them cost).
- :mod:`~prdist.dataflow.executor`: the one way work runs on Dask (``client=None``: in-process).
- :mod:`~prdist.dataflow.order`: verify a claim of sorted order.
- :mod:`~prdist.dataflow.extract`: ranks of a sorted resource, reading only the row groups that
  hold them; :func:`~prdist.dataflow.extract.extract` for any resource (sorted or not).
- :mod:`~prdist.dataflow.select`: the items at given ranks of an unsorted resource, without a
  sort or a shuffle.
- :mod:`~prdist.dataflow.exact`: the exact precision of a simulation at given ranks, counted in
  a pass over the score and label columns.
- :mod:`~prdist.dataflow.labels`: the shared, append-only label store and its lookups;
  :mod:`~prdist.dataflow.label_import`: label files and tool exports into it;
  :mod:`~prdist.dataflow.annotation_task`: the tasks annotators work from.
- :mod:`~prdist.dataflow.artifacts`: run directories committed by a create-only manifest.
- :mod:`~prdist.dataflow.evaluate` and :mod:`~prdist.dataflow.run`: the steps of an evaluation
  (plan, extract, labels, estimate, bands, write), which ``flows/_evaluate_release.py`` wires.
- :mod:`~prdist.dataflow.compare`: several systems or releases sharing labels.
- :mod:`~prdist.dataflow.synth`: synthetic resources with known truth.
- :mod:`~prdist.dataflow.ranked`: a ranked copy of a resource (one Dask sort), for cheap reads.

Every function takes an optional ``client`` (a ``distributed.Client``); without one the same
tasks run in-process. The pure kernels they call live in the core modules of :mod:`prdist`.
"""

import importlib

#: Public name -> the module of prdist.dataflow that defines it. Imported on first use (PEP 562),
#: so that a command reading one module (the label store, a run's manifest) loads no others.
_LAZY = {
    **dict.fromkeys(("OrderCheck", "Resource", "open_resource"), "parquet"),
    **dict.fromkeys(("extract", "extract_ranks"), "extract"),
    "Extraction": "extraction",
    "verify_order": "order",
    **dict.fromkeys(("import_labels", "keys_missing_from", "lookup_labels"), "labels"),
    "write_ranked_copy": "ranked",
    **dict.fromkeys(("check_unique_keys", "select_ranks"), "select"),
    **dict.fromkeys(
        ("AlreadyExists", "StorageUnavailable", "redact", "redact_url", "write_bytes_exclusive", "write_parquet"), "storage"
    ),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'prdist.dataflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
