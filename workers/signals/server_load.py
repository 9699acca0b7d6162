"""How many requests the server itself was running while a cell was measured.

A closed-loop client holds its own in-flight count by construction, so that
count cannot show whether the engine batched `concurrency` requests: the
server may queue some (max_num_seqs, KV-cache pressure) or preempt them. This
samples vLLM's own gauges (`vllm:num_requests_running`, `..._waiting`) from
/metrics on a background thread through the measured phase; the concurrency
gate is judged on the server's running count inside the steady-state window.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

GAUGES = {"vllm:num_requests_running": "running", "vllm:num_requests_waiting": "waiting"}


@dataclass(frozen=True)
class LoadSample:
    """The server's gauges at one instant (perf-counter ns, the client's clock)."""

    t_ns: int
    running: float
    waiting: float


def parse_gauges(text: str) -> tuple[float, float]:
    """(running, waiting) summed over labels from a Prometheus text exposition."""
    values = {"running": 0.0, "waiting": 0.0}
    for family in text_string_to_metric_families(text):
        if (name := GAUGES.get(family.name)) is not None:
            values[name] = sum(s.value for s in family.samples)
    return values["running"], values["waiting"]


class ServerLoadSampler:
    """Context manager: scrape the gauges every `interval_s` until exit."""

    def __init__(self, base_url: str, api_key: str, interval_s: float = 0.5) -> None:
        self._request = urllib.request.Request(
            base_url + "/metrics", headers={"Authorization": f"Bearer {api_key}"}
        )
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="server-load", daemon=True)
        self.samples: list[LoadSample] = []
        self.errors = 0

    def _sample(self) -> None:
        try:
            with urllib.request.urlopen(self._request, timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            self.errors += 1
            return
        running, waiting = parse_gauges(text)
        self.samples.append(LoadSample(time.perf_counter_ns(), running, waiting))

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


def columns(samples: list[LoadSample], start_ns: int | None, end_ns: int | None) -> dict[str, object]:
    """srv_running_mean / srv_waiting_max / srv_load_samples over the steady-state window.

    Samples are evenly spaced in time, so their plain mean is the time-weighted one.
    """
    window = in_window(samples, start_ns, end_ns)
    return {
        "srv_load_samples": len(window),
        "srv_running_mean": sum(s.running for s in window) / len(window) if window else None,
        "srv_running_min": min(s.running for s in window) if window else None,
        "srv_waiting_max": max(s.waiting for s in window) if window else None,
    }
