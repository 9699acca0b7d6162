"""Start the CPU vLLM engine the way the harness does, with a speculative config and lever env.

Direct subprocess (workers.engine.process.Engine), no Ray: these tests check what runs inside
vLLM, not the grid. Argv and env mirror conf/engine/cpu.yaml through workers/engine/args.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vocab.paths import project_path
from workers.engine.process import Engine, new_endpoint
from workers.signals.counters import ServerCounters, scrape

MODEL_DIR = project_path(".cache/models/SmolLM2-135M-Instruct")
SERVED_NAME = "smol"
START_TIMEOUT_S = 300.0


def engine_argv(port: int, api_key: str, spec_config: dict | None, extra: tuple[str, ...] = ()) -> list[str]:
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL_DIR)]
    argv += ["--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--api-key", api_key, "--dtype", "float32", "--enforce-eager"]
    argv += ["--max-model-len", "2048", "--max-num-seqs", "32"]
    if spec_config is not None:
        argv += ["--speculative-config", json.dumps(spec_config)]
    return argv + list(extra)


def engine_env(lever_env: dict[str, str], cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVER_")}
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_CACHE_ROOT": str(cache_dir / "vllm"),
            "PYTHONUNBUFFERED": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "LD_PRELOAD": f"{sys.prefix}/lib/libiomp5.so",
        }
    )
    env.update(lever_env)
    return env


@contextmanager
def running_engine(
    name: str,
    spec_config: dict | None,
    lever_env: dict[str, str],
    work_dir: Path,
    extra_args: tuple[str, ...] = (),
) -> Iterator[Engine]:
    endpoint = new_endpoint()
    engine = Engine(
        engine_argv(endpoint.port, endpoint.api_key, spec_config, extra_args),
        engine_env(lever_env, work_dir),
        endpoint,
        log_path=work_dir / f"{name}.log",
        start_timeout_s=START_TIMEOUT_S,
    )
    with engine:
        yield engine


def complete(engine: Engine, prompt: str, max_tokens: int) -> str:
    """One greedy, non-streaming completion (temperature 0)."""
    body = {"model": SERVED_NAME, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}
    request = urllib.request.Request(
        engine.endpoint.base_url + "/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {engine.endpoint.api_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as resp:
        return str(json.loads(resp.read())["choices"][0]["text"])


def counters(engine: Engine) -> ServerCounters:
    return scrape(engine.endpoint.base_url, engine.endpoint.api_key)


def wait_for_log(engine: Engine, needle: str, timeout_s: float = 10.0) -> str:
    """The engine log once it contains `needle` (log lines arrive a little after the request)."""
    deadline = time.monotonic() + timeout_s
    text = engine.log_path.read_text(errors="replace")
    while needle not in text and time.monotonic() < deadline:
        time.sleep(0.2)
        text = engine.log_path.read_text(errors="replace")
    return text
