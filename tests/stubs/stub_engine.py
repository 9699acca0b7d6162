"""A stand-in for `vllm serve` in scheduling and fault tests (never in engine tests).

Accepts vLLM's flags (only --host, --port, --api-key matter), spawns a child
as vLLM's engine core would, and serves /health, /version, /metrics and the
streaming endpoints. Faults are injected through the environment:
  STUB_HANG_AT_START=1      never become ready
  STUB_DIE_AFTER=N          SIGKILL itself after N requests...
  STUB_DIE_ONCE_FILE=path   ...only if `path` does not exist yet (then create it)
  STUB_TOKENS, STUB_TOKENS_PER_CHUNK, STUB_DELAY_S   the stream's shape
  STUB_STEP_S               paced: one chunk per stream per step (a batched decoder's clock)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web

from tests.stubs.openai_stub import StubSettings, make_app


def metrics_text(generated: int, running: int = 0) -> str:
    return (
        "# TYPE vllm:generation_tokens_total counter\n"
        f'vllm:generation_tokens_total{{engine="0",model_name="stub"}} {float(generated)}\n'
        # Requests in flight, as vLLM's gauge reports them (the concurrency gate reads it).
        "# TYPE vllm:num_requests_running gauge\n"
        f'vllm:num_requests_running{{engine="0",model_name="stub"}} {float(running)}\n'
    )


def maybe_die(served: int) -> None:
    die_after = int(os.environ.get("STUB_DIE_AFTER", "0"))
    if not die_after or served < die_after:
        return
    once = os.environ.get("STUB_DIE_ONCE_FILE")
    if once:
        if Path(once).exists():
            return
        Path(once).write_text("died")
    print(f"stub: dying after {served} requests", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def build(settings: StubSettings, api_key: str) -> web.Application:
    app = make_app(settings)
    state = {"served": 0, "generated": 0, "running": 0}

    @web.middleware
    async def auth_and_count(request: web.Request, handler):
        authorized = not api_key or request.headers.get("Authorization") == f"Bearer {api_key}"
        if request.path.startswith("/v1") and not authorized:
            return web.Response(status=401)
        counted = request.path.startswith("/v1")
        state["running"] += counted
        try:
            response = await handler(request)
        finally:
            state["running"] -= counted
        if request.path.startswith("/v1"):
            state["served"] += 1
            state["generated"] += settings.tokens
            maybe_die(state["served"])
        return response

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def version(_: web.Request) -> web.Response:
        return web.json_response({"version": "stub"})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=metrics_text(state["generated"], state["running"]))

    app.middlewares.append(auth_and_count)
    app.router.add_get("/health", health)
    app.router.add_get("/version", version)
    app.router.add_get("/metrics", metrics)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", default="")
    args, _unknown = parser.parse_known_args()
    print(f"stub engine pid {os.getpid()} on {args.host}:{args.port}", flush=True)
    # A child, as vLLM's engine core is, so teardown must kill a tree.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    if os.environ.get("STUB_HANG_AT_START"):
        time.sleep(3600)
    settings = StubSettings(
        tokens=int(os.environ.get("STUB_TOKENS", "8")),
        tokens_per_chunk=int(os.environ.get("STUB_TOKENS_PER_CHUNK", "1")),
        delay_s=float(os.environ.get("STUB_DELAY_S", "0")),
        step_s=float(os.environ.get("STUB_STEP_S", "0")),
    )
    web.run_app(
        build(settings, args.api_key),
        host=args.host,
        port=args.port,
        print=None,
        handle_signals=True,
        loop=asyncio.new_event_loop(),
    )


if __name__ == "__main__":
    main()
