"""The whole tune's error rates, simulated through experiments.tune's own procedure (issue 26).

Each test would fail without the rule it names: deploying only what the confirmation
confirms holds the false-deploy rate under 5 % where the procedure's choice alone does not;
pairing a stage inside one session keeps its false keep at the interval's rate however many
repeats, and buys the power an offset between sessions takes from an unpaired comparison.
"""

import math

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import experiments.procedure_power as pp
import experiments.tune_procedure as tune_module
from experiments.decide import KEEP
from experiments.procedure_power import (
    H200_LAUNCHES,
    MAX_FALSE_DEPLOY,
    NOISES,
    OFFSET,
    STRESS,
    GateModel,
    SimulatedTune,
    outcomes,
    procedure_row,
    stage_keep,
    tune_config,
)
from experiments.tune_procedure import procedure
from vocab.schema import ModelSpec

H200_5 = NOISES[2]  # the H200's measured spread with a 5 % offset between sessions


@pytest.fixture(scope="module")
def stress_null():
    """Whole tunes where nothing works, under a noise where the stages alone keep a null lever often."""
    return outcomes(STRESS, {}, n=5, draws=120, seed=3)


def test_the_confirmation_gate_holds_the_false_deploy_rate(stress_null):
    deployed = sum(o.deployed != "van" for o in stress_null) / len(stress_null)
    chosen = sum(o.candidate != "van" for o in stress_null) / len(stress_null)
    assert deployed <= MAX_FALSE_DEPLOY
    # The procedure's choice alone (what final.yaml deployed before issue 26) picks a lever that
    # does nothing more than twice as often as the target: the gate is what holds the rate.
    assert chosen > 2 * MAX_FALSE_DEPLOY


def test_without_the_confirmation_gate_the_same_simulation_misses_the_target(monkeypatch):
    # The rows go through tune.deployment: replaced by "deploy the procedure's choice", the very
    # simulation misses the target. So the table measures the deploy rule, not a copy of it.
    monkeypatch.setattr(pp, "deployment", lambda t, final, confirmation: (final, "ungated"))
    ungated = outcomes(STRESS, {}, n=5, draws=120, seed=3, workers=1)  # the patch lives in this process
    assert sum(o.deployed != "van" for o in ungated) / len(ungated) > 2 * MAX_FALSE_DEPLOY


def test_default_noise_deploys_a_real_gain_and_the_confirmation_interval_covers_it():
    row = procedure_row(NOISES[0], n=5, draws=40, seed=4)
    assert row.false_deploy <= MAX_FALSE_DEPLOY
    assert row.power_20 >= 0.9  # +20 % on every drafting lever at 1 % / 5 % noise: deployed nearly always
    assert row.power_10 >= 0.7
    # The confirmation's 90 % interval (fresh session, paired with van) holds the true 1.10 about
    # 90 % of the time: 40 draws give 36 +- 1.9 covered; 30 would be 3 SD out.
    assert 0.75 <= row.coverage <= 1.0


def test_a_paired_stage_keeps_a_null_lever_no_more_often_with_more_repeats():
    small = stage_keep(OFFSET, 3, draws=300, paired=True, seed=5)
    large = stage_keep(OFFSET, 12, draws=300, paired=True, seed=5)
    # One-sided 5 % of the t-interval, made stricter by the band: binomial sd at 300 draws ~1.3 %.
    assert small <= 0.08 and large <= small


def test_pairing_in_one_session_buys_the_power_an_offset_between_sessions_costs():
    paired = stage_keep(OFFSET, 8, draws=150, paired=True, effect=0.10, seed=6)
    unpaired = stage_keep(OFFSET, 8, draws=150, paired=False, effect=0.10, seed=6)
    assert paired > unpaired + 0.15


