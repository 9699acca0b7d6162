"""The sweep of engines left by earlier runs: ends only what is provably theirs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

from workers.engine import registry
from workers.engine.registry import ENGINE_ID_ENV, EngineRecord, ProcessId

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]


@pytest.fixture
def started():
    procs: list[subprocess.Popen] = []

    def start(env: dict[str, str] | None = None) -> psutil.Process:
        proc = subprocess.Popen(SLEEP, env={**os.environ, **(env or {})}, start_new_session=True)
        procs.append(proc)
        return psutil.Process(proc.pid)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def dead_owner() -> ProcessId:
    """A process that ran and is gone."""
    # It waits on its stdin until its identity is read: one that exits at once can be a zombie
    # before its command line is read (psutil.ZombieProcess, seen on the CI box).
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    identity = ProcessId.of(psutil.Process(proc.pid))
    proc.communicate()
    return identity


def record_of(root: psutil.Process, owner: ProcessId, engine_id: str = "e1", **extra) -> EngineRecord:
    return EngineRecord(engine_id=engine_id, pgid=root.pid, root=ProcessId.of(root), owner=owner, **extra)


def wait_gone(proc: psutil.Process, timeout_s: float = 10) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_records_live_under_the_store_per_host(tmp_path):
    assert registry.node_dir(tmp_path) == tmp_path / "engines" / socket.gethostname()


def test_a_record_round_trips_through_json(tmp_path, started):
    root = started()
    record = record_of(root, dead_owner(), children=[ProcessId.of(root)], guard=ProcessId.of(root))
    path = registry.write(tmp_path, record)
    assert path == tmp_path / f"{root.pid}.json"
    assert registry.read_all(tmp_path) == [(path, record)]


def test_an_engine_whose_owner_died_is_ended_with_everything_carrying_its_id(tmp_path, started):
    root = started({ENGINE_ID_ENV: "e1"})
    # A process it spawned that left its group and retitled itself: found by the id in its environment.
    core = started({ENGINE_ID_ENV: "e1"})
    registry.write(tmp_path, record_of(root, dead_owner()))
    lines = registry.sweep(tmp_path)
    assert wait_gone(root) and wait_gone(core)
    assert len(lines) == 1 and str(root.pid) in lines[0] and str(core.pid) in lines[0]
    assert not list(tmp_path.glob("*.json"))


def test_an_engine_whose_owner_runs_is_left_alone(tmp_path, started):
    root = started({ENGINE_ID_ENV: "e1"})
    registry.write(tmp_path, record_of(root, ProcessId.of(psutil.Process())))
    assert registry.sweep(tmp_path) == []
    assert root.is_running()
    assert list(tmp_path.glob("*.json"))


def test_a_pid_now_used_by_another_process_is_never_killed(tmp_path, started):
    innocent = started()  # no engine id in its environment
    recorded = ProcessId.of(innocent)
    # The same pid, but the recorded process started earlier or ran another command.
    for root in (
        ProcessId(recorded.pid, recorded.create_time - 100, recorded.cmdline),
        ProcessId(recorded.pid, recorded.create_time, ["python", "-m", "vllm.entrypoints.openai.api_server"]),
    ):
        record = EngineRecord("e1", recorded.pid, root, dead_owner(), children=[root])
        registry.write(tmp_path, record)
        registry.sweep(tmp_path)
        assert innocent.is_running() and innocent.status() != psutil.STATUS_ZOMBIE
        assert not list(tmp_path.glob("*.json")), "a record of an engine that is gone is dropped"


def test_another_engines_processes_are_not_this_ones(tmp_path, started):
    other = started({ENGINE_ID_ENV: "e2"})
    root = started({ENGINE_ID_ENV: "e1"})
    registry.write(tmp_path, record_of(root, dead_owner()))
    registry.sweep(tmp_path)
    assert wait_gone(root)
    assert other.is_running() and other.status() != psutil.STATUS_ZOMBIE


def test_an_unreadable_record_is_skipped(tmp_path):
    (tmp_path / "123.json").write_text("{not json")
    assert registry.sweep(tmp_path) == []
    assert registry.sweep(tmp_path / "absent") == []


def test_an_unwritable_registry_does_not_fail_the_engine(tmp_path, started):
    (tmp_path / "engines").write_text("a file where the folder must go")
    assert registry.write(tmp_path / "engines", record_of(started(), dead_owner())) is None
