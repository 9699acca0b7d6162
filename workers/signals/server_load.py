"""How many requests the server itself was running while a cell was measured.

A closed-loop client holds its own in-flight count by construction, so that
count cannot show whether the engine batched `concurrency` requests: the
server may queue some (max_num_seqs, KV-cache pressure) or preempt them. This
samples vLLM's own gauges (`vllm:num_requests_running`, `..._waiting`) from
/metrics on a background thread through the measured phase; the concurrency
gate is judged on the server's running count inside the steady-state window.
Each answer also carries the engine's token counters (generation + prompt), whose
rises are the stall gate's evidence that the engine stepped (workers/signals/stall.py).
A scrape that fails (a stopped engine's time out) is kept as its time, and counted.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

GAUGES = {"vllm:num_requests_running": "running", "vllm:num_requests_waiting": "waiting"}
# Counter families (the parser drops `_total`) whose rise means the engine took a step.
STEP_COUNTERS = ("vllm:generation_tokens", "vllm:prompt_tokens")


@dataclass(frozen=True)
class LoadSample:
    """The server's gauges at one instant (perf-counter ns, the client's clock)."""

    t_ns: int
    running: float
    waiting: float
    # Generation + prompt tokens the engine has counted so far; None: the server exposes neither.
    tokens: float | None = None


def parse_load(text: str) -> tuple[float, float, float | None]:
    """(running, waiting, tokens) summed over labels from a Prometheus text exposition."""
    values = {"running": 0.0, "waiting": 0.0}
    tokens: float | None = None
    for family in text_string_to_metric_families(text):
        if (name := GAUGES.get(family.name)) is not None:
            values[name] = sum(s.value for s in family.samples)
        elif family.name in STEP_COUNTERS:
            tokens = (tokens or 0.0) + sum(s.value for s in family.samples if s.name.endswith("_total"))
    return values["running"], values["waiting"], tokens


def parse_gauges(text: str) -> tuple[float, float]:
    """(running, waiting) summed over labels from a Prometheus text exposition."""
    running, waiting, _ = parse_load(text)
    return running, waiting


class ServerLoadSampler:
    """Context manager: scrape the gauges every `interval_s` until exit."""

    def __init__(self, base_url: str, api_key: str, interval_s: float = 0.5, timeout_s: float = 5.0) -> None:
        self._request = urllib.request.Request(
            base_url + "/metrics", headers={"Authorization": f"Bearer {api_key}"}
        )
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="server-load", daemon=True)
        self.samples: list[LoadSample] = []
        # When each failed scrape gave up (perf-counter ns): timed out, refused, or unparsable.
        self.failed_ns: list[int] = []

    def _sample(self) -> None:
        try:
            with urllib.request.urlopen(self._request, timeout=self._timeout_s) as resp:
                text = resp.read().decode()
            running, waiting, tokens = parse_load(text)
        # HTTPException: a server stopped mid-answer (IncompleteRead) or answering garbage; uncaught,
        # it would end the sampler's thread and its samples with it.
        except (OSError, ValueError, http.client.HTTPException):
            self.failed_ns.append(time.perf_counter_ns())
            return
        self.samples.append(LoadSample(time.perf_counter_ns(), running, waiting, tokens))

    def _loop(self) -> None:
        # Event.wait, not sleep: exit as soon as the measured phase ends.
        while not self._stop.wait(self._interval_s):
            self._sample()

    def __enter__(self) -> ServerLoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def in_window(samples: list[LoadSample], start_ns: int | None, end_ns: int | None) -> list[LoadSample]:
    if start_ns is None or end_ns is None:
        return []
    return [s for s in samples if start_ns <= s.t_ns <= end_ns]


def columns(
    samples: list[LoadSample], start_ns: int | None, end_ns: int | None, failed_ns: list[int] | None = None
) -> dict[str, object]:
    """srv_running_mean / srv_waiting_max / srv_load_samples / srv_load_scrape_failures over the
    steady-state window.

    Samples are evenly spaced in time, so their plain mean is the time-weighted one.
    """
    window = in_window(samples, start_ns, end_ns)
    failed = 0
    if start_ns is not None and end_ns is not None:
        failed = sum(start_ns <= t <= end_ns for t in failed_ns or ())
    return {
        "srv_load_samples": len(window),
        # Scrapes inside the window that failed (a stopped engine's time out): counted, never dropped.
        "srv_load_scrape_failures": failed,
        "srv_running_mean": sum(s.running for s in window) / len(window) if window else None,
        "srv_running_min": min(s.running for s in window) if window else None,
        "srv_waiting_max": max(s.waiting for s in window) if window else None,
    }
