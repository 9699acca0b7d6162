import pytest

from vocab.schema import GateConfig
from workers.signals.gates import GateInputs, evaluate

GOOD = GateInputs(
    window_s=60,
    requests_in_window=100,
    errors=0,
    server_running_mean=31.9,
    concurrency=32,
    client_cpu_share=0.05,
    loop_lag_p99_ms=2.0,
    client_output_tokens=1000,
    server_output_tokens=1000,
)


def test_a_clean_cell_is_valid():
    verdict = evaluate(GOOD, GateConfig())
    assert verdict["valid"] is True
    assert verdict["invalid_reasons"] is None


@pytest.mark.parametrize(
    ("change", "gate", "words"),
    [
        ({"window_s": 5}, "gate_window", "window 5.0 s"),
        ({"requests_in_window": 3}, "gate_requests", "3 requests"),
        ({"errors": 2}, "gate_no_errors", "2 errors"),
        ({"server_running_mean": 28.0}, "gate_concurrency_held", "server ran 88% of concurrency 32"),
        ({"server_running_mean": None}, "gate_concurrency_held", "gauge not sampled inside the window"),
        ({"stream_usage_mismatches": 1}, "gate_stream_tokens", "1 requests' streamed token ids"),
        ({"requests_without_token_ids": 3}, "gate_stream_tokens", "3 reported no token ids"),
        ({"client_cpu_share": 0.9}, "gate_client_cpu", "client CPU 90%"),
        ({"loop_lag_p99_ms": 80.0}, "gate_loop_lag", "lag p99 80.0 ms"),
        ({"server_output_tokens": 1020}, "gate_tokens_reconciled", "streamed/server tokens differ by 1.96%"),
        ({"server_output_tokens": 0}, "gate_tokens_reconciled", "server reported no tokens"),
        ({"stall_s": 40.0, "stall_limit_s": 2.0}, "gate_no_stall", "no engine step for 40.0 s"),
    ],
)
def test_each_gate_fails_alone_and_says_why(change, gate, words):
    verdict = evaluate(GateInputs(**{**GOOD.__dict__, **change}), GateConfig())
    assert verdict[gate] is False
    assert verdict["valid"] is False
    assert words in verdict["invalid_reasons"]
    assert sum(1 for k, v in verdict.items() if k.startswith("gate_") and v is False) == 1
