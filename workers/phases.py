"""Wall time of a cell's phases, so users see where the GPU time goes.

The measurement window is what a study pays for; engine starts, warm-up,
waits for vLLM's stats flush, the drain after the window and the logprob
probe are overhead. Each cell stores its phases (`phase_<name>_s`) and its
share of its engine's start; status and the report sum them per experiment.
"""

from __future__ import annotations

import time


class PhaseClock:
    """Laps of a monotonic clock, one per named phase, in the order they end."""

    def __init__(self) -> None:
        self._last_ns = time.monotonic_ns()
        self.laps_s: dict[str, float] = {}

    def lap(self, name: str) -> None:
        """Close the phase `name` now: the time since the previous lap (or the start)."""
        now = time.monotonic_ns()
        self.laps_s[name] = self.laps_s.get(name, 0.0) + (now - self._last_ns) / 1e9
        self._last_ns = now

    def columns(self) -> dict[str, float]:
        """phase_<name>_s per lap and phase_cell_s, their sum."""
        out = {f"phase_{name}_s": seconds for name, seconds in self.laps_s.items()}
        out["phase_cell_s"] = sum(self.laps_s.values())
        return out
