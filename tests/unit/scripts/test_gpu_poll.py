"""scripts/gpu/poll.sh: a poll of a run still going brings back what a lapse would lose.

The device keeps a detached run only while the machine stays warm; on 2026-12-07 an API error between
two polls let it go and took a tune's finished cells with it. Each poll now returns the store's
finished files (under the name validate.sh resumes from), a tune's sizing and the compile caches.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

from vocab.paths import project_path

POLL = project_path("scripts/gpu/poll.sh")


def members(path: Path) -> set[str]:
    with tarfile.open(path) as tar:
        return {name.removeprefix("./") for name in tar.getnames()}


def running_run(home: Path) -> None:
    """A detached run in flight: its pid file, no `done`, a store with a finished table, a cell's
    temp file and a lease, a tune's sizing and a filled compile cache."""
    run = home / "detached"
    (run / "out").mkdir(parents=True)
    (run / "pid").write_text("1\n")
    (run / "run.log").write_text("phase tiny/van/code_complete/r0: measured load\n")
    store = home / "store-tune"
    for name, text in {
        "cells/part-0.parquet": "finished",
        "cells/.tmp-1234.parquet": "half-written",
        "leases/abc.json": "{}",
        "leases/.lock-abc": "",
    }.items():
        (store / name).parent.mkdir(parents=True, exist_ok=True)
        (store / name).write_text(text)
    (home / "tune-out/tiny").mkdir(parents=True)
    (home / "tune-out/tiny/sizing.json").write_text("{}")
    (run / "tree/.cache/vllm").mkdir(parents=True)
    (run / "tree/.cache/vllm/graph.bin").write_text("compiled")


def poll(home: Path, out: Path) -> str:
    env = {**os.environ, "HOME": str(home), "OUT": str(out)}
    done = subprocess.run(["bash", str(POLL), "0"], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_a_poll_of_a_running_step_returns_the_finished_store_sizing_and_caches(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    out.mkdir()
    running_run(home)
    said = poll(home, out)
    assert "still running" in said and "store-tune.tgz" in said
    assert members(out / "store-tune.tgz") >= {"store-tune/cells/part-0.parquet"}
    # What a resume must not read: a cell's half-written file and the dead driver's leases.
    assert not {m for m in members(out / "store-tune.tgz") if ".tmp-" in m or "leases" in m}
    assert "sizing.json" in members(out / "tune-out.tgz")
    assert "vllm/graph.bin" in members(out / "compile-cache.tgz")


def test_a_poll_with_nothing_started_returns_nothing(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    (home / "detached").mkdir(parents=True)
    out.mkdir()
    (home / "detached/pid").write_text("1\n")
    (home / "detached/run.log").write_text("")
    assert "still running" in poll(home, out)
    assert list(out.iterdir()) == []
