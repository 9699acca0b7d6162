"""Attempts that did not finish: failed, lost or interrupted, each recorded as a manifest with its
reason, so one failure never loses the others' results and a full store never kills a worker."""

from __future__ import annotations

import errno
import json
import re
import time
import traceback
from pathlib import Path
from typing import Any

from store.fs import StoreRoot
from store.layout import MANIFEST, StoreLayout
from store.space import FULL, STORE_UNUSABLE, store_problem, write_failure
from store.writer import utc_now, write_failed_attempt
from vocab.cells import Cell
from vocab.errors import ConfigError
from vocab.groups import EngineGroup
from workers.cell import ENGINE_EXIT_GRACE_S, EngineDied, RequestsRejected, ServerFailed
from workers.context import CellOutcome, RunContext
from workers.engine.process import Engine, exit_description, log_tail
from workers.engine.refusal import read_refusal
from workers.engine.tree import API_SERVER, EngineProcess, death_line, names
from workers.launch import stored_log_tail

# Lines of the engine's log quoted in the error of a cell whose engine died.
DEATH_LOG_LINES = 5
# Failures another attempt meets again: a config, name or corpus that is wrong (ConfigError, and
# CorpusChanged among them: a retry reads the same bytes), requests the server refuses (HTTP 4xx,
# the cell's own configuration). All else may pass on another engine: one that died, a network
# error, a timeout, a lost worker.
NOT_RETRYABLE = (ConfigError, RequestsRejected)


def retryable(exc: BaseException) -> bool:
    """Whether another attempt could get past `exc` (see NOT_RETRYABLE)."""
    return not isinstance(exc, NOT_RETRYABLE)


def failed_cell(
    exc: Exception,
    engine: Engine,
    stage: str,
    layout: StoreLayout,
    ctx: RunContext,
    cell: Cell,
    attempt_id: str,
) -> CellOutcome:
    """Record a cell whose measurement or storing raised `exc` during `stage` (call it from the
    `except` block: the traceback goes into the manifest). An engine that died is named as the
    cause; a store that cannot take results stops the run."""
    symptom = f"{type(exc).__name__}: {exc}"
    # An engine that died is the cause; what failed next (a refused connection) only its symptom.
    if isinstance(exc, EngineDied):
        lost, seen = exc.lost, exc.seen
    elif isinstance(exc, ServerFailed | RequestsRejected):
        lost, seen = [], ""  # the engine was found whole just before (check_answers)
    else:
        lost, seen = engine.wait_lost(ENGINE_EXIT_GRACE_S), ""
    error = engine_death(engine, lost, stage, seen) if lost else cell_error(exc, symptom)
    followed = bool(lost) and not isinstance(exc, EngineDied)
    detail = error + (f"\nwhat failed next: {symptom}" if followed else "")
    detail += "\n" + traceback.format_exc(limit=3)
    tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
    again = bool(lost) or retryable(exc)  # an engine that died is the cause, whatever followed
    note = record_failure(layout, tags, detail, log_tail(engine.log_path), label=cell.label, retryable=again)
    # A disk that filled while the results were written stops the run even when the probe's few
    # bytes still fit (run.min_store_free_mb=0): another engine start would fill it again.
    full = store_full(ctx.store_root, exc)
    if full or ((isinstance(exc, OSError) or note) and (full := store_problem(ctx.store_root, 0))):
        return CellOutcome(cell.key, cell.label, attempt_id, "failed", full, stops_run=True)
    return CellOutcome(cell.key, cell.label, attempt_id, "failed", error + note, retryable=again)


def log_lines_before_death(path: Path, lines: int = DEATH_LOG_LINES) -> str:
    """The last lines of an engine log that say something.

    Left out: blanks, HTTP access lines and the command line the log opens with (it holds the API key).
    """
    kept = [
        line.strip()[:300]
        for line in log_tail(path, 400).splitlines()
        if line.strip()
        and not line.startswith("$ ")
        and not (line.startswith("INFO:") and '" ' in line and "HTTP/1.1" in line)
    ]
    return " | ".join(kept[-lines:]) or "(empty)"


def engine_death(engine: Engine, lost: list[EngineProcess], stage: str, seen: str = "") -> str:
    """`engine died during the measured load: EngineCore (pid 12) gone, API server (pid 10) still up;
    last lines of its log: ...` (`engine exited (signal 9) during ...` when the API server went)."""
    code = engine.exit_code()
    root = engine.root() or EngineProcess(API_SERVER, 0, 0)
    line = death_line(lost, root, stage, None if code is None else exit_description(code))
    return (
        line
        + (f" ({seen})" if seen else "")
        + f"; last lines of its log: {log_lines_before_death(engine.log_path)}"
    )


def died_earlier(engine: Engine, lost: list[EngineProcess]) -> str:
    """The error of a cell whose engine died before it began (under an earlier cell of the launch)."""
    code = engine.exit_code()
    how = "" if code is None else f", the API server {exit_description(code)}"
    return f"engine died earlier in this launch ({names(lost)} gone{how})"


