import math

import pandas as pd
import pytest

from analysis.best_k import best_k
from experiments.decide import CHOSE, KEEP, REJECT, LeverConfig, TuneRules, choose_k, decide_change, score

CORPORA = ["code_complete", "chat_bench"]
RULES = TuneRules()


SPREAD = (1 / 1.005, 1.0, 1.005)  # three repeats per cell, geometric mean = the value


def medians(rows, spread=SPREAD):
    """rows: (corpus, lever, k, geometric mean tok/s, session); repeats paired by index within a session."""
    return pd.DataFrame(
        [
            {
                "model": "tiny",
                "corpus": c,
                "lever": lv,
                "k": k,
                "n": len(spread),
                "median": v,
                "mad": 0.0,
                "sessions": (s,),
                "repeats": tuple((s, r, v * f) for r, f in enumerate(spread)),
            }
            for c, lv, k, v, s in rows
        ]
    )


def drift(rows):
    """rows: (session, drift_rel, anchor mean tok/s); one anchor cell for all."""
    columns = ["session_id", "model", "corpus", "lever", "k", "anchor_mean_tok_per_s", "drift_rel"]
    return pd.DataFrame([(s, "tiny", "code_complete", "van", 0, m, d) for s, d, m in rows], columns=columns)


def verdicts(rows, model="tiny"):
    """rows: (lever, k, corpus, verdict, reason), all of one model and session."""
    frame = pd.DataFrame(rows, columns=["lever", "k", "corpus", "verdict", "reason"])
    return frame.assign(model=model, session_id="s1")


# Every lever of these tests cleared the equivalence gate, unless a test says otherwise.
PASSED = verdicts(
    [(lv, k, c, "pass", "same outputs") for lv, k in (("suffix", 8), ("bestkpad", 8)) for c in CORPORA]
)
VAN = LeverConfig.uniform("van", 0, CORPORA)
SUFFIX = LeverConfig.uniform("suffix", 8, CORPORA)
KPAD = LeverConfig.uniform("bestkpad", 8, CORPORA)
FIGURES = medians(
    [
        ("code_complete", "van", 0, 100.0, "A"),
        ("chat_bench", "van", 0, 100.0, "A"),
        ("code_complete", "suffix", 8, 112.0, "B"),
        ("chat_bench", "suffix", 8, 100.0, "B"),
        ("code_complete", "bestkpad", 8, 113.0, "C"),
        ("chat_bench", "bestkpad", 8, 100.5, "C"),
    ]
)
# Within-session drift 2 %, 1 %, 1.5 %; anchor means 100, 101, 100.5 (between A and B: 1/100.5).
DRIFT = drift([("A", 0.02, 100.0), ("B", 0.01, 101.0), ("C", 0.015, 100.5)])


def test_score_is_the_geometric_mean_over_corpora_without_the_final_corpus():
    value, sessions = score(FIGURES, SUFFIX, final_corpus="mix")
    assert value == pytest.approx(math.sqrt(112.0 * 100.0))
    assert sessions == {"B"}
    value, _ = score(FIGURES, SUFFIX, final_corpus="code_complete")
    assert value == pytest.approx(112.0)


def test_a_gain_beyond_the_drift_band_is_kept():
    d = decide_change("suffix", VAN, SUFFIX, FIGURES, DRIFT, PASSED, RULES, "mix", moe=False, model="tiny")
    # gain = sqrt(1.12) - 1 = 5.83 % > band = max(sqrt((2 %^2 + 1 %^2) / 2), 1/100.5) = 1.58 %
    assert d.decision == KEEP
    assert d.gain == pytest.approx(math.sqrt(1.12) - 1)
    assert d.band == pytest.approx(math.sqrt((0.02**2 + 0.01**2) / 2))
    assert d.per_corpus == pytest.approx({"code_complete": 0.12, "chat_bench": 0.0})


def test_a_gain_within_the_drift_band_is_rejected():
    d = decide_change("kpad", SUFFIX, KPAD, FIGURES, DRIFT, PASSED, RULES, "mix", moe=False, model="tiny")
    # gain = sqrt(113 * 100.5 / (112 * 100)) - 1 = 0.70 % < band max(sqrt((1 %^2 + 1.5 %^2) / 2), 1/100.75)
    assert d.decision == REJECT
    assert d.gain == pytest.approx(math.sqrt(113 * 100.5 / 11200) - 1)
    assert d.band == pytest.approx(math.sqrt((0.01**2 + 0.015**2) / 2))
    assert d.reason.startswith("within noise: 1.007x") and "drift band 1.3%" in d.reason


