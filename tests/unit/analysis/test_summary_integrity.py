"""Issue 17 in `python -m grid summary` and the run's tables: every cell left out is named, with why."""

from rich.console import Console

from analysis.summary import COLUMNS, latest_cells, render, render_repeats
from tests.unit.analysis.synthetic_store import S1, S2
from tests.unit.analysis.test_study_integrity import damaged_store


def printed(frame, how=render):
    console = Console(record=True, width=400)
    how(frame, console)
    return console.export_text()


def test_summary_leaves_out_a_damaged_file_and_a_failed_cell_and_names_them(tmp_path):
    path = damaged_store(tmp_path)
    frame = latest_cells(tmp_path)
    assert "c015" not in set(frame["cell_key"]) and len(frame) == 39
    for column in set(COLUMNS) - set(frame.columns):  # figures the synthetic store does not hold
        frame[column] = None
    out = printed(frame)
    assert f"left out: cell c015 attempt {S2}-0000000f: {path}: unreadable (checksum mismatch" in out
    assert "left out: cell c999: failed (1 attempt; last error: EngineError: engine exited)" in out


def test_a_sessions_summary_names_only_that_sessions_cells(tmp_path):
    damaged_store(tmp_path)
    assert latest_cells(tmp_path, S1).attrs["left_out"] == []
    assert len(latest_cells(tmp_path, S2).attrs["left_out"]) == 2


def test_the_repeats_table_names_each_invalid_cell_it_leaves_out(tmp_path):
    damaged_store(tmp_path, scramble=False)
    out = printed(latest_cells(tmp_path), render_repeats)
    assert "1 INVALID cells left out" in out
    assert "left out: llama31_8b/suffix-k8/mix/r3 (cell c003): INVALID (concurrency held 40% < 90%)" in out
