"""Which model runner each lever gets on a GPU, and the launches vLLM refuses, as `grid plan` says them."""

from __future__ import annotations

import dataclasses

from grid.cli.plan_report import plan_summary
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.model_runner import V2_ENV, refusal, runner, runner_note


def specs(*overrides: str):
    cells = expand(to_config(compose_config(["experiment=smoke", *overrides])))
    return {cell.engine_spec.lever.name: cell.engine_spec for cell in cells}


def test_suffix_decoding_runs_on_v1_and_every_other_lever_on_v2():
    by_lever = specs("grid.levers=[van,van_noasync,suffix,bestkpad,dynk]")
    assert {name: runner(spec) for name, spec in by_lever.items()} == {
        "van": "V2",
        "van_noasync": "V2",
        "suffix": "V1",
        "bestkpad": "V1",
        "dynk": "V1",
    }


def test_the_plan_says_it_where_a_comparison_crosses_runners():
    note = runner_note(specs().values())  # smoke: van and suffix
    assert note is not None
    assert "suffix on the V1 runner with async scheduling off" in note
    assert "van on Model Runner V2: comparing them also compares runners" in note
    assert "MoE" not in note  # tiny is dense
    assert runner_note(specs("grid.levers=[suffix,bestkpad]").values()) is None  # one runner
    summary = plan_summary(["experiment=smoke"])
    assert summary["model_runner"] == {"by_lever": {"van": "V2", "suffix": "V1"}, "note": note}


def test_a_moe_model_on_v2_is_named():
    moe = [dataclasses.replace(s, model=dataclasses.replace(s.model, moe=True)) for s in specs().values()]
    assert "MoE models only from 0.32" in runner_note(moe)


def test_the_launches_vllm_refuses_are_plan_warnings():
    suffix = specs()["suffix"]
    assert refusal(suffix) is None and refusal(specs()["van"]) is None
    forced = dataclasses.replace(suffix, engine=dataclasses.replace(suffix.engine, env={V2_ENV: "1"}))
    assert "VLLM_USE_V2_MODEL_RUNNER=1 with suffix decoding" in refusal(forced)
    asked = dataclasses.replace(suffix, lever=dataclasses.replace(suffix.lever, async_scheduling=True))
    assert "async scheduling asked with suffix decoding" in refusal(asked)
    summary = plan_summary(["experiment=smoke", f'+engine.env.{V2_ENV}="1"'])
    assert [w for w in summary["warnings"] if V2_ENV in w] == [
        refusal(specs(f'+engine.env.{V2_ENV}="1"')["suffix"])
    ]
