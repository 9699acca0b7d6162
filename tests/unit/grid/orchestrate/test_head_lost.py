"""A Ray head lost mid-run (issue 45 item 8): the driver ends the session itself, before Ray ends it a
minute later with its own message; the next run removes what ended sessions left under phases/.
The whole path, with a real gcs_server killed: tests/scheduling/test_head_lost.py."""

from __future__ import annotations

import io
import json
import os
import threading
import time

import pytest
from rich.console import Console

import grid.orchestrate.run as run_module
from grid.orchestrate.run import head_lost_line, leave_ray, on_head_lost
from grid.orchestrate.schedule import answers, watching_head
from grid.orchestrate.stop import Stop
from store.atomic import write_json
from store.layout import StoreLayout
from store.phases import EMPTY_FOLDER_AGE_S, PhaseBoard, phases_dir, sweep_phases


def wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_the_watch_calls_once_when_the_head_has_not_answered_for_long_enough():
    calls = []
    with watching_head(lambda *a: calls.append(a), "10.0.0.1:6379", 0.01, 0.1, probe=lambda a: False):
        assert wait_for(lambda: calls)
        time.sleep(0.2)
    assert len(calls) == 1
    address, since_s = calls[0]
    assert address == "10.0.0.1:6379" and time.time() - 5 < since_s <= time.time()


def test_the_watch_stays_quiet_while_the_head_answers_or_after_its_block():
    calls, answering = [], threading.Event()
    answering.set()
    with watching_head(lambda *a: calls.append(a), "h:1", 0.01, 0.1, probe=lambda a: answering.is_set()):
        time.sleep(0.3)
    answering.clear()  # the block is over: nothing is watched any more
    time.sleep(0.3)
    assert calls == []


def test_a_closed_port_does_not_answer():
    assert answers("127.0.0.1:1", timeout_s=1) is False
    assert answers("no port", timeout_s=1) is False


def test_the_line_says_the_head_was_lost_and_how_to_resume():
    local = head_lost_line("127.0.0.1:6379", time.time() - 12, local=True)
    assert local.startswith("the Ray head was lost (its GCS at 127.0.0.1:6379 has not answered for 12 s)")
    assert "run the same command again to resume" in local and "\n" not in local
    remote = head_lost_line("10.0.0.1:6379", time.time() - 12, local=False)
    assert "once the cluster's head is back" in remote and "resume" in remote


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_a_run_that_ends_itself_in_time_is_left_to_end_so(monkeypatch):
    stop, settled, ended = Stop(), threading.Event(), []
    settled.set()  # run_phases returned: the run's own end follows (conclude, leave_ray)
    monkeypatch.setattr(run_module, "exit_now", lambda line, code: pytest.fail("exited"))
    on_head_lost(stop, quiet(), settled, lambda: ended.append(1), local=True)("h:1", time.time() - 10)
    assert stop.head_lost and stop.cluster_gone and not ended
    assert stop.reason.startswith("the Ray head was lost (its GCS at h:1")


def test_a_run_held_in_a_call_into_ray_is_ended_by_the_watch_with_its_own_line(monkeypatch):
    stop, ended, exits = Stop(), [], []
    monkeypatch.setattr(run_module, "HEAD_GRACE_S", 0.05)
    monkeypatch.setattr(run_module, "exit_now", lambda line, code: exits.append((line, code)))
    on_head_lost(stop, quiet(), threading.Event(), lambda: ended.append(1), local=True)(
        "h:1", time.time() - 10
    )
    assert ended == [1]
    ((line, code),) = exits
    assert code == 1 and line.startswith("stopped: the Ray head was lost") and "resume" in line


def test_a_signal_stop_under_way_keeps_its_reason_and_exit_code(monkeypatch):
    stop, exits = Stop(signum=15, reason="SIGTERM received"), []
    monkeypatch.setattr(run_module, "HEAD_GRACE_S", 0.05)
    monkeypatch.setattr(run_module, "exit_now", lambda line, code: exits.append((line, code)))
    on_head_lost(stop, quiet(), threading.Event(), lambda: None, local=True)("h:1", time.time())
    assert stop.reason == "SIGTERM received" and exits == [("stopped: SIGTERM received", 143)]


def test_after_the_head_was_lost_the_closing_line_stays_the_last(monkeypatch, capsys):
    exits = []
    monkeypatch.setattr("grid.orchestrate.schedule.started_here", lambda: True)
    monkeypatch.setattr(os, "_exit", exits.append)
    leave_ray(Stop(reason="the Ray head was lost", cluster_gone=True, head_lost=True), 1)
    assert exits == [1] and capsys.readouterr().err == ""
    leave_ray(Stop(reason="SIGTERM received", signum=15, cluster_gone=True), 143)
    assert exits == [1, 143] and "the local Ray cluster was stopped too" in capsys.readouterr().err


def test_the_end_written_alone_has_ended_at_and_no_phases_folder(tmp_path):
    from grid.orchestrate.run import end_session
    from grid.orchestrate.session import fingerprint
    from workers.context import RunContext

    ctx = RunContext("s-lost", tmp_path, tmp_path / "cache", tmp_path / "models", tmp_path / "data")
    layout, session = StoreLayout(tmp_path), fingerprint("s-lost", "hash")
    write_json(layout.session_file("s-lost"), session)
    PhaseBoard(tmp_path, "s-lost", "engine-1").say("tiny/van/code_complete/r0", "measured load")
    end_session(layout, session, ctx)
    assert json.loads(layout.session_file("s-lost").read_text())["ended_at"]
    assert not phases_dir(tmp_path, "s-lost").exists()


def test_the_next_run_removes_what_ended_or_killed_sessions_left_and_nothing_live(tmp_path):
    layout = StoreLayout(tmp_path)
    for sid, ended in (("s-ended", "2026-12-06T23:39:04+00:00"), ("s-live", None), ("s-me", None)):
        write_json(layout.session_file(sid), {"session_id": sid, "ended_at": ended})
        PhaseBoard(tmp_path, sid, "engine-1").say("tiny/van/code_complete/r0", "measured load")
    old_empty, new_empty = phases_dir(tmp_path, "s-killed"), phases_dir(tmp_path, "s-between")
    for folder in (old_empty, new_empty):
        folder.mkdir(parents=True)
    then = time.time() - EMPTY_FOLDER_AGE_S - 60
    os.utime(old_empty, (then, then))
    assert sweep_phases(tmp_path, keep="s-me") == ["s-ended", "s-killed"]
    assert not phases_dir(tmp_path, "s-ended").exists() and not old_empty.exists()
    assert list(phases_dir(tmp_path, "s-live").glob("*.json")) and new_empty.is_dir()
    assert list(phases_dir(tmp_path, "s-me").glob("*.json"))
