import math

import pytest

from analysis.equivalence import (
    FAIL,
    NO_REFERENCE,
    PASS,
    compare,
    compare_distributions,
    first_divergence,
    judge,
    judge_distribution,
    kl_estimate,
    topk_agreement,
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
