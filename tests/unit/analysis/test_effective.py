"""A comparison names what else its engines differed in (issue 46 item 2; analysis/effective.py).

The store: llama31_8b's van ran on Model Runner V1 with async scheduling on, its suffix on V2 with
async off (vLLM refuses suffix under async scheduling; suffix is not on V2 upstream, but a store may
say so); qwen25_7b's w4a4 ran its NVFP4 checkpoint through Marlin (Hopper: W4A16).
"""

import io
import json
import math
from pathlib import Path

from rich.console import Console

from analysis.effective import also_differs, asked_vs_ran, differences, lever_shown
from analysis.html_report import render_report
from analysis.load import anchor_runs
from analysis.side_by_side import side_by_side
from analysis.study import load_study
from analysis.summary import export, latest_cells, render, render_repeats
from grid.cli.compare import load_side
from store.layout import StoreLayout
from store.read import connect
from tests.unit.analysis.synthetic_store import EQUIVALENCE_ROW, write_anchor, write_cell, write_equivalence

S = "20260101T000000Z-aaaaaa"
V1_ASYNC = {"engine_model_runner": "v1", "engine_async_scheduling": True, "engine_log_version": "0.33.0"}
V2_SYNC = {"engine_model_runner": "v2", "engine_async_scheduling": False, "engine_log_version": "0.33.0"}
MARLIN = {**V1_ASYNC, "engine_nvfp4_kernel": "MarlinNvFp4LinearKernel"}
# (model, lever, k, tok/s, effective configuration)
CONFIGS = [
    ("llama31_8b", "van", 0, 100.0, V1_ASYNC),
    ("llama31_8b", "suffix", 8, 130.0, V2_SYNC),
    ("qwen25_7b", "van", 0, 200.0, V1_ASYNC),
    ("qwen25_7b", "w4a4", 0, 240.0, MARLIN),
]


def build(root: Path, suffix: dict = V2_SYNC) -> Path:
    layout = StoreLayout(root)
    n = 0
    for repeat in range(3):
        for model, lever, k, tok_s, effective in CONFIGS:
            effective = suffix if lever == "suffix" else effective
            summary = {"model": model, "corpus": "mix", "lever": lever, "k": k, "repeat": repeat}
            summary.update(output_tok_per_s=tok_s + repeat, **effective)
            write_cell(layout, S, n, f"c{n:03d}", summary)
            n += 1
    write_anchor(layout, S, 100, "start", 100.0)
    write_anchor(layout, S, 101, "end", 100.5)
    passed = {**EQUIVALENCE_ROW, "corpus": "mix", "cell_key": None}
    write_equivalence(
        layout,
        [
            {**passed, "model": "llama31_8b", "lever": "suffix", "k": 8},
            {**passed, "model": "qwen25_7b", "lever": "w4a4", "k": 0},
        ],
    )
    return root


def test_differences_leave_out_what_the_lever_changes_and_what_neither_side_knows():
    van = {"lever": "van", **V1_ASYNC, "engine_cudagraph_mode": None}
    suffix = {"lever": "suffix", **V2_SYNC, "engine_max_capture_size": 512, "engine_cudagraph_mode": math.nan}
    assert also_differs([suffix], [van]) == "also differs: model runner V2 vs V1; async scheduling off vs on"
    # van_noasync's whole point is async scheduling; w4a4's is its NVFP4 kernel: neither is named.
    assert differences([{**van, "lever": "van_noasync", "engine_async_scheduling": False}], [van]) == []
    assert differences([{**van, "lever": "w4a4", "engine_nvfp4_kernel": "CutlassNvFp4"}], [van]) == []
    # The same lever on two stores: its own field is compared too.
    a, b = {**van, "lever": "w4a4", "engine_nvfp4_kernel": "Cutlass"}, {**MARLIN, "lever": "w4a4"}
    assert also_differs([b], [a]) == "also differs: NVFP4 kernel MarlinNvFp4LinearKernel vs Cutlass"
    # One side knows, the other does not: 'unknown'.
    assert also_differs([{**van, "engine_cudagraph_mode": "FULL"}], [van]) == (
        "also differs: CUDA-graph mode FULL vs unknown"
    )