def test_the_simulated_evidence_is_what_the_analysis_functions_read_from_the_same_rows():
    cfg = tune_config()
    t = SimulatedTune(cfg, ModelSpec(name="sim", path="sim"), "sim", Console(quiet=True),
                      noise=H200_5, rng=np.random.default_rng(1), repeats=3, anchor_runs=5)  # fmt: skip
    procedure(t)
    fast, slow = t.evidence(), t.store_evidence()
    assert set(fast[1]["n_anchor_runs"]) == {5}
    columns = ["corpus", "lever", "k", "n", "median", "sessions", "repeats"]
    pd.testing.assert_frame_equal(
        fast[0][columns].reset_index(drop=True), slow[0][columns].reset_index(drop=True), check_dtype=False
    )
    drift_columns = ["session_id", "anchor_mean_tok_per_s", "drift_rel", "n_anchor_pairs", "anchor_log_ss",
                     "anchor_start_tok_per_s", "anchor_end_tok_per_s", "anchor_trend", "anchor_trend_se",
                     "anchor_trend_df", "trend_bound"]  # fmt: skip
    pd.testing.assert_frame_equal(fast[1][drift_columns], slow[1][drift_columns], check_dtype=False)


def test_paired_stages_measure_van_incumbent_and_candidate_in_one_session():
    cfg = tune_config(paired=True, stages=("van", "suffix", "kpad"), corpora=("code_complete",))
    t = SimulatedTune(cfg, ModelSpec(name="sim", path="sim"), "sim", Console(quiet=True),
                      effects=dict.fromkeys(pp.DRAFTING, 0.5), rng=np.random.default_rng(0),
                      repeats=3)  # fmt: skip
    procedure(t)
    by_session: dict[str, set[tuple[str, int]]] = {}
    for row in t.rows:
        if row["anchor"] is None:
            by_session.setdefault(row["session_id"], set()).add((row["lever"], row["k"]))
    assert sorted(by_session.values(), key=len) == [
        {("van", 0), ("suffix", 8)},
        {("van", 0), ("suffix", 8), ("bestkpad", 8)},  # suffix, +50 %, was kept: kpad's incumbent
    ]
    assert next(d.decision for d in t.decisions if d.stage in ("suffix", "kpad")) == KEEP


def test_the_real_tune_gives_each_paired_stage_its_own_prompt_seed(tmp_path):
    """The real Tune's stage(): the overrides each stage would run with (replay: nothing runs)."""
    from grid.config.catalog import load_spec

    cfg = tune_module.compose_tune(["model=tiny", f'grid_overrides=["paths.store={tmp_path}"]',
                                    "stages=[van,suffix,kpad]", f"out_dir={tmp_path}"])  # fmt: skip
    seen: list[list[str]] = []

    class Recording(tune_module.Tune):
        def run_stage(self, name, overrides):
            seen.append([name, *overrides])
            return super().run_stage(name, overrides)

    t = Recording(cfg, load_spec(ModelSpec, "tiny"), "rec", Console(quiet=True), replay=True)
    base = tune_module.to_config(tune_module.compose_config(t.base)).load.seed
    tune_module.procedure(t)
    assert seen == [
        ["suffix", "grid.levers=[van,suffix]", "+grid.ks.suffix=[8]", f"load.seed={base + 100}"],
        ["kpad", "grid.levers=[van,bestkpad]", "+grid.ks.bestkpad=[8]", f"load.seed={base + 200}"],
    ]
    assert not math.isnan(base)


def test_each_row_draws_its_own_tunes_and_the_processes_do_not_change_them():
    # The two H200 rows differ only in the session offset, which paired stages cancel: drawn from one
    # seed they were the same tunes and agreed to the digit. Each row now has its own draws.
    h2 = outcomes(NOISES[1], {}, n=3, draws=6, seed=pp.row_seed(7, pp.row_name(NOISES[1], 3, False, None)))
    h5 = outcomes(NOISES[2], {}, n=3, draws=6, seed=pp.row_seed(7, pp.row_name(NOISES[2], 3, False, None)))
    assert [o.confirm_lo for o in h2] != [o.confirm_lo for o in h5] or [o.kept_stages for o in h2] != [
        o.kept_stages for o in h5
    ]
    seed = pp.row_seed(7, "any row")
    one = outcomes(NOISES[0], pp._effects(0.1), n=3, draws=6, seed=seed, workers=1)
    two = outcomes(NOISES[0], pp._effects(0.1), n=3, draws=6, seed=seed, workers=2)
    assert one == two


