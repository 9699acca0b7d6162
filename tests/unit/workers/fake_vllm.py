"""A stand-in for `vllm serve` shaped as vLLM's process tree, with the faults of issue 28 item 1.

The API server (this process) starts an "EngineCore" with multiprocessing's
spawn, as vLLM does (left untitled, as setproctitle sometimes leaves it), and
serves the stub's endpoints (tests/stubs/stub_engine.py). Faults, through the
environment:
  FAKE_KILL_CORE_AFTER=N   SIGKILL the EngineCore after N requests to /v1 (the server answers on)
  FAKE_STATUS=S            answer every /v1 request with HTTP S and FAKE_MESSAGE in vLLM's error body
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import time

from aiohttp import web

from tests.stubs.openai_stub import StubSettings
from tests.stubs.stub_engine import build


def engine_core() -> None:
    time.sleep(3600)


def faults(core: multiprocessing.process.BaseProcess) -> web.middleware:
    kill_after = int(os.environ.get("FAKE_KILL_CORE_AFTER", "0"))
    status = int(os.environ.get("FAKE_STATUS", "0"))
    message = os.environ.get("FAKE_MESSAGE", "")
    served = {"n": 0}

    @web.middleware
    async def middleware(request: web.Request, handler):
        if not request.path.startswith("/v1"):
            return await handler(request)
        served["n"] += 1
        if kill_after and served["n"] == kill_after and core.pid is not None:
            print(f"fake: killing EngineCore pid {core.pid}", flush=True)
            os.kill(core.pid, signal.SIGKILL)
        if status:
            error = {"message": message, "type": "BadRequestError", "param": None, "code": status}
            return web.json_response({"error": error}, status=status)
        return await handler(request)

    return middleware


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", default="")
    args, _unknown = parser.parse_known_args()
    core = multiprocessing.get_context("spawn").Process(target=engine_core, daemon=True)
    core.start()
    app = build(StubSettings(tokens=int(os.environ.get("STUB_TOKENS", "8"))), args.api_key)
    app.middlewares.insert(0, faults(core))
    web.run_app(app, host=args.host, port=args.port, print=None, loop=asyncio.new_event_loop())


if __name__ == "__main__":
    main()
