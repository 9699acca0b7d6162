"""Engine lifecycle against small stand-in commands (the real engine is in tests/engine)."""

import sys
import textwrap

import psutil
import pytest

from grid.errors import EngineError
from workers.engine import Engine, new_endpoint

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
        from workers.engine import Engine, new_endpoint
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
