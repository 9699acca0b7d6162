"""Launch noise (issue 44 item 1): variance components of ln tok/s per lever and reader, on fresh launches.

Each launch is a fresh `vllm serve` of one lever (van, suffix, bestkpad at K; levers interleaved as
crosscheck_levers orders them: van, suffix, bestkpad, bestkpad, suffix, van, ...). A launch runs
NOISE_ROUNDS pairs of blocks on disjoint prompt slices, one block read by the harness's client and
one by the real `vllm bench serve`, the client of a slice alternating by launch (crosscheck_levers'
`slots`). Per lever and reader, a one-way ANOVA of the blocks' ln tok/s on the launch splits the
spread in two (`components`): sd between launches and sd block to block within a launch.

Candidate noise sources are switched one at a time by NOISE_SETTING (comma-separated to combine):
- `base`: the configured warm-up (load.warmup_requests), nothing pinned, caches persisted;
- `warmup1` / `warmup2`: warm-up of one / two full concurrency waves of full-length requests
  (load.concurrency prompts a wave, ignore_eos), as vLLM's perf CI warms up at the measured concurrency;
- `gcfreeze`: vLLM (0.26 on the device, 0.32 here) already runs gc.collect + gc.freeze after start-up
  in the API server, EngineCore and GPU worker (vllm/utils/gc_utils.py freeze_gc_heap), with no
  switch; what is left is the serving-time collections: VLLM_GC_DEBUG=1 logs each one (counted per
  launch from the engine log), and the harness's client freezes its own heap before each block;
- `pinned`: the engine's tree and the clients on disjoint cores (load.pin_cpus=auto, the grid's
  default placement; `base` leaves every process anywhere), the placement recorded per launch;
- `tokthreads`: TOKENIZERS_PARALLELISM=false and RAYON_NUM_THREADS=1 in the engine and both clients;
- `coldcache`: fresh empty VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR per launch
  (serve_env persists them under paths.cache_dir): whether the cache state moves the figure.
Every launch records its cache directories' size before it starts and its engine's ready seconds;
every block the setting and its resolved values, the GPU clocks before and after it, the host's steal
and clock, a host probe on the engine's cores just before it (host_probe_ms) and each engine process's
CPU per output token and run-queue wait over it (engine_usage): whether a slow launch's engine did more
host work per token, ran on slower cores, or waited.

Environment: NOISE_OVERRIDES (space-separated; the CPU default is crosscheck_levers' tiny load),
NOISE_LEVERS (van,suffix,bestkpad), NOISE_K (8), NOISE_ROUNDS (pairs per launch, 2), NOISE_LAUNCHES
(per lever, 2), NOISE_FIRST_LAUNCH (1), NOISE_BUDGET_S and NOISE_START_S (90): start no launch that
would end past the budget. Figures go to launch-noise.json and .md under $OUT (or NOISE_JSON),
rewritten after each launch; `--table A.json B.json` pools files (launches of different files are
different launches).

On the 2-core CPU box, `NOISE_LEVERS=van make launch-noise` (2 launches, 4 blocks each) took ~3.5 min;
under `gcfreeze` the CPU engine logged 4 serving-time collections, 0.3 ms in all, in one launch.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.decision import t_quantile
from benchmarks import proc_sample
from benchmarks.crosscheck_engine import grid_engine, harness_run
from benchmarks.crosscheck_levers import (
    CPU_OVERRIDES,
    FIGURES,
    Slot,
    figure_of,
    launch_order,
    lever_overrides,
    prompt_slices,
    readers,
    run_one,
    run_within_budget,
    slots,
)
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.session import gpu_entry
from grid.plan.groups import group_by_engine
from vocab.paths import project_path
from workers.engine.tree import EngineProcess
from workers.load.client import Target, warmup_load
from workers.load.prompts import Prompt, load_corpus
from workers.runner import engine_processes
from workers.signals.gpu_telemetry import load_nvml, visible_indices
from workers.signals.host import HostSampler, ThreadCounters, affinity, apply_pins, cpu_list, usage

SETTINGS = ("base", "warmup1", "warmup2", "gcfreeze", "pinned", "tokthreads", "coldcache")
CACHE_ENV = ("VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
THREAD_ENV = {"TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
LOAD_KEYS = ("num_prompts", "warmup_requests", "max_tokens", "concurrency", "ignore_eos")
READERS = {"harness": "harness bench tok/s", "bench": "vllm bench serve", "window": "harness window"}
# vllm/utils/gc_utils.py's GCDebugger line, one per collection (VLLM_GC_DEBUG=1).
# The host probe: ~15 ms of interpreter work on a 2.1 GHz core, the fastest of 5 (a timer tick or one
# preemption lands in a timing; the fastest reads the core's own speed).
PROBE_LOOPS = 200_000
PROBE_REPEATS = 5
GC_LINE = re.compile(r"GC took ([0-9.]+)ms to complete")
CPU_MHZ = re.compile(r"^cpu MHz\s*:\s*([0-9.]+)", re.MULTILINE)


@dataclass(frozen=True)
class Setting:
    """A NOISE_SETTING resolved: what the launches of this call change against `base`."""

    names: tuple[str, ...] = ("base",)
    warmup_waves: int = 0  # 0: load.warmup_requests at the load's own ignore_eos
    pin: str = "off"
    engine_env: dict[str, str] = field(default_factory=dict)
    client_env: dict[str, str] = field(default_factory=dict)
    client_gc_freeze: bool = False
    cold_cache: bool = False


def resolve_setting(text: str) -> Setting:
    """NOISE_SETTING ('base', one name, or names joined by commas) as a Setting; a bad name stops here."""
    names = tuple(n.strip() for n in text.split(",") if n.strip()) or ("base",)
    unknown = [n for n in names if n not in SETTINGS]
    if unknown or ("warmup1" in names and "warmup2" in names):
        raise SystemExit(f"NOISE_SETTING={text}: one or more of {', '.join(SETTINGS)}, one warm-up at most")
    gc_debug = {"VLLM_GC_DEBUG": "1"} if "gcfreeze" in names else {}
    threads = THREAD_ENV if "tokthreads" in names else {}
    return Setting(
        names=names,
        warmup_waves=2 if "warmup2" in names else 1 if "warmup1" in names else 0,
        pin="auto" if "pinned" in names else "off",
        engine_env={**gc_debug, **threads},
        client_env=dict(threads),
        client_gc_freeze="gcfreeze" in names,
        cold_cache="coldcache" in names,
    )


def resolve_settings(text: str) -> list[Setting]:
    """NOISE_SETTING as one or more settings separated by ';' (e.g. 'base;pinned,warmup2'): their
    launches are interleaved with the levers' in one ABBA order (arm_table), so the machine's drift and
    its warming up fall on each setting alike. Client knobs hold for the whole process, so a setting
    that changes them runs alone."""
    settings = [resolve_setting(part) for part in text.split(";") if part.strip()] or [
        resolve_setting("base")
    ]
    if len(settings) > 1 and any(x.client_env for x in settings):
        raise SystemExit(f"NOISE_SETTING={text}: tokthreads changes the client's process; run it alone")
    return settings


def arm_table(levers: Sequence[str], settings: Sequence[Setting]) -> dict[str, tuple[str, Setting]]:
    """'lever' (one setting) or 'lever@setting' -> (lever, setting), settings outermost: with two
    settings and ABBA over the arms, each lever runs under each setting once per pair of launches."""
    if len(settings) == 1:
        return {lever: (lever, settings[0]) for lever in levers}
    return {f"{lever}@{','.join(x.names)}": (lever, x) for x in settings for lever in levers}


def warmup_plan(setting: Setting, load: Any) -> tuple[int, Any]:
    """(warm-up requests, the load they go out with): a wave is load.concurrency full-length requests,
    sent as the grid sends a warm-up under load.warmup_ignore_eos (workers.load.client.warmup_load)."""
    if setting.warmup_waves == 0:
        return load.warmup_requests, load
    return setting.warmup_waves * load.concurrency, warmup_load(
        dataclasses.replace(load, warmup_ignore_eos=True)
    )


def warmup_head(load: Any) -> int:
    """Prompts kept ahead of the measured slices: enough for any setting's warm-up, so every setting
    measures the very same slices."""
    return max(load.warmup_requests, 2 * load.concurrency)


# --- variance components -------------------------------------------------------------------------


def by_launch(values: dict[Any, list[float]]) -> list[list[float]]:
    """The groups of a one-way layout, launches with no value left out."""
    return [v for v in values.values() if v]


def components(groups: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Launch and block terms of one-way random-effects ANOVA (method of moments) on ln values.

    With k launches, n_i blocks in launch i, N = sum n_i, launch means m_i and grand mean m:
    MSB = sum n_i (m_i - m)^2 / (k - 1), MSW = sum_i sum_j (y_ij - m_i)^2 / (N - k),
    n0 = (N - sum n_i^2 / N) / (k - 1); block variance = MSW, launch variance = max(0, (MSB - MSW) / n0).
    `sd_launch_means`: the plain sd of the k launch means (which still holds MSW / n of block noise)."""
    groups = [list(g) for g in groups if g]
    k, n_total = len(groups), sum(len(g) for g in groups)
    means = [statistics.fmean(g) for g in groups]
    out: dict[str, Any] = {
        "launches": k,
        "runs": n_total,
        "geo_mean": math.exp(statistics.fmean(y for g in groups for y in g)) if n_total else None,
        "sd_launch": None,
        "df_launch": k - 1 if k else 0,
        "sd_block": None,
        "df_block": n_total - k,
        "sd_launch_means": statistics.stdev(means) if k > 1 else None,
    }
    if n_total > k:
        msw = sum((y - m) ** 2 for g, m in zip(groups, means, strict=True) for y in g) / (n_total - k)
        out["sd_block"] = math.sqrt(msw)
        if k > 1:
            grand = statistics.fmean(y for g in groups for y in g)
            msb = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means, strict=True)) / (k - 1)
            n0 = (n_total - sum(len(g) ** 2 for g in groups) / n_total) / (k - 1)
            out["sd_launch"] = math.sqrt(max(0.0, (msb - msw) / n0))
    return out


