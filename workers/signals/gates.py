"""Validity gates of a cell: each a named pass/fail column, all needed for VALID. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from vocab.schema import GateConfig


@dataclass(frozen=True)
class GateInputs:
    """The measured figures the gates judge."""

    window_s: float | None
    requests_in_window: int
    errors: int
    # Mean of the server's own running-requests gauge inside the window
    # (workers/signals/server_load.py); None when it was not sampled there.
    server_running_mean: float | None
    concurrency: int
    client_cpu_share: float
    loop_lag_p99_ms: float
    # Output tokens the client received: the streamed token ids, summed.
    client_output_tokens: float
    server_output_tokens: float | None
    # Requests whose streamed token ids do not add up to their usage.completion_tokens,
    # and requests that reported no token ids at all (load.token_ids off or unsupported).
    stream_usage_mismatches: int = 0
    requests_without_token_ids: int = 0
    # Server gauges and counters quoted when concurrency is not held.
    server_waiting_max: float | None = None
    server_preemptions: float = 0.0
    # Of the time EngineCore's (and workers') threads were runnable over the measured
    # load, the share they waited for a core (workers/signals/host.py); None: not read
    # (no /proc, or no engine process found), which this gate does not judge.
    engine_wait_share: float | None = None
    # The longest stretch of the window with no token on any stream and no engine step, and the
    # limit it is judged against (workers/signals/stall.py); None: no window, not judged here.
    stall_s: float | None = None
    stall_limit_s: float | None = None
    stall_itl_ms_p99: float | None = None
    # /metrics scrapes inside the window that failed (a stopped server's time out), quoted with a stall.
    scrapes_failed: int = 0


def token_mismatch(client_tokens: float, server_tokens: float | None) -> float | None:
    """|client - server| / server output tokens; None when the server reported nothing."""
    if not server_tokens:
        return None
    return abs(client_tokens - server_tokens) / server_tokens


def concurrency_words(inputs: GateInputs, held: float, gates: GateConfig) -> str:
    if inputs.server_running_mean is None:
        return "server running-requests gauge not sampled inside the window"
    return (
        f"server ran {held:.0%} of concurrency {inputs.concurrency} < {gates.min_concurrency_held:.0%} "
        f"(waiting max {inputs.server_waiting_max or 0:.0f}, preemptions {inputs.server_preemptions:.0f})"
    )


def stall_words(inputs: GateInputs, gates: GateConfig) -> str:
    """The stall, its limit and where the limit came from, what it may have been, and the fix."""
    itl = "no inter-token gaps" if inputs.stall_itl_ms_p99 is None else f"{inputs.stall_itl_ms_p99:.0f} ms"
    return (
        f"engine stalled: no token on any stream and no engine step for {inputs.stall_s or 0:.1f} s inside "
        f"the window > {inputs.stall_limit_s or 0:.1f} s (max(gates.stall_floor_s={gates.stall_floor_s:g}, "
        f"{gates.stall_itl_multiple:g} x inter-token p99 {itl})), {inputs.scrapes_failed} /metrics scrapes "
        "failed in the window: the engine was stopped, swapped out or hung in a step; find what paused it "
        "(its log, the host's memory and other tenants), then resume to measure the cell again"
    )


# Gates whose failure is the host's, not the cell's: something else ran on the machine while it was
# measured. `grid run` measures such a cell again at once (run.host_invalid_reruns).
HOST_GATES = ("gate_engine_not_starved", "gate_loop_lag")
# What to do when a host gate fails: the machine, not the cell.
BUSY_FIX = (
    "the machine was busy: rerun when it is quiet (resume measures only what is not done), "
    "give the engine cores of its own (load.pin_cpus=auto on >= 4 cores, ray.cpus_per_engine) "
    "or keep the cell as measured with run.keep_invalid=true"
)


def window_fix(inputs: GateInputs, gates: GateConfig) -> str:
    """More prompts or longer outputs, and about how many times more would fill the window."""
    if not inputs.window_s:
        return (
            f"no steady window: measure more prompts than load.concurrency ({inputs.concurrency}) "
            "(++grid.num_prompts.<corpus>=N) or lower the concurrency"
        )
    times = gates.min_window_s / inputs.window_s
    return (
        f"about {times:.1f}x the measured prompts (++grid.num_prompts.<corpus>=N) or outputs {times:.1f}x "
        "as long (load.max_tokens, where answers reach it) would fill it (grid run prints the override)"
    )


def fix_of(name: str, inputs: GateInputs, gates: GateConfig) -> str:
    """What to do when gate `name` fails, in words (after the reason in invalid_reasons)."""
    more = max(gates.min_requests - inputs.requests_in_window, 1)
    fixes = {
        "gate_window": window_fix(inputs, gates),
        "gate_requests": f"measure at least {more} more prompts (++grid.num_prompts.<corpus>=N) "
        "or lower gates.min_requests",
        "gate_no_errors": "the failed requests' error_type and error_message are in the cell's requests "
        "(grid summary, the notebook), the engine's in its log: fix the cause, then resume",
        "gate_concurrency_held": "the engine did not run every request at once: give it more KV cache "
        "(engine.gpu_memory_utilization, a shorter engine.max_model_len) or lower load.concurrency",
        "gate_client_cpu": "the client is the bottleneck: give it a core of its own (load.pin_cpus=auto) "
        "or lower load.concurrency",
        "gate_loop_lag": BUSY_FIX,
        "gate_tokens_reconciled": "another client may share the engine, or its counters were not scraped: "
        "check the engine log and that nothing else sends to it, then resume",
        "gate_stream_tokens": "keep load.token_ids=true, on an engine that returns them (return_token_ids)",
        "gate_engine_not_starved": BUSY_FIX,
        "gate_no_stall": "",  # stall_words names it
    }
    return fixes[name]


def words_of(name: str, inputs: GateInputs, held: float, mismatch: float | None, gates: GateConfig) -> str:
    """Why gate `name` failed, with its figure and its limit."""
    if name == "gate_no_stall":
        return stall_words(inputs, gates)
    if name == "gate_concurrency_held":
        return concurrency_words(inputs, held, gates)
    if name == "gate_tokens_reconciled":
        return (
            "server reported no tokens"
            if mismatch is None
            else f"streamed/server tokens differ by {mismatch:.2%}"
        )
    return {
        "gate_window": f"window {inputs.window_s or 0:.1f} s < {gates.min_window_s} s",
        "gate_requests": f"{inputs.requests_in_window} requests in window < {gates.min_requests}",
        "gate_no_errors": f"{inputs.errors} errors",
        "gate_client_cpu": f"client CPU {inputs.client_cpu_share:.0%} > {gates.max_client_cpu_share:.0%}",
        "gate_loop_lag": f"event-loop lag p99 {inputs.loop_lag_p99_ms:.1f} ms > {gates.max_loop_lag_ms} ms",
        "gate_stream_tokens": f"{inputs.stream_usage_mismatches} requests' streamed token ids do not add up "
        f"to their usage, {inputs.requests_without_token_ids} reported no token ids",
        "gate_engine_not_starved": f"engine host threads starved: EngineCore waited for a core "
        f"{inputs.engine_wait_share or 0:.0%} of its runnable time > {gates.max_engine_wait_share:.0%}",
    }[name]


def host_bound(columns: dict[str, object]) -> bool:
    """Whether a cell's gate columns failed only for the host's sake (HOST_GATES): measuring it
    again on a quieter machine could pass, unlike a window too short for its corpus."""
    failed = {name for name, ok in columns.items() if name.startswith("gate_") and ok is False}
    return bool(failed) and failed <= set(HOST_GATES)


def evaluate(inputs: GateInputs, gates: GateConfig) -> dict[str, object]:
    """Gate columns (gate_* booleans), `valid`, and `invalid_reasons` in words.

    concurrency held: the server's running-requests gauge, not the client's own
    in-flight count (which a closed loop holds by construction). tokens
    reconciled: the streamed token ids (what the headline throughput counts)
    against the server's generation_tokens delta. stream tokens: per request,
    the streamed token ids add up to the server's usage.completion_tokens.
    engine not starved: EngineCore's run-queue wait share over the measured load
    (something else ran on its cores: the client, a neighbour, a hog). no stall: the
    longest stretch of the window with no token on any stream and no engine step, under
    max(gates.stall_floor_s, gates.stall_itl_multiple x the inter-token p99).
    """
    mismatch = token_mismatch(inputs.client_output_tokens, inputs.server_output_tokens)
    held = (inputs.server_running_mean or 0.0) / inputs.concurrency
    checks = {
        "gate_window": (inputs.window_s or 0.0) >= gates.min_window_s,
        "gate_requests": inputs.requests_in_window >= gates.min_requests,
        "gate_no_errors": inputs.errors == 0,
        "gate_concurrency_held": held >= gates.min_concurrency_held,
        "gate_client_cpu": inputs.client_cpu_share <= gates.max_client_cpu_share,
        "gate_loop_lag": inputs.loop_lag_p99_ms <= gates.max_loop_lag_ms,
        "gate_tokens_reconciled": mismatch is not None and mismatch <= gates.max_token_mismatch,
        "gate_stream_tokens": inputs.stream_usage_mismatches == 0 and inputs.requests_without_token_ids == 0,
        "gate_engine_not_starved": inputs.engine_wait_share is None
        or inputs.engine_wait_share <= gates.max_engine_wait_share,
        "gate_no_stall": inputs.stall_s is None
        or inputs.stall_limit_s is None
        or inputs.stall_s <= inputs.stall_limit_s,
    }
    # Each reason, then what to do about it (the stall's words name their own fix).
    words = {
        name: ": ".join(
            filter(None, (words_of(name, inputs, held, mismatch, gates), fix_of(name, inputs, gates)))
        )
        for name in checks
    }
    failed = [words[name] for name, ok in checks.items() if not ok]
    return {
        **checks,
        "concurrency_held": held,
        "token_mismatch": mismatch,
        "valid": not failed,
        "invalid_reasons": "; ".join(failed) or None,
    }
