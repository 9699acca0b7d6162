"""`make compat`'s harness side: the argv cases, the engine-log lines, the tables and the exit status.

No vLLM: the driver's reports are stand-ins here (the driver itself: test_vllm_compat_driver.py; the
patch points against the installed vLLM: tests/unit/lever_plugins/test_patch_points.py).
"""

from __future__ import annotations

import json

import pytest

from experiments.vllm_compat import (
    LOG_LINES,
    case_group,
    committed_serve_sh,
    grid_cases,
    log_line_failures,
    log_pattern_matches,
    render,
    serve_sh_argv,
    split_command,
    status,
    tune_cases,
    unique,
    version_key,
)
from lever_plugins.patch_points import POINTS
from vocab.paths import project_path

SERVE_SH = """#!/usr/bin/env bash
# suffix K=8: confirmed
env DO_NOT_TRACK=1 LEVER_KPAD=1 \\
  vllm serve --model /m/tiny --api-key ${VLLM_API_KEY} \\
  --speculative-config '{"method": "suffix", "num_speculative_tokens": 8}'
"""


def test_a_serve_sh_line_is_the_argv_vllm_gets():
    argv = serve_sh_argv(SERVE_SH)
    command, args = split_command(argv)
    assert command == ("vllm", "serve")
    assert args[:4] == ("--model", "/m/tiny", "--api-key", "${VLLM_API_KEY}")
    assert json.loads(args[args.index("--speculative-config") + 1]) == {
        "method": "suffix",
        "num_speculative_tokens": 8,
    }


