"""Issue 38 item 4 and issue 37 item 6: the report says what was measured, draws nothing no cell
measured, sizes its advice by the session's own band, and leads with the held-out figure."""

import io
import json
import math
import re

import pandas as pd
import pytest
from rich.console import Console

from analysis.confirmation import power_words
from analysis.detectable import detectable_gain, power, repeats_for, spread_of
from analysis.html_report import render_report
from analysis.measured import engine_line, load_rows
from analysis.study import analyse, load_study
from analysis.summary import latest_cells, render_launch_tables
from tests.unit.analysis.launch_store import Design, write_store
from tests.unit.analysis.synthetic_store import build_store
from tests.unit.analysis.test_confirmation import record, write_confirmation
from tests.unit.analysis.test_summary_width import table_rows

IMAGE = "src='data:image/png;base64,"


def text_of(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


@pytest.fixture(scope="module")
def study(synthetic_store):
    return load_study(synthetic_store)


def test_the_page_says_which_engine_model_load_and_window(study):
    text = text_of(render_report(study, "t"))
    assert "What was measured" in text and "GPU build on NVIDIA H200" in text
    assert "models: llama31_8b, qwen25_7b" in text
    assert "out tok/s: the output tokens that arrived inside the steady-state window" in text
    assert "closes at the first completion after the last send" in text


def test_the_engine_build_and_load_come_from_the_cells_and_sessions():
    load = {"num_prompts": 160, "warmup_requests": 32, "concurrency": 32, "max_tokens": 1024}
    config = json.dumps({"load": {**load, "ignore_eos": False}, "model": {"path": "x/SmolLM2"}})
    cell = {"model": "smol", "corpus": "chat", "config_json": config, "concurrency": 32, "max_tokens": 1024}
    cells = pd.DataFrame([{**cell, "n_requests": 160, "window_s": 12.5, "engine_version": "0.11.0"}])
    cpu = pd.DataFrame([{"session_id": "s", "gpus": [], "vllm_version": "0.11.0"}])
    assert (
        engine_line(cells, cpu) == "engine: vLLM 0.11.0, CPU build (the sessions' fingerprints list no GPU)"
    )
    row = load_rows(cells).iloc[0]
    assert (row["measured prompts"], row["concurrency"], row["max_tokens"]) == ("160", "32", "1024")
    assert row["warm-up requests"] == "32" and row["window s (median)"] == "12.5"
    assert "not recorded" in engine_line(cells, pd.DataFrame())


def test_a_tok_s_pooled_over_corpora_says_so_in_table1(study):
    no_mix = study.measured.assign(corpus=study.measured["corpus"].replace({"mix": "code"}))
    page = render_report(analyse(no_mix, study.anchors, study.sessions), "t")
    # qwen25_7b ran van and suffix on chat and code: its tok/s are geometric means over both
    assert "geometric mean over 2 corpora (chat, code)" in text_of(page)
    assert "190.0 (geometric mean over corpora, not one cell's)" not in page
    assert re.search(r"<td>[\d.,]+ \(geometric mean over corpora, not one cell's\)</td>", page)
    assert "geometric mean over corpora, not one cell" not in render_report(study, "t")


def test_figure_1_draws_nothing_when_every_final_lever_is_van(study):
    van_only = study.measured[study.measured["lever"] == "van"]
    page = render_report(analyse(van_only, study.anchors, study.sessions), "t")
    assert "Figure 1 (x over van per model) is not drawn: every model&#x27;s final lever is van" in page
    assert page.count(IMAGE) == 1  # Figure 3 only: van alone sweeps no K either
    assert "Figure 2 (best K per model x corpus) is not drawn: no lever was swept" in page
    no_anchors = render_report(analyse(study.measured, study.anchors.iloc[0:0], study.sessions), "t")
    assert "Figure 3 (anchor throughput per session) is not drawn: no anchor runs" in no_anchors
    assert no_anchors.count(IMAGE) == 1  # Figure 2; with the drift unknown nothing is a gain: no Figure 1
    assert render_report(study, "t").count(IMAGE) == 3


def test_the_repeats_advice_uses_the_measured_band():
    sd = math.hypot(0.01, 0.05)
    assert repeats_for(0.10, sd, 0.02) == 5 and repeats_for(0.10, sd, 0.04) == 7
    assert repeats_for(0.10, sd, 0.10) is None  # a band as wide as the gain: no repeats find it
    # Power matches the rule's simulated keep rate (analysis.power: n=5, +10 %, no band: 95.4 %).
    assert power(1.10, sd, 5, 0.0) == pytest.approx(0.954, abs=0.01)
    lo, hi = math.exp(0.1 - 0.05), math.exp(0.1 + 0.05)
    assert spread_of(lo, hi, 5) == pytest.approx(0.05 / 2.1318 * math.sqrt(5), rel=1e-3)
    assert power(1 + detectable_gain(sd, 5, 0.02), sd, 5, 0.02) == pytest.approx(0.80)


def test_a_held_out_figure_at_low_power_says_so(tmp_path):
    store = build_store(tmp_path / "store")
    keys = write_confirmation(store, (118.0, 106.0, 114.0))  # +12.6 % over van, 3 repeats, sd 6.2 %
    study = load_study(store, confirmation_record=record(keys))
    llama = study.table1.set_index("model").loc["llama31_8b"]
    assert llama["confirmation"] == "confirmed" and llama["deploy"] == "bestkpad K=8"
    assert llama["confirmed_power"].startswith("low: a real +10% is found 48% of the time (n=3, sd 6.2%")
    text = text_of(render_report(study, "t"))
    assert "a figure confirmed at low power reads high" in text
    # The figure over models is the held-out one, with its n; the selection's 1.26 is not summarised.
    assert f"geometric mean of the held-out x over van {llama['confirmed_x']:.3f}x, n=1 of 2 models" in text
    assert "1.257" not in text
    # Table 1 leads with the held-out figure; the selection's comes after, said to read high.
    headers = re.findall(r"<th>([^<]*)</th>", render_report(study, "t"))
    assert headers.index("x over van (held out: the figure to deploy on)") < headers.index(
        "x over van (selection: reads high)"
    )


def test_power_is_the_designs_at_the_target_gain_not_at_the_figure_shown():
    words = power_words(1.0989, 1.1091, 3, 0.01)  # sd 0.3 %: +10 % is found every time
    assert words.startswith("100% at +10%") and "+1.6% or more is found 80% of the time" in words
    assert power_words(1.0, 1.2, 3, math.nan).startswith("unknown")
    # The same interval's width flags low power whatever figure sits inside it.
    wide = (math.exp(0.15 - 0.12), math.exp(0.15 + 0.12))
    assert power_words(*wide, 3, 0.01).startswith("low: a real +10% is found")


@pytest.mark.parametrize("design", [Design(), Design(sessions=1, launches=1, blocks=6)])
def test_the_launch_tables_fit_80_columns_and_keep_missing_because(tmp_path, design):
    cells = latest_cells(write_store(tmp_path / "store", design))
    cells = cells.assign(model=cells["model"].replace({"smol": "smollm2_135m_it"}))
    out = io.StringIO()
    render_launch_tables(cells, Console(file=out, width=80))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80  # the paired-by-block tables too
    assert "paired by block, smollm2_135m_it (levers sharing a launch)" in text
    variance = text.split("paired by block")[0]
    assert "not shown at 80 columns" not in variance
    header = [line for line in variance.splitlines() if line.startswith("┃")]
    assert "missing" in header[-2] + header[-1] and "because" in header[-1]
    rows = table_rows(variance)
    assert len(rows) == 4 and all(len(row) == 7 for row in rows)  # config ... missing because
    if design.launches == 1:
        assert all("one launch per session" in row[-1] for row in rows)


def test_the_page_counts_cells_by_the_ledgers_states(synthetic_store, tmp_path, capsys):
    """Issue 38 item 1's one definition of a cell's state (grid/orchestrate/ledger.py) heads the
    page's notes."""
    import shutil

    from grid.__main__ import main
    from store.layout import StoreLayout

    store = shutil.copytree(synthetic_store, tmp_path / "store")
    assert main(["report", f"paths.store={store}"]) == 0
    text = text_of(StoreLayout(store).report_file("store").read_text())
    line = re.search(r"cells: done (\d+) \(VALID\), invalid 1 \(measured, a validity gate failed", text)
    assert line and int(line.group(1)) > 30 and "failed 0, interrupted 0, damaged 0" in text


def test_a_store_of_invalid_cells_says_so_rather_than_nothing_measured(study):
    invalid = study.measured.assign(valid=False, invalid_reasons="window 2.1 s < 10.0 s")
    page = render_report(analyse(invalid, study.anchors, study.sessions), "t")
    assert (
        f"none of the {len(invalid)} measured cells is VALID" in page and "No cells measured yet" not in page
    )
