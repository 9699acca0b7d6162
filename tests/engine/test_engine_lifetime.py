"""No engine outlives its driver, even a driver killed with SIGKILL (issue 17).

The test starts `python -m grid run` (one cell, van, one real CPU engine) as a
subprocess in a session of its own, waits until the engine is serving the
cell's measured load, SIGKILLs the driver and asserts that no vLLM process of
that run (API server, EngineCore, workers) is left 30 s later. SIGKILL is the
case with no stop path at all: the engine must end through its own means
(PDEATHSIG down vLLM's tree, its guard). The orderly stops (Ctrl-C to the
process group, SIGTERM: exit codes 130 and 143, running cells recorded as
interrupted, nothing left) end the engine by the same means once the stop has
killed its actor; they are tested on the stand-in engine, a server with a
child of its own (tests/scheduling/test_stop.py), to spend the CI's
real-engine launches where only a real engine tells. The run's processes
are told apart from anyone else's by a marker in the environment the driver
passes down (driver -> raylet -> actor -> vllm serve -> EngineCore -> workers),
and by the sessions of the API servers seen while it ran.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from vocab.paths import project_path

pytestmark = pytest.mark.engine

MARKER = "LEVER_GRID_TEST_RUN"
SERVE_TIMEOUT_S = 300
LEFT_WITHIN_S = 30
ENGINE_CORE_WITHIN_S = 60


def marked(proc: psutil.Process, marker: str) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.environ().get(MARKER) == marker
    return False


def is_vllm(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return "vllm" in " ".join(proc.cmdline()).lower() and proc.status() != psutil.STATUS_ZOMBIE
    return False


def has_engine_core(proc: psutil.Process) -> bool:
    """EngineCore (or the worker below it): by the title vLLM gives it, or, where setproctitle left the
    title unset (seen in CI: the cmdline stayed `python -B -c from multiprocessing.spawn import
    spawn_main...`), as the spawned child it is. Only the API server's tree is asked."""
    with contextlib.suppress(psutil.Error):
        cmdline = " ".join(proc.cmdline())
        return "EngineCore" in cmdline or "multiprocessing.spawn import spawn_main" in cmdline
    return False


def run_processes(marker: str, sessions: set[int]) -> list[psutil.Process]:
    """Live processes of the run: its marker in their environment, or in a session of its engines."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if marked(proc, marker) or os.getsid(proc.pid) in sessions:
                found.append(proc)
    return found


def still_running(marker: str, sessions: set[int], seen: list[psutil.Process]) -> list[psutil.Process]:
    """The run's vLLM processes alive now: found afresh, or seen while it served (same pid and start)."""
    found = {p.pid: p for p in run_processes(marker, sessions) if is_vllm(p)}
    for proc in seen:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                found.setdefault(proc.pid, proc)
    return list(found.values())


def describe(procs: list[psutil.Process]) -> list[str]:
    lines = []
    for proc in procs:
        try:
            cmdline = " ".join(proc.cmdline()).strip()
            lines.append(f"{proc.pid} (ppid {proc.ppid()}, {proc.status()}): {cmdline[:90]}")
        except psutil.Error as exc:
            lines.append(f"{proc.pid}: unreadable ({type(exc).__name__})")
    return lines


def with_descendants(procs: list[psutil.Process]) -> list[psutil.Process]:
    """`procs` and every live process below them, however they are named or whatever their environment."""
    found = {proc.pid: proc for proc in procs}
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            for child in proc.children(recursive=True):
                found.setdefault(child.pid, child)
    return list(found.values())


def engine_logs(store: Path) -> str:
    """The last lines of each engine log of the run (why an engine process may be missing)."""
    tails = []
    for log in sorted((store / "logs").glob("*/*.log")):
        lines = log.read_text(errors="replace").splitlines()
        tails.append(f"--- {log.name}\n" + "\n".join(line[:200] for line in lines[-25:]))
    return "\n".join(tails)


def measuring(store: Path) -> bool:
    """The engine has served the warm-up and the client has begun reading its counters."""
    logs = list((store / "logs").glob("*/*.log"))
    return any("GET /metrics" in log.read_text(errors="replace") for log in logs)


def test_no_engine_process_outlives_its_driver_killed_with_sigkill(tmp_path):
    store = tmp_path / "store"
    marker = uuid.uuid4().hex
    driver_log = tmp_path / "driver.log"
    argv = [
        sys.executable,
        "-m",
        "grid",
        "run",
        "experiment=smoke",
        f"paths.store={store}",
        "grid.levers=[van]",
        "grid.corpora=[code_complete]",
        "grid.anchor.enabled=false",
        # Long enough that the driver is ended while the cell is measured.
        "load.num_prompts=200",
    ]
    with driver_log.open("wb") as out:
        driver = subprocess.Popen(
            argv,
            cwd=project_path("."),
            env={**os.environ, MARKER: marker},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    sessions: set[int] = set()
    engines: list[psutil.Process] = []
    try:
        deadline = time.time() + SERVE_TIMEOUT_S
        while not measuring(store):
            assert driver.poll() is None, f"driver ended early:\n{driver_log.read_text()[-3000:]}"
            assert time.time() < deadline, f"engine not serving after {SERVE_TIMEOUT_S} s"
            time.sleep(1)
        # The API server's session holds its EngineCore and workers, and so does its process tree
        # (looked for a while: a process's environment can be unreadable for a moment while it sets
        # its title, and a loaded CI machine once did not show EngineCore within 15 s).
        deadline = time.time() + ENGINE_CORE_WITHIN_S
        while True:
            engines = [p for p in run_processes(marker, sessions) if is_vllm(p)]
            sessions = {os.getsid(p.pid) for p in engines} - {os.getsid(driver.pid)}
            engines = with_descendants([p for p in run_processes(marker, sessions) if is_vllm(p)])
            if any(has_engine_core(p) for p in engines) or time.time() > deadline:
                break
            time.sleep(0.5)
        assert any(has_engine_core(p) for p in engines), (
            f"no EngineCore among the run's processes {describe(engines)}\n"
            f"driver log:\n{driver_log.read_text(errors='replace')[-2000:]}\n{engine_logs(store)}"
        )

        driver.send_signal(signal.SIGKILL)

        deadline = time.time() + LEFT_WITHIN_S
        while (left := still_running(marker, sessions, engines)) and time.time() < deadline:
            time.sleep(0.5)
        assert not left, f"engine processes left {LEFT_WITHIN_S} s after SIGKILL: {describe(left)}"
        with contextlib.suppress(subprocess.TimeoutExpired):
            driver.wait(timeout=max(1.0, deadline - time.time()))
        assert driver.poll() is not None, f"driver still running {LEFT_WITHIN_S} s after SIGKILL"
        # The engine's guard, once it finds the engine gone with its owner, drops its record.
        records = lambda: list((store / "engines").glob("*/*.json"))  # noqa: E731
        deadline = time.time() + 10
        while records() and time.time() < deadline:
            time.sleep(0.2)
        assert not records(), [r.read_text() for r in records()]
    finally:
        # Whatever the outcome, leave nothing of this run behind (our own processes, by pid).
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        run = run_processes(marker, sessions) + still_running(marker, sessions, engines)
        leftovers = list({proc.pid: proc for proc in run}.values())
        for proc in leftovers:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(leftovers, timeout=10)
