"""Issue 38 item 1: one definition of a cell's state (grid/orchestrate/ledger.py attempt_state) for
the run's bar, its closing line, its exit code and status; an INVALID cell is not done."""

import io
import types

import pandas as pd
from rich.console import Console

from grid.orchestrate.ledger import DONE, FAILED, INTERRUPTED, INVALID, attempt_state, resume_fate
from grid.orchestrate.run import cell_counts, cell_line, conclude, exit_code, invalid_fix, progress_line
from grid.orchestrate.stop import Stop
from workers.runner import CellOutcome, RunContext


def test_an_ok_attempt_measured_invalid_is_invalid_not_done():
    assert attempt_state("ok", True) == DONE
    assert attempt_state("ok", None) == DONE  # no verdict recorded (older stores): measured
    assert attempt_state("ok", False) == INVALID
    assert attempt_state("failed", None) == FAILED
    assert attempt_state("interrupted", None) == INTERRUPTED


def invalid(key: str) -> CellOutcome:
    return CellOutcome(key, f"mine/van/{key}/r0", "a", "ok", None, 233.6, 20.0, valid=False,
                       invalid_reasons="window 2.1 s < 10 s")  # fmt: skip


def test_a_run_whose_cells_are_invalid_counts_them_apart_and_exits_1():
    """What a user saw: both cells INVALID, `done 2, failed 0`, exit 0."""
    final = {k: invalid(k) for k in ("a", "b")}
    counts = cell_counts(final, todo=2)
    assert counts == {DONE: 0, FAILED: 0, INVALID: 2, INTERRUPTED: 0, "pending": 0}
    assert exit_code(Stop(), counts) == 1
    assert exit_code(Stop(), counts, keep_invalid=True) == 0  # the user keeps INVALID cells
    one_valid = {**final, "c": CellOutcome("c", "c", "a", "ok", None, 30.0, valid=True)}
    assert exit_code(Stop(), cell_counts(one_valid, todo=3)) == 1  # an INVALID cell is not done


def test_the_bar_and_the_log_line_carry_the_verdict():
    final = {"a": invalid("a")}
    line = progress_line(cell_counts(final, todo=2), final["a"], [], "ETA 1 min")
    assert line == (
        "runs done 0 failed 0 invalid 1 interrupted 0 pending 1 | "
        "last mine/van/a/r0: 233.6 tok/s INVALID (window 2.1 s < 10 s) | ETA 1 min"
    )
    assert cell_line(final["a"], cell_counts(final, todo=2), 2).startswith(
        "run 1/2 mine/van/a/r0: 233.6 tok/s INVALID"
    )


def test_resume_words_say_when_the_reruns_are_used_up():
    assert resume_fate(INVALID, 1, False, 1) == "measured again on resume"
    assert resume_fate(INVALID, 2, False, 1) == "kept: INVALID in 2 runs, run.invalid_reruns=1 used up"
    assert resume_fate(INVALID, 1, True, 1) == "kept (run.keep_invalid)"


def test_conclude_names_each_invalid_cell_with_its_reason_and_exits_1(tmp_path):
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config
    from grid.plan.groups import group_by_engine

    overrides = [
        "experiment=smoke",
        "grid.levers=[van]",
        "grid.anchor.enabled=false",
        f"paths.store={tmp_path}",
    ]
    config = to_config(compose_config(overrides))
    cells = expand(config)
    phases = [group_by_engine(cells)]
    outcomes = [CellOutcome(c.key, c.label, "a", "ok", None, 30.0, 20.0, valid=False,
                            invalid_reasons="window 2.1 s < 10 s") for c in cells]  # fmt: skip
    out = io.StringIO()
    code = conclude(
        overrides, config, cells, cells, phases, RunContext("s1", tmp_path, tmp_path, tmp_path, tmp_path),
        outcomes, Stop(), types.SimpleNamespace(skipped={}), Console(file=out, width=200),
    )  # fmt: skip
    text = out.getvalue()
    assert code == 1, text
    assert "2 cells: done 0, invalid 2, failed 0, interrupted 0, pending 0" in text
    assert f"INVALID {cells[0].label}: window 2.1 s < 10 s (measured again on resume)" in text


def row(**fields):
    # The issue's own trace: 233.6 tok/s of ~30-token answers at concurrency 8, a 2.1 s window.
    base = {"cell_key": "k", "invalid_reasons": "window 2.1 s < 10 s", "window_s": 2.1,
            "output_tok_per_s": 240.0, "output_tokens": 25 * 30, "n_ok": 25}  # fmt: skip
    return pd.DataFrame([{**base, **fields}])


def test_the_fix_is_a_valid_override_computed_from_the_measured_rate():
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config

    overrides = ["experiment=smoke", "grid.levers=[van]", "grid.corpora=[code_complete]"]
    config = to_config(compose_config(overrides))
    cell = expand(config)[0]
    # 240 tok/s of 30-token answers: 8 requests/s; 1.3 x 10 s x 8 = 104 past concurrency 8.
    fix = invalid_fix(cell, row(cell_key=cell.key), config, {"code_complete": 600})
    assert fix is not None and fix.startswith("fix: ++grid.num_prompts.code_complete=112:"), fix
    # The override composes (the `++` form whether or not the experiment sizes the corpus).
    sized = to_config(compose_config([*overrides, fix.split()[1].rstrip(":")]))
    assert sized.grid.num_prompts["code_complete"] == 112
    # Too few distinct prompts, answers that reach max_tokens (64): longer answers fill the window.
    capped = row(cell_key=cell.key, output_tokens=25 * 64)  # 3.75 requests/s
    fix = invalid_fix(cell, capped, config, {"code_complete": 20})
    assert fix is not None and fix.startswith(
        "fix: load.max_tokens=390 ++grid.num_prompts.code_complete=16:"
    ), fix
    # Answers that end before max_tokens: a larger max_tokens would not help; a shorter window would.
    fix = invalid_fix(cell, row(cell_key=cell.key), config, {"code_complete": 20})
    assert fix is not None and "would not lengthen them" in fix and "gates.min_window_s=2" in fix, fix
    assert invalid_fix(cell, row(cell_key=cell.key, invalid_reasons="3 errors"), config, {}) is None
