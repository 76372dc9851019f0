"""The documentation builds strictly and the tutorial notebook runs, as a reader would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
REVERB = ROOT.parent / "shared" / "data" / "reverb-emnlp2011"


def test_the_api_reference_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "api" / "evaluation" / "index.html").read_text()
    assert "with_labels" in page and "Parameters" in page
    assert (tmp_path / "site" / "tutorial.ipynb").exists()


def test_the_tutorial_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("PRDIST_REVERB_DATA", str(REVERB))
    notebook = nbformat.read(ROOT / "docs" / "tutorial.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "store it without outputs"
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "\n".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert not [o for o in outputs if o.output_type == "error"]
    assert "rows=727, duplicates=0" in text
    assert "Evaluation(n=727, planned=469, labeled=401, awaiting=68" in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2  # ev2.plot() and plot_bands; ev2 draws SVG
    assert any('class="prdist-summary"' in o.get("data", {}).get("text/html", "") for o in outputs)
