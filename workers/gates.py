"""Validity gates of a cell: each a named pass/fail column, all needed for VALID. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from grid.schema import GateConfig


@dataclass(frozen=True)
class GateInputs:
    """The measured figures the gates judge."""

    window_s: float | None
    requests_in_window: int
    errors: int
    mean_in_flight: float | None
    concurrency: int
    client_cpu_share: float
    loop_lag_p99_ms: float
    client_output_tokens: float
    server_output_tokens: float | None


def token_mismatch(client_tokens: float, server_tokens: float | None) -> float | None:
    """|client - server| / server output tokens; None when the server reported nothing."""
    if not server_tokens:
        return None
    return abs(client_tokens - server_tokens) / server_tokens


def evaluate(inputs: GateInputs, gates: GateConfig) -> dict[str, object]:
    """Gate columns (gate_* booleans), `valid`, and `invalid_reasons` in words."""
    mismatch = token_mismatch(inputs.client_output_tokens, inputs.server_output_tokens)
    held = (inputs.mean_in_flight or 0.0) / inputs.concurrency
    checks = {
        "gate_window": (inputs.window_s or 0.0) >= gates.min_window_s,
        "gate_requests": inputs.requests_in_window >= gates.min_requests,
        "gate_no_errors": inputs.errors == 0,
        "gate_concurrency_held": held >= gates.min_concurrency_held,
        "gate_client_cpu": inputs.client_cpu_share <= gates.max_client_cpu_share,
        "gate_loop_lag": inputs.loop_lag_p99_ms <= gates.max_loop_lag_ms,
        "gate_tokens_reconciled": mismatch is not None and mismatch <= gates.max_token_mismatch,
    }
    words = {
        "gate_window": f"window {inputs.window_s or 0:.1f} s < {gates.min_window_s} s",
        "gate_requests": f"{inputs.requests_in_window} requests in window < {gates.min_requests}",
        "gate_no_errors": f"{inputs.errors} errors",
        "gate_concurrency_held": f"concurrency held {held:.0%} < {gates.min_concurrency_held:.0%}",
        "gate_client_cpu": f"client CPU {inputs.client_cpu_share:.0%} > {gates.max_client_cpu_share:.0%}",
        "gate_loop_lag": f"event-loop lag p99 {inputs.loop_lag_p99_ms:.1f} ms > {gates.max_loop_lag_ms} ms",
        "gate_tokens_reconciled": "server reported no tokens"
        if mismatch is None
        else f"client/server tokens differ by {mismatch:.2%}",
    }
    failed = [words[name] for name, ok in checks.items() if not ok]
    return {
        **checks,
        "concurrency_held": held,
        "token_mismatch": mismatch,
        "valid": not failed,
        "invalid_reasons": "; ".join(failed) or None,
    }
