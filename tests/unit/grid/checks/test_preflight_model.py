"""Issue 45 item 4: preflight reads the model's config.json and folder before any launch.

engine.max_model_len above the model's context (16384 against SmolLM2's 8192), a folder holding only
config.json, and a relative path such as ../../../../etc all passed preflight and launched engines
that failed. Dummy-weight models (`--load-format dummy`, conf/model/*shaped*) need no weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.checks.preflight import input_problems
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config

TINY = "SmolLM2-135M-Instruct"
SHAPED = "Llama-3.1-8B-shaped"


def model_folder(models: Path, name: str, config: dict, weights: str | None = "model.safetensors") -> Path:
    folder = models / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    if weights is not None:
        (folder / weights).write_bytes(b"")
    return folder


def problems(tmp_path: Path, *extra: str) -> list[str]:
    cfg = compose_config(["experiment=smoke", "grid.anchor.enabled=false", *extra])
    cells = expand(to_config(cfg))
    return input_problems(cells, tmp_path / "models", tmp_path / "cache", use_gpus=False)


def test_max_model_len_above_the_models_context_is_refused(tmp_path):
    model_folder(tmp_path / "models", TINY, {"max_position_embeddings": 8192})
    [line] = problems(tmp_path, "engine.max_model_len=16384")
    assert line.startswith("model 'tiny': engine.max_model_len 16,384 exceeds its context of 8,192 tokens")
    assert "max_position_embeddings" in line and "engine.max_model_len=8192" in line
    assert problems(tmp_path, "engine.max_model_len=8192") == []


@pytest.mark.parametrize(
    "config",
    [
        {"n_positions": 1024},
        {"max_seq_len": 1024},
        {"seq_length": 1024},
        {"text_config": {"max_position_embeddings": 1024}},
        {"max_position_embeddings": 1024, "vision_config": {"max_position_embeddings": 99999}},
    ],
)
def test_the_usual_alternatives_and_a_multimodal_text_config_are_read(tmp_path, config):
    model_folder(tmp_path / "models", TINY, config)
    [line] = problems(tmp_path, "engine.max_model_len=2048")
    assert "exceeds its context of 1,024 tokens" in line


def test_a_config_without_a_context_or_with_rope_scaling_is_not_refused(tmp_path):
    model_folder(tmp_path / "models", TINY, {"hidden_size": 8})
    assert problems(tmp_path, "engine.max_model_len=16384") == []


def test_rope_scaling_extends_the_context(tmp_path):
    config = {"max_position_embeddings": 8192, "rope_scaling": {"type": "yarn", "factor": 4.0}}
    model_folder(tmp_path / "models", TINY, config)
    assert problems(tmp_path, "engine.max_model_len=16384") == []


def test_a_folder_with_only_config_json_has_no_weights(tmp_path):
    folder = model_folder(tmp_path / "models", TINY, {"max_position_embeddings": 8192}, weights=None)
    [line] = problems(tmp_path)
    assert line.startswith(f"model 'tiny' has no weights in {folder}")
    assert "*.safetensors" in line


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\xff\xfe"])
def test_a_config_json_that_is_not_a_json_object_is_refused(tmp_path, text):
    # The adversarial pass (2026-12-07): it passed preflight and launched an engine that failed.
    folder = model_folder(tmp_path / "models", TINY, {})
    (folder / "config.json").write_bytes(text.encode("latin-1"))
    [line] = problems(tmp_path)
    assert line.startswith(f"model 'tiny': its config.json at {folder / 'config.json'} ")
    assert "so the engine would not start" in line


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin", "model.gguf", "model.pt"])
def test_each_weights_format_counts(tmp_path, weights):
    model_folder(tmp_path / "models", TINY, {}, weights=weights)
    assert problems(tmp_path) == []


def test_a_dummy_weights_model_needs_none(tmp_path):
    model_folder(tmp_path / "models", SHAPED, {"max_position_embeddings": 131072}, weights=None)
    model_folder(tmp_path / "models", TINY, {})  # its tokenizer stands in
    assert problems(tmp_path, "grid.models=[llama31_8b_shaped]") == []
    # The load format given any way vLLM takes it, from the engine's own arguments too.
    shaped = ["grid.models=[llama31_8b_shaped]", "+model.llama31_8b_shaped.extra_args=[]"]
    assert problems(tmp_path, *shaped, "engine.extra_args=['--load-format=dummy']") == []
    [line] = problems(tmp_path, *shaped)
    assert "has no weights" in line


@pytest.mark.parametrize("path", ["../../../../etc", "./models/x", "weights/of/mine"])
def test_a_relative_model_path_is_refused(tmp_path, path):
    [line] = problems(tmp_path, f"+model.tiny.path={path}")
    assert line.startswith(f"model 'tiny' path '{path}' is relative"), line
    assert "{models_dir}" in line and "absolute" in line


def test_a_hub_id_is_not_a_relative_path(tmp_path):
    assert problems(tmp_path, "+model.tiny.path=org/name") != []  # not cached: the hub-id line
    assert "relative" not in problems(tmp_path, "+model.tiny.path=org/name")[0]
