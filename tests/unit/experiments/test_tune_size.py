"""The tune sizes its stages to the noise it measures (issue 44 item 2): experiments/tune_size.py."""

import json
import math

import numpy as np
import pytest
from rich.console import Console

import experiments.procedure_power as pp
import experiments.tune as tune_module
from analysis.decision import judge_by_launch
from experiments.procedure_power import simulated_deploy_rate
from experiments.tune import compose_tune, size_stages
from experiments.tune_size import (
    Costs,
    Design,
    Noise,
    SizeSpec,
    cheapest_design,
    detectable_gain,
    noise_for,
    power_by_launch,
    verified_design,
)
from tests.unit.analysis.launch_store import Design as StoreDesign
from tests.unit.analysis.launch_store import write_store
from vocab.errors import ConfigError
from vocab.schema import ModelSpec

COSTS = Costs(per_launch_h=0.05, per_block_h=0.01, fixed_h=0.1)


def simulated_keep(gain: float, noise: Noise, launches: int, blocks: int, draws: int = 1500) -> float:
    """How often analysis.decision.judge_by_launch keeps a real `gain` (band 0), van and lever each on
    launches of their own, repeat r on launch r % launches."""
    rng = np.random.default_rng(7)
    kept = 0
    for _ in range(draws):
        sides = []
        for effect in (math.log1p(gain), 0.0):
            offsets = rng.normal(0.0, noise.sd_launch, launches)
            reps = range(launches * blocks)
            logs = [5 + effect + offsets[r % launches] + rng.normal(0, noise.sd_block) for r in reps]
            sides.append([("s", r, math.exp(v)) for r, v in enumerate(logs)])
        kept += judge_by_launch(sides[0], sides[1], 0.0, launches).real_gain
    return kept / draws


@pytest.mark.parametrize(("launches", "blocks"), [(4, 1), (6, 3)])
def test_the_power_formula_is_the_rules_own_keep_rate(launches, blocks):
    noise = Noise(0.06, 0.08, "test")
    formula = power_by_launch(0.10, noise, launches, blocks)
    assert 0.2 < formula < 0.95
    assert simulated_keep(0.10, noise, launches, blocks) == pytest.approx(formula, abs=0.035)


def test_more_noise_buys_more_launches_and_the_design_is_the_cheapest_that_reaches_the_power():
    spec = SizeSpec()
    quiet = cheapest_design(0.10, Noise(0.03, 0.05, "q"), COSTS, spec, blocks_allowed=False)
    loud = cheapest_design(0.10, Noise(0.118, 0.10, "l"), COSTS, spec, blocks_allowed=False)
    assert quiet is not None and loud is not None and loud.launches > quiet.launches
    for d, noise in ((quiet, Noise(0.03, 0.05, "q")), (loud, Noise(0.118, 0.10, "l"))):
        each = spec.power ** (1 / spec.tests_on_path)
        assert d.power_path >= spec.power and power_by_launch(0.10, noise, d.launches) >= each
        assert power_by_launch(0.10, noise, d.launches - 1) < each  # one launch fewer misses it
    # Blocks help only where the block term is what is large and starts are dear.
    blocky = cheapest_design(0.10, Noise(0.01, 0.15, "b"), Costs(1.0, 0.01, 0.0), spec, blocks_allowed=True)
    assert blocky is not None and blocky.blocks > 1


def test_a_budget_says_which_gain_it_sees():
    noise = Noise(0.118, 0.10, "h200")
    seen = detectable_gain(noise, COSTS, SizeSpec(), 1.0, blocks_allowed=False)
    assert seen is not None
    gain, design = seen
    assert design.gpu_h <= 1.0 and design.power_path >= 0.8
    # A gain 2 points smaller would not fit in the budget.
    assert cheapest_design(gain - 0.02, noise, COSTS, SizeSpec(), False).gpu_h > 1.0
    assert detectable_gain(noise, COSTS, SizeSpec(), 0.05, False) is None  # the anchors alone cost 0.1


def sized(tmp_path, *extra):
    """The CPU demo's tune (experiment smoke: engines get no GPU, so no default budget) sized."""
    off = [] if any(e.startswith("size.verify_draws=") for e in extra) else ["size.verify_draws=0"]
    cfg = compose_tune(["model=tiny", f"out_dir={tmp_path / 'out'}", *off,
                        f'grid_overrides=["paths.store={tmp_path / "store"}","grid.anchor.enabled=true"]',
                        *extra])  # fmt: skip
    console = Console(width=300, record=True)
    return cfg, size_stages(cfg, ModelSpec(name="tiny", path="x"), console).grid_overrides


def test_a_budget_that_sees_nothing_useful_stops_the_tune_before_launch(tmp_path, monkeypatch):
    monkeypatch.setattr(tune_module, "procedure", lambda t: pytest.fail("the procedure ran"))
    overrides = ["model=tiny", f"out_dir={tmp_path}", "size.budget_gpu_h=0.001",
                 f'grid_overrides=["paths.store={tmp_path / "s"}","grid.anchor.enabled=true"]']  # fmt: skip
    with pytest.raises(ConfigError, match=r"size.budget_gpu_h=0.001: at this noise the tune sees"):
        tune_module.tune(overrides)


