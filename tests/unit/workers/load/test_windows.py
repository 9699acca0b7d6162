"""Window logic on synthetic timelines (a fake clock in ns)."""

import pytest

from workers.load.client import RequestRecord
from workers.load.windows import (
    Window,
    chunk_token_counts,
    chunks_in_window,
    completed_in_window,
    mean_in_flight,
    steady_window,
    tokens_in_window,
    window_chunk_gap_ms_p50,
    window_output_tok_per_s,
    window_tokens_per_chunk,
)

S = 1_000_000_000


def req(i, send_s, first_s, end_s, tokens=10, chunk_tokens=None):
    chunks = [int((first_s + k * (end_s - first_s) / 9) * S) for k in range(10)]
    return RequestRecord(
        i,
        str(i),
        "measure",
        send_ns=int(send_s * S),
        end_ns=int(end_s * S),
        chunk_ns=chunks,
        completion_tokens=tokens,
        chunk_tokens=chunk_tokens,
    )


def closed_loop(concurrency=2, per_slot=3, duration_s=10.0, ttft_s=1.0):
    """Each slot sends its next request when the previous one ends."""
    records, i = [], 0
    for slot in range(concurrency):
        t = slot * 0.1
        for _ in range(per_slot):
            records.append(req(i, t, t + ttft_s, t + duration_s))
            t += duration_s
            i += 1
    return records


def test_window_opens_after_first_wave_tokens_and_closes_at_first_drain():
    records = closed_loop()
    window = steady_window(records, concurrency=2)
    # First wave: slots start at 0.0 and 0.1 s, first tokens at 1.0 and 1.1 s.
    assert window.start_ns == int(1.1 * S)
    # Last sends at 20.0 and 20.1 s; first completion after that at 30.0 s.
    assert window.end_ns == int(30.0 * S)
    assert mean_in_flight(records, window) == pytest.approx(2.0)


def test_no_window_when_there_are_no_more_requests_than_concurrency():
    assert steady_window(closed_loop(concurrency=2, per_slot=1), concurrency=2) is None


def test_mean_in_flight_sees_a_gap():
    records = closed_loop(concurrency=1, per_slot=3)
    records[1] = req(1, 12.0, 13.0, 20.0)  # the client left a 2 s gap
    window = Window(0, 30 * S)
    assert mean_in_flight(records, window) == pytest.approx(28 / 30)


def test_tokens_in_window_use_server_counts_when_given():
    record = req(0, 0.0, 1.0, 10.0, tokens=40, chunk_tokens=[4] * 10)
    assert chunk_token_counts(record) == [4.0] * 10
    assert tokens_in_window([record], Window(0, 5 * S)) == 4.0 * sum(1 for t in record.chunk_ns if t < 5 * S)


def test_tokens_fall_back_to_usage_spread_over_chunks():
    record = req(0, 0.0, 1.0, 10.0, tokens=20)
    assert chunk_token_counts(record) == [2.0] * 10
    assert window_output_tok_per_s([record], Window(0, 11 * S)) == pytest.approx(20 / 11)


def test_completed_in_window_counts_ends_inside():
    records = closed_loop()
    assert completed_in_window(records, Window(0, int(10.05 * S))) == 1


def stream(i, start_s, step_ms, tokens_per_step, steps):
    """One stream that gets a chunk of `tokens_per_step` tokens every `step_ms`."""
    chunks = [int(start_s * S + k * step_ms * 1e6) for k in range(steps)]
    return RequestRecord(i, str(i), "measure", send_ns=int((start_s - 0.05) * S), end_ns=chunks[-1],
                         chunk_ns=chunks, completion_tokens=tokens_per_step * steps,
                         chunk_tokens=[tokens_per_step] * steps)  # fmt: skip


def test_step_time_and_tokens_per_step_inside_the_window():
    # A drafting lever's shape: 5 tokens a step, 12 ms a step; a van-like stream: 1 token, 3 ms.
    window = Window(int(1.0 * S), int(2.0 * S))
    drafting = [stream(i, 0.5 + i * 0.001, 12.0, 5, 200) for i in range(4)]
    assert window_chunk_gap_ms_p50(drafting, window) == pytest.approx(12.0, abs=0.01)
    assert window_tokens_per_chunk(drafting, window) == pytest.approx(5.0)
    plain = [stream(i, 0.5, 3.0, 1, 800) for i in range(2)]
    assert window_chunk_gap_ms_p50(plain, window) == pytest.approx(3.0, abs=0.01)
    assert chunks_in_window(plain, window) == 2 * 333  # chunks at 1.001 ... 1.997 s: [start, end)


def test_gaps_that_straddle_the_window_edge_are_left_out():
    # Fast steps before the window, slow inside: only the inside gaps count.
    window = Window(int(1.0 * S), int(2.0 * S))
    fast = [int(0.5 * S + k * 1e6) for k in range(500)]  # 0.5-1.0 s, 1 ms apart
    slow = [int(1.0 * S + k * 20e6) for k in range(50)]  # 1.0-2.0 s, 20 ms apart
    record = RequestRecord(0, "0", "measure", send_ns=int(0.4 * S), end_ns=slow[-1], chunk_ns=fast + slow,
                           completion_tokens=550, chunk_tokens=[1] * 550)  # fmt: skip
    assert window_chunk_gap_ms_p50([record], window) == pytest.approx(20.0)
    assert window_chunk_gap_ms_p50([record], Window(int(3 * S), int(4 * S))) is None
    assert window_tokens_per_chunk([record], Window(int(3 * S), int(4 * S))) is None


def test_step_time_survives_chunks_that_arrive_in_one_read():
    # A busy client reads several chunks per recv and stamps them alike: steps of 10 ms, delivered
    # in bursts of 4 (stamps 0,0,0,0,40,40,...). The median gap would be 0; the step is still 10 ms.
    window = Window(int(1.0 * S), int(3.0 * S))
    bursts = [int(1.0 * S + (k // 4) * 40e6) for k in range(160)]
    record = RequestRecord(0, "0", "measure", send_ns=int(0.9 * S), end_ns=bursts[-1], chunk_ns=bursts,
                           completion_tokens=160, chunk_tokens=[1] * 160)  # fmt: skip
    assert window_chunk_gap_ms_p50([record], window) == pytest.approx(39 * 40 / 159, rel=1e-6)
    assert window_chunk_gap_ms_p50([record], window) > 9.0


def test_a_stream_read_in_one_go_shows_no_step_time():
    # Every chunk of one stream inside the window came in one read (one stamp): it says nothing of
    # the step, so the median is the other stream's 10 ms, not 0 ms; with only such streams, None.
    window = Window(int(1.0 * S), int(3.0 * S))
    one_read = [int(1.5 * S)] * 40
    stepped = [int(1.0 * S + k * 10e6) for k in range(100)]
    lumped = RequestRecord(0, "0", "measure", send_ns=int(0.9 * S), end_ns=one_read[-1], chunk_ns=one_read,
                           completion_tokens=40, chunk_tokens=[1] * 40)  # fmt: skip
    paced = RequestRecord(1, "1", "measure", send_ns=int(0.9 * S), end_ns=stepped[-1], chunk_ns=stepped,
                          completion_tokens=100, chunk_tokens=[1] * 100)  # fmt: skip
    assert window_chunk_gap_ms_p50([lumped, paced], window) == pytest.approx(10.0)
    assert window_chunk_gap_ms_p50([lumped], window) is None
