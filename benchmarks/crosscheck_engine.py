"""Cross-check on a real engine: the harness vs `vllm bench serve`, same prompts and load, N launches.

One `vllm serve` (van, SmolLM2, CPU build by default) is started per launch;
then the harness's client and vllm's own benchmark each send the same
HumanEval prompts (raw completions, ignore_eos, fixed max_tokens) at the same
concurrency, in pairs whose order alternates (H V, V H, ...) so drift on a
shared machine falls on both alike. Both figures use vllm bench's definition:
completed output tokens / (first send to last completion). Prints each pair's
ratio, then the median ratio and its range: the noise of a pair shows as the range.

Issue 27: the ratio departed on some launches only, so the whole is repeated
over CROSSCHECK_LAUNCHES engine launches, and a watcher process
(benchmarks/proc_sample.py) records, per run, where the engine's processes
(API server, EngineCore, workers) and both clients ran and how long they
waited for a core: CPU affinity, the cores each used, run-queue wait
(schedstat), involuntary context switches, host steal, and each client's CPU
share inside its own timed window. The end prints a per-launch table and the
launch-level spread of both clients' means and of their ratio; with $OUT (or
CROSSCHECK_JSON) set, every figure goes to crosscheck.json, rewritten after
each launch so a run cut short keeps what it measured.

Environment: CROSSCHECK_ROUNDS (pairs per launch, 4), CROSSCHECK_LAUNCHES (1),
CROSSCHECK_OVERRIDES (config overrides, space-separated; the CPU default below),
CROSSCHECK_SAMPLE_S (the watcher's interval, 0.2 s), CROSSCHECK_PIN (auto: the
engine's tree on some cores, this process and vllm bench, its child, on the
others, as workers/signals/host.py places a cell; off: no pinning), CROSSCHECK_BUDGET_S (start
no launch that would, at the longest launch so far, end past this many seconds
from the start; unset: no limit).
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import drive_vllm_bench, proc_sample
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from vocab.paths import project_path
from vocab.schema import LoadSpec
from workers.engine.args import model_path, serve_argv, serve_env, served_name, tokenizer_path
from workers.engine.process import Engine, new_endpoint
from workers.load.client import RequestRecord, Target, run_load, run_sync
from workers.load.prompts import Prompt, load_corpus
from workers.runner import engine_base_env, engine_processes
from workers.signals import metrics
from workers.signals.host import NODE_CPUS, apply_pins

ROUNDS = int(os.environ.get("CROSSCHECK_ROUNDS", "4"))
LAUNCHES = int(os.environ.get("CROSSCHECK_LAUNCHES", "1"))
SAMPLE_S = float(os.environ.get("CROSSCHECK_SAMPLE_S", "0.2"))
BUDGET_S = float(os.environ["CROSSCHECK_BUDGET_S"]) if os.environ.get("CROSSCHECK_BUDGET_S") else None
# As a grid cell places them (load.pin_cpus): auto puts the engine's tree and both clients on
# disjoint cores where the node has enough (workers/signals/host.py); off leaves every process anywhere.
PIN = os.environ.get("CROSSCHECK_PIN", "auto")
# The CPU default; on GPUs set CROSSCHECK_OVERRIDES (space-separated), e.g. scripts/gpu/validate.sh.
OVERRIDES = os.environ.get(
    "CROSSCHECK_OVERRIDES",
    "experiment=smoke grid.levers=[van] grid.corpora=[code_complete] load.num_prompts=24 "
    "load.max_tokens=64 load.concurrency=8 load.ignore_eos=true load.token_ids=false",
).split()
# Runs vllm bench in a process that stamps the end of the benchmark on this machine's monotonic
# clock (what perf_counter reads in every process here), so its timed window is known to us.
BENCH_WRAPPER = (
    "import runpy, sys, time; sys.argv[0] = 'drive_vllm_bench'; "
    "runpy.run_module('benchmarks.drive_vllm_bench', run_name='__main__'); "
    "print('BENCH_END:', time.perf_counter(), flush=True)"
)
ROLES_SHOWN = ("api_server", "engine_core", "engine_worker", "harness", "bench")


@dataclass
class Run:
    """One client's run: its figure, its timed window and what the watcher saw."""

    client: str  # "harness" or "bench"
    tok_s: float
    t0: float
    t1: float
    mean_itl_ms: float | None
    process_cpu_s: float  # the whole client process (rusage), import and set-up included for bench
    process_nivcsw: int
    procs: dict[str, Any] = field(default_factory=dict)
    output_tokens: int | None = None  # usage.completion_tokens summed over the successful requests
    records: list[RequestRecord] = field(default_factory=list)  # the harness's own, for its window