def test_a_failed_equivalence_gate_rejects_whatever_the_gain():
    failed = verdicts(
        [
            ("suffix", 8, "code_complete", "pass", "same"),
            ("suffix", 8, "chat_bench", "fail", "exact match 3/8"),
        ]
    )
    d = decide_change("suffix", VAN, SUFFIX, FIGURES, DRIFT, failed, RULES, "mix", moe=False, model="tiny")
    assert d.decision == REJECT
    assert "gate failed (chat_bench: fail (exact match 3/8))" in d.reason
    assert d.gate == "code_complete pass, chat_bench fail"


def test_every_lever_must_pass_the_gate_for_this_model_on_every_corpus():
    w4a4 = LeverConfig.uniform("w4a4", 0, CORPORA)
    figures = pd.concat(
        [FIGURES, medians([("code_complete", "w4a4", 0, 130.0, "D"), ("chat_bench", "w4a4", 0, 130.0, "D")])]
    )
    drift_d = pd.concat([DRIFT, drift([("D", 0.01, 100.0)])])

    def decide(frame, candidate=w4a4):
        return decide_change(
            candidate.lever, VAN, candidate, figures, drift_d, frame, RULES, "mix", moe=False, model="tiny"
        )

    unprobed = ("w4a4", 0, "chat_bench", "no_reference", "no logprob probe")
    passed = [("w4a4", 0, c, "pass", "KL 0.01") for c in CORPORA]
    assert decide(verdicts(passed)).decision == KEEP  # +30 %, both corpora pass
    missing = decide(verdicts(passed[:1]))
    assert missing.decision == REJECT and "chat_bench: no equivalence verdict for tiny/w4a4" in missing.reason
    unsure = decide(verdicts([passed[0], unprobed]))
    assert unsure.decision == REJECT and "chat_bench: no_reference (no logprob probe)" in unsure.reason
    # Another model's pass clears nothing here.
    assert decide(verdicts(passed, model="other")).decision == REJECT
    # A lossless lever with no verdict is held back too: no evidence is not a pass.
    none = verdicts([])
    assert decide(none, SUFFIX).decision == REJECT


def test_moe_models_reject_a_lever_that_slows_one_corpus_beyond_drift():
    figures = medians(
        [(c, "van", 0, 100.0, "A") for c in CORPORA]
        + [("code_complete", "suffix", 8, 130.0, "A"), ("chat_bench", "suffix", 8, 90.0, "A")]
    )
    one_session = drift([("A", 0.02, 100.0)])
    dense = decide_change(
        "suffix", VAN, SUFFIX, figures, one_session, PASSED, RULES, "mix", moe=False, model="tiny"
    )
    moe = decide_change(
        "suffix", VAN, SUFFIX, figures, one_session, PASSED, RULES, "mix", moe=True, model="tiny"
    )
    assert dense.decision == KEEP  # sqrt(1.3 x 0.9) - 1 = +8.2 % > 2 %
    assert moe.decision == REJECT and "a real loss beyond drift on chat_bench" in moe.reason


def test_unknown_drift_is_not_judged_and_never_kept():
    # Fail closed (issue 26): +5.83 % with an interval of width 0 was kept with the band taken as 0.
    d = decide_change(
        "suffix", VAN, SUFFIX, FIGURES, drift([]), PASSED, RULES, "mix", moe=False, model="tiny"
    )
    assert math.isnan(d.band) and "drift unknown" in d.reason
    assert d.decision == REJECT and d.label == "not judged (drift unknown)"


def test_an_invalid_end_anchor_is_unknown_drift_not_a_zero_band():
    # One session's end anchor INVALID: its drift is unknown (analysis.drift), so nothing is judged.
    from analysis.drift import session_drift

    anchors = pd.DataFrame(
        [("A", "start", 100.0, True), ("A", "end", 100.5, True), ("B", "start", 100.0, True),
         ("B", "end", 80.0, False), ("C", "start", 100.0, True), ("C", "end", 100.2, True)],
        columns=["session_id", "anchor", "output_tok_per_s", "valid"],
    ).assign(model="tiny", corpus="code_complete", lever="van", k=0)  # fmt: skip
    d = decide_change("suffix", VAN, SUFFIX, FIGURES, session_drift(anchors)[0], PASSED, RULES, "mix",
                      moe=False, model="tiny")  # fmt: skip
    assert math.isnan(d.band) and d.decision == REJECT and d.label == "not judged (drift unknown)"


