"""Issue 17 in the equivalence verdicts: a damaged file never crashes them, and is named."""

from analysis.verdicts import write_verdicts
from store.layout import StoreLayout
from tests.unit.analysis.test_verdicts import FEW, VAN, put
from tests.unit.store.damage import names_only, scramble_pages


def store(tmp_path):
    layout = StoreLayout(tmp_path)
    put(layout, "van", "van", VAN)
    put(layout, "anchor", "van", VAN, anchor="start")
    put(layout, "suffix", "suffix", VAN, k=8)
    put(layout, "bestkpad", "bestkpad", VAN, k=8)
    return layout


def test_a_scrambled_requests_file_is_left_out_and_named_not_a_crash(tmp_path):
    layout = store(tmp_path)
    path = layout.attempt_dir("suffix", "s1-suffix") / "requests.parquet"
    scramble_pages(path)  # same size, footer intact: DuckDB fails on its pages
    frame = write_verdicts(tmp_path, "s1", FEW).set_index("cell_key")
    assert frame.loc["bestkpad", "verdict"] == "pass"  # the rest is judged
    assert "suffix" not in frame.index  # never judged from the damaged file
    [line] = frame.attrs["left_out"]
    assert "cell suffix attempt s1-suffix" in line and str(path) in line and "checksum mismatch" in line


def test_an_older_manifest_whose_pages_will_not_read_gets_no_verdict_naming_the_file(tmp_path):
    layout = store(tmp_path)
    names_only(layout.attempt_dir("suffix", "s1-suffix") / "manifest.json")  # footer check only
    path = layout.attempt_dir("suffix", "s1-suffix") / "requests.parquet"
    scramble_pages(path)
    frame = write_verdicts(tmp_path, "s1", FEW).set_index("cell_key")
    assert frame.loc["bestkpad", "verdict"] == "pass"
    assert frame.loc["suffix", "verdict"] == "no_reference"
    assert frame.loc["suffix", "reason"].startswith(
        f"not judged: cell suffix attempt s1-suffix: {path}: unreadable"
    )
    assert any(str(path) in line for line in frame.attrs["left_out"])
