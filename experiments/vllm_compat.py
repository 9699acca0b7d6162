"""`make compat`: the plugins, the grid's argv and the tune's serve.sh against another vLLM (issue 46).

    python -m experiments.vllm_compat [--vllm PYTHON]... [--out DIR]

Builds the cases here (no vLLM import: the harness's own code gives every argv), then runs
experiments/vllm_compat_driver.py, which imports vLLM, under the project's own interpreter (its
installed vLLM, the 0.32 CPU build) and under each `--vllm` interpreter: a side environment made by
scripts/compat_venv.sh, another release installed without its dependencies over the project's own
packages (torch 2.13+cpu, not the torch the release pins; where a module does not import there, the
driver reads its source instead and says so). The cases:
- every launch argv the grid builds (workers/engine/args.py) for every conf/experiment, as configured,
  with its levers sharing launches (grid.engine_reuse=shared) and on each engine (cpu, gpu);
- every serve.sh line the tune writes (experiments/tune_procedure.py serve_command) for each lever
  and K it can deploy, on the CPU and the GPU engine, and the serve.sh files committed under docs/;
- per lever, its GPU launch argv, from which the driver derives the model runner and async scheduling.
Writes OUT/cases.json, OUT/vllm-<version>.json per environment and OUT/compat.md (the tables
docs/compat.md quotes), prints the tables, and exits 1 when a patch point or an argv fails under any
vLLM checked (2 when a driver did not run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from experiments.decide import LeverConfig
from experiments.tune_procedure import Tune, compose_tune, serve_command
from grid.config.catalog import load_spec
from grid.config.compose import CONF_DIR, compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from lever_plugins.patch_points import BY_KEY
from vocab.errors import GridError
from vocab.paths import PROJECT_ROOT, project_path
from vocab.schema import LeverSpec, ModelSpec
from workers.engine import log as engine_log
from workers.engine.args import Endpoint, launch_argv

ENDPOINT = Endpoint("127.0.0.1", 8000, "compat-key")
ENGINES = ("cpu", "gpu")
DEFAULT_OUT = "results/compat"
DRIVER = "experiments.vllm_compat_driver"
DRIVER_TIMEOUT_S = 1800


@dataclass(frozen=True)
class LogLine:
    """A line of the engine log workers/engine/log.py reads: its pattern's name there, the text vLLM's
    source writes it from, and the line as logged (which the pattern must match)."""

    pattern: str
    text: str
    sample: str


# What the harness reads of a launch's effective configuration (store columns engine_*). Where vLLM
# reworded a line, each wording is a row: a pattern needs one of its texts in a release's source.
LOG_LINES = (
    LogLine(
        "VERSION",
        "Initializing a V1 LLM engine (v%s)",
        "Initializing a V1 LLM engine (v0.33.0) with config: m",
    ),
    LogLine(
        "RUNNER_V1",
        "using the V1 model runner",
        "Model Runner V2 does not yet support speculative method 'suffix'; using the V1 model runner",
    ),
    LogLine("RUNNER_V2", "Using V2 Model Runner", "Using V2 Model Runner"),
    LogLine(
        "ASYNC_DISABLED",
        "Async scheduling is disabled because the V1 model runner",
        "Async scheduling is disabled because the V1 model runner does not support it with suffix-based "
        "speculative decoding.",
    ),
    LogLine(
        "ASYNC_DISABLED",
        "Async scheduling not supported with %s-based",
        "Async scheduling not supported with suffix-based speculative decoding and will be disabled.",
    ),
    LogLine("NVFP4_KERNEL", "Using %s for NVFP4 GEMM", "Using MarlinNvFp4LinearKernel for NVFP4 GEMM"),
)


def log_pattern_matches(line: LogLine) -> bool:
    """Whether workers/engine/log.py's pattern reads the line as vLLM logs it."""
    return bool(getattr(engine_log, line.pattern).search(line.sample))


