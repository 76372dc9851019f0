"""The layers the README states are the code's: imports point down only, and never in a circle.

    commands  prdist/cli/, prdist/__main__.py        (may import anything)
    flows     flows/                                                         (Prefect wiring)
    dataflow  prdist/dataflow/     Dask and storage; never Prefect, flows or the commands
    core      prdist/*.py          pure NumPy/SciPy; never Dask, Prefect, flows, dataflow, commands

Every ``import`` counts, module-level or inside a function: an import deferred into a function
still makes the lower layer depend on the upper one. The scan reads the syntax tree (like the
security scan of tests/integration/test_security.py), so it sees imports that a test run never executes.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT  # noqa: E402
PACKAGE = ROOT / "prdist"

#: Modules of the command layer: they sit above everything and may import anything.
COMMANDS = {"prdist.cli", "prdist.__main__"}
ENGINES = ("dask", "distributed", "prefect", "flows")

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module ``name`` imports (absolute names; ``from pkg import module`` names the module)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _layer(module: str) -> str:
    if module in COMMANDS or module.startswith("prdist.cli.") or module == "prdist":
        return "commands"
    if module.startswith("prdist.dataflow"):
        return "dataflow"
    return "core"


def _forbidden(module: str, target: str) -> bool:
    root = target.split(".")[0]
    layer = _layer(module)
    if layer == "commands":
        return False
    if root in ("prefect", "flows") or target in COMMANDS:
        return True
    if layer == "core":
        return root in ("dask", "distributed") or target.startswith("prdist.dataflow")
    return False


def upward_imports(graph) -> set[tuple[str, str]]:
    return {(module, target) for module, targets in graph.items() for target in targets if _forbidden(module, target)}


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_layer_imports_a_layer_above_it():
    assert upward_imports(import_graph()) == set()


def test_no_import_cycle_among_prdist_modules():
    # A package imports its parent package implicitly; only module-to-module edges can circle.
    graph = {m: {t for t in ts if t != "prdist"} for m, ts in import_graph().items()}
    assert cycles(graph) == []


def test_the_scan_finds_what_it_looks_for():
    graph = {
        "prdist.grid": {"numpy", "prdist.dataflow.storage", "distributed"},
        "prdist.dataflow.storage": {"prdist.dataflow.select", "flows.synth"},
        "prdist.dataflow.select": {"prdist.dataflow.storage", "dask"},
        "prdist.cli": {"prefect", "flows.synth", "prdist.dataflow.select"},
    }
    assert upward_imports(graph) == {
        ("prdist.grid", "prdist.dataflow.storage"),
        ("prdist.grid", "distributed"),
        ("prdist.dataflow.storage", "flows.synth"),
    }
    assert cycles(graph) == [["prdist.dataflow.select", "prdist.dataflow.storage"]]


def test_relative_imports_resolve_to_modules(tmp_path):
    package = tmp_path / "prdist" / "dataflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from .select import x\nfrom .. import ranking, __version__\n")
    known = {"prdist", "prdist.ranking", "prdist.dataflow", "prdist.dataflow.select"}
    assert _imports("prdist.dataflow", package / "__init__.py", known) == {"prdist.dataflow.select", "prdist.ranking", "prdist"}
