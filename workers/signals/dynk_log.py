"""Read the kpad/dynk plugins' summary lines back out of an engine log (pure, plus log-file helpers; no vLLM).

The plugins (lever_plugins/log_lines.py) write cumulative counters, so the last
line of each kind holds the totals of the engine's whole life, and one cell's
share is the difference between the last line before its window and the last
line inside it. dynk writes a line every N steps and, once the engine has been
idle for a moment, one more marked idle=1 (lever_plugins/dynk.py), so waiting
for that line at both ends of a cell (`wait_for_idle_line`) makes the
difference exact rather than N steps stale.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LINE_RE = re.compile(r"lever_plugins (?P<name>kpad|dynk): (?P<body>.*?)\s*$")
PAIR_RE = re.compile(r"(\w+)=(\S+)")
PER_K_RE = re.compile(r"K(\d+)")
# K<k>_drafts and K<k>_<mode> (dynk's per-K tally; lever_plugins/step_tally.py).
PER_K_FIELD_RE = re.compile(r"K(\d+)_([a-z]+)")
MODES = ("full", "piecewise", "none")
# The plugin flushes after 0.5 s idle (LEVER_DYNK_IDLE_FLUSH_S) and polls at a fifth of that;
# the rest is margin for the line to pass through the engine's log pipe.
IDLE_WAIT_S = 5.0


@dataclass(frozen=True)
class PluginStats:
    """One summary line: the plugin, its steps so far, per-K counts (dynk) and the rest.

    steps_by_k: the controller's decisions per K; drafts_by_k: drafts verified at
    K; modes_by_k: forward passes by CUDA-graph runtime mode, charged to the K of
    the drafts they verified (K 0: passes that verified none).
    """

    plugin: str
    steps: int
    steps_by_k: dict[int, int] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    drafts_by_k: dict[int, int] = field(default_factory=dict)
    modes_by_k: dict[int, dict[str, int]] = field(default_factory=dict)

    @property
    def idle(self) -> bool:
        """Written by dynk's idle flush: nothing ran between this line and the next one."""
        return self.values.get("idle", 0.0) == 1.0


def parse_line(line: str) -> PluginStats | None:
    """PluginStats from one log line, or None if it is not a plugin summary (e.g. 'wrapped ...')."""
    match = LINE_RE.search(line)
    if match is None:
        return None
    steps_by_k: dict[int, int] = {}
    drafts_by_k: dict[int, int] = {}
    modes_by_k: dict[int, dict[str, int]] = {}
    values: dict[str, float] = {}
    for key, raw in PAIR_RE.findall(match["body"]):
        if per_k := PER_K_RE.fullmatch(key):
            steps_by_k[int(per_k[1])] = int(raw)
        elif per_k_field := PER_K_FIELD_RE.fullmatch(key):
            k, name = int(per_k_field[1]), per_k_field[2]
            if name == "drafts":
                drafts_by_k[k] = int(raw)
            else:
                modes_by_k.setdefault(k, {})[name] = int(raw)
        else:
            values[key] = float(raw)
    if "steps" not in values:
        return None
    return PluginStats(match["name"], int(values.pop("steps")), steps_by_k, values, drafts_by_k, modes_by_k)


def parse_log(text: str) -> list[PluginStats]:
    """Every plugin summary line in `text`, in order."""
    return [stats for line in text.splitlines() if (stats := parse_line(line)) is not None]


def last_stats(text: str, plugin: str) -> PluginStats | None:
    """The last (cumulative) summary of `plugin` ('kpad' or 'dynk'), or None if it never logged."""
    lines = [stats for stats in parse_log(text) if stats.plugin == plugin]
    return lines[-1] if lines else None


def _minus(after: dict[int, int], before: dict[int, int]) -> dict[int, int]:
    return {k: n - before.get(k, 0) for k, n in sorted(after.items())}


