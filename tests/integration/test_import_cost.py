"""A first call of a top-level function pays only for what it uses, and every entry point loads what
``prdist/_entry_points.py`` says it does."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from tests.support.cli_run import cli
from tests.support.small_release import ranked_scores_and_labels, write_release

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


# --------------------------------------------------------------------------------------------
# Every entry point loads what prdist/_entry_points.py says it does, no more and no fewer.

#: How to enter prdist each way of prdist._entry_points.ENTRY_POINTS (``{release}``, ``{out}``:
#: a small ranked release and a run root, made by the test).
_ENTER = {
    "import prdist": "import prdist",
    "prdist --help": "from prdist.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "prdist budget": "from prdist.cli import main\nassert main(['budget', '--n', '1000000']) == 0",
    "prdist run": "from prdist.cli import main\nassert main(['run', '--resource', {release!r}, '--out', {out!r}]) == 3",
    "prdist run --labels": ("from prdist.cli import main\n"
                            "assert main(['run', '--resource', {release!r}, '--out', {out!r}, '--labels', {store!r}]) == 3"),
    "prdist.bootstrap_bands": (
        "import numpy as np, prdist\nrng = np.random.default_rng(0)\nlabels = rng.random(300) < 0.3\n"
        "prdist.bootstrap_bands(rng.normal(labels * 1.5, 1.0), labels, replicates=200, seed=1)"
    ),
}

_MEASURED = """
import json, sys, time
start = time.perf_counter()
{body}
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "loaded": [m for m in {watched!r} if m in sys.modules]}}))
"""


def test_the_table_of_entry_points_names_each_way_in_once():
    from prdist._entry_points import ENTRY_POINTS, WATCHED

    assert [e.name for e in ENTRY_POINTS] == list(_ENTER)
    assert all(set(e.loads) <= set(WATCHED) for e in ENTRY_POINTS)


@pytest.mark.parametrize("name", list(_ENTER))
def test_each_entry_point_loads_what_the_table_says(tmp_path, name):
    from prdist._entry_points import ENTRY_POINTS, WATCHED

    scores, labels = ranked_scores_and_labels(20_000, seed=2)
    release = write_release(tmp_path / "release", pa.table({"key": np.arange(scores.size), "score": scores, "label": labels}),
                            row_group_size=4_096)
    body = _ENTER[name].format(release=release, out=str(tmp_path / "runs"), store=_label_store(tmp_path))
    done = subprocess.run([sys.executable, "-c", _MEASURED.format(body=body, watched=WATCHED)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300,
                          env={"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{name}: {measured['seconds']:.3f} s, loads {', '.join(measured['loaded']) or 'none of the watched packages'}")
    assert tuple(measured["loaded"]) == next(e.loads for e in ENTRY_POINTS if e.name == name)


def _label_store(tmp_path) -> str:
    """A label store holding one verdict (of a key no release here has)."""
    (tmp_path / "v.csv").write_text("key,label\n-1,1\n")
    store = str(tmp_path / "store")
    assert cli("labels", "import", "--store", store, str(tmp_path / "v.csv"))[0] == 0
    return store


# --------------------------------------------------------------------------------------------
# A run holds its tables in Arrow and NumPy: pandas is not loaded, by prdist nor by pyarrow; a run
# awaiting its labels loads no numpy.ma either (NumPy's unique, isin and median import it).

_RUN_WITHOUT_PANDAS = """
import sys
from prdist.cli import main
code = main(['run', '--resource', {release!r}, '--out', {out!r}, *{extra!r}])
assert code == {code}, code
assert 'pandas' not in sys.modules, 'pandas was imported'
# Nor numpy.ma, until labels are fitted: scipy.optimize imports it.
assert {code} != 3 or 'numpy.ma' not in sys.modules, 'numpy.ma was imported'
"""


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
@pytest.mark.parametrize("extra, code", [((), 3), (("--oracle-column", "label"), 0)], ids=["awaiting", "oracle"])
def test_a_run_without_a_label_store_imports_no_pandas(tmp_path, order, extra, code):
    res = str(tmp_path / "res")
    assert cli("synth", "--n", "20000", "--seed", "3", "--order", order, "--out", res)[0] == 0
    body = _RUN_WITHOUT_PANDAS.format(release=res, out=str(tmp_path / "runs"), extra=list(extra), code=code)
    done = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr


def test_the_flows_read_sealed_storage_options_though_their_bodies_import_no_pydantic():
    # An in-process run calls the bodies and loads no pydantic (the entry points above); a flow
    # run reads the same parameters, storage options sealed as a SecretStr included.
    import pydantic

    from flows.compare_systems import compare_systems
    from flows.evaluate_release import evaluate_release
    from flows.synth import synthesize_resource

    for flow, required in ((evaluate_release, {"resource": "r", "out": "o"}),
                           (synthesize_resource, {"model": "m", "n": 10, "out": "o"}),
                           (compare_systems, {"systems": {"a": "s"}, "out": "o", "budget": 10})):
        schema = flow.parameters.model_dump()["properties"]["storage_options"]
        assert {"format": "password", "type": "string", "writeOnly": True} in schema["anyOf"], flow.name
        sealed = flow.validate_parameters({**required, "storage_options": '{"key": "k"}'})["storage_options"]
        assert isinstance(sealed, pydantic.SecretStr), flow.name
