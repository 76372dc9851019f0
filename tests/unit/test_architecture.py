"""The package's shape, as issue 29 set it: small modules with one idea each, folders one can take in
at a glance, results as typed objects, and a layout section that names what is there.

Each rule is checked on the tree itself (file sizes, the syntax tree, the README), so a module that
grows past the limit, a folder that fills up or a result smuggled in ``DataFrame.attrs`` fails here
first, not in a review.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import ROOT
PACKAGE = ROOT / "prdist"

#: Longest module, in lines: past this a module holds more than one idea (issue 29).
MODULE_LINES = 800
#: Most modules in one folder of the package.
FOLDER_MODULES = 12


def _modules():
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MODULE_LINES}
    assert long == {}, f"split these by idea (limit {MODULE_LINES} lines)"


def test_no_folder_holds_more_modules_than_the_limit():
    folders: dict[str, int] = {}
    for path in _modules():
        key = str(path.parent.relative_to(ROOT))
        folders[key] = folders.get(key, 0) + 1
    assert {k: n for k, n in folders.items() if n > FOLDER_MODULES} == {}


def test_no_result_travels_in_dataframe_attrs():
    # pandas calls attrs experimental; results are typed objects instead.
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "attrs"
    ]
    assert found == []


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Layout\n", 1)[1]
    return section.split("```", 2)[1]


def test_the_readme_layout_names_every_package_and_nothing_gone():
    block = _layout_block()
    packages = sorted(
        str(p.parent.relative_to(ROOT)) + "/" for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts
    )
    missing = [p for p in packages if p not in block]
    assert missing == [], "README's Layout section should name these packages"
    named = set(re.findall(r"\b((?:prdist|flows)/[\w/]+?)/?(?=\s)", block))
    gone = sorted(n for n in named if not (ROOT / n).exists() and not (ROOT / (n + ".py")).exists())
    assert gone == [], "README's Layout section names paths that no longer exist"
