"""Issue 17 in the analysis: load_study and the report read only whole attempts and name every
cell they leave out, with why (damaged file, failed, INVALID)."""

from analysis.study import load_study
from store.layout import StoreLayout
from store.writer import write_failed_attempt
from tests.unit.analysis.synthetic_store import S2, build_store
from tests.unit.store.damage import scramble_pages


def damaged_store(root, scramble=True):
    """The synthetic store, with c015's summary.parquet scrambled and a cell whose attempt failed."""
    layout = StoreLayout(build_store(root))
    path = layout.attempt_dir("c015", f"{S2}-{15:08x}") / "summary.parquet"
    if scramble:
        scramble_pages(path)
    tags = {"session_id": S2, "cell_key": "c999", "attempt_id": f"{S2}-00000999"}
    write_failed_attempt(layout, tags, "EngineError: engine exited\ntraceback", "")
    return path


def test_load_study_leaves_out_a_damaged_file_and_names_it(tmp_path):
    path = damaged_store(tmp_path)
    study = load_study(tmp_path)
    assert "c015" not in set(study.measured["cell_key"])
    assert len(study.measured) == 39  # 40 cells, one damaged
    [line] = [n for n in study.notes if "c015" in n]
    assert line.startswith(
        f"left out: cell c015 attempt {S2}-0000000f: {path}: unreadable (checksum mismatch"
    )


def test_load_study_names_each_failed_and_invalid_cell_left_out(tmp_path):
    damaged_store(tmp_path, scramble=False)
    notes = load_study(tmp_path).notes
    assert "left out: cell c999: failed (1 attempt; last error: EngineError: engine exited)" in notes
    assert "1 INVALID cells left out (see their invalid_reasons)." in notes
    assert "left out: llama31_8b/suffix-k8/mix/r3 (cell c003): INVALID (concurrency held 40% < 90%)" in notes


def test_load_study_for_an_experiment_names_only_its_cells(tmp_path):
    damaged_store(tmp_path)
    notes = load_study(tmp_path, cell_keys={"c000", "c001"}).notes
    assert not any("c015" in n or "c999" in n for n in notes)
    notes = load_study(tmp_path, cell_keys={"c000", "c015", "c999"}).notes
    assert "1 of 3 cells of the experiment are in the store." in notes
    assert (
        sum(n.startswith("left out: cell c015 ") or n.startswith("left out: cell c999:") for n in notes) == 2
    )


def test_the_report_page_names_the_damaged_file(tmp_path):
    from analysis.html_report import render_report

    path = damaged_store(tmp_path)
    page = render_report(load_study(tmp_path), "integrity")
    assert f"left out: cell c015 attempt {S2}-0000000f: {path}: unreadable (checksum mismatch" in page
    assert "left out: cell c999: failed" in page


def test_the_page_names_the_confidence_its_intervals_are_at(tmp_path):
    """Sequential looks judge at Pocock's corrected confidence: Table 1 says so, not a fixed 90%."""
    from analysis.html_report import render_report

    build_store(tmp_path)
    usual = render_report(load_study(tmp_path), "usual")
    corrected = render_report(load_study(tmp_path, confidence=0.962), "sequential")
    assert "<th>selection 90% CI low</th>" in usual and "96.2%" not in usual
    assert "<th>selection 96.2% CI low</th>" in corrected
    assert "The selection&#x27;s intervals are at 96.2%" in corrected
    assert "<th>held-out 90% CI low</th>" in corrected  # the confirmation's own single look
