"""`python -m grid run` whole: the grid at fixed repeats or in sequential looks, then the confirmation.

Above the three things it joins, so none of them imports another's caller: run.py runs one grid,
sequential.py runs its looks through a `run` it is given, confirm.py runs each model's held-out
confirmation through run.py. A plain run carries the confirmation as its `then`, run in its Ray
session before it leaves Ray; sequential looks share one Ray session with it.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from grid.config.compose import compose_config
from grid.config.expand import to_config
from grid.orchestrate.confirm import confirm
from grid.orchestrate.run import make_console, one_ray_session, run
from grid.orchestrate.sequential import run_sequential


def drive(overrides: list[str], console: Console | None = None) -> int:
    """Run the grid as its config says; the exit code of the first run that did not end clean, else 0."""
    console = console or make_console()
    config = to_config(compose_config(overrides))
    then = held_out(overrides, console) if config.grid.confirm.enabled else None
    if not config.grid.sequential.enabled:
        return run(overrides, console, then)
    with one_ray_session():  # the looks are grid runs of their own (grid/orchestrate/sequential.py)
        code = run_sequential(overrides, console, lambda argv: run(argv, console))
        if code == 0 and then is not None:
            code = then()
        return code


def held_out(overrides: list[str], console: Console) -> Callable[[], int]:
    """The held-out figure of each model's choice (confirm.py), after a run that left nothing undone."""

    def then() -> int:
        console.rule("held-out confirmation")
        return confirm(overrides)

    return then
