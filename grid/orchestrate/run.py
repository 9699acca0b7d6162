"""`python -m grid run`: resolve everything first, then run one loop, then report."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, replace
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from analysis.gpu_time import share_line
from analysis.load import anchor_runs
from analysis.summary import latest_cells, render, render_repeats
from analysis.verdicts import write_verdicts
from grid.checks.preflight import Inspection, check_before_launch, check_config
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.lease import CellLeases, clear_stale_on_done
from grid.orchestrate.ledger import (
    DONE,
    FAILED,
    INTERRUPTED,
    INVALID,
    Ledger,
    attempt_state,
    build_ledger,
    counts_words,
    kept_invalid,
    resume_fate,
    select,
)
from grid.orchestrate.session import end_fingerprint, fingerprint, new_session_id
from grid.orchestrate.stop import Stop, Stopped
from grid.plan.anchor import anchor_cells, anchored_phases
from grid.plan.cost import launch_order
from grid.plan.groups import group_by_engine
from store.atomic import write_json
from store.layout import StoreLayout
from store.phases import Phase, clear_phases, read_phases, sweep_phases
from store.read import connect
from vocab.cells import Cell, stable_hash
from vocab.console import make_console  # the terminal's width, or LOG_WIDTH in a log (also the tune's)
from vocab.errors import StoreError
from vocab.groups import EngineGroup
from vocab.paths import data_path, project_path, store_path
from vocab.schema import Config
from workers.runner import CellOutcome, RunContext
from workers.signals.gates import BUSY_FIX

# run()s in progress in this process. Sequential looks and the held-out confirmation are runs inside a
# run: only the outermost leaves the Ray cluster it started, so they all share one.
_RUNS_IN_PROGRESS = 0
# How often the driver reads what each engine is doing (store/phases.py): a local store, an object store.
PHASE_POLL_S = 2.0
REMOTE_PHASE_POLL_S = 10.0
# After the Ray head is lost (schedule.watching_head), how long its watch waits for the run to end on
# its own (cells in flight recorded as interrupted, the session's end, the closing line) before it
# ends the session alone: a call into Ray can hold the main thread until Ray ends the process, about
# 60 s after the head went (HEAD_LOST_S + this + the end's own writes stay well inside that).
HEAD_GRACE_S = 20.0


@contextmanager
def one_ray_session() -> Iterator[None]:
    """Runs inside this block share the Ray cluster: only a run at the outermost level leaves it (after
    its own launch, _run). A run with nothing to launch never leaves it: a caller's Ray (a test's
    cluster) stays connected; a local one the looks started ends with the process."""
    global _RUNS_IN_PROGRESS
    _RUNS_IN_PROGRESS += 1
    try:
        yield
    finally:
        _RUNS_IN_PROGRESS -= 1


def run(overrides: list[str], console: Console | None = None, then: Callable[[], int] | None = None) -> int:
    """Run what the store lacks of the grid; return 1 if any cell is left undone (exit_code).

    One grid at fixed repeats: grid/orchestrate/drive.py runs sequential looks and the held-out confirmation,
    which it passes as `then`, run after a clean run inside its Ray session (conclude)."""
    with one_ray_session():
        return _run(overrides, console, then)


def _run(overrides: list[str], console: Console | None, then: Callable[[], int] | None) -> int:
    console = console or make_console()
    config = to_config(compose_config(overrides))
    check_config(config)  # run.mode, attempts, cluster, every model's tp, max_tokens: all at once
    cells = expand(config)
    paths = config.paths
    ctx = RunContext(
        session_id=config.session_id or new_session_id(),
        store_root=store_path(paths.store, paths.store_options),
        cache_dir=project_path(paths.cache_dir),
        models_dir=project_path(paths.models_dir),
        data_dir=data_path(paths.data_dir, paths.store_options),
        gates=config.gates,
        min_store_free_bytes=config.run.min_store_free_mb * 2**20,
    )
    started_s = time.time()  # before the store is read: another driver's later results are new
    ledger = build_ledger(ctx.store_root)
    for problem in ledger.problems:
        console.print(f"[yellow]store:[/] {problem}")
    # A killed driver's lease on a cell measured since (done or INVALID) is taken over by no one, nor
    # is a garbled one: removed here, once no driver has rewritten it for run.lease_s.
    clear_stale_on_done(ctx.store_root, ledger.status, console.print, config.run.lease_s)
    # What ended sessions left under phases/ (a driver that lost its Ray head, say): theirs no longer.
    sweep_phases(ctx.store_root, keep=ctx.session_id)
    todo = select(
        cells, ledger, config.run.mode, config.run.force, config.run.keep_invalid, config.run.invalid_reruns
    )
    if config.run.mode != "all" and not config.run.keep_invalid:
        for cell in kept_invalid(cells, ledger, todo):
            fate = resume_fate(INVALID, ledger.invalid_runs(cell.key), False, config.run.invalid_reruns)
            console.print(
                f"[yellow]kept INVALID[/] {cell.label}: {fate}; reasons in `python -m grid summary`; "
                f"fix the load or gates (e.g. more prompts), then {escape(f'run.force=[{cell.label}]')}"
            )
    # A session with something to measure also measures its own drift.
    anchors = anchor_cells(config) if todo else None
    phases = anchored_phases(launch_order(group_by_engine(todo), config.plan), anchors)
    # Before any launch: weights, engine, store, corpora, prompt lengths, every measured prompt new
    # to its engine (on the real corpora), the corpora the done cells measured; every problem at once,
    # one line each (grid/checks/preflight.py). Each worker checks its corpus against the hashes read here.
    chosen = {cell.key for cell in todo}
    found = check_before_launch(config, phases, kept=[c for c in cells if c.key not in chosen])
    ctx = replace(ctx, corpus_sha256=found.corpus_sha256)
    for warning in found.warnings:
        console.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    distinct = distinct_prompts(found)
    say_invalid_again(todo, ledger, ctx, config, console, distinct)
    launches = sum(map(len, phases)) - len(anchors or ())
    console.print(
        f"session {ctx.session_id}: {len(todo)} of {len(cells)} cells to run "
        f"({in_store_words(cells, todo, ledger)}) on {launches} engine launches"
        + (
            f", plus the drift anchor {anchors[0].label.removesuffix('/anchor-start')} first and last"
            + (
                f" and {'once' if len(anchors) == 3 else f'{len(anchors) - 2} times'} between"
                if len(anchors) > 2
                else ""
            )
            + f" ({runs_words(len(todo), len(anchors))})"
            if anchors
            else ""
        )
        + f" -> {ctx.store_root}"
    )
    outcomes: list[CellOutcome] = []
    stop = Stop()
    leases = CellLeases(ctx.store_root, ctx.session_id, config.run.lease_s, console.print, started_s)
    if todo:
        outcomes = launch(phases, ctx, config, console, stop, leases)
    # From here on the engines have ended: a signal exits at once, saying so (a second one after a
    # stop too), and a store that fails now is one line and exit 1, not a traceback.
    with stop_on_signals(stop, console, measuring=False) if todo else nullcontext():
        try:
            code = conclude(
                overrides, config, cells, todo, phases, ctx, outcomes, stop, leases, console, distinct, then,
            )  # fmt: skip
        except OSError as exc:
            from store.fs import os_error_line

            console.print(f"[red]stopped[/]: the store failed after the run: {os_error_line(exc)}")
            code = 128 + stop.signum if stop.signum is not None else 1
        if todo and (stop.signum is not None or stop.head_lost or _RUNS_IN_PROGRESS == 1):
            leave_ray(stop, code)  # here, not later, so a signal meanwhile is handled as one
    return code


def in_store_words(cells: list[Cell], todo: list[Cell], ledger: Ledger) -> str:
    """The header's account of the cells the store holds: done (VALID), INVALID run again or kept."""
    chosen = {c.key for c in todo}
    done = sum(1 for c in cells if c.key not in chosen and ledger.status(c.key) == DONE)
    again = sum(1 for c in todo if ledger.status(c.key) == INVALID)
    kept = sum(1 for c in cells if c.key not in chosen and ledger.status(c.key) == INVALID)
    other = len(cells) - len(todo) - done - kept  # left out by run.mode=failed, say
    parts = [f"{done} done in the store"]
    parts += [f"{again} measured INVALID before, measured again"] if again else []
    parts += [f"{kept} INVALID kept"] if kept else []
    parts += [f"{other} left out by run.mode"] if other else []
    return ", ".join(parts)


