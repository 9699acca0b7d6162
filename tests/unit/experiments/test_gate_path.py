"""The tune judges a lever's equivalence on the pooled evidence of its path (issue 44): a keep on the
sessions of the tune that measured it so far, the confirmation on all of them, each look at its share
of the path's budget (TuneRules.gate_path_pass, gate_keep_share). Before, each look read one session's
verdict at 95 %: an identical lever cleared the four looks of its path (two looks, two corpora) ~92 %
of the time, which capped a real +40 % lever's deploy there, and a lever 10 points worse was deployed
one time in five."""

import dataclasses

import pandas as pd
import pytest

import experiments.procedure_power as pp
from analysis.equivalence import FAIL, PASS
from experiments.decide import KEEP, REJECT, GateLook, LeverConfig, TuneRules, decide_change
from vocab.schema import EquivalenceConfig

CORPORA = ["code_complete", "chat_bench"]
VAN = LeverConfig.uniform("van", 0, CORPORA)
SUFFIX = LeverConfig.uniform("suffix", 8, CORPORA)
FIGURES = pd.DataFrame(
    [
        {"model": "tiny", "corpus": c, "lever": lever, "k": k, "n": 3, "median": v, "mad": 0.0,
         "sessions": ("A",), "repeats": tuple(("A", r, v * f) for r, f in enumerate((0.995, 1.0, 1.005)))}
        for c in CORPORA
        for lever, k, v in (("van", 0, 100.0), ("suffix", 8, 140.0))
    ]
)  # fmt: skip
DRIFT = pd.DataFrame(
    [("A", "tiny", "code_complete", "van", 0, 100.0, 0.01)],
    columns=["session_id", "model", "corpus", "lever", "k", "anchor_mean_tok_per_s", "drift_rel"],
)


def gate_row(session, corpus, against, for_lever, both, verdict, n=78):
    return {
        "session_id": session, "judged_at": f"2026-12-0{session[-1]}", "model": "tiny", "lever": "suffix",
        "k": 8, "corpus": corpus, "cell_key": f"{session}/{corpus}", "floor_cell_key": "replicate",
        "changes_outputs": False, "n_prompts": n, "discordant_against_lever": against,
        "discordant_for_lever": for_lever, "noise_floor_exact_match_rate": (n - for_lever - both) / n,
        "verdict": verdict, "reason": f"{session} alone",
    }  # fmt: skip


# suffix measured in two sessions of the tune; the latest one's chat_bench reads 28 against / 12 for
# (a fail on its own at 95 %, and at the confirmation's 99.1 %), the earlier one 15 / 16.
VERDICTS = pd.DataFrame(
    [gate_row("s1", c, 15, 16, 21, PASS) for c in CORPORA]
    + [gate_row("s2", "code_complete", 14, 15, 22, PASS), gate_row("s2", "chat_bench", 28, 12, 20, FAIL)]
)
CELLS = frozenset(VERDICTS["cell_key"])


RULES = TuneRules()


def decide(rules=RULES, look=None, verdicts=VERDICTS):
    return decide_change("confirm", VAN, SUFFIX, FIGURES, DRIFT, verdicts, rules, "mix", moe=False,
                         model="tiny", look=look)  # fmt: skip


def test_the_confirmation_judges_the_gate_on_every_session_of_the_tune_pooled():
    pooled = decide(look=GateLook(CELLS, EquivalenceConfig(), final=True))
    assert pooled.decision == KEEP
    assert pooled.gate == "code_complete pass, chat_bench pass"
    # The latest session's verdict alone (no look, or pool_gate off) rejects the same figures.
    assert decide().decision == REJECT and "chat_bench: fail (s2 alone)" in decide().reason
    latest = decide(TuneRules(pool_gate=False), GateLook(CELLS, EquivalenceConfig(), final=True))
    assert latest.decision == REJECT


def test_a_keep_spends_less_of_the_budget_than_the_confirmation():
    # The latest session alone: at the keep's 99.9 % it passes (the keep only stops what is clearly
    # worse), at the confirmation's 99.1 % it does not.
    alone = frozenset({"s2/code_complete", "s2/chat_bench"})
    assert decide(look=GateLook(alone, EquivalenceConfig(), final=False)).decision == KEEP
    confirm = decide(look=GateLook(alone, EquivalenceConfig(), final=True))
    assert confirm.decision == REJECT and "pooled over 1 session of this tune (78 prompts)" in confirm.reason


# 150 tunes a cell: at a true 95 % the pooled gate's floor of 138 (92 %) fails about 1 % of the time.
DRAWS = 150


@pytest.fixture(scope="module")
def forty_percent():
    """Whole simulated tunes at +40 % on every drafting lever (issue 44's target noise, 5 launches, 5
    anchor runs), the gate on: identical levers, then levers 10 points worse on both corpora; pooled
    gate and latest verdicts on the same draws."""
    worse = dataclasses.replace(
        pp.GATE_ON, name="10 points worse", excess=tuple((k, 0.10) for k in pp.DRAFTING)
    )
    out = {}
    for gate in (pp.GATE_ON, worse):
        for pool in (True, False):
            cfg = pp.tune_config(gate=True)
            cfg.rules = dataclasses.replace(cfg.rules, pool_gate=pool)
            found = pp.outcomes(
                pp.TARGET_LAUNCHES, pp._effects(0.40), 5, DRAWS, 21, cfg=cfg, gate=gate, anchor_runs=5
            )
            out[gate.name, pool] = sum(o.deployed in pp.DRAFTING for o in found)
    return out


def test_a_real_forty_percent_lever_is_deployed_more_than_95_percent_with_the_pooled_gate(forty_percent):
    pooled, latest = forty_percent[pp.GATE_ON.name, True], forty_percent[pp.GATE_ON.name, False]
    # Drawn (each drafting lever's corpora on launches of their own, as the grid runs them): 142 of
    # 150; one session's verdict per look: 137. 300 tunes at another seed: 95.3 % and 89.0 %.
    assert pooled >= 138
    assert pooled > latest


def test_a_fast_lever_10_points_worse_is_caught_more_often_with_the_pooled_gate(forty_percent):
    pooled, latest = forty_percent["10 points worse", True], forty_percent["10 points worse", False]
    assert pooled <= 12  # of 150 (7 drawn); one session's verdict per look: 53
    assert pooled < latest


def test_the_tune_refuses_a_path_pass_rate_that_is_no_probability():
    from experiments.tune_procedure import compose_tune
    from vocab.errors import ConfigError

    assert compose_tune(["model=tiny"]).rules.gate_path_pass == 0.98
    with pytest.raises(ConfigError, match=r"rules\.gate_path_pass=1\.2"):
        compose_tune(["model=tiny", "rules.gate_path_pass=1.2"])
