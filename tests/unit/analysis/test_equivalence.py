import math

import pytest

from analysis.equivalence import (
    FAIL,
    NO_REFERENCE,
    PASS,
    applied_margin,
    compare,
    compare_distributions,
    compare_paired,
    excess_changed_lower_bound,
    excess_changed_upper_bound,
    first_divergence,
    judge,
    judge_distribution,
    judge_paired,
    kl_estimate,
    paired_from_counts,
    prompts_needed,
    topk_agreement,
    widest_margin,
)
from vocab.schema import EquivalenceConfig


def test_first_divergence_position():
    assert first_divergence("abc", "abc") is None
    assert first_divergence("abcd", "abXd") == 2
    assert first_divergence("ab", "abc") == 2  # a prefix diverges where it ends


def test_compare_counts_requests_in_common_only():
    ref = {0: "def f():", 1: "return 1", 2: "x"}
    cand = {0: "def f():", 1: "return 2", 3: "y"}
    result = compare(ref, cand)
    assert (result.n_prompts, result.n_exact) == (2, 1)
    assert result.exact_match_rate == 0.5
    assert result.first_divergence_chars == (7,)


CFG = EquivalenceConfig(max_exact_match_drop=0.05, min_exact_match_without_floor=1.0)


def comp(n, exact):
    return compare({i: "a" for i in range(n)}, {i: "a" if i < exact else "b" for i in range(n)})


def test_a_lever_as_close_to_van_as_van_to_itself_passes():
    # bf16-style noise: van matches itself on 52%; the lever on 50% (within 5 points).
    assert judge(comp(100, 50), comp(100, 52), CFG).verdict == PASS


def test_a_lever_further_from_van_than_the_floor_fails_and_says_why():
    verdict = judge(comp(100, 40), comp(100, 52), CFG)
    assert verdict.verdict == FAIL
    assert "40/100" in verdict.reason and "52.0%" in verdict.reason


def test_without_a_floor_every_output_must_match():
    assert judge(comp(32, 32), None, CFG).verdict == PASS
    assert judge(comp(32, 31), None, CFG).verdict == FAIL
    assert judge(comp(0, 0), None, CFG).verdict == NO_REFERENCE
    # A missing floor is never a pass for lack of evidence: a few matching prompts are not enough.
    few = judge(comp(CFG.min_prompts - 1, CFG.min_prompts - 1), None, CFG)
    assert few.verdict == NO_REFERENCE and "no second van run" in few.reason


def test_topk_agreement_and_kl_by_hand():
    ln = math.log
    ref = [{"a": ln(0.5), "b": ln(0.5)}, {"c": ln(0.9), "d": ln(0.1)}]
    same = topk_agreement(ref, ref), kl_estimate(ref, ref)
    assert same[0] == 1.0 and same[1] == pytest.approx(0.0, abs=1e-12)
    cand = [{"a": ln(0.25), "b": ln(0.75)}, {"d": ln(0.9), "e": ln(0.1)}]
    # Position 0: both tops ("a" or "b") are in the other's top k; position 1: "c" is not in cand.
    assert topk_agreement(ref, cand) == 0.5
    kl0 = 0.5 * ln(0.5 / 0.25) + 0.5 * ln(0.5 / 0.75)
    # Position 1 on S = {c, d}: "c" takes the floor e^-20, then q is renormalised over S.
    q_c, q_d = math.exp(-20.0) / (math.exp(-20.0) + 0.9), 0.9 / (math.exp(-20.0) + 0.9)
    kl1 = 0.9 * ln(0.9 / q_c) + 0.1 * ln(0.1 / q_d)
    assert kl_estimate(ref, cand) == pytest.approx((kl0 + kl1) / 2)


def test_kl_of_identical_runs_is_zero_when_the_top_k_holds_little_mass():
    ln = math.log
    ref = [{1: ln(0.2), 2: ln(0.1)}, {3: ln(0.05), 4: ln(0.01)}]
    assert kl_estimate(ref, ref) == pytest.approx(0.0, abs=1e-12)
    shifted = [{1: ln(0.1), 2: ln(0.2)}, {3: ln(0.05), 4: ln(0.01)}]
    p, q = (2 / 3, 1 / 3), (1 / 3, 2 / 3)
    kl0 = sum(a * ln(a / b) for a, b in zip(p, q, strict=True))
    assert kl_estimate(ref, shifted) == pytest.approx(kl0 / 2)  # position 1 is identical


