"""Issue 47 items 4 and 5: `status` of a large grid fits a screen and says what else the store holds;
run, status and the report count cells and anchor runs the same way (ledger.counts_words)."""

from __future__ import annotations

import json

from rich.console import Console

from grid.__main__ import main
from grid.cli.report import state_line
from grid.cli.status import NOT_DONE_SHOWN, status
from grid.orchestrate.ledger import build_ledger, counts_words
from tests.unit.grid.cli.test_status_store_only import own_store

FINAL = 3248  # cells of experiment=final


def test_a_large_grid_fits_a_screen_with_counts_per_model(tmp_path):
    own_store(tmp_path)  # 2 cells of the user's own grid (and an anchor run): not the final's
    console = Console(record=True, width=120)
    assert status(["experiment=final", f"paths.store={tmp_path}"], console) == 0
    out = console.export_text()
    assert len(out.splitlines()) <= 60, out
    assert f"experiment final: {FINAL} cells: done 0," in out
    assert "cells by model and state" in out and "llama31_8b" in out and "deepseek_r1" in out
    assert f"cells not done: the first {NOT_DONE_SHOWN}" in out
    assert f"... and {FINAL - NOT_DONE_SHOWN:,} more not done (every one: format=json or format=csv)" in out
    flat = " ".join(out.split())
    assert "the store also holds 2 cells of another grid or experiment (done 1, failed 1)" in flat
    assert f"python -m grid status paths.store={tmp_path}" in flat


def test_json_lists_every_cell_not_done_and_the_rest_of_the_store(tmp_path, capsys):
    own_store(tmp_path)
    assert main(["status", "experiment=final", f"paths.store={tmp_path}", "format=json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert len(record["cells"]) == FINAL and all(c["status"] == "pending" for c in record["cells"])
    assert sum(m["pending"] for m in record["counts_by_model"].values()) == FINAL
    assert record["elsewhere"] == {"cells": 2, "done": 1, "invalid": 0, "failed": 1, "interrupted": 0,
                                   "damaged": 0}  # fmt: skip
    assert record["anchor_runs"]["runs"] == 2 and record["anchor_runs"]["pending"] == 2


def test_run_status_and_report_count_cells_and_anchor_runs_alike(tmp_path):
    own_store(tmp_path)
    ledger = build_ledger(tmp_path)
    console = Console(record=True, width=300)
    status([f"paths.store={tmp_path}"], console)
    said = "2 cells: done 1, invalid 0, failed 1, interrupted 0, damaged 0; 1 anchor run: done 1"
    assert said in console.export_text()
    assert state_line(ledger, None).startswith(
        "2 cells: done 1 (VALID), invalid 0, failed 1, interrupted 0, damaged 0; 1 anchor run: done 1"
    )
    # run's closing line (grid/orchestrate/run.py conclude) is the same words over its own counts
    assert (
        counts_words({"done": 3, "invalid": 1}, {"done": 2})
        == "4 cells: done 3, invalid 1; 2 anchor runs: done 2"
    )
