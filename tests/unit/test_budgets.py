"""Every test directory has a time budget; the end-of-run table marks those over it (tests/budgets.py)."""

from __future__ import annotations

from tests.budgets import budget_table, budgeted_directories, directory_of, load_budgets, over_budget


def test_every_test_directory_has_a_budget_and_every_budget_a_directory():
    budgets = load_budgets()
    directories = budgeted_directories()
    assert {"tests/unit", "tests/engine", "tests/plugins_engine"} <= directories
    assert not (missing := directories - set(budgets)), f"add a line for {missing} to tests/budgets.toml"
    assert not (stale := set(budgets) - directories), f"tests/budgets.toml names no test directory: {stale}"
    assert all(seconds > 0 for seconds in budgets.values()), budgets


def test_a_test_counts_toward_its_top_directory():
    assert directory_of("tests/unit/grid/test_plan.py::test_x[a/b]") == "tests/unit"
    assert directory_of("tests/engine/test_grid_run.py::test_y") == "tests/engine"


def test_the_table_marks_a_directory_over_its_budget_and_one_without():
    budgets = {"tests/unit": 10.0, "tests/engine": 100.0}
    spent = {"tests/unit": 12.5, "tests/engine": 50.0, "tests/new": 1.0}
    lines = budget_table(spent, {"tests/unit": 3, "tests/engine": 2, "tests/new": 1}, budgets)
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert by_name["tests/unit"].endswith("1.25  OVER")
    assert by_name["tests/engine"].endswith("0.50")
    assert "NO BUDGET" in by_name["tests/new"]
    assert by_name["total"].split()[1:] == ["6", "63.5"]
    assert over_budget(spent, budgets) == ["tests/new", "tests/unit"]
