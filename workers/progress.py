"""What this worker process is doing now (engine start, a cell's warm-up, its measured load, ...).

The driver's live bar and its log show it: the Ray actor that runs the engine group answers
`progress()` from here while its `run()` works (grid/schedule.py polls it every few seconds).
One engine group per worker process, so one record per process.
"""

from __future__ import annotations

import time

_NOW: dict[str, object] = {}


def set_now(label: str, phase: str) -> None:
    """`label` (a cell's, or the engine's while it starts) is now in `phase`."""
    _NOW.clear()
    _NOW.update(label=label, phase=phase, since_s=time.time())


def now() -> dict[str, object]:
    """The latest record ({} before the first): label, phase and since_s (epoch s)."""
    return dict(_NOW)
