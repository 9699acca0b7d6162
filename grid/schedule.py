"""All of the project's Ray code: one actor per engine group, a bounded number in flight.

The driver never dies because a cell failed: worker failures and actor deaths
come back as failed outcomes. Results are written by the workers to the store;
what returns here is only for progress and the exit code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import ray
from ray.exceptions import RayError

from grid.plan import EngineGroup
from grid.schema import RayConfig
from workers.runner import CellOutcome, RunContext, new_attempt_id, run_group


class EngineWorker:
    """Holds one engine group's resources; its engine is a child process of this actor."""

    def run(self, group: EngineGroup, ctx: RunContext) -> list[CellOutcome]:
        return run_group(group, ctx)

    def pid(self) -> int:
        return os.getpid()


def init_ray(ray_cfg: RayConfig) -> None:
    """Join the cluster at ray.address, or start a local one (what `ray.init()` does)."""
    if ray.is_initialized():
        return
    ray.init(address=ray_cfg.address, include_dashboard=False, log_to_driver=False, configure_logging=False)


def actor_options(group: EngineGroup, ray_cfg: RayConfig) -> dict[str, Any]:
    return {
        "num_cpus": ray_cfg.cpus_per_engine,
        "num_gpus": group.gpus if ray_cfg.use_gpus else 0,
        # Retries are the driver's decision, never Ray's.
        "max_restarts": 0,
        "max_task_retries": 0,
    }


def lost_outcomes(group: EngineGroup, ctx: RunContext, error: str) -> list[CellOutcome]:
    """Outcomes for a group whose actor died before it could report."""
    return [CellOutcome(c.key, c.label, new_attempt_id(ctx.session_id), "failed", error) for c in group.cells]


def run_groups(
    groups: list[EngineGroup],
    ctx: RunContext,
    ray_cfg: RayConfig,
    on_outcome: Callable[[CellOutcome], None] = lambda _: None,
) -> list[CellOutcome]:
    """Run every group on the cluster; return all outcomes, in completion order."""
    init_ray(ray_cfg)
    worker_cls = ray.remote(EngineWorker)
    queue = list(groups)
    in_flight: dict[Any, tuple[EngineGroup, Any]] = {}
    outcomes: list[CellOutcome] = []
    while queue or in_flight:
        while queue and len(in_flight) < ray_cfg.max_in_flight:
            group = queue.pop(0)
            actor = worker_cls.options(**actor_options(group, ray_cfg)).remote()
            in_flight[actor.run.remote(group, ctx)] = (group, actor)
        ready, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in ready:
            group, actor = in_flight.pop(ref)
            try:
                results = ray.get(ref)
            except RayError as exc:
                results = lost_outcomes(
                    group, ctx, f"worker lost: {type(exc).__name__}: {exc}".splitlines()[0]
                )
            ray.kill(actor)
            for outcome in results:
                on_outcome(outcome)
            outcomes.extend(results)
    return outcomes