def test_an_unknown_between_session_term_does_not_shrink_the_band():
    # Sessions that did not all run the same anchor: the between-session term is unknown. Python's
    # max(0.009, nan) is 0.009, which once dropped an 18.1 % band to the within-session 0.92 %.
    from analysis.drift import drift_band

    table = pd.DataFrame(
        [("A", "tiny", "code_complete", "van", 0, 100.0, 0.0092, 1, 0.0092**2),
         ("B", "tiny", "chat_bench", "van", 0, 120.0, 0.0092, 1, 0.0092**2)],
        columns=["session_id", "model", "corpus", "lever", "k", "anchor_mean_tok_per_s", "drift_rel",
                 "n_anchor_pairs", "anchor_log_ss"],
    )  # fmt: skip
    assert math.isnan(drift_band(table, {"A", "B"}))
    assert drift_band(table, {"A"}) == pytest.approx(0.0092)


def test_a_noisy_gain_or_single_repeats_are_not_kept():
    noisy = pd.concat(
        [FIGURES[FIGURES["lever"] == "van"], medians([(c, "suffix", 8, 110.0, "A") for c in CORPORA],
                                                     spread=(0.85, 1.0, 1.15))]
    )  # fmt: skip
    d = decide_change("suffix", VAN, SUFFIX, noisy, DRIFT, PASSED, RULES, "mix", moe=False, model="tiny")
    assert d.gain > 0.05 and d.decision == REJECT and d.label == "within noise" and d.ci_lo < 1
    single = medians(
        [(c, "van", 0, 100.0, "A") for c in CORPORA] + [(c, "suffix", 8, 150.0, "A") for c in CORPORA],
        spread=(1.0,),
    )
    d = decide_change("suffix", VAN, SUFFIX, single, DRIFT, PASSED, RULES, "mix", moe=False, model="tiny")
    assert d.decision == REJECT and d.reason.startswith("not judged, fewer than 2 repeats")


def test_best_k_prefers_the_smaller_k_within_the_band():
    rows = [
        (c, "bestkpad", k, v, "A")
        for c in CORPORA
        for k, v in ((4, 110.0), (6, 111.0), (8, 112.0), (12, 111.5))
    ]
    chosen, d = choose_k(
        "bestkpad", [12, 4, 8, 6], CORPORA, medians(rows), drift([("A", 0.02, 100.0)]), RULES, "mix"
    )
    assert chosen == 4 and d.decision == CHOSE  # 110 >= 112 x (1 - 2 %) = 109.76
    assert d.per_corpus == {"code_complete": 4, "chat_bench": 4}
    tight, _ = choose_k(
        "bestkpad", [4, 6, 8, 12], CORPORA, medians(rows), drift([("A", 0.001, 100.0)]), RULES, "mix"
    )
    assert tight == 8


def test_the_tunes_k_per_corpus_is_the_studys_best_k():
    """One best-K rule (analysis/best_k.py: choose_smallest with k_bands) for the tune's sweep and
    the study's best K: each comparison's band is over the sessions its two K ran in. K=4, 6 and 8
    ran in a quiet session B, K=12 in a drifting one A: 8 beats 4 and 6 on B's band alone (a band
    over the whole sweep's sessions, as the tune had, took A's drift in too and kept K=4)."""
    rows = [
        (c, "bestkpad", k, v * (1.0 if c == "code_complete" else 0.9), session)
        for c in CORPORA
        for k, v, session in ((4, 110.0, "B"), (6, 111.0, "B"), (8, 112.0, "B"), (12, 111.5, "A"))
    ]
    figures, anchors = medians(rows), drift([("A", 0.05, 100.0), ("B", 0.001, 100.0)])
    chosen, d = choose_k("bestkpad", [4, 6, 8, 12], CORPORA, figures, anchors, RULES, "mix")
    study = best_k(figures, anchors).set_index("corpus")["best_k"].to_dict()
    assert d.per_corpus == study == {"code_complete": 8, "chat_bench": 8}
    assert chosen == 8


def test_a_loss_beyond_the_band_is_called_slower_not_within():
    slow = medians(
        [(c, "suffix", 8, 50.0, "A") for c in CORPORA] + [(c, "van", 0, 100.0, "A") for c in CORPORA]
    )
    d = decide_change(
        "suffix", VAN, SUFFIX, slow, drift([("A", 0.02, 100.0)]), PASSED, RULES, "mix", False, "tiny"
    )
    assert d.decision == REJECT and d.reason.startswith("real loss (slower): 0.500x")
    assert "drift band 2.0%" in d.reason
