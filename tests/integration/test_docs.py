"""The documentation builds strictly, covers the whole public surface, renders the executed tutorial
and writes nothing into the source tree."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
import types
import zlib
from pathlib import Path
from unittest import mock

import nbformat

import prdist
from prdist.cli import build_parser

from tests.support.paths import ROOT  # noqa: E402
REVERB = ROOT.parent / "shared" / "data" / "reverb-emnlp2011"
#: Not the source tree: environments, caches and what .gitignore already keeps out of it.
NOT_SOURCE = {".git", ".venv", ".venv-label-studio", ".venv-bench", "__pycache__", ".pytest_cache", ".hypothesis", "site"}


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks_pages", ROOT / "docs" / "hooks" / "pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _source_files() -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SOURCE]
        found.update(os.path.relpath(os.path.join(folder, f), ROOT) for f in files)
    return found


def _inventory(site: Path) -> set[str]:
    """Identifiers of the objects the API reference documents (mkdocstrings' objects.inv)."""
    raw = (site / "objects.inv").read_bytes()
    body = zlib.decompress(raw.split(b"\n", 4)[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines()}


def _identifier(value) -> str:
    if isinstance(value, types.ModuleType):
        return value.__name__
    return f"{value.__module__}.{value.__qualname__}"


def _text(page: Path) -> str:
    markup = re.sub(r"<svg.*?</svg>|<style.*?</style>", " ", page.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup)))


def test_the_documentation_builds_strictly_covers_the_public_surface_and_writes_nothing_into_the_tree(tmp_path):
    before = _source_files()
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PRDIST_REVERB_DATA": str(REVERB)},
    )
    assert done.returncode == 0, done.stderr
    assert _source_files() == before, "the build wrote into the source tree"

    # Every public name has a page: its defining object is in the reference's inventory.
    documented = _inventory(site)
    missing = [name for name in prdist.__all__ if _identifier(getattr(prdist, name)) not in documented]
    assert not missing, f"public names without a page in docs/api: {missing}"

    # Every command has a section of the generated command-line reference, with its --help.
    cli, hooks = (site / "cli" / "index.html").read_text(), _hooks()
    with mock.patch.dict(os.environ, {"COLUMNS": hooks.HELP_COLUMNS}):  # the width the page is made at
        for words, parser in hooks.commands(build_parser()):
            assert f'id="{"-".join(words)}"' in cli, words
            assert " ".join(parser.format_help().split()) in _text(site / "cli" / "index.html"), words

    # Cross-references are links, not raw roles; evaluate's parameters carry their own defaults.
    pages = list(site.rglob("*.html"))
    assert not [page for page in pages if re.search(r":(func|class|meth|mod|attr|data|exc):`", page.read_text())]
    evaluation = (site / "api" / "evaluation" / "index.html").read_text()
    assert 'href="../bounds/#prdist.paula.plan.plan_paula"' in evaluation
    parameters = _text(site / "api" / "evaluation" / "index.html")
    assert "eps float PAULA's grid spacing, in (0, 1] (see prdist.plan_paula ). 0.03 window" in parameters
    assert "window int PAULA's window width Delta, >= 1 (see prdist.plan_paula ). 100 confidence" in parameters

    # The tutorial is rendered with the outputs of its execution at build time.
    tutorial = _text(site / "tutorial" / "index.html")
    assert "rows=727, duplicates=0" in tutorial
    assert "awaiting labels (68)" in tutorial and "401 / 469 labels known / planned" in tutorial
    assert (site / "tutorial" / "index.html").read_text().count("data:image/png;base64,") == 2  # ev2.plot(), plot_bands
    assert "Traceback" not in tutorial
    assert (site / "tutorial.ipynb").exists()  # the notebook, to download


def test_the_tutorial_is_stored_without_outputs():
    notebook = nbformat.read(ROOT / "docs" / "tutorial.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
