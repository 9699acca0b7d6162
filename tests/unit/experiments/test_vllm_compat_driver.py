"""The compat driver's own helpers, without vLLM (the driver runs inside `make compat`'s environments)."""

from __future__ import annotations

import subprocess
import sys

from experiments.vllm_compat_driver import STAND_IN_LEN, V2_ENV, first_line, variants, with_model
from vocab.paths import project_path

GPU_ARGV = ["--model", "/m/tiny", "--tokenizer", "/m/tok", "--max-model-len", "16384", "--enforce-eager"]


def test_the_stand_in_model_replaces_the_model_its_tokenizer_and_length():
    args = with_model(GPU_ARGV, "/tmp/moe", ["--load-format", "dummy"])
    assert args == [
        "--model",
        "/tmp/moe",
        "--max-model-len",
        STAND_IN_LEN,
        "--enforce-eager",
        "--load-format",
        "dummy",
    ]


def test_each_lever_is_derived_as_launched_with_v2_forced_and_with_async_asked():
    names = [(name, env) for name, _, env in variants(["--model", "m", "--no-async-scheduling"])]
    assert names == [
        ("as launched", {}),
        ("VLLM_USE_V2_MODEL_RUNNER=1", {V2_ENV: "1"}),
        ("--async-scheduling", {}),
    ]
    asked = variants(["--model", "m", "--no-async-scheduling"])[2][1]
    assert asked == ["--model", "m", "--async-scheduling"]
    assert len(variants(["--model", "m", "--async-scheduling"])) == 2  # van asks for it already


def test_a_refusal_reads_as_its_value_error_line():
    pydantic_like = ValueError(
        "1 validation error for VllmConfig\n  Value error, Model Runner V2 does not yet support: speculative "
        "method 'suffix' [type=value_error, input_value=ArgsKwargs((), {})]\n    For further information"
    )
    assert first_line(pydantic_like) == "Model Runner V2 does not yet support: speculative method 'suffix'"
    assert first_line(KeyError("x")) == "KeyError: 'x'"


def test_the_driver_imports_no_vllm_until_it_runs():
    # Only main() imports vLLM: the harness and these tests can import the module.
    check = "import sys, experiments.vllm_compat_driver; assert 'vllm' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], cwd=project_path("."), check=True, timeout=60)
