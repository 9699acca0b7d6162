"""The paired equivalence gate's pass and catch rates by simulation, against the targets of
analysis/equivalence_power.py's module doc."""

import pytest

from analysis.equivalence import excess_changed_upper_bound
from analysis.equivalence_power import (
    DETERMINISTIC,
    FLOORS,
    H200_INDEPENDENT,
    H200_MEASURED,
    main,
    outcome_probabilities,
    simulate,
)
from vocab.schema import EquivalenceConfig

GATE = EquivalenceConfig()
# The bound's level at the margin, less what the bound's approximation and finite draws cost.
MIN_CAUGHT_AT_MARGIN = 1 - GATE.alpha - 0.01


@pytest.mark.parametrize("floor", FLOORS, ids=lambda f: f.name)
@pytest.mark.parametrize("excess", [0.0, 0.05, 0.10])
def test_the_model_reproduces_the_floor_and_the_excess(floor, excess):
    lever_only, floor_only, both, neither = outcome_probabilities(floor, excess)
    assert min(lever_only, floor_only, both, neither) >= 0
    assert floor_only + both == pytest.approx(floor.differ_share)  # the replicate's changed share
    assert lever_only - floor_only == pytest.approx(excess)  # d
    if excess == 0:
        assert lever_only + floor_only == pytest.approx(floor.discordant_share)


def test_an_identical_lever_passes_often_enough_where_the_prompts_allow():
    assert simulate(H200_MEASURED, 0.0, 160).passed >= 0.80
    assert simulate(H200_INDEPENDENT, 0.0, 320).passed >= 0.80
    # At the noisiest floor 160 prompts are not enough for 80%: the figure the README quotes.
    assert 0.45 <= simulate(H200_INDEPENDENT, 0.0, 160).passed < 0.80
    for n in (40, 80, 160):
        assert simulate(DETERMINISTIC, 0.0, n).passed == 1.0


def test_below_min_prompts_nothing_passes():
    for floor in FLOORS:
        rates = simulate(floor, 0.0, GATE.min_prompts - 1)
        assert rates.passed == 0.0 and rates.no_reference == 1.0


@pytest.mark.parametrize("floor", [H200_INDEPENDENT, H200_MEASURED], ids=lambda f: f.name)
@pytest.mark.parametrize("n", [40, 160, 320])
def test_a_lever_at_the_margin_is_caught_at_the_bounds_level_at_any_n(floor, n):
    # The old McNemar gate caught a +10-point lever 9-24% of the time at 20-40 prompts.
    assert simulate(floor, GATE.noninferiority_margin, n).caught >= MIN_CAUGHT_AT_MARGIN


def test_on_a_deterministic_floor_changed_outputs_are_caught_from_80_prompts():
    for excess in (0.05, 0.10):
        for n in (80, 160, 320):
            assert simulate(DETERMINISTIC, excess, n).caught >= 0.95


def test_a_wider_margin_would_let_the_plus_10_lever_through():
    # The targets above bind: at a 20-point margin the +10 lever mostly passes.
    wide = EquivalenceConfig(noninferiority_margin=0.20)
    assert excess_changed_upper_bound(0, 0, 25, wide.alpha) < wide.noninferiority_margin
    assert simulate(H200_MEASURED, 0.10, 320, wide).caught < 0.5


def test_the_entry_point_prints_a_markdown_table(capsys):
    main(["--draws", "200"])
    out = capsys.readouterr().out
    assert "| h200_independent (48% / 50%) | identical: pass |" in out
    assert "| deterministic (0% / 0%) | +10 points: caught |" in out
    assert out.count("\n|") == 2 + 4 * len(FLOORS)
