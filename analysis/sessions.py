"""Session fingerprints as a readable table: one row per session, GPUs summarised. Pure."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

SUMMARY_COLUMNS = [
    *("session_id", "started_at", "ended_at", "duration_min", "hosts", "gpus", "gpu_uuids"),
    *("driver_version", "cuda_version", "vllm_version", "harness_version", "python", "config_hash"),
]


def _items(value: Any) -> list[Any]:
    """A JSON list as read back by DuckDB/pandas (list, numpy array or missing) as a Python list."""
    if isinstance(value, list | tuple | np.ndarray):
        return list(value)
    return []


def gpu_summary(gpus: Any) -> str:
    """'8x NVIDIA H200' (count per name, most common first); '-' without GPUs."""
    names = Counter(str(g.get("name")) for g in _items(gpus) if isinstance(g, dict))
    return ", ".join(f"{n}x {name}" for name, n in names.most_common()) or "-"


def session_summary(sessions: pd.DataFrame) -> pd.DataFrame:
    """One readable row per session; duration_min = (ended_at - started_at) in minutes (NaN while running)."""
    out = sessions.reindex(columns=[c for c in SUMMARY_COLUMNS if c not in ("duration_min", "gpu_uuids")])
    started = pd.to_datetime(out["started_at"], utc=True, errors="coerce")
    ended = pd.to_datetime(out["ended_at"], utc=True, errors="coerce")
    out["duration_min"] = (ended - started).dt.total_seconds() / 60.0
    out["hosts"] = out["hosts"].map(lambda h: ", ".join(map(str, _items(h))) or "-")
    out["gpu_uuids"] = out["gpus"].map(lambda g: ", ".join(str(x.get("uuid")) for x in _items(g)) or "-")
    out["gpus"] = out["gpus"].map(gpu_summary)
    return out[SUMMARY_COLUMNS].reset_index(drop=True)