# Flags the grid does not write, asked about (issue 46): the flat K flag the docs once named, and the
# short one releases have; the grid sets K inside --speculative-config, which every release takes.
FLAG_PROBES = (("--num-speculative-tokens", "8"), ("--spec-tokens", "8"))


@dataclass(frozen=True)
class ArgvCase:
    """One argv: where it comes from, the engine command it names and the arguments vLLM parses."""

    source: str
    command: tuple[str, ...]
    args: tuple[str, ...]

    def as_dict(self, case_id: int) -> dict[str, Any]:
        return {"id": case_id, "source": self.source, "command": list(self.command), "args": list(self.args)}


def split_command(argv: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the engine command, its arguments): the command ends before the first `--` option."""
    argv = list(argv)
    start = next((i for i, arg in enumerate(argv) if arg.startswith("--")), len(argv))
    return tuple(argv[:start]), tuple(argv[start:])


def serve_sh_argv(text: str) -> list[str]:
    """The `vllm serve` argv of a serve.sh: comments and line continuations gone, `env NAME=value` dropped."""
    tokens = shlex.split(text.replace("\\\n", " "), comments=True)
    if tokens[:1] == ["env"]:
        tokens = tokens[1:]
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
        tokens = tokens[1:]
    return tokens


def experiment_names() -> list[str]:
    return sorted(path.stem for path in (CONF_DIR / "experiment").glob("*.yaml"))


def grid_cases(names: Iterable[str]) -> list[ArgvCase]:
    """Every launch argv of each experiment: as configured, with shared launches, on each engine."""
    out = []
    for name in names:
        for extra in ([], ["grid.engine_reuse=shared"], *([f"engine={e}"] for e in ENGINES)):
            overrides = [f"experiment={name}", *extra]
            config = to_config(compose_config(overrides))
            models_dir = project_path(config.paths.models_dir)
            for group in group_by_engine(expand(config)):
                command, args = split_command(launch_argv(group, ENDPOINT, models_dir))
                out.append(ArgvCase(f"grid {' '.join(overrides)}", command, args))
    return out


def tune_levers(tune: Tune) -> list[LeverConfig]:
    """What the tune can deploy: van, suffix at its K, bestkpad at each K it sweeps, w4a4, dynk."""
    cfg = tune.cfg
    dynk = tune.catalog.load(LeverSpec, "dynk")
    ks = {"van": [0], "suffix": [cfg.suffix_k], "bestkpad": sorted({cfg.kpad_k, *cfg.sweep_ks})}
    ks |= {"w4a4": [0], "dynk": [dynk.ks[0]]}
    return [tune.uniform(lever, k) for lever, lever_ks in ks.items() for k in lever_ks]


def tune_cases(model: str = "tiny") -> list[ArgvCase]:
    """The serve.sh line the tune writes for each configuration it can deploy, on each engine."""
    out = []
    for engine in ENGINES:
        cfg = compose_tune([f"model={model}", f'grid_overrides=["engine={engine}"]'])
        tune = Tune(cfg, load_spec(ModelSpec, model), "compat", Console(quiet=True))
        for final in tune_levers(tune):
            command, args = split_command(serve_sh_argv(serve_command(tune, final)))
            out.append(ArgvCase(f"tune serve.sh engine={engine} {final.label}", command, args))
    return out


def committed_serve_sh(root: Path = PROJECT_ROOT) -> list[ArgvCase]:
    """The serve.sh files a tune wrote that are kept under docs/ (worked examples, records)."""
    out = []
    for path in sorted((root / "docs").rglob("serve.sh")):
        command, args = split_command(serve_sh_argv(path.read_text()))
        out.append(ArgvCase(f"docs {path.relative_to(root)}", command, args))
    return out


def unique(cases: Iterable[ArgvCase]) -> list[ArgvCase]:
    """One case per distinct (command, args); its source names the first and how many share it."""
    seen: dict[tuple, list[ArgvCase]] = {}
    for case in cases:
        seen.setdefault((case.command, case.args), []).append(case)
    return [
        ArgvCase(group[0].source + (f" (+{len(group) - 1} same)" if len(group) > 1 else ""), *key)
        for key, group in seen.items()
    ]


def lever_argvs() -> list[dict[str, Any]]:
    """Per lever, the GPU launch argv of the smoke grid (tiny; a model with an NVFP4 variant for w4a4),
    for the runner derivation."""
    out = []
    for path in sorted((CONF_DIR / "lever").glob("*.yaml")):
        for model in ("tiny", "llama31_8b"):
            overrides = [
                "experiment=smoke",
                "engine=gpu",
                f"grid.levers=[{path.stem}]",
                f"grid.models=[{model}]",
            ]
            config = to_config(compose_config(overrides))
            if groups := group_by_engine(expand(config)):
                break
        _, args = split_command(launch_argv(groups[0], ENDPOINT, project_path(config.paths.models_dir)))
        out.append({"lever": path.stem, "k": groups[0].spec.k, "args": list(args)})
    return out


def dense_model() -> str | None:
    """tiny's converted weights folder, whose config.json the driver builds engine configs from."""
    config = to_config(compose_config(["experiment=smoke"]))
    path = project_path(config.paths.models_dir) / "SmolLM2-135M-Instruct"
    return str(path) if (path / "config.json").is_file() else None


