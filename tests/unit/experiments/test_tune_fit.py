"""The tune fits its budget and its stage list to each other (issue 44: +20 % deployed >= 80 % within 2
GPU-hours per tune for SmolLM2 on one GPU): size.budget_gpu_h's default is 2 GPU-hours per GPU of the
model's engine, and where the stages cannot see a real size.min_gain lever within it the tune leaves out
dynk, then best_k (experiments/tune.py fit_stages, experiments/tune_size.py)."""

import json
import math

import pytest
from rich.console import Console

import experiments.tune as tune_module
from experiments.tune import compose_tune, priced_stages, size_stages
from experiments.tune_procedure import STAGES, stage_base
from experiments.tune_size import SizeSpec, fitted, stage_lists, tune_budget
from vocab.schema import ModelSpec

SHORT = ["van", "suffix", "kpad", "confirm"]
# SmolLM2 on one lent GPU, priced as make power prices it (experiments/procedure_power.py H200_PLAN).
ONE_GPU = [
    "grid.anchor.enabled=true",
    "+plan.rates.tiny=10165",
    "plan.engine_start_s=65",
    "cluster=device_h200",
]
# The H100's noise measured after issue 44's item 1 (docs/benchmarks/2026-12-06-h100-launch-noise.md).
H100 = ["size.sd_launch=0.039", "size.sd_block=0.082"]


def gpu_tune(tmp_path, *extra: str) -> list[str]:
    """The tune's overrides for SmolLM2 on one GPU, its store and outputs under tmp_path; few simulated
    tunes (the figures asserted hold whatever the simulation draws: the budget caps the design)."""
    grid = ",".join(f'"{o}"' for o in [*ONE_GPU, f"paths.store={tmp_path / 'store'}"])
    draws = [] if any(e.startswith("size.verify_draws=") for e in extra) else ["size.verify_draws=12"]
    return ["model=tiny", "experiment=gpu_validate", f"out_dir={tmp_path / 'out'}",
            f"grid_overrides=[{grid}]", *draws, *extra]  # fmt: skip


def sized(tmp_path, *extra: str, tp: int = 1) -> tuple[tune_module.Sizing, str, dict]:
    cfg = compose_tune(gpu_tune(tmp_path, *extra))
    console = Console(width=400, record=True)
    sizing = size_stages(cfg, ModelSpec(name="tiny", path="x", tp=tp), console)
    record = json.loads((tmp_path / "out" / "tiny" / "sizing.json").read_text())
    return sizing, console.export_text(), record


def test_by_default_a_one_gpu_tune_at_the_h100_noise_drops_the_k_sweep_and_dynk_to_fit_2_gpu_hours(tmp_path):
    sizing, text, record = sized(tmp_path, *H100)
    assert sizing.stages == SHORT
    assert record["stages"] == SHORT and record["configured_stages"] == list(STAGES)
    assert record["design"]["gpu_h"] <= 2.0 and record["budget_gpu_h"] == 2.0
    # Issue 44 asks the default tune to see +20 %. Priced with the gate's van replicates (a launch per
    # corpus a stage), 2 GPU-hours hold 5 launches: the formula sees +22.9 % (make power's budget rows
    # say how often the simulated tunes deploy +20 % there).
    assert record["gain"] == pytest.approx(0.229, abs=0.005) and record["design"]["launches"] == 5
    # Said up front: the budget and where it comes from, the gain each list sees, what was left out and
    # what budget would keep it; then the design with its GPU-hours.
    assert "within 2 GPU-hours (2 per GPU x 1 GPU of the model's engine: size.budget_gpu_h_per_gpu)" in text
    seen = "stages van,suffix,kpad,best_k,w4a4,dynk,confirm see +42.5%; without dynk +28.3%; "
    assert seen + "without dynk and best_k +17.6%" in text
    assert "runs stages van,suffix,kpad,confirm: dynk and best_k left out" in text
    kept = f"keeping dynk and best_k at {100 * record['gain']:+.1f}% (9 anchor runs) takes ~"
    assert (
        kept in text and "the fit keeps them from size.budget_gpu_h=9.2 (where every stage sees +10%)" in text
    )
    assert f"~{record['design']['gpu_h']:.2f} GPU-hours for the tune (budget 2)" in text


def test_a_budget_that_holds_the_whole_list_keeps_it(tmp_path):
    # 9 GPU-hours: where the default tune above says the fit keeps every stage.
    sizing, text, record = sized(tmp_path, *H100, "size.budget_gpu_h=9", "size.verify_draws=0")
    assert sizing.stages == list(STAGES) and record["stages"] == list(STAGES)
    assert "left out" not in text and "(budget 9)" in text
    assert record["design"]["gpu_h"] <= 9


def test_no_cap_keeps_the_whole_list(tmp_path):
    sizing, text, record = sized(tmp_path, *H100, "size.budget_gpu_h=inf", "size.verify_draws=0")
    assert sizing.stages == list(STAGES) and record["budget_gpu_h"] is None and "budget" not in text


