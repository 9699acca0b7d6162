"""Per-repeat scores over corpora (analysis.decision.geomean_repeats), with cells measured again on resume."""

import math

import pytest

from analysis.decision import geomean_repeats, judge


def test_repeats_combine_by_session_and_repeat():
    a = [("s", 0, 100.0), ("s", 1, 110.0)]
    b = [("s", 0, 400.0), ("s", 1, 440.0)]
    scores = geomean_repeats([a, b])
    assert [(s, r) for s, r, _ in scores] == [("s", 0), ("s", 1)]
    assert [v for _, _, v in scores] == pytest.approx([200.0, 220.0])


def test_a_repeat_measured_again_in_a_later_session_still_counts():
    # The CPU tune of 2026-12-01: van code_complete r0 was INVALID (event-loop lag), resume measured
    # it again in a new session, and the score over code_complete and chat_bench lost repeat 0
    # (n=3/2 in decisions.md although every cell had a VALID figure).
    code = [("tune-van", 1, 80.0), ("tune-van", 2, 86.4), ("resume-van", 0, 83.9)]
    chat = [("tune-van", 0, 141.1), ("tune-van", 1, 136.3), ("tune-van", 2, 144.9)]
    scores = geomean_repeats([code, chat])
    assert [(s, r) for s, r, _ in scores] == [("resume-van+tune-van", 0), ("tune-van", 1), ("tune-van", 2)]
    assert scores[0][2] == pytest.approx(math.sqrt(83.9 * 141.1))
    # The mixed key pairs with nothing: a lever of the tune's session is judged on the two true pairs.
    lever = [("tune-van", r, v * 1.1) for r, v in enumerate((100.0, 110.0, 115.0))]
    assert judge(lever, scores, 0.0).n_value == 2


def test_a_repeat_with_two_values_on_a_side_is_left_out_not_guessed():
    # Two sessions each measured repeat 0 of corpus a, corpus b only once: which pair is meant is unknown.
    a = [("s1", 0, 100.0), ("s2", 0, 104.0)]
    b = [("s3", 0, 400.0)]
    assert geomean_repeats([a, b]) == ()
