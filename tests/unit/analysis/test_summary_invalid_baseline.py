"""Issue 47 item 5: a ratio over an INVALID van cell says so on its own row (summary table, CSV, JSON)."""

from __future__ import annotations

import io
import json

import pandas as pd
from rich.console import Console

from analysis.summary import export, latest_cells, render, render_repeats
from tests.unit.analysis import synthetic_store
from tests.unit.analysis.synthetic_store import S2, build_store

VAN = (S2, "qwen25_7b", "chat", "van", 0, 0, 190.0, True)


def invalid_van_store(root, monkeypatch):
    """The synthetic store with qwen25_7b's chat van cell INVALID (its suffix cell stays VALID)."""
    cells = [(*c[:7], False) if c == VAN else c for c in synthetic_store.CELLS]
    monkeypatch.setattr(synthetic_store, "CELLS", cells)
    return build_store(root, equivalence=False)


def test_the_cells_table_names_an_invalid_van_on_the_ratios_row(tmp_path, monkeypatch):
    frame = latest_cells(invalid_van_store(tmp_path / "store", monkeypatch))
    out = io.StringIO()
    render(frame, Console(file=out, width=300))
    text = out.getvalue()
    assert "1.16 n=1 not judged, van cell INVALID" in text, text
    rows = [line for line in text.splitlines() if "qwen25_7b" in line and "chat" in line]
    assert (
        sum("van cell INVALID" in r for r in rows) == 1 and sum("this cell INVALID" in r for r in rows) == 1
    )
    mix = [line for line in text.splitlines() if "qwen25_7b" in line and "mix" in line]
    assert mix and not any("INVALID" in line for line in mix)


def test_csv_and_json_carry_the_flag_beside_the_ratio(tmp_path, monkeypatch):
    frame = latest_cells(invalid_van_store(tmp_path / "store", monkeypatch))
    csv = io.StringIO()
    export(frame, "csv", csv)
    table = pd.read_csv(io.StringIO(csv.getvalue()))
    row = table[table["label"] == "qwen25_7b/suffix-k8/chat/r0"]
    assert row["speedup_vs_van_invalid"].tolist() == ["van cell INVALID"]
    assert row["speedup_vs_van_verdict"].iloc[0].endswith("; van cell INVALID")
    text = io.StringIO()
    export(frame, "json", text)
    cells = json.loads(text.getvalue())["cells"]
    flags = {c["label"]: c["speedup_vs_van_invalid"] for c in cells if c["model"] == "qwen25_7b"}
    assert flags["qwen25_7b/van/chat/r0"] == "this cell INVALID"
    assert flags["qwen25_7b/suffix-k8/chat/r0"] == "van cell INVALID"
    assert {flags[f"qwen25_7b/suffix-k8/chat/r{r}"] for r in (1, 2)} == {None}  # their van cells are VALID
    assert {flag for label, flag in flags.items() if "/mix/" in label} == {None}


def test_x_van_over_the_repeats_names_the_invalid_cell_it_left_out(tmp_path, monkeypatch):
    """x_van is judged on VALID repeats only: the INVALID van cell it left out is named on its row (the
    repeats table and x_van_invalid in the exports), not only in a line below the table."""
    frame = latest_cells(invalid_van_store(tmp_path / "store", monkeypatch))
    flag = "1 of 3 van cells INVALID, left out of the ratio"
    text = io.StringIO()
    export(frame, "json", text)
    cells = json.loads(text.getvalue())["cells"]
    flags = {c["label"]: c["x_van_invalid"] for c in cells if c["model"] == "qwen25_7b"}
    assert {flags[f"qwen25_7b/suffix-k8/chat/r{r}"] for r in range(3)} == {flag}
    assert flags["qwen25_7b/suffix-k8/mix/r0"] is None and flags["qwen25_7b/van/chat/r0"] is None
    out = io.StringIO()
    render_repeats(frame, Console(file=out, width=300), frame.attrs["anchors"])
    rows = [line for line in out.getvalue().splitlines() if "qwen25_7b" in line and "suffix" in line]
    assert [("chat" in r) for r in rows if flag in r] == [True], rows