def test_distribution_verdict_for_quantised_levers():
    ln = math.log
    van = {("p0", 1): {1: ln(0.6), 2: ln(0.3)}, ("p0", 2): {5: ln(0.9), 6: ln(0.05)}}
    close = {("p0", 1): {1: ln(0.55), 2: ln(0.35)}, ("p0", 2): {5: ln(0.85), 6: ln(0.1)}, ("p1", 1): {9: 0.0}}
    far = {("p0", 1): {7: ln(0.9), 8: ln(0.05)}, ("p0", 2): {6: ln(0.9), 5: ln(0.05)}}
    cfg = EquivalenceConfig(min_topk_agreement=0.9, max_kl_nats=0.1)
    near = compare_distributions(van, close)
    assert near.n_positions == 2 and near.topk_agreement == 1.0 and near.kl_nats < 0.02
    assert judge_distribution(near, cfg).verdict == PASS
    verdict = judge_distribution(compare_distributions(van, far), cfg)
    # Position 1: disjoint top k; position 2: both tops (5, 6) are in the other's top k.
    assert verdict.verdict == FAIL and "agreement 0.500" in verdict.reason
    assert judge_distribution(None, cfg).verdict == NO_REFERENCE


def test_empty_outputs_are_no_evidence_of_equivalence():
    # The H200 run of the 8B-shaped dummy: every output decoded to "" in both runs.
    empty = compare({i: "" for i in range(160)}, {i: "" for i in range(160)})
    assert (empty.n_prompts, empty.n_both_empty) == (0, 160)
    verdict = judge(empty, None, CFG)
    assert verdict.verdict == NO_REFERENCE and "empty text" in verdict.reason
    # A non-empty candidate against an empty reference is a real difference.
    one_side = compare({0: "", 1: "x"}, {0: "y", 1: "x"})
    assert (one_side.n_prompts, one_side.n_exact, one_side.n_both_empty) == (2, 1, 0)


# The paired non-inferiority gate (judge_paired). Counts: prompts, changed by the lever only,
# by the replicate only, by both.
GATE = EquivalenceConfig()
Z95 = 1.6448536269514722


def test_the_bound_with_no_discordant_prompt_is_z_squared_over_n_plus_z_squared():
    # Tango's score with b = c = 0 solves n d / sqrt(n d (1 - d)) = z: d = z^2 / (n + z^2).
    for n in (4, 25, 160):
        assert excess_changed_upper_bound(0, 0, n, 0.05) == pytest.approx(Z95**2 / (n + Z95**2), abs=1e-9)


def test_the_bound_approaches_the_normal_one_with_many_prompts_and_swaps_for_the_lower():
    # 10,000 prompts, 10% discordant each way: d = 0 with standard error sqrt(0.2 / n).
    assert excess_changed_upper_bound(1000, 1000, 10_000, 0.05) == pytest.approx(
        Z95 * (0.2 / 10_000) ** 0.5, rel=1e-3
    )
    upper = excess_changed_upper_bound(30, 10, 100, 0.05)
    assert 0.2 < upper < 0.35  # d estimated 0.2
    assert excess_changed_lower_bound(10, 30, 100, 0.05) == pytest.approx(-upper)
    # A lower confidence makes a tighter bound.
    assert excess_changed_upper_bound(30, 10, 100, 0.2) < upper


def test_a_lever_at_the_margin_fails_and_the_bound_not_a_test_decides():
    # 2,000 prompts (enough for the configured 10 points): the lever changed 300 outputs the
    # replicate kept, the replicate 100 the lever kept: d = 10 points.
    paired = paired_from_counts(2000, 300, 100, 0)
    assert applied_margin(2000, 100, GATE) == GATE.noninferiority_margin
    verdict = judge_paired(paired, GATE)
    assert verdict.verdict == FAIL, verdict.reason
    assert "upper bound +11.7 points >= margin 10.0 points" in verdict.reason
    # The same counts pass under a wider margin.
    assert judge_paired(paired, EquivalenceConfig(noninferiority_margin=0.12)).verdict == PASS


def test_the_margin_widens_where_an_identical_lever_could_not_pass_it_and_never_past_the_widest():
    # chat_bench's 46 prompts on a floor changing half of outputs: about 36 points; 160 prompts 19,
    # 512 prompts 10.8; from ~550 prompts the configured 10 points.
    assert 0.33 < applied_margin(46, 23, GATE) == widest_margin(46, GATE) < 0.40
    assert 0.17 < widest_margin(160, GATE) < 0.21
    assert 0.10 < widest_margin(512, GATE) < 0.115
    assert widest_margin(1000, GATE) == applied_margin(5000, 2500, GATE) == GATE.noninferiority_margin
    # A quieter engine gets a narrower margin at the same prompts, never a wider one than the widest.
    margins = [applied_margin(160, changed, GATE) for changed in (0, 8, 16, 32, 80, 104, 160)]
    assert margins == sorted(margins[:5]) + margins[5:] and max(margins) == widest_margin(160, GATE)
    assert margins[0] < widest_margin(160, GATE) - 0.04
    # What it is set by: the identical lever's identical_pass_rate quantile clears it.
    assert widest_margin(160, EquivalenceConfig(identical_pass_rate=0.8)) < widest_margin(160, GATE)


