"""Inside the vLLM under test: the compatibility checks of `make compat` (experiments/vllm_compat.py).

Run as `python -m experiments.vllm_compat_driver CASES.json OUT.json` by the interpreter of the
environment that holds that vLLM (a side environment with another release, or the project's own);
only this process imports vLLM. It writes one JSON object:
- `patch_points`: every row of lever_plugins/patch_points.py, imported or read from source
  (lever_plugins/patch_check.py: each row says which);
- `argv`: every `vllm serve` argv of CASES parsed by this vLLM's own parser for the command it
  names (`vllm serve`: the CLI's serve subparser; `-m <module>`: make_arg_parser, as the module's
  main builds it), then validated as the server validates it, the engine arguments built from it
  (AsyncEngineArgs.from_cli_args) and a suffix speculative config constructed; the warnings it logs;
- `flags`: whether its parser takes each of a few flags the grid does not write (FLAG_PROBES);
- `log_texts`: which file of this vLLM writes each engine-log text the harness reads;
- `runners`: per lever argv, the VllmConfig this vLLM builds from it (create_engine_config on a
  local model's config.json, and on a MoE-shaped one): the model runner it picks, async scheduling
  and K, or the error that refuses the launch. No GPU here: the CPU platform stands in, with Triton
  reported present (as on a GPU host), and async scheduling is read before the CPU platform's own
  override (it turns async off on CPU); the runner choice and the async rule are in
  vllm/config/vllm.py, the same code on every platform.
Where importing fails, the runner rule is read from vllm/config/vllm.py's source instead.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import io
import json
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lever_plugins.patch_check import check_all, module_files, where_text

# Where make_arg_parser lives: 0.33 (common), 0.32 (launchers), 0.26 and older (openai).
CLI_ARGS_MODULES = (
    "vllm.entrypoints.common.cli_args",
    "vllm.entrypoints.launchers.cli_args",
    "vllm.entrypoints.openai.cli_args",
)
V2_ENV = "VLLM_USE_V2_MODEL_RUNNER"
# The stand-in models' context: the lever's argv asks for the study's 16384, which SmolLM2 lacks.
STAND_IN_LEN = "2048"
# A MoE model for the runner rule (0.26 kept MoE models on the V1 runner by default): config only.
MOE_CONFIG = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
}


def first_line(exc: BaseException) -> str:
    """The line of an error that says what is wrong (pydantic's 'Value error, ...' where there is one)."""
    text = str(exc)
    for line in text.splitlines():
        if "Value error," in line:
            return re.sub(r"\s*\[type=.*$", "", line.split("Value error,", 1)[1]).strip()
    return f"{type(exc).__name__}: {(text.splitlines() or [''])[0][:300]}"


class Captured(logging.Handler):
    """vLLM's warnings while a case is parsed (its logger does not propagate to the root)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().splitlines()[0][:300])


@contextlib.contextmanager
def captured() -> Iterator[list[str]]:
    """Warnings vLLM logs or raises (DeprecationWarning included) inside the block, deduplicated."""
    handler = Captured()
    logger = logging.getLogger("vllm")
    logger.addHandler(handler)
    found: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            yield found
    finally:
        logger.removeHandler(handler)
        messages = handler.messages + [str(w.message).splitlines()[0][:300] for w in raised]
        found.extend(dict.fromkeys(messages))


def use_cpu_platform() -> str:
    """The CPU platform where vLLM finds none (a GPU wheel without a GPU): its parser needs one."""
    import vllm.platforms as platforms

    if platforms.current_platform.is_unspecified():
        from vllm.platforms.cpu import CpuPlatform

        platforms._current_platform = CpuPlatform()
        platforms.current_platform = platforms._current_platform
        return "CpuPlatform (none detected: set here)"
    return type(platforms.current_platform).__name__


def cli_args_module() -> Any:
    for name in CLI_ARGS_MODULES:
        with contextlib.suppress(ImportError):
            return importlib.import_module(name)
    raise ImportError(f"no make_arg_parser in {', '.join(CLI_ARGS_MODULES)}")


class Parsers:
    """This vLLM's own parsers: `vllm serve`'s subparser and make_arg_parser's (a `-m` module's main)."""

    def __init__(self) -> None:
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        self.cli_args = cli_args_module()
        self.module = self.cli_args.__name__
        self.api_server = self.cli_args.make_arg_parser(FlexibleArgumentParser())
        self.top = FlexibleArgumentParser()
        subparsers = self.top.add_subparsers(required=False, dest="subparser")
        from vllm.entrypoints.cli import serve

        (self.serve_cmd,) = serve.cmd_init()
        self.serve_cmd.subparser_init(subparsers)

    def parse(self, command: list[str], args: list[str]) -> Any:
        """The namespace `command args` would run with, validated as the server validates it."""
        if command[-1:] == ["serve"]:
            ns = self.top.parse_args(["serve", *args])
            self.serve_cmd.validate(ns)
        else:
            ns = self.api_server.parse_args(args)
            self.cli_args.validate_parsed_serve_args(ns)
        return ns


def module_note(command: list[str]) -> str | None:
    """For `python -m <module>`: whether the module exists here and whether it says it is deprecated."""
    if "-m" not in command:
        return None
    module = command[command.index("-m") + 1]
    files = module_files(module)
    if not files:
        return f"no module {module}"
    text = files[0].read_text(encoding="utf-8", errors="replace")
    return f"{module} is deprecated here (it warns when run)" if "deprecated" in text else None


def spec_k(ns: Any) -> int | None:
    """K of a suffix speculative config as this vLLM constructs it (its default where unset)."""
    spec = getattr(ns, "speculative_config", None)
    if not isinstance(spec, dict) or spec.get("method") != "suffix":
        return None
    from vllm.config import SpeculativeConfig

    return int(SpeculativeConfig(**spec).num_speculative_tokens)


def parse_case(parsers: Parsers, case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": case["id"], "ok": False, "error": None, "k": None}
    out["note"] = module_note(case["command"])
    with captured() as found:
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                ns = parsers.parse(case["command"], case["args"])
            from vllm.engine.arg_utils import AsyncEngineArgs

            AsyncEngineArgs.from_cli_args(ns)
            out["k"] = spec_k(ns)
            out["ok"] = True
        except SystemExit:
            out["error"] = (stderr.getvalue().strip().splitlines() or ["argparse exited"])[-1]
        except Exception as exc:  # the error is the result
            out["error"] = first_line(exc)
    out["warnings"] = found
    return out


def probe_flag(parsers: Parsers, flag: list[str]) -> dict[str, Any]:
    """Whether this vLLM's parser takes `flag` (a flag the grid does not write, asked about in issue 46)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), captured():
            parsers.api_server.parse_args(["--model", "m", *flag])
    except SystemExit:
        return {"flag": flag[0], "accepted": False, "error": stderr.getvalue().strip().splitlines()[-1:]}
    return {"flag": flag[0], "accepted": True, "error": None}


