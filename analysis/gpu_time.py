"""Where the GPU time went: the share inside measurement windows, per experiment.

Each cell stores its phases (workers/phases.py: warmup, settle, measure,
drain, probe; phase_cell_s their sum), its share of its engine's start
(engine_start_share_s) and its GPUs. GPU seconds = (cell + start share) x GPUs;
the window is the steady-state part of the measure phase (window_s). Engine
stops are not counted, so the share is an upper bound by their length.
"""

from __future__ import annotations

import pandas as pd

PHASES = ("warmup", "settle", "measure", "drain", "probe")


def gpu_seconds(cells: pd.DataFrame) -> pd.Series:
    """(phase_cell_s + engine_start_share_s) x gpus per cell; NaN for cells stored before phases existed."""
    if "phase_cell_s" not in cells.columns:
        return pd.Series(float("nan"), index=cells.index)
    gpus = cells["gpus"].fillna(1) if "gpus" in cells.columns else 1
    return (cells["phase_cell_s"] + cells["engine_start_share_s"].fillna(0)) * gpus


def window_share(cells: pd.DataFrame) -> dict[str, float | int | None]:
    """Seconds in windows / GPU seconds over the cells that recorded their phases."""
    total = gpu_seconds(cells)
    known = total.notna()
    if not known.any():
        return {"cells_timed": 0, "gpu_s": None, "window_gpu_s": None, "window_share": None}
    gpus = cells["gpus"].fillna(1) if "gpus" in cells.columns else 1
    window = (cells["window_s"].fillna(0) * gpus)[known].sum()
    spent = total[known].sum()
    return {
        "cells_timed": int(known.sum()),
        "gpu_s": float(spent),
        "window_gpu_s": float(window),
        "window_share": float(window / spent) if spent else None,
    }


def share_line(cells: pd.DataFrame) -> str | None:
    """One line for status and the report, or None when no cell recorded its phases."""
    share = window_share(cells)
    if not share["cells_timed"]:
        return None
    phases = {p: cells[f"phase_{p}_s"].sum() for p in PHASES if f"phase_{p}_s" in cells.columns}
    starts = cells["engine_start_share_s"].sum() if "engine_start_share_s" in cells.columns else 0.0
    parts = ", ".join(
        f"{name} {seconds:,.0f} s" for name, seconds in {"engine starts": starts, **phases}.items()
    )
    unit, seconds = ("GPU", "GPU-s") if on_gpus(cells) else ("Engine", "engine-s")
    return (
        f"{unit} time inside measurement windows: {share['window_share']:.0%} "
        f"({share['window_gpu_s']:,.0f} of {share['gpu_s']:,.0f} {seconds} over "
        f"{share['cells_timed']} cells; {parts})"
    )


def on_gpus(cells: pd.DataFrame) -> bool:
    """False only where the cells say they had none: no GPUs assigned (CUDA_VISIBLE_DEVICES unset)
    and no GPU sampled, as on the CPU engine; cells stored without those columns count as GPU."""
    if "cuda_visible_devices" not in cells.columns or cells["cuda_visible_devices"].notna().any():
        return True
    return "gpu_util_pct_mean" in cells.columns and bool(cells["gpu_util_pct_mean"].notna().any())
