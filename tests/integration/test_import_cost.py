"""A first call of a top-level function pays only for what it uses."""

from __future__ import annotations

import json
import subprocess
import sys

#: Modules a call without a cluster has no use for: the dataflow stack, the CLI's and plots' deps.
UNUSED_WITHOUT_CLUSTER = ("dask", "distributed", "fsspec", "prefect", "matplotlib", "scipy.signal", "scipy.stats")

_FIRST_CALL = """
import json, sys, time
import numpy as np
import pandas  # a notebook holding its data in pandas has it already: not counted in the call
start = time.perf_counter()
import prdist
rng = np.random.default_rng(0)
labels = rng.random(300) < 0.3
bands = prdist.bootstrap_bands(rng.normal(labels * 1.5, 1.0), labels, replicates=200, seed=1)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rows": len(bands), "loaded": sorted(m for m in %r if m in sys.modules)}))
"""


def test_bootstrap_bands_without_a_cluster_imports_no_dask_nor_scipy_signal():
    done = subprocess.run([sys.executable, "-c", _FIRST_CALL % (UNUSED_WITHOUT_CLUSTER,)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"first prdist.bootstrap_bands call (import included, pandas loaded): {first['seconds']:.3f} s")
    assert first["rows"] == 101
    assert first["loaded"] == []
