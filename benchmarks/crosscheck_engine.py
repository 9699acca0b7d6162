"""Cross-check on the real CPU engine: the harness vs `vllm bench serve`, same prompts and load.

One `vllm serve` (van, SmolLM2, CPU build) is started once; then the harness's
client and vllm's own benchmark each send the same HumanEval prompts (raw
completions, ignore_eos, fixed max_tokens) at the same concurrency, in pairs
whose order alternates (H V, V H, ...) so drift on a shared machine falls on
both alike. Both figures use vllm bench's definition: completed output tokens /
(first send to last completion). Prints each pair's ratio, then the median
ratio and its range: the noise of a pair shows as the range.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks import drive_vllm_bench
from grid.compose import compose_config
from grid.expand import expand, to_config
from grid.plan import group_by_engine
from vocab.paths import project_path
from vocab.schema import LoadSpec
from workers import metrics
from workers.engine import Engine, new_endpoint
from workers.engine_args import model_path, serve_argv, serve_env, served_name, tokenizer_path
from workers.load import Target, run_load, run_sync
from workers.prompts import Prompt, load_corpus
from workers.runner import engine_base_env

ROUNDS = int(os.environ.get("CROSSCHECK_ROUNDS", "4"))
# The CPU default; on GPUs set CROSSCHECK_OVERRIDES (space-separated), e.g. scripts/gpu/validate.sh.
OVERRIDES = os.environ.get(
    "CROSSCHECK_OVERRIDES",
    "experiment=smoke grid.levers=[van] grid.corpora=[code_complete] load.num_prompts=24 "
    "load.max_tokens=64 load.concurrency=8 load.ignore_eos=true load.token_ids=false",
).split()


def harness_run(target: Target, prompts: list[Prompt], load: LoadSpec) -> float:
    records = run_sync(run_load(target, prompts, load, "crosscheck"))
    assert all(r.error_type is None for r in records), [r.error_message for r in records if r.error_type]
    return metrics.whole_run_output_tok_per_s(records)


def bench_run(
    base_url: str, api_key: str, model: str, dataset: Path, tokenizer: str, load: LoadSpec, n: int
) -> float:
    extra = ["--model", model, "--dataset-name", "custom", "--dataset-path", str(dataset),
             "--custom-output-len", str(load.max_tokens), "--skip-chat-template", "--disable-shuffle",
             "--temperature", "0"]  # fmt: skip
    argv = drive_vllm_bench.command(base_url, tokenizer, n, load.concurrency, extra)
    out = subprocess.run(argv, capture_output=True, text=True, check=True,
                         env={**os.environ, "OPENAI_API_KEY": api_key}).stdout  # fmt: skip
    assert drive_vllm_bench.result(out)["completed"] == n
    # vllm bench's own figure: its 'Output token throughput (tok/s)' line.
    line = next(x for x in out.splitlines() if x.startswith("Output token throughput"))
    return float(line.split(":")[1])


def main() -> None:
    config = to_config(compose_config(OVERRIDES))
    group = group_by_engine(expand(config))[0]
    spec, load = group.spec, config.load
    prompts = load_corpus(project_path(config.paths.data_dir) / group.cells[0].corpus.path)[
        : load.num_prompts
    ]
    endpoint = new_endpoint()
    models_dir = project_path(config.paths.models_dir)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "prompts.jsonl"
        dataset.write_text("".join(json.dumps({"prompt": p.prompt}) + "\n" for p in prompts))
        engine = Engine(
            serve_argv(spec, endpoint, models_dir),
            serve_env(spec, engine_base_env(), project_path(config.paths.cache_dir)),
            endpoint,
            Path(tmp) / "engine.log",
            spec.engine.start_timeout_s,
        )
        with engine:
            print(
                f"engine ready in {engine.ready_s:.0f} s; {len(prompts)} prompts, "
                f"max_tokens {load.max_tokens}, concurrency {load.concurrency}"
            )
            target = Target(endpoint.base_url, endpoint.api_key, served_name(spec), "completions")
            harness_run(target, prompts[: load.concurrency], load)  # warm-up, not counted
            ratios = []
            for i in range(ROUNDS):
                run_ours = lambda: harness_run(target, prompts, load)  # noqa: E731
                run_theirs = lambda: bench_run(  # noqa: E731
                    endpoint.base_url,
                    endpoint.api_key,
                    served_name(spec),
                    dataset,
                    tokenizer_path(spec, models_dir) or model_path(spec, models_dir),
                    load,
                    len(prompts),
                )
                if i % 2 == 0:
                    ours, theirs = run_ours(), run_theirs()
                else:
                    theirs, ours = run_theirs(), run_ours()
                ratios.append(ours / theirs)
                print(
                    f"pair {i + 1} ({'H V' if i % 2 == 0 else 'V H'}): harness {ours:.2f} tok/s, "
                    f"vllm bench serve {theirs:.2f} tok/s, ratio {ratios[-1]:.3f}"
                )
    print(
        f"harness / vllm bench serve, median of {ROUNDS} pairs: {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f}; target within 2%)"
    )


if __name__ == "__main__":
    main()
