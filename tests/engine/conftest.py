"""Real-engine tests: the CPU build of vLLM serving SmolLM2 (run `make assets` first).

One grid run (2 engines x 2 corpora through a local Ray cluster) is shared by
the whole module; each engine costs ~1 minute to start on a 2-core machine.
"""

from __future__ import annotations

import os

import psutil
import pytest

from vocab.paths import project_path

ENGINE_MODULE = "vllm.entrypoints"


def engine_processes() -> list[psutil.Process]:
    """Running processes that are (or were started by) a vLLM server."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if ENGINE_MODULE in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def describe(procs: list[psutil.Process]) -> str:
    """Each process as a leak report needs it: who started it, when, in which session, as which engine."""
    lines = []
    for proc in procs:
        try:
            parent = psutil.Process(proc.ppid())
            parent_cmd = " ".join(parent.cmdline())[:120]
        except psutil.Error:
            parent_cmd = "?"
        try:
            engine_id = proc.environ().get("LEVER_GRID_ENGINE_ID")
            lines.append(
                f"pid {proc.pid} ({proc.status()}, started {proc.create_time():.2f}, "
                f"sid {os.getsid(proc.pid)}, pgid {os.getpgid(proc.pid)}, engine id {engine_id}) "
                f"ppid {proc.ppid()} [{parent_cmd}]: " + " ".join(proc.cmdline())[:200]
            )
        except (psutil.Error, OSError) as exc:
            lines.append(f"pid {proc.pid}: gone while described ({exc})")
    return "\n".join(lines)


@pytest.fixture(scope="session", autouse=True)
def _assets_ready():
    if not (project_path(".cache/models/SmolLM2-135M-Instruct") / "config.json").is_file():
        pytest.fail("SmolLM2 is not converted; run `make assets` (make test does it)")


@pytest.fixture(scope="package")
def local_ray():
    """One local Ray cluster for this directory's in-process grid runs, started as a run starts its own
    (grid/orchestrate/schedule.py: connect). A run joins a caller's Ray and leaves it up (run.py:
    leave_ray), so the five runs here start one cluster instead of five (~7 s and a few core-seconds
    each on the 2-core box); the drivers run as subprocesses (lifetime, README) start their own. Package
    scope: it stops after tests/engine, not at the end of the stream."""
    from grid.orchestrate.schedule import connect, disconnect

    connect("local")
    yield
    disconnect()
