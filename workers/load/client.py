"""Async streaming client: a fixed number of requests in flight, raw timestamps per chunk.

Hot path: per socket read only a perf_counter_ns() and the raw bytes are kept
(workers/load/http1.py); HTTP framing, JSON decoding and every metric happen after
the stream ends (workers/load/sse.py).
Tokens come from the server's `usage`, never from counting chunks.
Per-chunk values (`chunk_ns`, `chunk_tokens`) are kept as arrays of machine
integers, so memory stays at a few bytes per chunk however long the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from store.records import RequestRecord
from workers.load.http1 import Connection, MalformedResponse, ReadBatcher, Response, parse_response
from workers.load.prompts import Prompt
from workers.load.sse import decode_response

if TYPE_CHECKING:  # annotations only: the client imports no config system (hydra: ~6 MB of RSS)
    from vocab.schema import LoadSpec

KEEPALIVE_S = 2.0
ENCODE = msgspec.json.Encoder().encode
T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """The server one load talks to."""

    base_url: str
    api_key: str
    model: str
    endpoint: str  # "chat" or "completions"


def request_body(target: Target, prompt: Prompt, load: LoadSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": target.model,
        "max_tokens": load.max_tokens,
        "temperature": load.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if load.ignore_eos:
        body["ignore_eos"] = True
    if load.token_ids:
        body["return_token_ids"] = True
    if target.endpoint == "chat":
        body["messages"] = list(prompt.messages or [{"role": "user", "content": prompt.prompt or ""}])
    else:
        body["prompt"] = prompt_text(prompt)
    return body


def warmup_load(load: LoadSpec) -> LoadSpec:
    """The load the warm-up goes out with: the cell's, run to max_tokens where load.warmup_ignore_eos
    asks for full waves (the measured load keeps its own ignore_eos)."""
    return dataclasses.replace(load, ignore_eos=True) if load.warmup_ignore_eos else load


def prompt_text(prompt: Prompt) -> str:
    """The prompt as one text: the raw prompt, or the chat messages' contents joined."""
    if prompt.prompt is not None:
        return prompt.prompt
    return "\n\n".join(m["content"] for m in prompt.messages or ())


def endpoint_path(target: Target) -> str:
    return "/v1/chat/completions" if target.endpoint == "chat" else "/v1/completions"


async def send_one(conn: Connection, request: bytes, record: RequestRecord, timeout_s: float | None) -> None:
    """Stream one request into `record`; errors become columns, never exceptions."""
    reads = conn.new_reads()
    try:
        async with asyncio.timeout(timeout_s):
            await conn.post(request, reads)
    except (TimeoutError, OSError) as exc:
        record.error_type = type(exc).__name__
        record.error_message = str(exc)[:500] or record.error_type
    finally:
        record.end_ns = time.perf_counter_ns()
    if not reads:
        return
    try:
        response = parse_response(reads, complete=record.error_type is None)
    except MalformedResponse as exc:
        record.error_type = record.error_type or "bad_response"
        record.error_message = record.error_message or str(exc)[:500]
        conn.close()
        return
    if not response.keep_alive:
        conn.close()
    record.http_status = response.status
    if response.status != 200:
        record.error_type = f"http_{response.status}"
        record.error_message = response.body[:500].decode(errors="replace")
        return
    _fill_from_stream(record, response)


def _fill_from_stream(record: RequestRecord, response: Response) -> None:
    if not response.body:
        return
    try:
        stream = decode_response(response)
    except ValueError as exc:
        record.error_type = record.error_type or "bad_stream"
        record.error_message = record.error_message or str(exc)[:500]
        return
    record.chunk_ns = stream.content_chunk_ns
    record.chunk_tokens = stream.chunk_tokens
    record.n_chunks = len(stream.content_chunk_ns)
    record.prompt_tokens = stream.prompt_tokens
    record.completion_tokens = stream.completion_tokens
    record.finish_reason = stream.finish_reason
    record.output_text = stream.text
    if record.error_type is None and stream.error_message:
        record.error_type, record.error_message = "server_error", stream.error_message[:500]
    elif record.error_type is None and (not stream.saw_done or stream.completion_tokens is None):
        record.error_type = "incomplete_stream"
        record.error_message = "stream ended without usage or [DONE]"


async def run_load(target: Target, prompts: list[Prompt], load: LoadSpec, phase: str) -> list[RequestRecord]:
    """Send `prompts` with `load.concurrency` requests in flight until all are done.

    Each worker owns one keep-alive connection. vLLM's HTTP server closes idle
    ones after 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); a request written into a
    connection it just closed would fail, so ours are reopened after
    KEEPALIVE_S idle.
    """
    records: list[RequestRecord] = []
    next_idx = 0
    batcher = ReadBatcher(load.read_batch_ms / 1e3) if load.read_batch_ms else None
    headers = {"Authorization": f"Bearer {target.api_key}"}
    path = endpoint_path(target)

    async def worker() -> None:
        nonlocal next_idx
        conn = Connection(target.base_url, idle_close_s=KEEPALIVE_S, batcher=batcher)
        try:
            while next_idx < len(prompts):
                idx, next_idx = next_idx, next_idx + 1
                # Encoded before send_ns: the request's cost to us is not the server's latency.
                request = conn.request_bytes(path, ENCODE(request_body(target, prompts[idx], load)), headers)
                record = RequestRecord(idx, prompts[idx].prompt_id, phase, send_ns=time.perf_counter_ns())
                records.append(record)
                await send_one(conn, request, record, load.request_timeout_s)
        finally:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(min(load.concurrency, len(prompts)))))
    return sorted(records, key=lambda r: r.request_idx)


LAG_PROBE_S = 0.01


@dataclass
class LoopLag:
    """How late the event loop woke up for a fixed sleep: a saturated client shows here."""

    samples_ms: list[float] = field(default_factory=list)

    def p99_ms(self) -> float:
        if not self.samples_ms:
            return 0.0
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def probe_lag(lag: LoopLag, stop: asyncio.Event) -> None:
    while not stop.is_set():
        start_ns = time.perf_counter_ns()
        await asyncio.sleep(LAG_PROBE_S)
        lag.samples_ms.append((time.perf_counter_ns() - start_ns) / 1e6 - LAG_PROBE_S * 1e3)


async def run_measured(
    target: Target, prompts: list[Prompt], load: LoadSpec, phase: str
) -> tuple[list[RequestRecord], LoopLag]:
    """run_load with an event-loop lag probe beside it."""
    lag, stop = LoopLag(), asyncio.Event()
    probe = asyncio.create_task(probe_lag(lag, stop))
    try:
        records = await run_load(target, prompts, load, phase)
    finally:
        stop.set()
        await probe
    return records, lag


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on uvloop (less CPU per network read) when it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
