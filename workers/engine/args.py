"""The one place where an engine spec becomes `vllm serve` arguments and environment."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vocab.cells import HOOK_ENV_PREFIXES, EngineSpec, draft_hook, drafts_from_history
from vocab.groups import EngineGroup

# Loaded into every drafting engine's workers: resets the suffix cache between cells
# (lever_plugins/reset_ext.py), reached through vLLM's dev-mode /collective_rpc (workers/engine/reset.py).
RESET_EXTENSION = "lever_plugins.reset_ext.ResetExtension"
DEV_MODE_ENV = "VLLM_SERVER_DEV_MODE"
# A shared launch's draft hooks are chosen between cells (lever_plugins/switch.py); the levers'
# own switches would install a fixed hook instead.
SWITCH_ENV = "LEVER_SWITCH"
HOOK_SWITCHES = ("LEVER_KPAD", "LEVER_DYNK")


@dataclass(frozen=True)
class Endpoint:
    """Where one launch listens: loopback only, a free port, a per-launch key."""

    host: str
    port: int
    api_key: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def resolve_model_path(path: str, models_dir: Path) -> str:
    """Expand the `{models_dir}` placeholder; hub ids and absolute paths pass through."""
    return path.replace("{models_dir}", str(models_dir))


def expand_placeholders(value: str) -> str:
    """{python} and {prefix}: the interpreter and environment the harness runs in."""
    return value.replace("{python}", sys.executable).replace("{prefix}", sys.prefix)


def served_name(spec: EngineSpec) -> str:
    return spec.model.served_name or spec.model.name


def model_path(spec: EngineSpec, models_dir: Path) -> str:
    """Weights the engine loads: the quantised variant for levers that ask for it."""
    path = spec.model.quantized_variant if spec.lever.quantized else spec.model.path
    return resolve_model_path(path or spec.model.path, models_dir)


def tokenizer_path(spec: EngineSpec, models_dir: Path) -> str | None:
    """The stand-in tokenizer the model file names (dummy-weight models have none of their own)."""
    return resolve_model_path(spec.model.tokenizer, models_dir) if spec.model.tokenizer else None


def speculative_config(spec: EngineSpec) -> dict | None:
    if spec.lever.spec_method is None:
        return None
    return {
        "method": spec.lever.spec_method,
        "num_speculative_tokens": spec.k,
        **spec.lever.speculative_extra,
    }


def merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, nested dicts merged key by key (e.g. pass_config)."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def capture_ceiling(spec: EngineSpec) -> int:
    """max_cudagraph_capture_size of a drafting launch: max((1+K) x concurrency, the floor).

    Under speculative decoding a decode step of `c` requests has (1+K) x c
    tokens and FULL graphs only cover batches up to the ceiling. vLLM's own
    default is min(max_num_seqs x (1+K) x 2, 512) on Hopper (1024 on Blackwell),
    which (1+K) x c alone would undercut (288 at K=8, c=32): the floor
    (engine.cudagraph_capture_floor) keeps every ceiling at least vLLM's default.
    """
    return max((1 + spec.k) * spec.engine.cudagraph_concurrency, spec.engine.cudagraph_capture_floor)


def compilation_config(spec: EngineSpec) -> dict | None:
    """The engine's and the lever's compilation settings; drafting levers get one capture ceiling rule.

    Every lever with drafts gets capture_ceiling(spec) unless a setting names
    one, so suffix, bestkpad and dynk at one K launch with the same ceiling and
    differ only in their plugin's switch (one variable per comparison).
    Eager engines (the CPU default) capture nothing and get no compilation config.
    """
    if spec.engine.enforce_eager:
        return None
    compilation = merged(spec.engine.compilation, spec.lever.compilation)
    if spec.k and "max_cudagraph_capture_size" not in compilation:
        compilation["max_cudagraph_capture_size"] = capture_ceiling(spec)
    return compilation or None


def resettable(spec: EngineSpec, shared: bool = False) -> bool:
    """Whether the launch loads the reset extension and serves vLLM's dev endpoints (docs/reset.md).

    Every lever that drafts from the engine's history (suffix, bestkpad, dynk):
    its cells share one argv, so the extension does not tell them apart. Under
    grid.engine_reuse=shared (`shared`) every launch does, van too: its prefix
    cache is reset between cells.
    """
    return shared or drafts_from_history(spec.lever)


def launch_argv(group: EngineGroup, endpoint: Endpoint, models_dir: Path) -> list[str]:
    """argv of the group's launch: its spec's, every spec of a shared launch having the same."""
    return serve_argv(group.spec, endpoint, models_dir, shared=group.shared)


def launch_env(group: EngineGroup, base_env: dict[str, str], cache_dir: Path) -> dict[str, str]:
    """Environment of the group's launch: its spec's; a shared launch's holds every lever's hook
    settings and the switch (LEVER_SWITCH=1) in place of the levers' own switches."""
    if not group.shared:
        return serve_env(group.spec, base_env, cache_dir)
    env = serve_env(group.spec, base_env, cache_dir, shared=True)
    if group.switches_hook:
        for name in [n for n in group.spec.lever.env if n in env]:
            del env[name]
        for cell in group.cells:
            lever = cell.engine_spec.lever
            prefixes = HOOK_ENV_PREFIXES[draft_hook(lever) or "suffix"]
            env.update({k: expand_placeholders(v) for k, v in lever.env.items() if k.startswith(prefixes)})
        for name in HOOK_SWITCHES:
            env.pop(name, None)
        env[SWITCH_ENV] = "1"
    return env


