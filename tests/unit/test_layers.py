"""Data flows one way: conf/ -> grid/ -> workers/ -> store -> analysis, all speaking vocab/.

In imports: each package imports only those below it. vocab (and the store it opens) at the bottom,
then analysis and workers, then grid, which drives them; experiments (the tune and its simulations)
and assets (`python -m assets`: it composes the config through grid to know what to build) sit on
top, beside each other, with benchmarks and the tests above all.

Read from the source with `ast` (imports inside functions included), so a
shortcut taken anywhere in a module is caught, not only at its top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vocab.paths import project_path

# Only benchmarks and the tests may import benchmarks or the tests.
TOP = {"benchmarks", "tests"}
# Package -> top-level packages of this project it must never import.
FORBIDDEN = {
    "vocab": {"grid", "workers", "analysis", "experiments", "assets", "lever_plugins", *TOP},
    # The store owns the record types it writes (store/records.py: RequestRecord, ProbeRow), which
    # the workers fill; vocab is above store (vocab.paths opens stores), so store speaks none of them.
    "store": {"grid", "workers", "analysis", "experiments", "assets", "vocab", *TOP},
    "workers": {"grid", "analysis", "experiments", "assets", *TOP},
    "analysis": {"grid", "workers", "experiments", "assets", *TOP},
    # Runs inside vLLM's processes: the harness's own modules are not there to import.
    "lever_plugins": {"grid", "workers", "store", "analysis", "experiments", "assets", "vocab", *TOP},
    "grid": {"experiments", "assets", *TOP},
    "experiments": {"assets", *TOP},
    "assets": {"experiments", *TOP},
    "benchmarks": {"experiments", "assets"},
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
    assert importers == ["grid/orchestrate/schedule.py"]


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


# grid/ in parts, each importing only those below it: config (compose the config, expand it into cells)
# at the bottom; plan (engine groups, their cost and order, the drift anchor); checks (before a launch);
# orchestrate (run, schedule on Ray, looks, confirmation, ledger, leases); cli (the commands' tables and
# pages) on top, under grid/__main__.py alone.
GRID_PARTS = {
    "config": {"plan", "checks", "orchestrate", "cli"},
    "plan": {"checks", "orchestrate", "cli"},
    "checks": {"orchestrate", "cli"},
    "orchestrate": {"cli"},
}


def imported_parts(path: Path, package: str) -> set[str]:
    """Second-level names under `package` that `path` imports (grid.plan.cost -> plan)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name.split(".")[1] for name in names if name.startswith(f"{package}.")}
    return found


def test_every_grid_module_is_in_a_part():
    loose = sorted(
        p.name for p in project_path("grid").glob("*.py") if p.name not in {"__init__.py", "__main__.py"}
    )
    assert loose == []
    assert {p.name for p in project_path("grid").iterdir() if p.is_dir() and p.name != "__pycache__"} == set(
        GRID_PARTS
    ) | {"cli"}


@pytest.mark.parametrize("part", sorted(GRID_PARTS))
def test_grid_parts_import_only_below_them(part):
    offenders = {
        str(path.relative_to(project_path("."))): sorted(imported_parts(path, "grid") & GRID_PARTS[part])
        for path in sorted(project_path(f"grid/{part}").rglob("*.py"))
    }
    assert {name: bad for name, bad in offenders.items() if bad} == {}


def project_modules() -> dict[str, Path]:
    """Dotted name -> file of every module in the project's packages (top folders with an __init__.py)."""
    root = project_path(".")
    modules = {}
    for init in sorted(root.glob("*/__init__.py")):
        for path in sorted(init.parent.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (inside functions too); `from a import b` is a.b where
    that is a module, else a."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        names = []
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        graph[module] = {target for name in names if (target := known(name)) and target != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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
    return sorted(found)


def test_cycles_finds_a_cycle_and_only_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others():
    assert cycles(import_graph(project_modules())) == []
