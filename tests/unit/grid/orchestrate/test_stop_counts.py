"""The run's closing line counts cells, not attempts; the exit code says how it ended."""

import signal
import time

from ray.exceptions import RayTaskError

from grid.orchestrate.run import cell_counts, eta_text, exit_code, progress_line
from grid.orchestrate.schedule import task_error
from grid.orchestrate.stop import Stop
from workers.runner import CellOutcome


def outcome(key: str, status: str) -> CellOutcome:
    return CellOutcome(key, key, f"{key}-a", status)


def test_counts_are_cells_by_their_last_attempt():
    # The last attempt of each cell decides: a cell that failed once then passed is done.
    final = {o.cell_key: o for o in [outcome("a", "failed"), outcome("a", "ok"), outcome("b", "interrupted")]}
    assert cell_counts(final, todo=4) == {
        "done": 1,
        "failed": 0,
        "invalid": 0,
        "interrupted": 1,
        "pending": 2,
    }


def test_the_progress_bar_counts_cells_done_failed_interrupted_and_pending():
    # It said "cells done N not ok N": failed and interrupted cells alike, pending ones nowhere.
    latest = {
        o.cell_key: o for o in [outcome("a", "ok"), outcome("b", "failed"), outcome("c", "interrupted")]
    }
    line = progress_line(cell_counts(latest, todo=5), latest["c"], [], "ETA 3 min")
    assert line == "runs done 1 failed 1 invalid 0 interrupted 1 pending 2 | last c: interrupted | ETA 3 min"
    rated = CellOutcome("a", "tiny/van/chat_bench/r0", "a-1", "ok", None, 61.25)
    assert progress_line(cell_counts({"a": rated}, todo=1), rated, [], "ETA 0 min").endswith(
        "| last tiny/van/chat_bench/r0: 61.2 tok/s | ETA 0 min"
    )


def test_the_bar_says_what_each_running_engine_does_and_how_long_is_left():
    """Issue 31: a phase per running engine, and an ETA: from plan's cost model before any cell
    settles, then from the time per settled cell."""
    now = [{"label": "tiny/suffix-k8/mix/r0", "phase": "measured load", "since_s": time.time() - 12}]
    counts = {"done": 0, "failed": 0, "invalid": 0, "interrupted": 0, "pending": 4}
    line = progress_line(counts, None, now, "ETA 9 min")
    running = "now tiny/suffix-k8/mix/r0: measured load 12 s"
    assert line == f"runs done 0 failed 0 invalid 0 interrupted 0 pending 4 | {running} | ETA 9 min"
    assert eta_text(0, 4, 60.0, 600.0) == "ETA 9 min (plan's cost model)"
    assert eta_text(1, 4, 120.0, 600.0) == "ETA 6 min"  # 3 cells left at 2 min each
    assert eta_text(4, 4, 480.0, 600.0) == "ETA 0 min"


def test_exit_codes_follow_the_shell_for_signals_and_fail_on_undone_cells():
    done = {"done": 2, "failed": 0, "invalid": 0, "interrupted": 0, "pending": 0}
    assert exit_code(Stop(), done) == 0
    assert exit_code(Stop(signal.SIGINT, "SIGINT received"), done) == 130
    assert exit_code(Stop(signal.SIGTERM, "SIGTERM received"), done) == 143
    assert exit_code(Stop(None, "store cannot take results: ..."), done) == 1
    assert exit_code(Stop(), {**done, "interrupted": 1}) == 1


def test_a_ray_task_error_shows_the_workers_exception_without_colour_codes():
    # What a user saw: `worker lost (RayTaskError(OSError)): [36mray::EngineWorker.run()...`
    exc = RayTaskError(
        "EngineWorker.run",
        "Traceback (most recent call last):\n  ...\nOSError: [Errno 28] No space left on device",
        OSError(28, "No space left on device"),
        proctitle="\x1b[36mray::EngineWorker.run()\x1b[39m",
    )
    line = task_error(exc)
    assert "\x1b" not in line
    assert "No space left on device" in line and line.startswith("worker lost (RayTaskError")
