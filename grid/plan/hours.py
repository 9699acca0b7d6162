"""GPU-hours of a grid at a given number of repeats, priced as `plan` prices it (grid/plan/cost.py).

What the confirmation and the sequential looks add (grid/cli/plan_report.py) and what a simulated tune's
launches cost (experiments/procedure_power.py) are both read off this one price.
"""

from __future__ import annotations

from grid.config.compose import compose_config
from grid.config.expand import expand_all, to_config
from grid.plan.anchor import anchor_cells
from grid.plan.cost import group_cost
from grid.plan.groups import group_by_engine
from grid.plan.store_costs import with_store_costs


def gpu_hours_at(overrides: list[str], repeats: int) -> tuple[float, float]:
    """(GPU-hours of the grid's cells at `repeats` fixed, GPU-hours of one run's two anchor launches)."""
    config = to_config(
        compose_config([*overrides, f"grid.repeats={repeats}", "grid.sequential.enabled=false"])
    )
    config = with_store_costs(config)
    cells = sum(group_cost(g, config.plan).gpu_s for g in group_by_engine(expand_all(config).cells))
    anchors = anchor_cells(config) or []
    anchor_s = sum(group_cost(g, config.plan).gpu_s for cell in anchors for g in group_by_engine([cell]))
    return cells / 3600, anchor_s / 3600