def serve_argv(spec: EngineSpec, endpoint: Endpoint, models_dir: Path, shared: bool = False) -> list[str]:
    """Full argv of one launch: engine command, model, lever, engine settings."""
    engine, model, lever = spec.engine, spec.model, spec.lever
    argv = [expand_placeholders(part) for part in engine.command]
    argv += ["--model", model_path(spec, models_dir), "--served-model-name", served_name(spec)]
    if (tokenizer := tokenizer_path(spec, models_dir)) is not None:
        argv += ["--tokenizer", tokenizer]
    argv += ["--host", endpoint.host, "--port", str(endpoint.port), "--api-key", endpoint.api_key]
    argv += ["--dtype", engine.dtype or model.dtype, "--max-model-len", str(engine.max_model_len)]
    if model.tp > 1:
        argv += ["--tensor-parallel-size", str(model.tp), "--distributed-executor-backend", "mp"]
    if engine.gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", str(engine.gpu_memory_utilization)]
    if engine.max_num_seqs is not None:
        argv += ["--max-num-seqs", str(engine.max_num_seqs)]
    if engine.enforce_eager:
        argv.append("--enforce-eager")
    if lever.async_scheduling is not None:
        argv.append("--async-scheduling" if lever.async_scheduling else "--no-async-scheduling")
    if (spec_cfg := speculative_config(spec)) is not None:
        argv += ["--speculative-config", json.dumps(spec_cfg, sort_keys=True)]
    if (compilation := compilation_config(spec)) is not None:
        argv += ["--compilation-config", json.dumps(compilation, sort_keys=True)]
    if resettable(spec, shared):
        argv += ["--worker-extension-cls", RESET_EXTENSION]
    return argv + list(model.extra_args) + list(lever.extra_args) + list(engine.extra_args)


def serve_env(
    spec: EngineSpec, base_env: dict[str, str], cache_dir: Path, shared: bool = False
) -> dict[str, str]:
    """Environment of one launch: offline, caches under cache_dir, engine and lever settings."""
    env = dict(base_env)
    env.update(
        {
            # Nothing comes from a model hub at run time.
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HOME": str(cache_dir / "hf"),
            "VLLM_CACHE_ROOT": str(cache_dir / "vllm"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "inductor"),
            "TRITON_CACHE_DIR": str(cache_dir / "triton"),
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update({k: expand_placeholders(v) for k, v in spec.engine.env.items()})
    env.update({k: expand_placeholders(v) for k, v in spec.lever.env.items()})
    if resettable(spec, shared):
        # /collective_rpc and /reset_prefix_cache exist only in dev mode; they do not ask for
        # --api-key (docs/reset.md): the engine listens on 127.0.0.1 only.
        env[DEV_MODE_ENV] = "1"
    return env
