"""Client CPU per output token: this project's client vs `vllm bench serve`, same stub, same run.

Both clients drive the stand-in OpenAI server (tests/stubs/stub_engine.py,
its own process) at concurrency 32, 256 tokens per request, with 1 and 4
tokens per SSE chunk (4 is what speculative decoding produces). Each client
runs twice, with N_SMALL and N_LARGE requests, in a subprocess whose CPU time
(user + system, from getrusage of reaped children) is measured; the marginal
CPU per token, (cpu_large - cpu_small) / (tokens_large - tokens_small),
removes start-up and import costs. Printed: µs per token and per chunk, the
share of one core the client would need at 33,500 output tok/s (the study's
highest figure), and ours / vllm's ratio. "ours, no batch" reads every socket as
soon as it is ready (load.read_batch_ms=0), to show what read batching saves.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks import drive_vllm_bench
from grid.schema import LoadSpec
from workers.engine import free_port

TARGET_TOK_PER_S = 33_500
CONCURRENCY = 32
MAX_TOKENS = 256
N_SMALL, N_LARGE = 64, 2048
TOKENIZER = os.environ.get("BENCH_TOKENIZER", ".cache/models/SmolLM2-135M-Instruct")


@dataclass
class Run:
    tokens: float
    cpu_s: float
    wall_s: float


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], parse: Callable[[str], dict]) -> Run:
    before = children_cpu_s()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return Run(**parse(out), cpu_s=children_cpu_s() - before)


def ours(url: str, n: int, read_batch_ms: float = LoadSpec.read_batch_ms) -> Run:
    def parse(out: str) -> dict:
        data = json.loads(out.strip().splitlines()[-1])
        assert data["errors"] == 0, data
        return {"tokens": data["tokens"], "wall_s": data["wall_s"]}

    argv = [
        sys.executable,
        "-m",
        "benchmarks.drive_ours",
        "--url",
        url,
        "--n",
        str(n),
        "--concurrency",
        str(CONCURRENCY),
        "--max-tokens",
        str(MAX_TOKENS),
        "--read-batch-ms",
        str(read_batch_ms),
    ]
    return timed(argv, parse)


def vllm_bench(url: str, n: int) -> Run:
    def parse(out: str) -> dict:
        data = drive_vllm_bench.result(out)
        assert data["completed"] == n, data
        return {"tokens": data["tokens"], "wall_s": data["wall_s"]}

    extra = ["--model", "stub", "--dataset-name", "random", "--random-input-len", "32",
             "--random-output-len", str(MAX_TOKENS)]  # fmt: skip
    return timed(drive_vllm_bench.command(url, TOKENIZER, n, CONCURRENCY, extra), parse)


def start_stub(tokens_per_chunk: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "STUB_TOKENS": str(MAX_TOKENS), "STUB_TOKENS_PER_CHUNK": str(tokens_per_chunk)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.stubs.stub_engine", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("stub server did not start")


def marginal(client: Callable[[str, int], Run], url: str) -> dict:
    small, large = client(url, N_SMALL), client(url, N_LARGE)
    cpu_per_tok_us = (large.cpu_s - small.cpu_s) / (large.tokens - small.tokens) * 1e6
    return {
        "cpu_us_per_token": cpu_per_tok_us,
        "tok_per_s": large.tokens / large.wall_s,
        "total_cpu_s": large.cpu_s,
    }


def main() -> None:
    print(
        f"client CPU, concurrency {CONCURRENCY}, {MAX_TOKENS} tokens/request, marginal over "
        f"{N_SMALL} -> {N_LARGE} requests; core share at {TARGET_TOK_PER_S:,} tok/s"
    )
    print(
        f"{'tok/chunk':>9} {'client':>14} {'µs/token':>9} {'µs/chunk':>9} {'core@33.5k':>10} {'tok/s':>8} "
        f"{'CPU s, whole process':>21}"
    )
    for tokens_per_chunk in (1, 4):
        proc, url = start_stub(tokens_per_chunk)
        try:
            results = {
                "ours": marginal(ours, url),
                "ours, no batch": marginal(functools.partial(ours, read_batch_ms=0.0), url),
                "vllm bench": marginal(vllm_bench, url),
            }
        finally:
            proc.kill()
            proc.wait()
        for name, r in results.items():
            share = r["cpu_us_per_token"] * TARGET_TOK_PER_S / 1e6
            print(
                f"{tokens_per_chunk:>9} {name:>14} {r['cpu_us_per_token']:>9.2f} "
                f"{r['cpu_us_per_token'] * tokens_per_chunk:>9.2f} {share:>10.1%} {r['tok_per_s']:>8,.0f}"
            )
        ratio = results["ours"]["cpu_us_per_token"] / results["vllm bench"]["cpu_us_per_token"]
        whole = results["ours"]["total_cpu_s"] / results["vllm bench"]["total_cpu_s"]
        print(
            f"{tokens_per_chunk:>9} {'ours/vllm':>14} {ratio:>9.3f}  (target <= 0.25); "
            f"whole-process CPU of the {N_LARGE}-request run: {whole:.3f}"
        )


if __name__ == "__main__":
    main()