def test_the_stages_get_the_sized_repeats_and_a_resume_keeps_them(tmp_path):
    cfg, overrides = sized(tmp_path, "size.sd_launch=0.05", "size.sd_block=0.05")
    design = cheapest_design(0.10, Noise(0.05, 0.05, ""), Costs(1, 0, 0), cfg.size, False)
    assert overrides == [f"grid.repeats={design.launches}"]
    record = json.loads((tmp_path / "out" / "tiny" / "sizing.json").read_text())
    assert record["design"]["launches"] == design.launches
    # Run again with other noise (as a store that grew would give): the first sizing holds.
    _, again = sized(tmp_path, "size.sd_launch=0.2", "size.sd_block=0.2")
    assert again == overrides


def test_repeats_the_user_gives_win_and_their_power_is_said(tmp_path):
    cfg = compose_tune(["model=tiny", f"out_dir={tmp_path}",
                        f'grid_overrides=["paths.store={tmp_path / "s"}","grid.repeats=3"]'])  # fmt: skip
    console = Console(width=300, record=True)
    assert size_stages(cfg, ModelSpec(name="tiny", path="x"), console).grid_overrides == []
    text = console.export_text()
    assert (
        "grid.repeats=3 as given (3 launches x 1 block)" in text
        and "power to deploy a real +10% lever" in text
    )


def test_the_noise_comes_from_the_store_where_it_has_components(tmp_path):
    store = write_store(tmp_path / "store", StoreDesign(sessions=1, launches=3, blocks=4, sd_launch=0.2))
    noise = noise_for(str(store), "smol", ["van", "suffix"], SizeSpec())
    assert noise.source.startswith("measured") and noise.sd_launch > 0.05
    assert noise_for(str(tmp_path / "none"), "smol", ["van"], SizeSpec()).source.startswith("prior")


def test_the_design_is_checked_through_the_tunes_own_simulation_and_launches_added_where_it_falls_short():
    asked = []

    def rate(gain, noise, launches, anchor_runs, gate, draws):
        asked.append(launches)
        return 0.5 + 0.05 * launches  # the simulated tune reaches 80 % at 6 launches

    noise, spec = Noise(0.03, 0.05, "t"), SizeSpec(verify_draws=10)
    design, found = verified_design(Design(4, 1, 0.9, 0.81, 0.0), 0.2, noise, COSTS, spec, 2, True, rate)
    assert design.launches == 6 and found == pytest.approx(0.8) and asked == [4, 5, 6]
    assert design.gpu_h == pytest.approx(COSTS.gpu_h(6, 1))
    # Within a budget it stops where one step more would cost above it, and says the rate it has.
    capped, found = verified_design(Design(4, 1, 0.9, 0.81, 0.0), 0.2, noise, COSTS, spec, 2, True, rate,
                                    max_gpu_h=COSTS.gpu_h(5, 1))  # fmt: skip
    assert capped.launches == 5 and found == pytest.approx(0.75)
    # Off: the formula's design as it is.
    same, nan = verified_design(
        Design(4, 1, 0.9, 0.81, 0.0), 0.2, noise, COSTS, SizeSpec(verify_draws=0), 2, True, rate
    )
    assert same.launches == 4 and math.isnan(nan) and asked == [4, 5, 6, 4, 5]  # not asked again


def test_where_the_formula_overshoots_the_simulated_tune_takes_launches_away():
    asked = []

    def rate(gain, noise, launches, anchor_runs, gate, draws):
        asked.append(launches)
        return 0.5 + 0.05 * launches  # the simulated tune reaches 80 % at 6 launches

    noise, spec = Noise(0.03, 0.05, "t"), SizeSpec(verify_draws=10)
    design, found = verified_design(Design(9, 1, 0.9, 0.81, 0.0), 0.2, noise, COSTS, spec, 2, True, rate)
    assert design.launches == 6 and found == pytest.approx(0.8) and asked == [9, 8, 7, 6, 5]
    assert design.gpu_h == pytest.approx(COSTS.gpu_h(6, 1))


def test_the_tune_says_how_many_launches_the_simulation_moved_from_the_formulas_design():
    from experiments.tune import formula_words

    assert formula_words(0) == ""
    assert formula_words(2) == ", 2 launches added to the formula's"
    assert formula_words(-1) == ", 1 launch taken from the formula's"


def test_the_simulated_rate_is_the_tunes_deploy_rate():
    quiet, loud = Noise(0.01, 0.02, "q"), Noise(0.118, 0.10, "l")
    assert simulated_deploy_rate(0.4, quiet, 4, 2, False, 30) >= 0.9
    assert simulated_deploy_rate(0.1, loud, 3, 2, False, 30) <= 0.2


