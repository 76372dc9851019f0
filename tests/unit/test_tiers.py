"""The test tiers hold: every test file lives in a tier's folder, a tier imports nothing of a
later tier, and no test's Dask cluster asks for a fixed port.

Read from the source (as tests/unit/test_layers.py reads prdist's), so it sees imports and
fixtures of tests that a run never executes.
"""

from __future__ import annotations

import ast

import pytest

from tests.support.paths import ROOT

TESTS = ROOT / "tests"

#: What a tier's test modules must not import (a module or any of its submodules).
FORBIDDEN_IMPORTS = {
    "unit": ("dask", "distributed", "prefect", "flows", "prdist.dataflow", "prdist.cli", "tests.dataflow",
             "tests.integration", "tests.support.seaweed", "tests.support.cli_run", "tests.support.dask_release",
             "tests.support.prefect_events", "tests.support.prefect_runs"),
    "dataflow": ("prefect", "flows", "prdist.cli", "tests.integration", "tests.support.cli_run",
                 "tests.support.prefect_events", "tests.support.prefect_runs"),
}
#: What a tier's tests must not ask for: the fixtures of later tiers' servers and clusters.
FORBIDDEN_FIXTURES = {
    "unit": {"s3_server", "s3_url", "s3_env", "dask_client", "label_studio", "prefect_harness", "runner"},
    "dataflow": {"label_studio", "prefect_harness", "runner"},
}


def tier_files(tier: str) -> list:
    return sorted((TESTS / tier).glob("test_*.py"))


def imported(tree: ast.Module) -> set[str]:
    """Every module an ``import`` or ``from ... import`` names, at any depth of the file."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def requested_fixtures(tree: ast.Module) -> set[str]:
    """The parameter names of every test function and fixture (what pytest fills with fixtures)."""
    return {arg.arg for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for arg in node.args.args + node.args.kwonlyargs}


def within(name: str, roots) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def test_every_test_file_lives_in_a_tier_folder():
    stray = [path.relative_to(ROOT) for path in TESTS.rglob("test_*.py") if path.parent.parent != TESTS
             or path.parent.name not in ("unit", "dataflow", "integration")]
    assert not stray, f"move these into tests/unit, tests/dataflow or tests/integration: {stray}"


@pytest.mark.parametrize("tier", sorted(FORBIDDEN_IMPORTS))
def test_a_tier_imports_nothing_of_a_later_tier(tier):
    assert tier_files(tier)
    wrong = {}
    for path in tier_files(tier):
        tree = ast.parse(path.read_text(), filename=str(path))
        found = sorted(n for n in imported(tree) if within(n, FORBIDDEN_IMPORTS[tier]))
        found += sorted(requested_fixtures(tree) & FORBIDDEN_FIXTURES[tier])
        if found:
            wrong[path.name] = found
    assert not wrong, f"tests/{tier} must not use these (move the test to a later tier): {wrong}"


def test_every_dask_cluster_of_the_tests_binds_no_fixed_port():
    """``LocalCluster`` serves HTTP on 8787 unless told otherwise (even with ``dashboard_address=None``),
    and a ``Client()`` without an address starts such a cluster: on a shared machine that port is taken."""
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            if node.func.id == "LocalCluster":
                address = keywords.get("dashboard_address")
                if not (isinstance(address, ast.Constant) and str(address.value).endswith(":0")):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} LocalCluster without dashboard_address='...:0'")
                port = keywords.get("scheduler_port")
                if port is not None and not (isinstance(port, ast.Constant) and port.value == 0):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} LocalCluster on a fixed scheduler port")
            elif node.func.id == "Client" and not node.args and "address" not in keywords:
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} Client() starts a cluster on port 8787")
    assert not wrong, "\n".join(wrong)
