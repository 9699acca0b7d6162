"""After a disk-full stop the bar and the closing line count the refused cell alike (issue 45 item 8):
pending (it was never stored), not `failed 1` on the bar beside `pending 1` on the closing line."""

from __future__ import annotations

import io

from rich.console import Console

import grid.orchestrate.schedule as schedule
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.run import cell_counts, launch
from grid.orchestrate.stop import Stop, Stopped
from grid.plan.groups import group_by_engine
from workers.context import CellOutcome, RunContext

FULL = "store cannot take results: /store is full (No space left on device)"


def test_a_cell_refused_for_a_full_store_is_pending_on_the_bar_as_on_the_closing_line(tmp_path, monkeypatch):
    config = to_config(
        compose_config(["experiment=smoke", f"paths.store={tmp_path / 'store'}", "grid.anchor.enabled=false"])
    )
    groups = group_by_engine(expand(config))
    total = sum(len(g.cells) for g in groups)
    ctx = RunContext("s1", tmp_path / "store", tmp_path / "cache", tmp_path / "models", tmp_path / "data")

    def full_store(phases, ctx, ray_cfg, max_attempts, on_outcome, stop, leases, on_tick, host_reruns):
        cell = phases[0][0].cells[0]
        outcome = CellOutcome(cell.key, cell.label, "a1", "failed", FULL, stops_run=True)
        on_outcome(outcome)  # as schedule's settle reports it, before the stop
        stop.reason = outcome.error
        raise Stopped(stop, [outcome], 0)

    monkeypatch.setattr(schedule, "run_phases", full_store)
    monkeypatch.setattr(schedule, "init_ray", lambda ray_cfg: [])
    monkeypatch.setattr(schedule, "in_flight_limit", lambda ray_cfg: 1)
    console = Console(record=True, width=300, file=io.StringIO())
    outcomes = launch([groups], ctx, config, console, Stop())
    bar = console.export_text()
    # The closing line's rule (conclude): an outcome that stops the run is no cell's last attempt.
    closing = cell_counts({o.cell_key: o for o in outcomes if not o.stops_run}, total)
    assert closing["failed"] == 0 and closing["pending"] == total
    assert f"failed 0 invalid 0 interrupted 0 pending {total}" in bar, bar
    assert "failed 1" not in bar and "last " not in bar, bar
