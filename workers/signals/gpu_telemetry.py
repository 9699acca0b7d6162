"""GPU telemetry during a measured run, sampled by nvidia-ml-py in a background thread.

On machines without NVIDIA GPUs (or without the library) sampling is skipped
and every column is None. Only the GPUs this worker was given
(CUDA_VISIBLE_DEVICES, set by Ray) are sampled.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

SAMPLE_INTERVAL_S = 0.5


def load_nvml() -> ModuleType | None:
    """The initialised pynvml module, or None when there is no usable NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...: no GPU here
        return None
    return pynvml


def visible_indices(nvml: ModuleType) -> list[int]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(range(nvml.nvmlDeviceGetCount()))
    return [int(x) for x in visible.split(",") if x.strip().isdigit()]


@dataclass
class GpuSampler:
    """Context manager: samples while the block runs; `columns()` summarises."""

    nvml: ModuleType | None = field(default_factory=load_nvml)
    samples: list[dict[str, float]] = field(default_factory=list)
    energy_start_mj: list[float] = field(default_factory=list)
    energy_end_mj: list[float] = field(default_factory=list)
    throttle_reasons: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _handles(self) -> list[Any]:
        assert self.nvml is not None
        return [self.nvml.nvmlDeviceGetHandleByIndex(i) for i in visible_indices(self.nvml)]

    def _energy(self) -> list[float]:
        return [float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self._handles()]

    def _sample_once(self) -> None:
        nvml = self.nvml
        for handle in self._handles():
            util = nvml.nvmlDeviceGetUtilizationRates(handle)
            self.samples.append(
                {
                    "util_pct": float(util.gpu),
                    "sm_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
                    "power_w": nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                }
            )
            with contextlib.suppress(Exception):
                self.throttle_reasons |= int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self._sample_once()

    def __enter__(self) -> GpuSampler:
        if self.nvml is not None:
            self.energy_start_mj = self._energy()
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.nvml is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample_once()
        self.energy_end_mj = self._energy()

    def columns(self, output_tokens: float) -> dict[str, Any]:
        """gpu_* columns; joules per output token = energy delta over all sampled GPUs / tokens."""
        if self.nvml is None or not self.samples:
            return dict.fromkeys(
                ("gpu_util_pct_mean", "gpu_sm_clock_mhz_mean", "gpu_power_w_mean", "gpu_energy_j",
                 "gpu_joules_per_output_token", "gpu_throttle_reasons"))  # fmt: skip
        energy_j = (sum(self.energy_end_mj) - sum(self.energy_start_mj)) / 1000.0
        return {
            "gpu_util_pct_mean": statistics.fmean(s["util_pct"] for s in self.samples),
            "gpu_sm_clock_mhz_mean": statistics.fmean(s["sm_clock_mhz"] for s in self.samples),
            "gpu_power_w_mean": statistics.fmean(s["power_w"] for s in self.samples),
            "gpu_energy_j": energy_j,
            "gpu_joules_per_output_token": energy_j / output_tokens if output_tokens else None,
            "gpu_throttle_reasons": self.throttle_reasons,
        }