def build_cases() -> dict[str, Any]:
    cases = unique([*grid_cases(experiment_names()), *tune_cases(), *committed_serve_sh()])
    return {
        "argv": [case.as_dict(i) for i, case in enumerate(cases)],
        "levers": lever_argvs(),
        "dense_model": dense_model(),
        "log_texts": sorted({line.text for line in LOG_LINES}),
        "flag_probes": [list(flag) for flag in FLAG_PROBES],
    }


def run_driver(python: str, cases: Path, out_dir: Path, index: int) -> dict[str, Any]:
    """The driver's report under `python`; {"error": ...} when it did not write one."""
    out, log = out_dir / f"driver-{index}.json", out_dir / f"driver-{index}.log"
    out.unlink(missing_ok=True)
    with log.open("w") as log_file:
        proc = subprocess.run(
            [python, "-m", DRIVER, str(cases), str(out)],
            cwd=PROJECT_ROOT,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            timeout=DRIVER_TIMEOUT_S,
            check=False,
        )
    if proc.returncode != 0 or not out.is_file():
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        return {"python": python, "error": f"exit {proc.returncode}: {tail[0][:300]} (log: {log})"}
    report = json.loads(out.read_text())
    named = out_dir / f"vllm-{report['vllm']}.json"
    out.replace(named)
    log.replace(named.with_suffix(".log"))
    return report


# ---------------------------------------------------------------- the tables

LEVER_ORDER = ("van", "van_noasync", "suffix", "bestkpad", "dynk", "w4a4")


def version_key(report: dict[str, Any]) -> tuple[int, ...]:
    """Columns in release order: (0, 26, 0) before (0, 32, 0); a driver that did not run last."""
    return tuple(int(part) for part in re.findall(r"\d+", report.get("vllm", "999"))[:3])


def version_of(report: dict[str, Any]) -> str:
    return f"vLLM {report.get('vllm', '?')}"


def point_cell(result: dict[str, Any] | None) -> str:
    """ok (how it was checked), or what is wrong."""
    if result is None:
        return "-"
    if not result["ok"]:
        return f"**fails**: {result['problem']}"
    if result.get("import_error"):
        return f"ok (source; import failed: {result['import_error']})"
    return f"ok ({result['how']})"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    cells = [[str(cell).replace("|", "\\|").replace("\n", " ") for cell in row] for row in rows]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in cells),
    ]


def patch_point_lines(reports: list[dict[str, Any]]) -> list[str]:
    by_version = [{r["key"]: r for r in report.get("patch_points", [])} for report in reports]
    rows = []
    for key, point in BY_KEY.items():
        newest = next((v[key] for v in reversed(by_version) if key in v), None)
        rows.append(
            [
                f"`{key}`",
                ", ".join(point.users),
                *(point_cell(v.get(key)) for v in by_version),
                newest["found"] if newest else "-",
            ]
        )
    header = ["patch point", "relied on by", *map(version_of, reports), "shape found (last column's vLLM)"]
    return table(header, rows)


