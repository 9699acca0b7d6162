"""An engine start that fails because vLLM refused what it was given is not retried (issue 45 item
6): the model missing or incomplete, an argument vLLM does not know, a configuration it rejects. The
logs under start_logs/ are vLLM 0.32 (CPU build) failing each way on 2026-12-06, paths shortened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from store.read import attempts
from vocab.errors import EngineError
from workers.engine.process import Engine
from workers.engine.refusal import read_refusal, refusal
from workers.runner import run_group

LOGS = Path(__file__).parent / "start_logs"

REFUSED = {
    "missing": "the model /models/no_such_model is not a folder on this node",
    "no_weights": "the model folder /models/no_weights holds no weights (no .safetensors, .bin or .gguf",
    "only_config": "the model folder has no usable tokenizer (tokenizer.json missing)",
    "unknown_arg": "vLLM refused its command line (unrecognized arguments: --no-such-flag); fix engine.",
    "too_long": "vLLM refused its configuration (ModelConfig: User-specified max_model_len (16384) is "
    "greater than the derived max_model_len (max_position_embeddings=8192.0",
    "bad_spec": "vLLM refused its configuration (SpeculativeConfig: method: Input should be 'ngram', ",
    # scripts/adversarial.py, 2026-12-07: a garbage model.safetensors was retried on a second engine.
    "damaged_weights": "a weights file of the model is damaged (vLLM could not read its safetensors "
    "header: MemoryError)",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_stored_refusal_is_named_from_the_log(name):
    assert (read_refusal(LOGS / f"{name}.log") or "").startswith(REFUSED[name])


def test_a_weights_file_under_8_bytes_is_named_damaged():
    tail = (
        '  File "/venv/vllm/transformers_utils/utils.py", line 112, in parse_safetensors_file_metadata\n'
        '    length_of_metadata = struct.unpack("<Q", f.read(8))[0]\n'
        "struct.error: unpack requires a buffer of 8 bytes\n"
    )
    assert refusal(tail) == (
        "a weights file of the model is damaged (vLLM could not read its safetensors header: "
        "struct.error: unpack requires a buffer of 8 bytes)"
    )


def test_a_start_that_died_or_stopped_without_vllms_refusal_is_not_named():
    # The same start up to the moment it failed: nothing a retry could not get past.
    lines = (LOGS / "no_weights.log").read_text().splitlines()
    assert refusal("\n".join(lines[:90])) is None
    assert refusal("Killed\n") is None
    # Hub unreachable: a network failure, which a retry may get past.
    offline = (
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
        "them in the cached files. Check your internet connection or see how to run the library in "
        "offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'."
    )
    assert refusal(offline) is None
    assert read_refusal(LOGS / "no-such.log") is None


def test_transformers_missing_file_line_names_the_file():
    line = "OSError: /m/x does not appear to have a file named config.json. Checkout 'https://hf.co/m/x'"
    assert refusal(line) == "the model folder /m/x is incomplete (no config.json)"


def failing_start(log: str):
    """Engine.start as vLLM's failed start: its log written, then the harness's EngineError."""

    def start(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text((LOGS / log).read_text())
        raise EngineError(
            f"engine exited with code 1 before it was ready; see {self.log_path}. Log tail:\n..."
        )

    return start


def test_a_start_vllm_refused_fails_its_cells_not_retryable_with_the_reason(
    fake_group, tmp_path, monkeypatch
):
    group, ctx = fake_group()
    monkeypatch.setattr(Engine, "start", failing_start("no_weights.log"))
    (outcome,) = run_group(group, ctx)
    assert outcome.status == "failed" and outcome.retryable is False
    assert outcome.error.startswith(
        "engine exited with code 1 before it was ready: the model folder /models/no_weights holds no weights"
    ), outcome.error
    (failed,) = attempts(tmp_path / "store")[0]
    assert json.loads((failed.folder / "manifest.json").read_text())["retryable"] is False


def test_a_start_that_timed_out_names_the_refusal_without_the_hint_to_wait_longer(fake_group, monkeypatch):
    group, ctx = fake_group()

    def hung(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text((LOGS / "too_long.log").read_text())
        raise EngineError(
            "engine not ready after 600 s (raise engine.start_timeout_s if it is only slow); see x"
        )

    monkeypatch.setattr(Engine, "start", hung)
    (outcome,) = run_group(group, ctx)
    assert outcome.retryable is False
    assert outcome.error.startswith(
        "engine not ready after 600 s: vLLM refused its configuration (ModelConfig: "
    )


def test_a_start_that_failed_otherwise_is_still_retried(fake_group, monkeypatch):
    group, ctx = fake_group()
    monkeypatch.setattr(Engine, "start", failing_start("no_weights.log"))
    monkeypatch.setattr("workers.attempts.read_refusal", lambda path: None)
    (outcome,) = run_group(group, ctx)
    assert outcome.status == "failed" and outcome.retryable is True
    assert outcome.error.startswith("engine exited with code 1 before it was ready")