def say_invalid_again(
    todo: list[Cell],
    ledger: Ledger,
    ctx: RunContext,
    config: Config,
    console: Console,
    distinct: dict[str, int],
) -> None:
    """Before any launch: each INVALID cell this run measures again, why it was INVALID, that its
    load is the same (a changed load is another cell), and the override that would fill its window."""
    again = [c for c in todo if ledger.status(c.key) == INVALID]
    if not again:
        return
    stored = latest_cells(ctx.store_root, checksums=False)
    for cell in again:
        rows = stored[stored["cell_key"] == cell.key] if "cell_key" in stored else stored.iloc[0:0]
        reasons = str(rows.iloc[-1].get("invalid_reasons")) if not rows.empty else "a validity gate failed"
        runs = ledger.invalid_runs(cell.key)
        console.print(
            f"[yellow]again[/] {cell.label}: INVALID in {runs} earlier run{'s' if runs != 1 else ''} "
            f"({reasons}); measured again with the same load (rerun {runs} of "
            f"run.invalid_reruns={config.run.invalid_reruns}), so likely INVALID again",
            soft_wrap=True,
        )
        if (fix := invalid_fix(cell, rows, config, distinct)) is not None:
            console.print(f"  {fix} (a new cell: its key holds the load)", soft_wrap=True)


