"""GPU telemetry against a fake NVML (this machine has no GPU; the real path runs on GPU hosts)."""

import types

from workers.signals.gpu_telemetry import GpuSampler, load_nvml


class FakeNvml(types.SimpleNamespace):
    NVML_CLOCK_SM = 1

    def __init__(self):
        super().__init__(energy_mj=1_000_000.0)

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        self.energy_mj += 500.0  # 0.5 J per read and GPU
        return self.energy_mj

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=90 + handle)

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return 1980

    def nvmlDeviceGetPowerUsage(self, handle):
        return 600_000  # mW

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return 4 if handle else 0


def test_no_gpu_here_means_sampling_is_skipped_cleanly():
    with GpuSampler() as sampler:
        pass
    if load_nvml() is None:
        assert set(sampler.columns(100).values()) == {None}


def test_fake_nvml_gives_means_energy_per_token_and_throttle_bits(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with GpuSampler(nvml=FakeNvml()) as sampler:
        pass
    cols = sampler.columns(output_tokens=10)
    assert cols["gpu_util_pct_mean"] == 90.5
    assert cols["gpu_power_w_mean"] == 600.0
    assert cols["gpu_sm_clock_mhz_mean"] == 1980
    assert cols["gpu_energy_j"] > 0
    assert cols["gpu_joules_per_output_token"] == cols["gpu_energy_j"] / 10
    assert cols["gpu_throttle_reasons"] == 4


def test_only_visible_gpus_are_sampled(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with GpuSampler(nvml=FakeNvml()) as sampler:
        pass
    assert {s["util_pct"] for s in sampler.samples} == {91.0}
