"""The README's cluster launch: the grid as a Ray Job against a cluster started with `ray start`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from store.read import attempts
from tests.closing import measured_none_failed
from tests.scheduling.conftest import stub_overrides
from vocab.paths import PROJECT_ROOT
from workers.engine.process import free_port

RAY = str(Path(sys.executable).with_name("ray"))
# `ray job submit` sends the token (~/.ray/auth_token) only in token mode; the
# loopback switch from tests/conftest.py is inherited, so the head binds 127.0.0.1.
CLI_ENV = {**os.environ, "RAY_AUTH_MODE": "token"}


class Head:
    """A one-node cluster started with `ray start --head`, as an operator would."""

    def __init__(self) -> None:
        self.port, self.dashboard_port, self.agent_port = free_port(), free_port(), free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.dashboard = f"http://127.0.0.1:{self.dashboard_port}"

    def ray(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([RAY, *args], capture_output=True, text=True, timeout=timeout_s, env=CLI_ENV)

    def start(self) -> None:
        started = self.ray(
            "start", "--head", f"--port={self.port}", "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}",
            f"--dashboard-agent-listen-port={self.agent_port}", "--num-cpus=4", "--num-gpus=2",
            "--disable-usage-stats",
        )  # fmt: skip
        assert started.returncode == 0, started.stderr[-2000:]

    def stop(self) -> None:
        """Stop this head's processes only: `ray stop` would stop every cluster on the machine."""
        marks = (f"127.0.0.1:{self.port}", f"gcs_server_port={self.port}")
        procs = [p for p in psutil.process_iter(["cmdline"])
                 if any(m in " ".join(p.info["cmdline"] or []) for m in marks)]  # fmt: skip
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.terminate()
        # Some of them sit out SIGTERM (the teardown waited all 15 s it once gave them, 2026-12-06):
        # 5 s, then SIGKILL.
        _, alive = psutil.wait_procs(procs, timeout=5)
        for proc in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()


@pytest.fixture
def head():
    cluster = Head()
    cluster.start()
    yield cluster
    cluster.stop()


def submit_when_ready(head: Head, argv: list[str], wait_s: float = 90) -> subprocess.CompletedProcess:
    """Submit; retry while the head's job agent is still starting (it answers 500 then)."""
    deadline = time.time() + wait_s
    while True:
        done = head.ray(*argv, timeout_s=300)
        if "No available agent" not in done.stdout + done.stderr or time.time() > deadline:
            return done
        time.sleep(2)


def test_grid_runs_as_a_ray_job_and_resumes(head, inputs):
    # Inside the job ray.init() joins the cluster (Ray sets RAY_ADDRESS), so
    # ray.address stays null. PYTHONPATH only lets the stand-in engine import.
    overrides = [
        o for o in stub_overrides(inputs, head, "ray.cpus_per_engine=1") if not o.startswith("ray.address")
    ]
    runtime_env = json.dumps({"py_executable": sys.executable, "env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}})
    argv = ["job", "submit", "--address", head.dashboard, "--runtime-env-json", runtime_env, "--",
            sys.executable, "-m", "grid", "run", *overrides]  # fmt: skip
    first = submit_when_ready(head, argv)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert measured_none_failed(first.stdout, 4), first.stdout[-3000:]
    found, _ = attempts(inputs / "store")
    assert sorted(a.status for a in found) == ["ok"] * 4
    again = submit_when_ready(head, argv)
    assert again.returncode == 0
    assert "0 of 4 cells to run" in again.stdout