def mean_chunk_gap_ms(records: list[RequestRecord]) -> float | None:
    """Mean gap between a stream's consecutive content chunks over all streams (bench's mean ITL)."""
    total_ns = gaps = 0
    for r in metrics.ok(records):
        if len(r.chunk_ns) > 1:
            total_ns += r.chunk_ns[-1] - r.chunk_ns[0]
            gaps += len(r.chunk_ns) - 1
    return total_ns / gaps / 1e6 if gaps else None


def harness_run(target: Target, prompts: list[Prompt], load: LoadSpec) -> Run:
    before = resource.getrusage(resource.RUSAGE_SELF)
    records = run_sync(run_load(target, prompts, load, "crosscheck"))
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert all(r.error_type is None for r in records), [r.error_message for r in records if r.error_type]
    tok_s = metrics.whole_run_output_tok_per_s(records)
    assert tok_s is not None
    return Run(
        "harness",
        tok_s,
        min(r.send_ns for r in records) / 1e9,
        max(r.end_ns for r in records) / 1e9,
        mean_chunk_gap_ms(records),
        (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        after.ru_nivcsw - before.ru_nivcsw,
        output_tokens=sum(r.completion_tokens or 0 for r in records),
        records=records,
    )


def bench_line(out: str, prefix: str) -> float | None:
    line = next((x for x in out.splitlines() if x.startswith(prefix)), None)
    return float(line.split(":", 1)[1]) if line else None


def bench_run(
    base_url: str, api_key: str, model: str, dataset: Path, tokenizer: str, load: LoadSpec, n: int
) -> Run:
    extra = ["--model", model, "--dataset-name", "custom", "--dataset-path", str(dataset),
             "--custom-output-len", str(load.max_tokens), "--skip-chat-template", "--disable-shuffle",
             "--temperature", "0"]  # fmt: skip
    argv = drive_vllm_bench.command(base_url, tokenizer, n, load.concurrency, extra, load.ignore_eos)
    argv = [sys.executable, "-c", BENCH_WRAPPER, *argv[3:]]  # argv[:3]: python -m benchmarks.drive_vllm_bench
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, capture_output=True, text=True, check=True,
                         env={**os.environ, "OPENAI_API_KEY": api_key}).stdout  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert drive_vllm_bench.result(out)["completed"] == n
    # vllm bench's own figure: its 'Output token throughput (tok/s)' line.
    tok_s = bench_line(out, "Output token throughput")
    duration = bench_line(out, "Benchmark duration (s)")
    end = bench_line(out, "BENCH_END")
    assert tok_s is not None and duration is not None and end is not None
    return Run(
        "bench",
        tok_s,
        end - duration,
        end,
        bench_line(out, "Mean ITL (ms)"),
        (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        after.ru_nivcsw - before.ru_nivcsw,
        output_tokens=drive_vllm_bench.result(out)["tokens"],
    )


def watched(watcher: proc_sample.Client, engine_pid: int, label: str, run: Any) -> Run:
    """`run()` between the watcher's begin and end; the watcher's totals go into the Run."""
    watcher.begin(label, engine_pid)
    result: Run = run()
    result.procs = watcher.end(label, result.t0, result.t1)
    return result


def dominant(cores: dict[str, float]) -> str:
    """'3:82%' for the core that took most of a role's CPU time, with its share."""
    if not cores:
        return "-"
    total = sum(cores.values())
    core, cpu = next(iter(cores.items()))
    return f"{core}:{100 * cpu / total:.0f}%"


def placement(run: Run) -> dict[str, Any]:
    """Per role, in the run's own timed window: CPU share, run-queue wait share, involuntary
    switches, dominant core of the role and of its busiest thread, and the share of the client's
    CPU time spent on the cores where EngineCore's and the API server's busiest threads mostly ran."""
    window = run.procs.get("window", {})
    roles = window.get("roles", {})
    out: dict[str, Any] = {}
    for role in ROLES_SHOWN:
        r = roles.get(role)
        if not r:
            continue
        top = r["top_threads"][0] if r["top_threads"] else {}
        out[role] = {
            "cpu_share": r["cpu_share"],
            "run_delay_share": r["run_delay_share"],
            "nivcsw": r["nivcsw"],
            "core": dominant(r["cores"]),
            "n_cores": len(r["cores"]),
            "top_thread": top.get("comm"),
            "top_thread_cpu_share": round(top["cpu_s"] / window["wall_s"], 3) if top else None,
            "top_thread_run_delay_share": round(top["run_delay_s"] / window["wall_s"], 4) if top else None,
            "top_thread_core": dominant(top.get("cores", {})),
        }
    client = roles.get(run.client)
    hot = set()
    for role in ("engine_core", "api_server"):
        r = roles.get(role)
        if r and r["top_threads"]:
            hot |= {
                c for c, s in r["top_threads"][0]["cores"].items() if s >= 0.25 * r["top_threads"][0]["cpu_s"]
            }
    if client and client["cpu_s"]:
        out["client_on_engine_hot_cores"] = round(
            sum(s for c, s in client["cores"].items() if c in hot) / client["cpu_s"], 3
        )
    out["steal_share"] = window.get("host", {}).get("steal_share")
    out["host_busy_share"] = window.get("host", {}).get("busy_share")
    return out


def spread(values: list[float]) -> dict[str, float | None]:
    """Launch-level spread: sd of the log (~ CV) and the range as max/min - 1."""
    if not values:
        return {"n": 0, "mean": None, "sd_log": None, "range": None}
    logs = [math.log(v) for v in values]
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "sd_log": statistics.stdev(logs) if len(values) > 1 else None,
        "range": max(values) / min(values) - 1,
    }


