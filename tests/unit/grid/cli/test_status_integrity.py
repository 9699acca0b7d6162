"""Issue 17 in `python -m grid status`: damaged files are named, and their cells are not done."""

import json

from rich.console import Console

from grid.__main__ import main
from grid.cli.status import status
from store.layout import StoreLayout
from store.writer import write_failed_attempt, write_ok_attempt
from tests.unit.grid.orchestrate.test_ledger import smoke_cells
from tests.unit.store.damage import flip_middle, names_only
from tests.unit.store.test_writer_read import records, tags


def damaged_store(root):
    """Smoke cells: one measured, one measured with requests.parquet damaged, one interrupted."""
    layout = StoreLayout(root)
    whole, hurt, stopped, _ = smoke_cells()
    for cell, attempt in ((whole, "s1-a1"), (hurt, "s1-a2")):
        summary = {**cell.as_record(), "valid": True, "output_tok_per_s": 1.0}
        folder = write_ok_attempt(layout, tags(cell.key, attempt), records(40), summary)
    flip_middle(folder / "requests.parquet")
    failed = write_failed_attempt(layout, tags(stopped.key, "s1-a3"), "driver stopped", "")
    manifest = json.loads((failed / "manifest.json").read_text())
    (failed / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    return hurt, folder / "requests.parquet"


def test_status_names_the_damaged_file_and_does_not_count_its_cell_done(tmp_path):
    hurt, path = damaged_store(tmp_path)
    console = Console(record=True, width=400)
    assert status(["experiment=smoke", f"paths.store={tmp_path}"], console) == 0
    out = console.export_text()
    assert f"store: {hurt.label}: cell {hurt.key} attempt s1-a2: {path}: unreadable (checksum mismatch" in out
    assert "done 1," in out and "interrupted 1," in out and "damaged 1 (measured again on resume)" in out
    assert "sizes and sha256 checksums" in out


def test_status_quick_checks_sizes_only(tmp_path, capsys):
    damaged_store(tmp_path)
    assert main(["status", "--quick", "experiment=smoke", f"paths.store={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert "done 2," in out and "damaged 0" in out and "sizes only (--quick)" in out


def test_status_says_which_attempts_predate_checksums(tmp_path):
    _, path = damaged_store(tmp_path)
    names_only(path.parent / "manifest.json")  # written before checksums: footer check only, passes
    console = Console(record=True, width=400)
    status(["experiment=smoke", f"paths.store={tmp_path}"], console)
    out = console.export_text()
    assert "done 2," in out and "damaged 0" in out
    assert "1 older attempts record no checksums: their Parquet footers checked" in out
