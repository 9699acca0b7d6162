import math

import pandas as pd
import pytest

from analysis.drift import session_drift
from analysis.final import final_levers, speedup_geomean, table1

DRIFT = session_drift(
    pd.DataFrame(
        [{"session_id": "s1", "anchor": pos, "model": "a", "corpus": "mix", "lever": "van", "k": 0,
          "output_tok_per_s": v, "valid": True} for pos, v in (("start", 100.0), ("end", 102.0))]
    )
)[0]  # band 2 / 101 = 1.98 %  # fmt: skip


SPREAD = (1 / 1.005, 1.0, 1.005)  # every cell's three repeats: geometric mean = the value


def rows(model, values, spread=SPREAD):
    """values: {(corpus, lever, k): geometric mean over three repeats of session s1}"""
    return pd.DataFrame(
        [{"model": model, "corpus": c, "lever": lv, "k": k, "n": 3, "median": v, "mad": 1.0,
          "sessions": ("s1",), "repeats": tuple(("s1", r, v * f) for r, f in enumerate(spread))}
         for (c, lv, k), v in values.items()]
    )  # fmt: skip


PER_LEVER = pd.concat(
    [
        rows("a", {("mix", "van", 0): 100.0, ("mix", "suffix", 8): 130.0, ("mix", "bestkpad", 8): 158.0,
                   ("chat", "van", 0): 50.0, ("chat", "bestkpad", 4): 500.0}),
        rows("b", {("mix", "van", 0): 200.0, ("mix", "suffix", 8): 203.0}),
    ],
    ignore_index=True,
)  # fmt: skip


def passes(per_lever, session="s0"):
    """A 'pass' verdict for every (model, corpus, lever, K) measured: every lever cleared the gate."""
    cells = per_lever[per_lever["lever"] != "van"][["model", "corpus", "lever", "k"]]
    return cells.assign(session_id=session, verdict="pass", reason="same outputs")


def test_final_lever_on_mix_and_table1():
    final = final_levers(PER_LEVER, DRIFT, equivalence=passes(PER_LEVER)).set_index("model")
    # model a on mix: bestkpad 158 beats suffix 130 (chat's 500 is not looked at)
    assert final.loc["a", "final_label"] == "bestkpad K=8"
    assert final.loc["a", "speedup_vs_van"] == pytest.approx(1.58)
    assert final.loc["a", "label"] == "real gain" and final.loc["a", "beyond_drift"]
    assert (final.loc["a", "n_value"], final.loc["a", "n_reference"]) == (3, 3) and final.loc["a", "paired"]
    assert final.loc["a", "ci_lo"] == pytest.approx(1.58) == final.loc["a", "ci_hi"]  # same spread: SD 0
    # model b: suffix +1.5 % is within the 1.98 % band, so no lever is a real gain: van stays
    # (before the one rule, the highest score was final even within drift: suffix 1.015x)
    assert final.loc["b", "final_lever"] == "van" and final.loc["b", "speedup_vs_van"] == pytest.approx(1.0)
    assert "best other: suffix K=8, within noise: 1.015x" in final.loc["b", "answer"]
    assert final.loc["b", "basis"] == "mix corpus"
    table = table1(final.reset_index())
    # Issue 37 item 6: the held-out figure (the one to deploy on) comes first, the selection's last.
    columns = table.columns.tolist()
    assert columns[:4] == ["model", "final_lever", "deploy", "confirmed_x"]
    assert columns.index("speedup_vs_van") > columns.index("confirmed_power") > columns.index("confirmed_x")
    assert table.iloc[0]["deploy"] == "van until bestkpad K=8 is confirmed"
    assert table.iloc[1]["deploy"] == "van" and table.iloc[0]["scored_on"] == "mix corpus"
    assert table.iloc[0][["model", "van_tok_per_s", "final_tok_per_s", "final_lever"]].tolist() == [
        "a",
        pytest.approx(100.0),
        pytest.approx(158.0),
        "bestkpad K=8",
    ]
    assert speedup_geomean(final) == pytest.approx(math.sqrt(1.58 * 1.0))


def test_a_large_point_gain_whose_interval_reaches_into_the_band_is_not_final():
    noisy = (0.85, 1.0, 1.15)
    per = pd.concat(
        [rows("d", {("mix", "van", 0): 100.0}), rows("d", {("mix", "suffix", 8): 110.0}, spread=noisy)],
        ignore_index=True,
    )
    row = final_levers(per, DRIFT, equivalence=passes(per)).iloc[0]
    assert row["final_lever"] == "van"  # +10 % point gain, but its 90 % interval reaches below 1
    assert "best other: suffix K=8, within noise" in row["answer"]


