"""One pass of the plugin levers on the CPU engine: van, suffix K8, kpad K4/K8, dynk; SmolLM2.

Engines are built the harness's way (compose -> expand -> serve_argv/serve_env), started
one at a time, and each driven with code_complete then chat_bench through the harness
client (greedy, concurrency 8, max_tokens 64). Per engine and corpus it prints output
tok/s (first send to last completion), acceptance rate and draft tokens per draft from
the server's counter deltas, and the plugins' own counters from the engine log.
One run each on a shared 2-core machine: differences of 10-20% are noise here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from vocab.cells import EngineSpec
from vocab.paths import project_path
from vocab.schema import Config
from workers.engine.args import serve_argv, serve_env, served_name
from workers.engine.process import Engine, new_endpoint
from workers.load.client import Target, run_load, run_sync
from workers.load.prompts import load_corpus
from workers.runner import engine_base_env
from workers.signals import metrics
from workers.signals.counters import scrape
from workers.signals.dynk_log import last_stats

NUM_PROMPTS = int(os.environ.get("LEVERS_CPU_PROMPTS", "24"))
OVERRIDES = [
    "experiment=smoke",
    "grid.levers=[van,suffix,bestkpad,dynk]",
    "+grid.ks.suffix=[8]",
    "+grid.ks.bestkpad=[4,8]",
    "grid.corpora=[code_complete,chat_bench]",
    "load.concurrency=8",
    "load.max_tokens=64",
    f"load.num_prompts={NUM_PROMPTS}",
]
HEADER = f"{'lever':<9} {'K':>3} {'corpus':<14} {'out tok/s':>9} {'accept':>7} {'tok/draft':>9}  plugin"


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def drive(engine: Engine, spec: EngineSpec, config: Config, corpus_path: str, endpoint: str) -> str:
    """One corpus through the running engine; its row of the table."""
    prompts = load_corpus(project_path(config.paths.data_dir) / corpus_path)[: config.load.num_prompts]
    target = Target(engine.endpoint.base_url, engine.endpoint.api_key, served_name(spec), endpoint)
    run_sync(run_load(target, prompts[: config.load.concurrency], config.load, "warmup"))
    before = scrape(target.base_url, target.api_key)
    records = run_sync(run_load(target, prompts, config.load, "measured"))
    delta = scrape(target.base_url, target.api_key).minus(before)
    errors = [r.error_message for r in records if r.error_type]
    assert not errors, errors[:3]
    tok_s = metrics.whole_run_output_tok_per_s(records)
    accept = metrics.acceptance_rate(delta.spec_accepted_tokens, delta.spec_draft_tokens)
    per_draft = metrics.draft_tokens_per_draft(delta.spec_draft_tokens, delta.spec_drafts)
    return f"{fmt(tok_s, '9.2f')} {fmt(accept, '7.3f')} {fmt(per_draft, '9.2f')}"


def plugin_note(log_text: str) -> str:
    for name in ("dynk", "kpad"):
        if (stats := last_stats(log_text, name)) is not None:
            per_k = " ".join(f"K{k}={n}" for k, n in stats.steps_by_k.items())
            return f"{name}: steps={stats.steps} {per_k} padded={stats.values.get('padded_tokens', 0):.0f}"
    return ""


def main() -> None:
    config = to_config(compose_config(OVERRIDES))
    models_dir, cache_dir = project_path(config.paths.models_dir), project_path(config.paths.cache_dir)
    print(HEADER)
    with tempfile.TemporaryDirectory() as tmp:
        for group in group_by_engine(expand(config)):
            spec, endpoint = group.spec, new_endpoint()
            log_path = Path(tmp) / f"{spec.lever.name}_{spec.k}.log"
            engine = Engine(
                serve_argv(spec, endpoint, models_dir),
                serve_env(spec, engine_base_env(), cache_dir),
                endpoint,
                log_path,
                spec.engine.start_timeout_s,
            )
            with engine:
                for cell in group.cells:
                    row = drive(engine, spec, config, cell.corpus.path, cell.corpus.endpoint)
                    label = f"{spec.lever.name:<9} {spec.k or '-':>3} {cell.corpus.name:<14}"
                    print(f"{label} {row}  {plugin_note(log_path.read_text(errors='replace'))}", flush=True)


if __name__ == "__main__":
    main()
