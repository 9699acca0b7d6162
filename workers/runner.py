"""Run one engine group: start the engine, drive each cell's load, store the results.

Runs inside a Ray actor (grid/orchestrate/schedule.py) but imports no Ray itself, so it can
be tested and debugged as a plain function. Failures come back as outcomes.

The parts: workers/launch.py starts the engine and brings it to each cell's fresh
state; workers/cell.py measures a cell; workers/summary.py puts its row together;
workers/attempts.py records what did not finish.
"""

from __future__ import annotations

import dataclasses

from store.layout import StoreLayout
from store.phases import PhaseBoard
from store.space import store_problem
from store.writer import write_ok_attempt
from vocab.cells import Cell
from vocab.errors import ConfigError, EngineError
from vocab.groups import EngineGroup
from workers.attempts import (
    died_earlier,
    fail_cell,
    failed_cell,
    record_interrupted,
    record_lost,
    start_failed,
    store_full,
)
from workers.cell import CellStage, engine_processes, ensure_alive, run_cell
from workers.context import CellOutcome, RunContext
from workers.engine.process import Engine, log_tail
from workers.launch import (
    LaunchLog,
    LaunchState,
    build_engine,
    engine_base_env,
    engine_version,
    missing_plugin,
    ready_for_cell,
)
from workers.load.prompts import CorpusChanged, check_planned_file, corpus_file
from workers.signals.gates import host_bound
from workers.summary import summary_row

# What the driver, the tests and the benchmarks take from here; each lives in one of the parts.
__all__ = [
    "CellOutcome",
    "CellStage",
    "RunContext",
    "engine_base_env",
    "engine_processes",
    "record_interrupted",
    "record_lost",
    "run_cell",
    "run_group",
    "store_full",
]


def run_group(group: EngineGroup, ctx: RunContext) -> list[CellOutcome]:
    """Run every cell of one engine launch; return one outcome per cell, ok or failed.

    Start the engine (or fail every cell with its reason), then per cell: stop at a dead
    engine, bring it to the cell's fresh state (ready_for_cell: reset, hook, relaunch),
    measure and store the cell (run_and_store); the engine stops whatever happens.
    """
    log = LaunchLog.for_group(group, ctx)
    engine = build_engine(group, ctx, log.path, log.remote)
    # Never spend an engine start on a store that cannot take the results.
    if (problem := store_problem(ctx.store_root, ctx.min_store_free_bytes)) is not None:
        return [CellOutcome(c.key, c.label, "", "failed", problem, stops_run=True) for c in group.cells]
    # Nor on cells whose corpus this node reads as other bytes than the driver planned.
    unplanned = [fail_cell(StoreLayout(ctx.store_root), ctx, c, line, "", retryable=False)
                 for c in group.cells if (line := corpus_changed(c, ctx)) is not None]  # fmt: skip
    failed = {o.cell_key for o in unplanned}
    group = dataclasses.replace(group, cells=tuple(c for c in group.cells if c.key not in failed))
    if not group.cells:
        return unplanned
    board = PhaseBoard(ctx.store_root, ctx.session_id, log.stored.stem)
    try:
        return unplanned + run_launch(group, engine, ctx, log, board)
    finally:
        board.clear()
        engine.stop()
        log.upload()


def corpus_changed(cell: Cell, ctx: RunContext) -> str | None:
    """`CorpusChanged: node ...` when this node's copy of the cell's corpus is not the planned bytes.

    A corpus that cannot be found or read here is left to the cell (run_cell), which says so.
    """
    planned = ctx.corpus_sha256.get(cell.corpus.name)
    try:
        check_planned_file(
            corpus_file(ctx.data_dir, cell.corpus.path, ctx.cache_dir, planned), cell.corpus.name, planned
        )
    except CorpusChanged as exc:
        return f"{type(exc).__name__}: {exc}"
    except (ConfigError, OSError):
        return None
    return None


def run_launch(
    group: EngineGroup, engine: Engine, ctx: RunContext, log: LaunchLog, board: PhaseBoard
) -> list[CellOutcome]:
    """The launch loop: start the engine, then run the group's cells on it one after another."""
    layout = StoreLayout(ctx.store_root)
    board.say(group.cells[0].label if group.cells else group.spec.key, "engine start")
    try:
        ready_s = engine.start()
    except EngineError as exc:  # retried, unless vLLM refused what it was given (start_failed)
        return start_failed(layout, ctx, group.cells, exc, log.path)
    if (missing := missing_plugin(group, log.path)) is not None:  # an install's fault: not retried
        return [fail_cell(layout, ctx, cell, missing, log_tail(log.path), False) for cell in group.cells]
    version = engine_version(engine.endpoint.base_url, engine.endpoint.api_key)
    launch = LaunchState(ready_s)
    outcomes: list[CellOutcome] = []
    for index, cell in enumerate(group.cells):
        if lost := engine.lost():
            outcomes.append(fail_cell(layout, ctx, cell, died_earlier(engine, lost), log_tail(log.path)))
            continue
        try:
            history = ready_for_cell(group, index, engine, launch, board)
        except EngineError as exc:
            tail = log_tail(log.path)
            return outcomes + [fail_cell(layout, ctx, c, str(exc), tail) for c in group.cells[index:]]
        outcomes.append(run_and_store(cell, engine, ctx, launch, version, history, board))
        launch.earlier.append(cell.corpus.name)
        log.upload()  # the log so far, so a teammate can read it while the group runs
    return outcomes


def run_and_store(
    cell: Cell,
    engine: Engine,
    ctx: RunContext,
    launch: LaunchState,
    version: str | None,
    history: dict,
    board: PhaseBoard | None = None,
) -> CellOutcome:
    """Measure `cell` and store its attempt: its requests, its row and its probe; or its failure."""
    layout = StoreLayout(ctx.store_root)
    attempt_id = ctx.new_attempt_id()
    tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
    stage = CellStage(on_change=None if board is None else lambda name: board.say(cell.label, name))
    try:
        records, measured, probe = run_cell(cell, engine, ctx, launch.served, stage)
        stage.name = "storing of the cell"
        ensure_alive(engine)
        row = summary_row(measured, cell, ctx, launch.ready_s, version, history, engine.log_path)
        write_ok_attempt(layout, tags, records, row.columns(), probe, label=cell.label)
    except Exception as exc:
        return failed_cell(exc, engine, stage.name, layout, ctx, cell, attempt_id)
    return CellOutcome(cell.key, cell.label, attempt_id, "ok", None, row.output_tok_per_s, launch.ready_s,
                       valid=row.valid, invalid_reasons=row.invalid_reasons,
                       host_bound=host_bound(row.columns()))  # fmt: skip
