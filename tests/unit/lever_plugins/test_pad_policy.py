from hypothesis import given
from hypothesis import strategies as st

from lever_plugins.pad_policy import PAD_TOKEN_ID, draft_budget, fit_draft, shape_drafts


def test_fit_draft_pads_and_truncates_to_exact_length():
    assert fit_draft([5, 6], 4, pad_id=9) == [5, 6, 9, 9]
    assert fit_draft([5, 6, 7, 8, 1], 3) == [5, 6, 7]
    assert fit_draft([], 2) == [PAD_TOKEN_ID, PAD_TOKEN_ID]
    assert fit_draft([3], 0) == []


def test_pad_id_is_a_real_token_id():
    # The CPU rejection kernel and the embedding lookup have no guard for negative ids.
    assert PAD_TOKEN_ID >= 0


def test_budget_respects_max_model_len():
    assert draft_budget(8, num_tokens=100, max_model_len=2048) == 8
    # num_tokens + draft + 1 sampled token <= max_model_len
    assert draft_budget(8, num_tokens=2044, max_model_len=2048) == 3
    assert draft_budget(8, num_tokens=2047, max_model_len=2048) == 0
    assert draft_budget(8, num_tokens=2048, max_model_len=2048) == 0


def test_shape_drafts_leaves_partial_prefills_empty_and_counts():
    drafts = [[1, 2], [], [3, 4, 5, 6, 7, 8], []]
    sampled = [[10], [11, 12], [13], []]  # the last one is a partial prefill
    shaped, stats = shape_drafts(drafts, sampled, [50, 60, 70, 80], k=4, max_model_len=2048, pad_id=0)
    assert shaped == [[1, 2, 0, 0], [0, 0, 0, 0], [3, 4, 5, 6], []]
    assert (stats.drafts, stats.draft_tokens, stats.padded_tokens, stats.truncated_tokens) == (3, 12, 6, 2)


def test_shape_drafts_near_max_model_len():
    shaped, stats = shape_drafts([[1, 2, 3], [4]], [[9], [9]], [2045, 2047], k=8, max_model_len=2048)
    assert shaped == [[1, 2], []]
    assert stats.drafts == 1
    assert stats.draft_tokens == 2


@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(1, 50_000), max_size=20),
            st.booleans(),
            st.integers(0, 2100),
        ),
        max_size=40,
    ),
    st.integers(1, 16),
)
def test_every_decoding_draft_is_exactly_its_budget(rows, k):
    drafts = [draft for draft, _, _ in rows]
    sampled = [[7] if decoding else [] for _, decoding, _ in rows]
    num_tokens = [n for _, _, n in rows]
    shaped, stats = shape_drafts(drafts, sampled, num_tokens, k=k, max_model_len=2048)
    for out, draft, decoding, n in zip(shaped, drafts, sampled, num_tokens, strict=True):
        expected_len = draft_budget(k, n, 2048) if decoding else 0
        assert len(out) == expected_len
        # the proposer's own tokens come first, unchanged
        assert out[: min(len(draft), expected_len)] == draft[:expected_len]
    assert stats.draft_tokens == sum(len(out) for out in shaped)
