"""A log has no live bar: `grid run` prints one line per settled cell (grid/orchestrate/run.py cell_line)."""

from grid.orchestrate.run import cell_line
from workers.runner import CellOutcome


def test_the_line_names_the_cell_its_rate_and_its_validity():
    ok = CellOutcome("k", "tiny/suffix-k8/code_complete/r0", "a", "ok", None, 31.24, 27.4, valid=True)
    assert cell_line(ok, {"done": 3, "invalid": 0}, 6) == (
        "run 3/6 tiny/suffix-k8/code_complete/r0: 31.2 tok/s VALID (engine ready in 27 s)"
    )
    bad = CellOutcome("k", "tiny/van/chat_bench/r0", "a", "ok", None, 12.0, None, valid=False,
                      invalid_reasons="steady window 7.3 s < 10 s")  # fmt: skip
    assert cell_line(bad, {"done": 3, "invalid": 1}, 6) == (
        "run 4/6 tiny/van/chat_bench/r0: 12.0 tok/s INVALID (steady window 7.3 s < 10 s)"
    )


def test_header_bar_and_closing_line_count_runs_the_same_way():
    from grid.orchestrate.run import runs_words

    assert runs_words(4, 2) == "6 runs: 4 cells + 2 anchor runs"
    assert runs_words(1, 0) == "1 cell run"


def test_the_closing_line_counts_the_anchor_runs_from_the_phases():
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config
    from grid.orchestrate.run import anchor_count
    from grid.plan.anchor import anchor_cells
    from grid.plan.groups import group_by_engine

    config = to_config(compose_config(["experiment=smoke"]))
    cells, anchors = expand(config), anchor_cells(config)
    phases = [group_by_engine([anchors[0]]), group_by_engine(cells), group_by_engine([anchors[1]])]
    assert anchor_count(phases) == 2 and anchor_count([group_by_engine(cells)]) == 0


def test_conclude_prints_the_closing_line_counting_its_anchor_runs(tmp_path):
    """conclude() itself: before 3ddafc8 its closing line raised UnboundLocalError."""
    import io
    import types

    from rich.console import Console

    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config
    from grid.orchestrate.run import conclude
    from grid.orchestrate.stop import Stop
    from grid.plan.anchor import anchor_cells
    from grid.plan.groups import group_by_engine
    from workers.runner import RunContext

    overrides = ["experiment=smoke", "grid.repeats=2", f"paths.store={tmp_path}"]
    config = to_config(compose_config(overrides))
    cells, anchors = expand(config), anchor_cells(config)
    phases = [group_by_engine([anchors[0]]), group_by_engine(cells), group_by_engine([anchors[1]])]
    runs = [*cells, *anchors]
    outcomes = [CellOutcome(c.key, c.label, "a", "ok", None, 10.0, 20.0, valid=True) for c in runs]
    ctx = RunContext("s1", tmp_path, tmp_path, tmp_path, tmp_path)
    out = io.StringIO()
    leases = types.SimpleNamespace(skipped={})
    code = conclude(
        overrides, config, cells, cells, phases, ctx, outcomes, Stop(), leases, Console(file=out, width=100)
    )
    text = out.getvalue()
    closing = " ".join(text[text.rfind("8 cells: ") :].split())  # the closing line, however it wrapped
    assert code == 0, out.getvalue()
    assert closing == (
        "8 cells: done 8, invalid 0, failed 0, interrupted 0, pending 0; 2 anchor runs: done 2; "
        "skipped 0 (in the store) (attempts 10)"
    )
