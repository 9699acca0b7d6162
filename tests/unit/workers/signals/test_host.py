"""workers/signals/host.py: CPU sets, the pinning rule, scheduler counters and the starvation gate."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.unit.workers.engine.test_tree import FAKE
from vocab.cells import load_identity
from vocab.schema import GateConfig, LoadSpec
from workers.engine.process import Engine, new_endpoint
from workers.engine.tree import EngineProcess
from workers.signals import host
from workers.signals.gates import GateInputs, evaluate
from workers.signals.host import (
    HostSampler,
    PinPlan,
    ThreadCounters,
    cpu_list,
    parse_cpu_list,
    parse_schedstat,
    parse_switches,
    pin_plan,
    usage,
)


def test_schedstat_and_status_parse():
    assert parse_schedstat("123 456 7\n") == (123, 456)
    status = "Name:\tx\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t3\n"
    assert parse_switches(status) == (10, 3)


def test_cpu_lists_read_and_write_the_kernels_notation():
    assert cpu_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert cpu_list([]) == ""
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list(cpu_list({5, 6, 9})) == {5, 6, 9}


def test_usage_sums_threads_and_counts_a_thread_born_in_the_span_whole():
    before = {1: ThreadCounters(1_000_000_000, 100_000_000, 5, 1)}
    after = {
        1: ThreadCounters(3_000_000_000, 600_000_000, 9, 4),
        2: ThreadCounters(1_000_000_000, 400_000_000, 1, 2),  # born inside the span
    }
    found = usage(before, after, wall_s=4.0)
    assert found.cpu_s == pytest.approx(3.0)
    assert found.wait_s == pytest.approx(0.9)
    assert found.wait_share == pytest.approx(0.9 / 3.9)
    assert found.nivcsw_per_s == pytest.approx(5 / 4)
    assert found.nvcsw_per_s == pytest.approx((4 + 1) / 4)
    assert found.cpu_share == pytest.approx(0.75)
    assert usage({}, {}, 1.0).wait_share is None


@pytest.mark.parametrize(
    ("cores", "engine", "client"),
    [
        (range(4), (0, 1, 2), (3,)),
        (range(8), tuple(range(7)), (7,)),
        (range(16), tuple(range(14)), (14, 15)),
        ([2, 3, 5, 7], (2, 3, 5), (7,)),  # a Ray/cgroup-restricted set: only its own cores
    ],
)
def test_auto_gives_the_client_the_last_cores_and_the_engine_the_rest(cores, engine, client):
    assert pin_plan(cores, "auto") == PinPlan(engine, client)


def test_auto_keeps_smt_siblings_of_the_clients_core_off_the_engine():
    siblings = {c: {c % 4, c % 4 + 4} for c in range(8)}  # 4 physical cores, 2 threads each
    plan = pin_plan(range(8), "auto", siblings)
    assert plan.client == (3, 7)
    assert plan.engine == (0, 1, 2, 4, 5, 6)


@pytest.mark.parametrize("cores", [range(1), range(2), range(3)])
def test_too_few_cores_pin_nothing_and_say_so(cores):
    plan = pin_plan(cores, "auto")
    assert not plan.pinned
    assert f"{len(cores)} cores" in plan.reason and "share them" in plan.reason


def test_off_pins_nothing():
    plan = pin_plan(range(64), "off")
    assert not plan.pinned and plan.reason == "load.pin_cpus=off"


def test_pin_cpus_is_not_part_of_the_cell_key():
    assert load_identity(LoadSpec(pin_cpus="off"), 0) == load_identity(LoadSpec(pin_cpus="auto"), 0)


def test_the_starvation_gate_fails_past_its_threshold_and_says_why():
    good = GateInputs(
        window_s=60,
        requests_in_window=100,
        errors=0,
        server_running_mean=32,
        concurrency=32,
        client_cpu_share=0.05,
        loop_lag_p99_ms=2.0,
        client_output_tokens=1000,
        server_output_tokens=1000,
    )
    gates = GateConfig()
    assert evaluate(good, gates)["gate_engine_not_starved"] is True  # not read: not judged
    ok = GateInputs(**{**good.__dict__, "engine_wait_share": gates.max_engine_wait_share / 2})
    assert evaluate(ok, gates)["valid"] is True
    starved = GateInputs(**{**good.__dict__, "engine_wait_share": 0.6})
    verdict = evaluate(starved, gates)
    assert verdict["gate_engine_not_starved"] is False and verdict["valid"] is False
    assert "EngineCore waited for a core 60% of its runnable time" in verdict["invalid_reasons"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_sampler_reads_a_busy_child_and_its_wait_under_a_hog_on_its_core():
    """A busy loop and a hog on one core: the loop waits about half the time it wants the core."""
    core = {min(os.sched_getaffinity(0))}
    loop = [sys.executable, "-c", "while True: pass"]
    busy = subprocess.Popen(loop)
    hog = subprocess.Popen(loop)
    try:
        for proc in (busy, hog):
            os.sched_setaffinity(proc.pid, core)
        time.sleep(0.2)
        processes = [EngineProcess("API server", os.getpid(), 0), EngineProcess("EngineCore", busy.pid, 1)]
        # The kernel adds a task's run-queue wait when it next runs: where higher-priority work holds
        # every core for the whole span (make test's engine stream runs a starvation test's hogs at
        # nice -15 beside this one at nice 10), the loop shows neither time nor wait; where it held the
        # loop off the core just before the first read, the wait it piled up then lands inside the span
        # (2.3 s in a 1.0 s span, CI stop 42). Either way the span says nothing: measure again then.
        for _ in range(5):
            with HostSampler(processes) as sampler:
                time.sleep(1.0)
            columns = sampler.columns()
            span_s = (sampler.end_ns - sampler.start_ns) / 1e9
            # Always runnable: its time on the core and its wait in the run queue fill the span.
            wanted = columns["sched_engine_core_cpu_s"] + columns["sched_engine_core_run_wait_s"]
            if columns["sched_engine_core_cpu_s"] and 0.85 * span_s < wanted < 1.3 * span_s:
                break
    finally:
        busy.kill()
        hog.kill()
        busy.wait()
        hog.wait()
    assert columns["cpus_engine_core"] == cpu_list(core)
    assert 0.85 * span_s < wanted < 1.3 * span_s
    # The hog takes about half of it (more when the machine is busy with other work too).
    assert columns["engine_wait_share"] > 0.3
    assert columns["cpus_shared_engine_client"] >= 1


@pytest.mark.skipif(len(host.NODE_CPUS) < 2, reason="needs two cores to tell a pin from all of them")
def test_an_engine_started_by_a_pinned_worker_runs_on_the_cores_it_is_given(tmp_path):
    """A worker pinned to one core for a cell's client (apply_pins) starts its next engine, a relaunch
    included, on every core of the node, not on that pin."""
    start = set(os.sched_getaffinity(0))
    endpoint = new_endpoint()
    argv = [*FAKE, "--port", str(endpoint.port), "--api-key", endpoint.api_key]
    host.pin_process(os.getpid(), {min(start)})
    try:
        engine = Engine(argv, {}, endpoint, tmp_path / "e.log", 60, 5, cpus=host.NODE_CPUS)
        with engine:
            assert os.sched_getaffinity(engine.proc.pid) == set(host.NODE_CPUS) == start
            engine.relaunch()
            assert os.sched_getaffinity(engine.proc.pid) == start
    finally:
        host.pin_process(os.getpid(), start)
