"""A cell whose real engine cannot start, or dies under it, fails cleanly: outcome, manifest, no processes.

The engine's death is any of its processes: the API server, or the EngineCore below it (issue 28).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time

import psutil
from rich.console import Console

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.run import run
from grid.plan.groups import group_by_engine
from store.read import attempts, connect
from tests.closing import measured_none_failed
from tests.engine.conftest import ENGINE_MODULE, describe, engine_processes
from vocab.paths import project_path
from workers.engine import registry as engine_registry
from workers.runner import RunContext, run_group


def test_engine_that_cannot_start_fails_the_cells_and_leaves_nothing(tmp_path):
    config = to_config(compose_config(["experiment=smoke", "grid.levers=[van]"]))
    group = group_by_engine(expand(config))[0]
    broken_model = dataclasses.replace(group.spec.model, path=str(tmp_path / "no-such-model"))
    broken = dataclasses.replace(group, spec=dataclasses.replace(group.spec, model=broken_model))
    ctx = RunContext(
        "fail-session",
        tmp_path / "store",
        project_path(".cache"),
        project_path(".cache/models"),
        project_path(".cache/data"),
    )
    outcomes = run_group(broken, ctx)
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert "exited with code" in outcomes[0].error
    # vLLM's own line says why, and no retry gets past it (workers/engine/refusal.py, issue 45 item 6).
    assert "no-such-model is not a folder on this node" in outcomes[0].error, outcomes[0].error
    assert not any(o.retryable for o in outcomes)
    found, _ = attempts(tmp_path / "store")
    assert len(found) == 2 and all(a.status == "failed" for a in found)
    assert "no-such-model" in (found[0].folder / "manifest.json").read_text()
    # Nothing half-written counts as a result.
    assert (
        connect(tmp_path / "store")
        .execute("select count(*) from duckdb_views() where not internal")
        .fetchone()[0]
        == 0
    )
    assert not (left := engine_processes()), describe(left)


def test_engine_killed_during_the_measured_load_is_named_as_the_cause(tmp_path):
    """Not the follow-on symptom (URLError from the counters read): the engine's death, when, and its log."""
    overrides = ["grid.levers=[van]", "grid.corpora=[code_complete]", "load.num_prompts=200"]
    group = group_by_engine(expand(to_config(compose_config(["experiment=smoke", *overrides]))))[0]
    ctx = RunContext(
        "kill-session",
        tmp_path / "store",
        project_path(".cache"),
        project_path(".cache/models"),
        project_path(".cache/data"),
    )
    killed: dict[str, int] = {}

    def kill_when_measuring() -> None:
        deadline = time.time() + 300
        while time.time() < deadline and "pid" not in killed:
            logs = list((tmp_path / "store" / "logs").glob("*/*.log"))
            # The counters are read just before the measured load, then sampled through it.
            if logs and logs[0].read_text(errors="replace").count("GET /metrics") >= 3:
                for child in psutil.Process().children():
                    if ENGINE_MODULE in " ".join(child.cmdline()):
                        killed["pid"] = child.pid
                        child.kill()
            time.sleep(0.2)

    killer = threading.Thread(target=kill_when_measuring, daemon=True)
    killer.start()
    outcomes = run_group(group, ctx)
    killer.join(5)
    assert "pid" in killed, "the engine was never seen measuring"
    assert [o.status for o in outcomes] == ["failed"]
    error = outcomes[0].error
    cause = f"engine exited (signal 9) during the measured load: API server (pid {killed['pid']})"
    assert error.startswith(cause), error
    assert "gone; last lines of its log:" in error, error
    assert "URLError" not in error.split(";")[0]
    found, _ = attempts(tmp_path / "store")
    manifest = (found[0].folder / "manifest.json").read_text()
    assert "engine exited (signal 9) during the measured load" in manifest
    # Nothing of that engine is left: the killed API server led its session.
    left = [p for p in engine_processes() if os.getsid(p.pid) == killed["pid"]]
    assert not left, [p.pid for p in left]


def measuring(store) -> bool:
    """The first engine of the run is in its measured load: the counters read before it, then sampled."""
    logs = sorted((store / "logs").glob("*/*.log"))
    return bool(logs) and logs[0].read_text(errors="replace").count("GET /metrics") >= 3


def engine_core_below(root_pid: int) -> psutil.Process | None:
    """The API server's EngineCore: by vLLM's title, or untitled as the child it spawned (seen in CI)."""
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(root_pid).children():
            cmdline = " ".join(child.cmdline())
            if "EngineCore" in cmdline or "multiprocessing.spawn import spawn_main" in cmdline:
                return child
    return None


def test_engine_core_killed_during_the_measured_load_fails_the_cell_which_is_retried(tmp_path, local_ray):
    """kill -9 of EngineCore, not of the API server (which answers on with HTTP 500): the attempt fails
    naming EngineCore and the stage, and the driver's retry measures the cell on a fresh engine."""
    store = tmp_path / "store"
    killed: dict[str, int] = {}

    def kill_engine_core() -> None:
        deadline = time.time() + 600
        while time.time() < deadline and "pid" not in killed:
            if measuring(store):
                # This run's engine, from its record in this test's store (not any other on the machine).
                for _, record in engine_registry.read_all(engine_registry.node_dir(store)):
                    if record is not None and (core := engine_core_below(record.root.pid)) is not None:
                        killed.update(pid=core.pid, root=record.root.pid)
                        core.kill()
                        break
            time.sleep(0.2)

    killer = threading.Thread(target=kill_engine_core, daemon=True)
    killer.start()
    console = Console(record=True, width=400)
    overrides = [
        "experiment=smoke",
        f"paths.store={store}",
        "session_id=core-kill",
        "grid.levers=[van]",
        "grid.corpora=[code_complete]",
        "grid.anchor.enabled=false",
        "~grid.num_prompts.chat_bench",
        # A small load and no logprob probe: the kill and the retry are under test, not the cell's figures.
        "load.num_prompts=8",
        "load.max_tokens=32",
        "load.warmup_requests=2",
        "load.concurrency=4",
        "gates.min_window_s=1",
        "gates.min_requests=2",
        "gates.equivalence.probe_prompts=0",
        "run.keep_invalid=true",  # the failure and its retry, not the gates: INVALID must not exit 1
        "run.max_attempts=2",
    ]
    code = run(overrides, console)
    output = console.export_text()
    killer.join(5)
    assert "pid" in killed, "the engine was never seen measuring"
    found, _ = attempts(store)
    statuses = sorted(a.status for a in found)
    assert statuses == ["failed", "ok"], (statuses, output)
    error = next(a.error for a in found if a.status == "failed")
    # EngineCore first; its worker (vLLM CPU runs one below it) may be named as gone beside it.
    cause = f"engine died during the measured load: EngineCore (pid {killed['pid']})"
    assert error.startswith(cause) and " gone, API server (pid " in error, error
    assert "attempt failed" in output and cause in output, output
    assert measured_none_failed(output, 1) and "(attempts 2)" in output, output
    assert code == 0, output
    # Nothing of the first engine is left (its API server led its session).
    left = [p for p in engine_processes() if os.getsid(p.pid) == killed["root"]]
    assert not left, [p.pid for p in left]
