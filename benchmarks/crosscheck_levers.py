"""Lever mode of the crosscheck: per lever, the harness's figures and `vllm bench serve`'s, and the
lever ratio read by each (`CROSSCHECK_LEVERS=suffix,bestkpad make crosscheck`; issue 37 item 8).

Every launch is fresh and runs one lever; levers alternate ABBA over launches (suffix, bestkpad,
bestkpad, suffix for two launches each). The corpus is cut into disjoint slices: the first
`load.warmup_requests` prompts warm each launch up (the harness's client, not counted), then each
run of the launch gets a slice of `load.num_prompts` of its own, so a drafting engine's suffix tree
has never seen a measured prompt. Every launch of every lever uses the same slices, and the client
that runs a slice alternates by launch: with two launches per lever each client ran every slice
once on each lever, so lever ratios are paired by slice for each client.

Three figures per run: the harness's bench tok/s (completed tokens / first send to last end,
workers/signals/metrics.py), the harness's steady-state window tok/s (the grid's headline), and
`vllm bench serve`'s own 'Output token throughput' (the real CLI, benchmarks/drive_vllm_bench.py).
The bench CLI is sent `--ignore-eos` only where the load says so, like the harness.

Environment (CROSSCHECK_OVERRIDES, CROSSCHECK_PIN as in crosscheck_engine): CROSSCHECK_LEVERS (two
levers, comma-separated; the first is the ratio's base), CROSSCHECK_K (their K, 8), CROSSCHECK_ROUNDS
(pairs per launch, 2), CROSSCHECK_LAUNCHES (per lever, 2), CROSSCHECK_FIRST_LAUNCH (1; 2 goes on
where a call that ran launch 1 of each lever stopped), CROSSCHECK_BUDGET_S (start no launch that
would end past it, counting CROSSCHECK_START_S (90) for its engine start plus the last launch's runs).
Figures go to crosscheck-levers.json under $OUT (or CROSSCHECK_JSON), rewritten after each launch;
`--table A.json B.json` prints the summary of several such files pooled.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy.stats import t as student_t

from benchmarks.crosscheck_engine import bench_run, grid_engine, harness_run
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from vocab.paths import project_path
from workers.engine.args import model_path, served_name, tokenizer_path
from workers.load import windows
from workers.load.client import Target
from workers.load.prompts import Prompt, load_corpus
from workers.runner import engine_processes
from workers.signals.host import apply_pins

# The CPU default: a load the 2-core engine serves in ~10-20 s a run that still has a steady window
# (16 requests at c=4); it stops at EOS, as the grid's load does.
CPU_OVERRIDES = (
    "experiment=smoke grid.corpora=[code_complete] load.num_prompts=16 load.warmup_requests=4 "
    "load.max_tokens=48 load.concurrency=4 load.ignore_eos=false load.token_ids=true"
)
FIGURES = ("harness", "bench", "window")  # harness bench-style, vllm bench serve, harness window
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Slot:
    """One measured run: which lever's launch, which pair, which client, which prompt slice."""

    lever: str
    launch: int  # this lever's launch number, 1-based
    pair: int  # 1-based, within the launch
    client: str  # "harness" or "bench"
    slice_index: int  # 0-based, over the measured slices


def launch_order(levers: Sequence[str], launches: int, first: int = 1) -> list[tuple[str, int]]:
    """(lever, its launch number) in ABBA order, launch numbers first..first+launches-1: slow drift
    falls on both levers alike, and a later call can go on where an earlier one stopped."""
    order: list[tuple[str, int]] = []
    for n in range(first, first + launches):
        order += [(lever, n) for lever in (levers if n % 2 == 1 else list(reversed(levers)))]
    return order


def slots(lever: str, launch: int, rounds: int) -> list[Slot]:
    """The runs of one launch in the order they go out.

    Pair p uses slices 2(p-1) and 2(p-1)+1; the harness takes the first on odd launches, the second
    on even ones, so two launches give each client every slice once. Within a launch the client that
    goes first alternates from pair to pair and from launch to launch."""
    out: list[Slot] = []
    for p in range(1, rounds + 1):
        first, second = 2 * (p - 1), 2 * (p - 1) + 1
        harness_slice, bench_slice = (first, second) if launch % 2 == 1 else (second, first)
        runs = [
            Slot(lever, launch, p, "harness", harness_slice),
            Slot(lever, launch, p, "bench", bench_slice),
        ]
        out += runs if (p + launch) % 2 == 0 else runs[::-1]
    return out


