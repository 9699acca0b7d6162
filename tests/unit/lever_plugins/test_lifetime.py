"""The `lifetime` plugin: with LEVER_DIE_WITH_PARENT=1 every process of the engine dies with its parent.

Each case runs a small process tree in a subprocess: a "server" that loads the
plugin (as vLLM does in each process), a "core" it starts (forked, as vLLM's
default on CPU, or spawned, as on GPU and under Ray), and a "worker" the core
forks. The server is then SIGKILLed, as Ray kills a dying actor's direct child:
the core and the worker must follow it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

TREE = textwrap.dedent(
    """
    import json, multiprocessing, os, sys, time
    from lever_plugins import lifetime

    def worker():
        time.sleep(600)

    def core(pid_file):
        lifetime.register()  # vLLM loads its plugins in every process; a no-op after a fork
        child = multiprocessing.get_context("fork").Process(target=worker, daemon=False)
        child.start()
        with open(pid_file, "w") as out:
            json.dump({"core": os.getpid(), "worker": child.pid, "signal": lifetime.death_signal()}, out)
        time.sleep(600)

    if __name__ == "__main__":
        lifetime.register()
        method, pid_file = sys.argv[1], sys.argv[2]
        multiprocessing.get_context(method).Process(target=core, args=(pid_file,)).start()
        time.sleep(600)
    """
)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pid: int, timeout_s: float = 10) -> bool:
    deadline = time.time() + timeout_s
    while not gone(pid) and time.time() < deadline:
        time.sleep(0.05)
    return gone(pid)


def run_tree(tmp_path, method: str, flag: str) -> tuple[subprocess.Popen, dict[str, int]]:
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    pid_file = tmp_path / "pids.json"
    server = subprocess.Popen(
        [sys.executable, str(script), method, str(pid_file)],
        env={**os.environ, "LEVER_DIE_WITH_PARENT": flag},
    )
    deadline = time.time() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
        time.sleep(0.05)
    return server, json.loads(pid_file.read_text())


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_every_process_dies_with_its_parent(tmp_path, method):
    server, pids = run_tree(tmp_path, method, "1")
    try:
        assert pids["signal"] == 9
        server.kill()
        server.wait()
        assert wait_gone(pids["core"]), "the core outlived the server"
        assert wait_gone(pids["worker"]), "the worker outlived the core"
    finally:
        for pid in (pids["core"], pids["worker"]):
            if not gone(pid):
                psutil.Process(pid).kill()


def test_without_the_switch_nothing_changes(tmp_path):
    server, pids = run_tree(tmp_path, "fork", "0")
    try:
        assert pids["signal"] == 0
        server.kill()
        server.wait()
        time.sleep(1)
        assert not gone(pids["core"]), "without LEVER_DIE_WITH_PARENT=1 the plugin must not act"
    finally:
        for pid in (pids["core"], pids["worker"]):
            if not gone(pid):
                psutil.Process(pid).kill()


def test_the_server_keeps_the_death_signal_the_harness_gave_it():
    code = textwrap.dedent(
        """
        import signal
        from lever_plugins import lifetime
        lifetime._prctl()(lifetime.PR_SET_PDEATHSIG, int(signal.SIGTERM))
        lifetime.register()
        assert lifetime.death_signal() == signal.SIGTERM, lifetime.death_signal()
        """
    )
    env = {**os.environ, "LEVER_DIE_WITH_PARENT": "1"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
