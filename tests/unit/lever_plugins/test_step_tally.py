"""The pure per-K tally: drafts verified and forward passes by CUDA-graph runtime mode."""

from enum import Enum

from lever_plugins.step_tally import NO_DRAFT_K, StepTally, mode_name, verified_drafts


class FakeMode(Enum):
    """Stands in for vLLM's CUDAGraphMode: only the member names matter."""

    NONE = 0
    PIECEWISE = 1
    FULL = 2


def test_mode_name_lowercases_enum_members_and_strings():
    assert [mode_name(m) for m in FakeMode] == ["none", "piecewise", "full"]
    assert mode_name("FULL") == "full"


def test_verified_drafts_counts_decoding_requests_that_had_a_draft():
    last = {"a": 4, "b": 4, "gone": 4}
    # a decoded with its draft; b is a partial prefill now (no sample); c is new (no draft).
    assert verified_drafts(["a", "b", "c"], [[1, 2], [], [3]], last) == 1


def test_record_charges_each_pass_to_the_k_of_the_drafts_it_verified():
    tally = StepTally((4, 12))
    tally.record(4, drafts=3, mode="piecewise")
    tally.record(12, drafts=2, mode="full")
    tally.record(12, drafts=0, mode="piecewise")  # nothing verified: a prefill-only pass
    tally.record(4, drafts=1, mode=None)  # no dispatch seen: drafts count, the pass has no mode
    assert tally.drafts_by_k == {4: 4, 12: 2}
    assert tally.modes_by_k[4] == {"full": 0, "piecewise": 1, "none": 0}
    assert tally.modes_by_k[12] == {"full": 1, "piecewise": 0, "none": 0}
    assert tally.modes_by_k[NO_DRAFT_K] == {"full": 0, "piecewise": 1, "none": 0}


def test_every_key_exists_from_the_start_and_reset_keeps_only_the_new_ks():
    tally = StepTally((4, 6, 12))
    assert set(tally.modes_by_k) == {0, 4, 6, 12}
    tally.record(4, drafts=2, mode="none")
    tally.reset_ks((4, 6))
    assert tally.drafts_by_k == {4: 2, 6: 0}
    assert set(tally.modes_by_k) == {0, 4, 6}
