"""The dataflow layer: Dask over ranked Parquet resources on fsspec storage, by sub-package.

- :mod:`~prdist.dataflow.engine`: where work runs. :mod:`~prdist.dataflow.engine.executor` is the
  one way prdist runs work on Dask (``client=None``: in-process); ``cluster`` the cluster a run
  uses; ``progress`` the one-line progress of long passes.
- :mod:`~prdist.dataflow.io`: storage and files. ``storage`` resolves URLs and credentials once into
  locations (the one credentials gate); ``storage_errors`` words storage failures with their fix;
  ``publishing`` writes create-only, whole or not at all; ``output_place`` says where an output may
  go; ``parquet`` opens a resource from its metadata, once, in the session, and ``parquet_tasks``
  holds the readers tasks run many times; ``artifacts`` commits run directories by writing the
  manifest last; ``spreadsheet_csv`` writes CSV a spreadsheet opens safely.
- :mod:`~prdist.dataflow.ranks`: items by rank. ``order`` verifies a claim of sorted order;
  ``extract`` reads the ranks of a sorted resource where they are, and picks the path for any
  resource; ``select`` finds ranks of an unsorted one without a sort; ``extraction`` is what an
  extraction returns (:class:`~prdist.dataflow.ranks.extraction.Extraction`); ``exact`` counts a
  simulation's exact precision; ``ranked`` writes a ranked copy; ``ingest`` turns outside dumps
  into resources.
- :mod:`~prdist.dataflow.labels`: the append-only label store (``store``), label files as tools
  export them (``formats``, ``importer``), the annotation tasks annotators work from (``task``),
  and estimates when some drawn items can never be judged (``unjudged``).
- :mod:`~prdist.dataflow.run`: one evaluation: its steps (``evaluate``: plan, labels, estimate;
  ``steps``: open, extract, write), the bootstrap bands it scatters (``bands``) and the run
  directory read back for the terminal (``summary``). ``flows/_evaluate_release.py`` wires them.
- :mod:`~prdist.dataflow.compare`: several systems or releases sharing labels (``params``,
  ``sampling``, ``estimation``); :mod:`~prdist.dataflow.history`: releases over time;
  :mod:`~prdist.dataflow.synth`: synthetic resources with known truth.

Every function takes an optional ``client`` (a ``distributed.Client``); without one the same
tasks run in-process. The pure kernels they call live in the core modules of :mod:`prdist`.
"""

import importlib

#: Public name -> the module of prdist.dataflow that defines it. Imported on first use (PEP 562),
#: so that a command reading one module (the label store, a run's manifest) loads no others.
_LAZY = {
    **dict.fromkeys(("OrderCheck", "Resource", "open_resource"), "io.parquet"),
    **dict.fromkeys(("extract", "extract_ranks"), "ranks.extract"),
    "Extraction": "ranks.extraction",
    "verify_order": "ranks.order",
    "import_labels": "labels.importer",
    **dict.fromkeys(("keys_missing_from", "lookup_labels"), "labels.store"),
    "write_ranked_copy": "ranks.ranked",
    **dict.fromkeys(("check_unique_keys", "select_ranks"), "ranks.select"),
    **dict.fromkeys(("AlreadyExists", "StorageUnavailable"), "io.storage_errors"),
    **dict.fromkeys(("write_bytes_exclusive", "write_parquet"), "io.publishing"),
    **dict.fromkeys(("redact", "redact_url"), "io.storage"),  # from prdist.redaction, where storage uses them
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