def test_the_row_seeds_are_independent_of_each_other():
    names = [pp.row_name(s.noise, s.n, s.w4a4, s.gate, s.anchor_runs) for s in pp.table_rows(5)]
    assert len(set(names)) == len(names)
    firsts = {pp.row_seed(26, name, "null").generate_state(1)[0] for name in names}
    assert len(firsts) == len(names)


def test_a_launch_serves_both_corpora_of_its_repeat():
    quiet = pp.ProcedureNoise("launch only", 1e-9, 1e-9, 0.0, 0.0, launch=0.1)
    t = SimulatedTune(tune_config(), ModelSpec(name="sim", path="sim"), "sim", Console(quiet=True),
                      noise=quiet, rng=np.random.default_rng(2), repeats=3)  # fmt: skip
    t.stage("suffix", {"van": [], "suffix": [8]})
    by_launch: dict[tuple[str, int], list[float]] = {}
    for row in t.rows:
        if row["anchor"] is None:
            by_launch.setdefault((row["lever"], row["repeat"]), []).append(row["output_tok_per_s"])
    assert all(v == pytest.approx(values[0], rel=1e-6) for values in by_launch.values() for v in values)
    assert len({round(values[0], 6) for values in by_launch.values()}) == len(by_launch)
    assert (t.launches, t.solo_launches) == (3 * 2, 2)  # (van, suffix) x 3 repeats; two anchor launches
    assert H200_LAUNCHES.launch == 0.118


def test_with_the_gate_on_the_tune_deploys_only_what_the_gate_passed():
    gain = pp._effects(0.20)
    blocked = outcomes(NOISES[0], gain, n=5, draws=10, seed=8, gate=GateModel("never passes", pass_rate=0.0))
    assert all(o.deployed == "van" for o in blocked)
    open_gate = outcomes(NOISES[0], gain, n=5, draws=10, seed=8, gate=GateModel("passes", pass_rate=1.0))
    assert sum(o.deployed in pp.DRAFTING for o in open_gate) >= 9


def test_with_the_gate_on_the_default_noise_still_deploys_a_real_ten_percent():
    null = outcomes(NOISES[0], {}, n=5, draws=40, seed=12, gate=pp.GATE_ON)
    gain = outcomes(NOISES[0], pp._effects(0.10), n=5, draws=40, seed=12, gate=pp.GATE_ON)
    assert sum(o.deployed != "van" for o in null) <= 2
    # A deploy needs an identical lever to clear the gate at its keep and its confirmation on both
    # corpora: pooled over the tune's sessions (experiments/decide.py), ~98 % of the time.
    assert sum(o.deployed in pp.DRAFTING for o in gain) >= 28


def test_at_the_h200_launch_noise_anchor_runs_and_repeats_buy_the_power_at_twenty_percent():
    gain = pp._effects(0.20)
    budget = outcomes(H200_LAUNCHES, gain, n=15, draws=30, seed=13, gate=pp.GATE_ON, anchor_runs=9)
    today = outcomes(H200_LAUNCHES, gain, n=15, draws=30, seed=13, gate=pp.GATE_ON, anchor_runs=2)
    deployed = [sum(o.deployed in pp.DRAFTING for o in out) / 30 for out in (budget, today)]
    # 9 anchor runs give the band the anchors' trend x 1/15 (analysis.drift); 2 give their difference,
    # which holds two launches' noise (~17 %), and the tune deploys almost nothing.
    assert deployed[0] >= 0.65 and deployed[0] > deployed[1] + 0.4
    null = outcomes(H200_LAUNCHES, {}, n=15, draws=30, seed=14, gate=pp.GATE_ON, anchor_runs=9)
    assert sum(o.deployed != "van" for o in null) <= 2