def test_a_cell_that_ran_other_than_asked_says_so():
    asked_on = json.dumps({"lever": {"async_scheduling": True, "quantized": True}})
    row = {"lever": "w4a4", "config_json": asked_on, **MARLIN, "engine_async_scheduling": False}
    assert asked_vs_ran(row) == [
        "asked async scheduling on, ran off",
        "asked W4A4, ran W4A16 (MarlinNvFp4LinearKernel: weight-only FP4, activations bf16)",
    ]
    assert lever_shown(row) == "W4A16 (w4a4 on Marlin)"
    assert lever_shown({"lever": "w4a4", "engine_nvfp4_kernel": "CutlassNvFp4"}) == "w4a4"


def test_summary_names_the_runner_beside_each_x_van_and_which_van_it_is_over(tmp_path):
    store = build(tmp_path / "store")
    frame = latest_cells(store)
    out = io.StringIO()
    console = Console(file=out, width=400)
    render(frame, console)
    render_repeats(frame, console, anchor_runs(connect(store)))
    text = out.getvalue()
    assert "n=1 not judged, also differs: model runner V2 vs V1; async scheduling off vs on" in text
    assert "real gain; also differs: model runner V2 vs V1; async scheduling off vs on" in text
    assert "x van over llama31_8b/mix: van ran with async scheduling on, model runner V1" in text
    csv = io.StringIO()
    export(frame, "csv", csv)
    document = io.StringIO()
    export(frame, "json", document)
    suffix = next(c for c in json.loads(document.getvalue())["cells"] if c["lever"] == "suffix")
    differs = "also differs: model runner V2 vs V1; async scheduling off vs on"
    assert suffix["speedup_vs_van_also_differs"] == suffix["x_van_also_differs"] == differs
    assert suffix["x_van_over"].startswith("async scheduling on, model runner V1")
    assert differs in csv.getvalue()


def test_summary_names_nothing_where_the_engines_agree(tmp_path):
    store = build(tmp_path / "store", suffix={**V1_ASYNC, "engine_max_capture_size": 504})
    out = io.StringIO()
    render(latest_cells(store), Console(file=out, width=400))
    assert "also differs:" not in out.getvalue()


def test_an_nvfp4_cell_on_marlin_is_labelled_w4a16_in_summary_table1_and_report(tmp_path):
    store = build(tmp_path / "store")
    frame = latest_cells(store)
    out = io.StringIO()
    render(frame, Console(file=out, width=400))
    text = out.getvalue()
    assert (
        "W4A16 (w4a4 on Marlin)" in text
        and "RAN OTHER THAN ASKED qwen25_7b/mix/w4a4: asked W4A4, ran W4A16" in text
    )
    document = io.StringIO()
    export(frame, "json", document)
    w4 = [c for c in json.loads(document.getvalue())["cells"] if c["lever"] == "w4a4"]
    assert {c["lever_shown"] for c in w4} == {"W4A16 (w4a4 on Marlin)"}
    study = load_study(store)
    table = study.table1.set_index("model")
    assert table.loc["qwen25_7b", "final_lever"] == "W4A16 (w4a4 on Marlin)"
    page = render_report(study, "t")
    assert "<td>W4A16 (w4a4 on Marlin)</td>" in page and "it ran as W4A16 (w4a4 on Marlin)" in page


def test_table1_and_report_name_the_difference_and_the_van(tmp_path):
    study = load_study(build(tmp_path / "store"))
    table = study.table1.set_index("model")
    assert table.loc["llama31_8b", "final_lever"] == "suffix K=8"
    differs = "also differs: model runner V2 vs V1; async scheduling off vs on"
    assert table.loc["llama31_8b", "also_differs"] == differs
    assert table.loc["llama31_8b", "van_ran_with"].startswith("async scheduling on, model runner V1")
    page = render_report(study, "t")
    assert differs in page and "van ran with (the van x over van is over)" in page


def test_compare_names_what_else_differed_between_the_stores(tmp_path):
    before = build(tmp_path / "before", suffix=V1_ASYNC)
    after = build(tmp_path / "after")
    table, _ = side_by_side(load_side(before, None, "before"), load_side(after, None, "after"))
    rows = table.set_index(["model", "lever"])["also_differs"]
    assert rows[("llama31_8b", "suffix")] == "also differs: model runner V2 vs V1; async scheduling off vs on"
    assert rows[("llama31_8b", "van")] == ""
