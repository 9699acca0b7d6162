"""An engine launch and the cells it runs: what grid/plan.py makes and workers/runner.py runs."""

from __future__ import annotations

from dataclasses import dataclass

from vocab.cells import Cell, EngineSpec


@dataclass(frozen=True)
class EngineGroup:
    """One engine launch and the cells it runs, corpus after corpus."""

    spec: EngineSpec
    cells: tuple[Cell, ...]

    @property
    def gpus(self) -> int:
        return self.spec.model.tp
