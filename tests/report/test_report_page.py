"""The HTML report: content from the synthetic store, and a real headless browser renders it."""

import subprocess

from PIL import Image, ImageStat

from analysis.html_report import render_report
from analysis.study import load_study
from grid.__main__ import main
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import build_store

BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def write_page(store, name="study"):
    path = StoreLayout(store).report_file(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(load_study(store), name), encoding="utf-8")
    return path


def test_page_holds_table1_verdicts_figures_and_equivalence(synthetic_store, tmp_path):
    page = write_page(synthetic_store).read_text()
    assert "bestkpad K=8" in page and "1.580" in page
    # Table 1 and best K show the interval, its label and the repeats behind it
    assert "real gain: 1.580x [1.570, 1.590] 90% CI, n=3/3 paired, band 2.0%" in page
    assert "no lever is a real gain over van (best other: suffix K=8, within noise: 1.015x" in page
    assert "90% CI low" in page and "n van" in page and "within noise" in page
    assert page.count("src='data:image/png;base64,") == 3  # Figures 1-3 inline, nothing external
    assert "http://" not in page and "https://" not in page
    assert "Output equivalence" in page and "greedy outputs equal van" in page
    assert "1 INVALID cells left out" in page
    no_verdicts = write_page(build_store(tmp_path / "bare", equivalence=False)).read_text()
    assert "Output equivalence" not in no_verdicts


def test_report_command_writes_the_experiments_page(tmp_path, capsys):
    assert main(["report", "experiment=smoke", f"paths.store={tmp_path}"]) == 0
    path = StoreLayout(tmp_path).report_file("smoke")
    assert f"report: {path}" in capsys.readouterr().out
    assert "0 of 4 cells of the experiment are in the store." in path.read_text()


def test_headless_browser_renders_a_non_blank_page(synthetic_store, chromium, tmp_path):
    page = write_page(synthetic_store)
    shot = tmp_path / "page.png"
    argv = [chromium, *BROWSER_FLAGS, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert shot.exists(), done.stderr[-2000:]
    image = Image.open(shot).convert("L")
    assert image.size == (1280, 2000)
    # A blank (all-white) page has no variance; text, tables and figures give plenty.
    assert ImageStat.Stat(image).stddev[0] > 20
    dark = sum(image.histogram()[:128]) / (image.width * image.height)
    assert dark > 0.01


def test_a_report_with_no_cells_never_replaces_an_earlier_one(tmp_path, capsys):
    path = StoreLayout(tmp_path).report_file("smoke")
    path.parent.mkdir(parents=True)
    path.write_text("the real report")
    assert main(["report", "experiment=smoke", f"paths.store={tmp_path}", "load.seed=99"]) == 2
    assert "is kept; pass the overrides the run had" in capsys.readouterr().err
    assert path.read_text() == "the real report"


def test_the_page_has_per_corpus_figures_and_folds_the_raw_tables(synthetic_store):
    from analysis.html_report import per_corpus
    from analysis.study import load_study

    page = write_page(synthetic_store).read_text()
    assert "Per corpus: throughput and latency" in page and "out tok/s (median)" in page
    assert "<details><summary>2 session fingerprints" in page
    assert "<details><summary>" in page.split("Output equivalence", 1)[1]
    table = per_corpus(load_study(synthetic_store).measured).set_index(["model", "corpus", "lever", "k"])
    # llama31_8b/mix/suffix K8: the INVALID 500 left out, the median of 130 / 132 / 128
    assert table.loc[("llama31_8b", "mix", "suffix", 8), ["n", "output_tok_per_s"]].tolist() == [3, 130.0]


def test_a_store_alone_reports_every_cell_it_holds(synthetic_store, tmp_path, capsys):
    """Issue 31: `report paths.store=...` needs no grid; the experiment is a filter, not a must."""
    import shutil

    # A copy: the session's synthetic store is shared, and a report written into it would be kept
    # (never overwritten by an empty one) where later tests expect to write theirs.
    synthetic_store = shutil.copytree(synthetic_store, tmp_path / "store")
    assert main(["report", f"paths.store={synthetic_store}"]) == 0
    path = StoreLayout(synthetic_store).report_file("store")
    assert f"report: {path}" in capsys.readouterr().out
    page = path.read_text()
    assert f"every cell of {synthetic_store}" in page
    assert "real gain: 1.580x [1.570, 1.590] 90% CI, n=3/3 paired, band 2.0%" in page
    # The smoke grid matches none of the synthetic store's cells: with it, nothing is measured.
    assert main(["report", "experiment=smoke", f"paths.store={synthetic_store}"]) == 0
    assert (
        "0 of 4 cells of the experiment are in the store."
        in StoreLayout(synthetic_store).report_file("smoke").read_text()
    )