def window_delta(before: PluginStats | None, after: PluginStats) -> PluginStats:
    """What happened between two cumulative lines of one engine (before None: since the engine started)."""
    if before is None:
        return after
    modes = {
        k: {mode: n - before.modes_by_k.get(k, {}).get(mode, 0) for mode, n in counts.items()}
        for k, counts in sorted(after.modes_by_k.items())
    }
    return PluginStats(
        after.plugin,
        after.steps - before.steps,
        _minus(after.steps_by_k, before.steps_by_k),
        {**after.values},
        _minus(after.drafts_by_k, before.drafts_by_k),
        modes,
    )


EMPTY_COLUMNS: dict[str, Any] = {
    "dynk_steps_by_k_json": None,
    "dynk_drafts_by_k_json": None,
    "dynk_graph_steps_by_k_json": None,
    "dynk_full_step_share": None,
    "dynk_counts_exact": None,
}


def columns(before: PluginStats | None, after: PluginStats | None) -> dict[str, Any]:
    """A cell's dynk columns from the cumulative lines at the start and end of its window; None without dynk.

    dynk_steps_by_k_json: controller decisions per K, {"4": steps, ...};
    dynk_drafts_by_k_json: drafts verified per K (requests x steps);
    dynk_graph_steps_by_k_json: forward passes per K by CUDA-graph runtime mode,
      {"4": {"full": n, "piecewise": n, "none": n}, ...}, "0" = passes verifying no draft;
    dynk_full_step_share: FULL passes / all passes in the window (None without passes);
    dynk_counts_exact: both lines were idle flushes (or the window began with the engine),
      so no step is missing or borrowed from a neighbour.
    """
    if after is None:
        return dict(EMPTY_COLUMNS)
    delta = window_delta(before, after)
    passes = sum(sum(counts.values()) for counts in delta.modes_by_k.values())
    full = sum(counts.get("full", 0) for counts in delta.modes_by_k.values())
    return {
        "dynk_steps_by_k_json": json.dumps({str(k): n for k, n in sorted(delta.steps_by_k.items())}),
        "dynk_drafts_by_k_json": json.dumps({str(k): n for k, n in sorted(delta.drafts_by_k.items())}),
        "dynk_graph_steps_by_k_json": json.dumps(
            {
                str(k): {mode: counts.get(mode, 0) for mode in MODES}
                for k, counts in sorted(delta.modes_by_k.items())
            }
        ),
        "dynk_full_step_share": full / passes if passes else None,
        "dynk_counts_exact": (before is None or before.idle) and after.idle,
    }


def _read_bytes(log_path: Path, end: int | None = None) -> bytes:
    if not log_path.is_file():
        return b""
    with log_path.open("rb") as handle:
        return handle.read() if end is None else handle.read(max(0, end))


def columns_since(log_path: Path, start_offset: int, end_offset: int | None = None) -> dict[str, Any]:
    """The columns for the log between byte `start_offset` and `end_offset` (None: its end now).

    The baseline is the last dynk line before `start_offset`, the total the
    last one before `end_offset`; a log without dynk lines gives None columns.
    """
    data = _read_bytes(log_path, end_offset)
    before = last_stats(data[:start_offset].decode(errors="replace"), "dynk")
    return columns(before, last_stats(data.decode(errors="replace"), "dynk"))


def wait_for_idle_line(log_path: Path, timeout_s: float = IDLE_WAIT_S, poll_s: float = 0.1) -> int:
    """Wait until the log's last dynk line is an idle flush; return the log's size in bytes then.

    Returns at once for a log without dynk summaries (another lever, or no step
    yet), and the size at the timeout if the engine never goes idle.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        data = _read_bytes(log_path)
        last = last_stats(data.decode(errors="replace"), "dynk")
        if last is None or last.idle or time.monotonic() >= deadline:
            return len(data)
        time.sleep(poll_s)


def columns_when_idle(log_path: Path, start_offset: int, timeout_s: float = IDLE_WAIT_S) -> dict[str, Any]:
    """The columns from `start_offset` to the engine's next idle flush (called after the load)."""
    return columns_since(log_path, start_offset, wait_for_idle_line(log_path, timeout_s))
