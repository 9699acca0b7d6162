"""The stall gate (issue 45 item 3): an engine stopped inside the measured window makes the cell
INVALID, named with the stall's length, on a synthetic timeline and on a stopped stand-in engine."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

from vocab.schema import GateConfig, LoadSpec
from workers.load.client import LoopLag, RequestRecord, Target, run_measured, run_sync
from workers.load.prompts import Prompt
from workers.load.windows import Window
from workers.signals.counters import ServerCounters
from workers.signals.server_load import LoadSample, ServerLoadSampler
from workers.signals.stall import Stall, itl_ms_p99, longest_stall, stall_limit_s
from workers.summary import summarize

S = 1_000_000_000
STEP_S = 0.05
TOKENS = 20
# Gates loose enough that a synthetic cell is judged by the stall gate alone.
LOOSE = GateConfig(min_window_s=1, min_requests=1, min_concurrency_held=0.0, max_client_cpu_share=10.0)


def engine_steps(frozen: tuple[float, float] | None, until_s: float = 80.0) -> np.ndarray:
    """A batched decoder's step times: every STEP_S, none while `frozen` (start, end)."""
    steps = np.arange(0.0, until_s, STEP_S)
    if frozen is not None:
        steps = steps[(steps < frozen[0]) | (steps >= frozen[1])]
    return steps


def closed_loop(steps: np.ndarray, concurrency: int = 4) -> list[RequestRecord]:
    """Each slot sends its next request when the last ends; a request gets one token per step."""
    records: list[RequestRecord] = []
    for slot in range(concurrency):
        i = 0  # index of the next step
        while i + TOKENS < len(steps):
            send_s = steps[i] - 0.001
            chunks = [int(t * S) for t in steps[i + 1 : i + 1 + TOKENS]]
            n = len(records)
            records.append(
                RequestRecord(n, str(n), "measure", send_ns=int(send_s * S), end_ns=chunks[-1] + 1000,
                              chunk_ns=chunks, chunk_tokens=[1] * TOKENS, completion_tokens=TOKENS)
            )  # fmt: skip
            i += TOKENS + 1 + slot % 2  # the slots drift apart a little
    return records


def judged(records: list[RequestRecord]) -> dict:
    tokens = sum(r.completion_tokens for r in records)
    running = [LoadSample(int(t * S), 4.0, 0.0) for t in np.arange(0.0, 80.0, 0.5)]
    return summarize(records, ServerCounters(generation_tokens=tokens), 0.1, LoopLag(), 4, LOOSE, running)


def test_a_steady_engine_passes_the_stall_gate():
    figures = judged(closed_loop(engine_steps(None)))
    assert figures["gate_no_stall"] is True, figures["invalid_reasons"]
    assert figures["valid"] is True, figures["invalid_reasons"]
    assert figures["stall_max_s"] <= 3 * STEP_S  # a step where every slot was between requests
    assert figures["stall_limit_s"] == pytest.approx(2.0)


def test_an_engine_frozen_40_s_inside_the_window_makes_the_cell_invalid_and_says_how_long():
    figures = judged(closed_loop(engine_steps((20.0, 60.0))))
    assert figures["window_start_ns"] < 20 * S and figures["window_end_ns"] > 60 * S
    assert figures["gate_no_stall"] is False
    assert figures["valid"] is False
    assert figures["stall_max_s"] == pytest.approx(40.0, abs=0.1)
    assert "no token on any stream and no engine step for 40.0 s" in figures["invalid_reasons"]
    # The limit comes from the steps outside the stall, not from the stall's own gaps.
    assert figures["stall_itl_ms_p99"] == pytest.approx(1000 * STEP_S, rel=0.1)


def test_engine_steps_seen_in_its_counters_are_no_stall():
    """The client saw no token for 4 s but the engine's token counter rose every half second:
    the client was held up, not the engine (the loop-lag gate judges that)."""
    window = Window(0, 10 * S)
    record = RequestRecord(0, "0", "measure", send_ns=0, end_ns=10 * S, chunk_ns=[S, 2 * S, 6 * S, 9 * S])
    flat = [LoadSample(int(t * S), 1.0, 0.0, tokens=5.0) for t in np.arange(0.0, 10.0, 0.5)]
    rising = [
        LoadSample(int(t * S), 1.0, 0.0, tokens=float(k)) for k, t in enumerate(np.arange(0.0, 10.0, 0.5))
    ]
    assert longest_stall([record], flat, window) == Stall(2 * S, 6 * S)
    assert longest_stall([record], rising, window).length_s <= 0.5
    # Two answers 40 s apart (the scrapes between them timed out) say nothing of when it stepped.
    sparse = [LoadSample(int(1.5 * S), 1.0, 0.0, tokens=1.0), LoadSample(int(8.5 * S), 1.0, 0.0, tokens=9.0)]
    assert longest_stall([record], sparse, window) == Stall(2 * S, 6 * S)


def test_the_limit_is_a_floor_or_a_multiple_of_the_inter_token_p99():
    gates = GateConfig()
    assert stall_limit_s(None, gates) == gates.stall_floor_s
    assert stall_limit_s(50.0, gates) == gates.stall_floor_s
    assert stall_limit_s(400.0, gates) == pytest.approx(400.0 * gates.stall_itl_multiple / 1000)
    window = Window(0, 10 * S)
    record = RequestRecord(0, "0", "measure", send_ns=0, end_ns=10 * S, chunk_ns=[S, 2 * S, 6 * S, 7 * S])
    assert itl_ms_p99([record], window, Stall(2 * S, 6 * S)) == pytest.approx(1000.0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(base_url: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base_url + "/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"stand-in engine at {base_url} never answered")


def test_a_stopped_stand_in_engine_fails_the_stall_gate_and_its_timed_out_scrapes_are_counted():
    """The stand-in engine (tests/stubs/stub_engine.py) SIGSTOPped for 3 s in the middle of the
    measured load: the cell is INVALID by the stall gate, and the /metrics scrapes that timed out
    while it was stopped are a column, not dropped."""
    port = free_port()
    env = {**os.environ, "STUB_TOKENS": "12", "STUB_STEP_S": "0.02"}
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.stubs.stub_engine", "--port", str(port), "--api-key", "k"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base_url)
        prompts = [Prompt(str(i), prompt=f"p{i}") for i in range(40)]
        load = LoadSpec(concurrency=4, max_tokens=12)

        def stop_for_a_while() -> None:
            time.sleep(1.0)
            os.kill(server.pid, signal.SIGSTOP)
            time.sleep(3.0)
            os.kill(server.pid, signal.SIGCONT)

        stopper = threading.Thread(target=stop_for_a_while)
        with ServerLoadSampler(base_url, "k", interval_s=0.2, timeout_s=0.5) as sampler:
            stopper.start()
            records, lag = run_sync(
                run_measured(Target(base_url, "k", "m", "completions"), prompts, load, "m")
            )
        stopper.join()
    finally:
        os.kill(server.pid, signal.SIGCONT)
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    assert all(r.error_type is None for r in records)
    figures = summarize(records, ServerCounters(), 0.1, lag, 4, LOOSE, sampler.samples, sampler.failed_ns)
    assert figures["window_start_ns"] is not None
    assert figures["gate_no_stall"] is False
    assert figures["stall_max_s"] == pytest.approx(3.0, abs=0.5)
    assert f"for {figures['stall_max_s']:.1f} s inside the window" in figures["invalid_reasons"]
    assert figures["srv_load_scrape_failures"] >= 2
