"""An engine launch and the cells it runs: what grid/plan/groups.py makes and workers/runner.py runs."""

from __future__ import annotations

from dataclasses import dataclass

from vocab.cells import Cell, EngineSpec, draft_hook, drafts_from_history


@dataclass(frozen=True)
class EngineGroup:
    """One engine launch and the cells it runs, corpus after corpus."""

    spec: EngineSpec
    cells: tuple[Cell, ...]

    @property
    def gpus(self) -> int:
        return self.spec.model.tp

    @property
    def shared(self) -> bool:
        """A shared launch (grid.engine_reuse=shared): reset before every cell, the draft hook selected."""
        return any(cell.shared for cell in self.cells)

    @property
    def switches_hook(self) -> bool:
        """Whether the launch runs the switch plugin: a shared launch of suffix-family levers."""
        return self.shared and draft_hook(self.spec.lever) is not None

    @property
    def resets(self) -> bool:
        """Whether the engine is reset to fresh between cells (docs/reset.md): every shared launch,
        and every drafting one (its suffix tree remembers earlier cells' outputs)."""
        return self.shared or drafts_from_history(self.spec.lever)

    @property
    def levers(self) -> tuple[str, ...]:
        """Lever names of the launch's cells, in first-seen order."""
        return tuple(dict.fromkeys(cell.engine_spec.lever.name for cell in self.cells))
