"""A cell whose real engine cannot start fails cleanly: outcome, manifest, no processes."""

from __future__ import annotations

import dataclasses
import os
import threading
import time

import psutil

from grid.compose import compose_config
from grid.expand import expand, to_config
from grid.plan import group_by_engine
from store.read import attempts, connect
from tests.engine.conftest import ENGINE_MODULE, engine_processes
from vocab.paths import project_path
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
    assert not engine_processes()


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
    cause = "engine exited (signal 9) during the measured load; last lines of its log:"
    assert error.startswith(cause), error
    assert "URLError" not in error.split(";")[0]
    found, _ = attempts(tmp_path / "store")
    manifest = (found[0].folder / "manifest.json").read_text()
    assert "engine exited (signal 9) during the measured load" in manifest
    # Nothing of that engine is left: the killed API server led its session.
    left = [p for p in engine_processes() if os.getsid(p.pid) == killed["pid"]]
    assert not left, [p.pid for p in left]