def prompt_slices(
    prompts: Sequence[Prompt], warmup: int, n: int, count: int
) -> tuple[list[Prompt], list[list[Prompt]]]:
    """The warm-up prompts and `count` measured slices of `n`, all disjoint; one clear line if short."""
    need = warmup + count * n
    if len(prompts) < need:
        raise SystemExit(
            f"crosscheck levers: the corpus has {len(prompts)} prompts, {need} needed "
            f"({warmup} warm-up + {count} runs x {n}): lower load.num_prompts or CROSSCHECK_ROUNDS"
        )
    head = list(prompts[:warmup])
    return head, [list(prompts[warmup + i * n : warmup + (i + 1) * n]) for i in range(count)]


def geo_interval(logs: Sequence[float], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Geometric mean of exp(logs) and its t-interval over the values (each taken as independent)."""
    n = len(logs)
    if n == 0:
        return {"n": 0, "ratio": None, "lo": None, "hi": None}
    mean = statistics.fmean(logs)
    if n < 2:
        return {"n": 1, "ratio": math.exp(mean), "lo": None, "hi": None}
    half = student_t.ppf(0.5 + confidence / 2, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return {"n": n, "ratio": math.exp(mean), "lo": math.exp(mean - half), "hi": math.exp(mean + half)}


def figure_of(run: dict[str, Any], figure: str) -> float | None:
    """A run's value of one figure: the harness's two come from its runs, bench's from its own."""
    if figure == "bench":
        return run["tok_s"] if run["client"] == "bench" else None
    if run["client"] != "harness":
        return None
    return run["tok_s"] if figure == "harness" else run["window_tok_s"]


def per_step(run: dict[str, Any]) -> float | None:
    """Output tokens per engine step as a client saw them: tok/s x mean gap between chunks (ITL)."""
    return run["tok_s"] * run["mean_itl_ms"] if run.get("mean_itl_ms") else None


def client_vs_bench(runs: Sequence[dict[str, Any]], lever: str | None, figure: str) -> dict[str, Any]:
    """Per pair of one lever's launches, harness `figure` over bench's: the two read one engine.

    `per_step` divides each client's tok/s by the engine's step time during its own run (its mean
    ITL), as crosscheck_engine's per-step ratio does: what is left is what the clients count and time
    differently, without the engine stepping faster in one run than in the other. `lever` None: all."""
    logs = []
    pairs = {(r["lever"], r["launch"], r["pair"]) for r in runs if lever in (None, r["lever"])}
    for key in sorted(pairs):
        pair = [r for r in runs if (r["lever"], r["launch"], r["pair"]) == key]
        h = next((r for r in pair if r["client"] == "harness"), None)
        v = next((r for r in pair if r["client"] == "bench"), None)
        if h is None or v is None:
            continue
        ours, theirs = (
            (per_step(h), per_step(v)) if figure == "per_step" else (figure_of(h, figure), v["tok_s"])
        )
        if ours and theirs:
            logs.append(math.log(ours / theirs))
    return geo_interval(logs)


def slice_mean(runs: Sequence[dict[str, Any]], lever: str, slice_index: int, figure: str) -> float | None:
    """Geometric mean of one figure over the runs of `lever` on one prompt slice."""
    vals = [
        v for r in runs if r["lever"] == lever and r["slice"] == slice_index if (v := figure_of(r, figure))
    ]
    return statistics.geometric_mean(vals) if vals else None


def slice_logs(runs: Sequence[dict[str, Any]], base: str, other: str, figure: str) -> list[float]:
    """ln(other / base) by one figure, one per prompt slice that both levers ran under it."""
    logs = []
    for s in sorted({r["slice"] for r in runs}):
        a, b = slice_mean(runs, base, s, figure), slice_mean(runs, other, s, figure)
        if a and b:
            logs.append(math.log(b / a))
    return logs


def lever_ratio(runs: Sequence[dict[str, Any]], base: str, other: str, figure: str) -> dict[str, Any]:
    """`other` over `base` by one figure, paired by prompt slice (the same client ran it on both)."""
    return geo_interval(slice_logs(runs, base, other, figure))


def ratio_of_ratios(
    runs: Sequence[dict[str, Any]], base: str, other: str, figure: str, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """The lever ratio by the harness's `figure` over the lever ratio by vllm bench serve.

    The two clients ran different slices in a launch, so the two sets of slice ratios are taken as
    independent samples: the difference of their mean logs with a Welch t-interval. 1 inside it means
    both read the same lever ratio."""
    ours, theirs = slice_logs(runs, base, other, figure), slice_logs(runs, base, other, "bench")
    if not ours or not theirs:
        return {"n": 0, "ratio": None, "lo": None, "hi": None}
    diff = statistics.fmean(ours) - statistics.fmean(theirs)
    n = min(len(ours), len(theirs))
    if len(ours) < 2 or len(theirs) < 2:
        return {"n": n, "ratio": math.exp(diff), "lo": None, "hi": None}
    va, vb = statistics.variance(ours) / len(ours), statistics.variance(theirs) / len(theirs)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"n": n, "ratio": math.exp(diff), "lo": math.exp(diff), "hi": math.exp(diff)}
    df = (va + vb) ** 2 / (va**2 / (len(ours) - 1) + vb**2 / (len(theirs) - 1))
    half = student_t.ppf(0.5 + confidence / 2, df) * se
    return {"n": n, "ratio": math.exp(diff), "lo": math.exp(diff - half), "hi": math.exp(diff + half)}


def fmt_ratio(r: dict[str, Any]) -> str:
    if r["ratio"] is None:
        return "-"
    if r["lo"] is None:
        return f"{r['ratio']:.3f} (n={r['n']})"
    return f"{r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] (n={r['n']})"


def summary(runs: Sequence[dict[str, Any]], levers: Sequence[str]) -> dict[str, Any]:
    base, other = levers[0], levers[1]
    return {
        "per_lever": {
            lever: {
                "harness_over_bench": client_vs_bench(runs, lever, "harness"),
                "window_over_bench": client_vs_bench(runs, lever, "window"),
                "per_step_over_bench": client_vs_bench(runs, lever, "per_step"),
                **{
                    f"{fig}_mean": statistics.fmean(v)
                    if (v := [x for r in runs if r["lever"] == lever if (x := figure_of(r, fig))])
                    else None
                    for fig in FIGURES
                },
            }
            for lever in levers
        },
        "pooled": {fig: client_vs_bench(runs, None, fig) for fig in ("harness", "per_step")},
        "lever_ratio": {fig: lever_ratio(runs, base, other, fig) for fig in FIGURES},
        "ratio_of_ratios": {fig: ratio_of_ratios(runs, base, other, fig) for fig in ("harness", "window")},
    }


def print_summary(result: dict[str, Any], levers: Sequence[str]) -> None:
    s = result["summary"]
    print(
        "\n| lever | harness bench tok/s | vllm bench serve tok/s | harness window tok/s "
        "| harness / bench, per pair [95%] | per step [95%] | window / bench, per pair [95%] |"
    )
    print("|---|---|---|---|---|---|---|")
    for lever in levers:
        p = s["per_lever"][lever]
        print(
            f"| {lever} | {p['harness_mean'] or 0:,.1f} | {p['bench_mean'] or 0:,.1f} | "
            f"{p['window_mean'] or 0:,.1f} | {fmt_ratio(p['harness_over_bench'])} | "
            f"{fmt_ratio(p['per_step_over_bench'])} | {fmt_ratio(p['window_over_bench'])} |"
        )
    print(
        f"both levers, every pair: harness / bench {fmt_ratio(s['pooled']['harness'])}, "
        f"per step {fmt_ratio(s['pooled']['per_step'])}"
    )
    base, other = levers[0], levers[1]
    print(f"\n{other} / {base}, paired by prompt slice (geometric mean [95% t-interval over slices]):")
    for fig, name in zip(FIGURES, ("harness bench tok/s", "vllm bench serve", "harness window"), strict=True):
        print(f"  by {name}: {fmt_ratio(s['lever_ratio'][fig])}")
    for fig, name in (("harness", "harness bench tok/s"), ("window", "harness window")):
        print(f"  ratio by {name} / ratio by vllm bench serve: {fmt_ratio(s['ratio_of_ratios'][fig])}")


def lever_overrides(base: list[str], lever: str, k: int) -> list[str]:
    """The crosscheck's overrides for one lever at K (van has no K)."""
    extra = [f"grid.levers=[{lever}]"] + ([f"+grid.ks.{lever}=[{k}]"] if lever != "van" else [])
    return [o for o in base if not o.startswith(("grid.levers=", "+grid.ks."))] + extra


def run_one(
    slot: Slot, target: Target, bench_args: dict[str, Any], load: Any, prompts: list[Prompt], tmp: Path
) -> dict[str, Any]:
    """One measured run of `slot` with its slice; its figures as a row."""
    if slot.client == "harness":
        run = harness_run(target, prompts, load)
        window = windows.steady_window(run.records, load.concurrency)
        window_tok_s = windows.window_output_tok_per_s(run.records, window) if window else None
    else:
        dataset = tmp / f"slice-{slot.slice_index}.jsonl"
        dataset.write_text("".join(json.dumps({"prompt": p.prompt}) + "\n" for p in prompts))
        run = bench_run(**bench_args, dataset=dataset, load=load, n=len(prompts))
        window_tok_s = None
    row = {
        "lever": slot.lever,
        "launch": slot.launch,
        "pair": slot.pair,
        "client": slot.client,
        "slice": slot.slice_index,
        "tok_s": run.tok_s,
        "window_tok_s": window_tok_s,
        "output_tokens": run.output_tokens,
        "span_s": run.t1 - run.t0,
        "mean_itl_ms": run.mean_itl_ms,
    }
    print(
        f"{slot.lever} launch {slot.launch} pair {slot.pair} {slot.client:<7} slice {slot.slice_index}: "
        f"{run.tok_s:,.1f} tok/s over {row['span_s']:.1f} s, {run.output_tokens} tokens"
        + (f", window {window_tok_s:,.1f} tok/s" if window_tok_s else "")
    )
    return row


def readers(spec: Any, endpoint: Any, models_dir: Path) -> tuple[Target, dict[str, Any]]:
    """The harness's target and `bench_run`'s arguments for one running engine."""
    target = Target(endpoint.base_url, endpoint.api_key, served_name(spec), "completions")
    bench_args = {
        "base_url": endpoint.base_url,
        "api_key": endpoint.api_key,
        "model": served_name(spec),
        "tokenizer": tokenizer_path(spec, models_dir) or model_path(spec, models_dir),
    }
    return target, bench_args


def run_launch(
    config: Any, slot_list: list[Slot], warmup: list[Prompt], slices: list[list[Prompt]], tmp: Path, pin: str
) -> tuple[list[dict[str, Any]], float]:
    lever, launch = slot_list[0].lever, slot_list[0].launch
    engine, spec, endpoint = grid_engine(config, tmp / f"engine-{lever}-{launch}.log")
    load = config.load
    rows = []
    with engine:
        assert engine.ready_s is not None
        print(f"{lever} launch {launch}: engine ready in {engine.ready_s:.0f} s")
        pins = apply_pins(engine_processes(engine), pin)
        target, bench_args = readers(spec, endpoint, project_path(config.paths.models_dir))
        if warmup:
            harness_run(target, warmup, load)  # warm-up, not counted: a slice no run measures
        for slot in slot_list:
            row = run_one(slot, target, bench_args, load, slices[slot.slice_index], tmp)
            rows.append({**row, "pinned": pins.pinned, "ready_s": engine.ready_s})
    return rows, engine.ready_s


def json_path() -> Path | None:
    if os.environ.get("CROSSCHECK_JSON"):
        return Path(os.environ["CROSSCHECK_JSON"])
    return Path(os.environ["OUT"]) / "crosscheck-levers.json" if os.environ.get("OUT") else None


def replay(paths: Sequence[Path]) -> None:
    """`--table FILE...`: the summary again from one or more crosscheck-levers.json (e.g. two device
    calls that ran launches 1 and 2), their runs pooled."""
    results = [json.loads(p.read_text()) for p in paths]
    levers = results[0]["levers"]
    runs = [r for res in results for r in res["runs"]]
    print(f"{len(runs)} runs from {', '.join(str(p) for p in paths)}")
    print_summary({"summary": summary(runs, levers)}, levers)


def next_launch_fits(elapsed_s: float, budget_s: float | None, last_runs_s: float, start_s: float) -> bool:
    """Whether one more launch (an engine start of `start_s` plus runs as long as the last launch's)
    ends inside the budget; no budget: always."""
    return budget_s is None or elapsed_s + start_s + last_runs_s <= budget_s


def run_within_budget(
    order: Sequence[tuple[str, int]],
    budget_s: float | None,
    start_s: float,
    launch: Callable[[str, int], float],
) -> None:
    """`launch(lever, n)` for each in `order`; it returns its runs' seconds (its wall less its engine
    start). The first launch always goes; no later one starts that `next_launch_fits` says would end
    past `budget_s`, so a call cut at its limit never loses a launch half run."""
    start, last_runs_s = time.perf_counter(), None
    for lever, n in order:
        elapsed = time.perf_counter() - start
        if last_runs_s is not None and not next_launch_fits(elapsed, budget_s, last_runs_s, start_s):
            print(f"{lever} launch {n} not started: {elapsed:.0f} s gone of {budget_s:.0f}")
            return
        last_runs_s = launch(lever, n)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--table":
        replay([Path(a) for a in sys.argv[2:]])
        return
    levers = [x.strip() for x in os.environ.get("CROSSCHECK_LEVERS", "").split(",") if x.strip()]
    if len(levers) != 2 or levers[0] == levers[1]:
        raise SystemExit(f"CROSSCHECK_LEVERS={','.join(levers)}: name two levers, e.g. suffix,bestkpad")
    k = int(os.environ.get("CROSSCHECK_K", "8"))
    rounds = int(os.environ.get("CROSSCHECK_ROUNDS", "2"))
    launches = int(os.environ.get("CROSSCHECK_LAUNCHES", "2"))
    first = int(os.environ.get("CROSSCHECK_FIRST_LAUNCH", "1"))
    pin = os.environ.get("CROSSCHECK_PIN", "auto")
    budget_s = float(os.environ["CROSSCHECK_BUDGET_S"]) if os.environ.get("CROSSCHECK_BUDGET_S") else None
    # The engine start the budget expects of a launch after the first (the first may compile cold).
    start_s = float(os.environ.get("CROSSCHECK_START_S", "90"))
    base = os.environ.get("CROSSCHECK_OVERRIDES", CPU_OVERRIDES).split()
    # Everything resolved before the first launch: a bad lever or a short corpus stops here.
    configs = {lever: to_config(compose_config(lever_overrides(base, lever, k))) for lever in levers}
    for lever, config in configs.items():
        if len(group_by_engine(expand(config))) != 1:
            raise SystemExit(f"crosscheck levers: {lever} at K={k} expands to more than one engine")
    config = configs[levers[0]]
    load = config.load
    corpus = group_by_engine(expand(config))[0].cells[0].corpus
    prompts = load_corpus(project_path(config.paths.data_dir) / corpus.path)
    warmup, slices = prompt_slices(prompts, load.warmup_requests, load.num_prompts, 2 * rounds)
    out_path = json_path()
    result: dict[str, Any] = {
        "levers": levers,
        "k": k,
        "rounds": rounds,
        "launches_per_lever": launches,
        "overrides": base,
        "load": {
            "num_prompts": load.num_prompts,
            "warmup": load.warmup_requests,
            "max_tokens": load.max_tokens,
            "concurrency": load.concurrency,
            "ignore_eos": load.ignore_eos,
        },
        "runs": [],
        "launches": [],
    }
    with tempfile.TemporaryDirectory() as tmp_s:

        def one_launch(lever: str, launch: int) -> float:
            t0 = time.perf_counter()
            rows, ready_s = run_launch(
                configs[lever], slots(lever, launch, rounds), warmup, slices, Path(tmp_s), pin
            )
            wall_s = time.perf_counter() - t0
            result["runs"] += rows
            result["launches"].append(
                {"lever": lever, "launch": launch, "ready_s": ready_s, "wall_s": wall_s}
            )
            result["summary"] = summary(result["runs"], levers)
            if out_path is not None:
                out_path.write_text(json.dumps(result, indent=1))
            return wall_s - ready_s

        run_within_budget(launch_order(levers, launches, first), budget_s, start_s, one_launch)
    print_summary(result, levers)
    if out_path is not None:
        print(f"every figure: {out_path}")


if __name__ == "__main__":
    main()