def test_without_mix_the_geometric_mean_over_common_corpora_decides():
    per = rows("c", {("chat", "van", 0): 100.0, ("code", "van", 0): 400.0, ("chat", "suffix", 8): 150.0,
                     ("code", "suffix", 8): 300.0, ("chat", "w4a4", 0): 1000.0})  # fmt: skip
    row = final_levers(per, DRIFT, equivalence=passes(per)).iloc[0]
    # common corpora of van, suffix and w4a4: chat only -> w4a4 1000 vs van 100
    assert row["final_lever"] == "w4a4" and row["speedup_vs_van"] == pytest.approx(10.0)
    per = per[per["lever"] != "w4a4"]
    row = final_levers(per, DRIFT, equivalence=passes(per)).iloc[0]
    # van: sqrt(100 * 400) = 200; suffix: sqrt(150 * 300) = 212.13 -> suffix, 1.0607x
    assert row["final_lever"] == "suffix"
    assert row["speedup_vs_van"] == pytest.approx(math.sqrt(150 * 300) / 200)
    assert row["basis"].startswith("no mix corpus: geometric mean over 2 corpora (chat, code)")
    # per repeat: the geometric mean over the corpora of that repeat's values, paired with van's
    assert (row["n_value"], row["n_reference"], row["label"]) == (3, 3, "real gain")


def test_a_lever_that_failed_equivalence_cannot_be_final():
    fail = pd.DataFrame(
        [{"session_id": "s1", "model": "a", "corpus": "chat", "lever": "bestkpad", "k": 8, "verdict": "fail",
          "reason": "exact match 3/8"}]
    )  # fmt: skip
    verdicts = pd.concat([passes(PER_LEVER), fail])
    row = final_levers(PER_LEVER, DRIFT, equivalence=verdicts).set_index("model").loc["a"]
    assert row["final_label"] == "suffix K=8" and row["speedup_vs_van"] == pytest.approx(1.3)
    assert row["excluded_by_equivalence"] == "bestkpad K=8"
    later_pass = pd.concat([verdicts, fail.assign(session_id="s2", verdict="pass")])
    row = final_levers(PER_LEVER, DRIFT, equivalence=later_pass).set_index("model").loc["a"]
    assert row["final_label"] == "bestkpad K=8"  # the latest verdict counts


def test_a_lever_that_changes_outputs_needs_a_pass_to_be_final():
    per = rows("c", {("chat", "van", 0): 100.0, ("chat", "w4a4", 0): 300.0})
    unprobed = pd.DataFrame(
        [{"session_id": "s1", "model": "c", "corpus": "chat", "lever": "w4a4", "k": 0,
          "verdict": "no_reference", "changes_outputs": True}]
    )  # fmt: skip
    assert final_levers(per, DRIFT, equivalence=unprobed).iloc[0]["final_lever"] == "van"
    passed = unprobed.assign(verdict="pass")
    assert final_levers(per, DRIFT, equivalence=passed).iloc[0]["final_lever"] == "w4a4"
    # Without the column, as with it: no_reference is never a pass, and no verdict at all neither.
    old = unprobed.drop(columns="changes_outputs")
    assert final_levers(per, DRIFT, equivalence=old).iloc[0]["final_lever"] == "van"
    assert final_levers(per, DRIFT).iloc[0]["final_lever"] == "van"


def test_another_models_pass_does_not_clear_a_lever():
    per = rows("c", {("chat", "van", 0): 100.0, ("chat", "suffix", 8): 300.0})
    other = passes(per).assign(model="tiny")
    row = final_levers(per, DRIFT, equivalence=other).iloc[0]
    assert row["final_lever"] == "van" and row["excluded_by_equivalence"] == "suffix K=8"


def test_a_comparison_not_judged_says_what_would_judge_it():
    one = rows("a", {("mix", "van", 0): 100.0, ("mix", "suffix", 8): 140.0}, spread=(1.0,))
    answer = final_levers(one, DRIFT, equivalence=passes(one)).set_index("model").loc["a", "answer"]
    assert "not judged (n<2)" in answer and "to judge it, rerun with grid.repeats=5" in answer
    # Issue 38 item 4: the repeats come from the session's band, not the default noise's 2 % drift.
    anchors = [
        {
            "session_id": "s1",
            "anchor": pos,
            "model": "a",
            "corpus": "mix",
            "lever": "van",
            "k": 0,
            "output_tok_per_s": v,
            "valid": True,
        }
        for pos, v in (("start", 100.0), ("end", 100 * math.exp(0.08)))
    ]
    drift = session_drift(pd.DataFrame(anchors))[0]  # band |ln(end / start)| = 8.0 %  # fmt: skip
    wide = final_levers(one, drift, equivalence=passes(one)).set_index("model")
    assert "rerun with grid.repeats=50: at this session's drift band 8.0%" in wide.loc["a", "answer"]
    no_band = final_levers(PER_LEVER, DRIFT.iloc[0:0], equivalence=passes(PER_LEVER))
    assert "grid.anchor.enabled=true" in no_band.set_index("model").loc["a", "answer"]
