"""Run one engine group: start the engine, drive each cell's load, store the results.

Runs inside a Ray actor (grid/schedule.py) but imports no Ray itself, so it can
be tested and debugged as a plain function. Failures come back as outcomes.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
import traceback
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.fs import StorePath, StoreRoot
from store.layout import MANIFEST, StoreLayout
from store.phases import PhaseBoard
from store.space import FULL, MIN_FREE_BYTES, STORE_UNUSABLE, store_problem, write_failure
from store.writer import utc_now, write_failed_attempt, write_ok_attempt
from vocab.cells import Cell, EngineSpec, draft_hook, drafts_from_history
from vocab.errors import EngineError, GridError
from vocab.groups import EngineGroup
from vocab.schema import EquivalenceConfig, GateConfig
from workers.engine import registry as engine_registry
from workers.engine.args import RESET_EXTENSION, launch_argv, launch_env, served_name
from workers.engine.log import read_effective_config
from workers.engine.process import LOG_TAIL_LINES, Engine, exit_description, log_tail, new_endpoint
from workers.engine.reset import ResetReport, hook_window_columns, read_hook_counters, reset_engine
from workers.engine.served import ServedPrompts
from workers.engine.tree import (
    API_SERVER,
    EngineProcess,
    death_line,
    http_errors,
    names,
    rejected_line,
    server_error_line,
)
from workers.load import windows
from workers.load.client import LoopLag, RequestRecord, Target, run_load, run_measured, run_sync
from workers.load.probe import ProbeError, ProbeRow, run_probe
from workers.load.prompts import (
    Prompt,
    cell_schedule,
    check_planned,
    corpus_file,
    distinct,
    probe_prompts,
    prompt_seed,
    read_corpus,
)
from workers.phases import PhaseClock
from workers.signals import cudagraph_log, dynk_log, metrics
from workers.signals.counters import ServerCounters, scrape
from workers.signals.gates import GateInputs, evaluate
from workers.signals.gpu_telemetry import GpuSampler
from workers.signals.host import NODE_CPUS, HostSampler, apply_pins, plan_columns
from workers.signals.server_load import LoadSample, ServerLoadSampler
from workers.signals.server_load import columns as server_load_columns


@dataclass(frozen=True)
class RunContext:
    """Where a worker reads inputs and writes results; the same on every node."""

    session_id: str
    store_root: Path
    cache_dir: Path
    models_dir: Path
    # A folder, or a URL every node reads one copy from (corpora fetched into cache_dir by content).
    data_dir: StoreRoot
    # Validity thresholds; they judge a cell, they do not change its measurement.
    gates: GateConfig = field(default_factory=GateConfig)
    # The Ray node this worker runs on (set by the actor; None outside Ray).
    node_id: str | None = None
    # Room the store needs before each engine start (run.min_store_free_mb).
    min_store_free_bytes: int = MIN_FREE_BYTES
    # Corpus name -> the sha256 the driver read before launch: a node that reads other bytes stops the cell.
    corpus_sha256: dict[str, str] = field(default_factory=dict)


# How long a failed cell waits for a dying engine to exit before blaming what failed instead.
ENGINE_EXIT_GRACE_S = 3.0
# Lines of the engine's log quoted in the error of a cell whose engine died.
DEATH_LOG_LINES = 5


OnStage = Callable[[str], None]


class CellStage:
    """What a cell was doing, for naming the stage in which its engine died; each change goes to
    `on_change` (the engine's phase file, store/phases.py, which the driver logs)."""

    def __init__(self, name: str = "start of the cell", on_change: OnStage | None = None) -> None:
        self._name = name
        self.on_change = on_change

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        if self.on_change is not None:
            self.on_change(value)


class EngineDied(EngineError):
    """A process of the engine (API server, EngineCore, a worker) ended while a cell was using it."""

    def __init__(self, lost: list[EngineProcess], seen: str = "") -> None:
        super().__init__(f"engine died: {names(lost)} gone")
        self.lost = lost
        # How the death showed in the cell's requests (`HTTP 500 to 16 of 24 requests`), if it did.
        self.seen = seen


class ServerFailed(EngineError):
    """The server answered requests with HTTP 5xx while all of its processes ran."""


class RequestsRejected(GridError):
    """The server refused the cell's requests (HTTP 4xx): its configuration, not a measurement."""


@dataclass(frozen=True)
class CellOutcome:
    """What became of one cell attempt; failures are data, never exceptions."""

    cell_key: str
    label: str
    attempt_id: str
    status: str  # "ok", "failed" or "interrupted"
    error: str | None = None
    output_tok_per_s: float | None = None
    engine_ready_s: float | None = None
    # The run cannot go on (the store cannot take results): the driver stops, no retry.
    stops_run: bool = False
    # An ok cell's validity verdict and its reasons (workers/signals/gates.py), for the driver's line.
    valid: bool | None = None
    invalid_reasons: str | None = None


def engine_base_env() -> dict[str, str]:
    """This process's environment minus what Ray sets for its own workers.

    Ray pins OMP_NUM_THREADS=1 in worker processes, which would starve the CPU
    engine's OpenMP kernels; engine.env may set it explicitly.
    """
    return {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}


def placement(ctx: RunContext) -> dict[str, Any]:
    """Where the cell ran: host, Ray node and the GPUs Ray assigned (CUDA_VISIBLE_DEVICES)."""
    return {
        "host": socket.gethostname(),
        "node_id": ctx.node_id,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def new_attempt_id(session_id: str) -> str:
    return f"{session_id}-{uuid.uuid4().hex[:8]}"


def engine_version(base_url: str, api_key: str) -> str | None:
    request = urllib.request.Request(base_url + "/version", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return str(json.loads(resp.read()).get("version"))
    except (OSError, ValueError):
        return None


def streamed_tokens(record: RequestRecord) -> int | None:
    """Output tokens the client received, counted from the streamed token ids; None without them."""
    return None if record.chunk_tokens is None else int(sum(record.chunk_tokens))


def stream_checks(records: list[RequestRecord]) -> dict[str, int]:
    """Per request: do the streamed token ids add up to the server's usage.completion_tokens?"""
    done = metrics.ok(records)
    counts = [streamed_tokens(r) for r in done]
    return {
        "stream_usage_mismatches": sum(
            1 for r, n in zip(done, counts, strict=True) if n is not None and n != r.completion_tokens
        ),
        "requests_without_token_ids": sum(1 for n in counts if n is None),
    }


def summarize(
    records: list[RequestRecord],
    delta: ServerCounters,
    cpu_s: float,
    lag: LoopLag,
    concurrency: int,
    gates: GateConfig,
    server_load: list[LoadSample] | None = None,
    engine_wait_share: float | None = None,
) -> dict[str, Any]:
    """The cell's figures from its measured requests, the server's counter deltas and its load gauges."""
    done = metrics.ok(records)
    window = windows.steady_window(records, concurrency)
    wall_s = (max(r.end_ns for r in records) - min(r.send_ns for r in records)) / 1e9 if records else 0.0
    output_tokens = sum(r.completion_tokens or 0 for r in done)
    # Every streamed token, errors included: the server counted those too.
    streamed_total = sum(streamed_tokens(r) or 0 for r in records)
    checks = stream_checks(records)
    load_columns: dict[str, Any] = server_load_columns(
        server_load or [], window.start_ns if window else None, window.end_ns if window else None
    )
    figures: dict[str, Any] = {
        "n_requests": len(records),
        "n_ok": len(done),
        "n_errors": len(records) - len(done),
        "output_tokens": output_tokens,
        # Headline: tokens that arrived inside the steady-state window / its length.
        "output_tok_per_s": windows.window_output_tok_per_s(records, window) if window else None,
        # What `vllm bench serve` reports: completed tokens / first send to last completion.
        "bench_output_tok_per_s": metrics.whole_run_output_tok_per_s(records),
        "window_start_ns": window.start_ns if window else None,
        "window_end_ns": window.end_ns if window else None,
        "window_s": window.length_s if window else None,
        "window_requests_completed": windows.completed_in_window(records, window) if window else 0,
        # The client's own in-flight count: held by construction in a closed loop, kept for reference.
        "window_mean_in_flight": windows.mean_in_flight(records, window) if window else None,
        **load_columns,
        "streamed_output_tokens": streamed_total,
        **checks,
        "chunk_tokens_exact": all(r.chunk_tokens is not None for r in done),
        "ttft_ms_p50": metrics.median_or_none([metrics.ttft_ms(r) for r in done]),
        "tpot_ms_p50": metrics.median_or_none([metrics.tpot_ms(r) for r in done]),
        # Per engine step as a stream sees it: its length and the tokens it brought (workers/load/windows.py).
        "chunk_gap_ms_p50": windows.window_chunk_gap_ms_p50(records, window) if window else None,
        "tokens_per_chunk": windows.window_tokens_per_chunk(records, window) if window else None,
        "acceptance_rate": metrics.acceptance_rate(delta.spec_accepted_tokens, delta.spec_draft_tokens),
        "draft_tokens_per_draft": metrics.draft_tokens_per_draft(delta.spec_draft_tokens, delta.spec_drafts),
        "client_cpu_s": cpu_s,
        "client_cpu_share": cpu_s / wall_s if wall_s else 0.0,
        "loop_lag_p99_ms": lag.p99_ms(),
        **delta.as_columns(),
    }
    verdict = evaluate(
        GateInputs(
            window_s=figures["window_s"],
            requests_in_window=figures["window_requests_completed"],
            errors=figures["n_errors"],
            server_running_mean=load_columns["srv_running_mean"],
            concurrency=concurrency,
            client_cpu_share=figures["client_cpu_share"],
            loop_lag_p99_ms=figures["loop_lag_p99_ms"],
            client_output_tokens=streamed_total,
            server_output_tokens=delta.generation_tokens,
            server_waiting_max=load_columns["srv_waiting_max"],
            server_preemptions=delta.preemptions,
            engine_wait_share=engine_wait_share,
            **checks,
        ),
        gates,
    )
    return {**figures, **verdict}


def log_lines_before_death(path: Path, lines: int = DEATH_LOG_LINES) -> str:
    """The last lines of an engine log that say something.

    Left out: blanks, HTTP access lines and the command line the log opens with (it holds the API key).
    """
    kept = [
        line.strip()[:300]
        for line in log_tail(path, 400).splitlines()
        if line.strip()
        and not line.startswith("$ ")
        and not (line.startswith("INFO:") and '" ' in line and "HTTP/1.1" in line)
    ]
    return " | ".join(kept[-lines:]) or "(empty)"


def engine_death(engine: Engine, lost: list[EngineProcess], stage: str, seen: str = "") -> str:
    """`engine died during the measured load: EngineCore (pid 12) gone, API server (pid 10) still up;
    last lines of its log: ...` (`engine exited (signal 9) during ...` when the API server went)."""
    code = engine.exit_code()
    root = engine.root() or EngineProcess(API_SERVER, 0, 0)
    line = death_line(lost, root, stage, None if code is None else exit_description(code))
    return (
        line
        + (f" ({seen})" if seen else "")
        + f"; last lines of its log: {log_lines_before_death(engine.log_path)}"
    )


def ensure_alive(engine: Engine) -> None:
    """Raise EngineDied at the end of a stage in which a process of the engine ended."""
    if lost := engine.lost():
        raise EngineDied(lost)


def check_answers(engine: Engine, records: list[RequestRecord], stage: str) -> None:
    """After a load: the engine whole, and no request the server failed (5xx) or refused (4xx).

    A dead process comes first, whatever the requests saw (a dead EngineCore
    shows as HTTP 500 and streams that end in an error while the API server
    runs on): a 5xx or an error inside a stream waits a moment for it to show.
    """
    statuses = [r.http_status for r in records]
    bodies = [r.error_message for r in records]
    failed = http_errors(statuses, bodies, 500)
    streams_failed = any(r.error_type == "server_error" for r in records)
    lost = engine.wait_lost(ENGINE_EXIT_GRACE_S) if failed or streams_failed else engine.lost()
    if lost:
        raise EngineDied(lost, f"HTTP {failed.status} to {failed.share()}" if failed else "")
    if failed:
        raise ServerFailed(server_error_line(failed, stage))
    if (refused := http_errors(statuses, bodies, 400)) is not None:
        raise RequestsRejected(rejected_line(refused, stage))


def run_cell(
    cell: Cell,
    engine: Engine,
    ctx: RunContext,
    served: ServedPrompts | None = None,
    stage: CellStage | None = None,
) -> tuple[list[RequestRecord], dict[str, Any], list[ProbeRow]]:
    """Warm up, measure one cell on a running engine, then run the logprob probe.

    `served` holds what this engine launch was sent before the cell; the cell's
    own prompts are added to it as they go out, whatever becomes of the cell.
    `stage` is kept up to date, so a failure can say when the engine died.
    """
    served = served if served is not None else ServedPrompts()
    stage = stage if stage is not None else CellStage()
    clock = PhaseClock()
    planned = ctx.corpus_sha256.get(cell.corpus.name)
    corpus_path = corpus_file(ctx.data_dir, cell.corpus.path, ctx.cache_dir, planned)
    corpus = read_corpus(corpus_path, cell.corpus.format, cell.corpus.skip_bad_rows)
    check_planned(corpus, cell.corpus.name, corpus_path, planned)
    plan = cell_schedule(cell, corpus, cell.load.allow_repeats)
    reuse = served.measured_reuse(plan.warmup, plan.measured, cell.corpus.name, cell.repeat)
    endpoint = engine.endpoint
    target = Target(endpoint.base_url, endpoint.api_key, served_name(cell.engine_spec), cell.corpus.endpoint)
    served.add(plan.warmup, cell.corpus.name, cell.repeat)
    # The engine's tree and this client on disjoint cores where the node has enough (workers/signals/host.py).
    processes = engine_processes(engine)
    pins = apply_pins(processes, cell.load.pin_cpus)
    stage.name = "warm-up"
    warmup = run_sync(run_load(target, plan.warmup, cell.load, phase="warmup")) if plan.warmup else []
    check_answers(engine, warmup, "warm-up")
    clock.lap("warmup")
    tables = logs_cudagraph_tables(cell.engine_spec)
    flush_s = cudagraph_log.flush_timeout_s(engine.env)
    log_offset = cudagraph_log.log_size(engine.log_path)
    if tables and plan.warmup:
        # Warm-up steps go into a table before this cell's share of the log begins.
        log_offset = cudagraph_log.wait_for_table(engine.log_path, log_offset, flush_s)
    # dynk's warm-up totals land in its log before the window opens (returns at once for other levers).
    dynk_offset = dynk_log.wait_for_idle_line(engine.log_path)
    # The plugin's own counters around the window, through the reset extension where it is loaded.
    hook = plugin_hook(cell, engine)
    hooks_before = read_hook_counters(endpoint.base_url, endpoint.api_key) if hook else None
    # The measured load, from the counters read before it to the one after it.
    stage.name = "measured load"
    before = scrape(endpoint.base_url, endpoint.api_key)
    served.add(plan.measured, cell.corpus.name, cell.repeat)
    clock.lap("settle")
    cpu_start_s = time.process_time()
    with (
        GpuSampler() as gpu,
        ServerLoadSampler(endpoint.base_url, endpoint.api_key) as server_load,
        HostSampler(processes) as host,
    ):
        records, lag = run_sync(run_measured(target, plan.measured, cell.load, phase="measure"))
    cpu_s = time.process_time() - cpu_start_s
    check_answers(engine, records, stage.name)
    clock.lap("measure")
    measured_end = cudagraph_log.log_size(engine.log_path)
    delta = scrape(endpoint.base_url, endpoint.api_key).minus(before)
    hooks_after = read_hook_counters(endpoint.base_url, endpoint.api_key) if hook else None
    stage.name = "drain after the measured load"
    summary = summarize(
        records,
        delta,
        cpu_s,
        lag,
        cell.load.concurrency,
        ctx.gates,
        server_load.samples,
        engine_wait_share=host.engine_wait_share(),
    )
    summary.update(host.columns())
    summary.update(plan_columns(pins))
    # Measured requests whose prompt this engine had been sent before (0 unless load.allow_repeats).
    summary["prompts_repeated"] = reuse.total
    summary.update(reuse.as_columns())
    summary["prompt_seed"] = prompt_seed(cell.load.seed, cell.repeat)
    summary["prompts_distinct_available"] = len(distinct(corpus.prompts))
    summary["corpus_sha256"] = corpus.sha256  # the bytes this cell's prompts came from
    # What the engine was sent, by content hash, so a reader can check the reuse counts.
    summary["warmup_prompt_hashes"] = json.dumps([p.content_hash for p in plan.warmup])
    summary["measured_prompt_hashes"] = json.dumps([p.content_hash for p in plan.measured])
    # Rows of a bring-your-own trace left out (corpus.skip_bad_rows): never a silent drop.
    summary["corpus_skipped_rows"] = corpus.skipped_rows
    summary["corpus_skip_reasons"] = "; ".join(corpus.skip_reasons) or None
    summary.update(gpu.columns(summary["output_tokens"]))
    # The first table logged after the measured requests holds their last steps (the probe comes after).
    log_end = cudagraph_log.wait_for_table(engine.log_path, measured_end, flush_s) if tables else None
    summary.update(cudagraph_log.columns_since(engine.log_path, log_offset, log_end))
    summary.update(hook_window_columns(hook, hooks_before, hooks_after))
    # On a shared launch the dynk hook's lines go on while other levers run: only a dynk cell reads them.
    if cell.engine_spec.lever.requires_plugin == "dynk":
        summary.update(dynk_log.columns_when_idle(engine.log_path, dynk_offset))
    else:
        summary.update(dynk_log.EMPTY_COLUMNS)
    clock.lap("drain")
    stage.name = "logprob probe"
    chosen = probe_prompts(corpus.prompts, ctx.gates.equivalence.probe_prompts)
    served.add(chosen, cell.corpus.name, cell.repeat)
    probe, probe_columns = run_cell_probe(target, chosen, ctx.gates.equivalence)
    ensure_alive(engine)
    summary["probe_prompt_hashes"] = json.dumps([p.content_hash for p in chosen])
    summary.update(probe_columns)
    clock.lap("probe")
    summary.update(clock.columns())
    return records, summary, probe


def engine_processes(engine: Engine) -> list[EngineProcess]:
    """The API server and the processes below it that were the engine when it became ready."""
    root = engine.root()
    return ([root] if root else []) + [info for info, _ in engine.watched]


def suffix_cache_columns(spec: EngineSpec, fresh: bool) -> dict[str, Any]:
    """The suffix-decoding cache this cell drafted from: the settings passed and whether it started empty.

    Settings not passed are vLLM's defaults (SpeculativeConfig.suffix_decoding_*,
    e.g. max_cached_requests 10000 in vLLM 0.26-0.32): the JSON holds only what
    this launch set, beside the engine version that fixes the rest.
    """
    if not drafts_from_history(spec.lever):
        return {"suffix_cache_fresh": None, "suffix_cache_settings": None}
    settings = {k: v for k, v in spec.lever.speculative_extra.items() if k.startswith("suffix_decoding_")}
    return {"suffix_cache_fresh": fresh, "suffix_cache_settings": json.dumps(settings, sort_keys=True)}


def reset_columns(reset: ResetReport | None, relaunched: bool = False) -> dict[str, Any]:
    """What the reset before this cell found and left; engine_relaunched when it failed (docs/reset.md)."""
    columns = ResetReport.empty_columns() if reset is None else reset.columns()
    return {**columns, "engine_relaunched": None if reset is None else relaunched or not reset.ok}


def logs_cudagraph_tables(spec: EngineSpec) -> bool:
    """Whether this launch logs vLLM's CUDA-graph tables (`--cudagraph-metrics` in its arguments)."""
    args = [*spec.engine.extra_args, *spec.model.extra_args, *spec.lever.extra_args]
    return "--cudagraph-metrics" in args and not spec.engine.enforce_eager


def run_cell_probe(
    target: Target, chosen: list[Prompt], cfg: EquivalenceConfig
) -> tuple[list[ProbeRow], dict[str, Any]]:
    """The logprob probe on the chosen prompts, after the measurement (workers/load/probe.py).

    A probe that fails leaves the measurement standing: the error is a column,
    and the equivalence gate then has no distribution to judge.
    """
    if not chosen:
        return [], {"probe_prompts": 0, "probe_positions": 0, "probe_error": None}
    try:
        rows = run_probe(target.base_url, target.api_key, target.model, chosen, cfg.probe_top_k)
    except ProbeError as exc:
        return [], {"probe_prompts": 0, "probe_positions": 0, "probe_error": str(exc)[:500]}
    return rows, {"probe_prompts": len(chosen), "probe_positions": len(rows), "probe_error": None}


def plugin_hook(cell: Cell, engine: Engine) -> str | None:
    """The plugin hook (kpad, dynk) whose counters the cell reads through the reset extension, or
    None: a lever without a plugin, or an engine launched without the extension."""
    # The plugin the lever needs names its hook, on a shared launch or one of its own alike
    # (reset_ext.hook_counters keys both by it), as the dynk columns below are chosen.
    hook = cell.engine_spec.lever.requires_plugin
    return hook if hook in ("kpad", "dynk") and RESET_EXTENSION in engine.argv else None


def missing_plugin(group: EngineGroup, log_path: Path) -> str | None:
    """Why a lever's plugin is not active in the started engine, or None when it is.

    vLLM logs a plugin that fails to import and starts anyway, so a lever
    would silently measure plain suffix decoding. The plugin logs
    `lever_plugins <name>: wrapped ...` once it is in place (lever_plugins/proposer_patch.py);
    on a shared launch that is the switch (lever_plugins/switch.py), whatever its levers.
    """
    spec = group.spec
    name = "switch" if group.switches_hook else spec.lever.requires_plugin
    if name is None:
        return None
    text = log_path.read_text(errors="replace") if log_path.is_file() else ""
    if f"lever_plugins {name}: wrapped" in text:
        return None
    return (
        f"lever '{spec.lever.name}' needs the vLLM plugin '{name}', but the engine started without it "
        "(no 'wrapped' line in its log); install this project into the engine's Python "
        "(pip install -e .) so vLLM finds its `vllm.general_plugins` entry point"
    )


@dataclass
class LaunchState:
    """What one engine launch has been through, as the cells of its group run on it."""

    ready_s: float
    # Corpora its cells sent since the engine started (or was relaunched), reset or not.
    earlier: list[str] = field(default_factory=list)
    # Prompts sent since the engine was last fresh (started, relaunched or reset).
    served: ServedPrompts = field(default_factory=ServedPrompts)
    first_index: int = 0  # the group's first cell on this engine (a relaunch starts a new one)


def ready_for_cell(
    group: EngineGroup, index: int, engine: Engine, launch: LaunchState, board: PhaseBoard
) -> dict[str, Any]:
    """Bring the engine to the state cell `index` starts from; return the cell's history columns.

    A drafting engine that served earlier cells is reset to fresh (docs/reset.md);
    a shared launch is reset before every cell, selecting the cell's draft hook
    (lever_plugins/switch.py). A reset that fails relaunches the engine (and
    selects the hook on it); EngineError when that fails too.
    """
    cell = group.cells[index]
    lever = cell.engine_spec.lever
    endpoint = engine.endpoint
    hook = draft_hook(lever) if group.switches_hook else None
    reset, relaunched = None, False
    if group.resets and (launch.earlier or hook is not None):
        reset = reset_engine(endpoint.base_url, endpoint.api_key, hook=hook)
    if reset is not None and not reset.ok:
        print(f"lever-grid: reset failed ({reset.problem}); relaunching the engine", file=sys.stderr)
        board.say(cell.label, "engine relaunch")
        launch.ready_s = engine.relaunch()
        launch.earlier, launch.served, launch.first_index, relaunched = [], ServedPrompts(), index, True
        if hook is not None:  # the relaunched engine starts on plain suffix decoding
            reset = reset_engine(endpoint.base_url, endpoint.api_key, hook=hook)
            if not reset.ok:
                raise EngineError(
                    f"draft hook '{hook}' not selected on the relaunched engine: {reset.problem}"
                )
    elif reset is not None:
        launch.served = ServedPrompts()  # its prefix cache and suffix tree hold nothing it was sent
    history = {
        # Suffix decoding's tree remembers earlier outputs: say what this engine served before.
        "engine_earlier_corpora": ",".join(launch.earlier) or None,
        "engine_cell_index": index,
        # Its share of the launch's start, for where the GPU time went: a relaunch's start is
        # shared by the cells left to it (the first launch's, planned for all, then reads low).
        "engine_start_share_s": launch.ready_s / (len(group.cells) - launch.first_index),
        "gpus": group.spec.model.tp,
        **suffix_cache_columns(cell.engine_spec, fresh=not launch.earlier or bool(reset and reset.ok)),
        **reset_columns(reset, relaunched),
        "engine_shared": group.shared,
        "engine_levers": ",".join(group.levers),
        "block": cell.block,
    }
    # The hook that shaped this cell's drafts: what the reset left, else the lever's own.
    if history["draft_hook"] is None and drafts_from_history(lever):
        history["draft_hook"] = draft_hook(lever) or lever.name
    return history


def build_engine(group: EngineGroup, ctx: RunContext, log_path: Path, remote: bool) -> Engine:
    """The group's launch, not started: its argv and environment, on every core of the worker."""
    registry_dir = engine_registry.node_dir(ctx.cache_dir if remote else ctx.store_root)
    # Engines of earlier runs on this node whose owner died and whose guard did not end them.
    for line in engine_registry.sweep(registry_dir):
        print(f"lever-grid: {line}", file=sys.stderr, flush=True)
    endpoint = new_endpoint()
    return Engine(
        launch_argv(group, endpoint, ctx.models_dir),
        launch_env(group, engine_base_env(), ctx.cache_dir),
        endpoint,
        log_path,
        group.spec.engine.start_timeout_s,
        group.spec.engine.stop_timeout_s,
        registry_dir=registry_dir,
        cpus=NODE_CPUS,  # every core of the worker, whatever a cell's client pin left it (relaunches too)
    )


def run_group(group: EngineGroup, ctx: RunContext) -> list[CellOutcome]:
    """Run every cell of one engine launch; return one outcome per cell, ok or failed.

    Start the engine (or fail every cell with its reason), then per cell: stop at a dead
    engine, bring it to the cell's fresh state (ready_for_cell: reset, hook, relaunch),
    measure and store the cell (_run_and_store); the engine stops whatever happens.
    """
    layout = StoreLayout(ctx.store_root)
    spec = group.spec
    stored_log = layout.engine_log(ctx.session_id, f"{spec.key}-{uuid.uuid4().hex[:6]}")
    # A URL store (store/fs.py): the engine logs to a file on this node, copied to the store
    # after each cell and when it stops; the node's engine records stay on the node.
    remote = isinstance(ctx.store_root, StorePath)
    log_path = local_log(ctx, stored_log) if remote else stored_log
    engine = build_engine(group, ctx, log_path, remote)
    endpoint = engine.endpoint
    # Never spend an engine start on a store that cannot take the results.
    if (problem := store_problem(ctx.store_root, ctx.min_store_free_bytes)) is not None:
        return [CellOutcome(c.key, c.label, "", "failed", problem, stops_run=True) for c in group.cells]
    outcomes: list[CellOutcome] = []
    board = PhaseBoard(ctx.store_root, ctx.session_id, stored_log.stem)
    try:
        board.say(group.cells[0].label if group.cells else spec.key, "engine start")
        try:
            ready_s = engine.start()
        except EngineError as exc:
            return [_fail(layout, ctx, cell, str(exc), log_tail(log_path)) for cell in group.cells]
        if (missing := missing_plugin(group, log_path)) is not None:
            return [_fail(layout, ctx, cell, missing, log_tail(log_path)) for cell in group.cells]
        version = engine_version(endpoint.base_url, endpoint.api_key)
        launch = LaunchState(ready_s)
        for index, cell in enumerate(group.cells):
            if lost := engine.lost():
                code = engine.exit_code()
                how = "" if code is None else f", the API server {exit_description(code)}"
                error = f"engine died earlier in this launch ({names(lost)} gone{how})"
                outcomes.append(_fail(layout, ctx, cell, error, log_tail(log_path)))
                continue
            try:
                history = ready_for_cell(group, index, engine, launch, board)
            except EngineError as exc:
                tail = log_tail(log_path)
                outcomes += [_fail(layout, ctx, c, str(exc), tail) for c in group.cells[index:]]
                break
            history["engine_launch_id"] = log_path.stem
            stored = _run_and_store(
                cell, engine, ctx, layout, launch.ready_s, version, history, launch.served, board
            )
            outcomes.append(stored)
            launch.earlier.append(cell.corpus.name)
            if remote:  # the log so far, so a teammate can read it while the group runs
                upload_log(log_path, stored_log)
    finally:
        board.clear()
        engine.stop()
        if remote:
            upload_log(log_path, stored_log)
    return outcomes


def local_log(ctx: RunContext, stored: StorePath) -> Path:
    """Where a node writes an engine's log before it goes to a URL store: <cache_dir>/logs/<session>/."""
    return ctx.cache_dir / "logs" / ctx.session_id / stored.name


def upload_log(local: Path, stored: StorePath) -> None:
    """Copy an engine log to the store whole; a store that refuses it loses the log, not the cells."""
    try:
        if local.is_file():
            stored.store.put_file(local, stored.key)
    except OSError as exc:
        print(f"lever-grid: engine log {local} not copied to {stored}: {exc}", file=sys.stderr, flush=True)


def stored_log_tail(path: StoreRoot) -> str:
    """The tail of an engine log in the store (local or URL)."""
    if isinstance(path, StorePath):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return ""
        return "".join(text.splitlines(keepends=True)[-LOG_TAIL_LINES:])
    return log_tail(path)


def _run_and_store(
    cell: Cell,
    engine: Engine,
    ctx: RunContext,
    layout: StoreLayout,
    ready_s: float,
    version: str | None,
    history: dict[str, Any],
    served: ServedPrompts,
    board: PhaseBoard | None = None,
) -> CellOutcome:
    attempt_id = new_attempt_id(ctx.session_id)
    tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
    stage = CellStage(on_change=None if board is None else lambda name: board.say(cell.label, name))
    try:
        records, summary, probe = run_cell(cell, engine, ctx, served, stage)
        stage.name = "storing of the cell"
        ensure_alive(engine)
        summary.update(cell.as_record(), engine_ready_s=ready_s, engine_version=version, **placement(ctx))
        summary.update(history)
        summary.update(read_effective_config(engine.log_path))
        write_ok_attempt(layout, tags, records, summary, probe, label=cell.label)
    except Exception as exc:
        symptom = f"{type(exc).__name__}: {exc}"
        # An engine that died is the cause; what failed next (a refused connection) only its symptom.
        if isinstance(exc, EngineDied):
            lost, seen = exc.lost, exc.seen
        elif isinstance(exc, ServerFailed | RequestsRejected):
            lost, seen = [], ""  # the engine was found whole just before (check_answers)
        else:
            lost, seen = engine.wait_lost(ENGINE_EXIT_GRACE_S), ""
        error = engine_death(engine, lost, stage.name, seen) if lost else cell_error(exc, symptom)
        followed = bool(lost) and not isinstance(exc, EngineDied)
        detail = error + (f"\nwhat failed next: {symptom}" if followed else "")
        detail += "\n" + traceback.format_exc(limit=3)
        note = record_failure(layout, tags, detail, log_tail(engine.log_path), label=cell.label)
        # A disk that filled while the results were written stops the run even when the probe's few
        # bytes still fit (run.min_store_free_mb=0): another engine start would fill it again.
        full = store_full(ctx.store_root, exc)
        if full or ((isinstance(exc, OSError) or note) and (full := store_problem(ctx.store_root, 0))):
            return CellOutcome(cell.key, cell.label, attempt_id, "failed", full, stops_run=True)
        return CellOutcome(cell.key, cell.label, attempt_id, "failed", error + note)
    valid, reasons = summary.get("valid"), summary.get("invalid_reasons")
    return CellOutcome(cell.key, cell.label, attempt_id, "ok", None, summary["output_tok_per_s"], ready_s,
                       valid=valid, invalid_reasons=reasons)  # fmt: skip


def store_full(root: StoreRoot, exc: BaseException) -> str | None:
    """'store cannot take results: <root> is full (...)' when `exc` (or what caused it) is a full
    disk or a quota reached, else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in FULL:
            return f"{STORE_UNUSABLE}: {write_failure(root, seen)}"
        if isinstance(seen, OSError) and "No space left on device" in str(seen):  # pyarrow: no errno
            full = OSError(errno.ENOSPC, "No space left on device")
            return f"{STORE_UNUSABLE}: {write_failure(root, full)}"
        seen = seen.__cause__ or seen.__context__
    return None


def cell_error(exc: Exception, symptom: str) -> str:
    """The error of a cell whose engine is whole: the server's own line, else the exception's."""
    return str(exc) if isinstance(exc, ServerFailed | RequestsRejected) else symptom


def record_lost(group: EngineGroup, ctx: RunContext, error: str) -> list[CellOutcome]:
    """Failed attempts for cells whose worker never reported (actor or node lost)."""
    layout = StoreLayout(ctx.store_root)
    logs = sorted(
        layout.logs_dir(ctx.session_id).glob(f"{group.spec.key}-*.log"),
        key=lambda p: p.stat().st_mtime,
    )
    tail = stored_log_tail(logs[-1]) if logs else ""
    return [_fail(layout, ctx, cell, error, tail) for cell in group.cells]


def record_interrupted(
    group: EngineGroup, ctx: RunContext, since_s: float, reason: str, stop_s: float | None = None
) -> list[CellOutcome]:
    """Interrupted attempts for the group's cells that wrote nothing since `since_s` (epoch s).

    The driver stopped (Ctrl-C, SIGTERM) while this launch ran: its finished
    cells have their own manifests; the others are recorded as interrupted,
    neither failed nor done, and run again on resume. A cell that failed after
    the stop began (`stop_s`, less a second for coarse store clocks) failed
    because of it: its engine was ended under it ("engine exited (signal 9)
    during the warm-up", seen in CI), so it is recorded as interrupted too,
    after the failure, whose attempt the ledger then reads as superseded.
    """
    layout = StoreLayout(ctx.store_root)
    outcomes = []
    for cell in group.cells:
        recent = [m for m in layout.cell_dir(cell.key).glob(f"*/{MANIFEST}") if m.stat().st_mtime >= since_s]
        casualties = [c for c in (stop_casualty(m, stop_s) for m in recent) if c is not None]
        if len(casualties) < len(recent):
            continue
        if casualties:
            after_written_at(max(c.get("written_at", "") for c in casualties))
        attempt_id = new_attempt_id(ctx.session_id)
        tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
        note = record_failure(layout, tags, reason, "", status="interrupted", label=cell.label)
        outcomes.append(CellOutcome(cell.key, cell.label, attempt_id, "interrupted", reason + note))
    return outcomes


def stop_casualty(manifest: Any, stop_s: float | None) -> dict[str, Any] | None:
    """The manifest, if it is a failure written after the stop began (see record_interrupted)."""
    if stop_s is None or manifest.stat().st_mtime < stop_s - 1.0:
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("status") == "failed" else None


def after_written_at(written_at: str) -> None:
    """Wait until the store's clock has passed `written_at`, so the attempt written next sorts after
    it in the ledger (written_at, then the random attempt id): a stamp of a store written before
    written_at had microseconds (store/writer.utc_now) is in whole seconds."""
    deadline = time.monotonic() + 2.0
    while utc_now() <= written_at and time.monotonic() < deadline:
        time.sleep(0.05)


def record_failure(
    layout: StoreLayout,
    tags: dict[str, Any],
    error: str,
    tail: str,
    status: str = "failed",
    label: str | None = None,
) -> str:
    """Write a failed manifest; '' on success, else a note that it could not be written.

    A store that is full or unwritable must not turn one failed cell into a dead worker.
    """
    try:
        write_failed_attempt(layout, tags, error, tail, status, label)
    except OSError as exc:
        return f" (and the failure could not be recorded in the store: {type(exc).__name__}: {exc})"
    return ""


def _fail(layout: StoreLayout, ctx: RunContext, cell: Cell, error: str, tail: str) -> CellOutcome:
    attempt_id = new_attempt_id(ctx.session_id)
    tags = {"session_id": ctx.session_id, "cell_key": cell.key, "attempt_id": attempt_id}
    note = record_failure(layout, tags, error, tail, label=cell.label)
    return CellOutcome(cell.key, cell.label, attempt_id, "failed", error.splitlines()[0] + note)
