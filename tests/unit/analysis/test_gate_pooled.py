"""The tune's gate on a lever's path (issue 44): one paired test per corpus over every session of the
tune that measured the lever at its K, pooled, at the pass rate its look is given; not one session's
verdict at each look (an identical lever then cleared the path ~92 % of the time)."""

import pandas as pd
import pytest

from analysis.equivalence import (
    FAIL,
    PASS,
    at_pass_rate,
    judge_paired,
    look_pass_rate,
    paired_from_counts,
    pool,
)
from analysis.equivalence_power import H200_INDEPENDENT, H200_MEASURED, path_pass_rate
from analysis.gate import gate_problems, latest_verdicts, paired_of_row, pooled_counts, pooled_verdicts
from vocab.schema import EquivalenceConfig

GATE = EquivalenceConfig()
FINAL = at_pass_rate(GATE, look_pass_rate(final=True))


def row(session, cell, against, for_lever, both, n=78, verdict=PASS, paired=True, lever="suffix"):
    """A stored verdict row (analysis/verdicts.py's columns) of a paired judgement on chat_bench."""
    return {
        "session_id": session, "judged_at": f"2026-12-0{session[-1]}", "model": "m", "lever": lever, "k": 8,
        "corpus": "chat_bench", "cell_key": cell, "floor_cell_key": "replicate" if paired else None,
        "changes_outputs": False, "n_prompts": n, "discordant_against_lever": against,
        "discordant_for_lever": for_lever, "noise_floor_exact_match_rate": (n - for_lever - both) / n,
        "verdict": verdict, "reason": f"{session} alone",
    }  # fmt: skip


# Session 2 (the latest) alone reads 28 discordant prompts against the lever and 12 for it: a fail at
# the confirmation's pass rate (and at the per-session 95 %); with session 1's 15 / 16 it passes.
UNLUCKY = [row("s1", "c1", 15, 16, 21), row("s2", "c2", 28, 12, 20, verdict=FAIL)]


def test_the_budget_is_split_over_the_corpora_and_the_two_looks():
    keep, final = look_pass_rate(0.98, 2, False, 0.1), look_pass_rate(0.98, 2, True, 0.1)
    assert (keep, final) == pytest.approx((0.999, 0.991))
    assert 2 * (1 - keep) + 2 * (1 - final) == pytest.approx(1 - 0.98)  # Bonferroni over the path


def test_a_stored_row_gives_back_its_counts_and_pooling_adds_them():
    rows = [row("s1", "c1", 15, 16, 21), row("s2", "c2", 28, 12, 20)]
    assert paired_of_row(rows[0]) == paired_from_counts(78, 15, 16, 21)
    assert pool(paired_of_row(r) for r in rows) == paired_from_counts(156, 43, 28, 41)
    assert paired_of_row(row("s1", "c1", 15, 16, 21, paired=False)) is None  # no replicate: no counts


def test_the_pooled_sessions_decide_where_the_latest_alone_would_not():
    frame = pd.DataFrame(UNLUCKY)
    assert judge_paired(paired_from_counts(78, 28, 12, 20), FINAL).verdict == FAIL
    assert gate_problems(latest_verdicts(frame), "m", "suffix", [("chat_bench", 8)])
    pooled = pooled_verdicts(frame, {"c1", "c2"}, FINAL)
    assert gate_problems(pooled, "m", "suffix", [("chat_bench", 8)]) == []
    assert pooled["reason"].iloc[0].startswith("pooled over 2 sessions of this tune (156 prompts)")
    # Only the tune's own cells pool: without c1 the latest session stands alone, and fails.
    assert gate_problems(pooled_verdicts(frame, {"c2"}, FINAL), "m", "suffix", [("chat_bench", 8)])


def test_a_cell_judged_again_in_a_later_session_counts_once():
    # Each session's verdicts judge every cell of the store: c1 appears in s1's file and again in s2's.
    again = [row("s1", "c1", 15, 16, 21), row("s2", "c1", 15, 16, 21), row("s2", "c2", 28, 12, 20)]
    (paired, cells), *_ = pooled_counts(pd.DataFrame(again), {"c1", "c2"}).values()
    assert (paired.n_prompts, cells) == (156, 2)


def test_a_verdict_without_counts_keeps_its_latest_verdict():
    probe = {**row("s1", "w", 0, 0, 0, lever="w4a4", verdict=FAIL), "changes_outputs": True}
    frame = pd.DataFrame([*UNLUCKY, probe])
    pooled = pooled_verdicts(frame, {"c1", "c2", "w"}, FINAL).set_index("lever")
    assert pooled.loc["w4a4", "verdict"] == FAIL and pooled.loc["w4a4", "reason"] == "s1 alone"


@pytest.mark.parametrize("floor", [H200_INDEPENDENT, H200_MEASURED], ids=lambda f: f.name)
@pytest.mark.parametrize(("n", "sessions"), [(78, 2), (160, 5)])
def test_an_identical_lever_clears_the_path_on_one_corpus_at_least_98_5_percent(floor, n, sessions):
    # Two corpora then clear it >= 97 %, where two looks on one session's verdict each (95 %) gave
    # ~92 % per corpus and ~85 % for both (0.96^4 at best).
    assert path_pass_rate(floor, 0.0, n, sessions, GATE, draws=2000, seed=1) >= 0.985


@pytest.mark.parametrize("n", [345, 512])  # summarize's and the other study corpora's gate prompts
def test_a_lever_10_points_worse_is_caught_80_percent_on_the_path_of_a_study_corpus(n):
    caught = 1 - path_pass_rate(H200_INDEPENDENT, 0.10, n, 2, GATE, draws=2000, seed=2)
    assert caught >= 0.80 + 0.02  # ~91 % and ~97 % (sd 0.6-0.4 points at 2,000 draws)
