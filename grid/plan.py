"""Group cells into engine launches. Pure."""

from __future__ import annotations

from vocab.cells import Cell, EngineSpec
from vocab.groups import EngineGroup


def group_by_engine(cells: list[Cell]) -> list[EngineGroup]:
    """Cells sharing a launch (engine spec, or shared argv: Cell.launch_key) and launch number become
    one group, in first-seen order; largest TP first. A shared group's spec is its first cell's."""
    order: dict[tuple[str, int], list[Cell]] = {}
    specs: dict[tuple[str, int], EngineSpec] = {}
    for cell in cells:
        key = (cell.launch_key, cell.launch)
        order.setdefault(key, []).append(cell)
        specs.setdefault(key, cell.engine_spec)
    groups = [EngineGroup(specs[key], tuple(group)) for key, group in order.items()]
    # Largest bundles first limits fragmentation; sorted() is stable within a size.
    return sorted(groups, key=lambda g: -g.gpus)
