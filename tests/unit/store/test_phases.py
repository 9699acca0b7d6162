"""What each running engine is doing (store/phases.py): written by the worker, read by the driver."""

from __future__ import annotations

from store.phases import PhaseBoard, clear_phases, phases_dir, read_phases


def test_each_engine_shows_its_latest_phase_until_it_clears_it(tmp_path):
    one, two = PhaseBoard(tmp_path, "s1", "eng-a"), PhaseBoard(tmp_path, "s1", "eng-b")
    one.say("tiny/van/code_complete/r0", "engine start")
    two.say("tiny/suffix-k8/code_complete/r0", "engine start")
    one.say("tiny/van/code_complete/r0", "warm-up")
    shown = {(p.label, p.phase) for p in read_phases(tmp_path, "s1")}
    assert shown == {
        ("tiny/van/code_complete/r0", "warm-up"),
        ("tiny/suffix-k8/code_complete/r0", "engine start"),
    }
    one.clear()
    assert [p.label for p in read_phases(tmp_path, "s1")] == ["tiny/suffix-k8/code_complete/r0"]
    assert read_phases(tmp_path, "another-session") == []


def test_a_garbled_or_half_written_file_is_skipped_not_raised(tmp_path):
    PhaseBoard(tmp_path, "s1", "eng-a").say("a", "measured load")
    (phases_dir(tmp_path, "s1") / "eng-b.json").write_text('{"label": "b", "pha')
    (phases_dir(tmp_path, "s1") / "eng-c.json").write_text('{"label": "c"}')
    assert [(p.label, p.phase) for p in read_phases(tmp_path, "s1")] == [("a", "measured load")]


def test_a_store_that_refuses_the_write_loses_the_line_not_the_cell(tmp_path):
    (tmp_path / "phases").write_text("a file where the folder should be")
    PhaseBoard(tmp_path, "s1", "eng-a").say("a", "warm-up")  # no exception
    assert read_phases(tmp_path, "s1") == []


def test_clearing_the_session_removes_its_folder(tmp_path):
    PhaseBoard(tmp_path, "s1", "eng-a").say("a", "warm-up")
    PhaseBoard(tmp_path, "s2", "eng-a").say("b", "warm-up")
    clear_phases(tmp_path, "s1")
    assert not phases_dir(tmp_path, "s1").exists()
    assert [p.label for p in read_phases(tmp_path, "s2")] == ["b"]
