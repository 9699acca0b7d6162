"""A stand-in OpenAI-compatible streaming server, for tests of the client (not of the engine).

Streams `tokens` tokens per request, `tokens_per_chunk` per SSE chunk (as with
speculative decoding), then a usage chunk and [DONE]. Chunks are shaped like
vLLM's (id, object, created, model, and each chunk's `token_ids` when the
request asks for `return_token_ids`).

Arrival, one of:
  - as fast as it can write (the default): a flood, every read carries many events;
  - `delay_s` after each chunk, per stream (streams drift apart);
  - `step_s`: paced like a batched decoder, one chunk per stream per step of a
    clock shared by all streams (each step's chunks leave together, at the
    step's boundary), e.g. 5 ms for a decoder running 200 steps/s.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from aiohttp import web

TOKEN_ID = 1234


@dataclass
class StubSettings:
    tokens: int = 16
    tokens_per_chunk: int = 1
    delay_s: float = 0.0
    keepalive_s: float = 75.0
    # > 0: one chunk per stream every step_s, on a clock shared by all streams.
    step_s: float = 0.0


def _chunk(body: dict, text: str, n_tokens: int, finish: str | None) -> bytes:
    if "messages" in body:
        choice: dict = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
        kind = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}
        kind = "text_completion"
    if body.get("return_token_ids"):
        choice["token_ids"] = [TOKEN_ID] * n_tokens
    event = {
        "id": "cmpl-stub",
        "object": kind,
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [choice],
    }
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def until_next_step(now_s: float, step_s: float) -> float:
    """Seconds from `now_s` to the next boundary of a clock with period `step_s` (never 0)."""
    return step_s - now_s % step_s


async def next_step(step_s: float) -> None:
    """Sleep to the next step boundary: every stream waiting on it wakes at the same tick."""
    await asyncio.sleep(until_next_step(asyncio.get_running_loop().time(), step_s))


def make_app(settings: StubSettings) -> web.Application:
    async def stream(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        tokens = min(settings.tokens, body.get("max_tokens", settings.tokens))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        sent = 0
        while sent < tokens:
            n = min(settings.tokens_per_chunk, tokens - sent)
            sent += n
            if settings.step_s:
                await next_step(settings.step_s)
            elif settings.delay_s:
                await asyncio.sleep(settings.delay_s)
            finish = "length" if sent == tokens else None
            await resp.write(_chunk(body, "tok " * n, n, finish))
        usage = {"prompt_tokens": 3, "completion_tokens": tokens, "total_tokens": tokens + 3}
        await resp.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/completions", stream)
    app.router.add_post("/v1/chat/completions", stream)
    return app


@contextmanager
def serve_stub(settings: StubSettings) -> Iterator[str]:
    """Run the stub on a free loopback port in a thread; yield its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(make_app(settings), keepalive_timeout=settings.keepalive_s)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
