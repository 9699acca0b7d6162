"""The client's own Python work per chunk, without sockets: recorded-shape reads replayed through it.

`make bench`'s client_overhead measures whole processes against a stand-in
server; on a shared machine its spread (10-20%) hides changes of a few percent.
This replays vLLM-shaped responses (one socket read per HTTP chunk, one token
per event, as at paced arrival) through the hot path (StreamProtocol.data_received)
and the decoding after the stream (parse_response, decode_response, the
record), with the harness's modules loaded as in a real run, and reports CPU
time (process_time) per chunk, the minimum over repeats. Kernel time, uvloop
and the event loop are not in it. `--before DIR` runs the same in another tree
(`git archive <commit> | tar -x -C DIR`), alternating, so both see the same
machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time


def stream_reads(n_tokens: int) -> list[bytes]:
    """The socket reads of one streamed completion, shaped like the stand-in's (and vLLM's) chunks."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    events = [
        {
            "id": "cmpl-stub",
            "object": "text_completion",
            "created": 0,
            "model": "stub",
            "choices": [
                {"index": 0, "text": "tok ", "logprobs": None, "finish_reason": None, "token_ids": [1000 + i]}
            ],
        }
        for i in range(n_tokens)
    ]
    usage = {"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": n_tokens}}
    pieces = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in [*events, usage]] + [b"data: [DONE]\n\n"]
    return [head] + [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]


def replay(n_requests: int, n_tokens: int, repeats: int) -> dict:
    sys.path.insert(0, os.getcwd())
    import benchmarks.drive_ours  # noqa: F401  (the modules a real client process holds)
    from workers.load.client import RequestRecord, _fill_from_stream
    from workers.load.http1 import Reads, StreamProtocol, parse_response

    reads_in = stream_reads(n_tokens)

    class Done:
        def done(self) -> bool:
            return False

        def set_result(self, _: object) -> None:
            pass

    buffer = bytearray()

    def one(i: int) -> RequestRecord:
        protocol = StreamProtocol()
        protocol.reads, protocol.done = Reads(buffer), Done()  # type: ignore[assignment]
        for blob in reads_in:
            protocol.data_received(blob)
        record = RequestRecord(i, str(i), "bench", 0)
        _fill_from_stream(record, parse_response(protocol.reads))
        assert record.n_chunks == n_tokens and record.error_type is None, record.error_message
        return record

    us: list[float] = []
    full_before = gc.get_stats()[2]["collections"]
    for _ in range(repeats):
        start = time.process_time()
        records = [one(i) for i in range(n_requests)]  # kept, as run_load keeps them
        us.append((time.process_time() - start) / (n_requests * n_tokens) * 1e6)
        del records
    return {"us_per_chunk": us, "full_collections": gc.get_stats()[2]["collections"] - full_before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=320)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="alternations of this tree and --before")
    parser.add_argument("--before", metavar="DIR")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(replay(args.requests, args.tokens, args.repeats)))
        return
    trees = {"after": os.getcwd(), **({"before": args.before} if args.before else {})}
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--requests", str(args.requests),
            "--tokens", str(args.tokens), "--repeats", str(args.repeats)]  # fmt: skip
    best: dict[str, list[float]] = {name: [] for name in trees}
    shape = f"{args.requests} x {args.tokens} one-token chunks"
    print(f"client Python work per chunk, replayed: {shape}, CPU time, best of {args.repeats} per run")
    for _ in range(args.rounds):
        for name, tree in trees.items():
            child = subprocess.run(argv, cwd=tree, capture_output=True, check=True, text=True)
            out = json.loads(child.stdout)
            best[name].append(min(out["us_per_chunk"]))
            runs = " ".join(f"{x:.2f}" for x in out["us_per_chunk"])
            print(f"{name:>7}: {runs} µs/chunk, full collections {out['full_collections']}", flush=True)
    for name, values in best.items():
        print(f"{name:>7}: best {min(values):.2f} µs/chunk (rounds {', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
