"""The gate at the prompts it decides on per study corpus (issue 46 item 4): a lever ten points worse
than van's rerun caught >= 80 %, an identical one passed >= 95 %; where a corpus is too small for
that, the verdict says which power it has."""

import pytest

from analysis.equivalence import DETECT_EXCESS, DETECT_POWER, judge_paired, paired_from_counts
from analysis.equivalence_power import (
    H200_INDEPENDENT,
    H200_MEASURED,
    NOISY_FLOORS,
    STUDY_CORPORA,
    gate_prompts,
    simulate,
)
from vocab.schema import EquivalenceConfig

GATE = EquivalenceConfig()
# 2,000 draws: standard error about 0.9 points at 80 %, 0.5 at 95 %; targets checked less one.
DRAWS = 2_000
POWERED = sorted({gate_prompts(c) for c in STUDY_CORPORA if gate_prompts(c) >= 300})


def test_every_study_corpus_but_chat_bench_holds_the_prompts_the_gate_needs():
    assert {c.name for c in STUDY_CORPORA if gate_prompts(c) < 300} == {"chat_bench"}
    assert POWERED == [345, 512]  # summarize: its 281 measured prompts and 64 more, apart


@pytest.mark.parametrize("floor", NOISY_FLOORS, ids=lambda f: f.name)
@pytest.mark.parametrize("n", POWERED)
def test_a_lever_10_points_worse_is_caught_80_percent_at_the_gate_s_prompts(floor, n):
    caught = simulate(floor, DETECT_EXCESS, n, GATE, DRAWS).caught
    assert caught >= DETECT_POWER - 0.009, f"{floor.name} at {n} prompts: caught {caught:.1%}"


@pytest.mark.parametrize("floor", NOISY_FLOORS, ids=lambda f: f.name)
@pytest.mark.parametrize("n", [110, *POWERED])
def test_an_identical_lever_passes_95_percent_at_the_gate_s_prompts(floor, n):
    passed = simulate(floor, 0.0, n, GATE, DRAWS).passed
    assert passed >= 0.95 - 0.005, f"{floor.name} at {n} prompts: passed {passed:.1%}"


@pytest.mark.parametrize("floor", [H200_INDEPENDENT, H200_MEASURED], ids=lambda f: f.name)
def test_chat_bench_s_verdict_says_which_power_it_has(floor):
    n = gate_prompts(next(c for c in STUDY_CORPORA if c.name == "chat_bench"))
    discordant = round(floor.discordant_share * n)
    verdict = judge_paired(paired_from_counts(n, discordant // 2, discordant - discordant // 2, 0), GATE)
    assert "power: at 110 prompts" in verdict.reason
    assert simulate(floor, DETECT_EXCESS, n, GATE, DRAWS).caught < DETECT_POWER