def store_full(root: StoreRoot, exc: BaseException) -> str | None:
    """'store cannot take results: <root> is full (...)' when `exc` (or what caused it) is a full
    disk or a quota reached, else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in FULL:
            return f"{STORE_UNUSABLE}: {write_failure(root, seen)}"
        if isinstance(seen, OSError) and "No space left on device" in str(seen):  # pyarrow: no errno
            full = OSError(errno.ENOSPC, "No space left on device")
            return f"{STORE_UNUSABLE}: {write_failure(root, full)}"
        seen = seen.__cause__ or seen.__context__
    return None


def cell_error(exc: Exception, symptom: str) -> str:
    """The error of a cell whose engine is whole: the server's own line, else the exception's."""
    return str(exc) if isinstance(exc, ServerFailed | RequestsRejected) else symptom


def record_lost(group: EngineGroup, ctx: RunContext, error: str, retryable: bool = True) -> list[CellOutcome]:
    """Failed attempts for cells whose worker never reported (actor or node lost), or that no node
    can ever hold (`retryable` False)."""
    layout = StoreLayout(ctx.store_root)
    logs = sorted(
        layout.logs_dir(ctx.session_id).glob(f"{group.spec.key}-*.log"),
        key=lambda p: p.stat().st_mtime,
    )
    tail = stored_log_tail(logs[-1]) if logs else ""
    return [fail_cell(layout, ctx, cell, error, tail, retryable) for cell in group.cells]


def record_interrupted(
    group: EngineGroup, ctx: RunContext, since_s: float, reason: str, stop_s: float | None = None
) -> list[CellOutcome]:
    """Interrupted attempts for the group's cells that wrote nothing since `since_s` (epoch s).

    The driver stopped (Ctrl-C, SIGTERM) while this launch ran: its finished
    cells have their own manifests; the others are recorded as interrupted,
    neither failed nor done, and run again on resume. A cell that failed after
    the stop began (`stop_s`, less a second for coarse store clocks) failed
    because of it: its engine was ended under it ("engine exited (signal 9)
    during the warm-up", seen in CI), so it is recorded as interrupted too,
    after the failure, whose attempt the ledger then reads as superseded.
    """
    layout = StoreLayout(ctx.store_root)
    outcomes = []
    for cell in group.cells:
        recent = [m for m in layout.cell_dir(cell.key).glob(f"*/{MANIFEST}") if m.stat().st_mtime >= since_s]
        casualties = [c for c in (stop_casualty(m, stop_s) for m in recent) if c is not None]
        if len(casualties) < len(recent):
            continue
        if casualties:
            after_written_at(max(c.get("written_at", "") for c in casualties))
        attempt_id = ctx.new_attempt_id()
        tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
        note = record_failure(layout, tags, reason, "", status="interrupted", label=cell.label)
        outcomes.append(CellOutcome(cell.key, cell.label, attempt_id, "interrupted", reason + note))
    return outcomes


def stop_casualty(manifest: Any, stop_s: float | None) -> dict[str, Any] | None:
    """The manifest, if it is a failure written after the stop began (see record_interrupted)."""
    if stop_s is None or manifest.stat().st_mtime < stop_s - 1.0:
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("status") == "failed" else None


def after_written_at(written_at: str) -> None:
    """Wait until the store's clock has passed `written_at`, so the attempt written next sorts after
    it in the ledger (written_at, then the random attempt id): a stamp of a store written before
    written_at had microseconds (store/writer.utc_now) is in whole seconds."""
    deadline = time.monotonic() + 2.0
    while utc_now() <= written_at and time.monotonic() < deadline:
        time.sleep(0.05)


def record_failure(
    layout: StoreLayout,
    tags: dict[str, Any],
    error: str,
    tail: str,
    status: str = "failed",
    label: str | None = None,
    retryable: bool | None = None,
) -> str:
    """Write a failed manifest; '' on success, else a note that it could not be written.

    A store that is full or unwritable must not turn one failed cell into a dead worker.
    """
    try:
        write_failed_attempt(layout, tags, error, tail, status, label, retryable)
    except OSError as exc:
        return f" (and the failure could not be recorded in the store: {type(exc).__name__}: {exc})"
    return ""


def start_failed(
    layout: StoreLayout, ctx: RunContext, cells: tuple[Cell, ...], exc: Exception, log_path: Path
) -> list[CellOutcome]:
    """The launch's cells when its engine did not start: retryable (it may have died, or hung), unless
    its log says vLLM refused what it was given (workers/engine/refusal.py: the model missing or
    incomplete, an unknown argument, a configuration it rejects), which another start meets again."""
    tail = log_tail(log_path)
    if (why := read_refusal(log_path)) is None:
        return [fail_cell(layout, ctx, cell, str(exc), tail) for cell in cells]
    # 'engine exited with code 1 before it was ready: <why>; see <log>' (its hint to wait longer dropped)
    said = re.split(r"; | \(", str(exc).split("\n", 1)[0], maxsplit=1)[0]
    error = f"{said}: {why}; see {log_path}\n{exc}"
    return [fail_cell(layout, ctx, cell, error, tail, retryable=False) for cell in cells]


def fail_cell(
    layout: StoreLayout, ctx: RunContext, cell: Cell, error: str, tail: str, retryable: bool = True
) -> CellOutcome:
    """Record a failed attempt of `cell` with `error` (its first line in the outcome) and a log tail."""
    attempt_id = ctx.new_attempt_id()
    tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
    note = record_failure(layout, tags, error, tail, label=cell.label, retryable=retryable)
    first = error.splitlines()[0]
    return CellOutcome(cell.key, cell.label, attempt_id, "failed", first + note, retryable=retryable)