def per_step_ratio(pair: dict[str, Any]) -> float | None:
    """The pair's ratio of output tokens per engine step: (tok/s x mean ITL), harness over bench.

    Each client's figure moves with the engine's step time during its own run (on the H200 of
    2026-12-02, log tok/s against log mean ITL correlated at -0.995 and -0.999); this ratio takes
    that out and leaves what the clients count and time differently."""
    h, b = pair["harness"], pair["bench"]
    if not h["mean_itl_ms"] or not b["mean_itl_ms"]:
        return None
    return (h["tok_s"] * h["mean_itl_ms"]) / (b["tok_s"] * b["mean_itl_ms"])


def launch_summary(launch: dict[str, Any]) -> dict[str, Any]:
    """Means over the launch's pairs; run-queue waits and involuntary switches as the worst run's."""
    pairs = launch["pairs"]
    ratios = [p["ratio"] for p in pairs]
    steps = [r for r in (per_step_ratio(p) for p in pairs) if r is not None]

    def mean_of(client: str, role: str, key: str) -> float | None:
        vals = [p[client]["placement"].get(role, {}).get(key) for p in pairs]
        kept = [v for v in vals if isinstance(v, (int, float))]
        return statistics.fmean(kept) if kept else None

    def worst(role: str, key: str, top: bool) -> float | None:
        """The largest `key` of `role` (its busiest thread if `top`) over every run of the launch."""
        vals = []
        for p in pairs:
            for client in ("harness", "bench"):
                r = p[client]["procs"].get("window", {}).get("roles", {}).get(role)
                if r:
                    vals.append(r["top_threads"][0][key] if top and r["top_threads"] else r[key])
        return max(vals) if vals else None

    return {
        "harness_mean": statistics.fmean(p["harness"]["tok_s"] for p in pairs),
        "bench_mean": statistics.fmean(p["bench"]["tok_s"] for p in pairs),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "per_step_ratio_median": statistics.median(steps) if steps else None,
        "per_step_ratio_min": min(steps) if steps else None,
        "per_step_ratio_max": max(steps) if steps else None,
        "harness_cpu_share": mean_of("harness", "harness", "cpu_share"),
        "bench_cpu_share": mean_of("bench", "bench", "cpu_share"),
        "ec_cpu_share": mean_of("harness", "engine_core", "top_thread_cpu_share"),
        "api_cpu_share": mean_of("harness", "api_server", "top_thread_cpu_share"),
        "ec_rq_wait_s_max": worst("engine_core", "run_delay_s", top=True),
        "api_rq_wait_s_max": worst("api_server", "run_delay_s", top=True),
        "harness_rq_wait_s_max": worst("harness", "run_delay_s", top=False),
        "bench_rq_wait_s_max": worst("bench", "run_delay_s", top=False),
        "ec_nivcsw_max": worst("engine_core", "nivcsw", top=False),
        "harness_on_hot": statistics.fmean(
            [p["harness"]["placement"].get("client_on_engine_hot_cores") or 0.0 for p in pairs]
        ),
        "bench_on_hot": statistics.fmean(
            [p["bench"]["placement"].get("client_on_engine_hot_cores") or 0.0 for p in pairs]
        ),
        "harness_itl_ms": statistics.fmean([p["harness"]["mean_itl_ms"] or 0.0 for p in pairs]),
        "bench_itl_ms": statistics.fmean([p["bench"]["mean_itl_ms"] or 0.0 for p in pairs]),
    }


def fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def ms(v: float | None) -> str:
    return "-" if v is None else f"{1000 * v:.1f}"


SPREAD_KEYS = (
    ("harness", "harness_mean"),
    ("vllm bench serve", "bench_mean"),
    ("ratio", "ratio_median"),
    ("per-step ratio", "per_step_ratio_median"),
)


def print_table(launches: list[dict[str, Any]]) -> None:
    """The per-launch table and the launch-level spread."""
    print(
        "\nper launch: means over the launch's pairs; CPU shares of each run's own timed window "
        "(EC, API: their busiest thread); run-queue waits the worst run's, in ms per window; "
        "hot: share of the client's CPU on the cores EC's and API's busiest threads mostly used"
    )
    print(
        "| launch | ready s | harness tok/s | bench tok/s | ratio median (range) "
        "| per-step ratio median (range) "
        "| CPU harness / bench / EC / API | rq wait ms harness / bench / EC / API | EC nivcsw "
        "| hot H / V | ITL ms H / V | cores EC, API, harness (pair 1) |"
    )
    for launch in launches:
        s = launch["summary"]
        p1 = launch["pairs"][0]["harness"]["placement"]
        cores = ", ".join(
            p1.get(r, {}).get("top_thread_core", "-") for r in ("engine_core", "api_server", "harness")
        )
        print(
            f"| {launch['launch']} | {launch['ready_s']:.0f} | "
            f"{s['harness_mean']:,.0f} | {s['bench_mean']:,.0f} | "
            f"{s['ratio_median']:.3f} ({s['ratio_min']:.3f}-{s['ratio_max']:.3f}) | "
            f"{fmt(s['per_step_ratio_median'], '.3f')} ({fmt(s['per_step_ratio_min'], '.3f')}-"
            f"{fmt(s['per_step_ratio_max'], '.3f')}) | "
            f"{fmt(s['harness_cpu_share'], '.2f')} / {fmt(s['bench_cpu_share'], '.2f')} / "
            f"{fmt(s['ec_cpu_share'], '.2f')} / {fmt(s['api_cpu_share'], '.2f')} | "
            f"{ms(s['harness_rq_wait_s_max'])} / {ms(s['bench_rq_wait_s_max'])} / "
            f"{ms(s['ec_rq_wait_s_max'])} / {ms(s['api_rq_wait_s_max'])} | "
            f"{fmt(s['ec_nivcsw_max'], '.0f')} | "
            f"{s['harness_on_hot']:.2f} / {s['bench_on_hot']:.2f} | "
            f"{fmt(s['harness_itl_ms'], '.2f')} / {fmt(s['bench_itl_ms'], '.2f')} | {cores} |"
        )
    for name, key in SPREAD_KEYS:
        sp = spread([launch["summary"][key] for launch in launches if launch["summary"][key] is not None])
        print(
            f"launch-level spread of {name} over {sp['n']} launches: mean {fmt(sp['mean'], ',.3f')}, "
            f"sd of log {fmt(sp['sd_log'] and 100 * sp['sd_log'], '.1f')}%, "
            f"range {fmt(sp['range'] and 100 * sp['range'], '.1f')}%"
        )


