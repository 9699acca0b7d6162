import pytest

from workers.load.client import RequestRecord
from workers.signals import metrics


def rec(send, chunks, end, tokens, error=None):
    return RequestRecord(
        0,
        "p",
        "measure",
        send_ns=send,
        end_ns=end,
        chunk_ns=chunks,
        completion_tokens=tokens,
        error_type=error,
    )


def test_ttft_and_tpot_from_raw_timestamps():
    r = rec(0, [2_000_000, 5_000_000], 11_000_000, tokens=4)
    assert metrics.ttft_ms(r) == 2.0
    assert metrics.tpot_ms(r) == pytest.approx(3.0)


def test_whole_run_throughput_counts_ok_requests_from_first_send():
    records = [
        rec(0, [1], 1_000_000_000, tokens=100),
        rec(500_000_000, [1], 2_000_000_000, tokens=300),
        rec(100, [], 1_500_000_000, tokens=None, error="http_500"),
    ]
    assert metrics.whole_run_output_tok_per_s(records) == pytest.approx(200.0)


def test_whole_run_span_ends_with_the_last_request_of_any_outcome():
    # vllm bench serve's clock stops when every request has returned, a failed one too: a request
    # that fails last (here a timeout at 3 s) is in the span, its tokens are not.
    records = [
        rec(0, [1], 1_000_000_000, tokens=100),
        rec(500_000_000, [1], 2_000_000_000, tokens=300),
        rec(600_000_000, [], 4_000_000_000, tokens=None, error="TimeoutError"),
    ]
    assert metrics.whole_run_output_tok_per_s(records) == pytest.approx(100.0)


def test_spec_ratios_are_none_without_drafts():
    assert metrics.acceptance_rate(0, 0) is None
    assert metrics.acceptance_rate(3, 12) == 0.25
    assert metrics.draft_tokens_per_draft(80, 10) == 8.0
