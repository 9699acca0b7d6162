"""The headline counts streamed token ids: they must add up, per request and against the server."""

from vocab.schema import GateConfig
from workers.load.client import LoopLag, RequestRecord
from workers.signals.counters import ServerCounters
from workers.signals.server_load import LoadSample
from workers.summary import stream_checks, summarize

S = 1_000_000_000


def record(i: int, chunk_tokens: list[int] | None, usage: int, send_s: float = 0.0, end_s: float = 3.0):
    chunks = chunk_tokens or [1, 1]
    send_ns, end_ns = int(send_s * S), int(end_s * S)
    return RequestRecord(
        i,
        f"p{i}",
        "measure",
        send_ns=send_ns,
        end_ns=end_ns,
        chunk_ns=[send_ns + int(0.5 * S) * (j + 1) for j in range(len(chunks))],
        chunk_tokens=chunk_tokens,
        n_chunks=len(chunks),
        completion_tokens=usage,
    )


def closed_loop(tokens: list[list[int]], usage: int) -> list[RequestRecord]:
    """Concurrency 2: two sent at 0, each replaced when it ends (window 0.5 s to 5 s)."""
    times = [(0, 2), (0, 3), (2, 5), (3, 6)]
    return [record(i, t, usage, *times[i]) for i, t in enumerate(tokens)]


def test_a_request_whose_ids_do_not_add_up_to_its_usage_is_counted():
    checks = stream_checks([record(0, [1, 2], 3), record(1, [1, 1], 3), record(2, None, 2)])
    assert checks == {"stream_usage_mismatches": 1, "requests_without_token_ids": 1}


def summary_for(records, generation_tokens, running):
    samples = [LoadSample(t, running, 0) for t in range(0, 7 * S, S // 10)]
    delta = ServerCounters(generation_tokens=generation_tokens)
    return summarize(records, delta, 0.0, LoopLag(), 2, GateConfig(min_window_s=0, min_requests=0), samples)


def test_tokens_are_reconciled_from_the_streamed_ids_not_the_usage():
    # Usage says 3 tokens each; the stream delivered 2: the server's 8 matches what arrived.
    records = closed_loop([[1, 1]] * 4, usage=3)
    summary = summary_for(records, generation_tokens=8, running=2)
    assert summary["streamed_output_tokens"] == 8
    assert summary["gate_tokens_reconciled"] is True
    assert summary["gate_stream_tokens"] is False


def test_concurrency_is_judged_on_the_servers_running_gauge():
    records = closed_loop([[1, 2]] * 4, usage=3)
    held = summary_for(records, generation_tokens=12, running=2)
    assert held["gate_concurrency_held"] is True and held["valid"] is True
    starved = summary_for(records, generation_tokens=12, running=1)
    assert starved["gate_concurrency_held"] is False
    assert "server ran 50% of concurrency 2" in starved["invalid_reasons"]
    # The client's own in-flight count was the same in both: it could not have told them apart.
    assert held["window_mean_in_flight"] == starved["window_mean_in_flight"]
