"""A dynamic-K cell whose K never moved is labelled 'fixed K in effect' (issue 46 item 3)."""

import io
import json
from pathlib import Path

from rich.console import Console

from analysis.effective import fixed_k
from analysis.html_report import render_report
from analysis.study import load_study
from analysis.summary import export, latest_cells, render
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_anchor, write_cell

S = "20260101T000000Z-aaaaaa"
FIXED = json.dumps({"4": 0, "6": 0, "12": 812})  # Model Runner V2 drafts the full K (vllm #51510)
MOVED = json.dumps({"4": 300, "6": 100, "12": 412})
LABEL = "dynk (fixed K in effect: every step K=12)"


def build(root: Path, steps: str) -> Path:
    layout = StoreLayout(root)
    n = 0
    for repeat in range(3):
        for lever, k, tok_s, extra in (
            ("van", 0, 100.0, {}),
            ("dynk", 12, 130.0, {"dynk_steps_by_k_json": steps}),
        ):
            summary = {"model": "llama31_8b", "corpus": "mix", "lever": lever, "k": k, "repeat": repeat}
            write_cell(layout, S, n, f"c{n:03d}", {**summary, "output_tok_per_s": tok_s + repeat, **extra})
            n += 1
    write_anchor(layout, S, 100, "start", 100.0)
    write_anchor(layout, S, 101, "end", 100.5)
    return root


def test_fixed_k_is_the_one_k_every_step_used():
    assert fixed_k([{"dynk_steps_by_k_json": FIXED}] * 2) == 12
    assert fixed_k([{"dynk_steps_by_k_json": FIXED}, {"dynk_steps_by_k_json": MOVED}]) is None
    assert fixed_k([{"dynk_steps_by_k_json": None}, {}]) is None  # not recorded: not claimed


def test_a_dynk_cell_with_one_k_in_every_step_is_labelled_so(tmp_path):
    frame = latest_cells(build(tmp_path / "store", FIXED))
    out = io.StringIO()
    render(frame, Console(file=out, width=400))
    assert LABEL in out.getvalue()
    document = io.StringIO()
    export(frame, "json", document)
    dynk = [c for c in json.loads(document.getvalue())["cells"] if c["lever"] == "dynk"]
    assert {c["dynk_fixed_k"] for c in dynk} == {12} and {c["lever_shown"] for c in dynk} == {LABEL}
    assert LABEL in render_report(load_study(tmp_path / "store"), "t")


def test_a_dynk_cell_whose_k_moved_is_not(tmp_path):
    frame = latest_cells(build(tmp_path / "store", MOVED))
    out = io.StringIO()
    render(frame, Console(file=out, width=400))
    assert "fixed K in effect" not in out.getvalue()
    assert frame["dynk_fixed_k"].isna().all()