def launch_key(run: dict[str, Any]) -> tuple[Any, ...]:
    """One launch: its file (`source`, set when files are pooled), lever and launch number."""
    return (run.get("source", 0), run["lever"], run["launch"])


def reader_groups(runs: Sequence[dict[str, Any]], lever: str, reader: str) -> list[list[float]]:
    """ln of one reader's figure for `lever`, grouped by launch."""
    values: dict[Any, list[float]] = {}
    for r in runs:
        if r["lever"] == lever and (v := figure_of(r, reader)):
            values.setdefault(launch_key(r), []).append(math.log(v))
    return by_launch(values)


def same_slice_launch_sd(runs: Sequence[dict[str, Any]], lever: str, reader: str) -> tuple[float | None, int]:
    """(sd, df) of ln tok/s between launches on the same prompt slice read by the same client: the
    launch term as `vllm bench serve` on the same prompts sees it. The one-way components above put
    slice content in the block term (a launch's blocks are different slices, slice 0 holds short
    outputs), and launch means differ by which client took which slice; this pools, over slices, the
    variance across the launches that ran that slice with this reader (df = sum of launches - 1)."""
    by_slice: dict[Any, list[float]] = {}
    for r in runs:
        mine = r["lever"] == lever and r.get("client") == reader_client(reader) and r.get("slice") is not None
        if mine and (v := figure_of(r, reader)):
            by_slice.setdefault(r["slice"], []).append(math.log(v))
    squares, df = 0.0, 0
    for values in by_slice.values():
        if len(values) > 1:
            mean = statistics.fmean(values)
            squares += sum((v - mean) ** 2 for v in values)
            df += len(values) - 1
    return (math.sqrt(squares / df), df) if df else (None, 0)


