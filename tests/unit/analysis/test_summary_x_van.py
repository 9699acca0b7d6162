"""The run summary's repeats table judges x van by analysis/decision.py, beyond the anchors' band."""

import io

from rich.console import Console

from analysis.load import anchor_runs
from analysis.summary import latest_cells, render, render_repeats
from store.read import connect
from tests.unit.analysis.synthetic_store import build_store


def test_repeats_table_shows_x_van_with_interval_label_and_n(tmp_path):
    store = build_store(tmp_path / "store")
    out = io.StringIO()
    render_repeats(latest_cells(store), Console(file=out, width=200), anchor_runs(connect(store)))
    text = out.getvalue()
    assert "1.580x [1.570, 1.590] 90% CI, n=3/3 paired" in text and "real gain" in text
    assert "beyond the drift band of the session's anchor runs" in text


def test_without_anchor_runs_x_van_is_not_judged(tmp_path):
    # Fail closed (issue 26): no anchors, no band, and no interval can be said to clear it.
    out = io.StringIO()
    render_repeats(latest_cells(build_store(tmp_path / "store")), Console(file=out, width=200))
    text = out.getvalue()
    assert "1.580x [1.570, 1.590] 90% CI, n=3/3 paired" in text
    assert "not judged (drift unknown)" in text and "real gain" not in text


def test_the_cells_table_shows_figures_a_store_lacks_as_dashes(tmp_path):
    # The synthetic store, like one written by an older schema, has no TTFT, TPOT or request
    # counts: `grid summary` printed a traceback (AttributeError) instead of the table.
    out = io.StringIO()
    render(latest_cells(build_store(tmp_path / "store")), Console(file=out, width=250))
    text = out.getvalue()
    assert "cells (latest ok attempt each)" in text and "qwen25_7b" in text
    assert "-/-" in text and "None" not in text
