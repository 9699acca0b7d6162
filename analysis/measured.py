"""What the cells measured, in words: the engine build, the models, the load, the window. Pure.

A figure means nothing without its setup: the report states, from the cells and their sessions'
fingerprints (never from the config as it is now), which vLLM build ran (CPU build when the
session saw no GPU), on what model, under what load (measured prompts, warm-up, concurrency,
max_tokens per corpus) and what out tok/s and its window are. Whatever the store does not record
is said to be unrecorded, never guessed.
"""

from __future__ import annotations

import json

import pandas as pd

WINDOW = (
    "out tok/s: the output tokens that arrived inside the steady-state window / the window's length "
    "in seconds, summed over every stream of the cell. The window opens when every request of the "
    "first wave (the first `concurrency` sent) has its first token, so the ramp-up's prefill burst "
    "is outside, and closes at the first completion after the last send, so the drain is outside "
    "(workers/load/windows.py). The client is closed-loop: it keeps `concurrency` streaming requests "
    "in flight until the prompts run out. bench tok/s (the summary's) is completed tokens / first "
    "send to last completion, as vllm bench serve reports."
)


def _values(frame: pd.DataFrame, column: str) -> list[str]:
    if column not in frame:
        return []
    return sorted({str(v) for v in frame[column].dropna()})


def engine_line(measured: pd.DataFrame, sessions: pd.DataFrame) -> str:
    """'engine: vLLM 0.x, CPU build (no GPU in the sessions' fingerprints)' or the GPUs it ran on."""
    versions = _values(measured, "engine_version") or _values(sessions, "vllm_version")
    version = f"vLLM {', '.join(versions)}" if versions else "vLLM (version not recorded)"
    if sessions.empty or "gpus" not in sessions:
        return f"engine: {version}; build not recorded (no session fingerprint)"
    names = sorted({g.get("name", "?") for gpus in sessions["gpus"] for g in _gpu_list(gpus)})
    if not names:
        return f"engine: {version}, CPU build (the sessions' fingerprints list no GPU)"
    return f"engine: {version}, GPU build on {', '.join(names)}"


def _gpu_list(gpus: object) -> list[dict]:
    if isinstance(gpus, str):
        try:
            gpus = json.loads(gpus)
        except ValueError:
            return []
    if gpus is None or isinstance(gpus, float):
        return []
    return [g if isinstance(g, dict) else {"name": str(g)} for g in list(gpus)]  # type: ignore[call-overload]


def _load_of(config_json: object) -> dict:
    try:
        return json.loads(config_json).get("load", {}) if isinstance(config_json, str) else {}
    except ValueError:
        return {}


def load_rows(measured: pd.DataFrame) -> pd.DataFrame:
    """Per model x corpus: the load its cells ran (from each cell's own config_json and columns)."""
    columns = ["model", "corpus", "measured prompts", "warm-up requests", "concurrency", "max_tokens",
               "ignore_eos", "cells (VALID or not)", "window s (median)"]  # fmt: skip
    if measured.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (model, corpus), group in measured.groupby(["model", "corpus"], sort=True):
        loads = [_load_of(c) for c in group.get("config_json", pd.Series(dtype=object))]

        def one(key: str, column: str | None = None, group: pd.DataFrame = group, loads: list = loads) -> str:
            values = {str(x[key]) for x in loads if key in x}
            if column and column in group:
                values |= {str(int(v)) for v in group[column].dropna()}
            return ", ".join(sorted(values)) or "not recorded"

        window = group["window_s"].median() if "window_s" in group else float("nan")
        rows.append([model, corpus, one("num_prompts", "n_requests"), one("warmup_requests"),
                     one("concurrency", "concurrency"), one("max_tokens", "max_tokens"), one("ignore_eos"),
                     len(group), "not recorded" if pd.isna(window) else f"{window:.1f}"])  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def model_line(measured: pd.DataFrame) -> str:
    """'models: smollm2_135m_it (HuggingFaceTB/SmolLM2-135M-Instruct)', each with its path where recorded."""
    if measured.empty:
        return "models: none measured"
    named = {}
    configs = measured["config_json"] if "config_json" in measured else [None] * len(measured)
    for model, config in zip(measured["model"], configs, strict=True):
        try:
            spec = json.loads(config).get("model", {}) if isinstance(config, str) else {}
        except ValueError:
            spec = {}
        where = spec.get("path") or spec.get("hf_id") or spec.get("id")
        named.setdefault(str(model), where)
    return "models: " + ", ".join(f"{m} ({where_shown(w)})" if w else m for m, w in sorted(named.items()))


def where_shown(path: str) -> str:
    """A model path as a reader can follow it: `{models_dir}/X` (the placeholder conf/model/*.yaml uses,
    expanded on each node by workers/engine/args.py) is `X in paths.models_dir`."""
    placeholder = "{models_dir}"
    if path.startswith(placeholder):
        rest = path[len(placeholder) :].lstrip("/")
        return f"{rest} in paths.models_dir" if rest else "paths.models_dir"
    return path.replace(placeholder, "paths.models_dir")
