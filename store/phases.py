"""What each running engine is doing now, for the driver's log and bar.

  <root>/phases/<session_id>/<engine_id>.json    {"label", "phase", "since_s"}

The worker rewrites its engine's file at each stage (engine start, warm-up,
measured load, drain, probe, storing) and removes it when its group ends; the
driver reads the session's files between its waits for results and logs each
change. A file, not a call to the driver: a second call channel into the
worker actor (max_concurrency=2) let a killed worker record its cell as failed
after the driver had recorded it interrupted. Best effort both ways: a store
that refuses a phase file loses a log line, never a cell; the driver removes
the session's folder when the run ends.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from store.atomic import write_json
from store.fs import StoreRoot
from store.layout import component

PHASES = "phases"


@dataclass(frozen=True)
class Phase:
    label: str  # the cell's label; while the engine starts, its group's first cell's
    phase: str  # "engine start", "warm-up", "measured load", ...
    since_s: float  # epoch seconds when the phase began


def phases_dir(root: StoreRoot, session_id: str) -> StoreRoot:
    return root / PHASES / component("session_id", session_id)


class PhaseBoard:
    """One engine's phase file (worker side)."""

    def __init__(self, root: StoreRoot, session_id: str, engine_id: str) -> None:
        self.path = phases_dir(root, session_id) / f"{engine_id}.json"

    def say(self, label: str, phase: str) -> None:
        with contextlib.suppress(OSError):
            write_json(self.path, asdict(Phase(label, phase, time.time())))

    def clear(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)


def read_phases(root: StoreRoot, session_id: str) -> list[Phase]:
    """The session's running engines' phases, oldest first; unreadable or half-written files skipped."""
    found: list[Phase] = []
    with contextlib.suppress(OSError):
        for path in phases_dir(root, session_id).glob("*.json"):
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                raw = json.loads(path.read_text())
                found.append(Phase(str(raw["label"]), str(raw["phase"]), float(raw["since_s"])))
    return sorted(found, key=lambda p: (p.since_s, p.label))


def clear_phases(root: StoreRoot, session_id: str) -> None:
    """Remove the session's phase files (the run ended; a killed worker's may be left)."""
    folder = phases_dir(root, session_id)
    with contextlib.suppress(OSError):
        for path in folder.glob("*.json"):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        if isinstance(folder, Path):  # an object store has no folders to remove
            folder.rmdir()
