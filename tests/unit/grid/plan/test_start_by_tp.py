"""Issue 48: the plan prices an engine's start by its tensor-parallel size, not one figure for all."""

from __future__ import annotations

import dataclasses

from grid.cli.plan_report import plan_summary
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.cost import group_cost, start_for
from grid.plan.groups import group_by_engine
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_cell

TP1_AND_TP8 = [
    "experiment=smoke",
    "engine=gpu",
    "ray.use_gpus=true",
    "cluster=h200x8_4nodes",
    "grid.models=[llama31_8b_shaped,llama31_405b_fp8]",
    "grid.levers=[van]",
    "grid.anchor.enabled=false",
    "plan.from_store=false",
]


def test_a_tp8_group_is_priced_at_the_tp8_start_and_a_tp1_group_at_the_tp1_one():
    config = to_config(compose_config([*TP1_AND_TP8, "+plan.engine_start_s_by_tp={1:60,8:300}"]))
    costs = {g.gpus: group_cost(g, config.plan) for g in group_by_engine(expand(config))}
    assert costs[8].start_s == 300 and costs[8].start_source == "plan.engine_start_s_by_tp[8]"
    assert costs[1].start_s == 60 and costs[1].start_source == "plan.engine_start_s_by_tp[1]"
    # GPU-seconds count the TP=8 start on all eight GPUs.
    assert costs[8].gpu_s == (300 + costs[8].run_s) * 8


def test_a_size_without_a_figure_falls_back_to_engine_start_s():
    config = to_config(compose_config([*TP1_AND_TP8, "+plan.engine_start_s_by_tp={8:300}"]))
    tp1 = next(g for g in group_by_engine(expand(config)) if g.gpus == 1)
    assert group_cost(tp1, config.plan).start_s == config.plan.engine_start_s == 180


def test_measured_per_model_beats_measured_per_tp_beats_configured_per_tp():
    config = to_config(compose_config(TP1_AND_TP8))
    model = next(g for g in group_by_engine(expand(config)) if g.gpus == 8).spec.model
    plan = dataclasses.replace(config.plan, engine_start_s_by_tp={8: 300.0})
    assert start_for(model, plan) == (300.0, "plan.engine_start_s_by_tp[8]")
    plan = dataclasses.replace(plan, measured_start_s_by_tp={8: 250.0})
    assert start_for(model, plan) == (250.0, "measured in the store (TP=8 median)")
    plan = dataclasses.replace(plan, measured_start_s={model.name: 200.0})
    assert start_for(model, plan) == (200.0, "measured in the store")


def test_the_store_measures_the_start_per_tp_size(tmp_path):
    """A model the store has not run is priced at the median start of the store's cells of its size."""
    layout = StoreLayout(tmp_path)
    cells = [("llama31_8b_shaped_tp2", 2, 100.0, True), ("llama31_8b_shaped_tp2", 2, 120.0, True),
             ("llama31_8b_shaped_tp2", 2, 900.0, False), ("llama31_8b_shaped", 1, 60.0, True)]  # fmt: skip
    for n, (model, gpus, ready_s, valid) in enumerate(cells):
        summary = {"model": model, "corpus": "chat_bench", "lever": "van", "k": 0, "repeat": n,
                   "output_tok_per_s": 5000.0, "engine_ready_s": ready_s, "gpus": gpus,
                   "valid": valid}  # fmt: skip
        write_cell(layout, "s1", n, f"c{n}", summary)
    overrides = [
        "experiment=smoke", "engine=gpu", "ray.use_gpus=true", "cluster=h200x8_4nodes",
        "grid.models=[llama31_70b,llama31_405b_fp8]", "grid.levers=[van]", "grid.anchor.enabled=false",
        "+plan.engine_start_s_by_tp={8:300}", f"paths.store={tmp_path}",
    ]  # fmt: skip
    bundles = {b["model"]: b for b in plan_summary(overrides)["bundles"]}
    # llama31_70b runs at TP=2: the INVALID 900 s launch is left out of the median.
    assert bundles["llama31_70b"]["engine_start_s"] == 110.0
    assert bundles["llama31_70b"]["start_source"] == "measured in the store (TP=2 median)"
    assert bundles["llama31_405b_fp8"]["engine_start_s"] == 300.0  # no TP=8 cell in the store