def test_issue_44s_targets_are_said_with_intervals_and_the_cheapest_row_that_meets_them(monkeypatch):
    monkeypatch.setattr(pp, "SIZED_20", {pp.TARGET_LAUNCHES.name: (8, 9)})
    monkeypatch.setattr(pp, "DESIGNS_44", ((7, 7), (6, 9)))

    def row(n, runs, power_20, power_40, gpu_h, false_deploy=0.001):
        return pp.Row(pp.TARGET_LAUNCHES.name, False, n, false_deploy, 0.05, 0.3, power_20, 0.9, 2000, "on",
                      180.0, gpu_h, 500, runs, power_40)  # fmt: skip

    rows = [row(8, 9, 0.90, 0.97, 3.99), row(7, 7, 0.81, 0.96, 3.37), row(6, 9, 0.76, 0.97, 3.21)]
    lines = pp.issue_44_lines([*rows, row(5, 2, 0.1, 0.5, 1.0)])  # a row beside no design: not judged
    assert len(lines) == 4
    assert lines[0].startswith(
        f"target (issue 44): {pp.TARGET_LAUNCHES.name}, n=8, 9 anchor runs (the whole stage list as the tune"
    )
    assert (
        "+20 % 90.0% [87.1, 92.3] of 500" in lines[0] and "false deploy 0.1% [0.0, 0.4] of 2,000" in lines[0]
    )
    assert lines[0].endswith("3.99 GPU-h per tune: NOT met (above 2 GPU-h)")
    assert lines[2].endswith("NOT met (above 2 GPU-h) (power)")  # 76 % at +20 %
    assert lines[3].endswith("n=7, 7 anchor runs, 3.37 GPU-h per tune, above the 2 GPU-h issue 44 allows")
    cheap = pp.issue_44_lines([row(8, 9, 0.9, 0.97, 1.9)])
    assert cheap[0].endswith("1.90 GPU-h per tune: met") and cheap[1].endswith(
        "within the 2 GPU-h issue 44 allows"
    )


def test_the_budget_rows_run_the_short_stages_and_say_whether_they_meet_issue_44(monkeypatch):
    seen = []

    def row(
        noise, n, draws, seed, cfg=None, gate=None, workers=1, power_draws=None, costs=None, anchor_runs=2
    ):
        seen.append((tuple(cfg.stages), cfg.rules.require_equivalence, gate, n, anchor_runs))
        return pp.Row(noise.name, False, n, 0.0, 0.0, 0.2, 0.85, 0.9, draws, "on", 100.0,
                      1.6 if noise is pp.H100_MEASURED else 2.4, power_draws, anchor_runs, 0.98)  # fmt: skip

    monkeypatch.setattr(pp, "procedure_row", row)
    rows = pp.budget_rows(2000, 500, 26, 1, costs=None)
    assert seen == [(pp.SHORT_STAGES, True, pp.GATE_ON, n, runs) for _, n, runs in pp.BUDGET_ROWS]
    table = pp.budget_table(rows).splitlines()
    by_noise = {line.split(" | ")[0].lstrip("| "): line for line in table[-len(pp.BUDGET_ROWS) :]}
    measured = by_noise[pp.H100_MEASURED.name]
    assert measured.startswith(f"| {pp.H100_MEASURED.name} | 5 | 9 | 1.60 | 0.0% [0.0, 0.2] of 2,000 |")
    assert measured.endswith("| yes |") and by_noise[pp.TARGET_LAUNCHES.name].endswith("| no |")  # 2.4 GPU-h
    assert "the default tune on one GPU, fitted to its 2 GPU-hours" in table[0]
    said = pp.budget_target_lines(rows)
    assert said[0].startswith("target (issue 44): the default tune on one GPU (fitted to 2 GPU-h: stages")
    assert said[0].endswith(": met (+20 % 85.0%, +40 % 98.0%, false deploy 0.0%, 1.60 GPU-h per tune)")
    assert ": NOT met (" in said[1]
