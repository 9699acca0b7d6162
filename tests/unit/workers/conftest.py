"""The fake engine the workers' tests run cells on (fake_vllm.py, shaped as vLLM's process tree)."""

from __future__ import annotations

import json

import pytest

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.context import RunContext


@pytest.fixture
def fake_group(tmp_path):
    """One van cell of the smoke grid on fake_vllm, its inputs in tmp_path; returns (group, ctx)."""
    models = tmp_path / "models" / "SmolLM2-135M-Instruct"
    models.mkdir(parents=True)
    (models / "config.json").write_text("{}")
    corpora = tmp_path / "data" / "corpora"
    corpora.mkdir(parents=True)
    rows = [{"id": f"p{i}", "prompt": f"prompt {i}"} for i in range(12)]
    (corpora / "code_complete.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def make(*env: str, extra: tuple[str, ...] = ()):
        overrides = [
            "experiment=smoke",
            "grid.levers=[van]",
            "grid.corpora=[code_complete]",
            "grid.anchor.enabled=false",
            f"paths.store={tmp_path / 'store'}",
            f"paths.models_dir={tmp_path / 'models'}",
            f"paths.data_dir={tmp_path / 'data'}",
            "engine.command=['{python}',-m,tests.unit.workers.fake_vllm]",
            "engine.env={}",
            *[f"+engine.env.{e}" for e in env],
            "engine.start_timeout_s=60",
            "engine.stop_timeout_s=5",
            "load.num_prompts=6",
            "load.warmup_requests=1",
            "load.concurrency=2",
            "load.max_tokens=8",
            *extra,
        ]
        group = group_by_engine(expand(to_config(compose_config(overrides))))[0]
        ctx = RunContext("s1", tmp_path / "store", tmp_path / "cache", tmp_path / "models", tmp_path / "data")
        return group, ctx

    return make
