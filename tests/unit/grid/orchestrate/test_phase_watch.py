"""The driver's log shows what each engine is doing (grid/orchestrate/run.py PhaseWatch over
store/phases.py)."""

from __future__ import annotations

import io

from rich.console import Console

from grid.orchestrate.run import PhaseWatch, progress_line
from store.phases import PhaseBoard
from workers.runner import CellStage, RunContext


def watch(tmp_path, terminal: bool) -> tuple[PhaseWatch, io.StringIO, dict, list]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120)
    ctx = RunContext("s1", tmp_path, tmp_path / "cache", tmp_path / "models", tmp_path / "data")
    shown: dict = {"now": []}
    redraws: list = []
    return PhaseWatch(ctx, console, shown, lambda: redraws.append(1)), out, shown, redraws


def test_a_log_gets_one_line_per_new_phase(tmp_path):
    tick, out, shown, redraws = watch(tmp_path, terminal=False)
    board = PhaseBoard(tmp_path, "s1", "eng-a")
    stage = CellStage(on_change=lambda name: board.say("tiny/van/code_complete/r0", name))
    board.say("tiny/van/code_complete/r0", "engine start")
    tick()
    tick.last_s = 0.0  # as if PHASE_POLL_S had passed
    tick()  # nothing new: no second line
    stage.name = "warm-up"
    tick.last_s = 0.0
    tick()
    lines = out.getvalue().splitlines()
    assert [line.split(" (since")[0] for line in lines] == [
        "phase tiny/van/code_complete/r0: engine start",
        "phase tiny/van/code_complete/r0: warm-up",
    ]
    assert [n["phase"] for n in shown["now"]] == ["warm-up"]
    assert "now tiny/van/code_complete/r0: warm-up" in progress_line(
        {"done": 0, "failed": 0, "invalid": 0, "interrupted": 0, "pending": 1},
        None,
        shown["now"],
        "ETA 1 min",
    )
    assert len(redraws) == 3


def test_reads_wait_for_the_poll_interval(tmp_path):
    tick, out, _, redraws = watch(tmp_path, terminal=False)
    PhaseBoard(tmp_path, "s1", "eng-a").say("a", "engine start")
    tick()
    PhaseBoard(tmp_path, "s1", "eng-a").say("a", "warm-up")
    tick()  # within PHASE_POLL_S of the last read
    assert len(out.getvalue().splitlines()) == 1 and len(redraws) == 1


def test_a_terminal_shows_phases_in_the_bar_only(tmp_path):
    tick, out, shown, _ = watch(tmp_path, terminal=True)
    PhaseBoard(tmp_path, "s1", "eng-a").say("a", "measured load")
    tick()
    assert out.getvalue() == ""
    assert [n["label"] for n in shown["now"]] == ["a"]
