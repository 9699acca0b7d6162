"""The engine's effective configuration, read from its log (what vLLM actually did).

These settings change results (async scheduling alone moved van from ~8.6k to
~5.2k tok/s on an H200), and vLLM may override what was asked for, e.g. it
turns async scheduling off under suffix decoding.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

VERSION = re.compile(r"Initializing a V1 LLM engine \(v([^)]+)\)")
CUDAGRAPH_MODE = re.compile(r"cudagraph_mode'?[:=]\s*<?CUDAGraphMode\.(\w+)")
CAPTURE_SIZES = re.compile(r"'cudagraph_capture_sizes': \[([^\]]*)\]")
ASYNC_ON = re.compile(r"async_scheduling'?[:=]\s*True")
# `--no-async-scheduling` shows only in the non-default args.
ASYNC_OFF = re.compile(r"async_scheduling'?[:=]\s*False")
ASYNC_DISABLED = re.compile(
    r"[Aa]sync scheduling (?:not supported|is disabled|will be disabled|is not compatible)"
)
RUNNER_V1 = re.compile(r"using the V1 model runner")
# vLLM 0.26-0.33 log "Using V2 Model Runner" (gpu_worker.py, once per worker); "Model Runner V2" alone
# also starts the V1 fallback's warning, so the verb is part of the pattern (`make compat` checks both).
RUNNER_V2 = re.compile(r"[Uu]sing (?:V2 Model Runner|Model Runner V2)")
# Which GEMM ran an NVFP4 checkpoint: on Hopper weight-only FP4 (Marlin), true
# W4A4 only on Blackwell (e.g. CUTLASS / FlashInfer). vLLM logs its choice.
NVFP4_KERNEL = re.compile(r"Using (\w+) for NVFP4 GEMM")


def effective_config(log_text: str) -> dict[str, Any]:
    """engine_* columns: vLLM version, async scheduling, model runner, CUDA graphs, NVFP4 kernel."""
    version = VERSION.search(log_text)
    mode = CUDAGRAPH_MODE.search(log_text)
    sizes = CAPTURE_SIZES.search(log_text)
    capture = [int(x) for x in sizes.group(1).split(",") if x.strip()] if sizes else []
    if ASYNC_DISABLED.search(log_text) or ASYNC_OFF.search(log_text):
        async_scheduling: bool | None = False
    elif ASYNC_ON.search(log_text):
        async_scheduling = True
    else:
        async_scheduling = None
    runner = "v1" if RUNNER_V1.search(log_text) else "v2" if RUNNER_V2.search(log_text) else None
    nvfp4 = NVFP4_KERNEL.search(log_text)
    return {
        "engine_log_version": version.group(1) if version else None,
        "engine_async_scheduling": async_scheduling,
        "engine_model_runner": runner,
        "engine_cudagraph_mode": mode.group(1) if mode else None,
        "engine_max_capture_size": max(capture) if capture else None,
        "engine_nvfp4_kernel": nvfp4.group(1) if nvfp4 else None,
    }


def read_effective_config(log_path: Path) -> dict[str, Any]:
    try:
        return effective_config(log_path.read_text(errors="replace"))
    except OSError:
        return effective_config("")
