"""Simulate the scheduler on a described cluster: makespan against its lower bound. Pure.

Mirrors grid/orchestrate/schedule.py: engine groups are submitted in the scheduler's order
(largest bundle first), at most max_in_flight at a time; a submitted group
starts as soon as one node has enough free GPUs (best fit: the fullest node
that fits, which is how Ray packs a STRICT_PACK bundle when several fit), and
frees them when done. Durations come from the plan's cost model (grid/plan/cost.py).

Lower bound = max(total GPU-seconds / total GPUs, longest group): no schedule
can beat either.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from vocab.errors import ConfigError


@dataclass(frozen=True)
class SimJob:
    label: str
    gpus: int
    duration_s: float


@dataclass(frozen=True)
class Placement:
    label: str
    node: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class SimResult:
    makespan_s: float
    lower_bound_s: float
    placements: list[Placement]

    @property
    def ratio(self) -> float:
        """makespan / lower bound (1.0 is optimal)."""
        return self.makespan_s / self.lower_bound_s if self.lower_bound_s else 1.0


def lower_bound(jobs: list[SimJob], node_gpus: list[int]) -> float:
    """max(total GPU-seconds / total GPUs, longest job)."""
    total_gpu_s = sum(j.gpus * j.duration_s for j in jobs)
    return max(total_gpu_s / sum(node_gpus), max((j.duration_s for j in jobs), default=0.0))


def best_fit(free: list[int], gpus: int) -> int | None:
    """Index of the node with the fewest free GPUs that still fits `gpus`."""
    fitting = [(f, i) for i, f in enumerate(free) if f >= gpus]
    return min(fitting)[1] if fitting else None


def simulate(jobs: list[SimJob], node_gpus: list[int], max_in_flight: int) -> SimResult:
    """Event-driven replay of the scheduler; jobs must be in submission order."""
    if any(j.gpus > max(node_gpus) for j in jobs):
        raise ConfigError("a job needs more GPUs than the largest node has")
    free = list(node_gpus)
    queue = list(jobs)
    pending: list[SimJob] = []
    running: list[tuple[float, int, int, SimJob]] = []  # (end, seq, node, job)
    placements: list[Placement] = []
    now, seq = 0.0, 0
    while queue or pending or running:
        while queue and len(pending) + len(running) < max_in_flight:
            pending.append(queue.pop(0))
        for job in list(pending):
            node = best_fit(free, job.gpus)
            if node is None:
                continue
            free[node] -= job.gpus
            pending.remove(job)
            heapq.heappush(running, (now + job.duration_s, seq, node, job))
            placements.append(Placement(job.label, node, now, now + job.duration_s))
            seq += 1
        end, _, node, job = heapq.heappop(running)
        now = end
        free[node] += job.gpus
    return SimResult(now, lower_bound(jobs, node_gpus), placements)