def test_where_two_anchor_runs_cap_the_power_the_tune_asks_for_more(tmp_path, monkeypatch):
    def rate(gain, noise, launches, anchor_runs, gate, draws, stages, engine_reuse):
        return 0.6 if anchor_runs == 2 else 0.5 + 0.05 * launches  # two runs' band caps it at 60 %

    monkeypatch.setattr(tune_module, "simulated_deploy_rate", rate)
    _, overrides = sized(tmp_path, "size.verify_draws=10", "size.sd_launch=0.05", "size.sd_block=0.05")
    assert "grid.anchor.runs=9" in overrides
    launches = int(next(o for o in overrides if o.startswith("grid.repeats=")).split("=")[1])
    assert 0.5 + 0.05 * launches >= 0.8


def test_the_design_is_checked_on_the_stages_the_tune_runs(tmp_path, monkeypatch):
    seen = set()

    def rate(gain, noise, launches, anchor_runs, gate, draws, stages, engine_reuse):
        seen.add((stages, engine_reuse))
        return 0.9

    monkeypatch.setattr(tune_module, "simulated_deploy_rate", rate)
    sized(tmp_path, "size.verify_draws=10", "stages=[van,suffix,kpad,confirm]")
    # and launches as the tune's grid does: engine_reuse=auto, the drafting levers per corpus.
    assert seen == {(("van", "suffix", "kpad", "confirm"), "auto")}
    found = []
    monkeypatch.setattr(pp, "outcomes", lambda *a, **k: found.append(k["cfg"].stages) or [])
    pp.simulated_deploy_rate(0.2, Noise(0.05, 0.1, "t"), 3, 2, True, 1, stages=("van", "suffix", "confirm"))
    assert found == [["van", "suffix", "confirm"]]


def test_the_store_gives_each_lever_its_own_launch_sd_and_the_simulated_check_runs_under_them(monkeypatch):
    # The H100 measured 6.4 % for van, 11.1 % for suffix, 3.9 % for bestkpad: the formula takes their
    # root mean square, the tune's simulated check each lever's own (van's for the anchor's runs).
    import pandas as pd

    import analysis.power

    table = pd.DataFrame(
        [("smol", "van", 0, 0.064, 0.09), ("smol", "suffix", 4, 0.143, 0.09),
         ("smol", "bestkpad", 8, 0.039, 0.08), ("smol", "bestkpad", 4, 0.039, 0.08),
         ("other", "suffix", 4, 0.5, 0.5)],
        columns=["model", "lever", "k", "sd_launch", "sd_block"],
    )  # fmt: skip
    monkeypatch.setattr(analysis.power, "components_from_store", lambda path: table)
    noise = noise_for("store", "smol", ["van", "suffix", "bestkpad"], SizeSpec())
    assert dict(noise.lever_launch) == pytest.approx({"van": 0.064, "suffix": 0.143, "bestkpad": 0.039})
    rows = [0.064, 0.143, 0.039, 0.039]
    assert noise.sd_launch == pytest.approx(math.sqrt(sum(x * x for x in rows) / 4))
    assert "suffix 0.1430" in noise.source and noise.source.startswith("measured")

    model = pp.sized_model(noise)
    assert model.launch == pytest.approx(0.064)
    assert model.launch_of("suffix") == pytest.approx(0.143) and model.launch_of("bestkpad") == pytest.approx(
        0.039
    )

    seen = []

    def outcomes(model, effects, n, draws, seed, **kw):
        seen.append(model)
        return []

    monkeypatch.setattr(pp, "outcomes", outcomes)
    simulated_deploy_rate(0.2, noise, 6, 9, True, 1)
    assert seen == [model]


def test_a_prior_or_a_store_without_per_lever_terms_runs_one_launch_sd_for_all():
    prior = Noise(0.118, 0.10, "prior")
    assert pp.sized_model(prior).launch == 0.118 and pp.sized_model(prior).lever_launch == ()
    # A store whose van launch term came out 0 (the ANOVA clips at 0) still gives suffix its own.
    clipped = pp.sized_model(Noise(0.1, 0.1, "measured", (("suffix", 0.14), ("van", 0.0))))
    assert 0 < clipped.launch < 1e-6 and clipped.launch_of("suffix") == 0.14


def test_the_price_is_grid_plans_at_every_design_with_what_a_stage_launches_once():
    # A stage's GPU-hours, L launches of one block: L x per launch + what it launches once (the gate's
    # van replicates, a launch per corpus) + the anchors. Priced from two and three launches, the cost
    # must give grid plan's price at four as well; without the once term it fell short by the
    # replicates at every design (the sizer read 6 launches as 1.93 GPU-h, the simulated tunes 2.03).
    from experiments.tune_size import tune_costs
    from grid.plan.hours import gpu_hours_at

    stage = ["experiment=gpu_validate", "grid.models=[tiny]", "grid.levers=[van,suffix]",
             "+grid.ks.suffix=[8]", "grid.anchor.enabled=true", "+plan.rates.tiny=10165",
             "cluster=device_h200"]  # fmt: skip

    costs = tune_costs([stage], blocks_allowed=False)
    cells_h, anchors_h = gpu_hours_at(stage, 4)
    assert costs.gpu_h(4, 1) == pytest.approx(cells_h + anchors_h)
    assert costs.once_h > 0  # the replicates are there to price
    assert costs.with_anchor_runs(9, 2).once_h == costs.once_h  # more anchor runs, no more replicates
