"""Two real engines at once on one node: no port collisions, vLLM's own ports included."""

from __future__ import annotations

import os
import re
import time
import warnings

from rich.console import Console

from grid.run import run
from tests.engine.conftest import describe, engine_processes

STAMP = re.compile(r"\) (?:INFO|WARNING|ERROR) (\d\d-\d\d \d\d:\d\d:\d\d)")


def log_span(text: str) -> tuple[str, str]:
    """First and last vLLM log timestamps (MM-DD HH:MM:SS sorts as text within a year)."""
    stamps = STAMP.findall(text)
    return stamps[0], stamps[-1]


def test_two_real_engines_run_side_by_side(tmp_path):
    # cpus_per_engine=1 lets the 2-CPU local cluster hold both launches at once.
    code = run(
        [
            "experiment=smoke",
            "grid.levers=[van,van_noasync]",
            "grid.corpora=[code_complete]",
            f"paths.store={tmp_path}",
            "ray.cpus_per_engine=1",
            # The launches are what is under test, not the load: as little of it as a cell takes.
            "load.num_prompts=4",
            "load.warmup_requests=1",
            "load.concurrency=2",
            "load.max_tokens=16",
            "gates.equivalence.probe_prompts=0",
            "run.keep_invalid=true",  # 4 prompts fill no window: INVALID, and not what is tested
            # Only the two launches under test: no drift-anchor launches before and after.
            "grid.anchor.enabled=false",
        ],
        Console(file=open(os.devnull, "w")),  # noqa: SIM115
    )
    assert code == 0
    logs = sorted((tmp_path / "logs").rglob("*.log"))
    assert len(logs) == 2
    text = [log.read_text(errors="replace") for log in logs]
    assert not any("Address already in use" in t for t in text)
    ports = [t.split("--port ", 1)[1].split()[0] for t in text]
    assert ports[0] != ports[1]
    # Both engines were up at once (each started before the other stopped), so
    # their ports, vLLM's internal ones included, were held at the same time.
    first, second = (log_span(t) for t in text)
    assert first[0] < second[1] and second[0] < first[1], (first, second)
    # An engine process was seen alive right after run() returned on 2026-12-03 (2-core machine; the
    # cause is not found yet and did not show in the runs since): say what it is, as a warning in the
    # test report, then wait for the teardown a little before calling it a leak.
    if early := engine_processes():
        warnings.warn(f"engine processes alive right after run() returned:\n{describe(early)}", stacklevel=1)
    deadline = time.monotonic() + 20
    while engine_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not (left := engine_processes()), describe(left)
