"""Per-request and per-cell metrics, derived from raw timestamps after the run.

Every function takes stored values only (perf_counter ns, usage counts), so the
same numbers can be recomputed later from the Parquet rows.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from workers.load.client import RequestRecord


def ok(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """Requests that finished without error."""
    return [r for r in records if r.error_type is None]


def ttft_ms(record: RequestRecord) -> float | None:
    """Time to first token: first content chunk - send, in ms."""
    if not record.chunk_ns:
        return None
    return (record.chunk_ns[0] - record.send_ns) / 1e6


def tpot_ms(record: RequestRecord) -> float | None:
    """Time per output token after the first: (end - first chunk) / (completion_tokens - 1), in ms.

    The definition `vllm bench serve` uses, so figures compare across tools.
    """
    if not record.chunk_ns or not record.completion_tokens or record.completion_tokens < 2:
        return None
    return (record.end_ns - record.chunk_ns[0]) / 1e6 / (record.completion_tokens - 1)


def median_or_none(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def whole_run_output_tok_per_s(records: Sequence[RequestRecord]) -> float | None:
    """Completed output tokens / (first send to the last request's end): `vllm bench serve`'s
    'Output token throughput', for the same requests.

    vllm bench (vllm/benchmarks/serve.py) starts its clock before the first request goes out and
    stops it once every request has returned, failed ones included (`asyncio.gather` over all of
    them); its tokens are the server's `usage.completion_tokens` of the requests that succeeded.
    So the span here ends at the last end of any request, not only of a successful one. The span
    holds the drain (the last requests finishing at falling concurrency), which the steady-state
    window leaves out: where a lever's speed depends on concurrency, as drafting's does, the two
    figures' lever ratios differ by design (workers/load/windows.py).
    """
    done = ok(records)
    if not done:
        return None
    duration_ns = max(r.end_ns for r in records) - min(r.send_ns for r in records)
    tokens = sum(r.completion_tokens or 0 for r in done)
    return tokens / (duration_ns / 1e9) if duration_ns > 0 else None


def acceptance_rate(accepted_tokens: float, draft_tokens: float) -> float | None:
    """Accepted draft tokens / proposed draft tokens (server counters)."""
    return accepted_tokens / draft_tokens if draft_tokens > 0 else None


def draft_tokens_per_draft(draft_tokens: float, drafts: float) -> float | None:
    """Mean draft length: proposed draft tokens / drafts (server counters)."""
    return draft_tokens / drafts if drafts > 0 else None
