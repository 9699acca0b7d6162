"""Resume: a cell measured INVALID runs again unless run.keep_invalid."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grid.cli.status import Named, invalid_words
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.ledger import (
    DAMAGED,
    DONE,
    FAILED,
    INTERRUPTED,
    INVALID,
    PENDING,
    CellState,
    Ledger,
    build_ledger,
    resume_fate,
    select,
)
from store.layout import StoreLayout
from store.writer import write_failed_attempt, write_ok_attempt
from tests.unit.store.test_writer_read import records, tags


def smoke_cells():
    return expand(to_config(compose_config(["experiment=smoke"])))


def test_invalid_cells_run_again_on_resume_unless_kept(tmp_path):
    layout = StoreLayout(tmp_path)
    ok, invalid, failed, pending = smoke_cells()
    write_ok_attempt(layout, tags(ok.key, "a1"), records(3), {"output_tok_per_s": 1.0, "valid": True})
    write_ok_attempt(layout, tags(invalid.key, "a2"), records(3), {"output_tok_per_s": 1.0, "valid": False})
    write_failed_attempt(layout, tags(failed.key, "a3"), "boom", "")
    ledger = build_ledger(tmp_path)
    assert [ledger.status(c.key) for c in (ok, invalid, failed, pending)] == [DONE, INVALID, FAILED, PENDING]
    cells = [ok, invalid, failed, pending]
    assert select(cells, ledger, "resume", []) == [invalid, failed, pending]
    assert select(cells, ledger, "resume", [], keep_invalid=True) == [failed, pending]
    assert select(cells, ledger, "failed", []) == [invalid, failed]


def test_a_valid_attempt_after_an_invalid_one_makes_the_cell_done(tmp_path):
    layout = StoreLayout(tmp_path)
    cell = smoke_cells()[0]
    write_ok_attempt(layout, tags(cell.key, "a1"), records(3), {"valid": False})
    write_ok_attempt(layout, tags(cell.key, "a2"), records(3), {"valid": True})
    assert build_ledger(tmp_path).status(cell.key) == DONE


def test_manifests_written_before_the_verdict_read_it_from_the_summary(tmp_path):
    layout = StoreLayout(tmp_path)
    cell = smoke_cells()[0]
    folder = write_ok_attempt(layout, tags(cell.key, "a1"), records(3), {"valid": False})
    manifest = folder / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["valid"]
    data["files"] = [f["name"] for f in data["files"]]  # as written then: names, no sizes or checksums
    manifest.write_text(json.dumps(data))
    assert build_ledger(tmp_path).status(cell.key) == INVALID
    pq.write_table(pa.table({"valid": [True]}), folder / "summary.parquet")
    assert build_ledger(tmp_path).status(cell.key) == DONE


def test_an_invalid_cell_is_rerun_at_most_invalid_reruns_times_then_kept_and_named(tmp_path):
    # On the H200 (2026-12-01) chat_bench's van cells were INVALID on every run (78 prompts
    # cannot fill a 5 s window at 10k tok/s): without a cap each resume measured them again.
    from grid.orchestrate.ledger import kept_invalid

    layout = StoreLayout(tmp_path)
    cell, other = smoke_cells()[:2]
    write_ok_attempt(layout, tags(cell.key, "a1"), records(3), {"valid": False})
    ledger = build_ledger(tmp_path)
    assert select([cell], ledger, "resume", [], invalid_reruns=1) == [cell]  # one rerun left
    # A run's own reruns of a cell INVALID for the host's sake (run.host_invalid_reruns) count once.
    write_ok_attempt(layout, tags(cell.key, "a1b"), records(3), {"valid": False})
    assert build_ledger(tmp_path).invalid_runs(cell.key) == 1
    write_ok_attempt(layout, {**tags(cell.key, "a2"), "session_id": "s2"}, records(3), {"valid": False})
    ledger = build_ledger(tmp_path)
    assert ledger.invalid_runs(cell.key) == 2
    todo = select([cell, other], ledger, "resume", [], invalid_reruns=1)
    assert todo == [other]
    assert kept_invalid([cell, other], ledger, todo) == [cell]
    assert select([cell], ledger, "resume", [], invalid_reruns=None) == [cell]  # no cap
    assert select([cell], ledger, "resume", [cell.label], invalid_reruns=1) == [cell]  # forced


def test_attempts_written_within_one_second_keep_their_order(tmp_path):
    # A failure and the interrupted attempt that supersedes it (workers/runner.record_interrupted),
    # written back to back; their ids sort the other way round, so only written_at can tell the ledger
    # which came last. With whole-second stamps the id decided, and the cell read as failed.
    layout = StoreLayout(tmp_path)
    cell = smoke_cells()[0]
    write_failed_attempt(layout, tags(cell.key, "s1-zz"), "engine exited (signal 9) during the warm-up", "")
    write_failed_attempt(layout, tags(cell.key, "s1-aa"), "interrupted: SIGINT received", "", "interrupted")
    state = build_ledger(tmp_path).states[cell.key]
    assert (state.status, state.last_error) == (INTERRUPTED, "interrupted: SIGINT received")


def fake_ledger(status: str, invalid_runs: int) -> Ledger:
    key = smoke_cells()[0].key
    states = {} if status == PENDING else {key: CellState(key, status, attempts=1, invalid_runs=invalid_runs)}
    return Ledger(states, [])


@pytest.mark.parametrize("status", [DONE, INVALID, FAILED, INTERRUPTED, DAMAGED, PENDING])
@pytest.mark.parametrize(("keep_invalid", "invalid_reruns"), [(False, None), (True, None), (False, 1)])
@pytest.mark.parametrize("invalid_runs", [1, 2])
def test_status_words_and_select_agree_on_what_resume_measures_again(
    status, keep_invalid, invalid_reruns, invalid_runs
):
    """One rule (measured_again) for run's selection and for what run and status say resume does."""
    cell = smoke_cells()[0]
    ledger = fake_ledger(status, invalid_runs if status == INVALID else 0)
    chosen = select([cell], ledger, "resume", [], keep_invalid, invalid_reruns) == [cell]
    words = resume_fate(status, ledger.invalid_runs(cell.key), keep_invalid, invalid_reruns)
    assert (words == "measured again on resume") == chosen
    used_up = invalid_reruns == 1 and invalid_runs == 2
    assert chosen == (status != DONE and not (status == INVALID and (keep_invalid or used_up)))
    if status == INVALID:  # status's count line says the same (grid/cli/status.py invalid_words)
        named = [Named(cell.key, cell.label)]
        assert invalid_words(ledger, named, keep_invalid, invalid_reruns) == words
    # run.mode=failed: the not-done states and INVALID as under resume; never a pending or done cell.
    again = select([cell], ledger, "failed", [], keep_invalid, invalid_reruns) == [cell]
    assert again == (chosen and status != PENDING)
    assert select([cell], ledger, "all", [], keep_invalid, invalid_reruns) == [cell]


def test_failed_interrupted_and_damaged_share_the_words_status_prints_after_them():
    assert {resume_fate(status) for status in (FAILED, INTERRUPTED, DAMAGED)} == {"measured again on resume"}
    assert resume_fate(DONE) == "kept"
