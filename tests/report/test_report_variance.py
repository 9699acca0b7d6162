"""The HTML report's variance components and paired-by-block sections (analysis/html_report.py)."""

from analysis.html_report import render_report
from analysis.study import load_study
from tests.unit.analysis.launch_store import Design, write_store


def test_page_shows_components_and_pairs_where_cells_record_launches(tmp_path, synthetic_store):
    page = render_report(load_study(write_store(tmp_path / "store", Design())), "launches")
    assert "<h2>Variance components</h2>" in page and "within-engine sd % (df)" in page
    assert "<h3>Paired by block</h3>" in page and "bestkpad-k8 / suffix-k8" in page
    assert "24/6/2" in page
    assert "Variance components" not in render_report(load_study(synthetic_store), "old")


def test_one_launch_says_what_is_missing(tmp_path):
    page = render_report(
        load_study(write_store(tmp_path / "one", Design(sessions=1, launches=1, blocks=6))), "x"
    )
    assert "<h2>Variance components</h2>" in page and "one launch per session" in page