def case_group(source: str) -> str:
    """Rows of the argv table: per experiment, per engine of the tune's serve.sh, per committed file."""
    words = source.split(" (+")[0].split()
    if words[0] == "grid":
        return f"grid {words[1]}"
    return " ".join(words[:3]) if words[0] == "tune" else " ".join(words[:2])


def argv_lines(cases: dict[str, Any], reports: list[dict[str, Any]]) -> list[str]:
    groups: dict[str, list[int]] = {}
    for case in cases["argv"]:
        groups.setdefault(case_group(case["source"]), []).append(case["id"])
    results = [{r["id"]: r for r in report.get("argv", [])} for report in reports]
    rows = []
    for group, ids in groups.items():
        cells = []
        for by_id in results:
            if not by_id:
                cells.append("not parsed")
                continue
            failed = [i for i in ids if not by_id[i]["ok"]]
            cells.append(
                f"{len(ids) - len(failed)}/{len(ids)} parse" + (f", **{len(failed)} fail**" if failed else "")
            )
        rows.append([group, *cells])
    lines = table(
        ["argv from", *(f"{version_of(r)} ({r.get('parser', r.get('parser_error', '-'))})" for r in reports)],
        rows,
    )
    sources = {case["id"]: case["source"] for case in cases["argv"]}
    for report, by_id in zip(reports, results, strict=True):
        failures = [r for r in by_id.values() if not r["ok"]]
        for result in failures[:20]:
            lines.append(f"- {version_of(report)}, {sources[result['id']]}: {result['error']}")
        warned: dict[str, int] = {}
        for result in by_id.values():
            for message in result["warnings"] + ([result["note"]] if result.get("note") else []):
                warned[message] = warned.get(message, 0) + 1
        if warned:
            lines += ["", f"{version_of(report)} says, parsing them (how many argv):"]
            lines += [f"- {message} ({n})" for message, n in sorted(warned.items(), key=lambda kv: -kv[1])]
    return lines


def runner_cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if result.get("refused"):
        return f"**refused**: {result['refused']}"
    asynchronous = {True: "async on", False: "async off", None: "async ?"}[result.get("async_scheduling")]
    k = f", K={result['k']}" if result.get("k") else ""
    return f"{result['runner']}, {asynchronous}{k}"


def runner_key(row: dict[str, Any]) -> tuple:
    lever = row["lever"]
    return (LEVER_ORDER.index(lever) if lever in LEVER_ORDER else len(LEVER_ORDER), lever)


def runner_lines(reports: list[dict[str, Any]]) -> list[str]:
    keyed = [
        {(r["lever"], r["model"], r["variant"]): r for r in report.get("runners", []) if "lever" in r}
        for report in reports
    ]
    keys = sorted(
        {key for by_key in keyed for key in by_key},
        key=lambda k: (runner_key({"lever": k[0]}), k[1], k[2] != "as launched", k[2]),
    )
    rows = [
        [f"`{lever}`", model, variant, *(runner_cell(v.get((lever, model, variant))) for v in keyed)]
        for lever, model, variant in keys
    ]
    lines = table(["lever", "model", "launch", *map(version_of, reports)], rows)
    for report in reports:
        for row in report.get("runners", []):
            if "source_rule" in row:
                lines.append(f"- {version_of(report)}: runners read from source: {row['source_rule']}")
    return lines


def log_line_lines(reports: list[dict[str, Any]]) -> list[str]:
    rows = [
        [
            f"`{line.pattern}`",
            f"`{line.text}`",
            "yes" if log_pattern_matches(line) else "**no**",
            *((r.get("log_texts", {}).get(line.text) or "absent") for r in reports),
        ]
        for line in LOG_LINES
    ]
    header = ["workers/engine/log.py", "vLLM writes", "pattern reads it", *map(version_of, reports)]
    return table(header, rows)


