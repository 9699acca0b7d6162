"""Which cells are done, failed or pending, derived from the store alone (resume).

The one definition of a cell's state (attempt_state): an ok attempt measured VALID is done, one
measured INVALID is invalid (not done: resume measures it again, up to run.invalid_reruns), an attempt
that raised is failed, one a stop cut short is interrupted, a cell with no attempt is pending. `run`
(its bar, its closing line, its exit code) and `status` count by it; measured_again is the one rule
of which cells a run measures again (`select`) and of what run and status say about it (resume_fate).

A cell is done iff it has an ok manifest whose files are whole: each file's
size and sha256 as the manifest recorded them (store/verify.py; manifests
written before they were recorded: the Parquet footer opens). An ok attempt
with a truncated, changed or missing file is named in `problems`, does not
count, and the cell runs again. Nothing here is kept in memory between runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from store.fs import StoreRoot
from store.read import Attempt, attempt_damages, attempts, measured_reasons, measured_valid
from store.verify import Damage
from vocab.cells import Cell

DONE, FAILED, PENDING = "done", "failed", "pending"
# Measured, but a validity gate failed: run again on resume unless run.keep_invalid.
INVALID = "invalid"
# The last attempt was interrupted (manifest status "interrupted"): pending again, like failed.
INTERRUPTED = "interrupted"
# The last result is an ok attempt whose files are damaged: measured again, like failed.
DAMAGED = "damaged"
# Not done: run again under run.mode=resume and run.mode=failed.
NOT_DONE = (FAILED, INTERRUPTED, DAMAGED)
# Measured (an ok attempt with whole files), VALID or not: a later failure never undoes it, and a
# dead driver's lease on it is removed rather than taken over (grid/orchestrate/lease.py clear_stale_on_done).
MEASURED = (DONE, INVALID)


# The order every count of states is said in (run's closing line, status, the report's note).
COUNTED = (DONE, INVALID, FAILED, INTERRUPTED, DAMAGED, PENDING)
# A drift-anchor run's label ends so (grid/plan/anchor.py): it is counted apart from the grid's cells.
ANCHOR_MARK = "/anchor-"


def counts_words(
    cells: Mapping[str, int],
    anchor_runs: Mapping[str, int] | None = None,
    notes: Mapping[str, str] | None = None,
) -> str:
    """'4 cells: done 3, invalid 1, failed 0, interrupted 0; 2 anchor runs: done 2': the one way run,
    status and the report count states. Cells: every state `cells` has, in COUNTED's order, with
    its note where it is not 0; anchor runs (never cells of the grid) apart, their states that are not 0."""
    notes = notes or {}
    total = sum(cells.values())
    said = [
        f"{state} {cells[state]}" + (f" ({notes[state]})" if state in notes and cells[state] else "")
        for state in COUNTED
        if state in cells
    ]
    text = f"{total} cell{'s' if total != 1 else ''}: {', '.join(said)}"
    runs = sum((anchor_runs or {}).values())
    if runs:
        shown = [f"{state} {anchor_runs[state]}" for state in COUNTED if (anchor_runs or {}).get(state)]
        text += f"; {runs} anchor run{'s' if runs != 1 else ''}: {', '.join(shown)}"
    return text


def attempt_state(status: str, valid: bool | None) -> str:
    """One attempt's state: `status` is the manifest's (ok, failed, interrupted), `valid` the gates'
    verdict of an ok attempt (None: not judged, as before gates were recorded: done)."""
    if status == "ok":
        return INVALID if valid is False else DONE
    return INTERRUPTED if status == INTERRUPTED else FAILED


def measured_again(
    status: str, invalid_runs: int, mode: str, keep_invalid: bool = False, invalid_reruns: int | None = None
) -> bool:
    """Whether a run under `mode` measures a cell in `status` again (run.force aside): the one rule
    of rerun eligibility, for `select` (what run measures) and resume_fate (what run and status say).

    `all`: every cell. `resume`: pending, failed, interrupted, damaged. `failed`: failed, interrupted,
    damaged. Under both, an INVALID cell (measured `invalid_runs` times INVALID) too, unless
    `keep_invalid`, and at most `invalid_reruns` times (None: no cap). A done cell never.
    """
    if mode == "all":
        return True
    if status == INVALID:
        return not keep_invalid and (invalid_reruns is None or invalid_runs <= invalid_reruns)
    return status in {"resume": (PENDING, *NOT_DONE), "failed": NOT_DONE}[mode]


def resume_fate(
    status: str, invalid_runs: int = 0, keep_invalid: bool = False, invalid_reruns: int | None = None
) -> str:
    """What resume does with a cell in `status`, in words (run's `kept INVALID` line, status), by
    measured_again: 'measured again on resume', or why it is kept."""
    if measured_again(status, invalid_runs, "resume", keep_invalid, invalid_reruns):
        return "measured again on resume"
    if status != INVALID:
        return "kept"
    if keep_invalid:
        return "kept (run.keep_invalid)"
    return f"kept: INVALID in {invalid_runs} runs, run.invalid_reruns={invalid_reruns} used up"


@dataclass
class CellState:
    cell_key: str
    status: str = PENDING
    attempts: int = 0
    # Runs (sessions) with an ok attempt measured INVALID (run.invalid_reruns caps how often resume
    # repeats them); a run's own reruns of a cell INVALID for the host's sake count once.
    invalid_runs: int = 0
    last_error: str | None = None
    sessions: list[str] = field(default_factory=list)
    # The label its manifests record (None where all predate labels): how `status` names a cell of
    # a store read without its grid.
    label: str | None = None


@dataclass(frozen=True)
class Ledger:
    states: dict[str, CellState]
    problems: list[str]
    # Ok attempts left out because a file is not what was written (also in `problems`).
    damaged: list[Damage] = field(default_factory=list)
    # Ok attempts whose manifest records no checksums (written before them): footers checked only.
    footer_only: int = 0

    def status(self, cell_key: str) -> str:
        state = self.states.get(cell_key)
        return state.status if state else PENDING

    def counts(self, keys: Iterable[str], pending: bool = True) -> dict[str, int]:
        """The cells `keys` by state, every state of COUNTED (pending only where `pending`)."""
        states = [self.status(key) for key in keys]
        return {state: states.count(state) for state in COUNTED if pending or state != PENDING}

    def anchor_keys(self) -> list[str]:
        """The drift-anchor runs the store holds (by the label their manifests record)."""
        return [key for key, state in self.states.items() if ANCHOR_MARK in (state.label or "")]

    def invalid_runs(self, cell_key: str) -> int:
        state = self.states.get(cell_key)
        return state.invalid_runs if state else 0


def build_ledger(root: StoreRoot, checksums: bool = True) -> Ledger:
    """Every cell's state from the store; `checksums=False` checks sizes (and footers) only."""
    found, problems = attempts(root)
    by_cell: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in found:
        by_cell[attempt.cell_key].append(attempt)
    states, damaged, footer_only = {}, [], 0
    damage_of = attempt_damages(found, checksums)
    for key, cell_attempts in by_cell.items():
        state = CellState(key, attempts=len(cell_attempts))
        invalid_in: set[str] = set()  # the sessions that measured it INVALID
        for attempt in sorted(cell_attempts, key=lambda a: (a.written_at, a.attempt_id)):
            state.sessions.append(attempt.session_id)
            state.label = attempt.label or state.label
            ok = attempt.status == "ok"
            if ok:
                footer_only += not attempt.files or any(f.sha256 is None for f in attempt.files)
                if (damage := damage_of[(attempt.cell_key, attempt.attempt_id)]) is not None:
                    damaged.append(damage)
                    problems.append(str(damage))
                    if state.status not in MEASURED:
                        state.status = DAMAGED
                        state.last_error = damage.short()
                    continue
            # A later attempt never undoes a done cell; an INVALID one yields only to a done one.
            now = attempt_state(attempt.status, measured_valid(attempt) if ok else None)
            if now == DONE:
                state.status = DONE
            elif now == INVALID:
                if state.status != DONE:
                    invalid_in.add(attempt.session_id)
                    state.invalid_runs = len(invalid_in)
                    state.status = INVALID
                    state.last_error = f"INVALID: {measured_reasons(attempt) or 'a validity gate failed'}"
            elif state.status not in MEASURED:
                state.status, state.last_error = now, attempt.error
        states[key] = state
    return Ledger(states, problems, damaged, footer_only)


def select(
    cells: list[Cell],
    ledger: Ledger,
    mode: str,
    force: list[str],
    keep_invalid: bool = False,
    invalid_reruns: int | None = None,
) -> list[Cell]:
    """Cells to run: `resume` = not done; `failed` = failed, interrupted or damaged; `all` = every cell.

    A cell measured INVALID runs again under `resume` and `failed` unless
    `keep_invalid`, and at most `invalid_reruns` times (None: no cap; see
    kept_invalid). Cells whose key or label starts with an entry of `force` always run.
    """

    def forced(cell: Cell) -> bool:
        return any(cell.key.startswith(f) or cell.label.startswith(f) for f in force)

    def again(cell: Cell) -> bool:
        status, runs = ledger.status(cell.key), ledger.invalid_runs(cell.key)
        return measured_again(status, runs, mode, keep_invalid, invalid_reruns)

    return [c for c in cells if again(c) or forced(c)]


def kept_invalid(cells: list[Cell], ledger: Ledger, todo: list[Cell]) -> list[Cell]:
    """INVALID cells that `select` left out although INVALID cells were wanted: out of reruns."""
    chosen = {c.key for c in todo}
    return [c for c in cells if ledger.status(c.key) == INVALID and c.key not in chosen]
