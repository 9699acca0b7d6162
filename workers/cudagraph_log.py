"""How many decode steps ran in FULL CUDA graphs, from vLLM's `--cudagraph-metrics` log tables.

With `--cudagraph-metrics`, every stats interval the engine logs a table of the
batches it ran since the last one:

    | Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |
    |-----------------|---------------|--------------|--------------|-------|
    | 288             | 288           | 0            | FULL         | 412   |

K-pad exists to turn PIECEWISE (or NONE) steps into FULL ones: uniform drafts
make every decode step the same shape. Summing Count per Runtime Mode over the
tables logged during a cell gives its FULL share. The tables are logged per
interval, so a cell's figures may include the tail of the interval it ended in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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


def columns_since(log_path: Path, offset: int) -> dict[str, Any]:
    """The columns for what the log gained after byte `offset` (one cell's share of a launch's log)."""
    if not log_path.is_file():
        return columns({})
    with log_path.open("rb") as handle:
        handle.seek(offset)
        return columns(step_counts(handle.read().decode(errors="replace")))
