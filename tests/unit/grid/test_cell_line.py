"""A log has no live bar: `grid run` prints one line per settled cell (grid/run.py cell_line)."""

from grid.run import cell_line
from workers.runner import CellOutcome


def test_the_line_names_the_cell_its_rate_and_its_validity():
    ok = CellOutcome("k", "tiny/suffix-k8/code_complete/r0", "a", "ok", None, 31.24, 27.4, valid=True)
    assert cell_line(ok, {"done": 3}, 6) == (
        "run 3/6 tiny/suffix-k8/code_complete/r0: 31.2 tok/s VALID (engine ready in 27 s)"
    )
    bad = CellOutcome("k", "tiny/van/chat_bench/r0", "a", "ok", None, 12.0, None, valid=False,
                      invalid_reasons="steady window 7.3 s < 10 s")  # fmt: skip
    assert cell_line(bad, {"done": 4}, 6) == (
        "run 4/6 tiny/van/chat_bench/r0: 12.0 tok/s INVALID (steady window 7.3 s < 10 s)"
    )


def test_header_bar_and_closing_line_count_runs_the_same_way():
    from grid.run import runs_words

    assert runs_words(4, 2) == "6 runs: 4 cells + 2 anchor runs"
    assert runs_words(1, 0) == "1 cell run"