def test_fit_stages_false_keeps_the_list_and_says_what_a_shorter_one_would_see(tmp_path):
    sizing, text, record = sized(tmp_path, *H100, "size.fit_stages=false", "size.verify_draws=0")
    assert sizing.stages == list(STAGES) and record["stages"] == list(STAGES)
    assert (
        "stages kept as configured (size.fit_stages=false); without dynk and best_k it would see +17.6%"
        in text
    )
    assert record["gain"] == pytest.approx(0.425, abs=0.005) and record["design"]["gpu_h"] <= 2.0


def test_a_stage_list_of_the_users_own_is_run_as_given(tmp_path):
    mine = ["van", "suffix", "kpad", "best_k", "confirm"]
    sizing, text, _ = sized(tmp_path, *H100, f"stages=[{','.join(mine)}]", "size.verify_draws=0")
    assert sizing.stages == mine
    assert "stages kept as configured (stages= given); without best_k it would see +17.6%" in text


def test_a_tp8_model_gets_16_gpu_hours_by_default(tmp_path):
    assert tune_budget(SizeSpec(), 8)[0] == 16.0 and tune_budget(SizeSpec(), 1)[0] == 2.0
    assert tune_budget(SizeSpec(budget_gpu_h=3.0), 8)[0] == 3.0  # a number is the cap, whatever the GPUs
    assert math.isinf(tune_budget(SizeSpec(budget_gpu_h=math.inf), 1)[0])
    assert math.isinf(tune_budget(SizeSpec(), 0)[0])  # CPU engines: no default cap (the demo)
    _, text, record = sized(tmp_path, *H100, "size.verify_draws=0", tp=8)
    assert record["budget_gpu_h"] == 16.0 and record["stages"] == list(STAGES) and "(budget 16)" in text


def test_the_fit_is_kept_for_a_resume_which_runs_the_same_stages(tmp_path, monkeypatch):
    ran = []

    def procedure(t):
        ran.append(list(t.cfg.stages))
        raise KeyboardInterrupt  # stop before anything runs

    monkeypatch.setattr(tune_module, "procedure", procedure)
    with pytest.raises(KeyboardInterrupt):
        tune_module.tune(gpu_tune(tmp_path, *H100), Console(quiet=True))
    record = json.loads((tmp_path / "out" / "tiny" / "sizing.json").read_text())
    assert ran == [SHORT] and record["stages"] == SHORT
    # Run again with no cap (which alone would keep every stage): the first sizing holds.
    console = Console(width=400, record=True)
    with pytest.raises(KeyboardInterrupt):
        tune_module.tune(gpu_tune(tmp_path, *H100, "size.budget_gpu_h=inf"), console)
    assert ran == [SHORT, SHORT] and "stages van,suffix,kpad,confirm, as sized when this tune started" in (
        console.export_text()
    )


def test_the_lists_the_fit_weighs_and_a_tie_keeps_the_longer():
    assert stage_lists(STAGES) == [tuple(STAGES), tuple(s for s in STAGES if s != "dynk"),
                                   ("van", "suffix", "kpad", "w4a4", "confirm")]  # fmt: skip
    assert stage_lists(["van", "suffix", "confirm"]) == [("van", "suffix", "confirm")]
    assert fitted([0.4, 0.3, 0.2]) == 2 and fitted([0.2, 0.3, 0.25]) == 0
    assert fitted([0.3, 0.297, 0.2]) == 2 and fitted([0.3, 0.297]) == 0  # 0.3 points: a tie
    assert fitted([math.inf, math.inf, 0.9]) == 2 and fitted([math.inf, math.inf]) == 0


def test_w4a4_is_priced_where_the_model_has_a_quantised_variant():
    cfg = compose_tune(["model=tiny"])
    base = stage_base(cfg, "tiny")
    plain, quantized = priced_stages(cfg, base), priced_stages(cfg, base, quantized=True)
    assert len(quantized) == len(plain) + 1
    assert any("grid.levers=[van,bestkpad,w4a4]" in stage for stage in quantized)


@pytest.mark.parametrize(
    "noise", ["H100_MEASURED", "TARGET_LAUNCHES", "H100_SUFFIX_MEASURED", "H100_PER_LEVER_MEASURED"]
)
def test_make_powers_budget_rows_are_the_designs_the_default_tune_sizes_at_their_noise(tmp_path, noise):
    # make power labels these rows "the default tune on one GPU": each must be the design (launches per
    # stage, anchor runs) and the stage list the tune sizes at that noise within its 2 GPU-hours, or the
    # table reports a tune nobody runs (it held 8 launches at the target noise, 2.39 GPU-h by plan price).
    import experiments.procedure_power as pp

    row = next(r for r in pp.BUDGET_ROWS if r[0] is getattr(pp, noise))
    spec = row[0]
    sizing, _, record = sized(tmp_path, f"size.sd_launch={spec.max_launch}", f"size.sd_block={spec.lever}")
    assert tuple(sizing.stages) == pp.SHORT_STAGES
    assert (record["design"]["launches"], record["design"]["blocks"]) == (row[1], 1)
    assert f"grid.anchor.runs={row[2]}" in record["grid_overrides"]
    assert record["design"]["gpu_h"] <= pp.BUDGET_44_GPU_H
