"""The engine-starvation gate on the real CPU engine (issue 27 item 3): one engine, two cells.

The first cell runs as the machine is (measured again, up to CALM_TRIES times, where the box
itself starved it); the second with busy loops pinned onto the engine's own cores for the whole
cell. The first must pass the gate; the second must fail it, be INVALID, and say why.
Both record the CPU sets, and on this 2-core machine that nothing was pinned and why.

The hogged cell's verdict must not hang on where the scheduler puts the hogs
(issue 45 item 7: hogs pinned to the engine's whole set, one a core, left the
starved cell passing on a 2-core box): each of EngineCore's CPUs gets hogs of
its own, pinned to that one CPU, more of them than the engine has threads to
run there, and the placement is checked before the cell is judged. A placement
that could not be made is reported as a skip, never judged as the gate's fault.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from benchmarks.host_contention import renice_tree, smoke_cell, smoke_engine, start_hogs, stop_hogs
from workers.runner import engine_processes, run_cell
from workers.signals.host import cpu_list

OVERRIDES = [
    "grid.corpora=[code_complete]",
    # Small: the starved cell runs at a fraction of the unloaded one's speed (3.5 min at 16 x 48 in CI).
    "load.num_prompts=8",
    "load.max_tokens=32",
    "load.concurrency=4",
    "load.warmup_requests=2",
    "load.allow_repeats=true",
    "gates.min_window_s=1",
    "gates.min_requests=2",
    # 8 prompts at concurrency 4 hold ~50% of it (ramp and drain are most of so short a window):
    # the concurrency gate is not what this test is about, the starvation gate is.
    "gates.min_concurrency_held=0.25",
    "gates.equivalence.probe_prompts=0",
]
# Busy loops per CPU of EngineCore's, each pinned to that one CPU and above the engine's
# priority: a neighbour that takes its cores (docs/benchmarks/2026-12-03-cpu-crosscheck.md
# has what they did). One a core spread over the whole set read 0.94 on 2026-12-05 but let
# the cell pass on another 2-core box (issue 45 item 7): the scheduler may leave a core to
# the engine. Two on each CPU leave EngineCore at most a third of any of its CPUs even
# where priorities cannot be raised (nice 0, one autogroup each: wait share >= 0.67
# against the gate's 0.25), and ~1/7 with them (hogs at -15 against the engine's -10).
HOGS_PER_CPU = 2
HOG_NICE = -15
# The engine and this client run above other tenants of the shared test machine
# (their tests and engines at nice 0), so the unloaded cell is what a dedicated
# node would read: its own threads contending among themselves on 2 cores
# (0.099-0.118 shielded, 0.34-0.68 unshielded on this busy box, 2026-12-03).
ENGINE_NICE = -10
# The unloaded cell is measured up to this many times until it passes the starvation gate, as
# `grid run` measures a cell the host made INVALID again (run.host_invalid_reruns): the box, not
# the gate, can starve it. A gate that always read starvation still fails every try.
CALM_TRIES = 3


@pytest.fixture(scope="module")
def cells():
    group, cell = smoke_cell(OVERRIDES)
    ctx, engine = smoke_engine(group, OVERRIDES, Path(tempfile.mkdtemp(prefix="starvation-")), "starvation")
    with engine:
        core = next(p for p in engine_processes(engine) if p.role == "EngineCore")
        shielded = os.geteuid() == 0
        if shielded:
            try:
                renice_tree([p.pid for p in engine_processes(engine)], ENGINE_NICE)
            except PermissionError:  # root without CAP_SYS_NICE (a container): run as the machine is
                shielded = False
        calm_tries = []
        for _ in range(CALM_TRIES):  # as `grid run` measures a cell the host made INVALID again
            _, calm, _ = run_cell(cell, engine, ctx)
            calm_tries.append(calm)
            if calm["gate_engine_not_starved"]:
                break
        # Where the cell left the engine: its own cores once pinned (>= 4 cores), else all of them.
        engine_cpus = os.sched_getaffinity(core.pid)
        nice = HOG_NICE if shielded else 0
        hogged = thread_cpus(core.pid)
        hogs = [hog for cpu in sorted(hogged) for hog in start_hogs(HOGS_PER_CPU, {cpu}, nice)]
        try:
            problem = placement_problem(core.pid, hogs, nice)
            _, starved, _ = run_cell(cell, engine, ctx)
            # The placement as the cell ended (the cell pins the engine's tree again where it can).
            problem = problem or placement_problem(core.pid, hogs, nice)
        finally:
            stop_hogs(hogs)
            if shielded:
                renice_tree([], 0)  # this process's threads back to the default
    for name, summary in (("unloaded", calm), ("hogged", starved)):
        keys = ("engine_wait_share", "output_tok_per_s", "host_loadavg_1m", "stall_max_s", "stall_limit_s")
        shown = {k: summary.get(k) for k in keys}
        print(f"\n{name}: {shown}")
    print(f"hogs: {len(hogs)} on CPUs {cpu_list(hogged)}, placement: {problem or 'as planned'}")
    for n, tried in enumerate(calm_tries[:-1], start=1):
        print(f"unloaded try {n} of {CALM_TRIES}: INVALID ({tried['invalid_reasons']}), measured again")
    return calm, starved, engine_cpus, problem


def thread_cpus(pid: int) -> set[int]:
    """Every CPU any thread of `pid` may run on (a thread can carry an affinity of its own)."""
    cpus: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):
            cpus |= os.sched_getaffinity(int(task.name))
    return cpus


def placement_problem(core_pid: int, hogs: list[subprocess.Popen[bytes]], nice: int) -> str | None:
    """Why the hogs do not hold every CPU EngineCore's threads may use, HOGS_PER_CPU on each at
    priority `nice`; None when they do."""
    per_cpu: dict[int, int] = {}
    for hog in hogs:
        try:
            cpus = os.sched_getaffinity(hog.pid)
            hog_nice = os.getpriority(os.PRIO_PROCESS, hog.pid)
        except ProcessLookupError:
            return f"hog {hog.pid} has ended"
        if hog.poll() is not None:
            return f"hog {hog.pid} has ended"
        if len(cpus) != 1:
            return f"hog {hog.pid} may run on CPUs {cpu_list(cpus)}, not one"
        if hog_nice > nice:
            return f"hog {hog.pid} runs at nice {hog_nice}, below the planned {nice}"
        per_cpu[next(iter(cpus))] = per_cpu.get(next(iter(cpus)), 0) + 1
    short = sorted(cpu for cpu in thread_cpus(core_pid) if per_cpu.get(cpu, 0) < HOGS_PER_CPU)
    if short:
        return f"EngineCore may run on CPUs {cpu_list(set(short))} with fewer than {HOGS_PER_CPU} hogs each"
    return None


def test_a_cell_without_a_hog_passes_the_starvation_gate(cells):
    calm, _, _, _ = cells
    assert calm["engine_wait_share"] is not None
    assert calm["gate_engine_not_starved"] is True, calm["invalid_reasons"]
    # Other gates are the box's, not this test's: CI's fresh clone (2026-12-07, load average 53)
    # found three unloaded cells in a row unstarved (wait share ~0.10) and INVALID by the client's
    # event-loop lag alone (p99 27-45 ms > 20 ms). Whatever made it INVALID, it was not starvation.
    assert "starved" not in (calm["invalid_reasons"] or ""), calm["invalid_reasons"]


def test_a_hog_on_the_engines_cores_makes_the_cell_invalid_and_says_why(cells):
    calm, starved, _, problem = cells
    if problem:
        pytest.skip(f"the hogs could not be placed on EngineCore's CPUs, the gate is not judged: {problem}")
    assert starved["gate_engine_not_starved"] is False
    assert starved["valid"] is False
    assert "engine host threads starved: EngineCore waited for a core" in starved["invalid_reasons"]
    assert starved["engine_wait_share"] > calm["engine_wait_share"]
    # Not the involuntary switches: a starved engine runs less and is switched out less often
    # (98/s starved against 356/s unloaded, 2026-12-03), so they cannot judge starvation. Nor the
    # throughput: 8 prompts of 32 tokens on a box shared with the other test stream put the two
    # cells' tok/s within noise of each other (CI stop 43: 21.58 hogged against 21.55 unloaded).
    # The wait share above is what the gate reads, and what a hog moves.


def test_each_cell_records_the_cpu_sets_and_whether_they_were_pinned(cells):
    calm, starved, engine_cpus, _ = cells
    for summary in (calm, starved):
        assert summary["cpus_engine_core"] == cpu_list(engine_cpus)
        assert summary["cpus_client"] and summary["cpus_api_server"]
        if len(os.sched_getaffinity(0)) < 4:
            assert summary["cpus_pinned"] is False
            assert "too few to give the client its own" in summary["cpus_pin_note"]
            assert summary["cpus_shared_engine_client"] >= 1  # the contention, recorded
        else:  # load.pin_cpus=auto: the engine's tree and the client on disjoint cores
            assert summary["cpus_pinned"] is True
            assert summary["cpus_shared_engine_client"] == 0
        assert summary["client_cpu_share"] >= 0
        assert summary["sched_client_wait_share"] is not None
