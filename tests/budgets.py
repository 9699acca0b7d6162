"""Time budgets per test directory (tests/budgets.toml) and the table `make test` prints at its end.

A budget is the seconds a directory may take in `make test` on the 2-core CI box
(setup, call and teardown of its tests summed, as pytest's --durations counts
them). Going over prints OVER in the table and does not fail the run: a timed
test fails on a loaded machine for no fault of the code (the developers' guide
puts speed targets into benchmarks). What a test does enforce is that every
test directory has a budget (tests/unit/test_budgets.py), so a new directory's
time shows in the table against a figure someone chose.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

TESTS_DIR = Path(__file__).parent
BUDGETS_FILE = TESTS_DIR / "budgets.toml"


def load_budgets(path: Path = BUDGETS_FILE) -> dict[str, float]:
    """{directory: seconds} from the file's [budget_s] table."""
    with path.open("rb") as handle:
        table = tomllib.load(handle).get("budget_s", {})
    return {str(name): float(seconds) for name, seconds in table.items()}


def directory_of(nodeid: str) -> str:
    """The budgeted directory of a test: tests/<dir> (tests/unit/grid/test_x.py::t -> tests/unit)."""
    parts = nodeid.split("::", 1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def budgeted_directories(tests_dir: Path = TESTS_DIR) -> set[str]:
    """Every tests/<dir> with a test module anywhere below it."""
    return {
        f"{tests_dir.name}/{child.name}"
        for child in tests_dir.iterdir()
        if child.is_dir() and any(child.rglob("test_*.py"))
    }


def over_budget(spent_s: Mapping[str, float], budgets: Mapping[str, float]) -> list[str]:
    """Directories that took longer than their budget, or ran without one."""
    return sorted(d for d, s in spent_s.items() if d not in budgets or s > budgets[d])


def budget_table(
    spent_s: Mapping[str, float], tests: Mapping[str, int], budgets: Mapping[str, float]
) -> list[str]:
    """One line per directory that ran: tests, seconds, budget, share of it, and OVER where over."""
    lines = [f"{'directory':<24}{'tests':>7}{'spent s':>10}{'budget s':>10}{'share':>8}"]
    for name in sorted(spent_s):
        spent = spent_s[name]
        budget = budgets.get(name)
        if budget is None:
            row = f"{name:<24}{tests[name]:>7}{spent:>10.1f}{'none':>10}{'':>8}"
            lines.append(f"{row}  NO BUDGET in tests/budgets.toml")
            continue
        mark = "  OVER" if spent > budget else ""
        lines.append(f"{name:<24}{tests[name]:>7}{spent:>10.1f}{budget:>10.0f}{spent / budget:>8.2f}{mark}")
    total = sum(spent_s.values())
    lines.append(f"{'total':<24}{sum(tests.values()):>7}{total:>10.1f}")
    return lines
