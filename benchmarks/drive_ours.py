"""Drive the stand-in server with this project's client; print what it did as JSON."""

from __future__ import annotations

import argparse
import json
import time

from vocab.schema import LoadSpec
from workers.load.client import Target, run_load, run_sync
from workers.load.prompts import Prompt


def driver_args() -> argparse.Namespace:
    """The load both bench drivers (this one and drive_floor) are told to drive."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--read-batch-ms", type=float, default=LoadSpec.read_batch_ms)
    return parser.parse_args()


def main() -> None:
    args = driver_args()
    prompts = [Prompt(str(i), prompt=f"prompt {i}") for i in range(args.n)]
    load = LoadSpec(
        concurrency=args.concurrency,
        max_tokens=args.max_tokens,
        num_prompts=args.n,
        read_batch_ms=args.read_batch_ms,
    )
    start_s = time.perf_counter()
    records = run_sync(run_load(Target(args.url, "", "stub", "completions"), prompts, load, "bench"))
    wall_s = time.perf_counter() - start_s
    print(
        json.dumps(
            {
                "tokens": sum(r.completion_tokens or 0 for r in records),
                "chunks": sum(r.n_chunks for r in records),
                "errors": sum(r.error_type is not None for r in records),
                "wall_s": wall_s,
            }
        )
    )


if __name__ == "__main__":
    main()
