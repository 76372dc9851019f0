"""What each way into prdist loads: the one place that says so.

prdist imports a heavy package where it is first used, not at start-up, so that a quick command
does not pay for what only a run needs. Where a module imports inside a function for that
reason, the reason is this table, not a note beside the import. ``tests/integration/test_import_cost.py``
enters prdist each of these ways in a fresh interpreter and checks that exactly the
:data:`WATCHED` packages listed here are loaded, no more and no fewer (and prints the seconds
each took): a change that makes an entry point load another package changes this table in the
same commit, or fails.

What loads them, entry point by entry point:

- ``import prdist`` and ``prdist.dataflow``: nothing; the public names resolve on first use
  (PEP 562, ``prdist/__init__.py`` and ``prdist/dataflow/__init__.py``).
- ``prdist --help``: the argument parser alone (each module of ``prdist/cli/`` imports what its
  command needs inside the command's handler).
- ``prdist budget``: the plan and the sampling budgets (NumPy), and ``prdist.dataflow.io.storage``
  (fsspec), which the start of every command but ``release`` imports to ask the remote stores on
  the command line (``_check_stores_answer``), even when none is named.
- ``prdist run`` in-process (no Prefect API, no scheduler): the Parquet footers and row groups
  (pyarrow, fsspec). The run holds its tables as Arrow tables and NumPy arrays from the
  extraction to the artifacts, and loads no pandas: not itself, and not through pyarrow, whose
  ``pa.array``, ``pa.table`` of NumPy arrays and ``to_numpy`` import pandas (its pandas shim)
  whenever it is installed; the run goes through Arrow's buffers instead (:mod:`prdist.frames.columns`).
  Nor ``pyarrow.compute`` (rows are taken with NumPy). This holds for integer keys: text keys
  load pandas (their tie-order hash, :func:`prdist.ranking.key_hash`) and ``pyarrow.compute``
  (their cast). No Prefect, Dask, SciPy or pydantic: the flow body runs as a plain function (its
  annotations, which name pydantic, are resolved only where Prefect wraps it:
  ``flows._policies.resolved_signature``), the passes on threads. Nor ``numpy.ma``, which
  ``np.unique``, ``np.isin`` and ``np.median`` import to ask whether an array is masked
  (:mod:`prdist.frames.arrays`), until there are labels to fit: ``scipy.optimize`` imports it.
- ``prdist run --labels``: the same, and pandas for the label store, whose records are read and
  aggregated as DataFrames (:mod:`prdist.dataflow.labels.store`, :mod:`prdist.verdicts.aggregation`);
  pandas imports ``numpy.ma``.
- ``prdist.bootstrap_bands`` first call, without a cluster: NumPy, SciPy's special functions
  and the bands' DataFrame (pandas, which loads pyarrow and ``numpy.ma``); no Dask, no ``scipy.stats``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ENTRY_POINTS", "WATCHED", "EntryPoint"]

#: The packages whose loading is accounted for: each costs tens to hundreds of milliseconds.
WATCHED = ("numpy", "pandas", "pyarrow", "fsspec", "scipy", "scipy.stats", "dask", "distributed", "prefect", "matplotlib",
           "pydantic", "numpy.ma")


@dataclass(frozen=True)
class EntryPoint:
    """One way into prdist and the :data:`WATCHED` packages it loads (see the module notes)."""

    name: str
    loads: tuple[str, ...]


ENTRY_POINTS = (
    EntryPoint("import prdist", loads=()),
    EntryPoint("prdist --help", loads=()),
    EntryPoint("prdist budget", loads=("numpy", "fsspec")),
    EntryPoint("prdist run", loads=("numpy", "pyarrow", "fsspec")),
    EntryPoint("prdist run --labels", loads=("numpy", "pandas", "pyarrow", "fsspec", "numpy.ma")),
    EntryPoint("prdist.bootstrap_bands", loads=("numpy", "pandas", "pyarrow", "scipy", "numpy.ma")),
)
