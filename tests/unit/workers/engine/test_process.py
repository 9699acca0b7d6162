"""Engine lifecycle against small stand-in commands (the real engine is in tests/engine)."""

import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from vocab.errors import EngineError
from workers.engine.process import Engine, new_endpoint

# Spawns a grandchild in its own session (as some engines do), then hangs without serving.
HANG_WITH_CHILD = textwrap.dedent(
    """
    import subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    print("started", flush=True)
    time.sleep(600)
    """
)


def engine(tmp_path, code, timeout_s):
    return Engine(
        [sys.executable, "-c", code],
        {},
        new_endpoint(),
        tmp_path / "engine.log",
        start_timeout_s=timeout_s,
        stop_timeout_s=5,
    )


def test_exit_before_ready_fails_fast_with_log_tail(tmp_path):
    eng = engine(tmp_path, "import sys; print('CUDA out of memory'); sys.exit(3)", timeout_s=60)
    with pytest.raises(EngineError, match=r"(?s)exited with code 3.*CUDA out of memory"):
        eng.start()


def test_hang_at_start_times_out_and_kills_the_whole_tree(tmp_path):
    eng = engine(tmp_path, HANG_WITH_CHILD, timeout_s=3)
    with pytest.raises(EngineError, match="not ready after 3 s"):
        eng.start()
    assert eng.pids_seen, "the grandchild should have been seen"
    for pid in [eng.proc.pid, *eng.pids_seen]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_endpoints_get_distinct_ports_and_keys():
    a, b = new_endpoint(), new_endpoint()
    assert a.host == "127.0.0.1"
    assert a.api_key != b.api_key


def test_engine_dies_when_its_parent_is_killed(tmp_path):
    """A SIGKILLed parent (e.g. a Ray actor) must not leave its engine running."""
    import signal
    import subprocess
    import time

    pid_file = tmp_path / "engine.pid"
    parent_code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from workers.engine.process import Engine, new_endpoint
        eng = Engine([sys.executable, "-c", "import time; time.sleep(600)"], {{}}, new_endpoint(),
                     Path({str(tmp_path / "e.log")!r}), start_timeout_s=600)
        import threading
        threading.Thread(target=eng.start, daemon=True).start()
        while eng.proc is None:
            time.sleep(0.05)
        Path({str(pid_file)!r}).write_text(str(eng.proc.pid))
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code])
    deadline = time.time() + 30
    while not pid_file.exists() and time.time() < deadline:
        time.sleep(0.1)
    engine_pid = int(pid_file.read_text())
    assert psutil.pid_exists(engine_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    try:
        engine = psutil.Process(engine_pid)
    except psutil.NoSuchProcess:
        return  # already gone and reaped
    _, alive = psutil.wait_procs([engine], timeout=10)
    assert not alive


# Stands in for vllm serve: a child in the same session (as EngineCore), then serves nothing.
WITH_CORE = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    core = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(sys.argv[1]).write_text(str(core.pid))
    time.sleep(600)
    """
)

# Owns the engine, as a Ray actor does; writes the root's pid once it runs.
OWNER = textwrap.dedent(
    """
    import sys, threading, time
    from pathlib import Path
    from workers.engine.process import Engine, new_endpoint
    root, registry, code, core_file = (Path(a) for a in sys.argv[1:5])
    eng = Engine([sys.executable, "-c", code.read_text(), str(core_file)], {}, new_endpoint(),
                 root.with_suffix(".log"), start_timeout_s=600, registry_dir=registry)
    threading.Thread(target=eng.start, daemon=True).start()
    while eng.record is None or eng.record.guard is None:
        time.sleep(0.05)
    root.write_text(str(eng.proc.pid))
    time.sleep(600)
    """
)


def wait_for_file(path, timeout_s=30):
    deadline = time.time() + timeout_s
    while not (path.exists() and path.read_text()) and time.time() < deadline:
        time.sleep(0.05)
    return int(path.read_text())


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_the_whole_engine_ends_when_its_owner_and_api_server_are_killed(tmp_path):
    """Ray SIGKILLs a dying actor's direct child (the API server); the guard ends what is left."""
    code = tmp_path / "engine.py"
    code.write_text(WITH_CORE)
    root_file, core_file, registry = tmp_path / "root.pid", tmp_path / "core.pid", tmp_path / "engines"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(root_file), str(registry), str(code), str(core_file)]
    )
    try:
        root, core = wait_for_file(root_file), wait_for_file(core_file)
        assert list(registry.glob("*.json")), "the engine is recorded while it runs"
        psutil.Process(root).kill()
        owner.kill()
        owner.wait()
        deadline = time.time() + 10
        while not gone(core) and time.time() < deadline:
            time.sleep(0.05)
        assert gone(core), "the engine's child outlived its owner"
        assert gone(root)
        while list(registry.glob("*.json")) and time.time() < deadline:
            time.sleep(0.1)
        assert not list(registry.glob("*.json")), "the guard removes the record of the engine it ended"
    finally:
        for pid_file in (core_file, root_file):
            if pid_file.exists() and pid_file.read_text() and not gone(int(pid_file.read_text())):
                psutil.Process(int(pid_file.read_text())).kill()


def test_a_stopped_engine_leaves_no_record_and_no_guard(tmp_path):
    eng = Engine(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        {},
        new_endpoint(),
        tmp_path / "engine.log",
        start_timeout_s=1,
        stop_timeout_s=5,
        registry_dir=tmp_path / "engines",
    )
    with pytest.raises(EngineError, match="not ready after 1 s"):
        eng.start()
    assert eng.record is not None and eng.record.guard is not None
    assert not list((tmp_path / "engines").glob("*.json"))
    assert eng.record.guard.find() is None


def test_every_engine_process_carries_the_engine_id(tmp_path):
    eng = engine(tmp_path, "import time; time.sleep(600)", timeout_s=1)
    env = eng.launch_env()
    assert env["LEVER_GRID_ENGINE_ID"] == eng.engine_id
    assert env["LEVER_DIE_WITH_PARENT"] == "1"  # the lifetime plugin's switch
    assert env["SPT_NOENV"] == "1"  # process titles keep /proc/<pid>/environ readable
