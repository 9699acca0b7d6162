"""Issue 48: the multi-GPU validation composes and plans on the 8-GPU host (no engine starts)."""

from __future__ import annotations

from collections import Counter

from grid.cli.plan_report import plan_summary
from grid.config.compose import compose_config
from grid.config.expand import expand_all, to_config
from grid.plan.cost import group_cost, launch_order
from grid.plan.groups import group_by_engine
from grid.plan.simulate import SimJob, simulate

HOST = ["experiment=multi_gpu_validate", "cluster=device_h100x8", "plan.from_store=false"]


def placements(*overrides: str) -> list[tuple[float, float, int]]:
    """(start s, end s, GPUs) of every launch as grid/plan/simulate.py places it on the host."""
    config = to_config(compose_config([*HOST, *overrides]))
    groups = launch_order(group_by_engine(expand_all(config).cells), config.plan)
    jobs = [
        SimJob(f"{g.spec.label}#{i}", g.gpus, group_cost(g, config.plan).wall_s) for i, g in enumerate(groups)
    ]
    result = simulate(jobs, [8], 8)
    gpus = {job.label: job.gpus for job in jobs}
    return [(p.start_s, p.end_s, gpus[p.label]) for p in result.placements]


def running_at(plan: list[tuple[float, float, int]], t: float) -> Counter[int]:
    return Counter(gpus for start, end, gpus in plan if start <= t < end)


def test_the_experiment_plans_every_bundle_size_on_the_8_gpu_host():
    summary = plan_summary(HOST)
    sizes = {b["model"]: b["gpus"] for b in summary["bundles"]}
    assert sorted(sizes.values()) == [1, 1, 2, 4, 8]
    assert all(b["levers"] == ["suffix-k8", "van"] for b in summary["bundles"])
    assert summary["cluster"] == "device_h100x8" and summary["engine_launches"] == 10


def test_the_tp8_launches_run_alone_and_the_smaller_ones_pack_the_host():
    plan = placements()
    moments = {start for start, _, _ in plan}
    assert all(sum(g * n for g, n in running_at(plan, t).items()) <= 8 for t in moments)
    for start, _, gpus in plan:
        if gpus == 8:
            assert running_at(plan, start) == Counter({8: 1})
    # After the TP=8 launches, every GPU is busy: the two TP=4 launches, then TP=2 beside TP=1.
    assert Counter({2: 2, 1: 4}) in [running_at(plan, t) for t in moments]


def test_one_lever_at_a_time_packs_4_2_1_1_at_once_after_the_tp8_launch():
    plan = placements("grid.levers=[van]")
    after_tp8 = max(end for _, end, gpus in plan if gpus == 8)
    assert running_at(plan, after_tp8) == Counter({4: 1, 2: 1, 1: 2})