def reader_client(reader: str) -> str:
    """The client whose runs a reader's figure comes from (the window is the harness's)."""
    return "bench" if reader == "bench" else "harness"


def summary(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per setting, lever and reader, in the order they first appear."""
    rows = []
    keys = dict.fromkeys((r["setting"], r["lever"]) for r in runs)
    for setting, lever in keys:
        mine = [r for r in runs if r["setting"] == setting]
        for reader in FIGURES:
            groups = reader_groups(mine, lever, reader)
            if groups:
                same, df = same_slice_launch_sd(mine, lever, reader)
                rows.append({"setting": setting, "lever": lever, "reader": reader, **components(groups),
                             "sd_launch_same_slice": same, "df_launch_same_slice": df})  # fmt: skip
    return rows


def runs_by_pair(runs: Sequence[dict[str, Any]], setting: str, lever: str, reader: str) -> dict[tuple, float]:
    """One setting's runs of `lever` by (client, slice, launch number): one reader's figure each. A key
    held by several runs (pooled calls that each began at launch 1 under this setting) has no one
    partner: it is left out, not paired with whichever run came last."""
    found: dict[tuple, list[float]] = {}
    for r in runs:
        if r["setting"] == setting and r["lever"] == lever and (v := figure_of(r, reader)):
            found.setdefault((r.get("client"), r.get("slice"), r["launch"]), []).append(v)
    return {key: values[0] for key, values in found.items() if len(values) == 1}


def level_ratios(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each later setting's throughput over the first setting's, per lever and reader: runs paired by
    client, slice and launch number (the ABBA order gives each launch number one launch per setting,
    and launch numbers go on across calls), the geometric mean of the pairs' ratios with a 90 %
    t-interval over them. A level is not a spread: a setting that frees the engine's cores can move a
    lever's throughput a long way and its launch sd hardly at all. The interval takes each pair as one
    draw, though a launch number's pairs (NOISE_ROUNDS slices per reader) share their two launches: it
    is not the by-launch interval the tune judges with (analysis.decision.judge_by_launch), and the
    records give that one beside it."""
    settings = list(dict.fromkeys(r["setting"] for r in runs))
    rows: list[dict[str, Any]] = []
    for lever in dict.fromkeys(r["lever"] for r in runs):
        for other in settings[1:]:
            for reader in FIGURES:
                first = runs_by_pair(runs, settings[0], lever, reader)
                then = runs_by_pair(runs, other, lever, reader)
                logs = [math.log(then[key] / first[key]) for key in first if key in then]
                if len(logs) < 2:
                    continue
                mean = statistics.fmean(logs)
                half = t_quantile(0.95, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
                rows.append({"lever": lever, "setting": other, "over": settings[0], "reader": reader,
                             "pairs": len(logs), "ratio": math.exp(mean), "lo": math.exp(mean - half),
                             "hi": math.exp(mean + half)})  # fmt: skip
    return rows


# --- the table -----------------------------------------------------------------------------------


def pct(sd: float | None, df: int) -> str:
    return "-" if sd is None else f"{100 * sd:.1f} ({df})"


def number(value: float | None, spec: str, scale: float = 1.0) -> str:
    """`value` times `scale` formatted, or '-' where a launch did not record it (older records)."""
    return "-" if value is None else format(scale * value, spec)


def markdown(
    rows: Sequence[dict[str, Any]], launches: Sequence[dict[str, Any]], levels: Sequence[dict[str, Any]] = ()
) -> str:
    """The components table, a line per launch (ready seconds, cache state, GC pauses), then each later
    setting's level over the first (level_ratios) where the runs hold two settings."""
    lines = [
        "| setting | lever | reader | launches | runs | tok/s (geo mean) | sd launch % (df) "
        "| sd block % (df) | sd of launch means % | sd launch, same slice % (df) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        means = "-" if r["sd_launch_means"] is None else f"{100 * r['sd_launch_means']:.1f}"
        lines.append(
            f"| {r['setting']} | {r['lever']} | {READERS[r['reader']]} | {r['launches']} | {r['runs']} | "
            f"{r['geo_mean']:,.1f} | {pct(r['sd_launch'], r['df_launch'])} | "
            f"{pct(r['sd_block'], r['df_block'])} | {means} | "
            f"{pct(r.get('sd_launch_same_slice'), r.get('df_launch_same_slice', 0))} |"
        )
    lines += ["", "| setting | lever | launch | ready s | cache MB before | GC pauses (ms) | pinned "
              "| ITL ms (blocks) | steal % (max) | CPU MHz | probe ms | EngineCore CPU ms/ktok "
              "| its core wait % |"]  # fmt: skip
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for x in launches:
        cache_mb = sum(x["cache_bytes_before"].values()) / 1e6
        gc_text = "-" if x["gc_pauses"] is None else f"{x['gc_pauses']} ({x['gc_pause_ms']:.1f})"
        lines.append(
            f"| {x['setting']} | {x['lever']} | {x['launch']} | {x['ready_s']:.0f} | {cache_mb:,.1f} | "
            f"{gc_text} | {x['placement']['engine_cpus'] or x['placement']['note']} | "
            f"{number(x.get('mean_itl_ms'), '.3f')} | {number(x.get('steal_share_max'), '.2f', 100)} | "
            f"{number(x.get('cpu_mhz'), ',.0f')} | {number(x.get('probe_ms'), '.2f')} | "
            f"{number(x.get('core_cpu_ms_per_ktok'), ',.1f')} | "
            f"{number(x.get('core_wait_share'), '.1f', 100)} |"
        )
    if levels:
        lines += ["", "| lever | setting | over | reader | pairs | tok/s ratio (geo mean) | 90 % interval |"]
        lines.append("|---|---|---|---|---|---|---|")
        lines += [
            f"| {x['lever']} | {x['setting']} | {x['over']} | {READERS[x['reader']]} | {x['pairs']} | "
            f"{x['ratio']:.3f} | [{x['lo']:.3f}, {x['hi']:.3f}] |"
            for x in levels
        ]
    return "\n".join(lines) + "\n"


# --- what a launch records -----------------------------------------------------------------------


def smi_clocks() -> list[dict[str, Any]] | None:
    """The same clocks from nvidia-smi, for a machine without nvidia-ml-py (the device's wheels lack it)."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = "index,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem"
    out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=30).stdout  # fmt: skip
    keys = ("index", "sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "max_mem_clock_mhz")
    rows = [line.split(",") for line in out.splitlines() if line.strip()]
    return [
        {k: int(v) if v.strip().isdigit() else None for k, v in zip(keys, row, strict=False)} for row in rows
    ]


def gpu_clocks() -> list[dict[str, Any]] | None:
    """SM/memory clocks (current and max, MHz) of the visible GPUs; None without a GPU."""
    nvml = load_nvml()
    return smi_clocks() if nvml is None else [gpu_entry(nvml, i) for i in visible_indices(nvml)]


def dir_bytes(path: Path) -> int:
    """Bytes of the files under `path` (0 where it does not exist)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def gc_pauses(log: Path) -> tuple[int, float] | None:
    """(collections, total ms) that VLLM_GC_DEBUG logged in an engine log; None where none was logged."""
    found = [float(m.group(1)) for m in GC_LINE.finditer(log.read_text(errors="replace"))]
    return (len(found), sum(found)) if found else None


def engine_env(base: dict[str, str], setting: Setting, cold_dir: Path) -> dict[str, str]:
    """The engine's environment under `setting`: its knobs, and empty caches under cold_dir if asked."""
    env = {**base, **setting.engine_env}
    if setting.cold_cache:
        env.update({name: str(cold_dir / name.lower()) for name in CACHE_ENV})
    return env


def cpu_mhz() -> float | None:
    """Mean current clock of the host's cores (MHz, /proc/cpuinfo); None where it is not reported."""
    try:
        found = [float(m.group(1)) for m in CPU_MHZ.finditer(Path("/proc/cpuinfo").read_text())]
    except OSError:
        return None
    return round(statistics.fmean(found), 1) if found else None


def host_reading(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, Any]:
    """The host over one block: steal and busy shares of all cores (proc_sample's reading of the
    /proc/stat deltas). A van engine of SmolLM2 is host-bound: a launch-wide slowdown that both readers
    share could be the host's (a neighbour's steal, a slower core), which these columns tell apart."""
    delta = {name: [a - b for a, b in zip(after[name], before[name], strict=True)]
             for name in after if name in before}  # fmt: skip
    summary = proc_sample.host_summary(delta)
    return {key: summary[key] for key in ("steal_share", "busy_share") if key in summary}


def probe_loop(n: int) -> int:
    """The host probe's fixed work: integer arithmetic in the interpreter, as the engine's host path is."""
    acc = 0
    for i in range(n):
        acc = (acc + i * 7) % 1_000_003
    return acc


def host_probe_ms(
    cpus: Sequence[int] | None, loops: int = PROBE_LOOPS, repeats: int = PROBE_REPEATS
) -> float:
    """The fastest of `repeats` timings (ms) of a fixed interpreter loop, on the engine's cores while it
    is idle between blocks. The lent VM shows 16 flat vCPUs (2026-12-07: one socket, one NUMA node, one
    thread a core, a fixed 2,100 MHz) and hides what shares their physical cores; a launch
    whose cores run slower for the host's own reasons slows this loop too, which steal does not show."""
    saved = os.sched_getaffinity(0)
    try:
        if cpus:
            os.sched_setaffinity(0, set(cpus))
        times = []
        for _ in range(repeats):
            start_ns = time.perf_counter_ns()
            probe_loop(loops)
            times.append((time.perf_counter_ns() - start_ns) / 1e6)
        return round(min(times), 3)
    finally:
        os.sched_setaffinity(0, saved)


def engine_usage(
    before: dict[str, dict[int, ThreadCounters]],
    after: dict[str, dict[int, ThreadCounters]],
    wall_s: float,
    output_tokens: int,
) -> dict[str, dict[str, float | None]]:
    """Per process group (workers.signals.host.HostSampler's: api_server, engine_core, client) over one
    block: CPU ms per 1,000 output tokens (the host work done for its tokens), the share of its runnable
    time it waited for a core, and involuntary switches a second.
    A slow launch that spends more CPU per token does more work (or runs on slower cores: see the probe);
    one that spends the same CPU over a longer wall waits (for the GPU, a lock, or a core: wait share)."""
    out: dict[str, dict[str, float | None]] = {}
    for role, end in after.items():
        used = usage(before.get(role, {}), end, wall_s)
        out[role] = {
            "cpu_ms_per_ktok": round(1e6 * used.cpu_s / output_tokens, 2) if output_tokens else None,
            "wait_share": None if used.wait_share is None else round(used.wait_share, 4),
            "nivcsw_per_s": None if used.nivcsw_per_s is None else round(used.nivcsw_per_s, 1),
        }
    return out


def measured_run(
    slot: Slot,
    target: Target,
    bench_args: dict[str, Any],
    load: Any,
    prompts: list[Prompt],
    tmp: Path,
    processes: Sequence[EngineProcess] = (),
) -> dict[str, Any]:
    """crosscheck_levers' run, between two readings of the GPU clocks, of the host's cores and of the
    engine's threads, after a host probe on the engine's cores (the EngineCore's, else any)."""
    core = [p for p in processes if p.role == "EngineCore"]
    probe_ms = host_probe_ms(sorted(affinity(core[0].pid)) if core else None)
    before, cpu_before, mhz_before = gpu_clocks(), proc_sample.read_cpu_times(), cpu_mhz()
    with HostSampler(processes) as sampler:
        row = run_one(slot, target, bench_args, load, prompts, tmp)
    wall_s = (sampler.end_ns - sampler.start_ns) / 1e9
    threads = engine_usage(sampler.before, sampler.after, wall_s, row["output_tokens"])
    host = host_reading(cpu_before, proc_sample.read_cpu_times())
    return {**row, "gpu_clocks_before": before, "gpu_clocks_after": gpu_clocks(),
            "host": {**host, "cpu_mhz_before": mhz_before, "cpu_mhz_after": cpu_mhz(), "probe_ms": probe_ms},
            "engine_threads": threads}  # fmt: skip


def run_launch(
    config: Any,
    slot_list: list[Slot],
    setting: Setting,
    head: list[Prompt],
    slices: list[list[Prompt]],
    tmp: Path,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One fresh launch of one lever under `setting`: warm-up, then its blocks; (rows, launch record)."""
    lever, launch = slot_list[0].lever, slot_list[0].launch
    log = tmp / f"engine-{lever}-{launch}.log"
    engine, spec, endpoint = grid_engine(config, log)
    engine.env = engine_env(engine.env, setting, tmp / f"cold-{lever}-{launch}")
    cache_before = {name: dir_bytes(Path(engine.env[name])) for name in CACHE_ENV}
    load = config.load
    warmup_n, warm_load = warmup_plan(setting, load)
    rows = []
    with engine:
        assert engine.ready_s is not None
        print(f"{lever} launch {launch}: engine ready in {engine.ready_s:.0f} s ({','.join(setting.names)})")
        processes = engine_processes(engine)
        pins = apply_pins(processes, setting.pin)
        target, bench_args = readers(spec, endpoint, project_path(config.paths.models_dir))
        if warmup_n:
            harness_run(target, head[:warmup_n], warm_load)  # not counted: prompts no block measures
        for slot in slot_list:
            if setting.client_gc_freeze:
                gc.collect()
                gc.freeze()  # the client's heap so far is left out of its collections during the block
            rows.append(
                measured_run(slot, target, bench_args, load, slices[slot.slice_index], tmp, processes)
            )
    pauses = gc_pauses(log)
    record = {
        "setting": ",".join(setting.names),
        "lever": lever,
        "launch": launch,
        "ready_s": engine.ready_s,
        "cache_bytes_before": cache_before,
        "gc_pauses": pauses[0] if pauses else None,
        "gc_pause_ms": pauses[1] if pauses else None,
        "placement": {
            "mode": setting.pin,
            "engine_cpus": cpu_list(pins.engine) or None,
            "client_cpus": cpu_list(pins.client) or None,
            "note": pins.reason or None,
        },
        **launch_host(rows),
    }
    resolved = resolved_values(setting, warmup_n, warm_load)
    return [{**row, "setting": record["setting"], "resolved": resolved} for row in rows], record


def launch_host(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A launch's blocks summed up: their mean inter-token gap (a launch-wide engine slowdown shows in
    every block of the launch, whichever client reads it), the most steal any block saw, and the
    host's mean core clock over the blocks."""
    itls = [r["mean_itl_ms"] for r in rows if r.get("mean_itl_ms")]
    hosts = [r.get("host") or {} for r in rows]
    steals = [h["steal_share"] for h in hosts if h.get("steal_share") is not None]
    mhz = [h[k] for h in hosts for k in ("cpu_mhz_before", "cpu_mhz_after") if h.get(k)]
    probes = [h["probe_ms"] for h in hosts if h.get("probe_ms")]
    core = [(r.get("engine_threads") or {}).get("engine_core") or {} for r in rows]
    core_cpu = [c["cpu_ms_per_ktok"] for c in core if c.get("cpu_ms_per_ktok")]
    core_wait = [c["wait_share"] for c in core if c.get("wait_share") is not None]
    return {
        "mean_itl_ms": statistics.fmean(itls) if itls else None,
        "steal_share_max": max(steals) if steals else None,
        "cpu_mhz": statistics.fmean(mhz) if mhz else None,
        "probe_ms": statistics.fmean(probes) if probes else None,
        "core_cpu_ms_per_ktok": statistics.fmean(core_cpu) if core_cpu else None,
        "core_wait_share": statistics.fmean(core_wait) if core_wait else None,
    }


def resolved_values(setting: Setting, warmup_n: int, warmup_load: Any) -> dict[str, Any]:
    """What the setting came to on this launch, carried by each of its blocks."""
    return {
        "warmup_requests": warmup_n,
        "warmup_ignore_eos": warmup_load.ignore_eos,
        "pin": setting.pin,
        "engine_env": setting.engine_env,
        "client_env": setting.client_env,
        "client_gc_freeze": setting.client_gc_freeze,
        "cold_cache": setting.cold_cache,
    }


# --- entry point ---------------------------------------------------------------------------------


def out_paths() -> tuple[Path, Path] | None:
    """(json, md) under NOISE_JSON's stem or $OUT; None: print only."""
    if os.environ.get("NOISE_JSON"):
        path = Path(os.environ["NOISE_JSON"])
    elif os.environ.get("OUT"):
        path = Path(os.environ["OUT"]) / "launch-noise.json"
    else:
        return None
    return path, path.with_suffix(".md")


def write(result: dict[str, Any], paths: tuple[Path, Path] | None) -> str:
    """The summary recomputed, both files rewritten; the Markdown returned."""
    result["summary"] = summary(result["runs"])
    result["levels"] = level_ratios(result["runs"])
    text = markdown(result["summary"], result["launches"], result["levels"])
    if paths is not None:
        paths[0].write_text(json.dumps(result, indent=1))
        paths[1].write_text(text)
    return text


def replay(paths: Sequence[Path]) -> None:
    """`--table FILE...`: the table again from several launch-noise.json, their launches kept apart."""
    runs, launches = [], []
    for i, path in enumerate(paths):
        result = json.loads(path.read_text())
        runs += [{**r, "source": i} for r in result["runs"]]
        launches += result["launches"]
    print(f"{len(runs)} runs from {', '.join(str(p) for p in paths)}\n")
    print(markdown(summary(runs), launches, level_ratios(runs)))


def configs_for(levers: Sequence[str], k: int, base: list[str]) -> dict[str, Any]:
    """Each lever's config, checked to be one engine: a bad lever stops before the first launch."""
    configs = {lever: to_config(compose_config(lever_overrides(base, lever, k))) for lever in levers}
    for lever, config in configs.items():
        if len(group_by_engine(expand(config))) != 1:
            raise SystemExit(f"launch noise: {lever} at K={k} expands to more than one engine")
    return configs


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--table":
        replay([Path(a) for a in sys.argv[2:]])
        return
    settings = resolve_settings(os.environ.get("NOISE_SETTING", "base"))
    # Before anything reads them: tokenizers' and rayon's pools size themselves once per process, so a
    # client knob holds for the whole call (resolve_settings refuses it beside a setting without it).
    os.environ.update(settings[0].client_env)
    levers = [
        x.strip() for x in os.environ.get("NOISE_LEVERS", "van,suffix,bestkpad").split(",") if x.strip()
    ]
    k = int(os.environ.get("NOISE_K", "8"))
    rounds = int(os.environ.get("NOISE_ROUNDS", "2"))
    launches = int(os.environ.get("NOISE_LAUNCHES", "2"))
    first = int(os.environ.get("NOISE_FIRST_LAUNCH", "1"))
    budget_s = float(os.environ["NOISE_BUDGET_S"]) if os.environ.get("NOISE_BUDGET_S") else None
    start_s = float(os.environ.get("NOISE_START_S", "90"))  # an engine start the budget expects
    base = os.environ.get("NOISE_OVERRIDES", CPU_OVERRIDES).split()
    configs = configs_for(levers, k, base)
    config = configs[levers[0]]
    load = config.load
    corpus = group_by_engine(expand(config))[0].cells[0].corpus
    prompts = load_corpus(project_path(config.paths.data_dir) / corpus.path)
    head, slices = prompt_slices(prompts, warmup_head(load), load.num_prompts, 2 * rounds)
    paths = out_paths()
    result: dict[str, Any] = {
        "setting": ";".join(",".join(x.names) for x in settings),
        "levers": levers,
        "k": k,
        "rounds": rounds,
        "launches_per_lever": launches,
        "overrides": base,
        "load": {key: getattr(load, key) for key in LOAD_KEYS},
        "runs": [],
        "launches": [],
    }
    write(result, paths)
    with tempfile.TemporaryDirectory() as tmp_s:

        def one_launch(arm: str, launch: int) -> float:
            t0 = time.perf_counter()
            lever, setting = arms[arm]
            slot_list = slots(lever, launch, rounds)
            rows, record = run_launch(configs[lever], slot_list, setting, head, slices, Path(tmp_s))
            record["wall_s"] = time.perf_counter() - t0
            result["runs"] += rows
            result["launches"].append(record)
            write(result, paths)
            return record["wall_s"] - record["ready_s"]

        arms = arm_table(levers, settings)
        run_within_budget(launch_order(list(arms), launches, first), budget_s, start_s, one_launch)
    print("\n" + write(result, paths))
    if paths is not None:
        print(f"every figure: {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