def with_model(args: list[str], model: str, extra: list[str]) -> list[str]:
    """`args` on the stand-in `model`: its path for --model, its length for --max-model-len,
    no --tokenizer; `extra` appended."""
    replace = {
        "--model": ["--model", model],
        "--max-model-len": ["--max-model-len", STAND_IN_LEN],
        "--tokenizer": [],
    }
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in replace:
            out += replace[arg]
            skip = True
        else:
            out.append(arg)
    assert "--model" in out, args[:4]
    return out + extra


def set_environ(values: dict[str, str | None]) -> None:
    """Set each variable; None unsets it."""
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextlib.contextmanager
def environment(values: dict[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    set_environ(values)
    try:
        yield
    finally:
        set_environ(saved)


def engine_config(parsers: Parsers, args: list[str]) -> dict[str, Any]:
    """Runner, async scheduling (as decided before the platform's own override) and K of `args`."""
    import vllm.platforms as platforms
    from vllm.engine.arg_utils import AsyncEngineArgs

    platform = platforms.current_platform
    seen: dict[str, Any] = {}
    original = platform.check_and_update_config

    def snapshot(config: Any) -> Any:
        seen["async"] = config.scheduler_config.async_scheduling
        return original(config)

    platform.check_and_update_config = snapshot
    try:
        config = AsyncEngineArgs.from_cli_args(parsers.api_server.parse_args(args)).create_engine_config()
    except Exception as exc:  # a refused launch is the result
        return {"refused": first_line(exc)}
    finally:
        platform.check_and_update_config = original
    spec = config.speculative_config
    return {
        "runner": "V2" if config.use_v2_model_runner else "V1",
        "async_scheduling": seen.get("async"),
        "k": spec.num_speculative_tokens if spec is not None else None,
        "refused": None,
    }


def variants(args: list[str]) -> list[tuple[str, list[str], dict[str, str | None]]]:
    """As the grid launches it; Model Runner V2 forced; async scheduling asked for."""
    out = [("as launched", args, {}), ("VLLM_USE_V2_MODEL_RUNNER=1", args, {V2_ENV: "1"})]
    if "--async-scheduling" not in args:
        asked = [a for a in args if a != "--no-async-scheduling"] + ["--async-scheduling"]
        out.append(("--async-scheduling", asked, {}))
    return out


def runners(parsers: Parsers, levers: list[dict[str, Any]], dense_model: str | None) -> list[dict[str, Any]]:
    """Each lever's launch through create_engine_config, on a dense model and a MoE-shaped one."""
    import vllm.config.vllm as config_vllm

    # GPU hosts have Triton; the rule reads this module's flag (Model Runner V2 needs Triton).
    config_vllm.HAS_TRITON = True
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        moe = Path(tmp) / "moe"
        moe.mkdir()
        (moe / "config.json").write_text(json.dumps(MOE_CONFIG))
        models = [("moe", str(moe), ["--skip-tokenizer-init", "--load-format", "dummy"])]
        if dense_model:
            models.insert(0, ("dense", dense_model, []))
        for lever in levers:
            for kind, path, extra in models:
                base = with_model(lever["args"], path, extra)
                for variant, args, env in variants(base) if kind == "dense" else variants(base)[:1]:
                    with environment({V2_ENV: None, **env}), captured():
                        result = engine_config(parsers, args)
                    out.append({"lever": lever["lever"], "model": kind, "variant": variant, **result})
    return out


def runners_from_source() -> list[dict[str, Any]]:
    """Where vLLM does not import: is suffix among Model Runner V2's unsupported features, by source."""
    (path,) = module_files("vllm.config.vllm") or [None]
    text = path.read_text(encoding="utf-8") if path else ""
    start = text.find("def _get_v2_model_runner_unsupported_features")
    body = text[start : text.find("\n    def ", start + 10)] if start >= 0 else ""
    rule = "suffix falls back to the V1 runner" if '"suffix"' in body else "no suffix rule found"
    return [{"source_rule": rule}]


def main(cases_path: str, out_path: str) -> None:
    cases = json.loads(Path(cases_path).read_text())
    import torch
    import vllm

    report: dict[str, Any] = {"vllm": vllm.__version__, "python": sys.executable, "torch": torch.__version__}
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        report["arctic_inference"] = importlib.metadata.version("arctic-inference")
    report["patch_points"] = [r.as_dict() for r in check_all()]
    report["log_texts"] = where_text("vllm", cases.get("log_texts", []))
    try:
        with captured():
            report["platform"] = use_cpu_platform()
            parsers = Parsers()
    except Exception as exc:  # no parser: say why, read the runner rule from source
        report["parser_error"] = first_line(exc)
        report["argv"], report["runners"] = [], runners_from_source()
    else:
        report["parser"] = parsers.module
        report["argv"] = [parse_case(parsers, case) for case in cases["argv"]]
        report["flags"] = [probe_flag(parsers, flag) for flag in cases.get("flag_probes", [])]
        report["runners"] = runners(parsers, cases["levers"], cases.get("dense_model"))
    Path(out_path).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
