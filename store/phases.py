"""What each running engine is doing now, for the driver's log and bar.

  <root>/phases/<session_id>/<engine_id>.json    {"label", "phase", "since_s"}

The worker rewrites its engine's file at each stage (engine start, warm-up,
measured load, drain, probe, storing) and removes it when its group ends; the
driver reads the session's files between its waits for results and logs each
change. A file, not a call to the driver: a second call channel into the
worker actor (max_concurrency=2) let a killed worker record its cell as failed
after the driver had recorded it interrupted. Best effort both ways: a store
that refuses a phase file loses a log line, never a cell; the driver removes
the session's folder when the run ends, and the next run removes what an earlier
session left (sweep_phases: one whose driver lost its Ray head, or was killed).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from store.atomic import write_json
from store.errors import StoreError
from store.fs import StoreRoot
from store.layout import StoreLayout, component

PHASES = "phases"
# An empty phases folder of another session untouched this long goes with the next run: a killed
# driver's (its workers removed their files). A live session's workers write into it at every stage,
# and a write makes the folder anew.
EMPTY_FOLDER_AGE_S = 3600.0


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


def sweep_phases(root: StoreRoot, keep: str, now: float | None = None) -> list[str]:
    """Remove what earlier sessions left under phases/; the sessions whose files went, sorted.

    A session that has ended (its session file has `ended_at`: no worker of it writes any more) loses
    its folder: one whose driver lost its Ray head, or whose own removal failed. On a local store an
    empty folder untouched for EMPTY_FOLDER_AGE_S goes too (a killed driver's). `keep`: this run's.
    """
    now = now if now is not None else time.time()
    swept = []
    with contextlib.suppress(OSError):
        for session_id in sorted(phase_sessions(root) - {keep}):
            folder = root / PHASES / session_id
            if session_ended(root, session_id):
                clear_phases(root, session_id)
                swept.append(session_id)
            elif isinstance(folder, Path) and not any(folder.iterdir()):
                with contextlib.suppress(OSError):
                    if now - folder.stat().st_mtime > EMPTY_FOLDER_AGE_S:
                        folder.rmdir()
                        swept.append(session_id)
    return swept


def phase_sessions(root: StoreRoot) -> set[str]:
    """The sessions with something under phases/ (a local store: every folder, empty ones too)."""
    folder = root / PHASES
    if isinstance(folder, Path):
        return {path.name for path in folder.iterdir() if path.is_dir()} if folder.is_dir() else set()
    return {path.parent.name for path in folder.glob("*/*.json")}


def session_ended(root: StoreRoot, session_id: str) -> bool:
    """Whether the session's file records its end (`ended_at`); False when it cannot be read."""
    with contextlib.suppress(OSError, ValueError, StoreError, AttributeError):
        return bool(json.loads(StoreLayout(root).session_file(session_id).read_text()).get("ended_at"))
    return False
