"""Read the kpad/dynk plugins' summary lines back out of an engine log (pure; no vLLM).

The plugins (lever_plugins/log_lines.py) write cumulative counters, so the last
line of each kind holds the totals of the engine's whole life.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

LINE_RE = re.compile(r"lever_plugins (?P<name>kpad|dynk): (?P<body>.*?)\s*$")
PAIR_RE = re.compile(r"(\w+)=(\S+)")
PER_K_RE = re.compile(r"K(\d+)")


@dataclass(frozen=True)
class PluginStats:
    """One summary line: the plugin, its steps so far, per-K step counts (dynk) and the rest."""

    plugin: str
    steps: int
    steps_by_k: dict[int, int] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)


def parse_line(line: str) -> PluginStats | None:
    """PluginStats from one log line, or None if it is not a plugin summary."""
    match = LINE_RE.search(line)
    if match is None:
        return None
    steps_by_k: dict[int, int] = {}
    values: dict[str, float] = {}
    for key, raw in PAIR_RE.findall(match["body"]):
        if per_k := PER_K_RE.fullmatch(key):
            steps_by_k[int(per_k[1])] = int(raw)
        else:
            values[key] = float(raw)
    return PluginStats(match["name"], int(values.pop("steps", 0)), steps_by_k, values)


def parse_log(text: str) -> list[PluginStats]:
    """Every plugin summary line in `text`, in order."""
    return [stats for line in text.splitlines() if (stats := parse_line(line)) is not None]


def last_stats(text: str, plugin: str) -> PluginStats | None:
    """The last (cumulative) summary of `plugin` ('kpad' or 'dynk'), or None if it never logged."""
    lines = [stats for stats in parse_log(text) if stats.plugin == plugin]
    return lines[-1] if lines else None


def last_stats_in_file(path: Path, plugin: str) -> PluginStats | None:
    if not path.exists():
        return None
    return last_stats(path.read_text(errors="replace"), plugin)