def replay(path: Path) -> None:
    """`--table FILE`: the table and spread again from a crosscheck.json (summaries recomputed)."""
    result = json.loads(path.read_text())
    for launch in result["launches"]:
        launch["summary"] = launch_summary(launch)
        for pair in launch["pairs"]:
            step = per_step_ratio(pair)
            print(
                f"launch {launch['launch']} pair {pair['pair']} ({pair['order']}): harness "
                f"{pair['harness']['tok_s']:,.0f} tok/s "
                f"(ITL {fmt(pair['harness']['mean_itl_ms'], '.2f')} ms), "
                f"bench {pair['bench']['tok_s']:,.0f} (ITL {fmt(pair['bench']['mean_itl_ms'], '.2f')} ms), "
                f"ratio {pair['ratio']:.3f}, per step {fmt(step, '.3f')}"
            )
    print_table(result["launches"])


def host_facts() -> dict[str, Any]:
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "affinity_of_crosscheck": sorted(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "overrides": OVERRIDES,
        "rounds": ROUNDS,
        "launches": LAUNCHES,
        "sample_s": SAMPLE_S,
    }


def json_path() -> Path | None:
    if os.environ.get("CROSSCHECK_JSON"):
        return Path(os.environ["CROSSCHECK_JSON"])
    return Path(os.environ["OUT"]) / "crosscheck.json" if os.environ.get("OUT") else None


def grid_engine(config: Any, log: Path) -> tuple[Engine, Any, Any]:
    """(engine, spec, endpoint): the config's one engine group as a grid cell launches it, not started.

    Its process starts on every core, whatever the last launch's client pin left this process.
    """
    spec = group_by_engine(expand(config))[0].spec
    endpoint = new_endpoint()
    engine = Engine(
        serve_argv(spec, endpoint, project_path(config.paths.models_dir)),
        serve_env(spec, engine_base_env(), project_path(config.paths.cache_dir)),
        endpoint,
        log,
        spec.engine.start_timeout_s,
        cpus=NODE_CPUS,
    )
    return engine, spec, endpoint


