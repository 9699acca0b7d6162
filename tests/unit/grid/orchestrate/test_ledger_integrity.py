"""Issue 17 in resume: a cell is done only if its files are whole; interrupted cells run again."""

import json

from grid.orchestrate.ledger import DONE, FAILED, build_ledger, select
from store.layout import StoreLayout
from store.writer import write_failed_attempt, write_ok_attempt
from tests.unit.grid.orchestrate.test_ledger import smoke_cells
from tests.unit.store.damage import flip_middle, names_only, truncate
from tests.unit.store.test_writer_read import records, tags


def measured(tmp_path):
    """Two smoke cells measured (VALID), and the folder of the first one's attempt."""
    layout = StoreLayout(tmp_path)
    first, second, *_ = smoke_cells()
    folder = write_ok_attempt(layout, tags(first.key, "s1-a1"), records(40), {"valid": True})
    write_ok_attempt(layout, tags(second.key, "s1-a2"), records(40), {"valid": True})
    return layout, first, second, folder


def test_bytes_flipped_in_the_middle_make_the_cell_not_done_and_name_the_file(tmp_path):
    layout, first, second, folder = measured(tmp_path)
    path = folder / "requests.parquet"
    size = path.stat().st_size
    flip_middle(path)
    assert path.stat().st_size == size
    ledger = build_ledger(tmp_path)
    assert ledger.status(first.key) != DONE and ledger.status(second.key) == DONE
    assert select([first, second], ledger, "resume", []) == [first]  # measured again
    [problem] = ledger.problems
    assert f"cell {first.key} attempt s1-a1: {path}: unreadable (checksum mismatch" in problem
    assert "requests.parquet" in ledger.states[first.key].last_error
    # Measured again: the new whole attempt makes the cell done; the damaged one is still named.
    write_ok_attempt(layout, tags(first.key, "s1-a3"), records(40), {"valid": True})
    ledger = build_ledger(tmp_path)
    assert ledger.status(first.key) == DONE and len(ledger.problems) == 1


def test_a_truncated_file_is_a_size_mismatch_and_the_cell_runs_again(tmp_path):
    _, first, second, folder = measured(tmp_path)
    truncate(folder / "summary.parquet")
    ledger = build_ledger(tmp_path)
    assert select([first, second], ledger, "resume", []) == [first]
    assert select([first, second], ledger, "failed", []) == [first]
    [problem] = ledger.problems
    assert f"cell {first.key} attempt s1-a1" in problem and "summary.parquet" in problem
    assert "size mismatch" in problem


def test_a_damaged_later_attempt_leaves_the_cell_done_and_is_named(tmp_path):
    layout, first, _, _ = measured(tmp_path)
    later = write_ok_attempt(layout, tags(first.key, "s2-b1"), records(40), {"valid": True})
    flip_middle(later / "requests.parquet")
    ledger = build_ledger(tmp_path)
    assert ledger.status(first.key) == DONE
    assert len(ledger.problems) == 1 and "attempt s2-b1" in ledger.problems[0]


def test_older_manifests_still_count_and_keep_the_footer_check(tmp_path):
    layout, first, second, folder = measured(tmp_path)
    names_only(folder / "manifest.json")  # written before sizes and checksums were recorded
    flip_middle(layout.attempt_dir(second.key, "s1-a2") / "requests.parquet")  # a new manifest, damaged
    ledger = build_ledger(tmp_path)
    assert ledger.status(first.key) == DONE and ledger.status(second.key) != DONE
    truncate(folder / "requests.parquet")
    ledger = build_ledger(tmp_path)
    assert ledger.status(first.key) != DONE
    assert any(f"{folder / 'requests.parquet'}: unreadable" in p for p in ledger.problems)


def test_sizes_only_ledger_skips_checksums(tmp_path):
    _, first, _, folder = measured(tmp_path)
    flip_middle(folder / "requests.parquet")
    assert build_ledger(tmp_path, checksums=False).status(first.key) == DONE
    assert build_ledger(tmp_path).status(first.key) != DONE


def test_an_interrupted_cell_is_pending_again_and_counted_apart(tmp_path):
    from grid.orchestrate.ledger import INTERRUPTED

    layout = StoreLayout(tmp_path)
    interrupted, failed, *_ = smoke_cells()
    folder = write_failed_attempt(layout, tags(interrupted.key, "s1-a1"), "driver stopped", "")
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    write_failed_attempt(layout, tags(failed.key, "s1-a2"), "boom", "")
    ledger = build_ledger(tmp_path)
    assert ledger.status(interrupted.key) == INTERRUPTED == "interrupted"
    assert ledger.status(failed.key) == FAILED
    assert ledger.states[interrupted.key].last_error == "driver stopped"
    assert select([interrupted, failed], ledger, "resume", []) == [interrupted, failed]
