"""`plan`'s cost model. Pure.

GPU-seconds of an engine group = (engine start + sum over its cells of
output tokens / expected rate) x GPUs, where output tokens per cell =
(num_prompts + warmup_requests) x max_tokens x output_fill, a warm-up run to max_tokens
(load.warmup_ignore_eos) at a fill of 1. The rate is
plan.rates[model], else the rate measured in the store (plan.measured_rates), else the
model's expected_tok_per_s, else plan.default_tok_per_s; each figure says which one it
used. The engine start is the model's measured one (plan.measured_start_s), else the one measured
for its tensor-parallel size (plan.measured_start_s_by_tp), else the configured one for that size
(plan.engine_start_s_by_tp), else plan.engine_start_s; each figure says which one it used.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocab.cells import Cell
from vocab.groups import EngineGroup
from vocab.schema import ModelSpec, PlanConfig


@dataclass(frozen=True)
class GroupCost:
    group: EngineGroup
    rate_tok_per_s: float
    rate_source: str
    start_s: float
    run_s: float
    # The measured loads' share of run_s (warm-up and the engine's start are the rest).
    measured_s: float = 0.0
    start_source: str = "plan.engine_start_s"

    @property
    def wall_s(self) -> float:
        return self.start_s + self.run_s

    @property
    def gpu_s(self) -> float:
        return self.wall_s * self.group.gpus


def rate_for(model: ModelSpec, plan: PlanConfig) -> tuple[float, str]:
    """Expected output tok/s of one engine of `model`, and where the figure comes from."""
    if model.name in plan.rates:
        return plan.rates[model.name], "plan.rates override"
    if model.name in plan.measured_rates:
        return plan.measured_rates[model.name], "measured in the store"
    if model.expected_tok_per_s:
        return model.expected_tok_per_s, f"conf/model/{model.name}.yaml"
    return plan.default_tok_per_s, "plan.default_tok_per_s"


def start_for(model: ModelSpec, plan: PlanConfig) -> tuple[float, str]:
    """Seconds from launch to ready of one engine of `model`, and where the figure comes from.

    The model's own measured start, else its tensor-parallel size's measured, else configured one,
    else plan.engine_start_s: a TP=8 engine is not priced at a TP=1 engine's start."""
    if model.name in plan.measured_start_s:
        return plan.measured_start_s[model.name], "measured in the store"
    if model.tp in plan.measured_start_s_by_tp:
        return plan.measured_start_s_by_tp[model.tp], f"measured in the store (TP={model.tp} median)"
    if model.tp in plan.engine_start_s_by_tp:
        return plan.engine_start_s_by_tp[model.tp], f"plan.engine_start_s_by_tp[{model.tp}]"
    return plan.engine_start_s, "plan.engine_start_s"


def cell_output_tokens(cell: Cell, plan: PlanConfig) -> float:
    """Output tokens of the whole cell: a warm-up run to max_tokens (load.warmup_ignore_eos) fills it."""
    load = cell.load
    warmup_fill = 1.0 if load.warmup_ignore_eos else plan.output_fill
    return (load.num_prompts * plan.output_fill + load.warmup_requests * warmup_fill) * load.max_tokens


def cell_measured_tokens(cell: Cell, plan: PlanConfig) -> float:
    """Output tokens of the cell's measured load alone (its window, ramp and drain included)."""
    return cell.load.num_prompts * cell.load.max_tokens * plan.output_fill


def group_cost(group: EngineGroup, plan: PlanConfig) -> GroupCost:
    rate, source = rate_for(group.spec.model, plan)
    run_s = sum(cell_output_tokens(cell, plan) for cell in group.cells) / rate
    measured_s = sum(cell_measured_tokens(cell, plan) for cell in group.cells) / rate
    start_s, start_source = start_for(group.spec.model, plan)
    return GroupCost(group, rate, source, start_s, run_s, measured_s, start_source)


def launch_order(groups: list[EngineGroup], plan: PlanConfig) -> list[EngineGroup]:
    """Largest bundle first; within a size, the expansion's own order when the groups hold more
    than one repeat, else longest expected run first (LPT).

    With repeats, grid/config/expand.py orders launches repeat by repeat with the levers reversed on
    odd repeats (van, lever, lever, van, ...; shared launches likewise), so the launches a
    comparison pairs run next to each other and a slow drift cancels over the pairs. LPT
    would undo that wherever launches differ in length: a shared launch holding three levers'
    blocks is longer than van's, so every lever launch ran before every van launch, and the
    session's drift went whole into van against a lever. The price, simulated on the study's
    final grid on 4 x 8 GPUs (`grid simulate experiment=final cluster=h200x8_4nodes`): makespan
    83.4 -> 85.1 h (x1.000 -> x1.021 of the lower bound) under engine_reuse=auto, 71.0 -> 75.0 h
    (x1.006 -> x1.062) under shared; on one engine at a time the order costs nothing.
    """
    if len({c.repeat for g in groups for c in g.cells}) > 1:
        return sorted(groups, key=lambda g: -g.gpus)  # stable: the expansion's ABBA order within a size
    return sorted(groups, key=lambda g: (-g.gpus, -group_cost(g, plan).wall_s))
