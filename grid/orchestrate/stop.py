"""Why a run stops early, set from a signal handler or by a cell; Ray-free so run.py can hold it."""

from __future__ import annotations

from dataclasses import dataclass

from workers.runner import CellOutcome


@dataclass
class Stop:
    """Why the run must stop, set from a signal handler or by an outcome; checked between waits."""

    signum: int | None = None
    reason: str | None = None
    engines: int = 0  # engines in flight now, for the "stopping: N engines" line
    # When a signal asked for the stop (epoch s): cells that failed after it failed because of it.
    at_s: float | None = None
    # The cluster stopped answering during the stop (its processes got the signal too).
    cluster_gone: bool = False
    # The Ray head (its GCS) stopped answering mid-run (schedule.watching_head): Ray would end the
    # driver a minute later with its own message, so the run ends first, with its own line.
    head_lost: bool = False

    def __bool__(self) -> bool:
        return self.reason is not None


class Stopped(Exception):
    """The run stopped early; `outcomes` holds every attempt, the interrupted ones included."""

    def __init__(self, stop: Stop, outcomes: list[CellOutcome], engines: int) -> None:
        super().__init__(stop.reason)
        self.stop = stop
        self.outcomes = outcomes
        self.engines = engines