def log_line_failures(report: dict[str, Any]) -> list[str]:
    """Patterns none of whose texts is in this release's source (the harness would read None)."""
    found = report.get("log_texts", {})
    patterns = {line.pattern for line in LOG_LINES}
    return sorted(
        p for p in patterns if not any(found.get(line.text) for line in LOG_LINES if line.pattern == p)
    )


def flag_lines(reports: list[dict[str, Any]]) -> list[str]:
    by_version = [{r["flag"]: r for r in report.get("flags", [])} for report in reports]
    rows = [
        [
            f"`{flag}`",
            *(
                ("takes it" if v[flag]["accepted"] else "unknown flag") if flag in v else "-"
                for v in by_version
            ),
        ]
        for flag, _ in FLAG_PROBES
    ]
    return table(["flag (the grid does not write it)", *map(version_of, reports)], rows)


def git_commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() or "-"


def header_lines(reports: list[dict[str, Any]]) -> list[str]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"`make compat` at {now}, commit {git_commit()}, on this machine (no GPU).", ""]
    for report in reports:
        if "error" in report:
            lines.append(f"- {report['python']}: **the driver did not run**: {report['error']}")
            continue
        lines.append(
            f"- {version_of(report)} ({report['python']}): torch {report.get('torch')}, arctic-inference "
            f"{report.get('arctic_inference')}, platform {report.get('platform', '-')}"
        )
    return lines


def render(cases: dict[str, Any], reports: list[dict[str, Any]]) -> str:
    ran = [r for r in reports if "error" not in r]
    lines = ["# vLLM compatibility: checked here", "", *header_lines(reports), ""]
    lines += ["## Patch points (lever_plugins/patch_points.py)", "", *patch_point_lines(ran), ""]
    lines += ["## Every argv the grid builds and every serve.sh the tune writes, through vLLM's parser", ""]
    lines += [*argv_lines(cases, ran), "", *flag_lines(ran), ""]
    lines += ["## Engine log lines the harness reads (workers/engine/log.py), in vLLM's source", ""]
    lines += [*log_line_lines(ran), ""]
    lines += ["## Model runner, async scheduling and K per lever (create_engine_config, Triton present)", ""]
    lines += [*runner_lines(ran), ""]
    return "\n".join(lines)


def status(reports: list[dict[str, Any]]) -> int:
    """2: a driver did not run; 1: a patch point, argv, log line or lever's own launch fails; else 0."""
    if any("error" in r for r in reports):
        return 2
    if not all(log_pattern_matches(line) for line in LOG_LINES):
        return 1
    for report in reports:
        if log_line_failures(report):
            return 1
        if any(not r["ok"] for r in report.get("patch_points", []) + report.get("argv", [])):
            return 1
        if "parser_error" in report:
            return 1
        if any(r.get("refused") for r in report.get("runners", []) if r.get("variant") == "as launched"):
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.vllm_compat", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--vllm",
        action="append",
        default=[],
        metavar="PYTHON",
        help="interpreter of an environment with another vLLM (scripts/compat_venv.sh makes one); repeatable",
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"folder for the cases, reports and tables ({DEFAULT_OUT})"
    )
    args = parser.parse_args(argv)
    out_dir = project_path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        cases = build_cases()
    except GridError as exc:
        print(f"compat: {exc}", file=sys.stderr)
        return 2
    cases_path = out_dir / "cases.json"
    cases_path.write_text(json.dumps(cases, indent=1))
    pythons = [sys.executable, *args.vllm]
    reports = sorted((run_driver(p, cases_path, out_dir, i) for i, p in enumerate(pythons)), key=version_key)
    text = render(cases, reports)
    (out_dir / "compat.md").write_text(text)
    print(text)
    return status(reports)


if __name__ == "__main__":
    raise SystemExit(main())