def test_an_identical_lever_passes_at_chat_bench_s_46_prompts_where_it_failed_before():
    # 46 prompts, runs independent at the H200's ~48% changed: 11 discordant each way.
    # The old gate (10 points at any n) passed an identical lever here 23-38% of the time.
    identical = paired_from_counts(46, 11, 11, 11)
    assert excess_changed_upper_bound(11, 11, 46, GATE.alpha) > GATE.noninferiority_margin
    assert judge_paired(identical, GATE).verdict == PASS
    assert "widened so that a lever identical to van passes 95% at 46 prompts" in (
        judge_paired(identical, GATE).reason
    )
    # A lever changing 20 outputs the replicate kept against 5 is caught at the same prompts.
    assert judge_paired(paired_from_counts(46, 20, 5, 10), GATE).verdict == FAIL


def test_a_lever_clearly_worse_than_the_floor_fails_with_few_prompts_too():
    # 60 prompts at a noisy floor would be no_reference for an identical lever, but this one
    # changed 25 outputs the replicate kept against 3: its lower bound is above 0.
    verdict = judge_paired(paired_from_counts(60, 25, 3, 10), GATE)
    assert verdict.verdict == FAIL and "changes more outputs than van's rerun" in verdict.reason


def test_a_lever_identical_to_van_passes_with_enough_prompts():
    # The H200 tune's own figures (docs/benchmarks/2026-12-01-h200-tune.md): 160 prompts,
    # 16 discordant against suffix, 17 for it, 87 changed by both runs.
    tune = judge_paired(paired_from_counts(160, 16, 17, 87), GATE)
    assert tune.verdict == PASS, tune.reason
    # Half the prompts discordant (runs independent at the H200's 48%): 80 prompts pass now
    # (the old 10-point gate called this no_reference, "needs >= 136 prompts").
    assert judge_paired(paired_from_counts(80, 20, 20, 10), GATE).verdict == PASS
    assert judge_paired(paired_from_counts(320, 80, 80, 40), GATE).verdict == PASS


def test_too_few_prompts_are_no_reference():
    verdict = judge_paired(paired_from_counts(GATE.min_prompts - 1, 0, 0, 0), GATE)
    assert verdict.verdict == NO_REFERENCE and f"needs >= {GATE.min_prompts}" in verdict.reason
    assert judge_paired(paired_from_counts(GATE.min_prompts, 0, 0, 0), GATE).verdict == PASS
    # prompts_needed: at the configured margin a noisier floor needs more (normal: q z^2 / margin^2).
    assert prompts_needed(0.0, 0.10, 0.05) == 25
    assert prompts_needed(0.5, 0.10, 0.05) == pytest.approx(0.5 * Z95**2 / 0.10**2, rel=0.05)
    assert prompts_needed(0.5, 0.05, 0.05) > 4 * prompts_needed(0.5, 0.10, 0.05) - 10


def test_a_deterministic_floor_fails_any_changed_output():
    # 1 changed of 1,000: the bound alone would pass it; no noise explains it, so it fails.
    paired = paired_from_counts(1000, 1, 0, 0)
    assert excess_changed_upper_bound(1, 0, 1000, GATE.alpha) < GATE.noninferiority_margin
    verdict = judge_paired(paired, GATE)
    assert verdict.verdict == FAIL and "deterministic" in verdict.reason
    # One prompt the replicate also changed makes the floor noisy: then the bound decides.
    assert judge_paired(paired_from_counts(1000, 1, 0, 1), GATE).verdict == PASS


def test_paired_counts_from_texts():
    van = {i: f"v{i}" for i in range(6)}
    lever = {**van, 0: "x", 1: "x", 2: "x"}
    floor = {**van, 2: "y", 3: "y"}
    paired = compare_paired(van, lever, floor)
    assert (paired.n_prompts, paired.floor_only, paired.lever_only) == (6, 2, 1)
    counted = paired_from_counts(6, 2, 1, 1)  # the lever changed 0, 1 alone, the replicate 3, both 2
    figures = ("n_prompts", "lever_matches", "floor_matches", "floor_only", "lever_only", "p_value")
    assert [getattr(paired, f) for f in figures] == [getattr(counted, f) for f in figures]
    assert (paired.lever_matches, paired.floor_matches) == (3, 4)
    assert paired.excess_changed_share == pytest.approx(1 / 6)
    assert paired.discordant_share == pytest.approx(3 / 6)