def leave_ray(stop: Stop, code: int) -> None:
    """The stop path shuts Ray down: after a signal always (the local cluster's agents must not
    outlive the driver), else when this run started it; a cluster that no longer answers is left
    by exiting without Ray's atexit (which would wait a minute, then abort)."""
    from grid.orchestrate.schedule import disconnect, started_here

    if stop.signum is None and not started_here():
        return  # a caller's own Ray (a test, a notebook): theirs to end
    if stop.cluster_gone or not disconnect():
        if not stop.head_lost:  # else the closing 'stopped: ...' line, which says so, stays the last
            print("the local Ray cluster was stopped too; its engines end with it", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def conclude(
    overrides: list[str],
    config: Config,
    cells: list,
    todo: list,
    phases: list[list[EngineGroup]],
    ctx: RunContext,
    outcomes: list[CellOutcome],
    stop: Stop,
    leases: CellLeases,
    console: Console,
    distinct: dict[str, int] | None = None,
    then: Callable[[], int] | None = None,
) -> int:
    """After the launch: verdicts, the session's table, the counts and the exit code (and `then`,
    the held-out confirmation when asked for, after a clean run). Each INVALID cell is named with
    its reasons and, where a window gate failed, the override that would fill the window at its
    measured rate (`distinct`: each corpus's distinct prompts, which bound that advice)."""
    if todo and not stop:  # a stopped run does not judge half a session (nor write to a store that failed)
        verdicts = write_verdicts(ctx.store_root, ctx.session_id, config.gates.equivalence)
        report_verdicts(verdicts, console)
    # The last attempt of each cell decides; one refused for the store's sake never ran (pending).
    final = {o.cell_key: o for o in outcomes if not o.stops_run}
    session_cells = latest_cells(ctx.store_root, ctx.session_id)
    render(session_cells, console)
    if config.grid.repeats > 1 and not session_cells.empty:
        anchors = anchor_runs(connect(ctx.store_root), {ctx.session_id})
        render_repeats(session_cells, console, anchors)
    if not session_cells.empty and (share := share_line(session_cells)):
        console.print(share)
    # Cells another driver leased (or measured meanwhile): that driver's to measure, not pending here.
    elsewhere = {k: why for k, why in leases.skipped.items() if k not in final}
    cells_by_key = {c.key: c for groups in phases for g in groups for c in g.cells}
    # Cells and anchor runs counted apart, as status and the report count them (ledger.counts_words).
    anchor_keys = {key for key, cell in cells_by_key.items() if cell.anchor}
    grid_counts = cell_counts(
        {k: o for k, o in final.items() if k not in anchor_keys},
        len(cells_by_key) - len(anchor_keys) - len(elsewhere.keys() - anchor_keys),
    )
    anchor_counts = cell_counts(
        {k: o for k, o in final.items() if k in anchor_keys}, len(anchor_keys - elsewhere.keys())
    )
    counts = {name: n + anchor_counts[name] for name, n in grid_counts.items()}
    console.print(
        counts_words(grid_counts, anchor_counts)
        + f"; skipped {len(cells) - len(todo)} (in the store)"
        + (f", left to other drivers {len(elsewhere)}" if elsewhere else "")
        + f" (attempts {len(outcomes)})"
    )
    for key, why in elsewhere.items():
        named = cells_by_key[key].label if key in cells_by_key else key
        console.print(f"[yellow]left to another driver[/] {named}: {why}")
    for outcome in final.values():
        if outcome.status == "failed":
            console.print(f"[red]failed[/] {outcome.label}: {outcome.error}")
    invalid = [o for o in final.values() if attempt_state(o.status, o.valid) == INVALID]
    after = build_ledger(ctx.store_root, checksums=False) if invalid else None
    for outcome in invalid:
        runs = after.invalid_runs(outcome.cell_key) if after else 1
        fate = resume_fate(INVALID, runs, config.run.keep_invalid, config.run.invalid_reruns)
        console.print(f"[red]INVALID[/] {outcome.label}: {outcome.invalid_reasons} ({fate})")
        cell = cells_by_key.get(outcome.cell_key)
        if cell is not None and (fix := invalid_fix(cell, session_cells, config, distinct or {})):
            console.print(f"  {fix}", soft_wrap=True)
    if stop:
        console.print(f"[red]stopped[/]: {stop.reason}")
    code = exit_code(stop, counts, config.run.keep_invalid)
    if code == 1 and invalid and not stop and not config.run.keep_invalid:
        console.print(next_step_line(invalid, host_reruns(config)), soft_wrap=True)
    if code == 0 and not stop and then is not None:
        code = then()
    return code


def next_step_line(invalid: list[CellOutcome], host_reruns: int) -> str:
    """The run's last line when cells are left INVALID: why it exits 1 and what to do next."""
    cells = f"{len(invalid)} cell{'s' if len(invalid) != 1 else ''} left INVALID"
    if all(o.host_bound for o in invalid):
        again = f" (measured again {host_reruns} time{'s' if host_reruns != 1 else ''} in this run)"
        return (
            f"what now: {cells}, so the exit code is 1 (not done); the machine was busy while they were "
            f"measured{again if host_reruns else ''}: run the same command again when it is quiet (it "
            "measures only what is not done), give the engine cores of its own, or keep them as measured "
            "with run.keep_invalid=true (exit 0)"
        )
    return (
        f"what now: {cells}, so the exit code is 1 (not done): apply the fix each INVALID line names, then "
        "run the same command again (it measures only what is not done), or keep them as measured with "
        "run.keep_invalid=true (exit 0)"
    )


def distinct_prompts(found: Inspection) -> dict[str, int]:
    """Each corpus's distinct prompts, as the pre-launch audit counted them (one row per cell)."""
    return {row.corpus: row.distinct_available for row in found.audit}


def invalid_fix(
    cell: Cell, session_cells: pd.DataFrame, config: Config, distinct: dict[str, int]
) -> str | None:
    """grid/plan/window_fix.py's advice for an INVALID cell, from the row it stored this session."""
    from grid.plan.window_fix import Measured, fix_line

    if session_cells.empty or "cell_key" not in session_cells:
        return None
    rows = session_cells[session_cells["cell_key"] == cell.key]
    if rows.empty:
        return None
    row = rows.iloc[-1]

    def number(name: str) -> float | None:
        value = row.get(name)
        return None if value is None or pd.isna(value) else float(value)

    n_ok, tokens = number("n_ok"), number("output_tokens")
    measured = Measured(
        corpus=cell.corpus.name,
        reasons=str(row.get("invalid_reasons") or ""),
        window_s=number("window_s"),
        output_tok_per_s=number("output_tok_per_s") or number("bench_output_tok_per_s"),
        mean_output_tokens=tokens / n_ok if n_ok and tokens else None,
        num_prompts=cell.load.num_prompts,
        warmup_requests=cell.load.warmup_requests,
        concurrency=cell.load.concurrency,
        max_tokens=cell.load.max_tokens,
        distinct_prompts=distinct.get(cell.corpus.name),
    )
    return fix_line(measured, config.gates.min_window_s, config.gates.min_requests)


def anchor_count(phases: list[list[EngineGroup]]) -> int:
    """The drift anchor's runs among the phases' cells (0 or 2)."""
    return sum(1 for groups in phases for g in groups for c in g.cells if c.anchor)


def runs_words(cells: int, anchor_runs: int) -> str:
    """How run, its bar and its closing line count: every run of an engine's load, a cell or an anchor."""
    if not anchor_runs:
        return f"{cells} cell run{'s' if cells != 1 else ''}"
    return f"{cells + anchor_runs} runs: {cells} cell{'s' if cells != 1 else ''} + {anchor_runs} anchor runs"


def cell_counts(final: dict[str, CellOutcome], todo: int) -> dict[str, int]:
    """Cells (not attempts; `todo` counts the anchors too) by their last attempt, in the states of
    grid/orchestrate/ledger.py: done (VALID), invalid, failed, interrupted; pending = never reached."""
    states = [attempt_state(o.status, o.valid) for o in final.values()]
    counts = {name: states.count(name) for name in (DONE, INVALID, FAILED, INTERRUPTED)}
    return {**counts, "pending": todo - len(final)}


def outcome_words(outcome: CellOutcome) -> str:
    """'233.6 tok/s INVALID (window 2.1 s < 10 s)', '31.2 tok/s VALID', or the attempt's state."""
    if outcome.status != "ok":
        return outcome.status
    rate = f"{outcome.output_tok_per_s:,.1f} tok/s" if outcome.output_tok_per_s else "no tok/s"
    verdict = {True: "VALID", False: f"INVALID ({outcome.invalid_reasons})", None: ""}[outcome.valid]
    return f"{rate} {verdict}".rstrip()


def progress_line(counts: dict[str, int], latest: CellOutcome | None, now: list[dict], eta: str) -> str:
    """The live bar's text: cells by their latest attempt (a failed one may still be retried), what
    each running engine is doing, the cell just settled, and the ETA."""
    parts = [
        f"runs done {counts[DONE]} failed {counts[FAILED]} invalid {counts[INVALID]} "
        f"interrupted {counts[INTERRUPTED]} pending {counts['pending']}"
    ]
    parts += [f"now {n['label']}: {n['phase']} {time.time() - float(n['since_s']):.0f} s" for n in now]
    if latest is not None:
        parts.append(f"last {latest.label}: {outcome_words(latest)}")
    return " | ".join([*parts, eta])


class PhaseWatch:
    """The driver's side of store/phases.py: every PHASE_POLL_S it reads what each engine is doing,
    puts it in the bar and, where there is no live bar (a log), prints one line per new phase."""

    def __init__(
        self, ctx: RunContext, console: Console, shown: dict[str, object], redraw: Callable[[], None]
    ) -> None:
        self.ctx, self.console, self.shown, self.redraw = ctx, console, shown, redraw
        # An object store is read less often: each look is a LIST and a GET per engine.
        self.every_s = PHASE_POLL_S if isinstance(ctx.store_root, Path) else REMOTE_PHASE_POLL_S
        self.last_s = 0.0
        self.logged: set[tuple[str, str, float]] = set()

    def __call__(self) -> None:
        if time.monotonic() - self.last_s < self.every_s:
            return
        self.last_s = time.monotonic()
        phases = read_phases(self.ctx.store_root, self.ctx.session_id)
        self.shown["now"] = [asdict(p) for p in phases]
        for phase in phases:
            if (key := (phase.label, phase.phase, phase.since_s)) in self.logged:
                continue
            self.logged.add(key)
            if not self.console.is_terminal:
                self.console.print(phase_line(phase), soft_wrap=True)
        self.redraw()


def phase_line(phase: Phase) -> str:
    """'phase tiny/van/code_complete/r0: measured load (since 12:03:41)', for a log."""
    since = time.strftime("%H:%M:%S", time.localtime(phase.since_s))
    return f"phase {phase.label}: {phase.phase} (since {since})"


def eta_text(done: int, total: int, elapsed_s: float, planned_s: float) -> str:
    """'ETA 12 min': from the cells settled so far (elapsed per settled cell), before the first one
    from plan's cost model (grid/plan/cost.py, over the cluster's engine slots)."""
    if done >= total:
        return "ETA 0 min"
    if done:
        left_s, source = (total - done) * elapsed_s / done, ""
    else:
        left_s, source = max(planned_s - elapsed_s, 0.0), " (plan's cost model)"
    return f"ETA {left_s / 60:.0f} min{source}"


def planned_wall_s(phases: list[list[EngineGroup]], config: Config, slots: int) -> float:
    """plan's cost model: each phase's engine starts and measured tokens, spread over `slots`."""
    from grid.plan.cost import group_cost

    total = 0.0
    for groups in phases:
        costs = [group_cost(g, config.plan) for g in groups]
        total += sum(c.start_s + c.run_s for c in costs) / max(1, min(slots, len(costs)))
    return total


def cell_line(outcome: CellOutcome, counts: dict[str, int], total: int) -> str:
    """'run 3/6 tiny/suffix-k8/code_complete/r0: 31.2 tok/s VALID (engine ready in 27 s)'; the count
    is of the runs measured so far, VALID or not."""
    ready = f" (engine ready in {outcome.engine_ready_s:.0f} s)" if outcome.engine_ready_s else ""
    return f"run {counts[DONE] + counts[INVALID]}/{total} {outcome.label}: {outcome_words(outcome)}" + ready


def host_reruns(config: Config) -> int:
    """How often a cell INVALID for the host's sake is measured again in this run: none where
    run.keep_invalid keeps INVALID cells as measured."""
    return 0 if config.run.keep_invalid else config.run.host_invalid_reruns


def busy_again_line(outcome: CellOutcome, busy: dict[str, int], most: int) -> str | None:
    """The log's word that a cell INVALID only because the host was busy is measured again at once
    (grid/orchestrate/schedule.py host_again, by the same count); None for any other outcome."""
    if outcome.status != "ok" or outcome.valid is not False or not outcome.host_bound:
        return None
    busy[outcome.cell_key] = busy.get(outcome.cell_key, 0) + 1
    if busy[outcome.cell_key] > most:
        return None
    return (
        f"[yellow]measuring again[/] {outcome.label}: INVALID because the host was busy "
        f"({(outcome.invalid_reasons or 'a host gate').replace(': ' + BUSY_FIX, '')}); "
        f"measured again at once on a fresh engine (rerun {busy[outcome.cell_key]} of "
        f"run.host_invalid_reruns={most})"
    )


def exit_code(stop: Stop, counts: dict[str, int], keep_invalid: bool = False) -> int:
    """130 after Ctrl-C, 143 after SIGTERM (the shell's 128 + signal); 1 if cells are left undone:
    failed, interrupted, pending, or measured INVALID (not done: resume measures them again) unless
    run.keep_invalid keeps them."""
    if stop.signum is not None:
        return 128 + stop.signum
    undone = counts[FAILED] or counts[INTERRUPTED] or counts["pending"]
    return 1 if stop or undone or (counts[INVALID] and not keep_invalid) else 0


def report_verdicts(frame: pd.DataFrame, console: Console) -> None:
    """One line per lever cell: does it say what van says?"""
    for row in frame.itertuples():
        colour = {"pass": "green", "fail": "red"}.get(row.verdict, "yellow")
        console.print(
            f"equivalence [{colour}]{row.verdict}[/] {row.model}/{row.lever}"
            f"{f'-k{row.k}' if row.k else ''}/{row.corpus}: {row.reason}"
        )


def launch(
    phases: list[list[EngineGroup]],
    ctx: RunContext,
    config: Config,
    console: Console,
    stop: Stop,
    leases: CellLeases | None = None,
) -> list[CellOutcome]:
    """Write the session record, run the phases' groups on Ray with a live progress bar.

    Ctrl-C or SIGTERM sets `stop`: in-flight actors are killed (their engines
    follow), their unfinished cells recorded as interrupted, the session's end
    written; a second signal exits at once. With `leases`, each group runs only
    the cells no other driver is measuring (grid/orchestrate/lease.py).
    """
    layout = StoreLayout(ctx.store_root)
    session = fingerprint(ctx.session_id, stable_hash(asdict(config)), ctx.corpus_sha256)
    try:
        write_json(layout.session_file(ctx.session_id), session)
    except OSError as exc:  # e.g. a disk that filled since the probe: nothing launched yet (exit 2)
        raise StoreError(session_write_problem(ctx.store_root, exc)) from exc
    total = sum(len(g.cells) for groups in phases for g in groups)
    last: dict[str, CellOutcome] = {}  # cell key -> its latest attempt
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    outcomes: list[CellOutcome] = []
    started_s = time.monotonic()
    shown: dict[str, object] = {"latest": None, "now": [], "planned_s": 0.0}
    busy: dict[str, int] = {}  # cell key -> times measured INVALID for the host's sake (busy_again_line)
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("runs", total=total)

        def redraw() -> None:
            counts = cell_counts(last, total)
            settled = counts[DONE] + counts[INVALID] + counts[FAILED]
            eta = eta_text(settled, total, time.monotonic() - started_s,
                           float(shown["planned_s"]))  # type: ignore[arg-type]  # fmt: skip
            line = progress_line(counts, shown["latest"], shown["now"], eta)  # type: ignore[arg-type]
            progress.update(task, completed=counts[DONE] + counts[INVALID], description=line)

        def report(outcome: CellOutcome) -> None:
            if outcome.stops_run:  # refused for the store's sake: pending, as the closing line counts it
                return  # (conclude); its reason comes once, at the end
            last[outcome.cell_key] = outcome
            if (again := busy_again_line(outcome, busy, host_reruns(config))) is not None:
                progress.console.print(again, soft_wrap=True)
            counts = cell_counts(last, total)
            shown["latest"] = outcome
            redraw()
            if outcome.status == "failed":
                final = "" if outcome.retryable else " (not retried: a retry cannot fix it)"
                progress.console.print(f"[red]attempt failed[/] {outcome.label}: {outcome.error}{final}")
            elif outcome.status == "ok" and not progress.console.is_terminal:
                # A log has no live bar: one line per settled cell, so it shows the run moving.
                progress.console.print(cell_line(outcome, counts, total), soft_wrap=True)

        from grid.orchestrate.schedule import (  # Ray once all else checked out
            in_flight_limit,
            init_ray,
            run_phases,
            watching_head,
        )

        # First: Ray's driver installs a SIGTERM handler of its own. A killed driver's agents go first.
        try:
            swept = init_ray(config.ray)
        except Exception:
            # Nothing was launched: the session's record goes too, so the store holds no session that
            # never ran (no cells, no end) for drift and `grid sessions` to count.
            layout.session_file(ctx.session_id).unlink(missing_ok=True)
            raise
        if swept:
            progress.console.print(f"ray: ended {len(swept)} agents a killed driver left (pids {swept})")
        from grid.plan.store_costs import with_store_costs

        planned = with_store_costs(config)  # this store's measured starts and rates, where it has them
        shown["planned_s"] = planned_wall_s(phases, planned, in_flight_limit(config.ray))
        redraw()
        if leases is not None:
            leases.say = progress.console.print
        tick = PhaseWatch(ctx, progress.console, shown, redraw)
        settled = threading.Event()  # run_phases has returned: the run ends itself (on_head_lost)
        lost = on_head_lost(stop, progress.console, settled, lambda: end_session(layout, session, ctx),
                            ray_is_local(config))  # fmt: skip
        with (
            stop_on_signals(stop, progress.console),
            leases.renewing() if leases else nullcontext(),
            watching_head(lost),
        ):
            try:
                outcomes = run_phases(
                    phases, ctx, config.ray, config.run.max_attempts, report, stop, leases, on_tick=tick,
                    host_reruns=host_reruns(config),
                )  # fmt: skip
            except Stopped as exc:
                outcomes = exc.outcomes
            finally:
                clear_phases(ctx.store_root, ctx.session_id)  # a killed worker's file, if any
                settled.set()
    # The engines have ended: a signal now exits at once, saying so (a second one: "again").
    with stop_on_signals(stop, console, measuring=False):
        try:
            write_json(layout.session_file(ctx.session_id), end_fingerprint(session, ctx.store_root))
        except OSError as exc:
            console.print(f"[yellow]store:[/] the session's end could not be written ({exc})")
    return outcomes


def ray_is_local(config: Config) -> bool:
    """Whether the run starts its own local Ray cluster (no ray.address, no $RAY_ADDRESS: init_ray)."""
    return (config.ray.address or os.environ.get("RAY_ADDRESS") or "local") == "local"


def head_lost_line(address: str, since_s: float, local: bool) -> str:
    """The run's own last line when the Ray head is lost: what happened and how to resume."""
    resume = (
        "run the same command again to resume (it starts a new local cluster and measures only "
        "what is not done)"
        if local
        else "once the cluster's head is back (or ray.address names a live one), run the same command "
        "again to resume (it measures only what is not done)"
    )
    return (
        f"the Ray head was lost (its GCS at {address} has not answered for {time.time() - since_s:.0f} s), "
        f"so the run cannot go on; {resume}"
    )


def on_head_lost(
    stop: Stop, console: Console, settled: threading.Event, end: Callable[[], None], local: bool
) -> Callable[[str, float], None]:
    """What the head's watch (schedule.watching_head) calls, from its thread, when the Ray head is lost.

    It stops the run (stop.head_lost: nothing more is asked of the cluster) and gives the main thread
    HEAD_GRACE_S to end it as any stop ends: interrupted cells, the session's end, the closing line,
    exit 1. A main thread held in a call into Ray (placing a group, say) never comes back before Ray
    ends the process: then this thread ends the session (`end`: its end written, its phases folder
    removed) and exits with the same line, last, on stderr.
    """

    def lost(address: str, since_s: float) -> None:
        line = head_lost_line(address, since_s, local)
        stop.head_lost = stop.cluster_gone = True
        if not stop:  # a stop already under way (a signal) keeps its reason and its exit code
            stop.at_s, stop.reason = since_s, line
        console.print(f"stopping: the Ray head at {address} stopped answering")
        if settled.wait(HEAD_GRACE_S):
            return
        with contextlib.suppress(Exception):
            end()
        exit_now(f"stopped: {stop.reason}", 128 + stop.signum if stop.signum is not None else 1)

    return lost


def end_session(layout: StoreLayout, session: dict, ctx: RunContext) -> None:
    """The session's end when its run cannot end itself (on_head_lost): its phases folder removed and
    `ended_at` written (with the hosts its stored cells ran on where the store says, else the start's)."""
    clear_phases(ctx.store_root, ctx.session_id)
    try:
        ended = end_fingerprint(session, ctx.store_root)
    except Exception:  # the store's tables unreadable now: the end time matters most
        from grid.orchestrate.session import utc_now

        ended = {**session, "ended_at": utc_now()}
    write_json(layout.session_file(ctx.session_id), ended)


def session_write_problem(root: object, exc: OSError) -> str:
    """The session record could not be written: the store's own line (unreachable), or why (full,
    read-only, denied) with the fix that fits; nothing was launched."""
    from store.fs import StoreUnreachable
    from store.space import STORE_UNUSABLE, write_failure

    why = str(exc) if isinstance(exc, StoreUnreachable) else write_failure(root, exc)
    return f"{STORE_UNUSABLE}: {why}; the session record could not be written, so nothing was launched"


def exit_now(line: str, code: int) -> None:
    """Say `line` on stderr, unbuffered, and exit with `code` at once (no cleanup, no atexit).

    Written to file descriptor 2 directly: a console's buffered line (a pipe, a log) would be lost
    with os._exit, and a user who pressed Ctrl-C twice must see what it did.
    """
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"\n{line}\n".encode())
    os._exit(code)


@contextmanager
def stop_on_signals(stop: Stop, console: Console, measuring: bool = True) -> Iterator[None]:
    """SIGINT / SIGTERM: first one stops the run cleanly, a second one exits at once.

    Installed after Ray started: Ray's driver installs a SIGTERM handler of its own
    that dumps a stack and, on the H200 run of 2026-12-01, left the driver hanging
    past its timeout. The old handlers come back after. `measuring=False` (the run's
    end: results written, summary, Ray's shutdown): every signal exits at once,
    saying so, with 128 + the signal; once a stop was asked for, it is the second one.
    """

    def handler(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if stop.signum is not None:
            exit_now(f"{name} again: exiting now (the engines in flight end with their actors)", 128 + signum)
        if not measuring:
            exit_now(f"{name}: exiting now (the measurements are stored; the run had ended)", 128 + signum)
        stop.signum = signum
        stop.at_s = time.time()
        stop.reason = f"{signal.Signals(signum).name} received"
        console.print(
            f"stopping: {stop.engines} engines (their cells are recorded as interrupted); "
            "press Ctrl-C again to exit at once"
        )

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals (a run inside a thread: tests, notebooks)
        return
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