def test_a_module_command_keeps_its_dash_m():
    assert split_command(["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]) == (
        ("/v/bin/python", "-m", "vllm.entrypoints.openai.api_server"),
        ("--model", "m"),
    )


def test_the_grid_cases_cover_each_engine_and_shared_launches():
    cases = grid_cases(["smoke"])
    sources = {case.source for case in cases}
    assert sources == {
        "grid experiment=smoke",
        "grid experiment=smoke grid.engine_reuse=shared",
        "grid experiment=smoke engine=cpu",
        "grid experiment=smoke engine=gpu",
    }
    assert {case.command[-1] for case in cases} == {"serve", "vllm.entrypoints.openai.api_server"}
    assert all(case.args[0] == "--model" for case in cases)
    shared = [c for c in cases if "shared" in c.source]
    assert all("--worker-extension-cls" in c.args for c in shared)  # van too, on a shared launch
    assert len(unique(cases)) < len(cases)  # `experiment=smoke engine=cpu` is smoke as configured


def test_the_tune_writes_a_line_per_deployable_configuration_on_each_engine():
    cases = tune_cases()
    labels = {case.source for case in cases}
    for engine in ("cpu", "gpu"):
        assert {
            f"tune serve.sh engine={engine} {label}" for label in ("van", "suffix K=8", "dynk K=12")
        } <= labels
        assert f"tune serve.sh engine={engine} bestkpad K=4" in labels
    gpu_kpad = next(c for c in cases if c.source == "tune serve.sh engine=gpu bestkpad K=8")
    spec = json.loads(gpu_kpad.args[gpu_kpad.args.index("--speculative-config") + 1])
    assert spec == {"method": "suffix", "num_speculative_tokens": 8}  # the shell quoting round-trips


def test_the_committed_serve_sh_files_are_cases():
    cases = committed_serve_sh(project_path("."))
    assert cases and all(c.source.startswith("docs docs/") and c.args[0] == "--model" for c in cases)
    assert case_group(cases[0].source) == cases[0].source


def test_every_engine_log_line_the_harness_reads_matches_its_pattern():
    # vLLM 0.26-0.33 log "Using V2 Model Runner"; a pattern that reads only some other wording leaves
    # engine_model_runner empty on every V2 launch.
    assert [line.sample for line in LOG_LINES if not log_pattern_matches(line)] == []


def point(key: str, ok: bool = True, how: str = "import") -> dict:
    return {
        "key": key,
        "ok": ok,
        "how": how,
        "found": "x",
        "problem": None if ok else "gone",
        "import_error": None,
    }


def parsed(ok: bool = True, warnings: tuple[str, ...] = ()) -> dict:
    error = None if ok else "unrecognized arguments: --x"
    return {"id": 0, "ok": ok, "error": error, "k": 8, "note": None, "warnings": list(warnings)}


def runner(lever: str, variant: str = "as launched", **result) -> dict:
    return {"lever": lever, "model": "dense", "variant": variant, **result}


def report(version: str, **changes) -> dict:
    base = {
        "vllm": version,
        "python": f"/envs/{version}/bin/python",
        "torch": "2.13.0+cpu",
        "platform": "CpuPlatform",
        "parser": "vllm.entrypoints.common.cli_args",
        "patch_points": [point(p.key) for p in POINTS],
        "argv": [parsed(warnings=("deprecated --model",))],
        "log_texts": {line.text: "vllm/x.py" for line in LOG_LINES},
        "flags": [
            {"flag": "--num-speculative-tokens", "accepted": False, "error": ["unrecognized arguments"]},
            {"flag": "--spec-tokens", "accepted": True, "error": None},
        ],
        "runners": [
            runner("suffix", runner="V1", async_scheduling=False, k=8),
            runner("suffix", "VLLM_USE_V2_MODEL_RUNNER=1", refused="no suffix on V2"),
        ],
    }
    return base | changes


CASES = {"argv": [{"id": 0, "source": "grid experiment=smoke", "command": ["vllm", "serve"], "args": []}]}


def test_a_release_that_holds_everything_passes_and_the_tables_say_how():
    reports = [report("0.32.0"), report("0.33.0")]
    assert status(reports) == 0
    text = render(CASES, reports)
    assert "| `proposer.propose` | kpad, dynk, switch | ok (import) | ok (import) |" in text
    assert "| grid experiment=smoke | 1/1 parse | 1/1 parse |" in text
    assert "**refused**: no suffix on V2" in text  # a forced variant refused: information, not a failure
    assert "- deprecated --model (1)" in text


@pytest.mark.parametrize(
    "change",
    [
        {"patch_points": [point("proposer.propose", ok=False)]},
        {"argv": [parsed(ok=False)]},
        {"runners": [runner("van", refused="bad")]},
        {"log_texts": {line.text: None for line in LOG_LINES if line.pattern == "RUNNER_V2"}},
    ],
)
def test_a_release_that_lacks_something_fails(change):
    broken = report("0.33.0", **change)
    assert status([report("0.32.0"), broken]) == 1
    assert "**" in render(CASES, [broken])


def test_a_log_pattern_needs_one_of_its_wordings():
    # 0.26 writes the suffix line one way, 0.33 the other: either keeps ASYNC_DISABLED readable.
    texts = {line.text: "vllm/config/vllm.py" for line in LOG_LINES}
    texts["Async scheduling not supported with %s-based"] = None
    assert log_line_failures({"log_texts": texts}) == []
    texts["Async scheduling is disabled because the V1 model runner"] = None
    assert log_line_failures({"log_texts": texts}) == ["ASYNC_DISABLED"]


def test_columns_come_in_release_order_and_say_what_each_parser_takes():
    failed = {"python": "/envs/x/bin/python", "error": "exit 1"}
    ordered = sorted([report("0.33.0"), failed, report("0.26.0")], key=version_key)
    assert [r.get("vllm") for r in ordered] == ["0.26.0", "0.33.0", None]
    text = render(CASES, ordered)
    assert "| `--num-speculative-tokens` | unknown flag | unknown flag |" in text
    assert "**the driver did not run**: exit 1" in text


def test_a_driver_that_did_not_run_is_exit_2():
    assert status([report("0.32.0"), {"python": "/envs/x/bin/python", "error": "exit 1"}]) == 2
