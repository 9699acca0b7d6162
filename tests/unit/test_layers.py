"""Data flows one way: conf/ -> grid/ -> workers/ -> store -> analysis, all speaking vocab/.

Read from the source with `ast` (imports inside functions included), so a
shortcut taken anywhere in a module is caught, not only at its top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vocab.paths import project_path

# Package -> top-level packages of this project it must never import.
FORBIDDEN = {
    "vocab": {"grid", "workers", "analysis", "experiments", "assets", "lever_plugins"},
    # The store owns the record types it writes (store/records.py: RequestRecord, ProbeRow), which
    # the workers fill; vocab is above store (vocab.paths opens stores), so store speaks none of them.
    "store": {"grid", "workers", "analysis", "experiments", "assets", "vocab"},
    "workers": {"grid", "analysis", "experiments"},
    "analysis": {"grid", "workers", "experiments"},
    # Runs inside vLLM's processes: the harness's own modules are not there to import.
    "lever_plugins": {"grid", "workers", "store", "analysis", "experiments", "assets", "vocab"},
}


def imported_packages(path: Path) -> set[str]:
    """Top-level names of every module `path` imports (absolute imports)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_layer_imports_one_above_it(package):
    offenders = {
        str(path.relative_to(project_path("."))): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in sorted(project_path(package).rglob("*.py"))
    }
    assert {name: bad for name, bad in offenders.items() if bad} == {}


def test_ray_is_imported_in_one_module():
    packages = ("vocab", "grid", "workers", "store", "analysis", "experiments", "assets", "lever_plugins")
    importers = [
        str(path.relative_to(project_path(".")))
        for package in packages
        for path in sorted(project_path(package).rglob("*.py"))
        if "ray" in imported_packages(path)
    ]
    assert importers == ["grid/schedule.py"]


# workers/ in three parts under the cell loop (runner.py and the modules beside it: launch, cell,
# summary, attempts, ...): the load client is the base, the engine may name its prompts (what a
# launch was sent), the signals read both; none reaches the loop.
LOOP = {path.stem for path in project_path("workers").glob("*.py")} - {"__init__"}
WORKER_PARTS = {
    "load": {"engine", "signals"} | LOOP,
    "engine": {"signals"} | LOOP,
    "signals": LOOP,
}


def imported_workers_parts(path: Path) -> set[str]:
    """Second-level names under `workers` that `path` imports (workers.engine.args -> engine)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found |= {name.split(".")[1] for name in names if name.startswith("workers.")}
    return found


@pytest.mark.parametrize("part", sorted(WORKER_PARTS))
def test_workers_parts_import_only_below_them(part):
    offenders = {
        str(path.relative_to(project_path("."))): sorted(imported_workers_parts(path) & WORKER_PARTS[part])
        for path in sorted(project_path(f"workers/{part}").rglob("*.py"))
    }
    assert {name: bad for name, bad in offenders.items() if bad} == {}
