"""The floor under any asyncio client: the same load as drive_ours, with nothing done per read.

One keep-alive connection per stream on uvloop, as our client; each socket read
only checks whether the chunked response has ended (and arms the same 1 ms
hold as our client's default `read_batch_ms`, so that one poll finds a step's
chunks together): no timestamp, no buffer, no parsing, no record. What this
costs per chunk is the kernel's read and the event loop's dispatch into Python,
which every client written on an asyncio loop pays however little it does with
the bytes. `client_overhead.py` prints
it beside ours and `vllm bench serve`: if the floor alone is above the target
ratio, the target cannot be met by trimming our Python.
"""

from __future__ import annotations

import asyncio
import json
import time

from benchmarks.drive_ours import driver_args
from workers.load.client import run_sync
from workers.load.http1 import ReadBatcher

END = b"0\r\n\r\n"


class Floor(asyncio.Protocol):
    def __init__(self, batcher: ReadBatcher | None) -> None:
        self.batcher = batcher
        self.done: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.reads = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reads += 1
        if self.batcher is not None and not self.batcher.armed:
            self.batcher.arm()
        if data.endswith(END) and self.done is not None and not self.done.done():
            self.done.set_result(None)


async def drive(host: str, port: int, n: int, concurrency: int, max_tokens: int, hold_ms: float) -> int:
    loop = asyncio.get_running_loop()
    batcher = ReadBatcher(hold_ms / 1e3) if hold_ms > 0 else None
    body = json.dumps({"model": "stub", "prompt": "p", "max_tokens": max_tokens, "stream": True}).encode()
    head = f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    request = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    todo = iter(range(n))
    reads = 0

    async def worker() -> None:
        nonlocal reads
        _, proto = await loop.create_connection(lambda: Floor(batcher), host, port)
        assert proto.transport is not None
        for _ in todo:
            proto.done = loop.create_future()
            proto.transport.write(request)
            await proto.done
        reads += proto.reads
        proto.transport.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return reads


def main() -> None:
    args = driver_args()
    host, port = args.url.removeprefix("http://").split(":")
    start_s = time.perf_counter()
    reads = run_sync(drive(host, int(port), args.n, args.concurrency, args.max_tokens, args.read_batch_ms))
    print(json.dumps({"reads": reads, "wall_s": time.perf_counter() - start_s}))


if __name__ == "__main__":
    main()
