"""The band coverage benchmark runs, and the coverage table in the docs is the one it wrote.

``benchmarks/bench_band_coverage.py`` measures how often the bootstrap bands contain the population
PR curve; docs/coverage.md shows its tables, written from docs/band_coverage.json. These tests run
the script's ``--quick`` path (so it cannot rot) and check that the tables in the docs are the
rendering of the JSON the full run wrote, with the settings the page states.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from tests.support.paths import ROOT

SCRIPT = ROOT / "benchmarks" / "bench_band_coverage.py"
DOCS = ROOT / "docs" / "coverage.md"
RESULTS = ROOT / "docs" / "band_coverage.json"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_band_coverage", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_quick_run_measures_two_cells_and_writes_its_tables(tmp_path):
    bench = _bench()
    page = tmp_path / "page.md"
    page.write_text(f"before\n{bench.BEGIN}\nstale\n{bench.END}\nafter\n")
    out = tmp_path / "quick.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), "--docs", str(page)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "load average" in done.stdout and "wall time" in done.stdout
    results = json.loads(out.read_text())
    assert [(c["model"], c["n"], c["method"]) for c in results["cells"]] == [
        ("binormal 1.5", 200, "smoothed-importance"), ("binormal 1.5", 200, "naive")]
    for cell in results["cells"]:
        assert cell["samples"] + cell["skipped"] == 5
        for shares in cell["levels"].values():
            assert 0.0 <= shares["sup"]["coverage"] <= 1.0
            assert set(shares["pointwise"]) == {"0.050", "0.500", "0.896"}
    written = page.read_text()
    assert written.startswith("before\n") and written.endswith("after\n") and "stale" not in written
    assert bench.embedded_tables(written) == bench.markdown_tables(results) + "\n"


def test_a_coverage_more_than_two_standard_errors_below_nominal_is_bold_and_counted():
    bench = _bench()
    assert bench.format_share({"coverage": 0.85, "se": 0.02}, 0.95) == "**0.850 ± 0.020**"
    assert bench.format_share({"coverage": 0.92, "se": 0.02}, 0.95) == "0.920 ± 0.020"
    assert bench.format_share({"coverage": 1.0, "se": 0.0}, 0.95) == "1.000 ± 0.000"


def test_the_docs_table_is_the_one_the_benchmark_wrote():
    bench = _bench()
    results = json.loads(RESULTS.read_text())
    page = DOCS.read_text()
    assert bench.embedded_tables(page) == bench.markdown_tables(results) + "\n"
    assert len(results["cells"]) == results["cells_planned"], "the committed run is complete"
    settings = results["settings"]
    assert f"B = {settings['replicates']} replicates" in page
    assert f"{settings['samples_per_cell']} per cell" in page
