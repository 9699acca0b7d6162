"""How many decode steps ran in FULL CUDA graphs, from vLLM's `--cudagraph-metrics` log tables.

With `--cudagraph-metrics`, every stats interval the engine logs a table of the
batches it ran since the last one:

    | Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |
    |-----------------|---------------|--------------|--------------|-------|
    | 288             | 288           | 0            | FULL         | 412   |

K-pad exists to turn PIECEWISE (or NONE) steps into FULL ones: uniform drafts
make every decode step the same shape. Summing Count per Runtime Mode over the
tables logged during a cell gives its FULL share.

The tables come once per stats interval (VLLM_LOG_STATS_INTERVAL, 10 s) and
only when steps ran, so a cell's steps would straddle its neighbours' tables.
The runner therefore waits for a flush at both ends (wait_for_table): after
warm-up, so warm-up steps land in a table before the cell's offset, and after
the measured requests, so their last steps land before the cell's end offset.
The wait is one of the engine's own intervals (flush_timeout_s): some launches
log no table at all (van on vLLM 0.26 on the H200, 2026-12-01), and a fixed
13 s wait then cost 26 s of a 45 s cell even with the interval set to 1 s.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# vLLM's stats interval when VLLM_LOG_STATS_INTERVAL is not set, and the margin
# after an interval for the table to be written.
DEFAULT_STATS_INTERVAL_S = 10.0
FLUSH_MARGIN_S = 3.0
FLUSH_TIMEOUT_S = DEFAULT_STATS_INTERVAL_S + FLUSH_MARGIN_S
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*([A-Z_]+)\s*\|\s*(\d+)\s*\|\s*$")


def step_counts(log_text: str) -> dict[str, int]:
    """Steps per runtime mode (FULL, PIECEWISE, NONE) summed over every table in `log_text`."""
    counts: dict[str, int] = {}
    for line in log_text.splitlines():
        # Log lines carry a prefix ("(EngineCore pid=1) INFO ... loggers.py:123]") before the table rows.
        bar = line.find("|")
        match = ROW.match(line[bar:].strip()) if bar >= 0 else None
        if match:
            mode, count = match.group(4), int(match.group(5))
            counts[mode] = counts.get(mode, 0) + count
    return counts


def columns(counts: dict[str, int]) -> dict[str, Any]:
    """Summary columns; all None when the engine logged no tables (no GPU, or the flag is off)."""
    total = sum(counts.values())
    if not total:
        return {"cudagraph_full_steps": None, "cudagraph_piecewise_steps": None,
                "cudagraph_none_steps": None, "cudagraph_full_share": None}  # fmt: skip
    return {
        "cudagraph_full_steps": counts.get("FULL", 0),
        "cudagraph_piecewise_steps": counts.get("PIECEWISE", 0),
        "cudagraph_none_steps": counts.get("NONE", 0),
        "cudagraph_full_share": counts.get("FULL", 0) / total,
    }


def log_size(log_path: Path) -> int:
    return log_path.stat().st_size if log_path.is_file() else 0


def read_from(log_path: Path, offset: int, end: int | None = None) -> str:
    if not log_path.is_file():
        return ""
    with log_path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read() if end is None else handle.read(max(0, end - offset))
    return data.decode(errors="replace")


def flush_timeout_s(engine_env: Mapping[str, str]) -> float:
    """How long a table can take to come: the launch's stats interval and a margin."""
    raw = engine_env.get("VLLM_LOG_STATS_INTERVAL")
    try:
        interval_s = float(raw) if raw is not None else DEFAULT_STATS_INTERVAL_S
    except ValueError:
        interval_s = DEFAULT_STATS_INTERVAL_S
    # vLLM reads the variable as a float; a value <= 0 is not an interval it can keep.
    return (interval_s if interval_s > 0 else DEFAULT_STATS_INTERVAL_S) + FLUSH_MARGIN_S


def wait_for_table(
    log_path: Path, offset: int, timeout_s: float = FLUSH_TIMEOUT_S, poll_s: float = 0.25
) -> int:
    """Wait until a table row appears after byte `offset`; return the log's size then.

    Returns the size at the timeout when none comes (no steps ran, or the
    engine logs no tables). A short pause after the first row lets the rest of
    the table be written.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if step_counts(read_from(log_path, offset)):
            time.sleep(poll_s)
            return log_size(log_path)
        time.sleep(poll_s)
    return log_size(log_path)


def columns_since(log_path: Path, offset: int, end: int | None = None) -> dict[str, Any]:
    """The columns for the log between byte `offset` and `end` (one cell's share of a launch's log)."""
    return columns(step_counts(read_from(log_path, offset, end)))
