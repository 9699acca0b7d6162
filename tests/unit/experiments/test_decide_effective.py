"""The tune's decisions read what the engines ran with (issue 46 items 2 and 3; experiments/decide.py)."""

import json

import pandas as pd

from experiments.decide import KEEP, REJECT, LeverConfig, TuneRules, decide_change
from tests.unit.experiments.test_decide import drift, medians, verdicts

CORPORA = ["code_complete", "chat_bench"]
VAN = LeverConfig.uniform("van", 0, CORPORA)
SUFFIX = LeverConfig.uniform("suffix", 8, CORPORA)
DYNK = LeverConfig.uniform("dynk", 12, CORPORA)
DRIFT = drift([("A", 0.01, 100.0)])
PASSED = verdicts(
    [(lv, k, c, "pass", "same outputs") for lv, k in (("suffix", 8), ("dynk", 12)) for c in CORPORA]
)
FIGURES = medians(
    [
        (c, lv, k, v, "A")
        for c in CORPORA
        for lv, k, v in (("van", 0, 100.0), ("suffix", 8, 120.0), ("dynk", 12, 125.0))
    ]
)


def cells(lever: str, k: int, **columns: object) -> list[dict]:
    return [
        {"model": "tiny", "corpus": c, "lever": lever, "k": k, "repeat": r, "valid": True, **columns}
        for c in CORPORA
        for r in range(3)
    ]


def decide(candidate: LeverConfig, frame: pd.DataFrame | None, incumbent: LeverConfig = VAN):
    return decide_change(
        candidate.lever,
        incumbent,
        candidate,
        FIGURES,
        DRIFT,
        PASSED,
        TuneRules(),
        "mix",
        False,
        "tiny",
        frame,
    )


V1 = {"engine_model_runner": "v1", "engine_async_scheduling": True}
V2 = {"engine_model_runner": "v2", "engine_async_scheduling": False}


def test_a_decision_names_what_else_its_engines_ran_with():
    frame = pd.DataFrame(cells("van", 0, **V1) + cells("suffix", 8, **V2))
    decision = decide(SUFFIX, frame)
    assert decision.decision == KEEP
    assert decision.reason.endswith("; also differs: model runner V2 vs V1; async scheduling off vs on")
    assert decision.also_differs == "also differs: model runner V2 vs V1; async scheduling off vs on"
    # Without cells, or where the engines agree, nothing is said.
    assert "also differs" not in decide(SUFFIX, None).reason
    assert (
        "also differs"
        not in decide(SUFFIX, pd.DataFrame(cells("van", 0, **V1) + cells("suffix", 8, **V1))).reason
    )


def test_a_dynamic_k_lever_whose_k_never_moved_is_not_kept_as_dynamic_k():
    fixed = json.dumps({"4": 0, "6": 0, "12": 900})
    frame = pd.DataFrame(cells("van", 0) + cells("dynk", 12, dynk_steps_by_k_json=fixed))
    decision = decide(DYNK, frame)
    assert decision.decision == REJECT
    assert decision.reason.startswith("fixed K in effect: every step K=12 of its cells")
    assert "not dynamic K" in decision.reason
    # Where K moved it is judged as before: a real gain, kept.
    moved = json.dumps({"4": 300, "6": 0, "12": 600})
    frame = pd.DataFrame(cells("van", 0) + cells("dynk", 12, dynk_steps_by_k_json=moved))
    assert decide(DYNK, frame).decision == KEEP
