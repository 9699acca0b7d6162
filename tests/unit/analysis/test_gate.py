"""The gate bans what its name says: only a 'pass' for this model, lever, K and corpus clears a lever."""

import pandas as pd

from analysis.gate import gate_problems, latest_verdicts, parse_k_by_corpus


def verdicts(*rows):
    """rows: (session, model, lever, k, corpus, verdict)."""
    frame = pd.DataFrame(rows, columns=["session_id", "model", "lever", "k", "corpus", "verdict"])
    return latest_verdicts(frame.assign(reason="why"))


def test_a_pass_on_every_scored_corpus_clears_the_lever():
    latest = verdicts(("s1", "m", "bestkpad", 4, "chat", "pass"), ("s1", "m", "bestkpad", 8, "code", "pass"))
    assert gate_problems(latest, "m", "bestkpad", [("chat", 4), ("code", 8)]) == []


def test_different_k_per_corpus_is_checked_at_each_corpus_k():
    # The old key (model, lever, K) with K = NaN for mixed K never matched a fail.
    latest = verdicts(("s1", "m", "bestkpad", 4, "chat", "pass"), ("s1", "m", "bestkpad", 8, "code", "fail"))
    problems = gate_problems(latest, "m", "bestkpad", parse_k_by_corpus("chat:4, code:8"))
    assert problems == ["code: fail (why)"]


def test_missing_and_no_reference_verdicts_never_pass():
    latest = verdicts(("s1", "m", "w4a4", 0, "chat", "no_reference"))
    problems = gate_problems(latest, "m", "w4a4", [("chat", 0), ("code", 0)])
    assert problems[0] == "chat: no_reference (why)"
    assert problems[1].startswith("code: no equivalence verdict")
    assert gate_problems(verdicts(), "m", "suffix", [("chat", 8)])  # no rows at all: still banned


def test_another_models_pass_does_not_clear_this_model():
    latest = verdicts(("s1", "tiny", "suffix", 8, "chat", "pass"), ("s1", "big", "suffix", 8, "chat", "fail"))
    assert gate_problems(latest, "big", "suffix", [("chat", 8)]) == ["chat: fail (why)"]
    assert gate_problems(latest, "tiny", "suffix", [("chat", 8)]) == []


def test_the_latest_session_decides_and_van_needs_no_verdict():
    latest = verdicts(("s1", "m", "suffix", 8, "chat", "fail"), ("s2", "m", "suffix", 8, "chat", "pass"))
    assert gate_problems(latest, "m", "suffix", [("chat", 8)]) == []
    assert gate_problems(latest, "m", "van", [("chat", 0)]) == []


def test_the_latest_verdict_is_chosen_by_when_it_was_reached_not_by_session_name():
    # A session named by the user ("zz-first") was judged before a timestamped one: by name it
    # sorted last and its fail stood (issue 26); by judged_at the later pass decides.
    frame = pd.DataFrame(
        [("zz-first", "2026-12-01T10:00:00.000000+00:00", "m", "suffix", 8, "chat", "fail"),
         ("20261202T090000Z-a1b2c3", "2026-12-02T09:00:00.000000+00:00", "m", "suffix", 8, "chat", "pass")],
        columns=["session_id", "judged_at", "model", "lever", "k", "corpus", "verdict"],
    ).assign(reason="why")  # fmt: skip
    assert gate_problems(latest_verdicts(frame), "m", "suffix", [("chat", 8)]) == []
    assert gate_problems(latest_verdicts(frame.iloc[::-1]), "m", "suffix", [("chat", 8)]) == []
    # Rows written before judged_at existed sort first, by session id among themselves.
    older = frame.assign(judged_at=[None, "2026-12-02T09:00:00.000000+00:00"])
    assert gate_problems(latest_verdicts(older), "m", "suffix", [("chat", 8)]) == []


def test_a_fail_on_a_corpus_the_lever_is_not_scored_on_still_bans_it():
    latest = verdicts(("s1", "m", "bestkpad", 8, "mix", "pass"), ("s1", "m", "bestkpad", 8, "chat", "fail"))
    assert gate_problems(latest, "m", "bestkpad", [("mix", 8)]) == [
        "chat: fail at K=8 (why); it changed outputs there"
    ]
    # At another K it says nothing about this configuration.
    assert gate_problems(latest, "m", "bestkpad", [("mix", 8)]) and not gate_problems(
        verdicts(("s1", "m", "bestkpad", 8, "mix", "pass"), ("s1", "m", "bestkpad", 4, "chat", "fail")),
        "m",
        "bestkpad",
        [("mix", 8)],
    )


def test_within_a_session_the_paired_verdict_decides_over_repeats_without_a_replicate():
    # Repeat 0 has van's replicate (paired test: pass); repeats 1 and 2 do not and fall back to
    # exact match, which bf16 on a GPU fails even van against van. Listed after the paired row.
    rows = [
        ("s1", "m", "bestkpad", 8, "chat", "pass", "van-replicate-key"),
        ("s1", "m", "bestkpad", 8, "chat", "fail", None),
        ("s1", "m", "bestkpad", 8, "chat", "fail", None),
    ]
    columns = ["session_id", "model", "lever", "k", "corpus", "verdict", "floor_cell_key"]
    latest = latest_verdicts(pd.DataFrame(rows, columns=columns).assign(reason="why"))
    assert gate_problems(latest, "m", "bestkpad", [("chat", 8)]) == []
    # Without any paired row the unpaired fallback still decides.
    unpaired = pd.DataFrame(rows[1:], columns=columns).assign(reason="why")
    assert gate_problems(latest_verdicts(unpaired), "m", "bestkpad", [("chat", 8)]) == ["chat: fail (why)"]
