"""The steady-state window of a measured run and what happened inside it. Pure.

The client is closed-loop: it keeps `concurrency` requests in flight until the
prompts run out. The window opens when every request of the first wave (the
first `concurrency` sent) has its first token, so the ramp-up's prefill burst
is outside, and closes at the first completion after the last send, when the
in-flight count starts to drain for good.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workers.load.client import RequestRecord


@dataclass(frozen=True)
class Window:
    start_ns: int
    end_ns: int

    @property
    def length_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def steady_window(records: Sequence[RequestRecord], concurrency: int) -> Window | None:
    """The window in which `concurrency` requests were in flight; None if there was none."""
    if len(records) <= concurrency:
        return None
    by_send = sorted(records, key=lambda r: r.send_ns)
    first_wave = by_send[:concurrency]
    if any(not r.chunk_ns for r in first_wave):
        return None
    start_ns = max(r.chunk_ns[0] for r in first_wave)
    last_send_ns = by_send[-1].send_ns
    end_ns = min(r.end_ns for r in records if r.end_ns > last_send_ns)
    return Window(start_ns, end_ns) if end_ns > start_ns else None


def chunk_token_counts(record: RequestRecord) -> list[float]:
    """Tokens per content chunk: the server's token_ids counts, else usage spread evenly."""
    if record.chunk_tokens is not None and len(record.chunk_tokens) == len(record.chunk_ns):
        return [float(n) for n in record.chunk_tokens]
    if not record.chunk_ns or not record.completion_tokens:
        return [0.0] * len(record.chunk_ns)
    return [record.completion_tokens / len(record.chunk_ns)] * len(record.chunk_ns)


def tokens_in_window(records: Sequence[RequestRecord], window: Window) -> float:
    """Output tokens whose chunk arrived inside [start, end)."""
    total = 0.0
    for record in records:
        for t_ns, tokens in zip(record.chunk_ns, chunk_token_counts(record), strict=True):
            if window.start_ns <= t_ns < window.end_ns:
                total += tokens
    return total


def window_output_tok_per_s(records: Sequence[RequestRecord], window: Window) -> float:
    """Output tokens arrived inside the window / window length."""
    return tokens_in_window(records, window) / window.length_s


def mean_in_flight(records: Sequence[RequestRecord], window: Window) -> float:
    """Time-weighted mean number of requests in flight during the window."""
    busy_ns = 0
    for record in records:
        overlap = min(record.end_ns, window.end_ns) - max(record.send_ns, window.start_ns)
        busy_ns += max(0, overlap)
    return busy_ns / (window.end_ns - window.start_ns)


def completed_in_window(records: Sequence[RequestRecord], window: Window) -> int:
    return sum(1 for r in records if window.start_ns <= r.end_ns < window.end_ns)


def chunks_in_window(records: Sequence[RequestRecord], window: Window) -> int:
    """Content chunks that arrived inside [start, end)."""
    total = 0
    for record in records:
        stamps = np.frombuffer(record.chunk_ns, dtype=np.int64) if len(record.chunk_ns) else None
        if stamps is not None:
            total += int(np.count_nonzero((stamps >= window.start_ns) & (stamps < window.end_ns)))
    return total


def window_tokens_per_chunk(records: Sequence[RequestRecord], window: Window) -> float | None:
    """Output tokens per content chunk inside the window: 1 for plain decoding, 1 + accepted drafts with
    speculation (a streaming server sends each stream one chunk per engine step)."""
    chunks = chunks_in_window(records, window)
    return tokens_in_window(records, window) / chunks if chunks else None


def window_chunk_gap_ms_p50(records: Sequence[RequestRecord], window: Window) -> float | None:
    """Median over streams of a stream's mean time between consecutive chunks inside the window, in ms.

    The engine's step time as one stream sees it (one chunk per step): with `window_tokens_per_chunk`
    it says whether a lever gains by more tokens per step or loses by longer steps. On the H200 tune of
    2026-12-01 van stepped in 2.8-4.2 ms for one token, suffix in 10.5-16.9 ms for 5.1-5.4: the host's
    drafting work, not the GPU, set suffix's pace.

    A stream's mean gap is its span over its gaps, not the median of its gaps: the client stamps once
    per socket read, so chunks that a busy host delivers in one read share a stamp. With most chunks
    coalesced the median gap is 0 (CI's 2-core runner: 3 of 4 cells); the span over the chunk count
    is unchanged by coalescing, since each chunk still stands for one engine step. A stream whose
    chunks inside the window all came in one read (one stamp) shows no step time at all, and is left
    out rather than read as a 0 ms step (CI's runner, 2026-12-06: one cell's median read 0.0).
    """
    per_stream_ms = []
    for record in records:
        if len(record.chunk_ns) < 2:
            continue
        stamps = np.frombuffer(record.chunk_ns, dtype=np.int64)
        inside = stamps[(stamps >= window.start_ns) & (stamps < window.end_ns)]
        if len(inside) > 1 and inside[-1] > inside[0]:
            per_stream_ms.append((int(inside[-1]) - int(inside[0])) / (len(inside) - 1) / 1e6)
    return float(np.median(per_stream_ms)) if per_stream_ms else None