def run_launch(
    index: int, config: Any, prompts: list[Prompt], dataset: Path, tmp: Path, watcher: proc_sample.Client
) -> dict[str, Any]:
    engine, spec, endpoint = grid_engine(config, tmp / f"engine-{index}.log")
    load, models_dir = config.load, project_path(config.paths.models_dir)
    pairs: list[dict[str, Any]] = []
    with engine:
        assert engine.proc is not None and engine.ready_s is not None
        engine_pid = engine.proc.pid
        print(
            f"launch {index}: engine ready in {engine.ready_s:.0f} s; {len(prompts)} prompts, "
            f"max_tokens {load.max_tokens}, concurrency {load.concurrency}"
        )
        # vllm bench is this process's child, so it inherits the client's cores.
        pins = apply_pins(engine_processes(engine), PIN)
        print(
            f"launch {index}: pinning {PIN}: "
            + (
                f"engine {proc_sample.affinity_text(list(pins.engine))}, "
                f"clients {proc_sample.affinity_text(list(pins.client))}"
                if pins.pinned
                else pins.reason
            )
        )
        target = Target(endpoint.base_url, endpoint.api_key, served_name(spec), "completions")
        harness_run(target, prompts[: load.concurrency], load)  # warm-up, not counted
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
                ours = watched(watcher, engine_pid, f"L{index}P{i}H", run_ours)
                theirs = watched(watcher, engine_pid, f"L{index}P{i}V", run_theirs)
            else:
                theirs = watched(watcher, engine_pid, f"L{index}P{i}V", run_theirs)
                ours = watched(watcher, engine_pid, f"L{index}P{i}H", run_ours)
            pair: dict[str, Any] = {"pair": i + 1, "order": "H V" if i % 2 == 0 else "V H"}
            for run in (ours, theirs):
                window = run.t1 - run.t0
                pair[run.client] = {
                    "tok_s": run.tok_s,
                    "window_s": window,
                    "mean_itl_ms": run.mean_itl_ms,
                    "process_cpu_s": run.process_cpu_s,
                    "process_nivcsw": run.process_nivcsw,
                    "placement": placement(run),
                    "procs": run.procs,
                }
            pair["ratio"] = ours.tok_s / theirs.tok_s
            pair["per_step_ratio"] = per_step_ratio(pair)
            pairs.append(pair)
            hp, vp = pair["harness"]["placement"], pair["bench"]["placement"]
            print(
                f"pair {i + 1} ({pair['order']}): harness {ours.tok_s:.2f} tok/s, "
                f"vllm bench serve {theirs.tok_s:.2f} tok/s, ratio {pair['ratio']:.3f} "
                f"(per step {fmt(pair['per_step_ratio'], '.3f')}); "
                f"client CPU share {fmt(hp.get('harness', {}).get('cpu_share'), '.2f')} / "
                f"{fmt(vp.get('bench', {}).get('cpu_share'), '.2f')}, "
                "EngineCore thread rq wait "
                f"{fmt(hp.get('engine_core', {}).get('top_thread_run_delay_share'), '.3f')} / "
                f"{fmt(vp.get('engine_core', {}).get('top_thread_run_delay_share'), '.3f')}, "
                f"ITL {fmt(ours.mean_itl_ms, '.2f')} / {fmt(theirs.mean_itl_ms, '.2f')} ms"
            )
        affinity = pairs[-1]["harness"]["procs"].get("affinity", {}) if pairs else {}
    launch: dict[str, Any] = {
        "launch": index,
        "ready_s": engine.ready_s,
        "pin_mode": PIN,
        "pinned": pins.pinned,
        "pin_note": pins.reason or None,
        "affinity": {
            role: [proc_sample.affinity_text(list(a)) for a in sets] for role, sets in affinity.items()
        },
        "pairs": pairs,
    }
    launch["summary"] = launch_summary(launch)
    ratios = [p["ratio"] for p in pairs]
    print(
        f"launch {index}: harness / vllm bench serve, median of {ROUNDS} pairs: "
        f"{statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f}; target within 2%); affinity {launch['affinity']}"
    )
    return launch


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        replay(Path(sys.argv[2]))
        return
    start = time.perf_counter()
    config = to_config(compose_config(OVERRIDES))
    group = group_by_engine(expand(config))[0]
    load = config.load
    prompts = load_corpus(project_path(config.paths.data_dir) / group.cells[0].corpus.path)[
        : load.num_prompts
    ]
    out_path = json_path()
    result: dict[str, Any] = {"host": host_facts(), "launches": []}
    watcher = proc_sample.Client(SAMPLE_S)
    try:
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            dataset = tmp / "prompts.jsonl"
            dataset.write_text("".join(json.dumps({"prompt": p.prompt}) + "\n" for p in prompts))
            longest = 0.0
            for index in range(1, LAUNCHES + 1):
                elapsed = time.perf_counter() - start
                if BUDGET_S is not None and index > 1 and elapsed + longest > BUDGET_S:
                    print(
                        f"launch {index} not started: {elapsed:.0f} s gone, the longest launch "
                        f"took {longest:.0f} s, budget {BUDGET_S:.0f} s"
                    )
                    break
                t0 = time.perf_counter()
                result["launches"].append(run_launch(index, config, prompts, dataset, tmp, watcher))
                longest = max(longest, time.perf_counter() - t0)
                result["launches"][-1]["launch_wall_s"] = time.perf_counter() - t0
                if out_path is not None:
                    out_path.write_text(json.dumps(result, indent=1))
    finally:
        watcher.close()
    launches = result["launches"]
    ratios = [p["ratio"] for launch in launches for p in launch["pairs"]]
    print(
        f"harness / vllm bench serve, median of {len(ratios)} pairs over {len(launches)} launch(es): "
        f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}; target within 2%)"
    )
    print_table(launches)
    result["spread"] = {
        key: spread([launch["summary"][key] for launch in launches if launch["summary"][key] is not None])
        for _, key in SPREAD_KEYS
    }
    if out_path is not None:
        out_path.write_text(json.dumps(result, indent=1))
        print(f"every figure: {out_path}")


if __name__ == "__main__":
    main()
