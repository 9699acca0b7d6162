"""Which cells are done, failed or pending, derived from the store alone (resume).

A cell is done iff it has an ok manifest whose Parquet files are readable;
an ok manifest with a truncated or corrupt file is reported and ignored, so
the cell runs again. Nothing here is kept in memory between runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from grid.cells import Cell
from store.read import Attempt, attempts, measured_valid, unreadable

DONE, FAILED, PENDING = "done", "failed", "pending"
# Measured, but a validity gate failed: run again on resume unless run.keep_invalid.
INVALID = "invalid"


@dataclass
class CellState:
    cell_key: str
    status: str = PENDING
    attempts: int = 0
    last_error: str | None = None
    sessions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Ledger:
    states: dict[str, CellState]
    problems: list[str]

    def status(self, cell_key: str) -> str:
        state = self.states.get(cell_key)
        return state.status if state else PENDING


def build_ledger(root: Path) -> Ledger:
    found, problems = attempts(root)
    by_cell: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in found:
        by_cell[attempt.cell_key].append(attempt)
    states = {}
    for key, cell_attempts in by_cell.items():
        state = CellState(key, attempts=len(cell_attempts))
        for attempt in sorted(cell_attempts, key=lambda a: (a.written_at, a.attempt_id)):
            state.sessions.append(attempt.session_id)
            if attempt.status == "ok":
                if (problem := unreadable(attempt)) is not None:
                    problems.append(problem)
                    state.last_error = problem
                elif measured_valid(attempt):
                    state.status = DONE
                elif state.status != DONE:
                    state.status = INVALID
                    state.last_error = "measured INVALID (a validity gate failed; see invalid_reasons)"
                continue
            if state.status not in (DONE, INVALID):
                state.status = FAILED
                state.last_error = attempt.error
        states[key] = state
    return Ledger(states, problems)


def select(
    cells: list[Cell], ledger: Ledger, mode: str, force: list[str], keep_invalid: bool = False
) -> list[Cell]:
    """Cells to run: `resume` = not done; `failed` = failed only; `all` = every cell.

    A cell measured INVALID runs again under `resume` and `failed` unless
    `keep_invalid`. Cells whose key or label starts with an entry of `force` always run.
    """

    def forced(cell: Cell) -> bool:
        return any(cell.key.startswith(f) or cell.label.startswith(f) for f in force)

    if mode == "all":
        return list(cells)
    wanted = {"resume": (PENDING, FAILED), "failed": (FAILED,)}[mode]
    if not keep_invalid:
        wanted = (*wanted, INVALID)
    return [c for c in cells if ledger.status(c.key) in wanted or forced(c)]
