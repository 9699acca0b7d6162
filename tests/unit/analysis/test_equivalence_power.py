"""The paired equivalence gate's pass and catch rates by simulation, against the targets of
analysis/equivalence_power.py's module doc (issue 37 item 3)."""

import numpy as np
import pytest

from analysis.equivalence import widest_margin
from analysis.equivalence_power import (
    AT_MARGIN,
    DETERMINISTIC,
    FLOORS,
    H200_INDEPENDENT,
    H200_MEASURED,
    IDENTICAL,
    LEVERS,
    NS,
    QUIET_INDEPENDENT,
    draw_passes,
    draw_verdicts,
    excess_of,
    main,
    outcome_probabilities,
    simulate,
)
from vocab.schema import EquivalenceConfig

GATE = EquivalenceConfig()
# Prompt counts GPU grids judge levers on (the study's chat_bench 46, gpu_validate 78, gpu_short
# 160, summarize 281, study 512); the CPU's 25 and 40 run on the deterministic floor.
GPU_NS = (46, 78, 160, 281, 512)
NOISY = (H200_INDEPENDENT, H200_MEASURED, QUIET_INDEPENDENT)
# 4,000 draws: a rate of 95% has a standard error of 0.34 points; the targets are checked at
# 95% less one standard error here, and at 20,000 draws by `make power` (README).
DRAWS = 4_000
TARGET = 0.95 - 0.0035


@pytest.mark.parametrize("floor", FLOORS, ids=lambda f: f.name)
@pytest.mark.parametrize("excess", [0.0, 0.05, 0.10])
def test_the_model_reproduces_the_floor_and_the_excess(floor, excess):
    lever_only, floor_only, both, neither = outcome_probabilities(floor, excess)
    assert min(lever_only, floor_only, both, neither) >= 0
    assert floor_only + both == pytest.approx(floor.differ_share)  # the replicate's changed share
    assert lever_only - floor_only == pytest.approx(excess)  # d
    if excess == 0:
        assert lever_only + floor_only == pytest.approx(floor.discordant_share)


@pytest.mark.parametrize("floor", NOISY, ids=lambda f: f.name)
@pytest.mark.parametrize("n", GPU_NS)
def test_an_identical_lever_passes_at_least_95_percent_at_every_gpu_prompt_count(floor, n):
    # The 10-point gate passed it 56% at 160 prompts on the independent floor, 23-38% at 46.
    assert simulate(floor, 0.0, n, draws=DRAWS).passed >= TARGET


@pytest.mark.parametrize("floor", NOISY, ids=lambda f: f.name)
@pytest.mark.parametrize("n", GPU_NS)
def test_a_lever_at_the_margin_fails_at_least_95_percent_at_every_gpu_prompt_count(floor, n):
    excess = excess_of(AT_MARGIN, n, floor, GATE)
    # At 46 prompts on the measured H200 floor (65% changed) the widest margin, 36 points, is more
    # than the room the floor leaves: the lever there changes every output the replicate kept.
    assert excess == min(widest_margin(n, GATE), 1 - floor.differ_share)
    assert simulate(floor, excess, n, draws=DRAWS).caught >= TARGET


@pytest.mark.parametrize("n", NS)
def test_on_a_deterministic_floor_identical_passes_and_changed_outputs_fail(n):
    assert simulate(DETERMINISTIC, 0.0, n, draws=DRAWS).passed == 1.0
    assert simulate(DETERMINISTIC, widest_margin(n, GATE), n, draws=DRAWS).caught == 1.0
    if n >= 40:
        assert simulate(DETERMINISTIC, 0.10, n, draws=DRAWS).caught >= 0.95


def test_the_identical_pass_rate_is_what_the_widened_margin_buys():
    # Asking an identical lever to pass only half the time leaves a narrower margin, and it passes
    # about that often (the old 10-point gate: 23-38% at 46 prompts).
    half = EquivalenceConfig(identical_pass_rate=0.5)
    assert widest_margin(46, half) < widest_margin(46, GATE) - 0.08
    assert simulate(H200_INDEPENDENT, 0.0, 46, half, draws=DRAWS).passed < 0.75


def test_a_lever_beyond_what_the_floor_leaves_is_one_clear_error():
    with pytest.raises(ValueError, match=r"at most 1 - differ_share = 0\.35"):
        draw_passes(np.random.default_rng(0), 0.5, 46, floor=H200_MEASURED)


def test_below_min_prompts_nothing_passes():
    for floor in FLOORS:
        rates = simulate(floor, 0.0, GATE.min_prompts - 1, draws=1000)
        assert rates.passed == 0.0 and rates.no_reference == 1.0


def test_draw_passes_is_the_gate_s_verdict_for_a_lever_of_a_given_true_excess():
    # The call experiments/procedure_power.py makes to run with the gate on.
    rng = np.random.default_rng(5)
    verdicts = draw_verdicts(rng, 0.0, 46, draws=2000)
    assert set(verdicts) <= {"pass", "fail", "no_reference"}
    identical = draw_passes(np.random.default_rng(5), 0.0, 46, draws=2000)
    assert identical.dtype == bool and identical.shape == (2000,)
    assert (identical == (verdicts == "pass")).all()  # same stream, same verdicts
    bad = draw_passes(np.random.default_rng(6), 0.35, 46, draws=2000, floor=H200_MEASURED)
    assert identical.mean() >= 0.93 and bad.mean() <= 0.05
    assert draw_passes(rng, 0.0, 46).shape == (1,)


def test_the_entry_point_prints_a_markdown_table(capsys):
    main(["--draws", "200", "--path-draws", "200"])
    out = capsys.readouterr().out
    assert "| (any) | widest margin, points | 48." in out
    assert "| h200_independent (48% / 50%) | identical: pass |" in out
    assert "| deterministic (0% / 0%) | at the widest margin: caught | 100.0 |" in out
    # The floors' table, then the study corpora's (issue 46 item 4): a row per corpus, two where the
    # gate decides on more prompts than the measurement sends (chat_bench, summarize).
    # Then the tune's path (issue 44: the pooled gate), per corpus at 2 and 5 sessions pooled, the
    # study corpora's and the simulated tune's two.
    assert out.count("\n|") == 3 + len(LEVERS) * len(FLOORS) + 2 + 10 + 2 + 2 * (8 + 2)
    assert "| chat_bench (tune, gpu_short) | 78 | 5 |" in out
    assert "| summarize | 281 | 345 | 345 (gate decides on) |" in out
    # At 25 and 40 prompts the measured H200 floor leaves no room for a lever at the widest margin.
    assert "| h200_measured (65% / 21%) | at the widest margin: caught |" in out and "* the margin" in out
    assert IDENTICAL in LEVERS
